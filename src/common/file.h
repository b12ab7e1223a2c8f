// Reading whole files with a size limit, for configuration, rule, scenario and token files.
#ifndef TAILGUARD_COMMON_FILE_H_
#define TAILGUARD_COMMON_FILE_H_

#include <cstddef>
#include <string>

#include "absl/status/statusor.h"

namespace tailguard {

// The whole file at `path`, read in chunks (pipes and /proc files report no size). NotFound when
// it cannot be read ("is a directory", the system's reason, "read error"); OutOfRange when it is
// larger than `max_bytes` ("is larger than 4MiB"). The message says only what is wrong, not
// which file: the caller names it.
absl::StatusOr<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes);

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_FILE_H_
