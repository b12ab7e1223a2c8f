// The rule file parser: YAML to AlertConfig, every error as "file:line: field.path: problem".
#include <yaml-cpp/yaml.h>

#include <fstream>
#include <sstream>

#include "absl/time/time.h"
#include "alert/config_internal.h"
#include "alert/schedule.h"
#include "common/strings.h"
#include "common/yaml_fields.h"

namespace tailguard {
namespace {

using alert_internal::ConfigIssue;

using Failure = YamlFailure;
using Item = YamlItem;
using MapItem = YamlMap;

// Debounce fields as written; unset ones come from `defaults:` and then the built-ins.
struct DebounceSpec {
  std::optional<int> pre_alert_after;
  std::optional<Duration> alert_after;
  std::optional<Duration> resolve_after;
  std::optional<int> escalate_after;
  std::optional<Duration> deescalate_after;
};

DebounceOptions Merge(const DebounceSpec& rule, const DebounceSpec& defaults) {
  DebounceOptions o;
  o.pre_alert_after = rule.pre_alert_after.value_or(defaults.pre_alert_after.value_or(3));
  o.alert_after =
      rule.alert_after.value_or(defaults.alert_after.value_or(std::chrono::seconds(30)));
  o.resolve_after =
      rule.resolve_after.value_or(defaults.resolve_after.value_or(std::chrono::minutes(1)));
  o.escalate_after =
      rule.escalate_after.value_or(defaults.escalate_after.value_or(o.pre_alert_after));
  o.deescalate_after =
      rule.deescalate_after.value_or(defaults.deescalate_after.value_or(o.resolve_after));
  return o;
}

std::string DefaultSeverity(size_t tier) {
  static const char* const kNames[] = {"warning", "critical", "emergency"};
  return kNames[std::min<size_t>(tier, 2)];
}

class Parser : public YamlWalker {
 public:
  AlertConfig Parse(const YAML::Node& root);

  // Where `issue` (from the validator) is in the file: the path as the user wrote it, and the
  // line of that field or of the nearest enclosing one the parser saw.
  Failure Locate(const ConfigIssue& issue) const {
    std::string path = issue.path;
    for (const auto& [from, to] : aliases_) {
      if (path.starts_with(from) &&
          (path.size() == from.size() || path[from.size()] == '.' || path[from.size()] == '[')) {
        path = to + path.substr(from.size());
        break;
      }
    }
    return {MarkOf(path), path, issue.message};
  }

 private:
  // Paths the validator reports under `from` were written under `to`, e.g. the one tier made
  // from a rule's `above` field.
  void Alias(std::string from, std::string to) {
    aliases_.emplace_back(std::move(from), std::move(to));
  }

  static double Number(const Item& at) {
    const std::string s = Str(at);
    std::optional<alert_internal::ParsedThreshold> t = alert_internal::ParseThresholdText(s);
    if (!t || t->is_percentage || t->is_duration) {
      Fail(at, Cat("expected a number, got \"", s, "\""));
    }
    return t->threshold.value;
  }

  static Threshold ParseThreshold(const Item& at, Statistic stat) {
    const std::string s = at.node.IsScalar() ? at.node.Scalar() : "";
    std::optional<alert_internal::ParsedThreshold> t = alert_internal::ParseThresholdText(s);
    if (!t) {
      Fail(at, Cat("expected a percentage like \"+10%\", a duration like \"300ms\" or a number, "
                   "got \"",
                   s, "\""));
    }
    if (t->is_percentage && !IsLatencyStatistic(stat)) {
      Fail(at, Cat("a percentage is relative to the baseline P99 and needs a latency stat "
                   "(p50, p90, p99, p99.9), not ",
                   StatisticName(stat)));
    }
    if (t->is_duration && !IsLatencyStatistic(stat)) {
      Fail(at, Cat("a duration needs a latency stat, not ", StatisticName(stat),
                   "; give a plain number"));
    }
    return t->threshold;
  }

  void ParseRouteFields(const MapItem& m, RouteOptions& route) {
    if (const Item* f = m.Get("group_by")) route.group_by = Names(*f);
    if (const Item* f = m.Get("group_wait")) route.group_wait = Dur(*f);
    if (const Item* f = m.Get("group_interval")) route.group_interval = Dur(*f);
    if (const Item* f = m.Get("repeat_interval")) route.repeat_interval = Dur(*f);
  }

  DebounceSpec ParseDebounce(const Item& at) {
    MapItem m = Map(at, {"pre_alert_after", "alert_after", "resolve_after", "escalate_after",
                         "deescalate_after"});
    DebounceSpec d;
    if (const Item* f = m.Get("pre_alert_after")) d.pre_alert_after = Int(*f, 1);
    if (const Item* f = m.Get("alert_after")) d.alert_after = Dur(*f);
    if (const Item* f = m.Get("resolve_after")) d.resolve_after = Dur(*f);
    if (const Item* f = m.Get("escalate_after")) d.escalate_after = Int(*f, 1);
    if (const Item* f = m.Get("deescalate_after")) d.deescalate_after = Dur(*f);
    return d;
  }

  std::vector<AlertTier> ParseTiers(const Item& at, Statistic stat) {
    if (at.node.IsScalar()) {
      if (at.node.Scalar() != "default") {
        Fail(at, "expected a list of tiers or \"default\"");
      }
      return default_tiers_;
    }
    std::vector<AlertTier> tiers;
    for (const Item& e : List(at)) {
      AlertTier t;
      t.severity = DefaultSeverity(tiers.size());
      if (e.node.IsScalar()) {
        Alias(e.path + ".above", e.path);
        t.above = ParseThreshold(e, stat);
      } else {
        MapItem m = Map(e, {"above", "severity", "receivers", "actions"});
        const Item* above = m.Get("above");
        if (above == nullptr) Fail(e.mark, m.PathOf("above"), "required");
        t.above = ParseThreshold(*above, stat);
        if (const Item* f = m.Get("severity")) t.severity = Name(*f);
        if (const Item* f = m.Get("receivers")) t.receivers = Names(*f);
        if (const Item* f = m.Get("actions")) t.actions = Names(*f);
      }
      tiers.push_back(std::move(t));
    }
    if (tiers.empty()) Fail(at, "needs at least one tier");
    return tiers;
  }

  WallTime ParseLocalTime(const Item& at) {
    std::string s = Str(at);
    if (!s.empty() && (s.back() == 'Z' || s.back() == 'z')) s.replace(s.size() - 1, 1, "+00:00");
    static const char* const kFormats[] = {
        "%Y-%m-%d %H:%M:%S%Ez", "%Y-%m-%dT%H:%M:%S%Ez", "%Y-%m-%d %H:%M%Ez",
        "%Y-%m-%dT%H:%M%Ez",    "%Y-%m-%d %H:%M:%S",    "%Y-%m-%dT%H:%M:%S",
        "%Y-%m-%d %H:%M",       "%Y-%m-%dT%H:%M",       "%Y-%m-%d",
    };
    for (const char* format : kFormats) {
      absl::Time t;
      std::string error;
      if (absl::ParseTime(format, s, zone_, &t, &error)) return alert_internal::FromAbsl(t);
    }
    Fail(at, Cat("expected a local time like \"2025-11-11 00:00\" (in the configured timezone) "
                 "or with an offset like \"2025-11-11T00:00:00+08:00\", got \"",
                 Str(at), "\""));
  }

  static int ParseClock(const Item& at, std::string_view hhmm) {
    int h = -1;
    int m = -1;
    const auto digits = [](std::string_view d) {
      return d.size() == 2 && d[0] >= '0' && d[0] <= '9' && d[1] >= '0' && d[1] <= '9';
    };
    if (hhmm.size() == 5 && hhmm[2] == ':' && digits(hhmm.substr(0, 2)) &&
        digits(hhmm.substr(3, 2))) {
      h = (hhmm[0] - '0') * 10 + (hhmm[1] - '0');
      m = (hhmm[3] - '0') * 10 + (hhmm[4] - '0');
    }
    if (h < 0 || h > 24 || m < 0 || m > 59 || (h == 24 && m != 0)) {
      Fail(at, Cat("expected \"HH:MM-HH:MM\" like \"09:00-18:00\", got \"", Str(at), "\""));
    }
    return h * 60 + m;
  }

  uint8_t ParseDays(const Item& at) {
    if (at.node.IsScalar()) {
      const std::string s = at.node.Scalar();
      if (s == "weekdays") return 0x1f;
      if (s == "weekend") return 0x60;
      if (s == "everyday" || s == "daily") return 0x7f;
    }
    static constexpr std::string_view kDays[] = {"mon", "tue", "wed", "thu", "fri", "sat", "sun"};
    static constexpr std::string_view kFullDays[] = {"monday", "tuesday",  "wednesday", "thursday",
                                                     "friday", "saturday", "sunday"};
    uint8_t days = 0;
    std::vector<Item> items = at.node.IsScalar() ? std::vector<Item>{at} : List(at);
    for (const Item& e : items) {
      std::string s = Str(e);
      for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
      int found = -1;
      for (int d = 0; d < 7; ++d) {
        if (s == kDays[d] || s == kFullDays[d]) found = d;
      }
      if (found < 0) {
        Fail(e, Cat("expected a day (mon, tue, wed, thu, fri, sat, sun) or one of weekdays, "
                    "weekend, everyday, got \"",
                    s, "\""));
      }
      days |= static_cast<uint8_t>(1 << found);
    }
    return days;
  }

  Schedule ParseSchedule(const Item& at) {
    MapItem m = Map(at, {"name", "days", "hours", "from", "to", "scale"});
    Schedule s;
    const Item* name = m.Get("name");
    if (name == nullptr) Fail(at.mark, m.PathOf("name"), "required");
    s.name = Name(*name);
    const Item* days = m.Get("days");
    const Item* hours = m.Get("hours");
    const Item* from = m.Get("from");
    const Item* to = m.Get("to");
    if (from != nullptr || to != nullptr) {
      if (days != nullptr || hours != nullptr) {
        Fail(days != nullptr ? *days : *hours,
             "a schedule is either weekly (days, hours) or a window (from, to)");
      }
      if (from == nullptr) Fail(at.mark, m.PathOf("from"), "required with to");
      if (to == nullptr) Fail(at.mark, m.PathOf("to"), "required with from");
      s.kind = Schedule::Kind::kWindow;
      s.from = ParseLocalTime(*from);
      s.to = ParseLocalTime(*to);
    } else {
      if (days == nullptr && hours == nullptr) {
        Fail(at.mark, m.PathOf("days"),
             "give days and/or hours for a weekly schedule, or from and to for a window");
      }
      s.kind = Schedule::Kind::kWeekly;
      s.days = days != nullptr ? ParseDays(*days) : 0x7f;
      if (hours != nullptr) {
        const std::string h = Str(*hours);
        const size_t dash = h.find('-');
        if (dash == std::string::npos) ParseClock(*hours, "");
        s.start_minute = ParseClock(*hours, std::string_view(h).substr(0, dash));
        s.end_minute = ParseClock(*hours, std::string_view(h).substr(dash + 1));
        if (s.start_minute == 24 * 60) ParseClock(*hours, "");
      }
    }
    if (const Item* f = m.Get("scale")) s.scale = Number(*f);
    return s;
  }

  ScheduleOverride ParseOverride(const Item& at, Statistic stat) {
    MapItem m = Map(at, {"name", "scale", "thresholds"});
    ScheduleOverride o;
    const Item* name = m.Get("name");
    if (name == nullptr) Fail(at.mark, m.PathOf("name"), "required");
    o.schedule = Name(*name);
    const Item* scale = m.Get("scale");
    const Item* thresholds = m.Get("thresholds");
    if (scale != nullptr && thresholds != nullptr) {
      Fail(*thresholds, "give scale or thresholds, not both");
    }
    if (scale == nullptr && thresholds == nullptr) {
      Fail(at.mark, m.PathOf("scale"), "give scale or thresholds");
    }
    if (scale != nullptr) o.scale = Number(*scale);
    if (thresholds != nullptr) {
      for (const Item& e : List(*thresholds)) o.thresholds.push_back(ParseThreshold(e, stat));
      if (o.thresholds.empty()) Fail(*thresholds, "needs one threshold per tier");
    }
    return o;
  }

  AlertRule ParseRule(const Item& at) {
    MapItem m = Map(at, {"name", "select", "stat", "preset", "above", "severity", "receivers",
                         "actions", "tiers", "debounce", "schedules", "labels", "annotations"});
    AlertRule r;
    const Item* name = m.Get("name");
    if (name == nullptr) Fail(at.mark, m.PathOf("name"), "required");
    r.name = Name(*name);
    if (const Item* f = m.Get("select")) {
      absl::StatusOr<std::vector<LabelMatcher>> matchers = ParseSelector(Str(*f));
      if (!matchers.ok()) Fail(*f, std::string(matchers.status().message()));
      r.matchers = *std::move(matchers);
    }
    const Item* preset_field = m.Get("preset");
    const Item* above = m.Get("above");
    const Item* tiers = m.Get("tiers");
    if (preset_field != nullptr) {
      const std::string preset_name = Str(*preset_field);
      const ScenarioPreset* preset = FindScenarioPreset(preset_name);
      if (preset == nullptr) {
        std::string known;
        for (const ScenarioPreset& p : ScenarioPresets())
          known += Cat(known.empty() ? "" : ", ", p.name);
        Fail(*preset_field, Cat("unknown preset \"", preset_name, "\" (known: ", known, ")"));
      }
      for (const char* key : {"stat", "above", "tiers"}) {
        if (const Item* f = m.Get(key)) {
          Fail(*f, Cat("cannot be combined with preset \"", preset_name, "\""));
        }
      }
      r.stat = preset->stat;
      r.tiers.push_back(SingleTier(m, Threshold::Absolute(preset->above)));
      Alias(m.PathOf("tiers[0].above"), preset_field->path);
      Alias(m.PathOf("tiers[0]"), m.path);
    } else {
      if (const Item* f = m.Get("stat")) {
        std::optional<Statistic> stat = ParseStatistic(Str(*f));
        if (!stat) {
          Fail(*f, Cat("unknown statistic \"", Str(*f),
                       "\" (expected one of p50, p90, p99, p99.9, rate, error_ratio, "
                       "anomaly_score)"));
        }
        r.stat = *stat;
      }
      if (above != nullptr) {
        if (tiers != nullptr) Fail(*tiers, "cannot be combined with above");
        r.tiers.push_back(SingleTier(m, ParseThreshold(*above, r.stat)));
        Alias(m.PathOf("tiers[0]"), m.path);
      } else {
        for (const char* key : {"severity", "receivers", "actions"}) {
          if (const Item* f = m.Get(key)) {
            Fail(*f, tiers != nullptr ? "belongs to each tier when the rule has tiers"
                                      : "needs above or preset (the default tiers have their own)");
          }
        }
        if (tiers != nullptr) {
          r.tiers = ParseTiers(*tiers, r.stat);
        } else if (IsLatencyStatistic(r.stat)) {
          r.tiers = default_tiers_;
        } else {
          const Item* stat = m.Get("stat");
          Fail(stat->mark, stat->path,
               Cat(StatisticName(r.stat),
                   " needs a threshold (above or tiers): the default tiers are relative to the "
                   "baseline P99"));
        }
      }
    }
    DebounceSpec debounce;
    if (const Item* f = m.Get("debounce")) debounce = ParseDebounce(*f);
    r.debounce = Merge(debounce, default_debounce_);
    if (const Item* f = m.Get("schedules")) {
      for (const Item& e : List(*f)) r.schedules.push_back(ParseOverride(e, r.stat));
    }
    if (const Item* f = m.Get("labels")) r.labels = StringMap(*f);
    if (const Item* f = m.Get("annotations")) r.annotations = StringMap(*f);
    return r;
  }

  // The one tier of a rule written with `above` or `preset`.
  AlertTier SingleTier(const MapItem& m, Threshold above) {
    AlertTier t;
    t.above = above;
    t.severity = "critical";
    if (const Item* f = m.Get("severity")) t.severity = Name(*f);
    if (const Item* f = m.Get("receivers")) t.receivers = Names(*f);
    if (const Item* f = m.Get("actions")) t.actions = Names(*f);
    return t;
  }

  std::vector<std::pair<std::string, std::string>> aliases_;
  absl::TimeZone zone_ = absl::UTCTimeZone();
  std::vector<AlertTier> default_tiers_ = DefaultAlertTiers();
  DebounceSpec default_debounce_;
};

AlertConfig Parser::Parse(const YAML::Node& root) {
  AlertConfig c;
  MapItem top = Map(Root(root), {"timezone", "stale_after", "route", "receivers", "defaults",
                                 "schedules", "rules"});
  if (const Item* f = top.Get("stale_after")) c.stale_after = Dur(*f);
  if (const Item* f = top.Get("timezone")) {
    c.time_zone = Str(*f);
    if (!absl::LoadTimeZone(c.time_zone, &zone_)) {
      Fail(*f, Cat("unknown time zone \"", c.time_zone,
                   "\" (expected an IANA name like \"Asia/Shanghai\")"));
    }
  }
  if (const Item* f = top.Get("route")) {
    MapItem m =
        Map(*f, {"receiver", "group_by", "group_wait", "group_interval", "repeat_interval"});
    if (const Item* r = m.Get("receiver")) c.default_receiver = Str(*r);
    ParseRouteFields(m, c.route);
  }
  if (const Item* f = top.Get("receivers")) {
    for (const Item& e : List(*f)) {
      MapItem m = Map(e, {"name", "group_by", "group_wait", "group_interval", "repeat_interval"});
      const Item* name = m.Get("name");
      if (name == nullptr) Fail(e.mark, m.PathOf("name"), "required");
      ReceiverOptions r{Name(*name), c.route};
      ParseRouteFields(m, r.route);
      c.receivers.push_back(std::move(r));
    }
  }
  if (const Item* f = top.Get("defaults")) {
    MapItem m = Map(*f, {"debounce", "tiers"});
    if (const Item* d = m.Get("debounce")) default_debounce_ = ParseDebounce(*d);
    if (const Item* t = m.Get("tiers")) default_tiers_ = ParseTiers(*t, Statistic::kP99);
  }
  if (const Item* f = top.Get("schedules")) {
    for (const Item& e : List(*f)) c.schedules.push_back(ParseSchedule(e));
  }
  if (const Item* f = top.Get("rules")) {
    for (const Item& e : List(*f)) c.rules.push_back(ParseRule(e));
  }
  return c;
}

}  // namespace

absl::StatusOr<AlertConfig> ParseAlertConfig(std::string_view yaml, std::string_view file_name) {
  const auto format = [&](const Failure& f) { return YamlErrorStatus(file_name, f); };
  Parser parser;
  AlertConfig config;
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    config = parser.Parse(root);
  } catch (const Failure& f) {
    return format(f);
  } catch (const YAML::Exception& e) {
    return format(Failure{e.mark, "", e.msg});
  }
  if (std::optional<ConfigIssue> issue = alert_internal::FindConfigIssue(config)) {
    return format(parser.Locate(*issue));
  }
  return config;
}

absl::StatusOr<AlertConfig> LoadAlertConfig(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return absl::NotFoundError(Cat(path, ": cannot open the rule file"));
  std::ostringstream text;
  text << in.rdbuf();
  if (in.bad()) return absl::NotFoundError(Cat(path, ": cannot read the rule file"));
  return ParseAlertConfig(text.str(), path);
}

}  // namespace tailguard
