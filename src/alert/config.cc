// The rule file parser: YAML to AlertConfig, every error as "file:line: field.path: problem".
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/time/time.h"
#include "alert/config_internal.h"
#include "alert/schedule.h"
#include "alert/selector.h"
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

  // "${NAME}" replaced by the environment variable NAME. Messages name the variable, never a
  // value: URLs and headers hold secrets.
  static std::string Expand(const std::string& text, const YAML::Mark& mark,
                            const std::string& path) {
    std::string out;
    for (size_t i = 0; i < text.size();) {
      if (text.compare(i, 2, "${") != 0) {
        out.push_back(text[i++]);
        continue;
      }
      const size_t end = text.find('}', i + 2);
      if (end == std::string::npos) {
        Fail(mark, path, "unterminated \"${\" (write ${NAME} for the environment variable NAME)");
      }
      const std::string name = text.substr(i + 2, end - i - 2);
      bool valid = !name.empty() && !(name[0] >= '0' && name[0] <= '9');
      for (char c : name) {
        valid &=
            (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
      }
      if (!valid) Fail(mark, path, Cat("\"${", name, "}\" is not an environment variable name"));
      const char* value = std::getenv(name.c_str());
      if (value == nullptr) Fail(mark, path, Cat("environment variable ", name, " is not set"));
      out += value;
      i = end + 1;
    }
    return out;
  }

  // "20/min", "1/s", "100/h": messages per minute.
  static double Rate(const Item& at) {
    const std::string s = Str(at);
    const size_t slash = s.find('/');
    double n = -1;
    double per_minute = 0;
    if (slash != std::string::npos) {
      const std::string_view unit = std::string_view(s).substr(slash + 1);
      per_minute = unit == "s" || unit == "sec" || unit == "second"   ? 60
                   : unit == "min" || unit == "m" || unit == "minute" ? 1
                   : unit == "h" || unit == "hour"                    ? 1.0 / 60
                                                                      : 0;
      auto [ptr, ec] = std::from_chars(s.data(), s.data() + slash, n);
      if (ec != std::errc() || ptr != s.data() + slash || !std::isfinite(n)) n = -1;
    }
    if (n < 0 || per_minute == 0) {
      Fail(at, Cat("expected a rate like \"20/min\", \"1/s\" or \"100/h\", got \"", s, "\""));
    }
    return n * per_minute;
  }

  // Label matchers written as strings: ['severity="emergency"', 'model=~"rank.*"'].
  std::vector<LabelMatcher> Matchers(const Item& at) {
    std::vector<LabelMatcher> out;
    for (const Item& e : List(at)) {
      const std::string text = Str(e);
      absl::StatusOr<std::vector<LabelMatcher>> m = ParseSelector(Cat("{", text, "}"));
      if (!m.ok() || m->empty()) {
        Fail(e, Cat("expected a label matcher like severity=\"critical\" or model=~\"rank.*\", "
                    "got \"",
                    text, "\""));
      }
      if (absl::StatusOr<alert_internal::SeriesSelector> s =
              alert_internal::SeriesSelector::Compile(*m);
          !s.ok()) {
        Fail(e, std::string(s.status().message()));
      }
      out.insert(out.end(), m->begin(), m->end());
    }
    return out;
  }

  RouteNode ParseRouteNode(const Item& at, int depth) {
    MapItem m = Map(at, {"matchers", "receiver", "group_by", "group_wait", "group_interval",
                         "repeat_interval", "continue", "mute_during", "routes"});
    RouteNode n;
    if (const Item* f = m.Get("matchers")) n.matchers = Matchers(*f);
    if (const Item* f = m.Get("receiver")) n.receiver = Name(*f);
    if (const Item* f = m.Get("group_by")) n.group_by = Names(*f);
    if (const Item* f = m.Get("group_wait")) n.group_wait = Dur(*f);
    if (const Item* f = m.Get("group_interval")) n.group_interval = Dur(*f);
    if (const Item* f = m.Get("repeat_interval")) n.repeat_interval = Dur(*f);
    if (const Item* f = m.Get("continue")) n.continue_matching = Bool(*f);
    if (const Item* f = m.Get("mute_during")) {
      n.mute_during.emplace();
      for (const Item& e : List(*f)) n.mute_during->push_back(Name(e));
    }
    if (const Item* f = m.Get("routes")) n.routes = ParseRoutes(*f, depth + 1);
    return n;
  }

  std::vector<RouteNode> ParseRoutes(const Item& at, int depth) {
    if (depth > kMaxRouteDepth) {
      Fail(at, Cat("routes nest deeper than ", kMaxRouteDepth, " levels"));
    }
    std::vector<RouteNode> out;
    for (const Item& e : List(at)) out.push_back(ParseRouteNode(e, depth));
    return out;
  }

  ReceiverTarget ParseTarget(const MapItem& m) {
    using Kind = ReceiverTarget::Kind;
    ReceiverTarget t;
    const Item* given = nullptr;
    for (Kind kind : {Kind::kWeCom, Kind::kWebhook, Kind::kTemplate, Kind::kAlertmanager}) {
      const Item* f = m.Get(alert_internal::TargetKindField(kind));
      if (f == nullptr) continue;
      if (given != nullptr) {
        Fail(*f, Cat("cannot be combined with ", given->key, " (a receiver has one target)"));
      }
      given = f;
      t.kind = kind;
    }
    if (given != nullptr) {
      MapItem k = t.kind == Kind::kWeCom ? Map(*given, {"url", "mentioned_mobile_list"})
                  : t.kind == Kind::kTemplate
                      ? Map(*given, {"url", "method", "content_type", "headers", "body"})
                      : Map(*given, {"url", "headers"});
      const Item* url = k.Get("url");
      if (url == nullptr) Fail(given->mark, k.PathOf("url"), "required");
      t.url = Expand(Str(*url), url->mark, url->path);
      if (const Item* f = k.Get("headers")) {
        t.headers = StringMap(*f);
        for (auto& [name, value] : t.headers) {
          const std::string path = Cat(f->path, '.', name);
          value = Expand(value, MarkOf(path), path);
        }
      }
      if (const Item* f = k.Get("method")) {
        t.method = Name(*f);
        for (char& c : t.method) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
      if (const Item* f = k.Get("content_type")) t.content_type = Name(*f);
      if (const Item* f = k.Get("body")) t.body_template = Str(*f);
      if (const Item* f = k.Get("mentioned_mobile_list")) t.mentioned_mobile_list = Names(*f);
    }
    if (const Item* f = m.Get("rate_limit")) t.rate_per_minute = Rate(*f);
    if (const Item* f = m.Get("send_resolved")) t.send_resolved = Bool(*f);
    if (const Item* f = m.Get("timeout")) t.timeout = Dur(*f);
    return t;
  }

  InhibitRule ParseInhibitRule(const Item& at) {
    MapItem m = Map(at, {"source_matchers", "target_matchers", "equal"});
    InhibitRule r;
    for (const char* side : {"source_matchers", "target_matchers"}) {
      const Item* f = m.Get(side);
      if (f == nullptr) Fail(at.mark, m.PathOf(side), "required");
      (side[0] == 's' ? r.source_matchers : r.target_matchers) = Matchers(*f);
    }
    if (const Item* f = m.Get("equal")) r.equal = Names(*f);
    return r;
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

  // `below` is set when the tiers are written with `below:`; every tier must agree.
  std::vector<AlertTier> ParseTiers(const Item& at, Statistic stat, bool* below) {
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
      bool tier_below = false;
      if (e.node.IsScalar()) {
        Alias(e.path + ".above", e.path);
        t.above = ParseThreshold(e, stat);
      } else {
        MapItem m = Map(e, {"above", "below", "severity", "receivers", "actions"});
        const Item* above = m.Get("above");
        const Item* below_field = m.Get("below");
        if (above != nullptr && below_field != nullptr) {
          Fail(*below_field, "a tier has above or below, not both");
        }
        if (above == nullptr && below_field == nullptr) {
          Fail(e.mark, m.PathOf("above"), "required (or below, for a drop)");
        }
        tier_below = below_field != nullptr;
        t.above = ParseThreshold(tier_below ? *below_field : *above, stat);
        if (const Item* f = m.Get("severity")) t.severity = Name(*f);
        if (const Item* f = m.Get("receivers")) t.receivers = Names(*f);
        if (const Item* f = m.Get("actions")) t.actions = Names(*f);
      }
      if (!tiers.empty() && tier_below != *below) {
        Fail(e, "every tier of a rule breaches on the same side: all above or all below");
      }
      *below = tier_below;
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
    MapItem m =
        Map(at, {"name", "select", "stat", "preset", "above", "below", "severity", "receivers",
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
    const Item* below = m.Get("below");
    const Item* tiers = m.Get("tiers");
    if (above != nullptr && below != nullptr) {
      Fail(*below, "a rule has above or below, not both");
    }
    if (below != nullptr) {
      r.below = true;
      above = below;  // the one tier's threshold; which side it breaches is r.below
      Alias(m.PathOf("tiers[0].below"), below->path);
    }
    if (preset_field != nullptr) {
      const std::string preset_name = Str(*preset_field);
      const ScenarioPreset* preset = FindScenarioPreset(preset_name);
      if (preset == nullptr) {
        std::string known;
        for (const ScenarioPreset& p : ScenarioPresets())
          known += Cat(known.empty() ? "" : ", ", p.name);
        Fail(*preset_field, Cat("unknown preset \"", preset_name, "\" (known: ", known, ")"));
      }
      for (const char* key : {"stat", "above", "below", "tiers"}) {
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
        if (tiers != nullptr)
          Fail(*tiers, r.below ? "cannot be combined with below" : "cannot be combined with above");
        r.tiers.push_back(SingleTier(m, ParseThreshold(*above, r.stat)));
        Alias(m.PathOf("tiers[0]"), m.path);
      } else {
        for (const char* key : {"severity", "receivers", "actions"}) {
          if (const Item* f = m.Get(key)) {
            Fail(*f, tiers != nullptr ? "belongs to each tier when the rule has tiers"
                                      : "needs above, below or preset (the default tiers have "
                                        "their own)");
          }
        }
        if (tiers != nullptr) {
          r.tiers = ParseTiers(*tiers, r.stat, &r.below);
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
                                 "schedules", "maintenance", "inhibit_rules", "rules"});
  if (const Item* f = top.Get("stale_after")) c.stale_after = Dur(*f);
  if (const Item* f = top.Get("timezone")) {
    c.time_zone = Str(*f);
    if (!absl::LoadTimeZone(c.time_zone, &zone_)) {
      Fail(*f, Cat("unknown time zone \"", c.time_zone,
                   "\" (expected an IANA name like \"Asia/Shanghai\")"));
    }
  }
  if (const Item* f = top.Get("route")) {
    MapItem m = Map(
        *f, {"receiver", "group_by", "group_wait", "group_interval", "repeat_interval", "routes"});
    if (const Item* r = m.Get("receiver")) c.default_receiver = Str(*r);
    ParseRouteFields(m, c.route);
    if (const Item* r = m.Get("routes")) c.routes = ParseRoutes(*r, 1);
  }
  if (const Item* f = top.Get("receivers")) {
    for (const Item& e : List(*f)) {
      MapItem m =
          Map(e, {"name", "group_by", "group_wait", "group_interval", "repeat_interval", "wecom",
                  "webhook", "template", "alertmanager", "rate_limit", "send_resolved", "timeout"});
      const Item* name = m.Get("name");
      if (name == nullptr) Fail(e.mark, m.PathOf("name"), "required");
      ReceiverOptions r;
      r.name = Name(*name);
      r.route = c.route;
      ParseRouteFields(m, r.route);
      r.target = ParseTarget(m);
      if (r.target.kind == ReceiverTarget::Kind::kAlertmanager) {
        // Alertmanager resolves a firing alert it has not heard of for resolve_timeout (5 min by
        // default), as Prometheus re-sends active alerts every minute. Unless told otherwise,
        // this receiver's groups are looked at and re-sent every minute.
        if (m.Get("group_interval") == nullptr) {
          r.route.group_interval =
              std::min<Duration>(r.route.group_interval, std::chrono::minutes(1));
        }
        if (m.Get("repeat_interval") == nullptr) {
          r.route.repeat_interval =
              std::max<Duration>(r.route.group_interval, std::chrono::minutes(1));
        }
      }
      c.receivers.push_back(std::move(r));
    }
  }
  if (const Item* f = top.Get("defaults")) {
    MapItem m = Map(*f, {"debounce", "tiers"});
    if (const Item* d = m.Get("debounce")) default_debounce_ = ParseDebounce(*d);
    if (const Item* t = m.Get("tiers")) {
      bool below = false;
      default_tiers_ = ParseTiers(*t, Statistic::kP99, &below);
      if (below) Fail(*t, "the default tiers are above the baseline: below belongs to a rule");
    }
  }
  if (const Item* f = top.Get("schedules")) {
    for (const Item& e : List(*f)) c.schedules.push_back(ParseSchedule(e));
  }
  if (const Item* f = top.Get("maintenance")) c.maintenance = Names(*f);
  if (const Item* f = top.Get("inhibit_rules")) {
    c.inhibit_rules.clear();
    for (const Item& e : List(*f)) c.inhibit_rules.push_back(ParseInhibitRule(e));
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
