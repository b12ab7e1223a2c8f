// Names of the alert types, the scenario presets and the default tiers.
#include <array>

#include "tailguard/alert.h"

namespace tailguard {

std::string_view StatisticName(Statistic s) {
  switch (s) {
    case Statistic::kP50:
      return "p50";
    case Statistic::kP90:
      return "p90";
    case Statistic::kP99:
      return "p99";
    case Statistic::kP999:
      return "p99.9";
    case Statistic::kRate:
      return "rate";
    case Statistic::kErrorRatio:
      return "error_ratio";
    case Statistic::kAnomalyScore:
      return "anomaly_score";
  }
  return "?";
}

std::optional<Statistic> ParseStatistic(std::string_view name) {
  for (Statistic s : {Statistic::kP50, Statistic::kP90, Statistic::kP99, Statistic::kP999,
                      Statistic::kRate, Statistic::kErrorRatio, Statistic::kAnomalyScore}) {
    if (name == StatisticName(s)) return s;
  }
  if (name == "p999") return Statistic::kP999;
  return std::nullopt;
}

bool IsLatencyStatistic(Statistic s) {
  return s == Statistic::kP50 || s == Statistic::kP90 || s == Statistic::kP99 ||
         s == Statistic::kP999;
}

double Observation::Get(Statistic s) const {
  switch (s) {
    case Statistic::kP50:
      return p50;
    case Statistic::kP90:
      return p90;
    case Statistic::kP99:
      return p99;
    case Statistic::kP999:
      return p999;
    case Statistic::kRate:
      return rate;
    case Statistic::kErrorRatio:
      return error_ratio;
    case Statistic::kAnomalyScore:
      return anomaly_score;
  }
  return kMissing;
}

std::string_view AlertStateName(AlertState s) {
  switch (s) {
    case AlertState::kNormal:
      return "normal";
    case AlertState::kPreAlert:
      return "pre_alert";
    case AlertState::kAlert:
      return "alert";
  }
  return "?";
}

std::string_view AlertEventKindName(AlertEventKind k) {
  switch (k) {
    case AlertEventKind::kPreAlert:
      return "pre_alert";
    case AlertEventKind::kCancel:
      return "cancel";
    case AlertEventKind::kFire:
      return "fire";
    case AlertEventKind::kResolve:
      return "resolve";
    case AlertEventKind::kEscalate:
      return "escalate";
    case AlertEventKind::kDeescalate:
      return "deescalate";
    case AlertEventKind::kNoData:
      return "no_data";
  }
  return "?";
}

std::string_view NotifyStatusName(NotifyStatus s) {
  return s == NotifyStatus::kFiring ? "firing" : "resolved";
}

std::vector<AlertTier> DefaultAlertTiers() {
  return {
      {Threshold::Relative(0.10), "warning", {"wecom"}, {}},
      {Threshold::Relative(0.30), "critical", {"sms", "phone"}, {}},
      {Threshold::Relative(0.50), "emergency", {}, {"degrade"}},
  };
}

std::vector<InhibitRule> DefaultInhibitRules() {
  InhibitRule r;
  r.source_matchers = {{"severity", LabelMatcher::Op::kEqual, "emergency"}};
  r.target_matchers = {{"severity", LabelMatcher::Op::kEqual, "warning"}};
  r.equal = {"__series__"};
  return {r};
}

namespace {
// From the field reports: thresholds past which a service needs intervention.
constexpr std::array<ScenarioPreset, 3> kPresets = {{
    {"image_classification", "image classification: P99 per frame above 300 ms", Statistic::kP99,
     0.300},
    {"recommender_feature_fetch", "recommender feature fetch: P99 above 50 ms", Statistic::kP99,
     0.050},
    {"nlp_first_token", "NLP / LLM time to first token: P99 above 500 ms", Statistic::kP99, 0.500},
}};
}  // namespace

std::span<const ScenarioPreset> ScenarioPresets() { return kPresets; }

const ScenarioPreset* FindScenarioPreset(std::string_view name) {
  for (const ScenarioPreset& p : kPresets) {
    if (p.name == name) return &p;
  }
  return nullptr;
}

}  // namespace tailguard
