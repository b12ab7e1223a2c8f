// The live analysis loop: once per tick the registry is collected, each series' windows feed its
// anomaly detector and the alert engine, samples are gathered, and history is kept for the API.
#ifndef TAILGUARD_SERVER_LIVE_LOOP_H_
#define TAILGUARD_SERVER_LIVE_LOOP_H_

#include <atomic>
#include <condition_variable>
#include <cstdio>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/functional/function_ref.h"
#include "absl/status/statusor.h"
#include "analyze/live_diagnosis.h"
#include "common/mutex.h"
#include "metrics/heatmap.h"
#include "server/stats.h"
#include "tailguard/alert.h"
#include "tailguard/analyzer.h"
#include "tailguard/detect.h"
#include "tailguard/registry.h"

namespace tailguard::analyze {
class JournalSubscriber;
}  // namespace tailguard::analyze
namespace tailguard {
class HostSignals;
}  // namespace tailguard
namespace tailguard::notify {
class AlertJournal;
}  // namespace tailguard::notify
namespace tailguard::store {
class HistoryStore;
struct SeriesMinutes;
}  // namespace tailguard::store

namespace tailguard::server {

struct LiveLoopOptions {
  // The analysis period. Must equal the registry's slot (WindowOptions::slot). Default 1 s.
  Duration tick = std::chrono::seconds(1);
  // The window whose statistics each tick observes. Default 10 s.
  Duration window = std::chrono::seconds(10);
  // Most alert events and anomalies kept for /api/v1/events. Default 10 000.
  size_t event_capacity = 10000;
  // Most sampled requests kept for /api/v1/samples (the newest win). Default 2000.
  size_t sample_capacity = 2000;
  // How long per-minute points are kept in memory. Default 24 h.
  Duration minute_history = std::chrono::hours(24);
  // Where alert transitions and notifications are logged, one line each; nullptr for none.
  std::FILE* log = nullptr;
  // Where the alert pipeline is journaled (the SQLite store and the delivery outbox); it also
  // supplies the silences. nullptr keeps alerts in memory only. When set, Create() restores the
  // alert engine's state from it. Must outlive the loop.
  notify::AlertJournal* journal = nullptr;
  // Where per-minute history (points and heatmap rows of every series) is persisted, once a
  // minute on the loop's thread after the tick; History() and Heatmap() read what is older than
  // the in-memory minutes from it, and answer for series known only to it. nullptr keeps history
  // in memory only (minute_history). Must outlive the loop.
  store::HistoryStore* history = nullptr;
  // How long the store keeps history: older minutes are pruned about once an hour. Default 35
  // days (five weeks, for comparisons with last week and a month ago). History() and Heatmap()
  // read no further back than this.
  Duration history_retention = std::chrono::hours(24 * 35);
  // Most minute rows one prune deletes (one transaction on the loop's thread); the rest go on
  // the following minutes. Default 20 000.
  int64_t history_prune_batch = 20000;
  // The analysis: detectors, drift, anomaly events, and the actuator that carries out the
  // actions of alert tiers (e.g. "degrade"), with or without a store. The loop sets
  // ensemble.step to `tick` when it is 0, and the muter to `journal` when there is one. The
  // subscribers and the actuator run on the loop's thread with the loop's lock held: they must
  // not call back into the loop.
  AnalyzerOptions analysis;
  // Diagnose every alert that fires or escalates (analyze/live_diagnosis.h): the finding goes
  // to the journal (the event store, beside the episode), the timeline, the log and, as the
  // "diagnosis" annotation, every notification. Default on.
  bool diagnose = true;
  analyze::LiveDiagnosisOptions diagnosis;
  // Sample the hardware quadrant's signals (collect/host_signals.h) into the registry before
  // each collection: process and host CPU, cgroup throttling and memory, PSI. Default off: the
  // gateway and the demo turn it on; tests of the loop keep their registry to themselves.
  bool host_signals = false;
};

// Most minutes of per-minute history one History() or Heatmap() call reads (about 69 days).
inline constexpr int64_t kMaxHistoryMinutes = 100000;

// One point of a series' history, in the series' unit (latencies in seconds).
struct HistoryPoint {
  WallTime time{};  // end of the interval (of a per-minute point: a minute boundary)
  uint64_t count = 0;
  double p50 = Observation::kMissing, p90 = Observation::kMissing;
  double p99 = Observation::kMissing, p999 = Observation::kMissing;
  double mean = Observation::kMissing, max = Observation::kMissing;
  double anomaly_score = Observation::kMissing;
  double baseline_p99 = Observation::kMissing;
  // Holt-Winters' one-step forecast of P99 and its prediction band, in seconds, at the tick that
  // ended the point (the last tick of a per-minute point's minute).
  double forecast = Observation::kMissing;
  double forecast_lower = Observation::kMissing;
  double forecast_upper = Observation::kMissing;
};

// A series the history store knows but the registry does not (imported, or seen before a
// restart).
struct StoredSeries {
  std::string id;  // as SeriesSnapshot::id
  std::string key;
  std::string metric;
  Labels labels;
  WallTime first{};  // its oldest and newest stored minute
  WallTime last{};
  Unit unit = Unit::kNanoseconds;  // what it measures
};

// The statistics of a series at the latest tick, over LiveLoopOptions::window.
struct SeriesSnapshot {
  std::string id;  // 16 hex digits, stable across restarts: a hash of the key
  Series* series = nullptr;
  // Count, percentiles, mean and max over the window; the detector's level (in [0, 1], NaN when
  // the window is empty: no data) and baseline at this tick.
  HistoryPoint stats;
  double rate = 0;                               // requests per second over the window
  double error_ratio = Observation::kMissing;    // only for the total stage of a route
  AlertState alert_state = AlertState::kNormal;  // the worst over the rules
  bool no_data = false;  // that worst alert holds for want of data (AlertEventKind::kNoData)
  std::string severity;  // of the worst alert, "" when normal
};

// An entry of the event timeline: an alert transition, a notification, a mute, an anomaly, a
// drift finding, or an action.
struct TimelineEvent {
  uint64_t id = 0;  // increasing
  WallTime time{};
  std::string type;  // "alert", "notification", "muted", "anomaly", "drift" or "action"
  // alert: AlertEventKindName; notification: "firing"/"resolved"; muted: the reason
  // ("silence", "inhibit", "maintenance"); "anomaly"; drift: "began"/"ended"; action: its
  // decision (ActionDecisionName)
  std::string kind;
  std::string rule;
  std::string series;  // key ("" for a notification)
  std::string severity;
  std::string receiver;   // notifications only
  std::string action;     // actions only: what the tier asked for, e.g. "degrade"
  std::string statistic;  // alerts: the rule's statistic (StatisticName), the unit of value
  std::string unit;       // alerts and anomalies: the series' (UnitName); "" otherwise
  double value = Observation::kMissing;
  double threshold = Observation::kMissing;
  double baseline_p99 = Observation::kMissing;
  std::string message;  // one line for a person
};

// A sampled request with its route.
struct SampleView {
  RouteLabels route;
  SampledRequest sample;
};

// The tick driver of the analysis: each tick the registry (RegistrySource) goes through the one
// Analyzer, whose findings reach the journal, the timeline and any other subscriber; the loop
// keeps the latest snapshot, the per-tick scores of the last hour and the per-minute history.
//
// Thread-safe: Tick() runs on the loop's thread (or a test's), the accessors on any thread.
class LiveLoop final : private Subscriber {
 public:
  // `counters` (may be null) gives the error ratio of each route's total series.
  static absl::StatusOr<std::unique_ptr<LiveLoop>> Create(Registry& registry, AlertConfig rules,
                                                          LiveLoopOptions options,
                                                          RouteCounterTable* counters);
  ~LiveLoop() override;

  // `s` also receives what the analysis finds, on the loop's thread inside Tick(), with the
  // loop's lock held: it must not call back into the loop (Events(), Snapshot(), ...) and must
  // not block. Call before Start(); must outlive the loop.
  void Subscribe(Subscriber* s);

  // The live diagnosis (nullptr with diagnose off). RecordChange() on it is thread-safe: the
  // backend's version switches and the gateway's reloads call it from their threads.
  analyze::LiveDiagnoser* diagnoser() { return diagnoser_.get(); }
  // The latest diagnosis of (rule, series) while it alerts; nullopt when none.
  std::optional<analyze::Diagnosis> LatestDiagnosis(std::string_view rule,
                                                    std::string_view series) const;

  // Collects the registry and analyses every series at the registry's now. Tests call it
  // directly on a FakeClock; Start() calls it every tick on the real clock.
  //
  // Per-minute points are cut at wall-clock minute boundaries: when a tick crosses a boundary B,
  // the point of every series is its window [B - 1 min, B) of the registry's slots, stamped B
  // (HistoryPoint::time is the end of the minute), with the detector's view at that tick. After
  // a stall that crossed several boundaries, each crossed boundary whose minute the registry's
  // fine slot ring still holds gets its point; older ones are skipped.
  void Tick();

  // Runs Tick() every tick on a thread of its own until Stop().
  void Start();
  void Stop();

  std::vector<SeriesSnapshot> Snapshot() const;
  // The series with `id`, nullptr when unknown.
  Series* FindSeries(std::string_view id) const;
  // The live series with `id` (nullptr when it is not live), after checking that someone knows
  // it: NotFound when neither the registry nor the store does.
  absl::StatusOr<Series*> Resolve(std::string_view id) const;
  // Resolve(), with the series' unit (from the store, in the same lookup, for a series only it
  // knows).
  absl::StatusOr<std::pair<Series*, Unit>> ResolveWithUnit(std::string_view id) const;
  // Points of series `id` ending at from+step, from+2*step, ... <= to. Within the registry's
  // window span (1 h) each point is the exact merge of its slots; older points come from the
  // per-minute history (a step below 1 min there is rounded up to 1 min). NotFound for an
  // unknown id; InvalidArgument for step <= 0, to < from, or more than 11 000 points.
  // With a history store, per-minute points older than the in-memory minutes come from the
  // store, and an id only the store knows is answered from it alone; a store read error is
  // returned as it is (Unavailable, DataLoss, ...). Per-minute data is read no further back than
  // now - history_retention (older columns are empty) and no later than now + 1 min;
  // InvalidArgument when that still spans more than kMaxHistoryMinutes minutes.
  absl::StatusOr<std::vector<HistoryPoint>> History(std::string_view id, WallTime from, WallTime to,
                                                    Duration step) const;
  // The latency heatmap of series `id` on the same columns as History(): within the registry's
  // window span each column is the exact merge of its slots, older columns add the per-minute
  // heatmap rows in (end - step, end] (a step below 1 min there is rounded up to 1 min). Rows
  // cover only the buckets that hold data. Errors as History().
  absl::StatusOr<tailguard::Heatmap> Heatmap(std::string_view id, WallTime from, WallTime to,
                                             Duration step) const;
  // The series the history store holds that are not in the registry now, by key; empty without
  // a store or when it cannot be read (counted in history_read_failures()).
  std::vector<server::StoredSeries> StoredSeries() const;
  std::vector<ActiveAlert> ActiveAlerts() const;
  // The newest events with id > after_id, oldest first, at most `limit`.
  std::vector<TimelineEvent> Events(uint64_t after_id, size_t limit) const;
  // The slowest sampled requests of the last `within`, slowest first, at most `limit`.
  std::vector<SampleView> SlowestSamples(Duration within, size_t limit) const;

  uint64_t ticks() const { return ticks_.load(std::memory_order_relaxed); }
  // History store writes (and prunes) that failed; each was logged and skipped.
  uint64_t history_write_failures() const {
    return history_write_failures_.load(std::memory_order_relaxed);
  }
  // StoredSeries() calls whose store read failed.
  uint64_t history_read_failures() const {
    return history_read_failures_.load(std::memory_order_relaxed);
  }
  const LiveLoopOptions& options() const { return options_; }

  // 16 hex digits: FNV-1a 64 of the series key.
  static std::string SeriesId(std::string_view key);

 private:
  struct SeriesState;
  struct MinuteEntry;
  struct Column {
    WallTime end;
    bool exact;  // from the registry's slots; else from per-minute data
  };
  class ColumnIndex;
  LiveLoop(Registry& registry, LiveLoopOptions options, RouteCounterTable* counters);

  // Subscriber: called inside Tick() with mu_ held.
  void OnAlertEvent(const AlertEvent& event) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnNotification(const Notification& notification) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnMuted(const MutedAlert& muted) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnAnomaly(const AnomalyEvent& anomaly) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnDrift(const DriftEvent& drift) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void OnAction(const ActionRecord& action) override ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);
  void PushEvent(TimelineEvent e) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  // The columns of History() and Heatmap(); InvalidArgument as History().
  absl::StatusOr<std::vector<Column>> Columns(Series* series, WallTime from, WallTime to,
                                              Duration step) const;
  // What History() and Heatmap() both start from: the arguments checked, the series resolved
  // (nullptr when only the store knows it) and its columns; NotFound and InvalidArgument as
  // History().
  struct Plan {
    Series* series = nullptr;        // nullptr for a series only the store knows
    Unit unit = Unit::kNanoseconds;  // what it measures (the store's for a stored series)
    std::vector<Column> columns;
    Duration old_step{};  // the step of the per-minute columns: at least a minute
  };
  absl::StatusOr<Plan> PlanRange(std::string_view id, WallTime from, WallTime to,
                                 Duration step) const;
  // Calls `visit` for each per-minute entry of `id` with lo < time <= hi, oldest first: from
  // the store those older than the oldest in memory, then the in-memory ones; with `heatmaps`
  // also the minute's heatmap row (nullptr when unknown). Nothing is materialised. The range is
  // first clamped to the retention; InvalidArgument when it spans more than kMaxHistoryMinutes.
  absl::Status VisitMinutes(
      std::string_view id, Series* series, WallTime lo, WallTime hi, bool heatmaps,
      absl::FunctionRef<void(const HistoryPoint&, const HeatmapRow*)> visit) const;
  // The minute boundaries crossed since the last call that the slot ring still covers, oldest
  // first (see Tick()); only Tick()'s thread.
  std::vector<WallTime> MinutesEnded(WallTime now);
  // Writes the batch of the minutes just cut and prunes when due; called by Tick() without mu_.
  void Persist(const std::vector<store::SeriesMinutes>& batch, WallTime now);

  Registry& registry_;
  const LiveLoopOptions options_;
  RouteCounterTable* const counters_;

  // Only Tick()'s thread: the source and what maps a route's total series to its counters.
  std::unique_ptr<RegistrySource> source_;
  absl::flat_hash_map<const Series*, RouteCounters*> route_of_total_;
  std::unique_ptr<analyze::JournalSubscriber> journal_subscriber_;
  std::unique_ptr<HostSignals> host_signals_;
  std::unique_ptr<analyze::LiveDiagnoser> diagnoser_;  // its state guarded by mu_
  void OnDiagnosis(const analyze::Diagnosis& d) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable Mutex mu_;
  std::unique_ptr<Analyzer> analyzer_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<Series*, std::unique_ptr<SeriesState>> states_ ABSL_GUARDED_BY(mu_);
  absl::flat_hash_map<std::string, Series*> by_id_ ABSL_GUARDED_BY(mu_);
  std::vector<SeriesSnapshot> snapshot_ ABSL_GUARDED_BY(mu_);
  std::deque<TimelineEvent> events_ ABSL_GUARDED_BY(mu_);
  uint64_t next_event_id_ ABSL_GUARDED_BY(mu_) = 1;
  std::deque<SampleView> samples_ ABSL_GUARDED_BY(mu_);
  std::atomic<uint64_t> ticks_{0};
  // Read from any thread for export; relaxed: independent counters.
  std::atomic<uint64_t> history_write_failures_{0};
  mutable std::atomic<uint64_t> history_read_failures_{0};
  // Only Tick()'s thread.
  WallTime last_boundary_{};    // the newest minute boundary cut (or the one before Create())
  WallTime last_prune_{};       // when the last prune pass began
  bool prune_pending_ = false;  // the last prune hit its batch limit

  // The loop's thread (Start()): a Tick() every options_.tick until Stop().
  void RunTicks();

  Mutex run_mu_;
  CondVar run_cv_;
  bool stop_ ABSL_GUARDED_BY(run_mu_) = false;
  std::thread thread_;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_LIVE_LOOP_H_
