#include "common/file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/format.h"

namespace tailguard {

absl::StatusOr<std::string> ReadFileUpTo(const std::string& path, size_t max_bytes) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) return absl::NotFoundError("is a directory");
  errno = 0;
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(errno != 0 ? std::strerror(errno) : "cannot open");
  std::string text;
  char chunk[16 * 1024];
  while (in.read(chunk, sizeof chunk) || in.gcount() > 0) {
    text.append(chunk, static_cast<size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      return absl::OutOfRangeError(std::string("is larger than ") + SizeText(max_bytes));
    }
  }
  if (in.bad()) return absl::NotFoundError("read error");
  return text;
}

}  // namespace tailguard
