// Fuzzes ParseCsv: arbitrary text never crashes it; an accepted table is rectangular and its
// line numbers increase.
#include <cstdint>
#include <cstdlib>
#include <string_view>

#include "tailguard/series_io.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  absl::StatusOr<tailguard::CsvTable> t = tailguard::ParseCsv(text, "fuzz.csv");
  if (!t.ok()) return 0;
  if (t->rows.size() != t->line.size()) std::abort();
  int previous = 0;
  for (size_t i = 0; i < t->rows.size(); ++i) {
    if (t->rows[i].size() != t->header.size()) std::abort();
    if (t->line[i] <= previous) std::abort();
    previous = t->line[i];
  }
  return 0;
}
