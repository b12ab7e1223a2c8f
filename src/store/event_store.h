// The embedded event store: alert episodes and their timeline, every notification with its
// delivery state (the outbox that makes delivery lose nothing), silences, annotations and the
// alert engine's saved state, in one SQLite file. The schema is in schema.cc and docs/store.md.
// It does not know the alert engine's types: it is given rows (alert/notify/store_rows.h makes
// them) and stores what it is given.
#ifndef TAILGUARD_STORE_EVENT_STORE_H_
#define TAILGUARD_STORE_EVENT_STORE_H_

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "store/sqlite.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::store {

// ---------------------------------------------------------------------------------------------
// Alerts: one row per episode of one (rule, series).

// Where an episode stands. kPreAlert and kAlert are active; the others have ended.
enum class EpisodeState : uint8_t {
  kPreAlert,
  kAlert,
  kResolved,   // ended by a resolve event
  kCancelled,  // ended by a cancel event: the breach stopped before it was confirmed
  kAbandoned,  // ended without an event from the engine (see EndActiveAlerts)
};
// "pre_alert", "alert", "resolved", "cancelled", "abandoned".
std::string_view EpisodeStateName(EpisodeState s);
// The inverse of EpisodeStateName(); nullopt for anything else.
std::optional<EpisodeState> ParseEpisodeState(std::string_view name);

// What a transition does to its episode.
enum class EpisodeChange : uint8_t {
  kStart,   // begins one (pre_alert)
  kUpdate,  // moves the active one: state, tier, evaluation (fire, escalate, deescalate)
  kNoData,  // the evaluation went missing: only the value changes (no_data)
  kEnd,     // ends the active one (cancel, resolve)
};

// One transition of one (rule, series), as RecordEvent() stores it.
struct TransitionRow {
  WallTime time{};
  EpisodeChange change = EpisodeChange::kStart;
  // The episode's state after it: kPreAlert or kAlert for kStart and kUpdate, kCancelled or
  // kResolved for kEnd; not used for kNoData.
  EpisodeState state = EpisodeState::kPreAlert;
  // The timeline's names of the transition ("pre_alert", "fire", ...) and of the states on each
  // side ("normal", "pre_alert", "alert").
  std::string kind;
  std::string from_state;
  std::string to_state;
  int from_tier = -1;  // -1 in normal
  int to_tier = -1;
  std::string rule;
  std::string series;  // canonical key: metric{a="x",b="y"}
  std::string metric;
  Labels labels;     // the series' labels, sorted by name
  std::string stat;  // the statistic's name: "p99", "rate", ...
  // What the series measures ("seconds", "bytes", "count"): the unit of a percentile's value,
  // threshold and baseline. Kept with the episode.
  std::string unit = "seconds";
  std::string severity;
  double value = 0;  // NaN when missing
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime breach_start{};           // the start of an episode the store missed; {}: `time`
  std::string schedule;              // the schedule whose thresholds applied
  std::vector<std::string> actions;  // into alert: the actions to start
};

struct AlertRow {
  int64_t id = 0;  // shown to users; never reused
  std::string rule;
  std::string series;  // canonical key: metric{a="x",b="y"}
  std::string metric;
  Labels labels;     // the series' labels, sorted by name
  std::string stat;  // the statistic's name, as it was given: "p99", "rate", ...
  std::string unit;  // the series' unit, as it was given ("seconds" for episodes before it)
  EpisodeState state = EpisodeState::kPreAlert;
  int tier = 0;  // the latest tier
  std::string severity;
  double value = 0;  // the latest evaluation; NaN when it was missing
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime started_at{};  // the pre_alert event
  std::optional<WallTime> fired_at;
  std::optional<WallTime> ended_at;
  WallTime updated_at{};  // the latest event
  std::string acked_by;   // "" until acknowledged
  std::optional<WallTime> acked_at;
  std::string ack_comment;
  std::optional<WallTime> archived_at;

  bool active() const { return !ended_at.has_value(); }
};

struct AlertQuery {
  // Only episodes in pre_alert or alert. Default false.
  bool active_only = false;
  // Also archived episodes. Default false.
  bool include_archived = false;
  // Only this rule; "" for every rule.
  std::string rule{};
  // Only episodes active at or after this time (still active, or ended at or after it).
  std::optional<WallTime> since{};
  // At most this many rows; <= 0 for all. Default 100.
  int limit = 100;
};

// What the timeline holds besides transitions.
enum class TimelineType : uint8_t {
  kTransition,  // a TransitionRow (RecordEvent)
  kAction,      // what became of an alert tier's action (RecordAction)
  kMuted,       // a notification not sent (RecordMuted)
  kAck,         // an acknowledgement (Ack)
};
// "transition", "action", "muted", "ack".
std::string_view TimelineTypeName(TimelineType t);

struct TimelineEntry {
  int64_t id = 0;
  WallTime time{};
  TimelineType type = TimelineType::kTransition;
  // kTransition: TransitionRow::kind (pre_alert, fire, ...); kAction: the action (degrade, ...);
  // kMuted: "muted"; kAck: "ack".
  std::string kind;
  int64_t alert_id = 0;  // the episode; 0 when there was none
  std::string rule;
  std::string series;
  // kTransition: the state of each side (normal, pre_alert, alert); kAction: to_state only;
  // otherwise "".
  std::string from_state;
  std::string to_state;
  int from_tier = -1;
  int to_tier = -1;
  std::string severity;
  double value = 0;  // NaN when missing or not applicable
  double threshold = 0;
  double baseline_p99 = 0;
  std::string schedule;              // the schedule whose thresholds applied
  std::vector<std::string> actions;  // kTransition into alert: the actions to start
  // kAction: the decision; kMuted: the reason; kAck: "who: comment".
  std::string detail;
};

struct Annotation {
  int64_t id = 0;
  int64_t alert_id = 0;
  WallTime time{};
  std::string kind;  // "root_cause", "note", ...
  std::string text;
};

// ---------------------------------------------------------------------------------------------
// Notifications and the outbox.

// One alert inside a notification, as Enqueue() stores it.
struct NotifiedAlertRow {
  std::string rule;
  std::string series;  // canonical series key
  Labels labels;       // the alert's labels, with alertname and severity
  Labels annotations;
  std::string status;  // "firing" / "resolved"
  int tier = 0;
  std::string severity;
  double value = 0;
  double threshold = 0;
  double baseline_p99 = 0;
  WallTime starts_at{};  // when it fired; {} when not known
  WallTime ends_at{};    // {} while firing
};

// One message for one receiver about one group, as Enqueue() stores it.
struct NotificationRow {
  WallTime time{};  // when it was due
  std::string receiver;
  std::string group_key;
  std::string status;     // "firing" / "resolved"
  uint64_t sequence = 0;  // 1, 2, ... within the group
  bool repeat = false;    // sent again because repeat_interval passed
  std::string idempotency_key;
  std::vector<NotifiedAlertRow> alerts;
};

// One notification's delivery: the request, rendered once at enqueue time so that a
// re-delivery after a restart sends the same bytes, and its outcome.
struct OutboxItem {
  int64_t id = 0;
  std::string idempotency_key;  // unique
  std::string receiver;
  std::string group_key;
  std::string status;   // "firing" / "resolved"
  std::string summary;  // one line for the CLI
  WallTime created{};   // when the notification was due
  // The request. Header values (and URLs) may hold secrets: they are stored as they are and
  // never put in error messages.
  std::string method;
  std::string url;  // "" for a receiver without a target
  Labels headers;   // names and values without CR or LF
  std::string body;
  enum class State : uint8_t {
    kPending,    // to be delivered at next_attempt
    kDelivered,  // delivered
    kFailed,     // given up
    kSkipped,    // no target: recorded only
  };
  State state = State::kPending;
  int attempts = 0;
  WallTime next_attempt{};
  std::string last_error;
  int last_http_status = 0;  // 0: no response
  WallTime delivered_at{};   // {} unless delivered
  WallTime failed_at{};      // {} unless given up
};
// "pending", "delivered", "failed", "skipped".
std::string_view OutboxStateName(OutboxItem::State s);
// The inverse of OutboxStateName(); nullopt for anything else.
std::optional<OutboxItem::State> ParseOutboxState(std::string_view name);

struct OutboxQuery {
  std::optional<OutboxItem::State> state{};  // nullopt: every state
  std::string receiver{};                    // "": every receiver
  int limit = 100;                           // <= 0 for all
};

struct OutboxCounts {
  int64_t pending = 0;
  int64_t delivered = 0;
  int64_t failed = 0;
  int64_t skipped = 0;
  int64_t total() const { return pending + delivered + failed + skipped; }
};

struct OutboxStats {
  OutboxCounts all;
  std::map<std::string, OutboxCounts> by_receiver;
  std::optional<WallTime> oldest_pending;  // the created time of the oldest pending item
};

// One notification about one alert, for GetAlert().
struct AlertNotification {
  OutboxItem outbox;   // the message and its delivery outcome
  std::string status;  // this alert's status in it: "firing" / "resolved"
  int tier = 0;
  std::string severity;
};

// Everything about one alert episode.
struct AlertDetail {
  AlertRow alert;
  std::vector<TimelineEntry> timeline;           // oldest first
  std::vector<AlertNotification> notifications;  // oldest first
  std::vector<Annotation> annotations;           // oldest first
};

// ---------------------------------------------------------------------------------------------
// Diagnoses.

struct DiagnosisCauseRow {
  int rank = 0;  // 1 first
  std::string series;
  std::string quadrant;  // QuadrantName()
  std::string kind;      // "cause", "symptom"
  double score = 0;
  double confidence = 0;
  double baseline_median = 0, baseline_q1 = 0, baseline_q3 = 0;
  double peak = 0;
  WallTime onset{};
  double explained = 0;  // NaN: not a stage of the alerted route
  std::string rationale;
  std::vector<std::pair<double, double>> points;  // (seconds from the alert, value)
};

struct ChangeRow {
  WallTime time{};
  std::string quadrant;
  std::string subject;
  std::string what;
};

// One diagnosis of one alert episode (analyze::Diagnosis as stored).
struct DiagnosisRow {
  int64_t id = 0;
  int64_t alert_id = 0;
  WallTime time{};
  std::string quadrant;
  std::string summary;
  std::string contention;
  std::vector<ChangeRow> changes;
  std::vector<std::string> symptoms;
  int64_t series_considered = 0;
  double seconds = 0;
  std::vector<DiagnosisCauseRow> causes;  // by rank
};

// ---------------------------------------------------------------------------------------------
// Silences.

struct Silence {
  int64_t id = 0;  // set by the store
  // A selector over alert labels (series labels, rule labels, alertname, severity), e.g.
  // {model="rank",severity=~"warning|critical"}, as text: the alert side checks and compiles it
  // (alert/notify/silences.h).
  std::string matchers{};
  WallTime starts_at{};      // inclusive
  WallTime ends_at{};        // exclusive; > starts_at when added
  std::string created_by{};  // not empty
  std::string comment{};     // not empty
  WallTime created_at{};     // {}: starts_at
};

// ---------------------------------------------------------------------------------------------
// The store.

// One SQLite file in WAL mode. Every method is one transaction: it happens completely or not at
// all, also across a process kill. Several processes may open the same file (the server's alert
// loop and delivery thread, the CLI): each sees the others' committed writes; writers wait for
// each other up to 5 s, then fail with Unavailable. Times are given by the caller: the store never
// reads a clock.
//
// Errors: NotFound for an unknown id; InvalidArgument for bad input; FailedPrecondition for an
// operation the row's state forbids; Unavailable, DataLoss, ResourceExhausted or Internal for
// SQLite errors, with the file name and SQLite's message. Messages never hold header values or
// URLs.
//
// Locking: one recursive mutex serialises the connection. RunInTransaction() holds it for the
// whole callback, so the callback's own calls (on the same thread) nest inside its transaction
// while other threads wait.
//
// Thread-safe.
class EventStore {
 public:
  // Opens (creating if needed) the store at `path` and migrates it to SchemaVersion().
  // FailedPrecondition when the file was created by a newer tailguard; NotFound when its
  // directory does not exist; DataLoss when it is not a SQLite database.
  static absl::StatusOr<std::unique_ptr<EventStore>> Open(const std::string& path);

  EventStore(const EventStore&) = delete;
  EventStore& operator=(const EventStore&) = delete;
  ~EventStore();

  const std::string& path() const { return path_; }

  // --- Alerts

  // Stores one transition in the timeline and applies it to its episode: kStart creates an
  // episode (ending, as abandoned, an active one of the same (rule, series) the store still
  // holds), kUpdate updates the active one (creating it if the store missed its start), kNoData
  // sets its value, kEnd ends it. InvalidArgument for a state that does not go with the change.
  absl::Status RecordEvent(const TransitionRow& e);

  // Ends every active episode as abandoned at `now` and returns how many. For a start of the
  // engine without its saved state: it will not end the episodes it no longer knows about.
  absl::StatusOr<int> EndActiveAlerts(WallTime now);

  // (rule, series key) of an alert.
  using ActiveKey = std::pair<std::string, std::string>;
  // Ends as abandoned at `now` every active episode whose (rule, series) is not in `keep`, and
  // returns how many. For a start of the engine with its saved state: the alerts the restored
  // engine dropped (a rule removed or changed) would otherwise stay active in the store.
  absl::StatusOr<int> EndActiveAlertsExcept(std::span<const ActiveKey> keep, WallTime now);

  // Episodes matching `q`, newest (by started_at) first.
  absl::StatusOr<std::vector<AlertRow>> ListAlerts(const AlertQuery& q);

  // One episode with its timeline, notifications and annotations. NotFound for an unknown id.
  absl::StatusOr<AlertDetail> GetAlert(int64_t id);

  // Acknowledges an episode (active or ended) and records it in the timeline. NotFound for an
  // unknown id; InvalidArgument when `by` is empty; FailedPrecondition when it was already
  // acknowledged.
  absl::Status Ack(int64_t id, std::string_view by, std::string_view comment, WallTime now);

  // Hides an ended episode from default listings. NotFound for an unknown id; FailedPrecondition
  // while it is active. Archiving an archived episode changes nothing.
  absl::Status Archive(int64_t id, WallTime now);

  // Archives every episode that ended before `cutoff`; returns how many.
  absl::StatusOr<int> ArchiveEndedBefore(WallTime cutoff, WallTime now);

  // Attaches a diagnosis to the active episode of (rule, series), or when none is active to
  // its latest one (an alert that ended in the same tick). Returns the episode's id; NotFound
  // when (rule, series) never alerted.
  absl::StatusOr<int64_t> RecordDiagnosis(std::string_view rule, std::string_view series,
                                          const DiagnosisRow& d);
  // The diagnoses of an episode, oldest first (one per fire and escalation). NotFound for an
  // unknown id; empty when it has none.
  absl::StatusOr<std::vector<DiagnosisRow>> ListDiagnoses(int64_t alert_id);

  // Attaches a note to an episode. NotFound for an unknown id; InvalidArgument when `kind` or
  // `text` is empty. Returns the annotation's id.
  absl::StatusOr<int64_t> Annotate(int64_t id, std::string_view kind, std::string_view text,
                                   WallTime now);
  // The same on the active episode of (rule, series); returns its alert id. NotFound when none
  // is active.
  absl::StatusOr<int64_t> AnnotateActive(std::string_view rule, std::string_view series,
                                         std::string_view kind, std::string_view text,
                                         WallTime now);

  // --- Timeline

  // Records what became of the action (e.g. "degrade") that the transition `cause` asked for.
  absl::Status RecordAction(WallTime t, std::string_view action, const TransitionRow& cause,
                            std::string_view decision);
  // Records that a notification about (rule, series) was not sent, and why (e.g. "silence 4").
  absl::Status RecordMuted(WallTime t, std::string_view rule, std::string_view series,
                           std::string_view reason);
  // Timeline entries at or after `since`, oldest first, at most `limit` (<= 0: all).
  absl::StatusOr<std::vector<TimelineEntry>> ListTimeline(WallTime since, int limit);

  // --- Notifications and the outbox

  // Stores `n` (its alerts linked to their episodes) and its delivery: when `item.url` is set,
  // an outbox item pending at n.time; otherwise one in state kSkipped; or, when `item.state` is
  // kFailed (a message that could not be rendered), one failed at n.time. From `item` come
  // summary, last_error (a note on a skipped or failed item), method (default "POST"), url,
  // headers and body; idempotency_key, receiver, group_key,
  // status and created default to n's when empty. Idempotent by idempotency key: a second call
  // with the same key changes nothing and returns the existing id with *inserted = false
  // (`inserted` may be null). InvalidArgument for an empty key or a header with CR or LF.
  absl::StatusOr<int64_t> Enqueue(const NotificationRow& n, const OutboxItem& item,
                                  bool* inserted = nullptr);

  // Pending items with next_attempt <= now, oldest (by created) first, at most `limit` (> 0),
  // leaving out the receivers in `skip` (those the caller is holding back: rate-limited or
  // down), so that they cannot fill the batch and starve the others.
  absl::StatusOr<std::vector<OutboxItem>> Due(WallTime now, int limit,
                                              std::span<const std::string> skip = {});
  // The earliest next_attempt of a pending item, leaving out the receivers in `skip`; nullopt
  // when none is pending.
  absl::StatusOr<std::optional<WallTime>> NextAttempt(std::span<const std::string> skip = {});

  // Outcome of one attempt on a pending item; each counts one attempt. NotFound for an unknown
  // id; FailedPrecondition when the item is not pending (e.g. another process delivered it).
  absl::Status MarkDelivered(int64_t id, WallTime at, int http_status);
  // Stays pending until `next_attempt`.
  absl::Status MarkRetry(int64_t id, WallTime next_attempt, int http_status,
                         std::string_view error);
  // Gives up: kFailed.
  absl::Status MarkFailed(int64_t id, WallTime at, int http_status, std::string_view error);

  // Items matching `q`, newest (by created) first.
  absl::StatusOr<std::vector<OutboxItem>> ListOutbox(const OutboxQuery& q);
  absl::StatusOr<OutboxStats> CountOutbox();

  // --- Silences

  // Stores `s`; returns its id. InvalidArgument when starts_at >= ends_at, or when created_by
  // or comment is empty. The matchers are stored as they are: notify::AddSilence()
  // (alert/notify/silences.h) checks them first.
  absl::StatusOr<int64_t> AddSilence(const Silence& s);
  // Silences not expired at `now` (ends_at > now, including those not started yet), or all of
  // them; newest first.
  absl::StatusOr<std::vector<Silence>> ListSilences(WallTime now, bool include_expired);
  // Ends a silence at `now`. NotFound for an unknown id; FailedPrecondition when it has expired.
  absl::Status ExpireSilence(int64_t id, WallTime now);

  // --- The alert engine's state

  // Replaces the saved state.
  absl::Status SaveEngineState(std::string_view blob, WallTime at);
  // The saved state; nullopt when none was saved.
  absl::StatusOr<std::optional<std::string>> LoadEngineState();

  // --- Transactions

  // Runs `fn` in one transaction: committed when it returns OK, rolled back (with everything
  // the store's methods wrote inside it) otherwise; returns fn's status or the commit's error.
  // `fn` may call this store's methods, on the calling thread only; other threads wait.
  absl::Status RunInTransaction(absl::FunctionRef<absl::Status()> fn);

 private:
  EventStore(Database db, std::string path);

  // Unlocked helpers; REQUIRES: mu_ held.
  absl::Status Migrate();
  absl::StatusOr<int64_t> ActiveAlertId(std::string_view rule, std::string_view series);
  absl::StatusOr<int64_t> InsertAlert(const TransitionRow& e, WallTime started_at);
  absl::StatusOr<std::optional<int64_t>> LinkAlert(const NotifiedAlertRow& a, WallTime at);
  absl::StatusOr<AlertRow> ReadAlertRow(int64_t id);
  absl::StatusOr<int64_t> InsertAnnotation(int64_t id, std::string_view kind, std::string_view text,
                                           WallTime now);
  absl::Status CheckPending(int64_t id);

  // Constant after construction.
  const std::string path_;

  // Serialises every use of db_; recursive so that RunInTransaction's callback may call the
  // public methods. (std::recursive_mutex has no thread-safety annotations: guarded by mu_.)
  std::recursive_mutex mu_;
  Database db_;  // guarded by mu_
};

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_EVENT_STORE_H_
