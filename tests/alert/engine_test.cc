// The engine end to end: events and their contents, presets, missing data, series identity,
// flapping, and the cost of an evaluation.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <set>

#include "alert_test_util.h"

namespace tailguard {
namespace {

using alert_test::Kinds;
using alert_test::kMetric;
using alert_test::minutes;
using alert_test::P99;
using alert_test::seconds;
using alert_test::T0;
using ::testing::ElementsAre;

constexpr double kNaN = Observation::kMissing;

class EngineTest : public ::testing::Test {
 protected:
  void Load(const std::string& yaml) {
    absl::StatusOr<AlertConfig> config = ParseAlertConfig(yaml, "test.yaml");
    ASSERT_TRUE(config.ok()) << config.status();
    auto engine = AlertEngine::Create(*config, sink_);
    ASSERT_TRUE(engine.ok()) << engine.status();
    engine_ = *std::move(engine);
  }
  // One observation a second from `from` (seconds after T0) for `count` seconds.
  void Run(int from, int count, double p99, double baseline = 0.100) {
    for (int s = from; s < from + count; ++s) {
      engine_->Observe(P99(T0() + seconds(s), labels_, p99, baseline));
    }
  }

  CollectingAlertSink sink_;
  std::unique_ptr<AlertEngine> engine_;
  Labels labels_ = {{"model", "risk-control"}, {"stage", "total"}};
};

TEST_F(EngineTest, WalksThroughEveryTransitionWithTheDefaults) {
  Load("rules:\n  - name: risk\n");
  Run(0, 2, 0.12);  // +20 %: warning tier
  EXPECT_TRUE(sink_.events.empty());
  Run(2, 1, 0.12);
  ASSERT_EQ(sink_.events.size(), 1u);
  EXPECT_EQ(sink_.events[0].kind, AlertEventKind::kPreAlert);
  Run(3, 5, 0.05);  // the breach stops before 30 s
  EXPECT_THAT(Kinds(sink_.events), ElementsAre(AlertEventKind::kPreAlert, AlertEventKind::kCancel));
  Run(8, 31, 0.12);   // 8 .. 38 s: PreAlert at 10 s, Alert at 38 s
  Run(39, 60, 0.09);  // 39 .. 98 s clear: not yet a minute
  EXPECT_EQ(engine_->StateOf("risk", kMetric, labels_), AlertState::kAlert);
  Run(99, 1, 0.09);
  EXPECT_EQ(engine_->StateOf("risk", kMetric, labels_), AlertState::kNormal);
  EXPECT_THAT(Kinds(sink_.events), ElementsAre(AlertEventKind::kPreAlert, AlertEventKind::kCancel,
                                               AlertEventKind::kPreAlert, AlertEventKind::kFire,
                                               AlertEventKind::kResolve));
  EXPECT_EQ(sink_.events[3].time, T0() + seconds(38));
  EXPECT_EQ(sink_.events[4].time, T0() + seconds(99));
}

TEST_F(EngineTest, EventsCarryEverything) {
  Load(R"(rules:
  - name: risk
    select: 'tailguard_request_duration_seconds{model="risk-control"}'
    debounce: {pre_alert_after: 1, alert_after: 0s, escalate_after: 1}
)");
  // Labels in another order than the registry's: the event has them sorted.
  labels_ = {{"stage", "total"}, {"model", "risk-control"}};
  Run(0, 1, 0.16, 0.1);  // +60 %: emergency
  ASSERT_EQ(sink_.events.size(), 2u);
  const AlertEvent& pre = sink_.events[0];
  EXPECT_EQ(pre.kind, AlertEventKind::kPreAlert);
  EXPECT_EQ(pre.from_state, AlertState::kNormal);
  EXPECT_EQ(pre.to_state, AlertState::kPreAlert);
  EXPECT_EQ(pre.from_tier, -1);
  EXPECT_EQ(pre.to_tier, 2);
  EXPECT_TRUE(pre.actions.empty());
  const AlertEvent& fire = sink_.events[1];
  EXPECT_EQ(fire.time, T0());
  EXPECT_EQ(fire.kind, AlertEventKind::kFire);
  EXPECT_EQ(fire.rule, "risk");
  EXPECT_EQ(fire.metric, kMetric);
  EXPECT_EQ(fire.series,
            "tailguard_request_duration_seconds{model=\"risk-control\",stage=\"total\"}");
  EXPECT_THAT(fire.labels, ElementsAre(std::pair<std::string, std::string>("model", "risk-control"),
                                       std::pair<std::string, std::string>("stage", "total")));
  EXPECT_EQ(fire.stat, Statistic::kP99);
  EXPECT_EQ(fire.from_state, AlertState::kPreAlert);
  EXPECT_EQ(fire.to_state, AlertState::kAlert);
  EXPECT_EQ(fire.to_tier, 2);
  EXPECT_EQ(fire.severity, "emergency");
  EXPECT_EQ(fire.value, 0.16);
  EXPECT_DOUBLE_EQ(fire.threshold, 0.15);
  EXPECT_EQ(fire.baseline_p99, 0.1);
  EXPECT_EQ(fire.breach_start, T0());
  EXPECT_EQ(fire.schedule, "");
  EXPECT_THAT(fire.actions, ElementsAre("degrade"));
  // The active alert list agrees.
  std::vector<ActiveAlert> active = engine_->ActiveAlerts();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_EQ(active[0].rule, "risk");
  EXPECT_EQ(active[0].state, AlertState::kAlert);
  EXPECT_EQ(active[0].severity, "emergency");
  EXPECT_EQ(active[0].since, T0());
}

TEST_F(EngineTest, TierEscalationEvents) {
  Load("rules:\n  - name: risk\n");
  Run(0, 31, 0.115);  // warning, fires at 30 s
  Run(31, 3, 0.135);  // critical three times: escalate
  Run(34, 3, 0.160);  // emergency three times: escalate, with the degrade action
  ASSERT_THAT(Kinds(sink_.events),
              ElementsAre(AlertEventKind::kPreAlert, AlertEventKind::kFire,
                          AlertEventKind::kEscalate, AlertEventKind::kEscalate));
  EXPECT_EQ(sink_.events[2].to_tier, 1);
  EXPECT_EQ(sink_.events[2].severity, "critical");
  EXPECT_TRUE(sink_.events[2].actions.empty());
  EXPECT_EQ(sink_.events[3].from_tier, 1);
  EXPECT_EQ(sink_.events[3].to_tier, 2);
  EXPECT_THAT(sink_.events[3].actions, ElementsAre("degrade"));
  Run(37, 61, 0.115);  // a minute back at warning
  ASSERT_EQ(sink_.events.size(), 5u);
  EXPECT_EQ(sink_.events[4].kind, AlertEventKind::kDeescalate);
  EXPECT_EQ(sink_.events[4].from_tier, 2);
  EXPECT_EQ(sink_.events[4].to_tier, 0);
  EXPECT_EQ(sink_.events[4].severity, "warning");
}

TEST_F(EngineTest, MissingStatisticsNeverBreach) {
  Load("rules:\n  - name: risk\n  - name: abs\n    above: 200ms\n");
  Run(0, 100, kNaN);         // no P99 at all
  Run(100, 100, 0.5, kNaN);  // no baseline: only the absolute rule can breach
  ASSERT_FALSE(sink_.events.empty());
  for (const AlertEvent& e : sink_.events) EXPECT_EQ(e.rule, "abs");
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kAlert);
}

// Regression (issue 16): when traffic stopped, alerts resolved and the message read "P99 n/a,
// threshold n/a": an outage looked like the end of the incident.
TEST_F(EngineTest, NoDataHoldsAFiringAlertInsteadOfResolvingIt) {
  Load("rules:\n  - name: abs\n    above: 200ms\n");
  Run(0, 40, 0.5);
  ASSERT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kAlert);
  const size_t before = sink_.events.size();
  Run(40, 600, kNaN);  // ten minutes without a request
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kAlert);
  ASSERT_EQ(sink_.events.size(), before + 1);  // one no_data event, not one per evaluation
  const AlertEvent& gap = sink_.events.back();
  EXPECT_EQ(gap.kind, AlertEventKind::kNoData);
  EXPECT_EQ(gap.time, T0() + seconds(40));
  EXPECT_EQ(gap.from_state, AlertState::kAlert);
  EXPECT_EQ(gap.to_state, AlertState::kAlert);
  EXPECT_TRUE(std::isnan(gap.value));
  EXPECT_TRUE(gap.actions.empty());
  std::vector<ActiveAlert> active = engine_->ActiveAlerts();
  ASSERT_EQ(active.size(), 1u);
  EXPECT_TRUE(active[0].no_data);
  EXPECT_EQ(active[0].stat, Statistic::kP99);
  // Data back and clean: the gap does not count as clean time, a full resolve_after (1 min)
  // of clean data does.
  Run(640, 60, 0.1);
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kAlert);
  EXPECT_FALSE(engine_->ActiveAlerts()[0].no_data);
  Run(700, 1, 0.1);
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kNormal);
  EXPECT_EQ(sink_.events.back().kind, AlertEventKind::kResolve);
}

TEST_F(EngineTest, ClearTimeBeforeAGapDoesNotResolveAfterIt) {
  Load("rules:\n  - name: abs\n    above: 200ms\n");
  Run(0, 40, 0.5);
  Run(40, 50, 0.1);    // 50 s clear: not yet the minute
  Run(90, 300, kNaN);  // a gap
  Run(390, 1, 0.1);    // back, clear: 350 s since the clear run began, but most of it was no data
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kAlert);
  Run(391, 60, 0.1);
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kNormal);
}

TEST_F(EngineTest, AMissingBaselineIsNoDataForARelativeRule) {
  Load("rules:\n  - name: risk\n");  // the default tiers: relative to the baseline
  Run(0, 40, 0.2, 0.1);
  ASSERT_EQ(engine_->StateOf("risk", kMetric, labels_), AlertState::kAlert);
  Run(40, 300, 0.05, kNaN);  // a P99 but no baseline: the threshold is unknown
  EXPECT_EQ(engine_->StateOf("risk", kMetric, labels_), AlertState::kAlert);
  EXPECT_TRUE(engine_->ActiveAlerts()[0].no_data);
}

TEST_F(EngineTest, NoDataInNormalIsJustNoBreach) {
  Load("rules:\n  - name: abs\n    above: 200ms\n    debounce: {pre_alert_after: 3}\n");
  Run(0, 2, 0.5);
  Run(2, 1, kNaN);  // breaks the streak of breaches
  Run(3, 2, 0.5);
  EXPECT_TRUE(sink_.events.empty());
  Run(5, 1, 0.5);
  EXPECT_THAT(Kinds(sink_.events), ElementsAre(AlertEventKind::kPreAlert));
  Run(6, 100, kNaN);  // a pre-alert is held too: no cancel for want of data
  EXPECT_THAT(Kinds(sink_.events), ElementsAre(AlertEventKind::kPreAlert, AlertEventKind::kNoData));
  EXPECT_EQ(engine_->StateOf("abs", kMetric, labels_), AlertState::kPreAlert);
}

// A rule on a drop: the rate falling below its floor (the outage that stops every request).
TEST_F(EngineTest, BelowRulesFireOnADrop) {
  Load(R"(rules:
  - name: traffic_drop
    stat: rate
    tiers:
      - {below: 10, severity: warning}
      - {below: 1, severity: critical}
    debounce: {pre_alert_after: 1, alert_after: 5s, resolve_after: 10s}
)");
  const auto rate = [&](int from, int count, double r) {
    for (int s = from; s < from + count; ++s) {
      Observation o = P99(T0() + seconds(s), labels_, 0.05, 0.05);
      o.rate = r;
      engine_->Observe(o);
    }
  };
  rate(0, 30, 100);  // healthy traffic
  EXPECT_TRUE(sink_.events.empty());
  rate(30, 10, 5);  // below 10: warning
  EXPECT_EQ(engine_->StateOf("traffic_drop", kMetric, labels_), AlertState::kAlert);
  rate(40, 5, 0);  // no request at all: a rate of 0 is data, and below 1
  ASSERT_EQ(engine_->ActiveAlerts().size(), 1u);
  EXPECT_EQ(engine_->ActiveAlerts()[0].severity, "critical");
  EXPECT_FALSE(engine_->ActiveAlerts()[0].no_data);
  rate(45, 30, 100);
  EXPECT_EQ(engine_->StateOf("traffic_drop", kMetric, labels_), AlertState::kNormal);
}

TEST_F(EngineTest, PresetsFireAtTheirThresholds) {
  Load(R"(rules:
  - name: cv
    select: '{model="cv"}'
    preset: image_classification
  - name: fetch
    select: '{model="rec"}'
    preset: recommender_feature_fetch
  - name: ttft
    select: '{model="chat"}'
    preset: nlp_first_token
)");
  struct Case {
    const char* model;
    double below;
    double above;
  };
  for (const Case& c :
       {Case{"cv", 0.29, 0.31}, Case{"rec", 0.049, 0.051}, Case{"chat", 0.49, 0.51}}) {
    labels_ = {{"model", c.model}};
    sink_.Clear();
    Run(0, 60, c.below);
    EXPECT_TRUE(sink_.events.empty()) << c.model;
    Run(60, 31, c.above);
    ASSERT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kFire), 1) << c.model;
    EXPECT_EQ(sink_.events.size(), 2u) << c.model;  // only its own rule
  }
}

TEST_F(EngineTest, AnomalyScoreAndOtherStatistics) {
  Load(R"(rules:
  - {name: anomaly, stat: anomaly_score, above: 0.8}
  - {name: errors, stat: error_ratio, above: 0.05}
  - {name: qps, stat: rate, above: 1000}
)");
  for (int s = 0; s < 31; ++s) {
    Observation o;
    o.time = T0() + seconds(s);
    o.metric = kMetric;
    o.labels = labels_;
    o.anomaly_score = 0.9;
    o.error_ratio = 0.01;
    o.rate = 1500;
    engine_->Observe(o);
  }
  std::set<std::string> fired;
  for (const AlertEvent& e : sink_.events) {
    if (e.kind == AlertEventKind::kFire) fired.insert(e.rule);
  }
  EXPECT_THAT(fired, ElementsAre("anomaly", "qps"));
}

TEST_F(EngineTest, SelectorsPickTheirSeries) {
  Load(R"(rules:
  - {name: a, select: 'tailguard_request_duration_seconds{model=~"rec-.*", model!="rec-batch"}', above: 1s}
  - {name: b, select: '{stage!~"feature_.*"}', above: 1s}
  - {name: c, select: 'other_metric', above: 1s}
)");
  const auto rules_for = [&](Labels labels) {
    const uint64_t before = engine_->stats().evaluations;
    engine_->Observe(P99(T0(), labels, 0.1));
    return engine_->stats().evaluations - before;
  };
  EXPECT_EQ(rules_for({{"model", "rec-1"}, {"stage", "total"}}), 2u);
  EXPECT_EQ(rules_for({{"model", "rec-batch"}, {"stage", "total"}}), 1u);
  EXPECT_EQ(rules_for({{"model", "rec-1"}, {"stage", "feature_fetch"}}), 1u);
  EXPECT_EQ(rules_for({{"model", "cv"}, {"stage", "feature_fetch"}}), 0u);
  EXPECT_EQ(rules_for({{"model", "prefix-rec-1"}}), 1u);  // regexes match the whole value
}

TEST_F(EngineTest, LabelOrderDoesNotMakeANewSeries) {
  Load("rules:\n  - name: risk\n");
  const Labels reversed = {{"stage", "total"}, {"model", "risk-control"}};
  for (int s = 0; s < 3; ++s) {
    engine_->Observe(P99(T0() + seconds(s), s % 2 == 0 ? labels_ : reversed, 0.2));
  }
  EXPECT_EQ(engine_->stats().series, 1u);
  EXPECT_EQ(engine_->StateOf("risk", kMetric, reversed), AlertState::kPreAlert);
  EXPECT_EQ(engine_->StateOf("risk", "other", reversed), AlertState::kNormal);
  EXPECT_EQ(engine_->StateOf("nope", kMetric, reversed), AlertState::kNormal);
}

TEST_F(EngineTest, OldObservationsAreDropped) {
  Load("rules:\n  - name: risk\n");
  Run(10, 1, 0.2);
  Run(10, 1, 0.2);  // the same tick again
  Run(5, 1, 0.2);   // earlier
  EXPECT_EQ(engine_->stats().observations, 3u);
  EXPECT_EQ(engine_->stats().out_of_order, 2u);
  EXPECT_EQ(engine_->stats().evaluations, 1u);
}

TEST_F(EngineTest, FlappingProducesNoStorm) {
  Load("rules:\n  - name: risk\n");
  // An hour alternating between +60 % and normal: nothing at all.
  for (int s = 0; s < 3600; ++s) Run(s, 1, s % 2 == 0 ? 0.16 : 0.09);
  EXPECT_TRUE(sink_.events.empty());
  // An hour of 2-second bursts: nothing either.
  for (int s = 3600; s < 7200; ++s) Run(s, 1, s % 3 == 2 ? 0.09 : 0.16);
  EXPECT_TRUE(sink_.events.empty());
  // An hour of 10-second bursts every 20 s: pre-alerts come and go, nothing fires or notifies.
  for (int s = 7200; s < 10800; ++s) Run(s, 1, s % 20 < 10 ? 0.16 : 0.09);
  engine_->Advance(T0() + seconds(10800));
  EXPECT_EQ(alert_test::CountKind(sink_.events, AlertEventKind::kFire), 0);
  EXPECT_LE(sink_.events.size(), 2u * 180);
  EXPECT_TRUE(sink_.notifications.empty());
}

TEST_F(EngineTest, ActiveAlertsAreSorted) {
  Load("rules:\n  - name: b\n  - name: a\n    above: 100ms\n");
  Labels x = {{"model", "x"}};
  Labels y = {{"model", "y"}};
  for (int s = 0; s < 5; ++s) {
    engine_->Observe(P99(T0() + seconds(s), y, 0.2));
    engine_->Observe(P99(T0() + seconds(s), x, 0.2));
  }
  std::vector<ActiveAlert> active = engine_->ActiveAlerts();
  ASSERT_EQ(active.size(), 4u);
  EXPECT_EQ(active[0].rule, "a");
  EXPECT_EQ(active[0].series, "tailguard_request_duration_seconds{model=\"x\"}");
  EXPECT_EQ(active[0].state, AlertState::kPreAlert);
  EXPECT_EQ(active[3].rule, "b");
  EXPECT_EQ(active[3].series, "tailguard_request_duration_seconds{model=\"y\"}");
  EXPECT_EQ(active[3].severity, "emergency");
}

TEST_F(EngineTest, EveryMatchingRuleIsEvaluatedOnEverySeries) {
  // 1000 series, each selected by three rules (one with a schedule), ticked 300 times. The
  // cost per evaluation is measured in bench/alert_bench.cc.
  Load(R"(timezone: Asia/Shanghai
schedules:
  - {name: weekend, days: weekend, scale: 1.2}
rules:
  - name: risk
  - {name: abs, above: 300ms}
  - {name: anomaly, stat: anomaly_score, above: 0.8}
)");
  std::vector<Labels> series;
  for (int i = 0; i < 1000; ++i) {
    series.push_back({{"model", "m" + std::to_string(i % 10)},
                      {"route", "/r" + std::to_string(i)},
                      {"stage", "total"}});
  }
  for (const Labels& l : series) engine_->Observe(P99(T0(), l, 0.1));  // first sight
  for (int s = 1; s <= 300; ++s) {
    for (size_t i = 0; i < series.size(); ++i) {
      Observation o = P99(T0() + seconds(s), series[i], (s + i) % 7 == 0 ? 0.2 : 0.1);
      o.anomaly_score = 0.1;
      engine_->Observe(o);
    }
  }
  EXPECT_EQ(engine_->stats().evaluations, 301u * 1000 * 3);
  EXPECT_EQ(engine_->stats().series, 1000u);
}

}  // namespace
}  // namespace tailguard
