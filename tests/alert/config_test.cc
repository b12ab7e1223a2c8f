// The rule file: the sample in examples/, defaults, presets, selectors, and error messages that
// name the file, the line and the field.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <fstream>

#include "alert/config_internal.h"
#include "alert_test_util.h"

namespace tailguard {
namespace {

using alert_test::Local;
using alert_test::minutes;
using alert_test::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::StartsWith;

const std::string kSample = std::string(TAILGUARD_EXAMPLES_DIR) + "/rules.yaml";

std::string ErrorOf(std::string_view yaml) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(yaml, "rules.yaml");
  if (c.ok()) return "OK";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

const AlertRule* FindRule(const AlertConfig& c, std::string_view name) {
  for (const AlertRule& r : c.rules) {
    if (r.name == name) return &r;
  }
  return nullptr;
}

TEST(AlertConfigTest, ParsesTheSampleFile) {
  absl::StatusOr<AlertConfig> parsed = LoadAlertConfig(kSample);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const AlertConfig& c = *parsed;
  EXPECT_EQ(c.time_zone, "Asia/Shanghai");
  EXPECT_EQ(c.default_receiver, "wecom");
  EXPECT_THAT(c.route.group_by, ElementsAre("alertname", "model"));
  EXPECT_EQ(c.route.group_wait, seconds(30));
  EXPECT_EQ(c.route.group_interval, minutes(5));
  EXPECT_EQ(c.route.repeat_interval, std::chrono::hours(4));
  ASSERT_EQ(c.receivers.size(), 4u);
  EXPECT_EQ(c.receivers[1].name, "sms");
  EXPECT_EQ(c.receivers[1].route.repeat_interval, std::chrono::hours(1));
  EXPECT_THAT(c.receivers[1].route.group_by, ElementsAre("alertname", "model"));  // inherited
  EXPECT_THAT(c.receivers[2].route.group_by, ElementsAre("alertname"));
  EXPECT_EQ(c.receivers[2].route.repeat_interval, minutes(30));

  // Delivery: targets are commented out (recorded only), a route tree, inhibition, maintenance.
  for (const ReceiverOptions& r : c.receivers) {
    EXPECT_EQ(r.target.kind, ReceiverTarget::Kind::kNone) << r.name;
  }
  ASSERT_EQ(c.routes.size(), 2u);
  EXPECT_EQ(c.routes[0].receiver, "phone");
  EXPECT_TRUE(c.routes[0].continue_matching);
  EXPECT_EQ(c.routes[0].repeat_interval, minutes(15));
  EXPECT_THAT(*c.routes[1].mute_during, ElementsAre("retrain"));
  ASSERT_EQ(c.routes[1].routes.size(), 1u);
  EXPECT_EQ(c.routes[1].routes[0].receiver, "sms");
  ASSERT_EQ(c.inhibit_rules.size(), 2u);
  EXPECT_THAT(c.inhibit_rules[1].equal, ElementsAre("model"));
  EXPECT_THAT(c.maintenance, ElementsAre("upgrade"));

  ASSERT_EQ(c.schedules.size(), 4u);
  EXPECT_EQ(c.schedules[0].kind, Schedule::Kind::kWeekly);
  EXPECT_EQ(c.schedules[0].days, 0x60);
  EXPECT_EQ(c.schedules[0].scale, 1.2);
  EXPECT_EQ(c.schedules[1].kind, Schedule::Kind::kWindow);
  EXPECT_EQ(c.schedules[1].from, Local("Asia/Shanghai", 2025, 11, 10, 20, 0));
  EXPECT_EQ(c.schedules[1].to, Local("Asia/Shanghai", 2025, 11, 12, 2, 0));
  EXPECT_FALSE(c.schedules[1].scale.has_value());

  ASSERT_EQ(c.rules.size(), 6u);
  const AlertRule* risk = FindRule(c, "risk_control_p99");
  ASSERT_NE(risk, nullptr);
  EXPECT_EQ(risk->stat, Statistic::kP99);
  ASSERT_EQ(risk->matchers.size(), 3u);
  EXPECT_EQ(risk->matchers[0].name, "__name__");
  EXPECT_EQ(risk->matchers[1].name, "model");
  EXPECT_EQ(risk->matchers[1].value, "risk-control");
  ASSERT_EQ(risk->tiers.size(), 3u);
  EXPECT_EQ(risk->tiers[0].above, Threshold::Relative(0.10));
  EXPECT_EQ(risk->tiers[2].above, Threshold::Relative(0.50));
  EXPECT_EQ(risk->tiers[1].severity, "critical");
  EXPECT_THAT(risk->tiers[1].receivers, ElementsAre("sms", "phone"));
  EXPECT_THAT(risk->tiers[2].actions, ElementsAre("degrade"));
  EXPECT_EQ(risk->debounce.pre_alert_after, 3);
  EXPECT_EQ(risk->debounce.alert_after, seconds(30));
  EXPECT_EQ(risk->debounce.resolve_after, minutes(1));
  EXPECT_THAT(risk->labels, ElementsAre(std::pair<std::string, std::string>("team", "risk")));
  EXPECT_EQ(risk->annotations.size(), 2u);
  ASSERT_EQ(risk->schedules.size(), 1u);
  EXPECT_EQ(risk->schedules[0].schedule, "double11");
  EXPECT_THAT(
      risk->schedules[0].thresholds,
      ElementsAre(Threshold::Relative(0.20), Threshold::Relative(0.40), Threshold::Relative(0.60)));

  const AlertRule* fetch = FindRule(c, "recsys_feature_fetch");
  ASSERT_NE(fetch, nullptr);
  ASSERT_EQ(fetch->tiers.size(), 1u);
  EXPECT_EQ(fetch->tiers[0].above, Threshold::Absolute(0.050));
  EXPECT_THAT(fetch->tiers[0].receivers, ElementsAre("wecom", "sms"));
  EXPECT_EQ(fetch->matchers[1].op, LabelMatcher::Op::kRegex);
  EXPECT_EQ(fetch->schedules[0].scale, 1.5);

  const AlertRule* ttft = FindRule(c, "llm_ttft");
  ASSERT_NE(ttft, nullptr);
  EXPECT_EQ(ttft->tiers[0].above, Threshold::Absolute(0.500));
  EXPECT_EQ(ttft->debounce.pre_alert_after, 5);
  EXPECT_EQ(ttft->debounce.escalate_after, 5);  // follows pre_alert_after
  EXPECT_EQ(ttft->debounce.alert_after, minutes(1));
  EXPECT_EQ(ttft->debounce.resolve_after, minutes(1));  // from defaults

  const AlertRule* cv = FindRule(c, "image_classification_latency");
  ASSERT_NE(cv, nullptr);
  EXPECT_EQ(cv->tiers[0].above, Threshold::Absolute(0.300));
  EXPECT_EQ(cv->matchers.size(), 4u);

  const AlertRule* anomaly = FindRule(c, "latency_anomaly");
  ASSERT_NE(anomaly, nullptr);
  EXPECT_EQ(anomaly->stat, Statistic::kAnomalyScore);
  EXPECT_EQ(anomaly->tiers[0].above, Threshold::Absolute(0.8));
  EXPECT_EQ(anomaly->tiers[0].severity, "warning");
  EXPECT_EQ(anomaly->debounce.resolve_after, minutes(5));
  EXPECT_EQ(anomaly->debounce.deescalate_after, minutes(5));

  const AlertRule* errors = FindRule(c, "error_ratio");
  ASSERT_NE(errors, nullptr);
  EXPECT_EQ(errors->stat, Statistic::kErrorRatio);
  EXPECT_EQ(errors->tiers[1].above, Threshold::Absolute(0.10));

  // And an engine accepts it.
  CollectingAlertSink sink;
  EXPECT_TRUE(AlertEngine::Create(c, sink).ok());
}

TEST(AlertConfigTest, MinimalRuleGetsTheDefaults) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig("rules:\n  - name: p99\n");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->time_zone, "UTC");
  EXPECT_EQ(c->default_receiver, "default");
  ASSERT_EQ(c->rules.size(), 1u);
  const AlertRule& r = c->rules[0];
  EXPECT_TRUE(r.matchers.empty());
  EXPECT_EQ(r.stat, Statistic::kP99);
  ASSERT_EQ(r.tiers.size(), 3u);
  EXPECT_EQ(r.tiers[0].above, Threshold::Relative(0.10));
  EXPECT_EQ(r.tiers[0].severity, "warning");
  EXPECT_THAT(r.tiers[0].receivers, ElementsAre("wecom"));
  EXPECT_EQ(r.tiers[1].above, Threshold::Relative(0.30));
  EXPECT_THAT(r.tiers[1].receivers, ElementsAre("sms", "phone"));
  EXPECT_EQ(r.tiers[2].above, Threshold::Relative(0.50));
  EXPECT_EQ(r.tiers[2].severity, "emergency");
  EXPECT_THAT(r.tiers[2].actions, ElementsAre("degrade"));
  EXPECT_EQ(r.debounce.pre_alert_after, 3);
  EXPECT_EQ(r.debounce.alert_after, seconds(30));
  EXPECT_EQ(r.debounce.resolve_after, minutes(1));
  EXPECT_EQ(r.debounce.escalate_after, 3);
  EXPECT_EQ(r.debounce.deescalate_after, minutes(1));

  // An empty file is a valid configuration with no rules.
  absl::StatusOr<AlertConfig> empty = ParseAlertConfig("");
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_TRUE(empty->rules.empty());
}

TEST(AlertConfigTest, DefaultsSectionAppliesToEveryRule) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
defaults:
  debounce: {pre_alert_after: 5, resolve_after: 2m}
  tiers: ["+20%", "+40%"]
rules:
  - name: a
  - name: b
    debounce: {pre_alert_after: 2}
  - name: c
    tiers: default
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rules[0].debounce.pre_alert_after, 5);
  EXPECT_EQ(c->rules[0].debounce.resolve_after, minutes(2));
  EXPECT_EQ(c->rules[0].debounce.deescalate_after, minutes(2));
  EXPECT_EQ(c->rules[1].debounce.pre_alert_after, 2);
  EXPECT_EQ(c->rules[1].debounce.escalate_after, 2);
  EXPECT_EQ(c->rules[1].debounce.resolve_after, minutes(2));
  ASSERT_EQ(c->rules[0].tiers.size(), 2u);
  EXPECT_EQ(c->rules[0].tiers[1].above, Threshold::Relative(0.40));
  EXPECT_EQ(c->rules[0].tiers[1].severity, "critical");  // by position
  EXPECT_EQ(c->rules[2].tiers.size(), 2u);
}

TEST(AlertConfigTest, PresetsAreSelectableByName) {
  ASSERT_EQ(ScenarioPresets().size(), 3u);
  const ScenarioPreset* cv = FindScenarioPreset("image_classification");
  ASSERT_NE(cv, nullptr);
  EXPECT_EQ(cv->above, 0.300);
  EXPECT_EQ(FindScenarioPreset("recommender_feature_fetch")->above, 0.050);
  EXPECT_EQ(FindScenarioPreset("nlp_first_token")->above, 0.500);
  EXPECT_EQ(FindScenarioPreset("nope"), nullptr);

  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
rules:
  - name: ttft
    preset: nlp_first_token
)");
  ASSERT_TRUE(c.ok()) << c.status();
  ASSERT_EQ(c->rules[0].tiers.size(), 1u);
  EXPECT_EQ(c->rules[0].stat, Statistic::kP99);
  EXPECT_EQ(c->rules[0].tiers[0].above, Threshold::Absolute(0.5));
  EXPECT_EQ(c->rules[0].tiers[0].severity, "critical");
  EXPECT_TRUE(c->rules[0].tiers[0].receivers.empty());  // the default receiver gets it
}

TEST(AlertConfigTest, ThresholdForms) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
rules:
  - {name: a, tiers: ["10%", "+25.5%"]}
  - {name: b, above: 300ms}
  - {name: c, above: 0.25}
  - {name: d, stat: rate, above: 1500}
  - {name: e, stat: p99.9, above: 1.5s}
  - {name: f, stat: error_ratio, above: 0.05}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rules[0].tiers[0].above, Threshold::Relative(0.10));
  EXPECT_EQ(c->rules[0].tiers[1].above, Threshold::Relative(0.255));
  EXPECT_EQ(c->rules[1].tiers[0].above, Threshold::Absolute(0.3));
  EXPECT_EQ(c->rules[2].tiers[0].above, Threshold::Absolute(0.25));
  EXPECT_EQ(c->rules[3].tiers[0].above, Threshold::Absolute(1500));
  EXPECT_EQ(c->rules[4].stat, Statistic::kP999);
  EXPECT_EQ(c->rules[4].tiers[0].above, Threshold::Absolute(1.5));
  EXPECT_EQ(c->rules[5].tiers[0].above, Threshold::Absolute(0.05));
}

TEST(AlertConfigTest, SchedulesForms) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(
timezone: Asia/Shanghai
schedules:
  - {name: wd, days: weekdays, hours: "09:00-18:00"}
  - {name: night, hours: "22:00-06:00"}
  - {name: sun, days: [Sunday]}
  - {name: utc, from: "2025-11-11T00:00:00Z", to: "2025-11-11T09:00:00+08:00"}
  - {name: day, from: "2025-11-11", to: "2025-11-12"}
)");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->schedules[0].days, 0x1f);
  EXPECT_EQ(c->schedules[0].start_minute, 9 * 60);
  EXPECT_EQ(c->schedules[0].end_minute, 18 * 60);
  EXPECT_EQ(c->schedules[1].days, 0x7f);
  EXPECT_EQ(c->schedules[1].start_minute, 22 * 60);
  EXPECT_EQ(c->schedules[1].end_minute, 6 * 60);
  EXPECT_EQ(c->schedules[2].days, 0x40);
  EXPECT_EQ(c->schedules[3].from, Local("UTC", 2025, 11, 11, 0, 0));
  EXPECT_EQ(c->schedules[3].to, Local("UTC", 2025, 11, 11, 1, 0));
  EXPECT_EQ(c->schedules[4].from, Local("Asia/Shanghai", 2025, 11, 11, 0, 0));
}

TEST(AlertConfigTest, ErrorsNameFileLineAndField) {
  // The example from the issue.
  EXPECT_THAT(
      ErrorOf(R"(rules:
  - name: a
  - name: b
  - name: c
    tiers:
      - above: "+ten%"
)"),
      StartsWith(R"(rules.yaml:6: rules[2].tiers[0].above: expected a percentage like "+10%")"));
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    tierz: []\n"),
            "rules.yaml:3: rules[0].tierz: unknown field (expected one of: name, select, stat, "
            "preset, above, below, severity, receivers, actions, tiers, debounce, schedules, "
            "labels, "
            "annotations)");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    stat: p95\n"),
            "rules.yaml:3: rules[0].stat: unknown statistic \"p95\" (expected one of p50, p90, "
            "p99, p99.9, rate, error_ratio, anomaly_score)");
  EXPECT_EQ(ErrorOf("rules:\n  - select: x\n"), "rules.yaml:2: rules[0].name: required");
  EXPECT_EQ(ErrorOf("route:\n  group_wait: 30 seconds\n"),
            "rules.yaml:2: route.group_wait: expected a duration like \"30s\", \"5m\" or "
            "\"1h30m\", got \"30 seconds\"");
  EXPECT_EQ(ErrorOf("timezone: Mars/Olympus\n"),
            "rules.yaml:1: timezone: unknown time zone \"Mars/Olympus\" (expected an IANA name "
            "like \"Asia/Shanghai\")");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    preset: video\n"),
            "rules.yaml:3: rules[0].preset: unknown preset \"video\" (known: image_classification, "
            "recommender_feature_fetch, nlp_first_token)");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    preset: nlp_first_token\n    above: 1s\n"),
            "rules.yaml:4: rules[0].above: cannot be combined with preset \"nlp_first_token\"");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    stat: rate\n    above: \"+10%\"\n"),
            "rules.yaml:4: rules[0].above: a percentage is relative to the baseline P99 and "
            "needs a latency stat (p50, p90, p99, p99.9), not rate");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    stat: error_ratio\n"),
            "rules.yaml:3: rules[0].stat: error_ratio needs a threshold (above or tiers): the "
            "default tiers are relative to the baseline P99");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    debounce:\n      escalate_after: 0\n"),
            "rules.yaml:4: rules[0].debounce.escalate_after: must be at least 1");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    select: 'm{model}'\n"),
            "rules.yaml:3: rules[0].select: selector \"m{model}\" at offset 7: expected one of = "
            "!= =~ !~");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    name: b\n"),
            "rules.yaml:3: rules[0].name: appears twice");
  EXPECT_EQ(ErrorOf("schedules:\n  - name: s\n    days: [sat, caturday]\n"),
            "rules.yaml:3: schedules[0].days[1]: expected a day (mon, tue, wed, thu, fri, sat, "
            "sun) or one of weekdays, weekend, everyday, got \"caturday\"");
  EXPECT_EQ(ErrorOf("schedules:\n  - name: s\n    hours: 9-18\n"),
            "rules.yaml:3: schedules[0].hours: expected \"HH:MM-HH:MM\" like \"09:00-18:00\", "
            "got \"9-18\"");
  EXPECT_THAT(ErrorOf("schedules:\n  - name: s\n    from: soon\n    to: later\n"),
              StartsWith("rules.yaml:3: schedules[0].from: expected a local time like"));
  EXPECT_EQ(ErrorOf("schedules:\n  - name: s\n    days: weekend\n    from: 2025-11-11\n"),
            "rules.yaml:3: schedules[0].days: a schedule is either weekly (days, hours) or a "
            "window (from, to)");
  EXPECT_EQ(ErrorOf("- a\n"),
            "rules.yaml:1: expected a map with fields timezone, stale_after, route, "
            "receivers, defaults, schedules, maintenance, inhibit_rules, rules");
  // YAML syntax errors keep yaml-cpp's message and line.
  EXPECT_THAT(ErrorOf("rules:\n  - name: a\n    tiers: [\n"), StartsWith("rules.yaml:"));
}

TEST(AlertConfigTest, BelowRulesForDrops) {
  absl::StatusOr<AlertConfig> c = ParseAlertConfig(R"(rules:
  - {name: drop, stat: rate, below: 5}
  - name: tiers
    stat: rate
    tiers:
      - {below: 10, severity: warning}
      - {below: 1, severity: critical}
  - {name: up, stat: rate, above: 500}
)",
                                                   "rules.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  const AlertRule* drop = FindRule(*c, "drop");
  ASSERT_NE(drop, nullptr);
  EXPECT_TRUE(drop->below);
  ASSERT_EQ(drop->tiers.size(), 1u);
  EXPECT_EQ(drop->tiers[0].above.value, 5);
  EXPECT_TRUE(FindRule(*c, "tiers")->below);
  EXPECT_EQ(FindRule(*c, "tiers")->tiers[1].above.value, 1);
  EXPECT_FALSE(FindRule(*c, "up")->below);

  EXPECT_EQ(ErrorOf("rules:\n  - {name: a, stat: rate, above: 1, below: 2}\n"),
            "rules.yaml:2: rules[0].below: a rule has above or below, not both");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    stat: rate\n    tiers:\n      - {below: 1}\n"
                    "      - {below: 5}\n"),
            "rules.yaml:6: rules[0].tiers[1].below: must be below the previous tier's threshold (a "
            "below rule's tiers descend: each is a deeper drop)");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    stat: rate\n    tiers:\n      - {below: 5}\n"
                    "      - {above: 9}\n"),
            "rules.yaml:6: rules[0].tiers[1]: every tier of a rule breaches on the same side: all "
            "above or all below");
  EXPECT_EQ(ErrorOf("rules:\n  - {name: a, stat: rate, below: 5ms}\n"),
            "rules.yaml:2: rules[0].below: a duration needs a latency stat, not rate; give a "
            "plain number");
}

TEST(AlertConfigTest, ValidationErrorsPointAtTheLine) {
  // Found after parsing, by the same validator AlertEngine::Create() runs.
  EXPECT_EQ(ErrorOf(R"(rules:
  - name: a
    tiers:
      - above: "+30%"
      - above: "+10%"
)"),
            "rules.yaml:5: rules[0].tiers[1].above: must be above the previous tier's threshold");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    tiers: [\"+10%\", 0.5]\n"),
            "rules.yaml:3: rules[0].tiers[1]: mixes relative (\"+10%\") and absolute "
            "thresholds in one rule");
  EXPECT_THAT(ErrorOf("rules:\n  - name: a\n    select: '{model=~\"((\"}'\n"),
              StartsWith("rules.yaml:3: rules[0].select: matcher 0 (model): regex \"((\" does "
                         "not compile"));
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n  - name: a\n"),
            "rules.yaml:3: rules[1].name: rule \"a\" appears twice");
  EXPECT_EQ(ErrorOf("rules:\n  - name: 'bad name'\n"),
            "rules.yaml:2: rules[0].name: \"bad name\" is not a rule name (letters, digits, _ : . "
            "-)");
  EXPECT_EQ(ErrorOf(R"(schedules:
  - name: weekend
    days: weekend
rules:
  - name: a
    schedules:
      - name: weekends
        scale: 2
)"),
            "rules.yaml:7: rules[0].schedules[0].name: unknown schedule \"weekends\"");
  EXPECT_EQ(ErrorOf(R"(schedules:
  - {name: d11, from: "2025-11-11", to: "2025-11-12"}
rules:
  - name: a
    schedules:
      - name: d11
        thresholds: ["+20%", "+40%"]
)"),
            "rules.yaml:7: rules[0].schedules[0].thresholds: has 2 thresholds for 3 tiers");
  EXPECT_EQ(ErrorOf(R"(receivers:
  - name: wecom
  - name: sms
rules:
  - name: a
    above: 1s
    receivers: [wecom, smss]
)"),
            "rules.yaml:7: rules[0].receivers[1]: receiver \"smss\" is not declared under "
            "receivers");
  EXPECT_EQ(ErrorOf("schedules:\n  - {name: s, from: \"2025-11-12\", to: \"2025-11-11\"}\n"),
            "rules.yaml:2: schedules[0].to: must be after from");
  EXPECT_EQ(ErrorOf("route:\n  group_interval: 0\n"),
            "rules.yaml:2: route.group_interval: must be at least 1s");
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    labels: {severity: page}\n"),
            "rules.yaml:3: rules[0].labels.severity: is set by the engine");
  // A threshold written with `above` is reported under `above`, not the tier it became.
  EXPECT_EQ(ErrorOf("rules:\n  - name: a\n    above: \"-150%\"\n"),
            "rules.yaml:3: rules[0].above: must be above -100%");
}

TEST(AlertConfigTest, LoadReportsMissingFiles) {
  absl::StatusOr<AlertConfig> c = LoadAlertConfig("/nonexistent/rules.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("/nonexistent/rules.yaml"));
}

TEST(AlertConfigTest, ValidateProgrammaticConfig) {
  AlertConfig c;
  AlertRule r;
  r.name = "x";
  r.stat = Statistic::kRate;
  c.rules = {r};
  absl::Status s = ValidateAlertConfig(c);
  EXPECT_EQ(s.code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(s.message()), StartsWith("rules[0].tiers: stat rate needs a threshold"));
  c.rules[0].tiers = {{Threshold::Absolute(100), "warning", {}, {}}};
  EXPECT_TRUE(ValidateAlertConfig(c).ok());
  c.rules[0].debounce.pre_alert_after = 0;
  EXPECT_EQ(std::string(ValidateAlertConfig(c).message()),
            "rules[0].debounce.pre_alert_after: must be at least 1");

  CollectingAlertSink sink;
  auto engine = AlertEngine::Create(c, sink);
  EXPECT_EQ(engine.status().code(), absl::StatusCode::kInvalidArgument);
}

TEST(SelectorTest, ParsesPrometheusSelectors) {
  absl::StatusOr<std::vector<LabelMatcher>> m =
      ParseSelector(R"(metric_name{a="x", b!="y",c=~"z|w", d!~'q', e="say \"hi\""})");
  ASSERT_TRUE(m.ok()) << m.status();
  ASSERT_EQ(m->size(), 6u);
  EXPECT_EQ((*m)[0].name, "__name__");
  EXPECT_EQ((*m)[0].value, "metric_name");
  EXPECT_EQ((*m)[2].op, LabelMatcher::Op::kNotEqual);
  EXPECT_EQ((*m)[3].op, LabelMatcher::Op::kRegex);
  EXPECT_EQ((*m)[3].value, "z|w");
  EXPECT_EQ((*m)[4].op, LabelMatcher::Op::kNotRegex);
  EXPECT_EQ((*m)[5].value, "say \"hi\"");
  EXPECT_TRUE(ParseSelector("")->empty());
  EXPECT_TRUE(ParseSelector(" {} ")->empty());
  EXPECT_EQ(ParseSelector("{a=\"1\",}")->size(), 1u);
  EXPECT_EQ(ParseSelector(R"({a=~"x\.y"})")->at(0).value, R"(x\.y)");
  for (const char* bad : {"m{a}", "m{a=\"x\"", "m{1a=\"x\"}", "m x", "m{a=x}", "{a=\"x"}) {
    EXPECT_FALSE(ParseSelector(bad).ok()) << bad;
  }
}

TEST(ConfigTextTest, Durations) {
  using alert_internal::ParseDurationText;
  EXPECT_EQ(ParseDurationText("0"), Duration::zero());
  EXPECT_EQ(ParseDurationText("300ms"), std::chrono::milliseconds(300));
  EXPECT_EQ(ParseDurationText("30s"), seconds(30));
  EXPECT_EQ(ParseDurationText("1h30m"), minutes(90));
  EXPECT_EQ(ParseDurationText("1.5s"), std::chrono::milliseconds(1500));
  EXPECT_EQ(ParseDurationText("2d"), std::chrono::hours(48));
  EXPECT_EQ(ParseDurationText("1w"), std::chrono::hours(168));
  EXPECT_EQ(ParseDurationText("250us"), std::chrono::microseconds(250));
  for (const char* bad : {"", "30", "s", "1x", "-1s", "1 s", "1e3s"}) {
    EXPECT_FALSE(ParseDurationText(bad).has_value()) << bad;
  }
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regressions (review): intervals of a nanosecond looped the grouper or sent millions of
// notifications; "1a:00" parsed as 01:00.
TEST(AlertConfigRegressionTest, IntervalFloorsAndStrictClockTimes) {
  const auto error = [](std::string_view yaml) {
    absl::StatusOr<AlertConfig> c = ParseAlertConfig(yaml, "rules.yaml");
    return c.ok() ? std::string("ok") : std::string(c.status().message());
  };
  EXPECT_NE(error("route:\n  group_interval: 1ms\n").find("must be at least 1s"),
            std::string::npos);
  EXPECT_NE(error("route:\n  group_interval: 10s\n  repeat_interval: 1s\n")
                .find("repeat_interval: must be at least group_interval"),
            std::string::npos);
  EXPECT_NE(error("schedules:\n  - {name: w, days: weekend, hours: \"1a:00-2b:00\"}\n")
                .find("expected \"HH:MM-HH:MM\""),
            std::string::npos);
  EXPECT_EQ(error("schedules:\n  - {name: w, days: weekend, hours: \"01:00-02:00\"}\n"), "ok");
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): a baseline that overshot below zero turned an improvement into an
// emergency. Relative tiers now need a positive baseline.
TEST(AlertEngineRegressionTest, NonPositiveBaselineNeverBreachesRelativeTiers) {
  absl::StatusOr<AlertConfig> config = ParseAlertConfig("rules:\n  - name: tiers\n", "r.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  CollectingAlertSink sink;
  auto engine = AlertEngine::Create(*config, sink);
  ASSERT_TRUE(engine.ok());
  const Labels labels = {{"model", "m"}};
  for (int i = 0; i < 10; ++i) {
    Observation o;
    o.time = FakeClock::DefaultStart() + std::chrono::seconds(10 * i);
    o.metric = "tailguard_request_duration_seconds";
    o.labels = labels;
    o.p99 = 0.001;
    o.baseline_p99 = i % 2 == 0 ? -0.002 : 0.0;
    (*engine)->Observe(o);
  }
  EXPECT_TRUE(sink.events.empty());
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): an alert whose series stopped reporting showed its last value forever.
// Regression (issue 16): it then resolved as if it had recovered. Now it goes to no data and
// holds until data shows the recovery.
TEST(AlertEngineRegressionTest, AStaleSeriesGoesToNoDataAndDoesNotResolve) {
  absl::StatusOr<AlertConfig> config =
      ParseAlertConfig("stale_after: 5m\nrules:\n  - {name: slow, above: 200ms}\n", "r.yaml");
  ASSERT_TRUE(config.ok()) << config.status();
  CollectingAlertSink sink;
  auto engine = AlertEngine::Create(*config, sink);
  ASSERT_TRUE(engine.ok());
  const Labels labels = {{"model", "m"}};
  const WallTime t0 = FakeClock::DefaultStart();
  const auto observe = [&](int s, double p99) {
    Observation o;
    o.time = t0 + std::chrono::seconds(s);
    o.metric = "tailguard_request_duration_seconds";
    o.labels = labels;
    o.p99 = p99;
    (*engine)->Observe(o);
  };
  for (int s = 0; s <= 60; s += 10) observe(s, 0.5);
  ASSERT_EQ((*engine)->ActiveAlerts().size(), 1u);
  ASSERT_EQ((*engine)->ActiveAlerts()[0].state, AlertState::kAlert);
  EXPECT_FALSE((*engine)->ActiveAlerts()[0].no_data);
  // The series goes silent. Within stale_after nothing changes; after it, the alert is in no
  // data (one event), and stays so.
  for (int m = 1; m <= 5; ++m) (*engine)->Advance(t0 + std::chrono::minutes(m));
  EXPECT_FALSE((*engine)->ActiveAlerts()[0].no_data);
  for (int m = 6; m <= 60; ++m) (*engine)->Advance(t0 + std::chrono::minutes(m));
  ASSERT_EQ((*engine)->ActiveAlerts().size(), 1u);
  EXPECT_EQ((*engine)->ActiveAlerts()[0].state, AlertState::kAlert);
  EXPECT_TRUE((*engine)->ActiveAlerts()[0].no_data);
  ASSERT_FALSE(sink.events.empty());
  EXPECT_EQ(sink.events.back().kind, AlertEventKind::kNoData);
  EXPECT_GE(sink.events.back().time, t0 + std::chrono::minutes(6));
  EXPECT_LE(sink.events.back().time, t0 + std::chrono::minutes(8));
  size_t no_data_events = 0;
  for (const AlertEvent& e : sink.events) no_data_events += e.kind == AlertEventKind::kNoData;
  EXPECT_EQ(no_data_events, 1u);
  // Reporting again, clean: resolved a minute (resolve_after) after the data came back.
  for (int s = 3700; s < 3760; s += 10) observe(s, 0.1);
  EXPECT_EQ((*engine)->ActiveAlerts().size(), 1u);
  observe(3760, 0.1);
  EXPECT_TRUE((*engine)->ActiveAlerts().empty());
  EXPECT_EQ(sink.events.back().kind, AlertEventKind::kResolve);
}

}  // namespace
}  // namespace tailguard
