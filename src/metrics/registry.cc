// Series, RequestMetrics, RequestTimer and the Registry.
#include "tailguard/registry.h"

#include <algorithm>

#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "common/strings.h"
#include "metrics/series_key.h"

namespace tailguard {
namespace {

bool ValidName(std::string_view s, bool allow_colon) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool alpha =
        (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' || (allow_colon && c == ':');
    if (!alpha && !(i > 0 && c >= '0' && c <= '9')) return false;
  }
  return true;
}

// Sorts `labels`, validates everything and returns the canonical key.
absl::StatusOr<std::string> CanonicalKey(std::string_view name, Labels& labels) {
  if (!ValidName(name, /*allow_colon=*/true)) {
    return absl::InvalidArgumentError(
        Cat("metric name \"", name,
            "\" is not valid: use letters, digits, '_' and ':', not starting with a "
            "digit (Prometheus naming)"));
  }
  std::sort(labels.begin(), labels.end());
  for (size_t i = 0; i < labels.size(); ++i) {
    const std::string& k = labels[i].first;
    if (!ValidName(k, /*allow_colon=*/false) || k.starts_with("__")) {
      return absl::InvalidArgumentError(
          Cat("label name \"", k, "\" on metric ", name,
              " is not valid: use letters, digits and '_', not starting with a digit or \"__\""));
    }
    if (i > 0 && labels[i - 1].first == k) {
      return absl::InvalidArgumentError(Cat("label \"", k, "\" given twice on metric ", name));
    }
  }
  return metrics::SeriesKey(name, labels);
}

// "a histogram of seconds", "a gauge of count": what a series is, for errors.
std::string KindText(SeriesKind kind, Unit unit) {
  return Cat("a ", SeriesKindName(kind), " of ", UnitName(unit));
}

}  // namespace

std::string_view UnitName(Unit u) {
  switch (u) {
    case Unit::kNanoseconds:
      return "seconds";
    case Unit::kBytes:
      return "bytes";
    case Unit::kCount:
      return "count";
  }
  return "count";
}

std::optional<Unit> ParseUnit(std::string_view name) {
  for (Unit u : {Unit::kNanoseconds, Unit::kBytes, Unit::kCount}) {
    if (name == UnitName(u)) return u;
  }
  return std::nullopt;
}

std::string_view SeriesKindName(SeriesKind k) {
  return k == SeriesKind::kGauge ? "gauge" : "histogram";
}

// ---------------------------------------------------------------------------------------------
// Series

Series::Series(std::string name, Labels labels, std::string key, WindowOptions windows,
               SeriesKind kind, Unit unit)
    : name_(std::move(name)),
      labels_(std::move(labels)),
      key_(std::move(key)),
      kind_(kind),
      unit_(unit),
      windows_(windows) {}

std::string_view Series::label(std::string_view name) const {
  for (const auto& [k, v] : labels_) {
    if (k == name) return v;
  }
  return {};
}

void Series::Collect(WallTime slot) {
  if (kind_ == SeriesKind::kGauge)
    recorder_.Record(static_cast<uint64_t>(std::max<int64_t>(level(), 0)));
  Histogram interval = recorder_.Collect();
  std::lock_guard<std::mutex> lock(mu_);
  windows_.Add(slot, interval);
  cumulative_.Merge(interval);
  last_ = std::move(interval);
}

Histogram Series::Window(Duration length, WallTime now) const {
  std::lock_guard<std::mutex> lock(mu_);
  return windows_.Window(length, now);
}

Histogram Series::LastInterval() const {
  std::lock_guard<std::mutex> lock(mu_);
  return last_;
}

Histogram Series::Cumulative() const {
  std::lock_guard<std::mutex> lock(mu_);
  return cumulative_;
}

size_t Series::MemoryBytes() const {
  const size_t writers = recorder_.MemoryBytes();
  std::lock_guard<std::mutex> lock(mu_);
  return writers + windows_.MemoryBytes() + last_.MemoryBytes() + cumulative_.MemoryBytes();
}

// ---------------------------------------------------------------------------------------------
// RequestMetrics

RequestMetrics::RequestMetrics(RouteLabels labels, std::array<Series*, kStageCount> stages,
                               Series* input_size, const Clock& clock, SamplerOptions sampler)
    : labels_(std::move(labels)),
      stages_(stages),
      input_size_(input_size),
      clock_(clock),
      wall_minus_mono_(clock.WallNow().time_since_epoch() -
                       clock.MonotonicNow().time_since_epoch()),
      sampler_(sampler) {}

SampleDecision RequestMetrics::RecordRequest(const RequestRecord& r,
                                             uint64_t expected_interval_ns) {
  if (expected_interval_ns == 0) {
    stages_[0]->Record(r.stage_ns[0]);
  } else {
    stages_[0]->RecordCorrected(r.stage_ns[0], expected_interval_ns);
  }
  for (size_t i = 1; i < kStageCount; ++i) {
    // Token gaps went into their series one by one (RequestTimer::Token()); the record holds
    // only the longest.
    if (i == static_cast<size_t>(Stage::kInterToken)) continue;
    if (r.stage_ns[i] != 0) stages_[i]->Record(r.stage_ns[i]);
  }
  if (r.input_size != 0) input_size_->Record(r.input_size);
  return sampler_.Offer(r);
}

double RequestMetrics::qps() const { return qps_.load(std::memory_order_relaxed); }

void RequestMetrics::AfterCollect(Duration interval, WallTime now) {
  Series& total = stage(Stage::kTotal);
  const double seconds = std::chrono::duration<double>(interval).count();
  if (seconds <= 0) return;
  const double rate = static_cast<double>(total.LastInterval().count()) / seconds;
  // Smooth over a few ticks so one quiet second does not flip the sampler to keep-all.
  const double smoothed = have_rate_ ? 0.5 * rate + 0.5 * qps() : rate;
  have_rate_ = true;
  qps_.store(smoothed, std::memory_order_relaxed);
  // "Slow" needs a P99 worth the name: at least 100 requests in the last minute.
  const Histogram minute = total.Window(kWindow1m, now);
  sampler_.Update(smoothed, minute.count() >= 100 ? minute.Quantile(0.99) : 0);
}

// ---------------------------------------------------------------------------------------------
// RequestTimer

RequestTimer::RequestTimer(RequestMetrics& metrics)
    : metrics_(metrics), start_(metrics.clock().MonotonicNow()), last_(start_) {}

void RequestTimer::EndStage(Stage s) {
  const MonoTime now = metrics_.clock().MonotonicNow();
  record_.stage_ns[static_cast<size_t>(s)] += static_cast<uint64_t>((now - last_).count());
  last_ = now;
}

void RequestTimer::FirstToken() {
  const MonoTime now = metrics_.clock().MonotonicNow();
  record_.stage_ns[static_cast<size_t>(Stage::kFirstToken)] =
      static_cast<uint64_t>((now - start_).count());
}

void RequestTimer::Token() {
  const MonoTime now = metrics_.clock().MonotonicNow();
  if (!have_token_) {
    have_token_ = true;
    record_.stage_ns[static_cast<size_t>(Stage::kFirstToken)] =
        static_cast<uint64_t>((now - start_).count());
  } else {
    const uint64_t gap = static_cast<uint64_t>((now - last_token_).count());
    metrics_.stage(Stage::kInterToken).Record(gap);
    uint64_t& longest = record_.stage_ns[static_cast<size_t>(Stage::kInterToken)];
    longest = std::max(longest, gap);
  }
  last_token_ = now;
}

SampleDecision RequestTimer::Finish() {
  if (finished_) return SampleDecision::kSkipped;
  finished_ = true;
  const MonoTime now = metrics_.clock().MonotonicNow();
  record_.stage_ns[0] = static_cast<uint64_t>((now - start_).count());
  record_.start = metrics_.ToWall(start_);
  return metrics_.RecordRequest(record_, expected_interval_ns_);
}

// ---------------------------------------------------------------------------------------------
// Registry

struct Registry::SeriesIndex {
  absl::flat_hash_map<std::string, std::unique_ptr<Series>> map;
  // Each metric name's kind and unit, fixed by its first series: a Prometheus family has one
  // type, and values of one name must mean one thing.
  absl::flat_hash_map<std::string, std::pair<SeriesKind, Unit>> kinds;
};

Registry::Registry(const Clock& clock, RegistryOptions options)
    : clock_(clock),
      options_(options),
      wall_minus_mono_(clock.WallNow().time_since_epoch() -
                       clock.MonotonicNow().time_since_epoch()),
      series_(std::make_unique<SeriesIndex>()),
      last_collect_(Now()) {}

WallTime Registry::Now() const {
  return WallTime(clock_.MonotonicNow().time_since_epoch() + wall_minus_mono_);
}

Registry::~Registry() = default;

absl::Status Registry::CheckValues(std::string_view name, const Labels& labels) {
  for (const auto& [k, v] : labels) {
    if (v.size() > options_.max_label_value_bytes) {
      refused_.fetch_add(1, std::memory_order_relaxed);
      return absl::InvalidArgumentError(Cat("label ", k, " on metric ", name, ": a value of ",
                                            v.size(), " bytes is over the limit of ",
                                            options_.max_label_value_bytes,
                                            " (RegistryOptions::max_label_value_bytes)"));
    }
  }
  return absl::OkStatus();
}

Series* Registry::InsertLocked(std::string_view name, Labels labels, const std::string& key,
                               SeriesKind kind, Unit unit) {
  auto [k, first] = series_->kinds.try_emplace(std::string(name), kind, unit);
  if (k->second != std::make_pair(kind, unit)) return nullptr;
  auto [it, inserted] = series_->map.try_emplace(key);
  if (inserted) {
    it->second = std::make_unique<Series>(std::string(name), std::move(labels), key,
                                          options_.windows, kind, unit);
  }
  return it->second.get();
}

absl::StatusOr<Series*> Registry::GetOrCreate(std::string_view name, Labels labels) {
  return Make(name, std::move(labels), SeriesKind::kHistogram, Unit::kNanoseconds);
}

absl::StatusOr<Series*> Registry::Values(std::string_view name, Labels labels, Unit unit) {
  return Make(name, std::move(labels), SeriesKind::kHistogram, unit);
}

absl::StatusOr<Series*> Registry::Gauge(std::string_view name, Labels labels, Unit unit) {
  return Make(name, std::move(labels), SeriesKind::kGauge, unit);
}

absl::StatusOr<Series*> Registry::Make(std::string_view name, Labels labels, SeriesKind kind,
                                       Unit unit) {
  if (absl::Status s = CheckValues(name, labels); !s.ok()) return s;
  absl::StatusOr<std::string> key = CanonicalKey(name, labels);
  if (!key.ok()) return key.status();
  std::lock_guard<std::mutex> lock(mu_);
  if (series_->map.size() >= options_.max_series && !series_->map.contains(*key)) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        Cat("metric ", name, ": the registry holds ", series_->map.size(),
            " series, its limit (RegistryOptions::max_series); new series are refused"));
  }
  if (Series* s = InsertLocked(name, std::move(labels), *key, kind, unit)) return s;
  const auto& [other_kind, other_unit] = series_->kinds.find(std::string(name))->second;
  return absl::FailedPreconditionError(Cat("metric ", name, " is ",
                                           KindText(other_kind, other_unit), "; asked for ",
                                           KindText(kind, unit), ": use another metric name"));
}

Series* Registry::Find(std::string_view name, Labels labels) const {
  absl::StatusOr<std::string> key = CanonicalKey(name, labels);
  if (!key.ok()) return nullptr;
  std::lock_guard<std::mutex> lock(mu_);
  auto it = series_->map.find(*key);
  return it == series_->map.end() ? nullptr : it->second.get();
}

absl::StatusOr<RequestMetrics*> Registry::Requests(const RouteLabels& route) {
  if (route.model.empty() || route.version.empty() || route.route.empty()) {
    return absl::InvalidArgumentError(
        Cat("request metrics need a model, a version and a route; got model=\"", route.model,
            "\" version=\"", route.version, "\" route=\"", route.route, "\""));
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& r : requests_) {
      const RouteLabels& l = r->labels();
      if (l.model == route.model && l.version == route.version && l.route == route.route) {
        return r.get();
      }
    }
  }
  // The stages' labels and keys first, then every series under one lock: all of them or none
  // (a half-made set would only take room), whatever other threads do meanwhile.
  // Index kStageCount is the input-size histogram.
  std::array<Labels, kStageCount + 1> labels;
  std::array<std::string, kStageCount + 1> keys;
  for (int i = 0; i <= kStageCount; ++i) {
    labels[i] = {{"model", route.model}, {"version", route.version}, {"route", route.route}};
    if (i < kStageCount) labels[i].emplace_back("stage", StageName(static_cast<Stage>(i)));
    const std::string_view metric =
        i < kStageCount ? kRequestDurationMetric : kRequestInputSizeMetric;
    if (absl::Status s = CheckValues(metric, labels[i]); !s.ok()) return s;
    absl::StatusOr<std::string> key = CanonicalKey(metric, labels[i]);
    if (!key.ok()) return key.status();
    keys[i] = *std::move(key);
  }
  std::lock_guard<std::mutex> lock(mu_);
  // Another thread may have created it meanwhile; the series are shared either way.
  for (auto& r : requests_) {
    const RouteLabels& l = r->labels();
    if (l.model == route.model && l.version == route.version && l.route == route.route) {
      return r.get();
    }
  }
  size_t missing = 0;
  for (const std::string& k : keys) missing += series_->map.contains(k) ? 0 : 1;
  if (series_->map.size() + missing > options_.max_series) {
    refused_.fetch_add(1, std::memory_order_relaxed);
    return absl::ResourceExhaustedError(
        Cat("request metrics for model=\"", route.model, "\": the registry holds ",
            series_->map.size(), " series, near its limit of ", options_.max_series,
            " (RegistryOptions::max_series); new series are refused"));
  }
  // A metric of the set made before as another kind (Values() on its name) refuses the whole
  // set, before any series is made.
  for (const auto& [metric, unit] : {std::pair(kRequestDurationMetric, Unit::kNanoseconds),
                                     std::pair(kRequestInputSizeMetric, Unit::kCount)}) {
    auto it = series_->kinds.find(std::string(metric));
    if (it != series_->kinds.end() && it->second != std::make_pair(SeriesKind::kHistogram, unit)) {
      return absl::FailedPreconditionError(Cat("request metrics for model=\"", route.model,
                                               "\": metric ", metric, " is ",
                                               KindText(it->second.first, it->second.second),
                                               ", not ", KindText(SeriesKind::kHistogram, unit)));
    }
  }
  std::array<Series*, kStageCount> stages{};
  for (int i = 0; i < kStageCount; ++i) {
    stages[static_cast<size_t>(i)] =
        InsertLocked(kRequestDurationMetric, std::move(labels[i]), keys[i], SeriesKind::kHistogram,
                     Unit::kNanoseconds);
  }
  Series* input_size = InsertLocked(kRequestInputSizeMetric, std::move(labels[kStageCount]),
                                    keys[kStageCount], SeriesKind::kHistogram, Unit::kCount);
  requests_.push_back(
      std::make_unique<RequestMetrics>(route, stages, input_size, clock_, options_.sampler));
  return requests_.back().get();
}

std::vector<Series*> Registry::AllSeries() const {
  std::vector<Series*> out;
  {
    std::lock_guard<std::mutex> lock(mu_);
    out.reserve(series_->map.size());
    for (auto& [key, s] : series_->map) out.push_back(s.get());
  }
  std::sort(out.begin(), out.end(), [](Series* a, Series* b) { return a->key() < b->key(); });
  return out;
}

std::vector<RequestMetrics*> Registry::AllRequests() const {
  std::lock_guard<std::mutex> lock(mu_);
  std::vector<RequestMetrics*> out;
  for (auto& r : requests_) out.push_back(r.get());
  return out;
}

void Registry::Collect() {
  std::lock_guard<std::mutex> lock(collect_mu_);
  const WallTime now = Now();
  const Duration interval = now - last_collect_;
  const WallTime slot = last_collect_ + interval / 2;
  for (Series* s : AllSeries()) s->Collect(slot);
  for (RequestMetrics* r : AllRequests()) r->AfterCollect(interval, now);
  last_collect_ = now;
}

}  // namespace tailguard
