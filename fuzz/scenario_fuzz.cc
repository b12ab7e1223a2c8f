// Fuzzes ParseScenario and ParseHistogramLog: arbitrary bytes never crash either parser or
// escape as an exception; an accepted scenario keeps its invariants and its schedule can be
// generated; an accepted log's histograms write back to the same log.
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "loadgen/histogram_log.h"
#include "loadgen/scenario.h"
#include "loadgen/schedule.h"

namespace {

using namespace tailguard;
using namespace tailguard::loadgen;

void Check(bool ok) {
  if (!ok) std::abort();
}

void CheckScenario(const Scenario& s) {
  Check(!s.phases.empty() && s.phases.size() <= kMaxPhases);
  size_t segments = 0;
  for (const Phase& p : s.phases) {
    Check(!p.segments.empty());
    Check(p.duration() > Duration::zero());
    segments += p.segments.size();
    for (const RateSegment& r : p.segments) {
      Check(r.duration > Duration::zero());
      Check(std::isfinite(r.from) && std::isfinite(r.to));
      Check(r.from >= 0 && r.to >= 0 && r.from <= kMaxRate && r.to <= kMaxRate);
    }
    if (p.request.method) Check(!MethodProblem(*p.request.method));
    if (p.request.path) Check(!PathProblem(*p.request.path));
    for (const Header& h : p.request.headers) Check(!HeaderProblem(h.first, h.second));
  }
  Check(segments <= kMaxSegments);
  // The first requests of the schedule come in order and inside the run.
  Schedule schedule(s.phases, 1);
  Duration last{};
  for (int i = 0; i < 1000; ++i) {
    std::optional<ScheduledRequest> r = schedule.Next();
    if (!r) break;
    Check(r->at >= last && r->at < schedule.total_duration());
    Check(r->phase < s.phases.size());
    last = r->at;
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  ScenarioOptions options;
  options.load_body_files = false;  // never touch the file system
  absl::StatusOr<Scenario> s = ParseScenario(text, "fuzz.yaml", options);
  if (s.ok()) {
    CheckScenario(*s);
  } else {
    Check(s.status().code() == absl::StatusCode::kInvalidArgument);
    Check(std::string(s.status().message()).starts_with("fuzz.yaml"));
  }
  absl::StatusOr<HistogramLog> log = ParseHistogramLog(text, "fuzz.log");
  if (log.ok()) {
    for (const HistogramLogInterval& i : log->intervals) {
      const std::string line =
          HistogramLogHeader(log->start) + HistogramLogLine(i.start, i.length, i.histogram);
      absl::StatusOr<HistogramLog> again = ParseHistogramLog(line, "again.log");
      Check(again.ok() && again->intervals.size() == 1 &&
            again->intervals[0].histogram == i.histogram);
    }
  } else {
    Check(std::string(log.status().message()).starts_with("fuzz.log"));
  }
  return 0;
}
