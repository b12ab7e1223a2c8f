// The event store's schema, in one place. Times are INTEGER unix nanoseconds (UTC); a missing
// statistic (NaN) is NULL; label sets are text in Prometheus form, {a="x",b="y"}.
#include "store/schema.h"

#include <array>

#include "common/strings.h"

namespace tailguard::store {
namespace {

// Version 1: alert episodes, the timeline, and notifications with their delivery (the outbox).
constexpr std::string_view kV1 = R"sql(
-- One episode of one (rule, series): created by its pre_alert event, updated by fire, escalate
-- and deescalate, ended by cancel or resolve. `id` is the number users see and type.
CREATE TABLE alerts (
  id            INTEGER PRIMARY KEY,
  rule          TEXT    NOT NULL,
  series        TEXT    NOT NULL,  -- canonical key: metric{a="x",b="y"}, labels sorted
  metric        TEXT    NOT NULL,
  labels        TEXT    NOT NULL,  -- the series labels: {a="x",b="y"}
  stat          TEXT    NOT NULL,  -- the statistic the rule watches: p99, rate, ...
  -- pre_alert and alert are active; resolved, cancelled and abandoned (never ended by the
  -- engine, e.g. after a restart without its saved state) have ended.
  state         TEXT    NOT NULL
                CHECK (state IN ('pre_alert', 'alert', 'resolved', 'cancelled', 'abandoned')),
  tier          INTEGER NOT NULL,  -- the latest tier, 0-based
  severity      TEXT    NOT NULL,  -- that tier's severity
  value         REAL,              -- the latest evaluation's statistic
  threshold     REAL,              -- that tier's threshold at the latest evaluation
  baseline_p99  REAL,              -- seconds
  started_at    INTEGER NOT NULL,  -- the pre_alert event
  fired_at      INTEGER,           -- the fire event; NULL until it fires
  ended_at      INTEGER,           -- the cancel or resolve event; NULL while active
  updated_at    INTEGER NOT NULL,  -- the latest event
  acked_by      TEXT,
  acked_at      INTEGER,
  ack_comment   TEXT,
  archived_at   INTEGER            -- hidden from listings by default since then
);
-- At most one active episode per (rule, series), and the way to find it.
CREATE UNIQUE INDEX alerts_active ON alerts (rule, series) WHERE ended_at IS NULL;
CREATE INDEX alerts_by_state ON alerts (state, started_at);
CREATE INDEX alerts_by_start ON alerts (started_at);
CREATE INDEX alerts_by_end ON alerts (ended_at) WHERE archived_at IS NULL;

-- The timeline: alert transitions, actions taken, notifications muted, acknowledgements.
CREATE TABLE events (
  id            INTEGER PRIMARY KEY,
  time          INTEGER NOT NULL,
  type          TEXT    NOT NULL CHECK (type IN ('transition', 'action', 'muted', 'ack')),
  -- transition: pre_alert, cancel, fire, resolve, escalate, deescalate; action: the action's
  -- name (degrade, ...); muted: muted; ack: ack.
  kind          TEXT    NOT NULL,
  alert_id      INTEGER REFERENCES alerts (id),  -- the episode; NULL when there was none
  rule          TEXT    NOT NULL,
  series        TEXT    NOT NULL,
  from_state    TEXT    NOT NULL DEFAULT '',  -- normal, pre_alert, alert
  to_state      TEXT    NOT NULL DEFAULT '',
  from_tier     INTEGER NOT NULL DEFAULT -1,
  to_tier       INTEGER NOT NULL DEFAULT -1,
  severity      TEXT    NOT NULL DEFAULT '',
  value         REAL,
  threshold     REAL,
  baseline_p99  REAL,
  schedule      TEXT    NOT NULL DEFAULT '',  -- the schedule whose thresholds applied
  actions       TEXT    NOT NULL DEFAULT '',  -- actions to start, comma separated
  detail        TEXT    NOT NULL DEFAULT ''   -- action: the decision; muted: the reason;
                                              -- ack: "who: comment"
);
CREATE INDEX events_by_time ON events (time);
CREATE INDEX events_by_alert ON events (alert_id, time);

-- Every notification, stored before it is delivered (the outbox), and its delivery outcome.
CREATE TABLE outbox (
  id                INTEGER PRIMARY KEY,
  idempotency_key   TEXT    NOT NULL UNIQUE,  -- stable across re-deliveries
  receiver          TEXT    NOT NULL,
  group_key         TEXT    NOT NULL,  -- {alertname="x",model="y"}
  status            TEXT    NOT NULL,  -- firing, resolved
  sequence          INTEGER NOT NULL,  -- 1, 2, ... within the group
  is_repeat         INTEGER NOT NULL,  -- 1: unchanged, sent again after repeat_interval
  summary           TEXT    NOT NULL,  -- one line for the CLI
  created_at        INTEGER NOT NULL,  -- when the notification was due
  -- The request, rendered once so that every attempt sends the same bytes.
  method            TEXT    NOT NULL,
  url               TEXT    NOT NULL,  -- '' for a receiver without a target
  headers           TEXT    NOT NULL,  -- "Name: value" lines; values may be secrets
  body              BLOB    NOT NULL,
  -- pending: to deliver at next_attempt_at; delivered; failed: given up; skipped: no target.
  state             TEXT    NOT NULL
                    CHECK (state IN ('pending', 'delivered', 'failed', 'skipped')),
  attempts          INTEGER NOT NULL DEFAULT 0,
  next_attempt_at   INTEGER NOT NULL,
  last_error        TEXT    NOT NULL DEFAULT '',
  last_http_status  INTEGER NOT NULL DEFAULT 0,  -- 0: no response
  delivered_at      INTEGER,
  failed_at         INTEGER
);
CREATE INDEX outbox_due ON outbox (state, next_attempt_at);
CREATE INDEX outbox_by_created ON outbox (created_at);

-- The alerts inside each notification, linked to their episodes.
CREATE TABLE outbox_alerts (
  outbox_id     INTEGER NOT NULL REFERENCES outbox (id) ON DELETE CASCADE,
  position      INTEGER NOT NULL,  -- order within the notification, from 0
  alert_id      INTEGER REFERENCES alerts (id),  -- NULL when no episode was found
  rule          TEXT    NOT NULL,
  series        TEXT    NOT NULL,
  status        TEXT    NOT NULL,  -- firing, resolved
  tier          INTEGER NOT NULL,
  severity      TEXT    NOT NULL,
  value         REAL,
  threshold     REAL,
  baseline_p99  REAL,
  starts_at     INTEGER NOT NULL,  -- when it fired
  ends_at       INTEGER,           -- when it resolved; NULL while firing
  labels        TEXT    NOT NULL,  -- alert labels: {alertname="x",severity="y",...}
  annotations   TEXT    NOT NULL,
  PRIMARY KEY (outbox_id, position)
) WITHOUT ROWID;
CREATE INDEX outbox_alerts_by_alert ON outbox_alerts (alert_id);
)sql";

// Version 2: silences, annotations on alerts, and the alert engine's saved state.
constexpr std::string_view kV2 = R"sql(
-- Mute notifications of the alerts that match, between starts_at and ends_at.
CREATE TABLE silences (
  id            INTEGER PRIMARY KEY,
  matchers      TEXT    NOT NULL,  -- a selector: {model="rank",severity=~"warning|critical"}
  starts_at     INTEGER NOT NULL,
  ends_at       INTEGER NOT NULL,  -- expiring a silence sets it to the time it was expired
  created_by    TEXT    NOT NULL,
  comment       TEXT    NOT NULL,
  created_at    INTEGER NOT NULL,
  CHECK (starts_at <= ends_at)
);
CREATE INDEX silences_by_end ON silences (ends_at);

-- Free text attached to an alert: the diagnosis' root cause, an operator's note.
CREATE TABLE annotations (
  id            INTEGER PRIMARY KEY,
  alert_id      INTEGER NOT NULL REFERENCES alerts (id),
  time          INTEGER NOT NULL,
  kind          TEXT    NOT NULL,  -- root_cause, note, ...
  text          TEXT    NOT NULL
);
CREATE INDEX annotations_by_alert ON annotations (alert_id, time);

-- The alert engine's state machines, saved with each tick's events: one row.
CREATE TABLE engine_state (
  id            INTEGER PRIMARY KEY CHECK (id = 1),
  saved_at      INTEGER NOT NULL,
  state         BLOB    NOT NULL
);
)sql";

// Version 3: per-minute history of every series, so that the dashboard compares with last week
// after a restart and `tailguard import` can load past data. Latencies are REAL seconds.
constexpr std::string_view kV3 = R"sql(
-- Every series the history holds: its id as the API shows it and its identity.
CREATE TABLE series (
  seq           INTEGER PRIMARY KEY,     -- compact reference for series_minutes
  id            TEXT    NOT NULL UNIQUE, -- 16 hex digits: FNV-1a 64 of the key
  key           TEXT    NOT NULL UNIQUE, -- canonical key: metric{a="x",b="y"}, labels sorted
  metric        TEXT    NOT NULL,
  labels        TEXT    NOT NULL,        -- {a="x",b="y"}
  first_at      INTEGER NOT NULL,        -- the oldest minute written
  last_at       INTEGER NOT NULL         -- the newest minute written
);

-- One row per series and minute: the minute's statistics, the detector's view at the tick that
-- closed it, and its latency heatmap row.
CREATE TABLE series_minutes (
  series_seq     INTEGER NOT NULL REFERENCES series (seq),
  time           INTEGER NOT NULL,  -- end of the minute
  count          INTEGER NOT NULL,
  p50            REAL,
  p90            REAL,
  p99            REAL,
  p999           REAL,
  mean           REAL,
  max            REAL,
  anomaly_score  REAL,
  baseline_p99   REAL,
  forecast       REAL,              -- Holt-Winters' one-step forecast of P99
  forecast_lower REAL,              -- and its prediction band
  forecast_upper REAL,
  heatmap        BLOB,              -- EncodeHeatmapRow() (metrics/heatmap.h); NULL when unknown
  PRIMARY KEY (series_seq, time)
) WITHOUT ROWID;
)sql";

// Version 4: the pending messages of each receiver and alert group in order, so that delivery
// sends only the oldest one of a group (EventStore::Due) and a group's messages keep their order
// across restarts.
constexpr std::string_view kV4 = R"sql(
CREATE INDEX outbox_pending_by_group ON outbox (receiver, group_key, created_at, id)
  WHERE state = 'pending';
)sql";

// Version 5: what each series measures, since the history holds value series and gauges beside
// latencies, and alerts may watch them. Every series and episode before it was a latency.
constexpr std::string_view kV5 = R"sql(
ALTER TABLE series ADD COLUMN unit TEXT NOT NULL DEFAULT 'seconds';  -- UnitName(): seconds, bytes, count
ALTER TABLE alerts ADD COLUMN unit TEXT NOT NULL DEFAULT 'seconds';  -- the series' unit
)sql";

// Version 6: the live diagnosis of each alert (analyze/live_diagnosis.h): the quadrant, the
// one-line finding, and the ranked causes with their evidence and sparkline.
constexpr std::string_view kV6 = R"sql(
CREATE TABLE diagnoses (
  id                INTEGER PRIMARY KEY,
  alert_id          INTEGER NOT NULL REFERENCES alerts (id),
  time              INTEGER NOT NULL,  -- when it was made: the fire or escalate event
  quadrant          TEXT    NOT NULL,  -- hardware, traffic, dependency, model, unknown
  summary           TEXT    NOT NULL,  -- the one line notifications carry
  contention        TEXT    NOT NULL,  -- the other route whose load is the cause; '' for none
  changes           TEXT    NOT NULL,  -- one per line: time_ns TAB quadrant TAB subject TAB what
  symptoms          TEXT    NOT NULL,  -- one series key per line
  series_considered INTEGER NOT NULL,
  seconds           REAL    NOT NULL   -- how long it took
);
CREATE INDEX diagnoses_by_alert ON diagnoses (alert_id, time);

CREATE TABLE diagnosis_causes (
  diagnosis_id      INTEGER NOT NULL REFERENCES diagnoses (id),
  rank              INTEGER NOT NULL,  -- 1 first
  series            TEXT    NOT NULL,
  quadrant          TEXT    NOT NULL,
  kind              TEXT    NOT NULL,  -- cause, symptom
  score             REAL    NOT NULL,  -- robust score: IQRs above the baseline
  confidence        REAL    NOT NULL,
  baseline_median   REAL,
  baseline_q1       REAL,
  baseline_q3       REAL,
  peak              REAL,
  onset             INTEGER,           -- time of the first point at half the peak
  explained         REAL,              -- share of the alerted latency's rise; NULL: not a stage
  rationale         TEXT    NOT NULL,
  points            TEXT    NOT NULL,  -- the sparkline: "seconds_from_alert:value" by spaces
  PRIMARY KEY (diagnosis_id, rank)
) WITHOUT ROWID;
)sql";

constexpr std::array<std::string_view, 6> kMigrations = {kV1, kV2, kV3, kV4, kV5, kV6};

}  // namespace

std::span<const std::string_view> Migrations() { return kMigrations; }

int SchemaVersion() { return static_cast<int>(kMigrations.size()); }

absl::Status Migrate(Database& db) {
  // The write lock first, then the version: two processes opening a new file at once migrate it
  // once.
  absl::StatusOr<Transaction> tx = Transaction::Begin(db, Transaction::Mode::kImmediate);
  if (!tx.ok()) return tx.status();
  absl::StatusOr<Statement> st = db.Prepare("PRAGMA user_version");
  if (!st.ok()) return st.status();
  absl::StatusOr<bool> row = st->Step();
  if (!row.ok()) return row.status();
  const int version = *row ? static_cast<int>(st->ColumnInt64(0)) : 0;
  st->Reset();
  const int known = SchemaVersion();
  if (version > known) {
    return absl::FailedPreconditionError(
        Cat(db.path(), ": schema version ", version, " was created by a newer tailguard; this one ",
            "knows versions up to ", known, ". Upgrade tailguard or use another file."));
  }
  if (version < 0) return absl::DataLossError(Cat(db.path(), ": invalid schema version ", version));
  for (int v = version; v < known; ++v) {
    absl::Status s = db.Exec(Migrations()[static_cast<size_t>(v)]);
    if (!s.ok()) {
      return absl::Status(s.code(), Cat("migrating to schema version ", v + 1, ": ", s.message()));
    }
  }
  if (version != known) {
    absl::Status s = db.Exec(Cat("PRAGMA user_version = ", known));
    if (!s.ok()) return s;
  }
  return tx->Commit();
}

}  // namespace tailguard::store
