// Fuzzes ParseTimestamp: arbitrary text never crashes it, and an accepted timestamp formats to
// text that parses back to the same second.
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tailguard/series_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailguard::WallTime> t = tailguard::ParseTimestamp(text);
  if (!t.ok()) return 0;
  absl::StatusOr<tailguard::WallTime> again =
      tailguard::ParseTimestamp(tailguard::FormatTimestamp(*t));
  if (!again.ok()) std::abort();
  const auto seconds = [](tailguard::WallTime w) {
    return std::chrono::floor<std::chrono::seconds>(w.time_since_epoch()).count();
  };
  if (seconds(*again) != seconds(*t)) std::abort();
  return 0;
}
