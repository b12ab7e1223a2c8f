// The analyzer: the one path from measured statistics to anomalies, drift findings, alert events,
// notifications and actions, whichever way the statistics come in.
//
// A Source gives one Batch per tick: the statistics of every series at that time (the live
// registry's windows, a recorded file; later, a Prometheus query). Analyzer::Analyze() runs each
// series' detectors (the anomaly ensemble and the drift detector) and its baseline, feeds the alert
// engine, and hands what happened to every Subscriber (the event store and journal, the
// timeline, later diagnosis and mitigation). The gateway's live loop, `tailguard replay` and
// `tailguard demo` all drive this one class (serve and replay with the same default rules; demo
// with their debounce shortened), so the same statistics give the same events live and offline:
// a request log replayed at a resolution equal to the live window gives what the live loop gave.
//
// Embedding: a server that records into its own Registry can run the analysis in process,
// without a gateway:
//
//   tailguard::Registry registry;
//   tailguard::RegistrySource source(registry);
//   absl::StatusOr<std::unique_ptr<tailguard::Analyzer>> analyzer =
//       tailguard::Analyzer::Create(tailguard::DefaultAlertRules(), {});
//   if (!analyzer.ok()) return analyzer.status();
//   MyPager pager;                      // a tailguard::Subscriber
//   (*analyzer)->Subscribe(&pager);
//   tailguard::Batch batch;
//   while (running) {                   // once a second (the registry's slot)
//     std::this_thread::sleep_for(std::chrono::seconds(1));
//     if (source.Next(batch).ok()) (*analyzer)->Analyze(batch);  // the registry never fails
//   }
#ifndef TAILGUARD_ANALYZER_H_
#define TAILGUARD_ANALYZER_H_

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/alert.h"
#include "tailguard/detect.h"
#include "tailguard/registry.h"

namespace tailguard {

// One series' statistics at one tick, in the series' unit: latencies in seconds, value series in
// bytes or counts. NaN (Observation::kMissing) when the interval held no value.
struct SeriesPoint {
  // The canonical series key, metric{a="x",b="y"} with labels sorted by name; empty: the
  // analyzer makes it from metric and labels.
  std::string key;
  std::string metric;  // e.g. tailguard_request_duration_seconds
  Labels labels;       // sorted by name (the key, and what rules select, assume it)
  // The live series behind the point (RegistrySource); nullptr from a file.
  Series* series = nullptr;
  Unit unit = Unit::kNanoseconds;  // what the statistics measure (kNanoseconds: in seconds)
  uint64_t count = 0;              // values in the interval: requests, for a latency
  double p50 = Observation::kMissing, p90 = Observation::kMissing;
  double p99 = Observation::kMissing, p999 = Observation::kMissing;
  double mean = Observation::kMissing, max = Observation::kMissing;
  double rate = Observation::kMissing;  // values (requests) per second over the interval
  // Failed requests (5xx, and requests that got no response) over all requests of the interval;
  // 4xx are the client's and do not count. NaN when unknown or when there were no requests.
  double error_ratio = Observation::kMissing;
};

// Sets p.unit, p.count, the percentiles, mean and max from `h`, a histogram of `unit`
// (nanoseconds become seconds); the statistics stay missing when `h` is empty. What every source
// does with its windows.
void SetStats(const Histogram& h, Unit unit, SeriesPoint& p);
// SetStats(h, Unit::kNanoseconds, p).
void SetLatencyStats(const Histogram& h, SeriesPoint& p);

// What a source gives for one tick: every series it knows, at `time` (the end of the interval
// the statistics cover).
struct Batch {
  WallTime time{};
  std::vector<SeriesPoint> points;
};

// Where statistics come from. Not thread-safe: one caller.
class Source {
 public:
  virtual ~Source() = default;
  // Fills `batch` (replacing what it held) with the next tick. False when there is no more (the
  // end of a file); an error when the source failed (a query that did not answer).
  virtual absl::StatusOr<bool> Next(Batch& batch) = 0;
};

// The live registry as a source: each Next() collects the registry and gives every series'
// statistics over the last `window` at the registry's now. Call it once per slot
// (WindowOptions::slot): the registry's slots are what make the ticks.
class RegistrySource final : public Source {
 public:
  // The cumulative (requests, failed requests) of the route whose total-latency series is
  // `series`; nullopt for any other series. Gives SeriesPoint::error_ratio over the window.
  using ErrorCounts = std::function<std::optional<std::pair<uint64_t, uint64_t>>(const Series&)>;

  // `registry` must outlive the source. A window shorter than the registry's slot is one slot.
  explicit RegistrySource(Registry& registry, Duration window = std::chrono::seconds(10),
                          ErrorCounts errors = nullptr);
  ~RegistrySource() override;

  absl::StatusOr<bool> Next(Batch& batch) override;

 private:
  struct State;  // per series with error counts: last totals, per-tick deltas in the window
  Registry& registry_;
  const Duration window_;
  const ErrorCounts errors_;
  std::unique_ptr<State> state_;
};

// Recorded batches, given back in order: for tests and for data already aggregated.
class BatchListSource final : public Source {
 public:
  explicit BatchListSource(std::vector<Batch> batches) : batches_(std::move(batches)) {}
  absl::StatusOr<bool> Next(Batch& batch) override;

 private:
  std::vector<Batch> batches_;
  size_t next_ = 0;
};

// An anomaly: the once-per-incident score of a series reached AnalyzerOptions::anomaly_event_score.
struct AnomalyEvent {
  WallTime time{};
  std::string series;                       // key
  double p99 = Observation::kMissing;       // in `unit` (seconds for a latency)
  double baseline = Observation::kMissing;  // in `unit`; NaN while the forecaster learns
  double score = 0;                         // AnomalyPoint::score
  Unit unit = Unit::kNanoseconds;           // the series' unit (SeriesPoint::unit)
};

// A drift finding that began (the series' P99 is trending) or ended.
struct DriftEvent {
  WallTime time{};  // the point that completed the bucket that changed the finding
  std::string series;
  bool drifting = false;  // true: began; false: ended
  DriftFinding finding;
};

// What became of an action an alert tier asked for (AlertTier::actions, e.g. "degrade").
enum class ActionDecision : uint8_t {
  kRecorded,  // no mitigation is installed for it: recorded only
  kApplied,   // a mitigation acted
  kRefused,   // a mitigation declined (already active, outside its limits)
};
// "recorded", "applied", "refused".
std::string_view ActionDecisionName(ActionDecision d);

struct ActionOutcome {
  ActionDecision decision = ActionDecision::kRecorded;
  std::string detail;  // one line for a person, e.g. "breaker opened on route=rank"
};

struct ActionRecord {
  WallTime time{};
  std::string action;
  AlertEvent cause;  // the fire or escalate event that asked for it
  ActionOutcome outcome;
};

// Carries out actions. Called on the analyzer's thread inside Analyze() (under the live loop's
// lock there), from within the alert engine's callback: must not block, and must not call back
// into the analyzer or its engine.
class Actuator {
 public:
  virtual ~Actuator() = default;
  virtual ActionOutcome Act(std::string_view action, const AlertEvent& cause) = 0;
};

// Receives what the analysis found, in the order it happened, on the analyzer's thread inside
// Analyze(). Each method has an empty default: override what you need. Must not block, and must
// not call back into the analyzer or its engine (alert events come from inside the engine).
class Subscriber {
 public:
  virtual ~Subscriber() = default;
  // The batch about to be analysed, before any event it causes: what a subscriber that keeps
  // its own history of the signals (the live diagnosis) records.
  virtual void OnBatch(const Batch& batch) {}
  // Before a notification reaches any subscriber, each subscriber may add annotations to each
  // of its alerts (the live diagnosis adds its one-line finding as "diagnosis"). Keep
  // `alert.annotations` sorted by name.
  virtual void Annotate(NotifiedAlert& alert) const {}
  virtual void OnAlertEvent(const AlertEvent& event) {}
  virtual void OnNotification(const Notification& notification) {}
  virtual void OnMuted(const MutedAlert& muted) {}
  virtual void OnAnomaly(const AnomalyEvent& anomaly) {}
  virtual void OnDrift(const DriftEvent& drift) {}
  virtual void OnAction(const ActionRecord& action) {}
};

struct AnalyzerOptions {
  // Each series' ensemble. `step` 0 (the default) learns the spacing from the first points; the
  // live loop sets its tick.
  EnsembleOptions ensemble;
  // Each series' drift detector (daily medians over weeks, by default).
  DriftOptions drift;
  // The drift detector sees at most one point per this interval per series (the first point of
  // each): one per minute is 1 440 a daily bucket, plenty for a median, and bounds the memory of
  // a live series at 1 s ticks. Default 1 min; 0 feeds every point.
  Duration drift_sample = std::chrono::minutes(1);
  // An AnomalyEvent when a point's once-per-incident score reaches this. Default 0.5 (one in
  // 100 000), the default rules' threshold.
  double anomaly_event_score = 0.5;
  // Decides whether an alert is silenced (the journal, which reads silences from the store);
  // nullptr: nothing is. Must outlive the analyzer.
  const AlertMuter* muter = nullptr;
  // Carries out the actions of alert tiers; nullptr: each is recorded only
  // (ActionDecision::kRecorded). Must outlive the analyzer.
  Actuator* actuator = nullptr;
};

// The verdict on one point of a batch.
struct PointVerdict {
  double level = Observation::kMissing;     // AnomalyPoint::level; NaN when the P99 is missing
  double score = Observation::kMissing;     // AnomalyPoint::score; NaN when the P99 is missing
  double baseline = Observation::kMissing;  // seconds
  Forecast forecast;                        // Holt-Winters' one-step forecast of the P99
};

// The default rules of every way in (`serve`, `replay`, an embedding server): on the total
// latency of each route (tailguard_request_duration_seconds{stage="total"}), P99 against the
// ensemble's baseline in the default tiers (+10 % warning, +30 % critical, +50 % emergency with the
// "degrade" action), and the anomaly score above `anomaly_threshold` (0.5: one in 100 000) as a
// warning.
AlertConfig DefaultAlertRules(double anomaly_threshold = 0.5);

// Not thread-safe: one thread calls Analyze() (the caller locks around it and around the engine
// when others read).
class Analyzer {
 public:
  // InvalidArgument for rules the engine refuses (see AlertEngine::Create).
  static absl::StatusOr<std::unique_ptr<Analyzer>> Create(AlertConfig rules,
                                                          AnalyzerOptions options);
  ~Analyzer();

  // `s` receives everything from the next Analyze() on, after those subscribed before it.
  // Must outlive the analyzer.
  void Subscribe(Subscriber* s) { subscribers_.push_back(s); }

  // Analyses every point of `batch` in order: detectors, drift, then the alert engine; then
  // advances the engine to batch.time (stale series, notifications due). One verdict per point
  // in `verdicts` when not null.
  void Analyze(const Batch& batch, std::vector<PointVerdict>* verdicts = nullptr);

  // Runs every batch of `source` until it ends. Returns the number of batches, or the source's
  // error.
  absl::StatusOr<uint64_t> Run(Source& source);

  // The drift finding of the series with `key`; nullptr when it has not been seen.
  const DriftFinding* Drift(std::string_view key) const;

  AlertEngine& engine() { return *engine_; }
  const AlertEngine& engine() const { return *engine_; }
  const AnalyzerOptions& options() const { return options_; }

 private:
  struct SeriesState;
  class Fanout;
  explicit Analyzer(AnalyzerOptions options);

  const AnalyzerOptions options_;
  std::vector<Subscriber*> subscribers_;
  std::unique_ptr<Fanout> fanout_;
  std::unique_ptr<AlertEngine> engine_;
  struct StateMap;
  std::unique_ptr<StateMap> states_;
};

}  // namespace tailguard

#endif  // TAILGUARD_ANALYZER_H_
