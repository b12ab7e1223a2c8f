// Series through the ensemble and the alert engine.
#include "series_replay.h"

#include <cmath>

namespace tailguard::cli {

AlertConfig DefaultReplayRules(double anomaly_threshold) {
  AlertConfig c;
  AlertRule tiers;
  tiers.name = "p99_vs_baseline";
  tiers.stat = Statistic::kP99;
  c.rules.push_back(tiers);
  AlertRule anomaly;
  anomaly.name = "anomaly_score";
  anomaly.stat = Statistic::kAnomalyScore;
  AlertTier t;
  t.above = Threshold::Absolute(anomaly_threshold);
  t.severity = "warning";
  t.receivers = {"wecom"};
  anomaly.tiers.push_back(t);
  c.rules.push_back(anomaly);
  return c;
}

void SeriesReplay::Point(AlertEngine& engine, WallTime t, double p99, Observation obs) {
  const AnomalyPoint a = detector_.Update(t, p99);
  scores_.push_back(a.score);
  drift_.Add(t, p99);
  obs.time = t;
  obs.metric = kReplayMetric;
  obs.labels = labels_;
  obs.p99 = p99;
  obs.anomaly_score = std::isnan(p99) ? Observation::kMissing : a.level;
  obs.baseline_p99 = a.baseline;
  engine.Observe(obs);
}

}  // namespace tailguard::cli
