// The event store: alert episodes, timeline, outbox, silences and engine state over SQLite.
#include "store/event_store.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <utility>

#include "common/strings.h"
#include "store/label_text.h"
#include "store/schema.h"

namespace tailguard::store {

#define TG_STORE_CONCAT_INNER(a, b) a##b
#define TG_STORE_CONCAT(a, b) TG_STORE_CONCAT_INNER(a, b)
#define TG_RETURN_IF_ERROR(expr)              \
  do {                                        \
    if (absl::Status s_ = (expr); !s_.ok()) { \
      return s_;                              \
    }                                         \
  } while (0)
#define TG_ASSIGN_OR_RETURN_IMPL(tmp, lhs, expr) \
  auto tmp = (expr);                             \
  if (!tmp.ok()) return tmp.status();            \
  lhs = std::move(*tmp)
#define TG_ASSIGN_OR_RETURN(lhs, expr) \
  TG_ASSIGN_OR_RETURN_IMPL(TG_STORE_CONCAT(status_or_, __LINE__), lhs, expr)

// Label sets as Prometheus writes them: {a="x",b="y"} (metrics::FormatLabelSet).
std::string EncodeLabels(metrics::LabelPairs labels) { return metrics::FormatLabelSet(labels); }

absl::StatusOr<Labels> DecodeLabels(std::string_view text) {
  auto bad = [&] { return absl::DataLossError(Cat("malformed label set ", text)); };
  Labels out;
  size_t i = 0;
  if (text.empty() || text[i++] != '{') return bad();
  while (i < text.size() && text[i] != '}') {
    size_t eq = text.find("=\"", i);
    if (eq == std::string_view::npos) return bad();
    std::string name(text.substr(i, eq - i));
    i = eq + 2;
    std::string value;
    while (i < text.size() && text[i] != '"') {
      char c = text[i++];
      if (c == '\\' && i < text.size()) {
        char e = text[i++];
        c = e == 'n' ? '\n' : e;
      }
      value.push_back(c);
    }
    if (i >= text.size()) return bad();
    ++i;  // closing quote
    out.emplace_back(std::move(name), std::move(value));
    if (i < text.size() && text[i] == ',') ++i;
  }
  if (i + 1 != text.size()) return bad();
  return out;
}

namespace {

using Lock = std::lock_guard<std::recursive_mutex>;

int64_t Ns(WallTime t) { return t.time_since_epoch().count(); }
WallTime FromNs(int64_t ns) { return WallTime(Duration(ns)); }

std::optional<WallTime> OptTime(const Statement& st, int col) {
  if (st.ColumnIsNull(col)) return std::nullopt;
  return FromNs(st.ColumnInt64(col));
}

void BindOptTime(Statement& st, int idx, std::optional<WallTime> t) {
  if (t.has_value()) {
    st.Bind(idx, Ns(*t));
  } else {
    st.BindNull(idx);
  }
}

// ---------------------------------------------------------------------------------------------
// Encodings of the TEXT columns that hold lists (label sets: label_text.h).

// Headers as on the wire: "Name: value" lines.
std::string EncodeHeaders(const Labels& headers) {
  std::string out;
  for (const auto& [name, value] : headers) {
    out += name;
    out += ": ";
    out += value;
    out += '\n';
  }
  return out;
}

Labels DecodeHeaders(std::string_view text) {
  Labels out;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
    size_t colon = line.find(": ");
    if (colon == std::string_view::npos) {
      out.emplace_back(std::string(line), "");
    } else {
      out.emplace_back(std::string(line.substr(0, colon)), std::string(line.substr(colon + 2)));
    }
  }
  return out;
}

// Names only: values may be secrets.
absl::Status ValidateHeaders(const Labels& headers) {
  for (size_t i = 0; i < headers.size(); ++i) {
    const auto& [name, value] = headers[i];
    if (name.empty() || name.find_first_of(":\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          Cat("header ", i, ": the name must be non-empty, without ':', CR or LF"));
    }
    if (value.find_first_of("\r\n") != std::string::npos) {
      return absl::InvalidArgumentError(
          Cat("header ", name, ": the value must not contain CR or LF"));
    }
  }
  return absl::OkStatus();
}

std::string JoinActions(const std::vector<std::string>& actions) {
  std::string out;
  for (const std::string& a : actions) {
    if (!out.empty()) out += ',';
    out += a;
  }
  return out;
}

std::vector<std::string> SplitActions(std::string_view text) {
  std::vector<std::string> out;
  while (!text.empty()) {
    size_t comma = text.find(',');
    out.emplace_back(text.substr(0, comma));
    if (comma == std::string_view::npos) break;
    text = text.substr(comma + 1);
  }
  return out;
}

bool Blank(std::string_view s) {
  return std::all_of(s.begin(), s.end(), [](char c) { return c == ' ' || c == '\t'; });
}

// ---------------------------------------------------------------------------------------------
// Row readers. Each SELECT lists the columns of its reader, in order.

constexpr std::string_view kAlertColumns =
    "a.id, a.rule, a.series, a.metric, a.labels, a.stat, a.state, a.tier, a.severity, a.value, "
    "a.threshold, a.baseline_p99, a.started_at, a.fired_at, a.ended_at, a.updated_at, "
    "a.acked_by, a.acked_at, a.ack_comment, a.archived_at, a.unit";

absl::StatusOr<AlertRow> ReadAlert(const Statement& st) {
  AlertRow r;
  r.id = st.ColumnInt64(0);
  r.rule = st.ColumnText(1);
  r.series = st.ColumnText(2);
  r.metric = st.ColumnText(3);
  TG_ASSIGN_OR_RETURN(r.labels, DecodeLabels(st.ColumnText(4)));
  r.stat = st.ColumnText(5);
  std::optional<EpisodeState> state = ParseEpisodeState(st.ColumnText(6));
  if (!state.has_value()) return absl::DataLossError(Cat("alert ", r.id, ": unknown state"));
  r.state = *state;
  r.tier = static_cast<int>(st.ColumnInt64(7));
  r.severity = st.ColumnText(8);
  r.value = st.ColumnDouble(9);
  r.threshold = st.ColumnDouble(10);
  r.baseline_p99 = st.ColumnDouble(11);
  r.started_at = FromNs(st.ColumnInt64(12));
  r.fired_at = OptTime(st, 13);
  r.ended_at = OptTime(st, 14);
  r.updated_at = FromNs(st.ColumnInt64(15));
  r.acked_by = st.ColumnText(16);
  r.acked_at = OptTime(st, 17);
  r.ack_comment = st.ColumnText(18);
  r.archived_at = OptTime(st, 19);
  r.unit = st.ColumnText(20);
  return r;
}

constexpr std::string_view kEventColumns =
    "e.id, e.time, e.type, e.kind, e.alert_id, e.rule, e.series, e.from_state, e.to_state, "
    "e.from_tier, e.to_tier, e.severity, e.value, e.threshold, e.baseline_p99, e.schedule, "
    "e.actions, e.detail";

absl::StatusOr<TimelineEntry> ReadEvent(const Statement& st) {
  TimelineEntry t;
  t.id = st.ColumnInt64(0);
  t.time = FromNs(st.ColumnInt64(1));
  std::string type = st.ColumnText(2);
  if (type == "transition") {
    t.type = TimelineType::kTransition;
  } else if (type == "action") {
    t.type = TimelineType::kAction;
  } else if (type == "muted") {
    t.type = TimelineType::kMuted;
  } else if (type == "ack") {
    t.type = TimelineType::kAck;
  } else {
    return absl::DataLossError(Cat("event ", t.id, ": unknown type ", type));
  }
  t.kind = st.ColumnText(3);
  t.alert_id = st.ColumnInt64(4);  // NULL reads as 0
  t.rule = st.ColumnText(5);
  t.series = st.ColumnText(6);
  t.from_state = st.ColumnText(7);
  t.to_state = st.ColumnText(8);
  t.from_tier = static_cast<int>(st.ColumnInt64(9));
  t.to_tier = static_cast<int>(st.ColumnInt64(10));
  t.severity = st.ColumnText(11);
  t.value = st.ColumnDouble(12);
  t.threshold = st.ColumnDouble(13);
  t.baseline_p99 = st.ColumnDouble(14);
  t.schedule = st.ColumnText(15);
  t.actions = SplitActions(st.ColumnText(16));
  t.detail = st.ColumnText(17);
  return t;
}

constexpr std::string_view kOutboxColumns =
    "o.id, o.idempotency_key, o.receiver, o.group_key, o.status, o.summary, o.created_at, "
    "o.method, o.url, o.headers, o.body, o.state, o.attempts, o.next_attempt_at, o.last_error, "
    "o.last_http_status, o.delivered_at, o.failed_at";

absl::StatusOr<OutboxItem> ReadOutbox(const Statement& st) {
  OutboxItem o;
  o.id = st.ColumnInt64(0);
  o.idempotency_key = st.ColumnText(1);
  o.receiver = st.ColumnText(2);
  o.group_key = st.ColumnText(3);
  o.status = st.ColumnText(4);
  o.summary = st.ColumnText(5);
  o.created = FromNs(st.ColumnInt64(6));
  o.method = st.ColumnText(7);
  o.url = st.ColumnText(8);
  o.headers = DecodeHeaders(st.ColumnText(9));
  o.body = st.ColumnText(10);
  std::optional<OutboxItem::State> state = ParseOutboxState(st.ColumnText(11));
  if (!state.has_value()) return absl::DataLossError(Cat("outbox item ", o.id, ": unknown state"));
  o.state = *state;
  o.attempts = static_cast<int>(st.ColumnInt64(12));
  o.next_attempt = FromNs(st.ColumnInt64(13));
  o.last_error = st.ColumnText(14);
  o.last_http_status = static_cast<int>(st.ColumnInt64(15));
  o.delivered_at = OptTime(st, 16).value_or(WallTime{});
  o.failed_at = OptTime(st, 17).value_or(WallTime{});
  return o;
}

constexpr std::string_view kSilenceColumns =
    "id, matchers, starts_at, ends_at, created_by, comment, created_at";

absl::StatusOr<Silence> ReadSilence(const Statement& st) {
  Silence s;
  s.id = st.ColumnInt64(0);
  s.matchers = st.ColumnText(1);
  s.starts_at = FromNs(st.ColumnInt64(2));
  s.ends_at = FromNs(st.ColumnInt64(3));
  s.created_by = st.ColumnText(4);
  s.comment = st.ColumnText(5);
  s.created_at = FromNs(st.ColumnInt64(6));
  return s;
}

absl::StatusOr<Annotation> ReadAnnotation(const Statement& st) {
  return Annotation{st.ColumnInt64(0), st.ColumnInt64(1), FromNs(st.ColumnInt64(2)),
                    st.ColumnText(3), st.ColumnText(4)};
}

// Runs `st` and appends `read(st)` for each row to `out`.
template <typename T, typename Read>
absl::Status Collect(Statement& st, std::vector<T>& out, Read read) {
  while (true) {
    TG_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) return absl::OkStatus();
    TG_ASSIGN_OR_RETURN(T value, read(st));
    out.push_back(std::move(value));
  }
}

// The episode states a change may lead to (TransitionRow::state); kNoData leaves it as it is.
absl::Status CheckTransition(const TransitionRow& e) {
  const bool ok = e.change == EpisodeChange::kNoData ||
                  (e.change == EpisodeChange::kEnd
                       ? e.state == EpisodeState::kCancelled || e.state == EpisodeState::kResolved
                       : e.state == EpisodeState::kPreAlert || e.state == EpisodeState::kAlert);
  if (ok) return absl::OkStatus();
  return absl::InvalidArgumentError(Cat("transition ", e.kind, " of ", e.rule, " on ", e.series,
                                        ": its episode cannot be ", EpisodeStateName(e.state),
                                        " after it"));
}

}  // namespace

// ---------------------------------------------------------------------------------------------
// Names

std::string_view EpisodeStateName(EpisodeState s) {
  switch (s) {
    case EpisodeState::kPreAlert:
      return "pre_alert";
    case EpisodeState::kAlert:
      return "alert";
    case EpisodeState::kResolved:
      return "resolved";
    case EpisodeState::kCancelled:
      return "cancelled";
    case EpisodeState::kAbandoned:
      return "abandoned";
  }
  return "unknown";
}

std::optional<EpisodeState> ParseEpisodeState(std::string_view name) {
  for (EpisodeState s : {EpisodeState::kPreAlert, EpisodeState::kAlert, EpisodeState::kResolved,
                         EpisodeState::kCancelled, EpisodeState::kAbandoned}) {
    if (EpisodeStateName(s) == name) return s;
  }
  return std::nullopt;
}

std::string_view TimelineTypeName(TimelineType t) {
  switch (t) {
    case TimelineType::kTransition:
      return "transition";
    case TimelineType::kAction:
      return "action";
    case TimelineType::kMuted:
      return "muted";
    case TimelineType::kAck:
      return "ack";
  }
  return "unknown";
}

std::string_view OutboxStateName(OutboxItem::State s) {
  switch (s) {
    case OutboxItem::State::kPending:
      return "pending";
    case OutboxItem::State::kDelivered:
      return "delivered";
    case OutboxItem::State::kFailed:
      return "failed";
    case OutboxItem::State::kSkipped:
      return "skipped";
  }
  return "unknown";
}

std::optional<OutboxItem::State> ParseOutboxState(std::string_view name) {
  for (OutboxItem::State s : {OutboxItem::State::kPending, OutboxItem::State::kDelivered,
                              OutboxItem::State::kFailed, OutboxItem::State::kSkipped}) {
    if (OutboxStateName(s) == name) return s;
  }
  return std::nullopt;
}

// ---------------------------------------------------------------------------------------------
// EventStore: opening and migrating

EventStore::EventStore(Database db, std::string path)
    : path_(std::move(path)), db_(std::move(db)) {}

EventStore::~EventStore() = default;

absl::StatusOr<std::unique_ptr<EventStore>> EventStore::Open(const std::string& path) {
  TG_ASSIGN_OR_RETURN(Database db, Database::Open(path));
  std::unique_ptr<EventStore> store(new EventStore(std::move(db), path));
  Lock lock(store->mu_);
  TG_RETURN_IF_ERROR(store->Migrate());
  return store;
}

absl::Status EventStore::Migrate() { return store::Migrate(db_); }

// ---------------------------------------------------------------------------------------------
// Alerts

absl::StatusOr<int64_t> EventStore::ActiveAlertId(std::string_view rule, std::string_view series) {
  TG_ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("SELECT id FROM alerts WHERE rule = ?1 AND series = ?2 AND ended_at IS NULL"));
  st.Bind(1, rule).Bind(2, series);
  TG_ASSIGN_OR_RETURN(bool row, st.Step());
  return row ? st.ColumnInt64(0) : 0;
}

absl::StatusOr<int64_t> EventStore::InsertAlert(const TransitionRow& e, WallTime started_at) {
  const bool pre = e.state != EpisodeState::kAlert;
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("INSERT INTO alerts (rule, series, metric, labels, stat, state, "
                                  "tier, severity, value, threshold, baseline_p99, started_at, "
                                  "fired_at, updated_at, unit) "
                                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, "
                                  "?13, ?14, ?15)"));
  st.Bind(1, e.rule)
      .Bind(2, e.series)
      .Bind(3, e.metric)
      .Bind(4, EncodeLabels(e.labels))
      .Bind(5, e.stat)
      .Bind(6, EpisodeStateName(pre ? EpisodeState::kPreAlert : EpisodeState::kAlert))
      .Bind(7, std::max(e.to_tier, 0))
      .Bind(8, e.severity)
      .Bind(9, e.value)
      .Bind(10, e.threshold)
      .Bind(11, e.baseline_p99)
      .Bind(12, Ns(started_at))
      .Bind(14, Ns(e.time))
      .Bind(15, e.unit);
  BindOptTime(st, 13, pre ? std::nullopt : std::optional<WallTime>(e.time));
  TG_RETURN_IF_ERROR(st.Run());
  return db_.LastInsertRowId();
}

absl::Status EventStore::RecordEvent(const TransitionRow& e) {
  TG_RETURN_IF_ERROR(CheckTransition(e));
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(int64_t alert_id, ActiveAlertId(e.rule, e.series));
  switch (e.change) {
    case EpisodeChange::kStart: {
      if (alert_id != 0) {
        TG_ASSIGN_OR_RETURN(Statement end,
                            db_.Prepare("UPDATE alerts SET state = 'abandoned', ended_at = ?2, "
                                        "updated_at = ?2 WHERE id = ?1"));
        end.Bind(1, alert_id).Bind(2, Ns(e.time));
        TG_RETURN_IF_ERROR(end.Run());
      }
      TG_ASSIGN_OR_RETURN(alert_id, InsertAlert(e, e.time));
      break;
    }
    case EpisodeChange::kUpdate: {
      if (alert_id == 0) {
        // The store missed the episode's start (e.g. it was created after the engine's state).
        WallTime start = e.breach_start != WallTime{} ? e.breach_start : e.time;
        TG_ASSIGN_OR_RETURN(alert_id, InsertAlert(e, start));
      }
      const bool alert = e.state == EpisodeState::kAlert;
      TG_ASSIGN_OR_RETURN(
          Statement up,
          db_.Prepare("UPDATE alerts SET state = ?2, tier = ?3, severity = ?4, value = ?5, "
                      "threshold = ?6, baseline_p99 = ?7, fired_at = COALESCE(fired_at, ?8), "
                      "updated_at = ?9 WHERE id = ?1"));
      up.Bind(1, alert_id)
          .Bind(2, EpisodeStateName(alert ? EpisodeState::kAlert : EpisodeState::kPreAlert))
          .Bind(3, std::max(e.to_tier, 0))
          .Bind(4, e.severity)
          .Bind(5, e.value)
          .Bind(6, e.threshold)
          .Bind(7, e.baseline_p99)
          .Bind(9, Ns(e.time));
      BindOptTime(up, 8, alert ? std::optional<WallTime>(e.time) : std::nullopt);
      TG_RETURN_IF_ERROR(up.Run());
      break;
    }
    case EpisodeChange::kNoData: {
      // The episode goes on: no data is not its end. Its value is now unknown.
      if (alert_id == 0) break;
      TG_ASSIGN_OR_RETURN(
          Statement up, db_.Prepare("UPDATE alerts SET value = ?2, updated_at = ?3 WHERE id = ?1"));
      up.Bind(1, alert_id).Bind(2, e.value).Bind(3, Ns(e.time));
      TG_RETURN_IF_ERROR(up.Run());
      break;
    }
    case EpisodeChange::kEnd: {
      if (alert_id == 0) break;  // nothing to end; the transition is still recorded
      TG_ASSIGN_OR_RETURN(
          Statement end,
          db_.Prepare("UPDATE alerts SET state = ?2, value = ?3, threshold = ?4, "
                      "baseline_p99 = ?5, ended_at = ?6, updated_at = ?6 WHERE id = ?1"));
      end.Bind(1, alert_id)
          .Bind(2, EpisodeStateName(e.state))
          .Bind(3, e.value)
          .Bind(4, e.threshold)
          .Bind(5, e.baseline_p99)
          .Bind(6, Ns(e.time));
      TG_RETURN_IF_ERROR(end.Run());
      break;
    }
  }

  TG_ASSIGN_OR_RETURN(
      Statement ev,
      db_.Prepare("INSERT INTO events (time, type, kind, alert_id, rule, series, from_state, "
                  "to_state, from_tier, to_tier, severity, value, threshold, baseline_p99, "
                  "schedule, actions) VALUES (?1, 'transition', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                  "?10, ?11, ?12, ?13, ?14, ?15)"));
  ev.Bind(1, Ns(e.time))
      .Bind(2, e.kind)
      .Bind(4, e.rule)
      .Bind(5, e.series)
      .Bind(6, e.from_state)
      .Bind(7, e.to_state)
      .Bind(8, e.from_tier)
      .Bind(9, e.to_tier)
      .Bind(10, e.severity)
      .Bind(11, e.value)
      .Bind(12, e.threshold)
      .Bind(13, e.baseline_p99)
      .Bind(14, e.schedule)
      .Bind(15, JoinActions(e.actions));
  if (alert_id != 0) {
    ev.Bind(3, alert_id);
  } else {
    ev.BindNull(3);
  }
  TG_RETURN_IF_ERROR(ev.Run());
  return tx.Commit();
}

absl::StatusOr<int> EventStore::EndActiveAlerts(WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("UPDATE alerts SET state = 'abandoned', ended_at = ?1, "
                                  "updated_at = ?1 WHERE ended_at IS NULL"));
  st.Bind(1, Ns(now));
  TG_RETURN_IF_ERROR(st.Run());
  const int n = static_cast<int>(db_.Changes());
  TG_RETURN_IF_ERROR(tx.Commit());
  return n;
}

absl::StatusOr<int> EventStore::EndActiveAlertsExcept(std::span<const ActiveKey> keep,
                                                      WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement select,
                      db_.Prepare("SELECT id, rule, series FROM alerts WHERE ended_at IS NULL"));
  std::vector<int64_t> ended;
  for (;;) {
    TG_ASSIGN_OR_RETURN(bool row, select.Step());
    if (!row) break;
    const std::string rule = select.ColumnText(1), series = select.ColumnText(2);
    const bool kept = std::any_of(keep.begin(), keep.end(), [&](const ActiveKey& k) {
      return k.first == rule && k.second == series;
    });
    if (!kept) ended.push_back(select.ColumnInt64(0));
  }
  TG_ASSIGN_OR_RETURN(Statement update,
                      db_.Prepare("UPDATE alerts SET state = 'abandoned', ended_at = ?1, "
                                  "updated_at = ?1 WHERE id = ?2"));
  for (int64_t id : ended) {
    update.Reset();
    update.Bind(1, Ns(now)).Bind(2, id);
    TG_RETURN_IF_ERROR(update.Run());
  }
  TG_RETURN_IF_ERROR(tx.Commit());
  return static_cast<int>(ended.size());
}

absl::StatusOr<std::vector<AlertRow>> EventStore::ListAlerts(const AlertQuery& q) {
  std::string sql = Cat("SELECT ", kAlertColumns, " FROM alerts AS a WHERE 1");
  if (q.active_only) sql += " AND a.ended_at IS NULL";
  if (!q.include_archived) sql += " AND a.archived_at IS NULL";
  if (!q.rule.empty()) sql += " AND a.rule = ?1";
  if (q.since.has_value()) sql += " AND (a.ended_at IS NULL OR a.ended_at >= ?2)";
  sql += " ORDER BY a.started_at DESC, a.id DESC";
  if (q.limit > 0) sql += " LIMIT ?3";

  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare(sql));
  if (!q.rule.empty()) st.Bind(1, q.rule);
  if (q.since.has_value()) st.Bind(2, Ns(*q.since));
  if (q.limit > 0) st.Bind(3, q.limit);
  std::vector<AlertRow> out;
  TG_RETURN_IF_ERROR(Collect(st, out, ReadAlert));
  return out;
}

absl::StatusOr<AlertRow> EventStore::ReadAlertRow(int64_t id) {
  TG_ASSIGN_OR_RETURN(
      Statement st, db_.Prepare(Cat("SELECT ", kAlertColumns, " FROM alerts AS a WHERE id = ?1")));
  st.Bind(1, id);
  TG_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::NotFoundError(Cat("alert ", id, " not found"));
  return ReadAlert(st);
}

absl::StatusOr<AlertDetail> EventStore::GetAlert(int64_t id) {
  Lock lock(mu_);
  // One read transaction: a consistent snapshot across the four queries.
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_, Transaction::Mode::kDeferred));
  AlertDetail d;
  TG_ASSIGN_OR_RETURN(d.alert, ReadAlertRow(id));

  TG_ASSIGN_OR_RETURN(Statement ev, db_.Prepare(Cat("SELECT ", kEventColumns,
                                                    " FROM events AS e WHERE e.alert_id = ?1 "
                                                    "ORDER BY e.time, e.id")));
  ev.Bind(1, id);
  TG_RETURN_IF_ERROR(Collect(ev, d.timeline, ReadEvent));

  TG_ASSIGN_OR_RETURN(
      Statement no,
      db_.Prepare(Cat("SELECT ", kOutboxColumns,
                      ", oa.status, oa.tier, oa.severity FROM outbox_alerts AS oa "
                      "JOIN outbox AS o ON o.id = oa.outbox_id WHERE oa.alert_id = ?1 "
                      "ORDER BY o.created_at, o.id")));
  no.Bind(1, id);
  TG_RETURN_IF_ERROR(
      Collect(no, d.notifications, [](const Statement& st) -> absl::StatusOr<AlertNotification> {
        AlertNotification n;
        TG_ASSIGN_OR_RETURN(n.outbox, ReadOutbox(st));
        n.status = st.ColumnText(18);
        n.tier = static_cast<int>(st.ColumnInt64(19));
        n.severity = st.ColumnText(20);
        return n;
      }));

  TG_ASSIGN_OR_RETURN(Statement an,
                      db_.Prepare("SELECT id, alert_id, time, kind, text FROM annotations "
                                  "WHERE alert_id = ?1 ORDER BY time, id"));
  an.Bind(1, id);
  TG_RETURN_IF_ERROR(Collect(an, d.annotations, ReadAnnotation));
  TG_RETURN_IF_ERROR(tx.Commit());
  return d;
}

absl::Status EventStore::Ack(int64_t id, std::string_view by, std::string_view comment,
                             WallTime now) {
  if (Blank(by)) return absl::InvalidArgumentError("an acknowledgement needs a name (by)");
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(AlertRow a, ReadAlertRow(id));
  if (!a.acked_by.empty()) {
    return absl::FailedPreconditionError(
        Cat("alert ", id, " was already acknowledged by ", a.acked_by));
  }
  TG_ASSIGN_OR_RETURN(Statement up, db_.Prepare("UPDATE alerts SET acked_by = ?2, acked_at = ?3, "
                                                "ack_comment = ?4 WHERE id = ?1"));
  up.Bind(1, id).Bind(2, by).Bind(3, Ns(now)).Bind(4, comment);
  TG_RETURN_IF_ERROR(up.Run());
  TG_ASSIGN_OR_RETURN(
      Statement ev, db_.Prepare("INSERT INTO events (time, type, kind, alert_id, rule, series, "
                                "severity, detail) VALUES (?1, 'ack', 'ack', ?2, ?3, ?4, ?5, ?6)"));
  ev.Bind(1, Ns(now))
      .Bind(2, id)
      .Bind(3, a.rule)
      .Bind(4, a.series)
      .Bind(5, a.severity)
      .Bind(6, comment.empty() ? std::string(by) : Cat(by, ": ", comment));
  TG_RETURN_IF_ERROR(ev.Run());
  return tx.Commit();
}

absl::Status EventStore::Archive(int64_t id, WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(AlertRow a, ReadAlertRow(id));
  if (a.active()) {
    return absl::FailedPreconditionError(Cat("alert ", id, " is still active (",
                                             EpisodeStateName(a.state),
                                             "); only ended alerts can be archived"));
  }
  if (a.archived_at.has_value()) return tx.Commit();
  TG_ASSIGN_OR_RETURN(Statement up,
                      db_.Prepare("UPDATE alerts SET archived_at = ?2 WHERE id = ?1"));
  up.Bind(1, id).Bind(2, Ns(now));
  TG_RETURN_IF_ERROR(up.Run());
  return tx.Commit();
}

absl::StatusOr<int> EventStore::ArchiveEndedBefore(WallTime cutoff, WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement up,
                      db_.Prepare("UPDATE alerts SET archived_at = ?2 WHERE archived_at IS NULL "
                                  "AND ended_at IS NOT NULL AND ended_at < ?1"));
  up.Bind(1, Ns(cutoff)).Bind(2, Ns(now));
  TG_RETURN_IF_ERROR(up.Run());
  const int n = static_cast<int>(db_.Changes());
  TG_RETURN_IF_ERROR(tx.Commit());
  return n;
}

absl::StatusOr<int64_t> EventStore::InsertAnnotation(int64_t id, std::string_view kind,
                                                     std::string_view text, WallTime now) {
  if (Blank(kind)) return absl::InvalidArgumentError("an annotation needs a kind");
  if (Blank(text)) return absl::InvalidArgumentError("an annotation needs a text");
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare("INSERT INTO annotations (alert_id, time, kind, "
                                                "text) VALUES (?1, ?2, ?3, ?4)"));
  st.Bind(1, id).Bind(2, Ns(now)).Bind(3, kind).Bind(4, text);
  TG_RETURN_IF_ERROR(st.Run());
  return db_.LastInsertRowId();
}

namespace {

// One field of a line-and-tab encoded list: tabs and newlines become spaces.
std::string Field(std::string_view s) {
  std::string out(s);
  for (char& c : out) {
    if (c == '\t' || c == '\n' || c == '\r') c = ' ';
  }
  return out;
}

std::vector<std::string_view> SplitOn(std::string_view s, char sep) {
  std::vector<std::string_view> out;
  while (!s.empty()) {
    const size_t at = s.find(sep);
    out.push_back(s.substr(0, at));
    if (at == std::string_view::npos) break;
    s.remove_prefix(at + 1);
  }
  return out;
}

std::string EncodePoints(const std::vector<std::pair<double, double>>& points) {
  std::string out;
  char buf[64];
  for (const auto& [t, v] : points) {
    std::snprintf(buf, sizeof buf, "%s%.6g:%.9g", out.empty() ? "" : " ", t, v);
    out += buf;
  }
  return out;
}

std::vector<std::pair<double, double>> DecodePoints(std::string_view text) {
  std::vector<std::pair<double, double>> out;
  for (std::string_view p : SplitOn(text, ' ')) {
    const size_t colon = p.find(':');
    if (colon == std::string_view::npos) continue;
    out.emplace_back(std::strtod(std::string(p.substr(0, colon)).c_str(), nullptr),
                     std::strtod(std::string(p.substr(colon + 1)).c_str(), nullptr));
  }
  return out;
}

}  // namespace

absl::StatusOr<int64_t> EventStore::RecordDiagnosis(std::string_view rule, std::string_view series,
                                                    const DiagnosisRow& d) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement find, db_.Prepare("SELECT id FROM alerts WHERE rule = ?1 AND "
                                                  "series = ?2 ORDER BY ended_at IS NULL DESC, "
                                                  "id DESC LIMIT 1"));
  find.Bind(1, rule).Bind(2, series);
  TG_ASSIGN_OR_RETURN(bool found, find.Step());
  if (!found) return absl::NotFoundError(Cat("no alert of rule ", rule, " on ", series));
  const int64_t alert_id = find.ColumnInt64(0);
  std::string changes, symptoms;
  for (const ChangeRow& c : d.changes) {
    changes +=
        Cat(Ns(c.time), "\t", Field(c.quadrant), "\t", Field(c.subject), "\t", Field(c.what), "\n");
  }
  for (const std::string& k : d.symptoms) symptoms += Cat(Field(k), "\n");
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("INSERT INTO diagnoses (alert_id, time, quadrant, summary, "
                                  "contention, changes, symptoms, series_considered, seconds) "
                                  "VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9)"));
  st.Bind(1, alert_id)
      .Bind(2, Ns(d.time))
      .Bind(3, d.quadrant)
      .Bind(4, d.summary)
      .Bind(5, d.contention)
      .Bind(6, changes)
      .Bind(7, symptoms)
      .Bind(8, d.series_considered)
      .Bind(9, d.seconds);
  TG_RETURN_IF_ERROR(st.Run());
  const int64_t id = db_.LastInsertRowId();
  for (const DiagnosisCauseRow& c : d.causes) {
    TG_ASSIGN_OR_RETURN(
        Statement cs,
        db_.Prepare("INSERT INTO diagnosis_causes (diagnosis_id, rank, series, quadrant, kind, "
                    "score, confidence, baseline_median, baseline_q1, baseline_q3, peak, onset, "
                    "explained, rationale, points) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, "
                    "?10, ?11, ?12, ?13, ?14, ?15)"));
    cs.Bind(1, id)
        .Bind(2, c.rank)
        .Bind(3, c.series)
        .Bind(4, c.quadrant)
        .Bind(5, c.kind)
        .Bind(6, c.score)
        .Bind(7, c.confidence)
        .Bind(8, c.baseline_median)
        .Bind(9, c.baseline_q1)
        .Bind(10, c.baseline_q3)
        .Bind(11, c.peak)
        .Bind(12, Ns(c.onset))
        .Bind(13, c.explained)
        .Bind(14, c.rationale)
        .Bind(15, EncodePoints(c.points));
    TG_RETURN_IF_ERROR(cs.Run());
  }
  TG_RETURN_IF_ERROR(tx.Commit());
  return alert_id;
}

absl::StatusOr<std::vector<DiagnosisRow>> EventStore::ListDiagnoses(int64_t alert_id) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(AlertRow a, ReadAlertRow(alert_id));
  (void)a;
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("SELECT id, time, quadrant, summary, contention, changes, "
                                  "symptoms, series_considered, seconds FROM diagnoses WHERE "
                                  "alert_id = ?1 ORDER BY time, id"));
  st.Bind(1, alert_id);
  std::vector<DiagnosisRow> out;
  while (true) {
    TG_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    DiagnosisRow d;
    d.id = st.ColumnInt64(0);
    d.alert_id = alert_id;
    d.time = FromNs(st.ColumnInt64(1));
    d.quadrant = st.ColumnText(2);
    d.summary = st.ColumnText(3);
    d.contention = st.ColumnText(4);
    const std::string changes = st.ColumnText(5);
    for (std::string_view line : SplitOn(changes, '\n')) {
      std::vector<std::string_view> f = SplitOn(line, '\t');
      if (f.size() != 4) continue;
      d.changes.push_back({FromNs(std::strtoll(std::string(f[0]).c_str(), nullptr, 10)),
                           std::string(f[1]), std::string(f[2]), std::string(f[3])});
    }
    const std::string symptoms = st.ColumnText(6);
    for (std::string_view k : SplitOn(symptoms, '\n')) {
      if (!k.empty()) d.symptoms.emplace_back(k);
    }
    d.series_considered = st.ColumnInt64(7);
    d.seconds = st.ColumnDouble(8);
    out.push_back(std::move(d));
  }
  for (DiagnosisRow& d : out) {
    TG_ASSIGN_OR_RETURN(
        Statement cs,
        db_.Prepare("SELECT rank, series, quadrant, kind, score, confidence, baseline_median, "
                    "baseline_q1, baseline_q3, peak, onset, explained, rationale, points FROM "
                    "diagnosis_causes WHERE diagnosis_id = ?1 ORDER BY rank"));
    cs.Bind(1, d.id);
    while (true) {
      TG_ASSIGN_OR_RETURN(bool row, cs.Step());
      if (!row) break;
      DiagnosisCauseRow c;
      c.rank = static_cast<int>(cs.ColumnInt64(0));
      c.series = cs.ColumnText(1);
      c.quadrant = cs.ColumnText(2);
      c.kind = cs.ColumnText(3);
      c.score = cs.ColumnDouble(4);
      c.confidence = cs.ColumnDouble(5);
      c.baseline_median = cs.ColumnDouble(6);
      c.baseline_q1 = cs.ColumnDouble(7);
      c.baseline_q3 = cs.ColumnDouble(8);
      c.peak = cs.ColumnDouble(9);
      c.onset = FromNs(cs.ColumnInt64(10));
      c.explained = cs.ColumnDouble(11);
      c.rationale = cs.ColumnText(12);
      c.points = DecodePoints(cs.ColumnText(13));
      d.causes.push_back(std::move(c));
    }
  }
  return out;
}

absl::StatusOr<int64_t> EventStore::Annotate(int64_t id, std::string_view kind,
                                             std::string_view text, WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(AlertRow a, ReadAlertRow(id));
  (void)a;
  TG_ASSIGN_OR_RETURN(int64_t annotation, InsertAnnotation(id, kind, text, now));
  TG_RETURN_IF_ERROR(tx.Commit());
  return annotation;
}

absl::StatusOr<int64_t> EventStore::AnnotateActive(std::string_view rule, std::string_view series,
                                                   std::string_view kind, std::string_view text,
                                                   WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(int64_t id, ActiveAlertId(rule, series));
  if (id == 0) {
    return absl::NotFoundError(Cat("no active alert of rule ", rule, " on ", series));
  }
  TG_ASSIGN_OR_RETURN(int64_t annotation, InsertAnnotation(id, kind, text, now));
  (void)annotation;
  TG_RETURN_IF_ERROR(tx.Commit());
  return id;
}

// ---------------------------------------------------------------------------------------------
// Timeline

absl::Status EventStore::RecordAction(WallTime t, std::string_view action,
                                      const TransitionRow& cause, std::string_view decision) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(int64_t alert_id, ActiveAlertId(cause.rule, cause.series));
  TG_ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("INSERT INTO events (time, type, kind, alert_id, rule, series, to_state, "
                  "to_tier, severity, value, threshold, baseline_p99, schedule, detail) VALUES "
                  "(?1, 'action', ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)"));
  st.Bind(1, Ns(t))
      .Bind(2, action)
      .Bind(4, cause.rule)
      .Bind(5, cause.series)
      .Bind(6, cause.to_state)
      .Bind(7, cause.to_tier)
      .Bind(8, cause.severity)
      .Bind(9, cause.value)
      .Bind(10, cause.threshold)
      .Bind(11, cause.baseline_p99)
      .Bind(12, cause.schedule)
      .Bind(13, decision);
  if (alert_id != 0) {
    st.Bind(3, alert_id);
  } else {
    st.BindNull(3);
  }
  TG_RETURN_IF_ERROR(st.Run());
  return tx.Commit();
}

absl::Status EventStore::RecordMuted(WallTime t, std::string_view rule, std::string_view series,
                                     std::string_view reason) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(int64_t alert_id, ActiveAlertId(rule, series));
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("INSERT INTO events (time, type, kind, alert_id, rule, series, "
                                  "detail) VALUES (?1, 'muted', 'muted', ?2, ?3, ?4, ?5)"));
  st.Bind(1, Ns(t)).Bind(3, rule).Bind(4, series).Bind(5, reason);
  if (alert_id != 0) {
    st.Bind(2, alert_id);
  } else {
    st.BindNull(2);
  }
  TG_RETURN_IF_ERROR(st.Run());
  return tx.Commit();
}

absl::StatusOr<std::vector<TimelineEntry>> EventStore::ListTimeline(WallTime since, int limit) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare(Cat("SELECT ", kEventColumns,
                                      " FROM events AS e WHERE e.time >= ?1 ORDER BY e.time, e.id",
                                      limit > 0 ? " LIMIT ?2" : "")));
  st.Bind(1, Ns(since));
  if (limit > 0) st.Bind(2, limit);
  std::vector<TimelineEntry> out;
  TG_RETURN_IF_ERROR(Collect(st, out, ReadEvent));
  return out;
}

// ---------------------------------------------------------------------------------------------
// Notifications and the outbox

absl::StatusOr<std::optional<int64_t>> EventStore::LinkAlert(const NotifiedAlertRow& a,
                                                             WallTime at) {
  // The episode that fired at a.starts_at; else the active one; else the latest one begun by
  // the notification's time.
  struct Query {
    std::string_view sql;
    bool by_start;  // ?3 is a.starts_at; otherwise the notification's time (if used)
  };
  static constexpr Query kQueries[] = {
      {"SELECT id FROM alerts WHERE rule = ?1 AND series = ?2 AND fired_at = ?3 "
       "ORDER BY id DESC LIMIT 1",
       true},
      {"SELECT id FROM alerts WHERE rule = ?1 AND series = ?2 AND ended_at IS NULL", false},
      {"SELECT id FROM alerts WHERE rule = ?1 AND series = ?2 AND started_at <= ?3 "
       "ORDER BY started_at DESC, id DESC LIMIT 1",
       false},
  };
  for (const Query& q : kQueries) {
    if (q.by_start && a.starts_at == WallTime{}) continue;
    TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare(q.sql));
    st.Bind(1, a.rule).Bind(2, a.series);
    if (q.sql.find("?3") != std::string_view::npos) st.Bind(3, Ns(q.by_start ? a.starts_at : at));
    TG_ASSIGN_OR_RETURN(bool row, st.Step());
    if (row) return st.ColumnInt64(0);
  }
  return std::nullopt;
}

absl::StatusOr<int64_t> EventStore::Enqueue(const NotificationRow& n, const OutboxItem& item,
                                            bool* inserted) {
  if (inserted != nullptr) *inserted = false;
  const std::string& key = item.idempotency_key.empty() ? n.idempotency_key : item.idempotency_key;
  if (key.empty()) {
    return absl::InvalidArgumentError(
        Cat("notification to ", n.receiver, " has no idempotency key"));
  }
  TG_RETURN_IF_ERROR(ValidateHeaders(item.headers));
  const bool deliver = !item.url.empty();
  const WallTime created = item.created != WallTime{} ? item.created : n.time;

  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement find,
                      db_.Prepare("SELECT id FROM outbox WHERE idempotency_key = ?1"));
  find.Bind(1, key);
  TG_ASSIGN_OR_RETURN(bool found, find.Step());
  if (found) {
    const int64_t id = find.ColumnInt64(0);
    TG_RETURN_IF_ERROR(tx.Commit());
    return id;
  }

  TG_ASSIGN_OR_RETURN(
      Statement ins,
      db_.Prepare("INSERT INTO outbox (idempotency_key, receiver, group_key, status, sequence, "
                  "is_repeat, summary, created_at, method, url, headers, body, state, "
                  "next_attempt_at, last_error, failed_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, "
                  "?8, ?9, ?10, ?11, ?12, ?13, ?14, ?15, ?16)"));
  // A message that could not even be rendered is stored as failed at once, with the reason.
  const OutboxItem::State state =
      item.state == OutboxItem::State::kFailed
          ? OutboxItem::State::kFailed
          : (deliver ? OutboxItem::State::kPending : OutboxItem::State::kSkipped);
  ins.Bind(1, key)
      .Bind(2, item.receiver.empty() ? n.receiver : item.receiver)
      .Bind(3, item.group_key.empty() ? n.group_key : item.group_key)
      .Bind(4, item.status.empty() ? n.status : item.status)
      .Bind(5, n.sequence)
      .Bind(6, n.repeat ? 1 : 0)
      .Bind(7, item.summary)
      .Bind(8, Ns(created))
      .Bind(9, item.method.empty() ? std::string("POST") : item.method)
      .Bind(10, item.url)
      .Bind(11, EncodeHeaders(item.headers))
      .BindBlob(12, item.body)
      .Bind(13, OutboxStateName(state))
      .Bind(14, Ns(n.time))
      .Bind(15, item.last_error);
  if (state == OutboxItem::State::kFailed) {
    ins.Bind(16, Ns(n.time));
  } else {
    ins.BindNull(16);
  }
  TG_RETURN_IF_ERROR(ins.Run());
  const int64_t id = db_.LastInsertRowId();

  TG_ASSIGN_OR_RETURN(
      Statement link,
      db_.Prepare("INSERT INTO outbox_alerts (outbox_id, position, alert_id, rule, series, status, "
                  "tier, severity, value, threshold, baseline_p99, starts_at, ends_at, labels, "
                  "annotations) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13, "
                  "?14, ?15)"));
  for (size_t i = 0; i < n.alerts.size(); ++i) {
    const NotifiedAlertRow& a = n.alerts[i];
    TG_ASSIGN_OR_RETURN(std::optional<int64_t> alert_id, LinkAlert(a, n.time));
    link.Reset();
    link.Bind(1, id)
        .Bind(2, i)
        .Bind(4, a.rule)
        .Bind(5, a.series)
        .Bind(6, a.status)
        .Bind(7, a.tier)
        .Bind(8, a.severity)
        .Bind(9, a.value)
        .Bind(10, a.threshold)
        .Bind(11, a.baseline_p99)
        .Bind(12, Ns(a.starts_at))
        .Bind(14, EncodeLabels(a.labels))
        .Bind(15, EncodeLabels(a.annotations));
    if (alert_id.has_value()) {
      link.Bind(3, *alert_id);
    } else {
      link.BindNull(3);
    }
    BindOptTime(link, 13,
                a.ends_at != WallTime{} ? std::optional<WallTime>(a.ends_at) : std::nullopt);
    TG_RETURN_IF_ERROR(link.Run());
  }
  TG_RETURN_IF_ERROR(tx.Commit());
  if (inserted != nullptr) *inserted = true;
  return id;
}

namespace {

// " AND o.receiver NOT IN (?first, ...)" for `skip`, or "" when it is empty.
std::string NotIn(std::span<const std::string> skip, int first) {
  if (skip.empty()) return "";
  std::string sql = " AND o.receiver NOT IN (";
  for (size_t i = 0; i < skip.size(); ++i) {
    sql += Cat(i == 0 ? "" : ", ", "?", first + static_cast<int>(i));
  }
  return sql + ")";
}

}  // namespace

// Only the oldest pending message of its receiver and group: a later one (a "resolved" after
// its "firing") waits until that one is delivered or given up, whenever either is due. The
// order lives in the store, so a restart keeps it (issue 15: a newer "resolved" overtook its
// "firing" in backoff, and chat ended on FIRING).
constexpr std::string_view kHeadOfGroup =
    " AND NOT EXISTS (SELECT 1 FROM outbox AS p WHERE p.state = 'pending' AND "
    "p.receiver = o.receiver AND p.group_key = o.group_key AND "
    "(p.created_at < o.created_at OR (p.created_at = o.created_at AND p.id < o.id)))";

absl::StatusOr<std::vector<OutboxItem>> EventStore::Due(WallTime now, int limit,
                                                        std::span<const std::string> skip) {
  if (limit <= 0) return absl::InvalidArgumentError(Cat("Due: limit ", limit, " must be > 0"));
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare(Cat("SELECT ", kOutboxColumns,
                      " FROM outbox AS o WHERE o.state = 'pending' AND "
                      "o.next_attempt_at <= ?1",
                      NotIn(skip, 3), kHeadOfGroup, " ORDER BY o.created_at, o.id LIMIT ?2")));
  st.Bind(1, Ns(now)).Bind(2, limit);
  for (size_t i = 0; i < skip.size(); ++i) st.Bind(3 + static_cast<int>(i), skip[i]);
  std::vector<OutboxItem> out;
  TG_RETURN_IF_ERROR(Collect(st, out, ReadOutbox));
  return out;
}

absl::StatusOr<std::optional<WallTime>> EventStore::NextAttempt(std::span<const std::string> skip) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare(Cat("SELECT MIN(o.next_attempt_at) FROM outbox AS o WHERE "
                                      "o.state = 'pending'",
                                      NotIn(skip, 1), kHeadOfGroup)));
  for (size_t i = 0; i < skip.size(); ++i) st.Bind(1 + static_cast<int>(i), skip[i]);
  TG_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<WallTime>();
  return OptTime(st, 0);
}

absl::Status EventStore::CheckPending(int64_t id) {
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT state FROM outbox WHERE id = ?1"));
  st.Bind(1, id);
  TG_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::NotFoundError(Cat("outbox item ", id, " not found"));
  std::string state = st.ColumnText(0);
  if (state != "pending") {
    return absl::FailedPreconditionError(Cat("outbox item ", id, " is ", state, ", not pending"));
  }
  return absl::OkStatus();
}

absl::Status EventStore::MarkDelivered(int64_t id, WallTime at, int http_status) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_RETURN_IF_ERROR(CheckPending(id));
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("UPDATE outbox SET state = 'delivered', attempts = attempts + 1, "
                                  "delivered_at = ?2, last_http_status = ?3, last_error = '' "
                                  "WHERE id = ?1"));
  st.Bind(1, id).Bind(2, Ns(at)).Bind(3, http_status);
  TG_RETURN_IF_ERROR(st.Run());
  return tx.Commit();
}

absl::Status EventStore::MarkRetry(int64_t id, WallTime next_attempt, int http_status,
                                   std::string_view error) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_RETURN_IF_ERROR(CheckPending(id));
  TG_ASSIGN_OR_RETURN(
      Statement st, db_.Prepare("UPDATE outbox SET attempts = attempts + 1, next_attempt_at = ?2, "
                                "last_http_status = ?3, last_error = ?4 WHERE id = ?1"));
  st.Bind(1, id).Bind(2, Ns(next_attempt)).Bind(3, http_status).Bind(4, error);
  TG_RETURN_IF_ERROR(st.Run());
  return tx.Commit();
}

absl::Status EventStore::MarkFailed(int64_t id, WallTime at, int http_status,
                                    std::string_view error) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_RETURN_IF_ERROR(CheckPending(id));
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("UPDATE outbox SET state = 'failed', attempts = attempts + 1, "
                                  "failed_at = ?2, last_http_status = ?3, last_error = ?4 "
                                  "WHERE id = ?1"));
  st.Bind(1, id).Bind(2, Ns(at)).Bind(3, http_status).Bind(4, error);
  TG_RETURN_IF_ERROR(st.Run());
  return tx.Commit();
}

absl::StatusOr<std::vector<OutboxItem>> EventStore::ListOutbox(const OutboxQuery& q) {
  std::string sql = Cat("SELECT ", kOutboxColumns, " FROM outbox AS o WHERE 1");
  if (q.state.has_value()) sql += " AND o.state = ?1";
  if (!q.receiver.empty()) sql += " AND o.receiver = ?2";
  sql += " ORDER BY o.created_at DESC, o.id DESC";
  if (q.limit > 0) sql += " LIMIT ?3";
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare(sql));
  if (q.state.has_value()) st.Bind(1, OutboxStateName(*q.state));
  if (!q.receiver.empty()) st.Bind(2, q.receiver);
  if (q.limit > 0) st.Bind(3, q.limit);
  std::vector<OutboxItem> out;
  TG_RETURN_IF_ERROR(Collect(st, out, ReadOutbox));
  return out;
}

absl::StatusOr<OutboxStats> EventStore::CountOutbox() {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_, Transaction::Mode::kDeferred));
  OutboxStats stats;
  TG_ASSIGN_OR_RETURN(
      Statement st,
      db_.Prepare("SELECT receiver, state, COUNT(*) FROM outbox GROUP BY receiver, state"));
  while (true) {
    TG_ASSIGN_OR_RETURN(bool row, st.Step());
    if (!row) break;
    OutboxCounts& r = stats.by_receiver[st.ColumnText(0)];
    std::optional<OutboxItem::State> state = ParseOutboxState(st.ColumnText(1));
    const int64_t count = st.ColumnInt64(2);
    if (!state.has_value()) continue;
    int64_t OutboxCounts::*field = &OutboxCounts::pending;
    switch (*state) {
      case OutboxItem::State::kPending:
        field = &OutboxCounts::pending;
        break;
      case OutboxItem::State::kDelivered:
        field = &OutboxCounts::delivered;
        break;
      case OutboxItem::State::kFailed:
        field = &OutboxCounts::failed;
        break;
      case OutboxItem::State::kSkipped:
        field = &OutboxCounts::skipped;
        break;
    }
    r.*field += count;
    stats.all.*field += count;
  }
  TG_ASSIGN_OR_RETURN(Statement oldest,
                      db_.Prepare("SELECT MIN(created_at) FROM outbox WHERE state = 'pending'"));
  TG_ASSIGN_OR_RETURN(bool row, oldest.Step());
  if (row) stats.oldest_pending = OptTime(oldest, 0);
  TG_RETURN_IF_ERROR(tx.Commit());
  return stats;
}

// ---------------------------------------------------------------------------------------------
// Silences

absl::StatusOr<int64_t> EventStore::AddSilence(const Silence& s) {
  if (s.starts_at >= s.ends_at) {
    return absl::InvalidArgumentError("silence: starts_at must be before ends_at");
  }
  if (Blank(s.created_by)) return absl::InvalidArgumentError("silence: created_by is required");
  if (Blank(s.comment)) return absl::InvalidArgumentError("silence: comment is required");

  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("INSERT INTO silences (matchers, starts_at, ends_at, created_by, "
                                  "comment, created_at) VALUES (?1, ?2, ?3, ?4, ?5, ?6)"));
  st.Bind(1, s.matchers)
      .Bind(2, Ns(s.starts_at))
      .Bind(3, Ns(s.ends_at))
      .Bind(4, s.created_by)
      .Bind(5, s.comment)
      .Bind(6, Ns(s.created_at != WallTime{} ? s.created_at : s.starts_at));
  TG_RETURN_IF_ERROR(st.Run());
  const int64_t id = db_.LastInsertRowId();
  TG_RETURN_IF_ERROR(tx.Commit());
  return id;
}

absl::StatusOr<std::vector<Silence>> EventStore::ListSilences(WallTime now, bool include_expired) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare(Cat("SELECT ", kSilenceColumns, " FROM silences",
                                                    include_expired ? "" : " WHERE ends_at > ?1",
                                                    " ORDER BY id DESC")));
  if (!include_expired) st.Bind(1, Ns(now));
  std::vector<Silence> out;
  TG_RETURN_IF_ERROR(Collect(st, out, ReadSilence));
  return out;
}

absl::Status EventStore::ExpireSilence(int64_t id, WallTime now) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT ends_at FROM silences WHERE id = ?1"));
  st.Bind(1, id);
  TG_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return absl::NotFoundError(Cat("silence ", id, " not found"));
  if (FromNs(st.ColumnInt64(0)) <= now) {
    return absl::FailedPreconditionError(Cat("silence ", id, " has already expired"));
  }
  // A silence that has not started yet ends before it starts: both become `now`.
  TG_ASSIGN_OR_RETURN(Statement up, db_.Prepare("UPDATE silences SET ends_at = ?2, "
                                                "starts_at = MIN(starts_at, ?2) WHERE id = ?1"));
  up.Bind(1, id).Bind(2, Ns(now));
  TG_RETURN_IF_ERROR(up.Run());
  return tx.Commit();
}

// ---------------------------------------------------------------------------------------------
// Engine state and transactions

absl::Status EventStore::SaveEngineState(std::string_view blob, WallTime at) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_ASSIGN_OR_RETURN(Statement st,
                      db_.Prepare("INSERT INTO engine_state (id, saved_at, state) VALUES (1, ?1, "
                                  "?2) ON CONFLICT (id) DO UPDATE SET saved_at = "
                                  "excluded.saved_at, state = excluded.state"));
  st.Bind(1, Ns(at)).BindBlob(2, blob);
  TG_RETURN_IF_ERROR(st.Run());
  return tx.Commit();
}

absl::StatusOr<std::optional<std::string>> EventStore::LoadEngineState() {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Statement st, db_.Prepare("SELECT state FROM engine_state WHERE id = 1"));
  TG_ASSIGN_OR_RETURN(bool row, st.Step());
  if (!row) return std::optional<std::string>();
  return std::optional<std::string>(st.ColumnText(0));
}

absl::Status EventStore::RunInTransaction(absl::FunctionRef<absl::Status()> fn) {
  Lock lock(mu_);
  TG_ASSIGN_OR_RETURN(Transaction tx, Transaction::Begin(db_));
  TG_RETURN_IF_ERROR(fn());
  return tx.Commit();
}

}  // namespace tailguard::store
