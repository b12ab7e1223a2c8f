// Configuration helpers shared by the YAML parser, the validator and the engine.
#ifndef TAILGUARD_ALERT_CONFIG_INTERNAL_H_
#define TAILGUARD_ALERT_CONFIG_INTERNAL_H_

#include <optional>
#include <string>
#include <string_view>

#include "common/duration.h"
#include "tailguard/alert.h"

namespace tailguard::alert_internal {

// The first problem found in a configuration: a field path like "rules[2].tiers[0].above" and
// what is wrong with it.
struct ConfigIssue {
  std::string path;
  std::string message;
};

// Checks everything ValidateAlertConfig() documents; nullopt when the configuration is good.
std::optional<ConfigIssue> FindConfigIssue(const AlertConfig& config);

// Fills what the engine needs filled: empty tiers become DefaultAlertTiers().
void NormalizeConfig(AlertConfig& config);

// The YAML field of a receiver target kind: "wecom", "webhook", "template", "alertmanager"; ""
// for kNone.
std::string_view TargetKindField(ReceiverTarget::Kind kind);

// Durations are parsed by tailguard::ParseDurationText (common/duration.h).
using ::tailguard::ParseDurationText;

// A threshold as written in a rule file.
struct ParsedThreshold {
  Threshold threshold;
  bool is_percentage = false;  // "+10%": relative
  bool is_duration = false;    // "300ms": absolute seconds
};
// "+10%" / "10%" (relative), "300ms" (absolute, in seconds) or a number (absolute).
std::optional<ParsedThreshold> ParseThresholdText(std::string_view text);

}  // namespace tailguard::alert_internal

#endif  // TAILGUARD_ALERT_CONFIG_INTERNAL_H_
