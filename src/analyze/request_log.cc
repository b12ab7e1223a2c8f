// Request logs as a source of the analyzer.
#include "analyze/request_log.h"

#include <algorithm>
#include <utility>

#include "metrics/series_key.h"

namespace tailguard::analyze {

RequestLog::RequestLog(std::string metric, Labels labels, std::vector<std::string> stages,
                       Duration resolution)
    : metric_(std::move(metric)), stages_(std::move(stages)), resolution_(resolution) {
  for (const std::string& stage : stages_) {
    Labels l = labels;
    l.emplace_back("stage", stage);
    std::sort(l.begin(), l.end());
    keys_.push_back(metrics::SeriesKey(metric_, l));
    labels_.push_back(std::move(l));
  }
  order_.resize(stages_.size());
  for (size_t i = 0; i < order_.size(); ++i) order_[i] = i;
  std::sort(order_.begin(), order_.end(), [&](size_t a, size_t b) { return keys_[a] < keys_[b]; });
  position_.resize(stages_.size());
  for (size_t i = 0; i < order_.size(); ++i) position_[order_[i]] = i;
}

void RequestLog::Add(WallTime t, std::span<const uint64_t> latencies_ns, int status) {
  const int64_t ns = t.time_since_epoch().count();
  const int64_t res = resolution_.count();
  Step& step = steps_[ns >= 0 ? ns / res : (ns - res + 1) / res];
  if (step.stage.empty()) step.stage.resize(stages_.size());
  for (size_t s = 0; s < stages_.size() && s < latencies_ns.size(); ++s) {
    // As the live recorder gives values back: each at its bucket's midpoint (within 0.8 %), so
    // that the same requests make the same percentiles live and offline.
    if (latencies_ns[s] != kNoStage && latencies_ns[s] <= BucketLayout::kMaxValue) {
      step.stage[s].AddToBucket(BucketLayout::Index(latencies_ns[s]), 1);
    }
  }
  if (status >= 500) ++step.failed;
}

class RequestLog::StepSource final : public Source {
 public:
  explicit StepSource(const RequestLog& log)
      : log_(log),
        next_(log.empty() ? 0 : log.steps_.begin()->first),
        last_(log.empty() ? -1 : log.steps_.rbegin()->first),
        it_(log.steps_.begin()) {}

  absl::StatusOr<bool> Next(Batch& batch) override {
    if (log_.empty() || next_ > last_) return false;
    const int64_t k = next_++;
    const int64_t res = log_.resolution_.count();
    const double res_seconds = std::chrono::duration<double>(log_.resolution_).count();
    batch.time = WallTime(Duration((k + 1) * res));
    batch.points.clear();
    const Step* step = nullptr;
    if (it_ != log_.steps_.end() && it_->first == k) step = &(it_++)->second;
    for (const size_t s : log_.order_) {
      SeriesPoint& p = batch.points.emplace_back();
      p.key = log_.keys_[s];
      p.metric = log_.metric_;
      p.labels = log_.labels_[s];
      p.rate = 0;
      if (step == nullptr || step->stage[s].empty()) continue;
      const Histogram& h = step->stage[s];
      SetLatencyStats(h, p);
      p.rate = static_cast<double>(h.count()) / res_seconds;
      if (s == 0 && log_.has_status_) {
        p.error_ratio = static_cast<double>(step->failed) / static_cast<double>(h.count());
      }
    }
    return true;
  }

 private:
  const RequestLog& log_;
  int64_t next_;
  const int64_t last_;
  std::map<int64_t, Step>::const_iterator it_;
};

std::unique_ptr<Source> RequestLog::Steps() const { return std::make_unique<StepSource>(*this); }

}  // namespace tailguard::analyze
