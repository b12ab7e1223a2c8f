// A request log (one row per request: its time, the latency of each stage, its status) aggregated
// into steps and given to the analyzer as a Source: what `tailguard replay` runs on a request
// log, with the statistics the live registry gives for the same requests.
#ifndef TAILGUARD_ANALYZE_REQUEST_LOG_H_
#define TAILGUARD_ANALYZE_REQUEST_LOG_H_

#include <cstdint>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "tailguard/analyzer.h"
#include "tailguard/histogram.h"

namespace tailguard::analyze {

// Not thread-safe.
class RequestLog {
 public:
  // A stage that did not happen in a request.
  static constexpr uint64_t kNoStage = UINT64_MAX;

  // Series `metric{<labels>,stage="<stage>"}` for each of `stages` (stages[0] is the total, the
  // one whose error ratio is given), in steps of `resolution` (REQUIRES: > 0).
  RequestLog(std::string metric, Labels labels, std::vector<std::string> stages,
             Duration resolution);

  // One request at `t`: latencies_ns[s] for stages[s] (kNoStage: absent); `status` its HTTP
  // status, 0 when unknown. 5xx count as failed, as live (4xx are the client's).
  void Add(WallTime t, std::span<const uint64_t> latencies_ns, int status);
  // Whether any request had a status: only then is the error ratio known.
  void set_has_status(bool v) { has_status_ = v; }

  bool empty() const { return steps_.empty(); }
  // Steps from the first request's to the last's, empty ones included.
  int64_t span() const { return empty() ? 0 : steps_.rbegin()->first - steps_.begin()->first + 1; }

  // Every step from the first request's to the last's, each stamped at its end (as the live
  // registry stamps a window), one point per stage in key order (as RegistrySource gives them);
  // an empty step gives missing points. The log must outlive the source and not change while it
  // is read.
  class StepSource;
  std::unique_ptr<Source> Steps() const;
  // The series key of stages[stage].
  const std::string& Key(size_t stage) const { return keys_[stage]; }
  // Where stages[stage]'s point is in each batch.
  size_t PointOf(size_t stage) const { return position_[stage]; }

 private:
  struct Step {
    std::vector<Histogram> stage;
    uint64_t failed = 0;
  };
  const std::string metric_;
  const std::vector<std::string> stages_;
  std::vector<Labels> labels_;  // per stage
  std::vector<std::string> keys_;
  std::vector<size_t> order_;     // stage indices by key
  std::vector<size_t> position_;  // the inverse of order_
  const Duration resolution_;
  bool has_status_ = false;
  std::map<int64_t, Step> steps_;
};

}  // namespace tailguard::analyze

#endif  // TAILGUARD_ANALYZE_REQUEST_LOG_H_
