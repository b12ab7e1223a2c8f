// Validation of alert configurations, shared by the YAML parser and AlertEngine::Create().
#include <charconv>
#include <cmath>

#include "absl/container/flat_hash_set.h"
#include "absl/time/time.h"
#include "alert/config_internal.h"
#include "alert/route.h"
#include "alert/selector.h"
#include "common/strings.h"

namespace tailguard {
namespace alert_internal {
namespace {

std::optional<double> ParseNumber(std::string_view text) {
  double v = 0;
  const char* end = text.data() + text.size();
  auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (ec != std::errc() || ptr != end || !std::isfinite(v)) return std::nullopt;
  return v;
}

bool IsLabelName(std::string_view s) {
  if (s.empty()) return false;
  for (size_t i = 0; i < s.size(); ++i) {
    const char c = s[i];
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_' ||
                    (i > 0 && c >= '0' && c <= '9');
    if (!ok) return false;
  }
  return true;
}

bool IsRuleName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '_' || c == ':' || c == '.' || c == '-';
    if (!ok) return false;
  }
  return true;
}

std::string At(std::string_view path, size_t i) { return Cat(path, '[', i, ']'); }

std::optional<ConfigIssue> CheckRoute(const RouteOptions& r, const std::string& path) {
  for (size_t i = 0; i < r.group_by.size(); ++i) {
    const std::string& name = r.group_by[i];
    if (name == "...") {
      if (r.group_by.size() != 1) {
        return ConfigIssue{At(path + ".group_by", i), "\"...\" must be the only entry"};
      }
    } else if (!IsLabelName(name)) {
      return ConfigIssue{At(path + ".group_by", i), Cat("\"", name, "\" is not a label name")};
    }
  }
  if (r.group_wait < Duration::zero()) {
    return ConfigIssue{path + ".group_wait", "must not be negative"};
  }
  // Floors keep a typo (1ns, 1ms) from looping the grouper or flooding a receiver.
  if (r.group_interval < std::chrono::seconds(1)) {
    return ConfigIssue{path + ".group_interval", "must be at least 1s"};
  }
  if (r.repeat_interval < r.group_interval) {
    return ConfigIssue{path + ".repeat_interval", "must be at least group_interval"};
  }
  return std::nullopt;
}

// Checks matchers as found at `path` (a list of strings in YAML).
std::optional<ConfigIssue> CheckMatchers(const std::vector<LabelMatcher>& matchers,
                                         const std::string& path) {
  for (const LabelMatcher& m : matchers) {
    if (m.name.empty()) return ConfigIssue{path, "empty label name"};
  }
  if (absl::StatusOr<SeriesSelector> s = SeriesSelector::Compile(matchers); !s.ok()) {
    return ConfigIssue{path, std::string(s.status().message())};
  }
  return std::nullopt;
}

bool IsHeaderName(std::string_view s) {
  if (s.empty()) return false;
  for (char c : s) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
    if (!ok) return false;
  }
  return true;
}

// Checks where a receiver delivers. Never quotes a URL or a header value: they may hold secrets.
std::optional<ConfigIssue> CheckTarget(const ReceiverTarget& t, const std::string& path) {
  if (!(t.timeout > Duration::zero())) return ConfigIssue{path + ".timeout", "must be positive"};
  if (!std::isfinite(t.rate_per_minute) || t.rate_per_minute < 0) {
    return ConfigIssue{path + ".rate_limit", "must be a rate of at least 0/min (0: unlimited)"};
  }
  if (t.kind == ReceiverTarget::Kind::kNone) return std::nullopt;
  const std::string kind = Cat(path, '.', TargetKindField(t.kind));
  const std::string_view url = t.url;
  const size_t scheme = url.starts_with("https://") ? 8 : url.starts_with("http://") ? 7 : 0;
  if (scheme == 0) return ConfigIssue{kind + ".url", "must start with http:// or https://"};
  if (url.size() == scheme || url[scheme] == '/') return ConfigIssue{kind + ".url", "has no host"};
  for (char c : url) {
    if (static_cast<unsigned char>(c) <= ' ' || c == 0x7f) {
      return ConfigIssue{kind + ".url", "must not contain spaces or control characters"};
    }
  }
  for (const auto& [name, value] : t.headers) {
    const std::string at = Cat(kind, ".headers.", name);
    if (!IsHeaderName(name)) return ConfigIssue{at, "is not a header name"};
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return ConfigIssue{at, "must not contain a line break"};
    }
  }
  if (t.kind == ReceiverTarget::Kind::kTemplate) {
    if (t.method != "POST" && t.method != "PUT" && t.method != "GET") {
      return ConfigIssue{kind + ".method",
                         Cat("expected POST, PUT or GET, got \"", t.method, "\"")};
    }
    if (t.content_type.empty()) return ConfigIssue{kind + ".content_type", "must not be empty"};
  }
  for (size_t j = 0; j < t.mentioned_mobile_list.size(); ++j) {
    if (t.mentioned_mobile_list[j].empty()) {
      return ConfigIssue{At(kind + ".mentioned_mobile_list", j), "empty entry"};
    }
  }
  return std::nullopt;
}

std::optional<ConfigIssue> CheckScheduleNames(const AlertConfig& c,
                                              const std::vector<std::string>& names,
                                              const std::string& path) {
  for (size_t j = 0; j < names.size(); ++j) {
    bool known = false;
    for (const Schedule& s : c.schedules) known |= s.name == names[j];
    if (!known) return ConfigIssue{At(path, j), Cat("unknown schedule \"", names[j], "\"")};
  }
  return std::nullopt;
}

std::optional<ConfigIssue> CheckRoutes(const AlertConfig& c,
                                       const absl::flat_hash_set<std::string>& declared) {
  std::optional<ConfigIssue> issue;
  ForEachRouteNode(c, [&](const RouteNode& node, const std::string& path, int depth,
                          const EffectiveRoute& effective) {
    if (issue) return;
    if (depth > kMaxRouteDepth) {
      issue = ConfigIssue{path, Cat("routes nest deeper than ", kMaxRouteDepth, " levels")};
      return;
    }
    if ((issue = CheckMatchers(node.matchers, path + ".matchers"))) return;
    if (!node.receiver.empty() && !declared.empty() && !declared.contains(node.receiver)) {
      issue = ConfigIssue{path + ".receiver",
                          Cat("receiver \"", node.receiver, "\" is not declared under receivers")};
      return;
    }
    if ((issue = CheckRoute(effective.options, path))) return;
    if (node.mute_during) issue = CheckScheduleNames(c, *node.mute_during, path + ".mute_during");
  });
  return issue;
}

std::optional<ConfigIssue> CheckInhibitRules(const std::vector<InhibitRule>& rules) {
  if (rules.size() > Inhibitor::kMaxRules) {
    return ConfigIssue{"inhibit_rules", Cat("at most ", Inhibitor::kMaxRules, " rules")};
  }
  for (size_t i = 0; i < rules.size(); ++i) {
    const InhibitRule& r = rules[i];
    const std::string path = At("inhibit_rules", i);
    if (r.source_matchers.empty())
      return ConfigIssue{path + ".source_matchers", "must not be empty"};
    if (r.target_matchers.empty())
      return ConfigIssue{path + ".target_matchers", "must not be empty"};
    if (auto issue = CheckMatchers(r.source_matchers, path + ".source_matchers")) return issue;
    if (auto issue = CheckMatchers(r.target_matchers, path + ".target_matchers")) return issue;
    for (size_t j = 0; j < r.equal.size(); ++j) {
      if (!IsLabelName(r.equal[j])) {
        return ConfigIssue{At(path + ".equal", j), Cat("\"", r.equal[j], "\" is not a label name")};
      }
    }
  }
  return std::nullopt;
}

// Checks a list of thresholds, one per tier, as found at `path_of(k)`.
template <typename PathOf>
std::optional<ConfigIssue> CheckThresholds(std::span<const Threshold> thresholds, Statistic stat,
                                           bool below, PathOf path_of) {
  for (size_t k = 0; k < thresholds.size(); ++k) {
    const Threshold& t = thresholds[k];
    if (!std::isfinite(t.value)) return ConfigIssue{path_of(k), "must be a finite number"};
    if (t.kind == Threshold::Kind::kRelative) {
      if (!IsLatencyStatistic(stat)) {
        return ConfigIssue{path_of(k),
                           Cat("a percentage is relative to the baseline P99 and needs a latency "
                               "stat (p50, p90, p99, p99.9), not ",
                               StatisticName(stat))};
      }
      if (t.value <= -1) return ConfigIssue{path_of(k), "must be above -100%"};
    }
    if (k > 0) {
      if (t.kind != thresholds[0].kind) {
        return ConfigIssue{path_of(k),
                           "mixes relative (\"+10%\") and absolute thresholds in one rule"};
      }
      if (below && !(t.value < thresholds[k - 1].value)) {
        return ConfigIssue{path_of(k),
                           "must be below the previous tier's threshold (a below rule's tiers "
                           "descend: each is a deeper drop)"};
      }
      if (!below && !(t.value > thresholds[k - 1].value)) {
        return ConfigIssue{path_of(k), "must be above the previous tier's threshold"};
      }
    }
  }
  return std::nullopt;
}

std::optional<ConfigIssue> CheckRule(const AlertConfig& c, const AlertRule& r,
                                     const std::string& path,
                                     const absl::flat_hash_set<std::string>& declared) {
  if (!IsRuleName(r.name)) {
    return ConfigIssue{path + ".name",
                       Cat("\"", r.name, "\" is not a rule name (letters, digits, _ : . -)")};
  }
  for (size_t i = 0; i < r.matchers.size(); ++i) {
    if (r.matchers[i].name.empty()) return ConfigIssue{path + ".select", "empty label name"};
  }
  if (absl::StatusOr<SeriesSelector> s = SeriesSelector::Compile(r.matchers); !s.ok()) {
    return ConfigIssue{path + ".select", std::string(s.status().message())};
  }
  const std::string tiers_path = path + ".tiers";
  if (r.tiers.empty()) {
    if (!IsLatencyStatistic(r.stat)) {
      return ConfigIssue{tiers_path,
                         Cat("stat ", StatisticName(r.stat),
                             " needs a threshold (above or tiers): the default tiers are "
                             "relative to the baseline P99")};
    }
  } else if (r.tiers.size() > static_cast<size_t>(kMaxAlertTiers)) {
    return ConfigIssue{tiers_path, Cat("at most ", kMaxAlertTiers, " tiers")};
  }
  std::vector<Threshold> base;
  for (const AlertTier& t : r.tiers) base.push_back(t.above);
  if (r.below && r.tiers.empty()) {
    return ConfigIssue{tiers_path,
                       "a below rule needs its own thresholds (below or tiers): the default tiers "
                       "are above the baseline"};
  }
  const char* side = r.below ? ".below" : ".above";
  if (auto issue = CheckThresholds(base, r.stat, r.below,
                                   [&](size_t k) { return Cat(At(tiers_path, k), side); })) {
    return issue;
  }
  for (size_t k = 0; k < r.tiers.size(); ++k) {
    const AlertTier& t = r.tiers[k];
    const std::string tier_path = At(tiers_path, k);
    if (t.severity.empty()) return ConfigIssue{tier_path + ".severity", "must not be empty"};
    for (size_t j = 0; j < t.receivers.size(); ++j) {
      const std::string& name = t.receivers[j];
      if (name.empty()) return ConfigIssue{At(tier_path + ".receivers", j), "empty name"};
      if (!declared.empty() && !declared.contains(name)) {
        return ConfigIssue{At(tier_path + ".receivers", j),
                           Cat("receiver \"", name, "\" is not declared under receivers")};
      }
    }
    for (size_t j = 0; j < t.actions.size(); ++j) {
      if (t.actions[j].empty()) return ConfigIssue{At(tier_path + ".actions", j), "empty name"};
    }
  }
  const DebounceOptions& d = r.debounce;
  const std::string dp = path + ".debounce";
  if (d.pre_alert_after < 1) return ConfigIssue{dp + ".pre_alert_after", "must be at least 1"};
  if (d.escalate_after < 1) return ConfigIssue{dp + ".escalate_after", "must be at least 1"};
  if (d.alert_after < Duration::zero()) {
    return ConfigIssue{dp + ".alert_after", "must not be negative"};
  }
  if (d.resolve_after < Duration::zero()) {
    return ConfigIssue{dp + ".resolve_after", "must not be negative"};
  }
  if (d.deescalate_after < Duration::zero()) {
    return ConfigIssue{dp + ".deescalate_after", "must not be negative"};
  }
  const size_t tier_count = r.tiers.empty() ? DefaultAlertTiers().size() : r.tiers.size();
  absl::flat_hash_set<std::string> overridden;
  for (size_t i = 0; i < r.schedules.size(); ++i) {
    const ScheduleOverride& o = r.schedules[i];
    const std::string op = At(path + ".schedules", i);
    bool known = false;
    for (const Schedule& s : c.schedules) known |= s.name == o.schedule;
    if (!known) {
      return ConfigIssue{op + ".name", Cat("unknown schedule \"", o.schedule, "\"")};
    }
    if (!overridden.insert(o.schedule).second) {
      return ConfigIssue{op + ".name", Cat("schedule \"", o.schedule, "\" appears twice")};
    }
    if (o.thresholds.empty()) {
      if (!(o.scale > 0) || !std::isfinite(o.scale)) {
        return ConfigIssue{op + ".scale", "must be a positive number"};
      }
      continue;
    }
    if (o.thresholds.size() != tier_count) {
      return ConfigIssue{op + ".thresholds", Cat("has ", o.thresholds.size(), " thresholds for ",
                                                 tier_count, " tiers")};
    }
    if (auto issue = CheckThresholds(o.thresholds, r.stat, r.below,
                                     [&](size_t k) { return At(op + ".thresholds", k); })) {
      return issue;
    }
  }
  for (const auto* set : {&r.labels, &r.annotations}) {
    const char* what = set == &r.labels ? ".labels." : ".annotations.";
    for (const auto& [name, value] : *set) {
      if (!IsLabelName(name)) {
        return ConfigIssue{path + what + name, Cat("\"", name, "\" is not a label name")};
      }
      if (set == &r.labels && (name == "alertname" || name == "severity")) {
        return ConfigIssue{path + what + name, "is set by the engine"};
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::string_view TargetKindField(ReceiverTarget::Kind kind) {
  switch (kind) {
    case ReceiverTarget::Kind::kNone:
      return "";
    case ReceiverTarget::Kind::kWeCom:
      return "wecom";
    case ReceiverTarget::Kind::kWebhook:
      return "webhook";
    case ReceiverTarget::Kind::kTemplate:
      return "template";
    case ReceiverTarget::Kind::kAlertmanager:
      return "alertmanager";
  }
  return "";
}

std::optional<ParsedThreshold> ParseThresholdText(std::string_view text) {
  while (!text.empty() && text.front() == ' ') text.remove_prefix(1);
  while (!text.empty() && text.back() == ' ') text.remove_suffix(1);
  if (text.empty()) return std::nullopt;
  ParsedThreshold out;
  if (text.back() == '%') {
    text.remove_suffix(1);
    if (!text.empty() && text.front() == '+') text.remove_prefix(1);
    std::optional<double> pct = ParseNumber(text);
    if (!pct) return std::nullopt;
    out.threshold = Threshold::Relative(*pct / 100);
    out.is_percentage = true;
    return out;
  }
  if (std::optional<double> n = ParseNumber(text)) {
    out.threshold = Threshold::Absolute(*n);
    return out;
  }
  if (std::optional<Duration> d = ParseDurationText(text)) {
    out.threshold = Threshold::Absolute(std::chrono::duration<double>(*d).count());
    out.is_duration = true;
    return out;
  }
  return std::nullopt;
}

void NormalizeConfig(AlertConfig& config) {
  for (AlertRule& r : config.rules) {
    if (r.tiers.empty() && IsLatencyStatistic(r.stat)) r.tiers = DefaultAlertTiers();
  }
}

std::optional<ConfigIssue> FindConfigIssue(const AlertConfig& c) {
  absl::TimeZone zone;
  if (!absl::LoadTimeZone(c.time_zone, &zone)) {
    return ConfigIssue{"timezone", Cat("unknown time zone \"", c.time_zone,
                                       "\" (expected an IANA name like \"Asia/Shanghai\")")};
  }
  if (auto issue = CheckRoute(c.route, "route")) return issue;
  absl::flat_hash_set<std::string> declared;
  for (size_t i = 0; i < c.receivers.size(); ++i) {
    const std::string path = At("receivers", i);
    if (c.receivers[i].name.empty()) return ConfigIssue{path + ".name", "must not be empty"};
    if (!declared.insert(c.receivers[i].name).second) {
      return ConfigIssue{path + ".name",
                         Cat("receiver \"", c.receivers[i].name, "\" appears twice")};
    }
    if (auto issue = CheckRoute(c.receivers[i].route, path)) return issue;
    if (auto issue = CheckTarget(c.receivers[i].target, path)) return issue;
  }
  if (c.schedules.size() > static_cast<size_t>(kMaxSchedules)) {
    return ConfigIssue{"schedules", Cat("at most ", kMaxSchedules, " schedules")};
  }
  absl::flat_hash_set<std::string> schedule_names;
  for (size_t i = 0; i < c.schedules.size(); ++i) {
    const Schedule& s = c.schedules[i];
    const std::string path = At("schedules", i);
    if (s.name.empty()) return ConfigIssue{path + ".name", "must not be empty"};
    if (!schedule_names.insert(s.name).second) {
      return ConfigIssue{path + ".name", Cat("schedule \"", s.name, "\" appears twice")};
    }
    if (s.kind == Schedule::Kind::kWeekly) {
      if ((s.days & 0x7f) == 0) return ConfigIssue{path + ".days", "no day selected"};
      if (s.start_minute < 0 || s.start_minute >= 24 * 60 || s.end_minute < 0 ||
          s.end_minute > 24 * 60 || s.start_minute == s.end_minute) {
        return ConfigIssue{path + ".hours", "expected \"HH:MM-HH:MM\", a non-empty period"};
      }
    } else if (!(s.from < s.to)) {
      return ConfigIssue{path + ".to", "must be after from"};
    }
    if (s.scale && (!(*s.scale > 0) || !std::isfinite(*s.scale))) {
      return ConfigIssue{path + ".scale", "must be a positive number"};
    }
  }
  if (auto issue = CheckRoutes(c, declared)) return issue;
  if (auto issue = CheckScheduleNames(c, c.maintenance, "maintenance")) return issue;
  if (auto issue = CheckInhibitRules(c.inhibit_rules)) return issue;
  absl::flat_hash_set<std::string> rule_names;
  for (size_t i = 0; i < c.rules.size(); ++i) {
    const std::string path = At("rules", i);
    if (!rule_names.insert(c.rules[i].name).second) {
      return ConfigIssue{path + ".name", Cat("rule \"", c.rules[i].name, "\" appears twice")};
    }
    if (auto issue = CheckRule(c, c.rules[i], path, declared)) return issue;
  }
  // The default receiver matters when a rule's lowest tier names no receiver.
  bool default_used = false;
  for (const AlertRule& r : c.rules)
    default_used |= !r.tiers.empty() && r.tiers[0].receivers.empty();
  if (default_used && !declared.empty() && !c.default_receiver.empty() &&
      !declared.contains(c.default_receiver)) {
    return ConfigIssue{"route.receiver", Cat("receiver \"", c.default_receiver,
                                             "\" is not declared under receivers")};
  }
  return std::nullopt;
}

}  // namespace alert_internal

absl::Status ValidateAlertConfig(const AlertConfig& config) {
  if (config.stale_after < Duration::zero()) {
    return absl::InvalidArgumentError("stale_after: must not be negative (0 disables it)");
  }
  if (auto issue = alert_internal::FindConfigIssue(config)) {
    return absl::InvalidArgumentError(Cat(issue->path, ": ", issue->message));
  }
  return absl::OkStatus();
}

}  // namespace tailguard
