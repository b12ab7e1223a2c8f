// The live diagnosis on shaped incidents: an hour of steady signals, then a cause steps up and
// its symptoms follow, smaller; the alert fires a few seconds after the onset. The right signal
// ranks first, the symptoms are kept apart, a stage's share of the rise is given, another
// route's load is called contention, a change at the onset leads, and the finding reaches
// notifications through the analyzer's fan-out.
#include "analyze/live_diagnosis.h"

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "gmock/gmock.h"
#include "gtest/gtest.h"
#include "metrics/series_key.h"

namespace tailguard::analyze {
namespace {

using diagnose::Quadrant;
using ::testing::HasSubstr;
using ::testing::StartsWith;

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

WallTime At(int64_t s) { return WallTime{} + std::chrono::seconds(1'700'000'000 + s); }

SeriesPoint Latency(std::string route, std::string stage, double p99, double rate = kNaN) {
  SeriesPoint p;
  p.metric = std::string(kRequestDurationMetric);
  p.labels = {{"model", route}, {"route", route}, {"stage", std::move(stage)}, {"version", "v1"}};
  p.key = metrics::SeriesKey(p.metric, p.labels);
  p.unit = Unit::kNanoseconds;
  p.p99 = p99;
  p.count = 100;
  p.rate = rate;
  return p;
}

SeriesPoint Value(std::string metric, Labels labels, Unit unit, double mean) {
  SeriesPoint p;
  p.metric = std::move(metric);
  p.labels = std::move(labels);
  p.key = metrics::SeriesKey(p.metric, p.labels);
  p.unit = unit;
  p.mean = mean;
  return p;
}

std::string TotalKey(const std::string& route) { return Latency(route, "total", 0).key; }

// What each incident changes after its onset; everything else stays at its level with noise.
struct Shape {
  double a_size = 1000, a_infer = 0.020, a_feature = 0.005, a_total = 0.030, a_rate = 100;
  double b_total = 0.010;
  double other_cpu = 50;  // millicores of other processes
  double a_layer = 1e-5;  // a profiled layer: 10 us
};

// Batches at 1 s from 0 to `end`: steady until `onset`, then `incident`, then from `next_at`
// (when given) `next`.
void Feed(LiveDiagnoser& d, int64_t onset, int64_t end, const Shape& incident, int64_t next_at = -1,
          const Shape& next = {}) {
  std::mt19937 rng(7);
  std::normal_distribution<double> noise(1.0, 0.02);
  const Shape steady;
  for (int64_t s = 0; s <= end; ++s) {
    const Shape& x = next_at >= 0 && s >= next_at ? next : s >= onset ? incident : steady;
    Batch b;
    b.time = At(s);
    b.points.push_back(Latency("a", "total", x.a_total * noise(rng), x.a_rate * noise(rng)));
    b.points.push_back(Latency("a", "inference", x.a_infer * noise(rng)));
    b.points.push_back(Latency("a", "feature_fetch", x.a_feature * noise(rng)));
    b.points.push_back(Latency("a", "layer_score", x.a_layer * noise(rng)));
    b.points.push_back(Latency("b", "total", x.b_total * noise(rng), 50 * noise(rng)));
    b.points.push_back(Value(std::string(kRequestInputSizeMetric),
                             {{"model", "a"}, {"route", "a"}, {"version", "v1"}}, Unit::kCount,
                             x.a_size * noise(rng)));
    b.points.push_back(
        Value("tailguard_host_cpu_other_millicores", {}, Unit::kCount, x.other_cpu * noise(rng)));
    d.OnBatch(b);
  }
}

AlertEvent Fire(const std::string& series, int64_t at, int64_t breach) {
  AlertEvent e;
  e.kind = AlertEventKind::kFire;
  e.rule = "latency_p99";
  e.series = series;
  e.time = At(at);
  e.breach_start = At(breach);
  return e;
}

TEST(LiveDiagnosis, ClassifiesTailguardsOwnSeries) {
  auto stage = [](const char* s) {
    return ClassifyTailguardSeries(kRequestDurationMetric, {{"route", "r"}, {"stage", s}});
  };
  EXPECT_EQ(stage("feature_fetch").kind, diagnose::SignalKind::kCause);
  EXPECT_EQ(stage("feature_fetch").quadrant, Quadrant::kDependency);
  EXPECT_EQ(stage("layer_fc2").quadrant, Quadrant::kModel);
  EXPECT_EQ(stage("layer_fc2").kind, diagnose::SignalKind::kCause);
  EXPECT_EQ(stage("inference").kind, diagnose::SignalKind::kSymptom);
  EXPECT_EQ(stage("total").kind, diagnose::SignalKind::kSymptom);
  EXPECT_EQ(stage("db").kind, diagnose::SignalKind::kCause);  // an upstream's Server-Timing
  EXPECT_EQ(ClassifyTailguardSeries(kRequestInputSizeMetric, {}).quadrant, Quadrant::kTraffic);
  EXPECT_EQ(ClassifyTailguardSeries("tailguard_process_cpu_millicores", {}).kind,
            diagnose::SignalKind::kSymptom);
  EXPECT_EQ(ClassifyTailguardSeries("tailguard_cpu_pressure_some_permille", {}).quadrant,
            Quadrant::kHardware);
  EXPECT_EQ(ClassifyTailguardSeries("tailguard_model_batch_size", {}).quadrant, Quadrant::kModel);
}

TEST(LiveDiagnosis, WiderInputsRankFirstAndInferenceIsASymptom) {
  std::vector<Diagnosis> seen;
  LiveDiagnoser d({}, [&](const Diagnosis& x) { seen.push_back(x); });
  Shape wide;
  wide.a_size = 8000;  // 8x wider inputs
  wide.a_infer = 0.200;
  wide.a_total = 0.210;
  wide.a_layer = 0.150;  // every layer does more work: it follows the inputs
  Feed(d, 3600, 3605, wide);
  d.OnAlertEvent(Fire(TotalKey("a"), 3605, 3602));
  ASSERT_EQ(seen.size(), 1u);
  const Diagnosis& x = seen[0];
  EXPECT_EQ(x.quadrant, Quadrant::kTraffic);
  ASSERT_FALSE(x.causes.empty());
  EXPECT_THAT(x.causes[0].candidate.series, StartsWith("tailguard_request_input_size"));
  EXPECT_GT(x.causes[0].candidate.confidence, 0.5);
  EXPECT_THAT(x.symptoms, ::testing::Contains(HasSubstr("stage=\"inference\"")));
  EXPECT_THAT(x.summary, StartsWith("traffic: tailguard_request_input_size"));
  EXPECT_THAT(x.summary, HasSubstr("rose from"));
  EXPECT_TRUE(x.contention.empty());
  // The sparkline covers the ten minutes before the alert and ends at the peak.
  ASSERT_FALSE(x.causes[0].points.empty());
  EXPECT_LE(x.causes[0].points.size(), 120u);
  EXPECT_GE(x.causes[0].points.front().first, -600);
  EXPECT_GT(x.causes[0].points.back().second, 7000);
  // The infer stage explains nearly all of the total's rise (0.18 of 0.18 s).
  bool infer_found = false;
  LiveDiagnosisOptions all;
  all.top = 10;
  LiveDiagnoser wide_top(all);
  Feed(wide_top, 3600, 3605, wide);
  const Diagnosis y = wide_top.Diagnose("latency_p99", TotalKey("a"), At(3605), At(3602));
  for (const DiagnosedCause& c : y.causes) {
    if (c.candidate.series.find("stage=\"inference\"") == std::string::npos) continue;
    infer_found = true;
    EXPECT_NEAR(c.explained, 1.0, 0.15);
  }
  EXPECT_TRUE(infer_found);
  EXPECT_LT(y.seconds, 2.0);
}

TEST(LiveDiagnosis, SlowFeatureStoreIsADependency) {
  LiveDiagnoser d;
  Shape slow;
  // A layer grows 100x (more IQRs than the feature fetch moves) but explains 1 ms of 115 ms.
  slow.a_layer = 1e-3;
  slow.a_feature = 0.120;
  slow.a_total = 0.145;
  Feed(d, 3600, 3604, slow);
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("a"), At(3604), At(3601));
  EXPECT_EQ(x.quadrant, Quadrant::kDependency);
  ASSERT_FALSE(x.causes.empty());
  EXPECT_THAT(x.causes[0].candidate.series, HasSubstr("stage=\"feature_fetch\""));
  EXPECT_NEAR(x.causes[0].explained, 1.0, 0.1);
  bool layer = false;
  for (const DiagnosedCause& c : x.causes) {
    if (c.candidate.series.find("layer_score") == std::string::npos) continue;
    layer = true;
    EXPECT_GT(c.candidate.evidence.score, x.causes[0].candidate.evidence.score);
    EXPECT_LT(c.explained, 0.1);
    EXPECT_EQ(c.candidate.confidence, 0);
  }
  EXPECT_TRUE(layer);
}

TEST(LiveDiagnosis, NoisyNeighbourIsHardware) {
  LiveDiagnoser d;
  Shape busy;
  busy.other_cpu = 1800;
  busy.a_infer = 0.060;
  busy.a_total = 0.070;
  Feed(d, 3600, 3606, busy);
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("a"), At(3606), At(3603));
  EXPECT_EQ(x.quadrant, Quadrant::kHardware);
  ASSERT_FALSE(x.causes.empty());
  EXPECT_THAT(x.causes[0].candidate.series, StartsWith("tailguard_host_cpu_other"));
  EXPECT_TRUE(x.contention.empty());  // the host's signal has no route
}

TEST(LiveDiagnosis, AnotherRoutesLoadIsContention) {
  LiveDiagnoser d;
  Shape wide;
  wide.a_size = 8000;
  wide.a_infer = 0.200;
  wide.a_total = 0.210;
  wide.b_total = 0.040;  // route b shares the CPUs
  Feed(d, 3600, 3606, wide);
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("b"), At(3606), At(3603));
  EXPECT_EQ(x.contention, "model=a");
  EXPECT_EQ(x.quadrant, Quadrant::kHardware);
  EXPECT_THAT(x.summary, StartsWith("hardware (contention with model=a): "));
}

TEST(LiveDiagnosis, ALateAlertStillFindsTheCause) {
  // The rule took 50 s to fire: the guard band grows with the breach, so the baseline holds no
  // incident point.
  LiveDiagnoser d;
  Shape slow;
  slow.a_feature = 0.120;
  slow.a_total = 0.145;
  Feed(d, 3600, 3650, slow);
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("a"), At(3650), At(3600));
  ASSERT_FALSE(x.causes.empty());
  EXPECT_THAT(x.causes[0].candidate.series, HasSubstr("stage=\"feature_fetch\""));
  EXPECT_LE(x.causes[0].candidate.evidence.onset_time - 1'700'000'000, 3601);
}

TEST(LiveDiagnosis, AChangeAtTheOnsetLeads) {
  LiveDiagnoser d;
  Shape heavy;
  heavy.a_infer = 0.090;
  heavy.a_total = 0.100;
  Feed(d, 3600, 3605, heavy);
  d.RecordChange({At(3599), Quadrant::kModel, "model=a", "version v1 -> v2 (layer fc2 added)"});
  d.RecordChange({At(100), Quadrant::kModel, "model=a", "version v0 -> v1"});  // long before
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("a"), At(3605), At(3602));
  ASSERT_EQ(x.changes.size(), 1u);
  EXPECT_EQ(x.quadrant, Quadrant::kModel);
  EXPECT_THAT(x.summary, StartsWith("model: model=a changed at -6s: version v1 -> v2"));
}

TEST(LiveDiagnosis, AnAlertThatStaysOnIsRecheckedWhenItsCauseChanges) {
  std::vector<Diagnosis> seen;
  LiveDiagnoser d({}, [&](const Diagnosis& x) { seen.push_back(x); });
  Shape wide;
  wide.a_size = 8000;
  wide.a_infer = 0.200;
  wide.a_total = 0.210;
  Shape slow;  // the inputs are back to normal, but the feature store slowed down
  slow.a_feature = 0.150;
  slow.a_total = 0.170;
  Feed(d, 3600, 3605, wide);
  d.OnAlertEvent(Fire(TotalKey("a"), 3605, 3602));
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].quadrant, Quadrant::kTraffic);
  seen.clear();
  // On: the inputs stay wide until 3640, then the feature store slows down.
  std::mt19937 rng(9);
  std::normal_distribution<double> noise(1.0, 0.02);
  for (int64_t s = 3606; s <= 3700; ++s) {
    const Shape& x = s < 3640 ? wide : slow;
    Batch b;
    b.time = At(s);
    b.points.push_back(Latency("a", "total", x.a_total * noise(rng), x.a_rate * noise(rng)));
    b.points.push_back(Latency("a", "inference", x.a_infer * noise(rng)));
    b.points.push_back(Latency("a", "feature_fetch", x.a_feature * noise(rng)));
    b.points.push_back(Value(std::string(kRequestInputSizeMetric),
                             {{"model", "a"}, {"route", "a"}, {"version", "v1"}}, Unit::kCount,
                             x.a_size * noise(rng)));
    d.OnBatch(b);
  }
  // Rechecks while the inputs stayed wide found the same cause and said nothing; the one after
  // the feature store slowed down is a new finding.
  ASSERT_EQ(seen.size(), 1u);
  EXPECT_EQ(seen[0].quadrant, Quadrant::kDependency);
  EXPECT_THAT(seen[0].causes[0].candidate.series, HasSubstr("stage=\"feature_fetch\""));
  EXPECT_GT(seen[0].alert_time, At(3640));
  EXPECT_EQ(d.Latest("latency_p99", TotalKey("a"))->quadrant, Quadrant::kDependency);
}

TEST(LiveDiagnosis, AYoungServiceHasABaselineFromBeforeTheBreach) {
  // Fifty seconds of history: the breach began at 50 s, the alert at 54 s; the baseline is
  // what came before 40 s (the breach and one 10 s window before it).
  LiveDiagnoser d;
  Shape slow;
  slow.a_feature = 0.120;
  slow.a_total = 0.145;
  Feed(d, 50, 54, slow);
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("a"), At(54), At(50));
  EXPECT_EQ(x.quadrant, Quadrant::kDependency);
  ASSERT_FALSE(x.causes.empty());
  EXPECT_EQ(x.causes[0].candidate.evidence.baseline.n, 40u);
}

TEST(LiveDiagnosis, NothingMovedSaysSo) {
  LiveDiagnoser d;
  Feed(d, 3600, 3605, Shape{});
  const Diagnosis x = d.Diagnose("latency_p99", TotalKey("a"), At(3605));
  EXPECT_EQ(x.quadrant, Quadrant::kUnknown);
  EXPECT_THAT(x.summary, StartsWith("unknown: no signal moved"));
}

TEST(LiveDiagnosis, HistoryIsBounded) {
  LiveDiagnosisOptions o;
  o.max_series = 3;
  o.rank.baseline_s = 60;
  o.sparkline_s = 30;
  o.change_window_s = 10;
  LiveDiagnoser d(o);
  Feed(d, 100000, 400, Shape{});
  EXPECT_EQ(d.series_count(), 3u);
  EXPECT_GT(d.series_refused(), 0u);
  const Diagnosis x = d.Diagnose("r", TotalKey("a"), At(400));
  for (const DiagnosedCause& c : x.causes) {
    // Only the last baseline + guard + window + change window is kept: 60 + 60 + 10 s.
    EXPECT_GE(c.candidate.evidence.baseline.n, 1u);
    EXPECT_LE(c.candidate.evidence.baseline.n, 61u);
  }
}

TEST(LiveDiagnosis, AnnotatesFiringAlertsAndForgetsResolvedOnes) {
  LiveDiagnoser d;
  Shape slow;
  slow.a_feature = 0.120;
  slow.a_total = 0.145;
  Feed(d, 3600, 3604, slow);
  d.OnAlertEvent(Fire(TotalKey("a"), 3604, 3601));
  NotifiedAlert n;
  n.rule = "latency_p99";
  n.series = TotalKey("a");
  n.annotations = {{"description", "x"}, {"summary", "y"}};
  d.Annotate(n);
  ASSERT_EQ(n.annotations.size(), 3u);
  EXPECT_EQ(n.annotations[1].first, "diagnosis");
  EXPECT_THAT(n.annotations[1].second, StartsWith("dependency: "));
  d.Annotate(n);  // once only
  EXPECT_EQ(n.annotations.size(), 3u);
  AlertEvent resolve = Fire(TotalKey("a"), 3700, 3601);
  resolve.kind = AlertEventKind::kResolve;
  d.OnAlertEvent(resolve);
  EXPECT_EQ(d.Latest("latency_p99", TotalKey("a")), nullptr);
}

}  // namespace
}  // namespace tailguard::analyze
