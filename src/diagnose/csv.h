// The CSV files of `tailguard diagnose` (RFC 4180: comma-separated, a field may be quoted with
// '"' and a quote inside written '""'; CRLF or LF), read whole, gzip-compressed or not, with
// every bad row named by file, line and field.
#ifndef TAILGUARD_DIAGNOSE_CSV_H_
#define TAILGUARD_DIAGNOSE_CSV_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"

namespace tailguard::diagnose {

// The contents of `path`, gunzipped when it starts with the gzip magic bytes. NotFound when it
// cannot be opened, DataLoss when the compressed stream is corrupt or cut short, OutOfRange when
// it is larger than `max_bytes` uncompressed. Messages name the file.
absl::StatusOr<std::string> ReadMaybeGzip(const std::string& path,
                                          size_t max_bytes = size_t{4} << 30);

// Splits one line (no line terminator) into fields. False when a quoted field is not closed or
// a quote is followed by something other than a comma.
bool SplitCsvLine(std::string_view line, std::vector<std::string>& fields);

// A field as an integer (unix seconds, say) or as a finite number; false otherwise.
bool ParseIntegerField(const std::string& s, int64_t& out);
bool ParseFiniteField(const std::string& s, double& out);

// `s` as one CSV field: as is, or quoted when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& s);

// Calls `row(line_number, fields, well_formed)` for every non-empty line of `text` after the
// first (the header, returned through `header`); a line SplitCsvLine refuses comes whole as the
// one field, with well_formed false. Lines end at '\n'; a trailing '\r' is dropped. False when
// `text` has no header line or the header does not split.
template <typename RowFn>
bool ForEachCsvRow(std::string_view text, std::vector<std::string>& header, RowFn&& row);

// Collects "file:line: message" problems, showing the first kMaxShown and counting the rest.
class Problems {
 public:
  static constexpr size_t kMaxShown = 20;
  void Add(std::string message);
  bool empty() const { return count_ == 0; }
  size_t count() const { return count_; }
  // InvalidArgument with every shown problem, one per line, and the count of the rest.
  absl::Status ToStatus() const;

 private:
  std::vector<std::string> shown_;
  size_t count_ = 0;
};

// ---- implementation ----

template <typename RowFn>
bool ForEachCsvRow(std::string_view text, std::vector<std::string>& header, RowFn&& row) {
  std::vector<std::string> fields;
  size_t line_number = 0;
  bool have_header = false;
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    ++line_number;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!have_header) {
      if (!SplitCsvLine(line, header)) return false;
      have_header = true;
      continue;
    }
    if (line.empty()) continue;
    if (!SplitCsvLine(line, fields)) {
      fields.clear();
      fields.push_back(std::string(line));
      row(line_number, fields, /*well_formed=*/false);
      continue;
    }
    row(line_number, fields, /*well_formed=*/true);
  }
  return have_header;
}

}  // namespace tailguard::diagnose

#endif  // TAILGUARD_DIAGNOSE_CSV_H_
