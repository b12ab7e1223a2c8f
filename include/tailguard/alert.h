// The alert engine: rules over per-series statistics, a debounce state machine per rule and
// series, weekday/weekend and campaign schedules in a time zone, and Alertmanager-style grouping
// into notifications. The rule file is documented in docs/alerting.md.
//
// Time only moves through the timestamps the engine is given (Observe, Advance): the engine never
// reads a clock and never sleeps, so the live loop and an offline replay behave the same.
#ifndef TAILGUARD_ALERT_H_
#define TAILGUARD_ALERT_H_

#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard {

// ---------------------------------------------------------------------------------------------
// Observations: what the engine is fed.

// The statistic a rule watches. Latency statistics are in seconds.
enum class Statistic : uint8_t {
  kP50,
  kP90,
  kP99,
  kP999,          // P99.9
  kRate,          // requests per second
  kErrorRatio,    // failed / all requests, in [0, 1]
  kAnomalyScore,  // the detectors' ensemble score, in [0, 1]
};

// "p50", "p90", "p99", "p99.9", "rate", "error_ratio", "anomaly_score".
std::string_view StatisticName(Statistic s);
// The inverse of StatisticName(); also accepts "p999". nullopt for anything else.
std::optional<Statistic> ParseStatistic(std::string_view name);
// True for the four percentiles, the only statistics a baseline-relative threshold applies to.
bool IsLatencyStatistic(Statistic s);

// Label pairs as a view; a `Labels` (registry.h) converts implicitly.
using LabelSpan = std::span<const std::pair<std::string, std::string>>;

// The statistics of one series at one evaluation tick. A view: `metric` and `labels` must stay
// valid for the duration of AlertEngine::Observe() only; nothing is copied unless the series is
// new. Any statistic that is not available this tick is NaN; NaN never breaches a threshold, and
// out of Normal it holds the alert as no data (AlertEventKind::kNoData) rather than resolving it.
struct Observation {
  static constexpr double kMissing = std::numeric_limits<double>::quiet_NaN();

  WallTime time{};          // the tick this observation describes
  std::string_view metric;  // e.g. "tailguard_request_duration_seconds"
  LabelSpan labels;         // in any order; the series is the same whatever the order
  // The percentiles and the baseline in `unit`: seconds for a latency, else bytes or counts.
  Unit unit = Unit::kNanoseconds;
  double p50 = kMissing;
  double p90 = kMissing;
  double p99 = kMissing;
  double p999 = kMissing;
  double rate = kMissing;  // requests per second
  double error_ratio = kMissing;
  double anomaly_score = kMissing;
  // The series' expected P99 (forecast, or the same hour last week); NaN when unknown, in which
  // case no baseline-relative threshold can breach.
  double baseline_p99 = kMissing;

  // The field that holds statistic `s`.
  double Get(Statistic s) const;
};

// ---------------------------------------------------------------------------------------------
// Configuration. ParseAlertConfig() builds it from YAML; it may also be built in code.

// One label matcher of a Prometheus selector. The name "__name__" matches the metric name; an
// absent label matches as the empty string, as in Prometheus.
struct LabelMatcher {
  enum class Op : uint8_t {
    kEqual,     // name="value"
    kNotEqual,  // name!="value"
    kRegex,     // name=~"regex"  (whole value, RE2 syntax as Prometheus; at most
                //                 kMaxMatcherRegexBytes)
    kNotRegex,  // name!~"regex"
  };
  std::string name;
  Op op = Op::kEqual;
  std::string value;
};

// The longest regex a matcher may have: ample for an alternation of a few hundred model names,
// and a bound on what one selector (from an API call or a rule) costs to compile.
inline constexpr size_t kMaxMatcherRegexBytes = 4096;

// Parses a Prometheus series selector: `metric`, `metric{a="x",b=~"y|z"}` or `{c!="w"}`. Values
// are double- or single-quoted with backslash escapes. "" selects every series.
// InvalidArgument names the offset of the problem. Regexes are checked by ValidateAlertConfig().
absl::StatusOr<std::vector<LabelMatcher>> ParseSelector(std::string_view text);

// A threshold. The statistic breaches it when strictly greater.
struct Threshold {
  enum class Kind : uint8_t {
    // value is a fraction above the observation's baseline P99: 0.10 is "+10 %", the threshold
    // is baseline_p99 * (1 + value). Only for latency statistics.
    kRelative,
    // value is in the statistic's unit (seconds, requests/s, ratio, score).
    kAbsolute,
  };
  Kind kind = Kind::kAbsolute;
  double value = 0;

  static Threshold Relative(double fraction) { return {Kind::kRelative, fraction}; }
  static Threshold Absolute(double value) { return {Kind::kAbsolute, value}; }
  friend bool operator==(const Threshold&, const Threshold&) = default;
};

// The most tiers one rule may have.
inline constexpr int kMaxAlertTiers = 8;

// One severity level of a rule. Tiers are cumulative: an alert at tier k is delivered to the
// receivers, and carries the actions, of every tier 0..k.
struct AlertTier {
  Threshold above;
  std::string severity = "critical";
  // Notification receivers, by name (delivery is the notifiers' business). When no tier up to
  // the alert's tier names one, AlertConfig::default_receiver gets it.
  std::vector<std::string> receivers;
  // Mitigations to start while the alert is at this tier or above, e.g. "degrade". They ride on
  // the fire and escalate events (AlertEvent::actions), not on notifications.
  std::vector<std::string> actions;
};

// The built-in tiers relative to the baseline P99: +10 % warning to "wecom", +30 % critical to
// "sms" and "phone", +50 % emergency with the "degrade" action.
std::vector<AlertTier> DefaultAlertTiers();

// The debounce state machine's parameters (see AlertEngine).
struct DebounceOptions {
  // Consecutive breaching evaluations that move Normal to PreAlert. >= 1. Default 3.
  int pre_alert_after = 3;
  // How long the breach (from its first breaching evaluation) must have lasted to move PreAlert
  // to Alert. >= 0. Default 30 s.
  Duration alert_after = std::chrono::seconds(30);
  // How long the statistic must stay continuously at or below the lowest tier to move Alert to
  // Normal. >= 0. Default 1 min.
  Duration resolve_after = std::chrono::minutes(1);
  // Consecutive evaluations above a higher tier that escalate to it. >= 1. Default 3 (in YAML:
  // pre_alert_after unless given).
  int escalate_after = 3;
  // How long the statistic must stay at or below the current tier to de-escalate. >= 0. Default
  // 1 min (in YAML: resolve_after unless given).
  Duration deescalate_after = std::chrono::minutes(1);
};

// A built-in absolute threshold for a kind of service (from the field reports).
struct ScenarioPreset {
  std::string_view name;         // "image_classification", ...
  std::string_view description;  // one line
  Statistic stat;                // the statistic it watches
  double above;                  // the threshold, in the statistic's unit (seconds)
};
// image_classification: P99 above 300 ms per frame; recommender_feature_fetch: P99 above 50 ms;
// nlp_first_token: P99 of the time to first token above 500 ms.
std::span<const ScenarioPreset> ScenarioPresets();
// The preset named `name`, or null.
const ScenarioPreset* FindScenarioPreset(std::string_view name);

// A named period during which rules may use other thresholds, in AlertConfig::time_zone.
struct Schedule {
  enum class Kind : uint8_t {
    kWeekly,  // every week on `days`, between `start_minute` and `end_minute` local time
    kWindow,  // once, from `from` (inclusive) to `to` (exclusive): a campaign
  };
  std::string name;
  Kind kind = Kind::kWeekly;
  // kWeekly: bit d set for weekday d, Monday = 0 ... Sunday = 6.
  uint8_t days = 0;
  // kWeekly: local minutes of the day, 0..1440. When end <= start the period wraps past
  // midnight into the next day (it belongs to the day it starts on).
  int start_minute = 0;
  int end_minute = 24 * 60;
  // kWindow: the instants it starts and ends.
  WallTime from{};
  WallTime to{};
  // When set, every rule without its own override for this schedule scales its thresholds by
  // this factor while the schedule is active (see ScheduleOverride::scale). > 0.
  std::optional<double> scale;
};

// The most schedules one configuration may have.
inline constexpr int kMaxSchedules = 64;

// How one rule's thresholds change while a schedule is active.
struct ScheduleOverride {
  std::string schedule;  // a Schedule::name
  // Used when `thresholds` is empty. Multiplies the margin of relative thresholds (+10 % at
  // scale 2 is +20 %) and the value of absolute ones (300 ms at 1.5 is 450 ms). > 0. Default 1.
  double scale = 1.0;
  // When not empty: replaces the thresholds, one per tier, same order.
  std::vector<Threshold> thresholds;
};

// One alerting rule.
struct AlertRule {
  // Unique; becomes the "alertname" label. Letters, digits and _ : . - only.
  std::string name;
  // Which series it evaluates; all must match. Empty: every series.
  std::vector<LabelMatcher> matchers;
  // Which statistic it compares. Default P99.
  Statistic stat = Statistic::kP99;
  // 1..kMaxAlertTiers tiers, all relative or all absolute, strictly ascending (strictly
  // descending when `below`). Empty: the engine uses DefaultAlertTiers() (which needs a latency
  // statistic and is not for `below` rules).
  std::vector<AlertTier> tiers;
  // Which side breaches: false, a value above a tier's threshold (`above:` in YAML); true, a
  // value below it (`below:`), e.g. a rate that dropped: `stat: rate, below: 1`. A missing
  // value breaches neither way.
  bool below = false;
  DebounceOptions debounce;
  // Threshold changes while schedules are active.
  std::vector<ScheduleOverride> schedules;
  // Extra labels on its alerts (not "alertname" or "severity"); they win over series labels.
  Labels labels;
  // Free text carried on its notifications, e.g. {"summary", "..."}.
  Labels annotations;
};

// How alerts are grouped into notifications for one receiver (Alertmanager's route).
struct RouteOptions {
  // Alert labels whose values make the group; "alertname" and "severity" are labels too. {"..."}
  // groups by every label (one group per alert). Default {"alertname"}.
  std::vector<std::string> group_by = {"alertname"};
  // How long a new group waits before its first notification, gathering alerts. >= 0. Default
  // 30 s.
  Duration group_wait = std::chrono::seconds(30);
  // How often a group is looked at after its first notification; a change (alert added,
  // resolved, re-tiered) is notified then. > 0. Default 5 min.
  Duration group_interval = std::chrono::minutes(5);
  // How long an unchanged firing group waits before it is notified again. > 0. Default 4 h.
  Duration repeat_interval = std::chrono::hours(4);
};

// Where a receiver's notifications are delivered (src/alert/notify, docs/notifications.md). A
// receiver without a target (kNone) has its notifications recorded in the event store only.
struct ReceiverTarget {
  enum class Kind : uint8_t {
    kNone,
    kWeCom,     // WeCom group robot webhook: a markdown message of at most 4096 bytes
    kWebhook,   // generic JSON webhook (Alertmanager's webhook payload shape)
    kTemplate,  // an HTTP request whose body is a template filled with alert fields (SMS, phone)
    kAlertmanager,  // Prometheus Alertmanager API v2: POST {url}/api/v2/alerts
  };
  Kind kind = Kind::kNone;
  // http:// or https://. kAlertmanager: the base URL, e.g. http://127.0.0.1:9093.
  std::string url;
  // Extra request headers, e.g. Authorization. Their values are never logged.
  Labels headers;
  // kTemplate: the method (POST, PUT or GET), the body template and its content type.
  std::string method = "POST";
  std::string body_template;
  std::string content_type = "application/json";
  // kWeCom: mobile numbers to @-mention ("@all" for everyone).
  std::vector<std::string> mentioned_mobile_list;
  // Deliver the resolved messages too. Default true.
  bool send_resolved = true;
  // One delivery attempt's limit. Default 10 s.
  Duration timeout = std::chrono::seconds(10);
  // At most this many messages per minute to this receiver; 0 is unlimited. Messages over the
  // limit wait in the outbox, they are not dropped.
  double rate_per_minute = 0;
};

// One receiver: its name, its grouping (overriding AlertConfig::route for the alerts its name
// gets through rule tiers or route.receiver) and where its messages go.
struct ReceiverOptions {
  std::string name;
  RouteOptions route;
  ReceiverTarget target;
};

// The most levels of nested routes below the root.
inline constexpr int kMaxRouteDepth = 16;

// A node of the route tree under the root route (Alertmanager's `routes:`). Matched against an
// alert's labels (series labels, rule labels, "alertname", "severity"; "__name__" is the series'
// metric): the root's children are tried in order; a matching node tries its own children the
// same way, and when none matches, the node itself is a match. Matching stops at the first
// matching sibling unless that one has `continue_matching`. An alert goes to the receivers of
// every matched node, in addition to the receivers its tiers name.
struct RouteNode {
  // All must match; empty matches every alert.
  std::vector<LabelMatcher> matchers;
  // "" inherits the parent node's receiver; a top-level node without one has none (it can still
  // mute and stop sibling matching).
  std::string receiver;
  // Unset fields inherit the parent node's (the root's: AlertConfig::route). They group this
  // node's alerts; the receiver's own options (ReceiverOptions::route) do not apply here.
  std::optional<std::vector<std::string>> group_by;
  std::optional<Duration> group_wait;
  std::optional<Duration> group_interval;
  std::optional<Duration> repeat_interval;
  // Schedule names. While one is active, the alerts this node matches are muted for this node's
  // receiver and for the receivers of their tiers. Unset inherits the parent's; {} clears it.
  std::optional<std::vector<std::string>> mute_during;
  // Keep trying the next siblings after this node matched (YAML `continue`). Default false.
  bool continue_matching = false;
  // Child nodes, at most kMaxRouteDepth levels deep.
  std::vector<RouteNode> routes;
};

// Alertmanager's inhibition: a firing alert that matches `target_matchers` is muted while
// another firing alert matches `source_matchers` with the same value of every label in `equal`
// (an absent label is ""). An alert that matches both sides is not muted by alerts that also
// match both.
struct InhibitRule {
  std::vector<LabelMatcher> source_matchers;  // not empty
  std::vector<LabelMatcher> target_matchers;  // not empty
  // Label names; "__series__" compares the canonical series keys.
  std::vector<std::string> equal;
};

// The default inhibition: an emergency mutes the warnings of the same series
// (severity="emergency" over severity="warning", equal [__series__]).
std::vector<InhibitRule> DefaultInhibitRules();

// A whole rule file.
struct AlertConfig {
  // IANA time zone the schedules are read in, e.g. "Asia/Shanghai". Default "UTC".
  std::string time_zone = "UTC";
  // The root route's receiver: gets alerts whose tiers name no receiver and whose matched
  // routes have none. "" drops them. Default "default".
  std::string default_receiver = "default";
  // A series that has not been observed for this long while one of its rules is in PreAlert or
  // Alert is evaluated as missing (every statistic NaN) at each Advance() or Observe(): its
  // alerts go to no data (AlertEventKind::kNoData) instead of showing a stale value. 0
  // disables. Default 5 min.
  Duration stale_after = std::chrono::minutes(5);
  // Grouping for every receiver not listed in `receivers`, and the root of the route tree.
  RouteOptions route;
  // The children of the root route (`route.routes` in YAML). See RouteNode.
  std::vector<RouteNode> routes;
  // Per-receiver grouping and delivery targets. When not empty, every receiver a rule or a
  // route names (and default_receiver, if used and not "") must be listed here.
  std::vector<ReceiverOptions> receivers;
  // At most kMaxSchedules. When several are active at once, the last one in this list that
  // applies to a rule wins.
  std::vector<Schedule> schedules;
  // Schedule names during which every notification is muted (maintenance windows).
  std::vector<std::string> maintenance;
  // Default DefaultInhibitRules(); empty disables inhibition.
  std::vector<InhibitRule> inhibit_rules = DefaultInhibitRules();
  std::vector<AlertRule> rules;
};

// Parses a rule file's text. `file_name` only prefixes messages. Fills defaults (see
// docs/alerting.md) and validates: the result passes ValidateAlertConfig(). Every error is
// InvalidArgument "file:line: field.path: what was expected", e.g.
// `rules.yaml:12: rules[2].tiers[0].above: expected a percentage like "+10%", ...`.
absl::StatusOr<AlertConfig> ParseAlertConfig(std::string_view yaml,
                                             std::string_view file_name = "<rules>");
// Reads and parses the file at `path`. NotFound when it cannot be read; otherwise as
// ParseAlertConfig() with `path` as the file name.
absl::StatusOr<AlertConfig> LoadAlertConfig(const std::string& path);
// Checks a configuration built in code. InvalidArgument "field.path: problem"; OK otherwise.
absl::Status ValidateAlertConfig(const AlertConfig& config);

// ---------------------------------------------------------------------------------------------
// Output: events and notifications.

enum class AlertState : uint8_t { kNormal, kPreAlert, kAlert };
// "normal", "pre_alert", "alert".
std::string_view AlertStateName(AlertState s);

enum class AlertEventKind : uint8_t {
  kPreAlert,    // Normal -> PreAlert
  kCancel,      // PreAlert -> Normal: the breach stopped before it was confirmed
  kFire,        // PreAlert -> Alert
  kResolve,     // Alert -> Normal
  kEscalate,    // same state, higher tier
  kDeescalate,  // same state, lower tier
  // Same state and tier: the statistic went missing (no requests in the window, or no baseline
  // for a relative threshold) while in PreAlert or Alert. No data is not a recovery: the
  // machine holds until data comes back, and only clean data seen after the gap resolves it.
  kNoData,
};
// "pre_alert", "cancel", "fire", "resolve", "escalate", "deescalate", "no_data".
std::string_view AlertEventKindName(AlertEventKind k);

// One transition of one (rule, series) state machine.
struct AlertEvent {
  WallTime time{};  // the observation that caused it
  AlertEventKind kind = AlertEventKind::kPreAlert;
  AlertState from_state = AlertState::kNormal;
  AlertState to_state = AlertState::kNormal;
  int from_tier = -1;  // -1 in Normal
  int to_tier = -1;
  std::string rule;
  std::string series;  // canonical key: metric{a="x",b="y"}, labels sorted by name
  std::string metric;
  Labels labels;  // the series' labels, sorted by name
  Statistic stat = Statistic::kP99;
  // What the series measures: value, threshold and baseline of a percentile are in it (seconds
  // for a latency).
  Unit unit = Unit::kNanoseconds;
  // The tier the event is about: to_tier, or from_tier when going to Normal.
  std::string severity;
  double value = 0;         // the statistic at this evaluation (NaN when missing)
  double threshold = 0;     // that tier's threshold at this evaluation (NaN: baseline unknown)
  double baseline_p99 = 0;  // from the observation
  WallTime breach_start{};  // first evaluation of the breach this machine is tracking
  std::string schedule;     // the schedule whose thresholds applied; "" for the rule's own
  // When to_state is kAlert: the actions of tiers 0..to_tier (to start); otherwise empty.
  std::vector<std::string> actions;
};

enum class NotifyStatus : uint8_t { kFiring, kResolved };
// "firing", "resolved".
std::string_view NotifyStatusName(NotifyStatus s);

// One alert inside a notification.
struct NotifiedAlert {
  std::string rule;
  std::string series;  // canonical series key
  // Series labels, then the rule's labels, "alertname" and "severity"; sorted by name.
  Labels labels;
  Labels annotations;
  NotifyStatus status = NotifyStatus::kFiring;
  Statistic stat = Statistic::kP99;  // the statistic the rule watches
  Unit unit = Unit::kNanoseconds;    // the series' (AlertEvent::unit)
  int tier = 0;
  std::string severity;
  double value = 0;  // latest evaluation (firing) or the one that resolved it
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime starts_at{};  // when it fired
  WallTime ends_at{};    // when it resolved or left this receiver; {} while firing
};

// One message for one receiver about one group.
struct Notification {
  WallTime time{};  // when it was due (group_wait / group_interval after the group's start)
  std::string receiver;
  // The route node whose group this is, e.g. "route.routes[1].routes[0]"; "" for the groups of
  // the receivers named by rule tiers or route.receiver.
  std::string route;
  std::string group_key;  // the group_by labels: {alertname="x",model="y"}
  Labels group_labels;    // the same, as pairs, in group_by order
  // kFiring while any alert of the group fires; kResolved for the group's last message.
  NotifyStatus status = NotifyStatus::kFiring;
  // Firing alerts first (oldest first), then those resolved since the previous message.
  std::vector<NotifiedAlert> alerts;
  uint64_t sequence = 0;  // 1, 2, ... within the group
  bool repeat = false;    // nothing changed; sent because repeat_interval passed
  // Stable across re-deliveries and engine restarts (SaveState): receiver, route node (when
  // not ""), group key, group start, sequence.
  std::string idempotency_key;
};

// An alert that became muted: its notifications are held back while the reason lasts.
struct MutedAlert {
  WallTime time{};  // the group flush that found it muted
  std::string rule;
  std::string series;  // canonical series key
  Labels labels;       // the alert's labels, as NotifiedAlert::labels
  // "silence", "inhibit" or "maintenance".
  std::string reason;
  // maintenance: the active schedule; inhibit: the muting alert, "rule series"; silence: "".
  std::string detail;
};

// Where the engine reports. Called synchronously on the thread that calls the engine, in time
// order; an implementation must not call back into the engine.
class AlertSink {
 public:
  virtual ~AlertSink() = default;
  virtual void OnEvent(const AlertEvent& event) = 0;
  virtual void OnNotification(const Notification& notification) = 0;
  // Once per (alert, reason) when a group flush finds a firing alert muted for that reason and
  // the previous flush that looked at the alert did not. Muted alerts are left out of
  // notifications.
  virtual void OnMuted(const MutedAlert& muted) {}
};

// Decides whether an alert is silenced at a time (silences live in the event store).
class AlertMuter {
 public:
  virtual ~AlertMuter() = default;
  // `labels`: the alert's labels (sorted by name, including alertname and severity).
  // Thread: the engine's.
  virtual bool Silenced(LabelSpan labels, WallTime t) const = 0;
};

// Keeps everything it is given, for tests and offline replay.
// Not thread-safe; the caller synchronises.
class CollectingAlertSink final : public AlertSink {
 public:
  // AlertSink
  void OnEvent(const AlertEvent& event) override { events.push_back(event); }
  void OnNotification(const Notification& n) override { notifications.push_back(n); }
  void OnMuted(const MutedAlert& m) override { muted.push_back(m); }

  void Clear() {
    events.clear();
    notifications.clear();
    muted.clear();
  }

  std::vector<AlertEvent> events;
  std::vector<Notification> notifications;
  std::vector<MutedAlert> muted;
};

// ---------------------------------------------------------------------------------------------
// The engine.

// A (rule, series) that is not Normal.
struct ActiveAlert {
  std::string rule;
  std::string series;
  AlertState state = AlertState::kNormal;
  int tier = -1;
  std::string severity;
  WallTime since{};  // when it entered `state`
  double value = 0;  // latest evaluation, in the unit of `stat` (and of the series: `unit`)
  double threshold = 0;
  Statistic stat = Statistic::kP99;  // the statistic the rule watches
  // True while the statistic is missing (see AlertEventKind::kNoData): the alert holds, shown
  // as "no data", not resolved.
  bool no_data = false;
  Unit unit = Unit::kNanoseconds;  // the series' (AlertEvent::unit)
};

// Counters; all only grow.
struct AlertEngineStats {
  uint64_t observations = 0;  // Observe() calls
  uint64_t out_of_order = 0;  // observations dropped: not newer than the series' previous one
  uint64_t evaluations = 0;   // (rule, series) evaluations
  uint64_t series = 0;        // distinct series seen
  uint64_t events = 0;
  uint64_t notifications = 0;
  // Alerts that became muted (AlertSink::OnMuted), by reason.
  uint64_t muted_silence = 0;
  uint64_t muted_inhibit = 0;
  uint64_t muted_maintenance = 0;
};

// Evaluates rules against observations and reports events and notifications to a sink.
//
// The state machine, one per (rule, series), driven by each evaluation's highest breached tier
// (-1 when the statistic is NaN or at or below every threshold; at or above every one for a
// `below` rule):
//
//   Normal   -> PreAlert  after pre_alert_after consecutive breaching evaluations (default 3);
//   PreAlert -> Alert     once the breach has lasted alert_after since its first breaching
//                         evaluation (default 30 s);
//   PreAlert -> Normal    at the first evaluation that does not breach;
//   Alert    -> Normal    after resolve_after continuously not breaching (default 1 min).
//
// No data: out of Normal, an evaluation whose statistic (or whose relative threshold's
// baseline) is missing does not step the machine; the first of a gap is a kNoData event, and
// when data comes back only clean time after the gap counts toward resolve_after and
// deescalate_after. An outage that stops every request never resolves an alert.
//
// Tiers: PreAlert starts at the highest tier breached in each of the last pre_alert_after
// evaluations. In PreAlert and Alert the machine escalates to a higher tier after
// escalate_after consecutive evaluations above it, and de-escalates once the current tier has
// not been breached for deescalate_after (to the highest tier breached within that time, never
// below tier 0 while alerting). Every change of state or tier is one AlertEvent.
//
// Routing: an alert (a (rule, series) in Alert) joins one group per receiver of its tiers
// 0..tier (with that receiver's grouping) and one per matched route node that has a receiver
// (with the node's grouping; a receiver reached both ways is grouped by the node), keyed by the
// group_by labels; when there is none, route.receiver gets it. Routes are matched again when the
// alert's tier changes.
//
// Grouping: a new group is flushed group_wait after it starts, then every group_interval. A
// flush leaves out the muted alerts (silenced by the AlertMuter, inhibited, or in a maintenance
// window) and notifies when the visible alerts (and their tiers) differ from what the group's
// last message showed, or when an alert it showed has resolved, or when repeat_interval has
// passed since its last message and alerts are visible. An alert that resolves before a
// message showed it is never sent. A group whose alerts have all ended sends its last (resolved)
// message, if it has one to send, and disappears. Notifications due at time T go out from
// Advance(T), or from the first Observe() later than T.
//
// Cost: the first observation of a series matches it against every rule (regexes included) and
// allocates its state; later ones cost one hash lookup plus, per matching rule, a few compares.
// Events and notifications allocate. Series are never forgotten.
//
// Not thread-safe: one thread (the analysis loop or a replay) calls it.
class AlertEngine {
 public:
  // Validates `config` (ValidateAlertConfig) and loads its time zone from /usr/share/zoneinfo.
  // InvalidArgument for a bad configuration or an unknown time zone. `sink` must outlive the
  // engine, and so must `muter` when not null (null: nothing is silenced).
  static absl::StatusOr<std::unique_ptr<AlertEngine>> Create(AlertConfig config, AlertSink& sink,
                                                             const AlertMuter* muter = nullptr);

  virtual ~AlertEngine() = default;

  // Sends the notifications due before `obs.time`, then evaluates every rule that selects the
  // series. An observation not newer than the previous one of the same series is dropped (and
  // counted in stats().out_of_order). Different series may come in any order.
  virtual void Observe(const Observation& obs) = 0;

  // Evaluates series gone stale (see AlertConfig::stale_after) as missing at `now`, then sends
  // the notifications due at or before `now`, each stamped with the time it was due. A `now`
  // earlier than a previous one does nothing.
  virtual void Advance(WallTime now) = 0;

  // Every (rule, series) in PreAlert or Alert, ordered by rule then series key.
  virtual std::vector<ActiveAlert> ActiveAlerts() const = 0;

  // The state of `rule` on the series (metric, labels); kNormal if never evaluated.
  virtual AlertState StateOf(std::string_view rule, std::string_view metric,
                             LabelSpan labels) const = 0;

  virtual const AlertEngineStats& stats() const = 0;
  // The configuration in use, with defaults filled in (e.g. empty tiers replaced).
  virtual const AlertConfig& config() const = 0;

  // The whole mutable state (every (rule, series) machine that is not Normal or is counting a
  // breach, with its series' metric, labels and last times; every group with its alerts,
  // timing, sequence and last-shown set) as an opaque, versioned byte string. Stats are not
  // part of it.
  virtual std::string SaveState() const = 0;

  // Replaces the state with one from SaveState() of an engine with a possibly different
  // configuration: machines of rules that no longer exist, or whose series the rule no longer
  // selects, are dropped (their alerts show as resolved in the groups that showed them); groups
  // of receivers or route nodes that no longer exist are dropped; restored alerts are routed
  // again under this configuration. Route nodes are known by their position
  // ("route.routes[1]"), receivers by name. Emits no events and no notifications by itself:
  // the same observations then produce the same events and notifications, with the same
  // sequence numbers and idempotency keys, as an engine that never stopped.
  // InvalidArgument for a corrupt, truncated or unknown-version string; the engine is empty
  // then.
  virtual absl::Status RestoreState(std::string_view state) = 0;
};

}  // namespace tailguard

#endif  // TAILGUARD_ALERT_H_
