// The rule file parser: YAML to AlertConfig, every error as "file:line: field.path: problem".
#include <yaml-cpp/yaml.h>

#include <charconv>
#include <fstream>
#include <map>
#include <sstream>

#include "absl/time/time.h"
#include "alert/config_internal.h"
#include "alert/schedule.h"
#include "common/strings.h"

namespace tailguard {
namespace {

using alert_internal::ConfigIssue;

// A parse error; thrown inside the parser only and turned into a Status at its entry point.
struct Failure {
  YAML::Mark mark;
  std::string path;
  std::string message;
};

// A node with where it is: its field path and the line of its key (or of itself in a list).
struct Item {
  std::string path;
  YAML::Mark mark;
  YAML::Node node;
  std::string key;  // for map fields
};

// The fields of one map, checked against the known names.
struct MapItem {
  std::string path;
  YAML::Mark mark;
  std::vector<Item> fields;

  const Item* Get(std::string_view key) const {
    for (const Item& f : fields) {
      if (f.key == key) return &f;
    }
    return nullptr;
  }
  std::string PathOf(std::string_view key) const {
    return path.empty() ? std::string(key) : Cat(path, '.', key);
  }
};

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

std::string JoinNames(std::initializer_list<std::string_view> names) {
  std::string out;
  for (std::string_view n : names) {
    if (!out.empty()) out += ", ";
    out += n;
  }
  return out;
}

std::string DefaultSeverity(size_t tier) {
  static const char* const kNames[] = {"warning", "critical", "emergency"};
  return kNames[std::min<size_t>(tier, 2)];
}

class Parser {
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
    for (std::string prefix = path;;) {
      auto it = marks_.find(prefix);
      if (it != marks_.end()) return {it->second, path, issue.message};
      const size_t cut = prefix.find_last_of(".[");
      if (cut == std::string::npos || cut == 0) break;
      prefix.resize(cut);
    }
    return {YAML::Mark(), path, issue.message};
  }

 private:
  [[noreturn]] static void Fail(const Item& at, std::string message) {
    throw Failure{at.mark, at.path, std::move(message)};
  }
  [[noreturn]] static void Fail(const YAML::Mark& mark, std::string path, std::string message) {
    throw Failure{mark, std::move(path), std::move(message)};
  }

  static YAML::Mark MarkOr(const YAML::Node& node, const YAML::Mark& fallback) {
    const YAML::Mark m = node.Mark();
    return m.is_null() || m.line < 0 ? fallback : m;
  }

  void Note(const std::string& path, const YAML::Mark& mark) { marks_[path] = mark; }

  // Paths the validator reports under `from` were written under `to`, e.g. the one tier made
  // from a rule's `above` field.
  void Alias(std::string from, std::string to) {
    aliases_.emplace_back(std::move(from), std::move(to));
  }

  MapItem Map(const Item& at, std::initializer_list<std::string_view> known) {
    MapItem m{at.path, at.mark, {}};
    if (at.node.IsNull()) return m;
    if (!at.node.IsMap()) Fail(at, Cat("expected a map with fields ", JoinNames(known)));
    for (const auto& kv : at.node) {
      const YAML::Node& k = kv.first;
      const YAML::Mark km = MarkOr(k, at.mark);
      if (!k.IsScalar()) Fail(km, at.path, "field names must be strings");
      Item f{m.PathOf(k.Scalar()), km, kv.second, k.Scalar()};
      if (std::find(known.begin(), known.end(), f.key) == known.end()) {
        Fail(f, Cat("unknown field (expected one of: ", JoinNames(known), ")"));
      }
      if (m.Get(f.key) != nullptr) Fail(f, "appears twice");
      Note(f.path, f.mark);
      m.fields.push_back(std::move(f));
    }
    return m;
  }

  std::vector<Item> List(const Item& at) {
    std::vector<Item> out;
    if (at.node.IsNull()) return out;
    if (!at.node.IsSequence()) Fail(at, "expected a list");
    size_t i = 0;
    for (const YAML::Node& node : at.node) {
      Item e{Cat(at.path, '[', i++, ']'), MarkOr(node, at.mark), node, ""};
      Note(e.path, e.mark);
      out.push_back(std::move(e));
    }
    return out;
  }

  static std::string Str(const Item& at) {
    if (!at.node.IsScalar()) Fail(at, "expected a string");
    return at.node.Scalar();
  }

  static std::string Name(const Item& at) {
    std::string s = Str(at);
    if (s.empty()) Fail(at, "must not be empty");
    return s;
  }

  // A string or a list of strings.
  std::vector<std::string> Names(const Item& at) {
    if (at.node.IsScalar()) return {Name(at)};
    std::vector<std::string> out;
    for (const Item& e : List(at)) out.push_back(Name(e));
    return out;
  }

  Labels StringMap(const Item& at) {
    Labels out;
    if (at.node.IsNull()) return out;
    if (!at.node.IsMap()) Fail(at, "expected a map of strings");
    for (const auto& kv : at.node) {
      const YAML::Mark km = MarkOr(kv.first, at.mark);
      if (!kv.first.IsScalar()) Fail(km, at.path, "field names must be strings");
      Item f{Cat(at.path, '.', kv.first.Scalar()), km, kv.second, kv.first.Scalar()};
      Note(f.path, f.mark);
      for (const auto& [name, value] : out) {
        if (name == f.key) Fail(f, "appears twice");
      }
      out.emplace_back(f.key, Str(f));
    }
    return out;
  }

  static int Int(const Item& at, int min) {
    const std::string s = Str(at);
    int v = 0;
    auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
    if (ec != std::errc() || ptr != s.data() + s.size()) {
      Fail(at, Cat("expected a whole number, got \"", s, "\""));
    }
    if (v < min) Fail(at, Cat("must be at least ", min));
    return v;
  }

  static double Number(const Item& at) {
    const std::string s = Str(at);
    std::optional<alert_internal::ParsedThreshold> t = alert_internal::ParseThresholdText(s);
    if (!t || t->is_percentage || t->is_duration) {
      Fail(at, Cat("expected a number, got \"", s, "\""));
    }
    return t->threshold.value;
  }

  static Duration Dur(const Item& at) {
    const std::string s = Str(at);
    std::optional<Duration> d = alert_internal::ParseDurationText(s);
    if (!d) Fail(at, Cat("expected a duration like \"30s\", \"5m\" or \"1h30m\", got \"", s, "\""));
    return *d;
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

  std::map<std::string, YAML::Mark> marks_;
  std::vector<std::pair<std::string, std::string>> aliases_;
  absl::TimeZone zone_ = absl::UTCTimeZone();
  std::vector<AlertTier> default_tiers_ = DefaultAlertTiers();
  DebounceSpec default_debounce_;
};

AlertConfig Parser::Parse(const YAML::Node& root) {
  AlertConfig c;
  MapItem top = Map({"", YAML::Mark(), root, ""}, {"timezone", "stale_after", "route", "receivers",
                                                   "defaults", "schedules", "rules"});
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
  const auto format = [&](const Failure& f) {
    const int line = f.mark.is_null() || f.mark.line < 0 ? 1 : f.mark.line + 1;
    return absl::InvalidArgumentError(
        f.path.empty() ? Cat(file_name, ':', line, ": ", f.message)
                       : Cat(file_name, ':', line, ": ", f.path, ": ", f.message));
  };
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
