// Fuzzes the offline diagnosis formats and what runs on them: the input, split at its first NUL
// byte, is read as cases.csv and series.csv and every case is ranked; the whole input is read as
// a slice file and attributed at its last interval. Nothing crashes; a ranking holds each
// series of its case once, with finite, non-negative scores.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <set>
#include <string>
#include <string_view>

#include "diagnose/cases_io.h"
#include "diagnose/ranker.h"
#include "diagnose/slices.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace tailguard::diagnose;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  const size_t nul = text.find('\0');
  const std::string_view cases = text.substr(0, nul);
  const std::string_view series = nul == std::string_view::npos ? "" : text.substr(nul + 1);
  absl::StatusOr<CaseSet> set = ParseCaseSet(cases, "cases.csv", series, "series.csv", 300);
  if (set.ok()) {
    for (const DiagnosisCase& c : set->cases) {
      Ranking r = RankCauses(c.series, c.alert_time);
      if (r.ranked.size() > c.series.size()) std::abort();
      std::set<std::string> seen;
      for (const Candidate& k : r.ranked) {
        if (!seen.insert(k.series).second) std::abort();
        if (!(k.evidence.score >= 0) || !std::isfinite(k.evidence.score)) std::abort();
      }
    }
  }
  absl::StatusOr<SliceTable> table = ParseSliceTable(text, "slices.csv");
  if (table.ok() && !table->data.empty()) {
    int64_t last = table->data.front().timestamp;
    for (const SliceRow& row : table->data) last = std::max(last, row.timestamp);
    absl::StatusOr<SliceAttribution> a = AttributeSlices(*table, last);
    if (a.ok() && a->named > a->slices.size()) std::abort();
  }
  return 0;
}
