// Reading and writing time series files: timestamps, CSV tables, NAB-layout series.
#ifndef TAILGUARD_SERIES_IO_H_
#define TAILGUARD_SERIES_IO_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/clock.h"

namespace tailguard {

// Parses a timestamp as UTC: "YYYY-MM-DD HH:MM:SS[.ffffff]" (NAB), the same with a 'T' and an
// optional 'Z' or "+HH:MM" offset (RFC 3339), or a number of Unix seconds (fractions allowed).
// InvalidArgument names the text and the accepted forms.
absl::StatusOr<WallTime> ParseTimestamp(std::string_view text);

// "YYYY-MM-DD HH:MM:SS" in UTC, as NAB writes it (fractions of a second dropped). For files in
// NAB's format; what people read says its zone (FormatTimestampUtc).
std::string FormatTimestamp(WallTime t);

// Times for people, with the zone always shown: "YYYY-MM-DD HH:MM:SS UTC". What the CLI prints
// (docs/times.md has the policy).
std::string FormatTimestampUtc(WallTime t);

// Times for machines: RFC 3339 in UTC with milliseconds, "YYYY-MM-DDTHH:MM:SS.mmmZ". What the API
// and every JSON output use.
std::string FormatRfc3339(WallTime t);

// A CSV file: a header row and data rows, RFC 4180 quoting. line[i] is the 1-based line number
// of rows[i] in the file, for error messages.
struct CsvTable {
  std::vector<std::string> header;
  std::vector<std::vector<std::string>> rows;
  std::vector<int> line;
};

// Reads a CSV file. Errors (missing file, a row with a different number of fields than the
// header, an unterminated quote) are InvalidArgument or NotFound and name "path:line".
absl::StatusOr<CsvTable> ReadCsv(const std::string& path);
// Parses CSV text as ReadCsv does; `path` only names the source in messages.
absl::StatusOr<CsvTable> ParseCsv(std::string_view text, std::string_view path);

// A series of (time, value) points in file order.
struct TimeSeries {
  std::string path;
  std::vector<WallTime> times;
  std::vector<double> values;  // NaN for an empty value (a missing point)
};

// Reads a `timestamp,value` CSV (NAB's layout; other columns are ignored, the header must name
// both). An empty value is a missing point (NaN). A bad timestamp, a value that is not a finite
// number ("inf" and "nan" included), a timestamp earlier than the row before it, or a file with
// no data rows is an error naming "path:line" and the field.
absl::StatusOr<TimeSeries> ReadTimeSeriesCsv(const std::string& path);

// Writes `timestamp,value,anomaly_score` rows, one per point, as `tailguard replay` does:
// timestamps as FormatTimestamp(), numbers in the shortest form that reads back exactly, an empty
// value for NaN. Creates missing parent directories.
// REQUIRES: scores.size() == series.times.size() (otherwise InvalidArgument, nothing written).
absl::Status WriteScoresCsv(const std::string& path, const TimeSeries& series,
                            const std::vector<double>& scores);

// Every `*.csv` under `dir/<category>/`, as paths relative to `dir` ("category/file.csv"),
// sorted. NotFound when `dir` does not exist or holds no such file.
absl::StatusOr<std::vector<std::string>> ListNabCorpus(const std::string& dir);

}  // namespace tailguard

#endif  // TAILGUARD_SERIES_IO_H_
