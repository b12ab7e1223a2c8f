#include <cstdio>

#include "common/strings.h"
#include "diagnose/csv.h"
#include "diagnose/slices.h"

namespace tailguard::diagnose {
namespace {

// Empty when the header is timestamp,<at least one dimension>,sum,count with distinct names.
std::string HeaderProblem(const std::vector<std::string>& h) {
  if (h.size() < 4 || h.front() != "timestamp" || h[h.size() - 2] != "sum" || h.back() != "count") {
    return "the header must be 'timestamp,<dimension columns...>,sum,count' with at least one "
           "dimension";
  }
  for (size_t i = 1; i + 2 < h.size(); ++i) {
    if (h[i].empty()) return Cat("dimension column ", i + 1, " has no name");
    for (size_t j = 1; j < i; ++j) {
      if (h[j] == h[i]) return Cat("dimension '", h[i], "' is named twice");
    }
  }
  return "";
}

}  // namespace

absl::StatusOr<SliceTable> ReadSliceTable(const std::string& path) {
  absl::StatusOr<std::string> text = ReadMaybeGzip(path);
  if (!text.ok()) return text.status();
  return ParseSliceTable(*text, path);
}

absl::StatusOr<SliceTable> ParseSliceTable(std::string_view text, const std::string& path) {
  SliceTable table;
  Problems problems;
  std::vector<std::string> header;
  std::vector<std::string> dims;
  std::string header_problem;
  bool checked = false;
  auto check_header = [&] {
    if (checked) return;
    checked = true;
    header_problem = HeaderProblem(header);
    if (header_problem.empty()) {
      table.dimensions.assign(header.begin() + 1, header.end() - 2);
    }
  };
  const bool any = ForEachCsvRow(
      text, header, [&](size_t line, const std::vector<std::string>& f, bool well_formed) {
        check_header();
        if (!header_problem.empty()) return;
        const std::string where = Cat(path, ":", line, ": ");
        if (!well_formed || f.size() != header.size()) {
          problems.Add(Cat(where, "expected ", header.size(), " fields, got ",
                           well_formed ? std::to_string(f.size()) : "an unclosed quote"));
          return;
        }
        int64_t t = 0;
        double sum = 0, count = 0;
        if (!ParseIntegerField(f[0], t)) {
          problems.Add(Cat(where, "timestamp: '", f[0], "' is not integer unix seconds"));
          return;
        }
        const std::string& s = f[f.size() - 2];
        const std::string& c = f[f.size() - 1];
        if (!ParseFiniteField(s, sum)) {
          problems.Add(Cat(where, "sum: '", s, "' is not a finite number"));
          return;
        }
        if (!ParseFiniteField(c, count) || count < 0) {
          problems.Add(Cat(where, "count: '", c, "' is not a finite number >= 0"));
          return;
        }
        dims.assign(f.begin() + 1, f.end() - 2);
        AddSliceRow(table, t, dims, sum, count);
        ++table.rows;
      });
  if (!any) return absl::InvalidArgumentError(Cat(path, ": empty; ", HeaderProblem({})));
  check_header();
  if (!header_problem.empty()) return absl::InvalidArgumentError(Cat(path, ":1: ", header_problem));
  if (!problems.empty()) return problems.ToStatus();
  if (table.rows == 0) return absl::InvalidArgumentError(Cat(path, ": no rows after the header"));
  return table;
}

std::string SliceRows(const SliceTable& table, const SliceAttribution& a) {
  std::string out = "rank,slice,score,selected,precision,recall,explained\n";
  char nums[160];
  for (size_t i = 0; i < a.slices.size(); ++i) {
    const ScoredSlice& s = a.slices[i];
    std::snprintf(nums, sizeof nums, "%.4f,%d,%.4f,%.4f,%.4f", s.score, s.selected ? 1 : 0,
                  s.precision, s.recall, s.explained);
    out += Cat(i + 1, ",", CsvField(SliceName(table, s)), ",", nums, "\n");
  }
  return out;
}

}  // namespace tailguard::diagnose
