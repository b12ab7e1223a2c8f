// Fuzzes ParseNabWindows: arbitrary text never crashes it; accepted windows are ordered.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tailguard/backtest.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailguard::WindowLabels> w = tailguard::ParseNabWindows(text, "fuzz.json");
  if (!w.ok()) return 0;
  for (const auto& [series, windows] : *w) {
    for (size_t i = 0; i < windows.size(); ++i) {
      if (windows[i].end < windows[i].start) std::abort();
      if (i > 0 && windows[i].start < windows[i - 1].end) std::abort();
    }
  }
  return 0;
}
