// The analyzer: per-series detectors and baseline, the alert engine's driver, and the fan-out of
// what they find.
#include "tailguard/analyzer.h"

#include <cmath>
#include <utility>

#include "absl/container/flat_hash_map.h"
#include "common/strings.h"
#include "metrics/series_key.h"

namespace tailguard {

std::string_view ActionDecisionName(ActionDecision d) {
  switch (d) {
    case ActionDecision::kRecorded:
      return "recorded";
    case ActionDecision::kApplied:
      return "applied";
    case ActionDecision::kRefused:
      return "refused";
  }
  return "recorded";
}

void SetLatencyStats(const Histogram& h, SeriesPoint& p) { SetStats(h, Unit::kNanoseconds, p); }

void SetStats(const Histogram& h, Unit unit, SeriesPoint& p) {
  const double kNs = UnitScale(unit);
  p.unit = unit;
  p.count = h.count();
  if (h.empty()) return;
  p.p50 = static_cast<double>(h.Quantile(0.5)) * kNs;
  p.p90 = static_cast<double>(h.Quantile(0.9)) * kNs;
  p.p99 = static_cast<double>(h.Quantile(0.99)) * kNs;
  p.p999 = static_cast<double>(h.Quantile(0.999)) * kNs;
  p.mean = h.mean() * kNs;
  p.max = static_cast<double>(h.max()) * kNs;
}

AlertConfig DefaultAlertRules(double anomaly_threshold) {
  AlertConfig c;
  const std::vector<LabelMatcher> total = {
      {"__name__", LabelMatcher::Op::kEqual, std::string(kRequestDurationMetric)},
      {"stage", LabelMatcher::Op::kEqual, "total"}};
  AlertRule tiers;
  tiers.name = "p99_vs_baseline";
  tiers.matchers = total;
  tiers.stat = Statistic::kP99;  // empty tiers: DefaultAlertTiers()
  c.rules.push_back(tiers);
  AlertRule anomaly;
  anomaly.name = "anomaly_score";
  anomaly.matchers = total;
  anomaly.stat = Statistic::kAnomalyScore;
  AlertTier t;
  t.above = Threshold::Absolute(anomaly_threshold);
  t.severity = "warning";
  anomaly.tiers.push_back(t);
  c.rules.push_back(anomaly);
  return c;
}

struct Analyzer::SeriesState {
  AnomalyDetector detector;
  DriftDetector drift;
  WallTime last_drift_sample = WallTime::min();
  bool drifting = false;
};

struct Analyzer::StateMap {
  absl::flat_hash_map<std::string, std::unique_ptr<SeriesState>> by_key;
};

// The engine's sink: every event to every subscriber, and the actions of fire and escalate
// events to the actuator first.
class Analyzer::Fanout final : public AlertSink {
 public:
  explicit Fanout(Analyzer& a) : a_(a) {}

  void OnEvent(const AlertEvent& event) override {
    for (Subscriber* s : a_.subscribers_) s->OnAlertEvent(event);
    if (event.to_state != AlertState::kAlert || event.actions.empty() ||
        (event.kind != AlertEventKind::kFire && event.kind != AlertEventKind::kEscalate)) {
      return;
    }
    for (const std::string& action : event.actions) {
      ActionRecord r;
      r.time = event.time;
      r.action = action;
      r.cause = event;
      if (a_.options_.actuator != nullptr) {
        r.outcome = a_.options_.actuator->Act(action, event);
      } else {
        r.outcome.decision = ActionDecision::kRecorded;
        r.outcome.detail = Cat("recorded only: no mitigation is installed for \"", action, "\" (",
                               event.severity, " on ", event.series, ")");
      }
      for (Subscriber* s : a_.subscribers_) s->OnAction(r);
    }
  }
  void OnNotification(const Notification& n) override {
    Notification annotated = n;
    for (NotifiedAlert& alert : annotated.alerts) {
      for (const Subscriber* s : a_.subscribers_) s->Annotate(alert);
    }
    for (Subscriber* s : a_.subscribers_) s->OnNotification(annotated);
  }
  void OnMuted(const MutedAlert& m) override {
    for (Subscriber* s : a_.subscribers_) s->OnMuted(m);
  }

 private:
  Analyzer& a_;
};

Analyzer::Analyzer(AnalyzerOptions options)
    : options_(std::move(options)),
      fanout_(std::make_unique<Fanout>(*this)),
      states_(std::make_unique<StateMap>()) {}

Analyzer::~Analyzer() = default;

absl::StatusOr<std::unique_ptr<Analyzer>> Analyzer::Create(AlertConfig rules,
                                                           AnalyzerOptions options) {
  std::unique_ptr<Analyzer> a(new Analyzer(std::move(options)));
  absl::StatusOr<std::unique_ptr<AlertEngine>> engine =
      AlertEngine::Create(std::move(rules), *a->fanout_, a->options_.muter);
  if (!engine.ok()) return engine.status();
  a->engine_ = *std::move(engine);
  return a;
}

void Analyzer::Analyze(const Batch& batch, std::vector<PointVerdict>* verdicts) {
  const WallTime now = batch.time;
  if (verdicts != nullptr) {
    verdicts->clear();
    verdicts->reserve(batch.points.size());
  }
  for (Subscriber* s : subscribers_) s->OnBatch(batch);
  std::string made_key;
  for (const SeriesPoint& p : batch.points) {
    if (p.key.empty()) made_key = metrics::SeriesKey(p.metric, p.labels);
    const std::string& key = p.key.empty() ? made_key : p.key;
    auto [it, inserted] = states_->by_key.try_emplace(key);
    if (inserted) {
      it->second = std::make_unique<SeriesState>();
      it->second->detector = AnomalyDetector(options_.ensemble);
      it->second->drift = DriftDetector(options_.drift);
    }
    SeriesState& st = *it->second;
    const bool missing = std::isnan(p.p99);
    const AnomalyPoint a = st.detector.Update(now, p.p99);
    PointVerdict v;
    v.level = missing ? Observation::kMissing : a.level;
    v.score = missing ? Observation::kMissing : a.score;
    v.baseline = a.baseline;
    v.forecast = a.forecast;

    // Drift: the first point of each drift_sample interval.
    if (!missing &&
        (st.last_drift_sample == WallTime::min() || options_.drift_sample <= Duration::zero() ||
         now - st.last_drift_sample >= options_.drift_sample)) {
      st.last_drift_sample = now;
      st.drift.Add(now, p.p99);
      const DriftFinding& f = st.drift.Current();
      if (f.drifting != st.drifting) {
        st.drifting = f.drifting;
        DriftEvent d{now, key, f.drifting, f};
        for (Subscriber* s : subscribers_) s->OnDrift(d);
      }
    }

    if (!missing && a.score >= options_.anomaly_event_score) {
      AnomalyEvent e{now, key, p.p99, a.baseline, a.score, p.unit};
      for (Subscriber* s : subscribers_) s->OnAnomaly(e);
    }

    Observation obs;
    obs.time = now;
    obs.metric = p.metric;
    obs.labels = p.labels;
    obs.unit = p.unit;
    obs.p50 = p.p50;
    obs.p90 = p.p90;
    obs.p99 = p.p99;
    obs.p999 = p.p999;
    obs.rate = p.rate;
    obs.error_ratio = p.error_ratio;
    obs.anomaly_score = v.level;
    obs.baseline_p99 = v.baseline;
    engine_->Observe(obs);
    if (verdicts != nullptr) verdicts->push_back(v);
  }
  engine_->Advance(now);
}

absl::StatusOr<uint64_t> Analyzer::Run(Source& source) {
  Batch batch;
  uint64_t n = 0;
  for (;;) {
    absl::StatusOr<bool> more = source.Next(batch);
    if (!more.ok()) return more.status();
    if (!*more) return n;
    Analyze(batch);
    ++n;
  }
}

const DriftFinding* Analyzer::Drift(std::string_view key) const {
  auto it = states_->by_key.find(std::string(key));
  return it == states_->by_key.end() ? nullptr : &it->second->drift.Current();
}

absl::StatusOr<bool> BatchListSource::Next(Batch& batch) {
  if (next_ >= batches_.size()) return false;
  batch = batches_[next_++];
  return true;
}

}  // namespace tailguard
