// The histogram log: one line per interval with the interval's latency histogram serialized, so
// a run can be re-analysed (merged over any span, compared across runs) after the fact.
// The format is documented in docs/loadgen.md ("Histogram log").
#ifndef TAILGUARD_LOADGEN_HISTOGRAM_LOG_H_
#define TAILGUARD_LOADGEN_HISTOGRAM_LOG_H_

#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/clock.h"
#include "tailguard/histogram.h"

namespace tailguard::loadgen {

// The first line of every log: "#tailguard-histogram-log 1".
inline constexpr std::string_view kHistogramLogMagic = "#tailguard-histogram-log";

// The header lines: the magic and version, the wall-clock start, and the column names.
std::string HistogramLogHeader(WallTime start);

// One interval's line: "start_s length_s count p50_s p99_s max_s base64", with the histogram in
// Histogram::Serialize() form, base64-encoded. `start` is from the start of the run.
std::string HistogramLogLine(Duration start, Duration length, const Histogram& histogram);

// One interval read back.
struct HistogramLogInterval {
  Duration start{};
  Duration length{};
  Histogram histogram;
};

struct HistogramLog {
  WallTime start{};  // from the "#start" header line; epoch when absent
  std::vector<HistogramLogInterval> intervals;

  // All intervals merged.
  Histogram Total() const;
};

// Parses a log written with the two functions above. Comment lines ('#') and blank lines are
// skipped. InvalidArgument "file:line: problem" for a malformed line, a histogram that does not
// deserialize, or a count column that disagrees with its histogram.
absl::StatusOr<HistogramLog> ParseHistogramLog(std::string_view text, std::string_view file_name);

// Reads and parses the log at `path`. NotFound when it cannot be read.
absl::StatusOr<HistogramLog> ReadHistogramLog(const std::string& path);

}  // namespace tailguard::loadgen

#endif  // TAILGUARD_LOADGEN_HISTOGRAM_LOG_H_
