// The series registry: metric name + labels to a Series that records, collects and answers
// windows; and the per-route request metrics built on it.
//
// Three kinds of series share one record path (Recorder: wait-free, nothing allocated):
//   - latency histograms (GetOrCreate), in nanoseconds, exported in seconds;
//   - value histograms (Values): a size per request or a count per batch, in bytes or counts;
//   - gauges (Gauge): a level its owner sets (a queue's depth), sampled once per slot.
// All three are windowed, exported on /metrics, kept in history and analysed alike.
#ifndef TAILGUARD_REGISTRY_H_
#define TAILGUARD_REGISTRY_H_

#include <atomic>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/clock.h"
#include "tailguard/histogram.h"
#include "tailguard/recorder.h"
#include "tailguard/sampler.h"
#include "tailguard/windows.h"

namespace tailguard {

// Label pairs. Order does not matter: the registry sorts them by name.
using Labels = std::vector<std::pair<std::string, std::string>>;

// The metric every request stage is recorded under, with labels model, version, route, stage.
inline constexpr std::string_view kRequestDurationMetric = "tailguard_request_duration_seconds";
// The input size of each request that gave one (RequestRecord::input_size: tensor elements,
// prompt characters or tokens, pixels), a value histogram with labels model, version, route.
inline constexpr std::string_view kRequestInputSizeMetric = "tailguard_request_input_size";

// What a series' values measure. Values are recorded as unsigned integers of the unit.
enum class Unit : uint8_t {
  // Latencies, recorded in nanoseconds; exported, analysed and kept in history in seconds.
  kNanoseconds,
  kBytes,  // sizes: request bodies, tensors, memory
  // Counts of things: tensor elements, tokens, items in a batch, requests in a queue.
  kCount,
};
// The unit as values leave tailguard (exposition, analysis, the API): "seconds", "bytes",
// "count".
std::string_view UnitName(Unit u);
// The inverse of UnitName(); nullopt for anything else.
std::optional<Unit> ParseUnit(std::string_view name);
// What one recorded unit is in the unit values leave in: 1e-9 for nanoseconds (to seconds), 1
// for the others.
inline double UnitScale(Unit u) { return u == Unit::kNanoseconds ? 1e-9 : 1.0; }

enum class SeriesKind : uint8_t {
  kHistogram,  // every value recorded: latencies, a size per request, items per batch
  // A level its owner sets and moves (requests queued, workers busy). Collect() records its
  // current value once per slot, so windows hold its distribution over time.
  kGauge,
};
// "histogram", "gauge".
std::string_view SeriesKindName(SeriesKind k);

// One series: a Recorder for the hot path and, filled by collections, sliding windows, the last
// interval and the cumulative histogram; a gauge also holds its current level.
//
// Thread-safe. Record(), Set() and Add() are the wait-free hot path; the rest takes a mutex
// shared only with Collect().
class Series {
 public:
  Series(std::string name, Labels labels, std::string key, WindowOptions windows,
         SeriesKind kind = SeriesKind::kHistogram, Unit unit = Unit::kNanoseconds);
  Series(const Series&) = delete;
  Series& operator=(const Series&) = delete;

  const std::string& name() const { return name_; }
  // Sorted by label name.
  const Labels& labels() const { return labels_; }
  // Canonical identity: name{label="value",...}, Prometheus style, sorted, escaped.
  const std::string& key() const { return key_; }
  // The value of label `name`, or "" when absent.
  std::string_view label(std::string_view name) const;
  SeriesKind kind() const { return kind_; }
  Unit unit() const { return unit_; }

  // Records one value in the series' unit (nanoseconds for a latency). See Recorder::Record.
  // On a gauge it adds a sample beside the per-slot ones; use Set() and Add() instead.
  bool Record(uint64_t value) { return recorder_.Record(value); }
  bool RecordCorrected(uint64_t ns, uint64_t expected_interval_ns) {
    return recorder_.RecordCorrected(ns, expected_interval_ns);
  }

  // A gauge's level: Set() replaces it, Add() moves it by `delta` (negative to lower it). Relaxed
  // atomics: a level read once per slot needs no order with anything else. A level below 0 is
  // sampled as 0 (Recorder takes unsigned values). On a histogram they only move level().
  void Set(int64_t level) { level_.store(level, std::memory_order_relaxed); }
  void Add(int64_t delta) { level_.fetch_add(delta, std::memory_order_relaxed); }
  int64_t level() const { return level_.load(std::memory_order_relaxed); }

  // Moves what was recorded since the previous collection into the slot that contains `slot`;
  // a gauge first records its level once. Called by Registry::Collect() once per slot.
  void Collect(WallTime slot);

  // Merge of the slots that start in [now - length, now); see SlidingWindows::Window.
  Histogram Window(Duration length, WallTime now) const;
  // What the latest collection took.
  Histogram LastInterval() const;
  // Everything collected since the series was created.
  Histogram Cumulative() const;
  // Bytes held by this series: windows, histograms, and about 19 KiB per thread that records
  // into it (see Recorder::MemoryBytes).
  size_t MemoryBytes() const;

 private:
  const std::string name_;
  const Labels labels_;
  const std::string key_;
  const SeriesKind kind_;
  const Unit unit_;
  Recorder recorder_;
  std::atomic<int64_t> level_{0};

  mutable std::mutex mu_;
  SlidingWindows windows_;  // guarded by mu_
  Histogram last_;          // guarded by mu_
  Histogram cumulative_;    // guarded by mu_
};

// Labels of one served route.
struct RouteLabels {
  std::string model;
  std::string version;
  std::string route;
};

// Everything recorded about one (model, version, route): a Series per Stage under
// kRequestDurationMetric, and a Sampler of whole requests.
//
// Thread-safe. Obtain it once from Registry::Requests() and keep the reference.
class RequestMetrics {
 public:
  RequestMetrics(RouteLabels labels, std::array<Series*, kStageCount> stages, Series* input_size,
                 const Clock& clock, SamplerOptions sampler);

  const RouteLabels& labels() const { return labels_; }
  Series& stage(Stage s) const { return *stages_[static_cast<size_t>(s)]; }
  // kRequestInputSizeMetric of this route: what RecordRequest() records input sizes into.
  Series& input_size() const { return *input_size_; }
  Sampler& sampler() { return sampler_; }
  const Sampler& sampler() const { return sampler_; }
  const Clock& clock() const { return clock_; }

  // Records a finished request measured by the caller: every stage with a non-zero duration
  // (kTotal is required) except kInterToken (whose gaps the caller records into
  // stage(Stage::kInterToken) one by one), a non-zero input size into input_size(), then
  // offers it to the sampler. Wait-free unless the
  // request is kept. With expected_interval_ns > 0 (a client that sends every
  // expected_interval_ns), the total is recorded with coordinated-omission correction
  // (Histogram::RecordCorrected).
  SampleDecision RecordRequest(const RequestRecord& r, uint64_t expected_interval_ns = 0);

  // Wall-clock time of a monotonic instant, from an offset taken when this object was made.
  WallTime ToWall(MonoTime t) const { return WallTime(t.time_since_epoch() + wall_minus_mono_); }

  // Requests per second over the last collection (smoothed), as given to the sampler.
  double qps() const;

  // Called by Registry::Collect() after the stage series were collected: updates the sampler's
  // rate and slow threshold from the total-latency series.
  void AfterCollect(Duration interval, WallTime now);

 private:
  const RouteLabels labels_;
  const std::array<Series*, kStageCount> stages_;
  Series* const input_size_;
  const Clock& clock_;
  const Duration wall_minus_mono_;
  Sampler sampler_;
  // Written by the collector, read for display; relaxed, a self-contained number.
  std::atomic<double> qps_{0.0};
  bool have_rate_ = false;  // collector-only
};

// Measures one request: construct it when the request arrives, mark each stage as it ends, and
// let it go out of scope (or call Finish()) when the response is sent.
//
// Not thread-safe: one request, one thread at a time (it may move between threads).
// Each boundary costs one clock read; nothing allocates.
//
//   tailguard::RequestTimer t(metrics);
//   FetchFeatures();   t.EndStage(tailguard::Stage::kFeatureFetch);
//   Preprocess();      t.EndStage(tailguard::Stage::kPreprocess);
//   RunModel();        t.EndStage(tailguard::Stage::kInference);
//   // total latency recorded when t is destroyed
class RequestTimer {
 public:
  explicit RequestTimer(RequestMetrics& metrics);
  ~RequestTimer() { Finish(); }
  RequestTimer(const RequestTimer&) = delete;
  RequestTimer& operator=(const RequestTimer&) = delete;

  // Ends stage `s` now: its duration is the time since the previous boundary (the start, or
  // the previous EndStage). Calling it twice for a stage adds up. REQUIRES: s != kTotal.
  void EndStage(Stage s);
  // Marks the first streamed token now: kFirstToken is the time since the start. Does not move
  // the stage boundary.
  void FirstToken();
  // Marks a streamed token now. The first call marks the first token (as FirstToken()); each
  // later one records the gap since the previous token into the kInterToken series at once and
  // keeps the longest gap in the request's record.
  void Token();

  void set_input_size(uint64_t n) { record_.input_size = n; }
  void set_status(int status, bool failed) {
    record_.status = status;
    record_.failed = failed;
  }
  void set_trace_id(std::string_view id) { record_.set_trace(id); }
  // The caller sends a request every `d` (a load generator, a fixed-rate poller): the total is
  // recorded with coordinated-omission correction. Zero (the default) disables it.
  void set_expected_interval(Duration d) {
    expected_interval_ns_ = static_cast<uint64_t>(d.count());
  }

  // Ends the request now: records the total and every marked stage, offers it to the sampler.
  // Later calls do nothing and return kSkipped.
  SampleDecision Finish();

 private:
  RequestMetrics& metrics_;
  const MonoTime start_;
  MonoTime last_;
  RequestRecord record_;
  uint64_t expected_interval_ns_ = 0;
  MonoTime last_token_{};
  bool have_token_ = false;
  bool finished_ = false;
};

struct RegistryOptions {
  WindowOptions windows;   // for every series
  SamplerOptions sampler;  // for every RequestMetrics
  // Bounds on what the registry holds, and so on what /metrics and the API can return: a label
  // value longer than this is refused. Default 1024 bytes. Values that come from requests
  // (model names, versions) should be checked well before this (the gateway allows 128 bytes).
  size_t max_label_value_bytes = 1024;
  // Series at most; a new one past it is refused (and counted in Registry::refused()). Default
  // 100 000: about 1.9 GB of windows at most, and a /metrics page that a scrape can still take.
  size_t max_series = 100000;
};

// Maps metric name + labels to Series, and routes to RequestMetrics. Series live as long as the
// registry; their addresses never change.
//
// Thread-safe. Lookups take a mutex: look up once and keep the reference on hot paths.
class Registry {
 public:
  explicit Registry(const Clock& clock = Clock::Real(), RegistryOptions options = {});
  ~Registry();
  Registry(const Registry&) = delete;
  Registry& operator=(const Registry&) = delete;

  // The latency series for `name` and `labels`, created on first use. InvalidArgument for a
  // metric name outside [a-zA-Z_:][a-zA-Z0-9_:]*, a label name outside [a-zA-Z_][a-zA-Z0-9_]* or
  // starting with "__", a label name given twice, or a label value over
  // RegistryOptions::max_label_value_bytes; ResourceExhausted for a new series past
  // RegistryOptions::max_series. Both refusals are counted in refused(). FailedPrecondition
  // when the series exists as another kind or unit (not counted: a caller's mistake).
  absl::StatusOr<Series*> GetOrCreate(std::string_view name, Labels labels);
  // A value histogram of `unit`: every value recorded is kept, as for latencies. By Prometheus
  // convention a size's name ends in "_bytes". Errors as GetOrCreate().
  //
  //   tailguard::Series* batch = *registry.Values("tailguard_model_batch_size",
  //                                               {{"model", "rank"}}, tailguard::Unit::kCount);
  //   batch->Record(items_in_this_batch);
  absl::StatusOr<Series*> Values(std::string_view name, Labels labels, Unit unit);
  // A gauge of `unit`: its owner Set()s or Add()s a level, each collection samples it. Errors as
  // GetOrCreate().
  //
  //   tailguard::Series* queued = *registry.Gauge("tailguard_model_queue_depth",
  //                                               {{"model", "rank"}}, tailguard::Unit::kCount);
  //   queued->Add(1);  // on enqueue; queued->Add(-1) when a worker takes it
  absl::StatusOr<Series*> Gauge(std::string_view name, Labels labels, Unit unit);
  // nullptr when absent (or invalid).
  Series* Find(std::string_view name, Labels labels) const;

  // The request metrics of one route, created on first use: a latency series per stage and the
  // input-size histogram (kStageCount + 1 series). InvalidArgument when a label is empty or too
  // long; ResourceExhausted when its series would pass max_series.
  absl::StatusOr<RequestMetrics*> Requests(const RouteLabels& labels);

  // Series refused by the limits of RegistryOptions since construction.
  uint64_t refused() const { return refused_.load(std::memory_order_relaxed); }

  // All series, sorted by key; all request metrics, in creation order.
  std::vector<Series*> AllSeries() const;
  std::vector<RequestMetrics*> AllRequests() const;

  // One tick: every series moves its new records into the current slot, then every
  // RequestMetrics updates its sampler. Call it once per slot (WindowOptions::slot); records
  // made between two calls are attributed to the slot holding the midpoint of the two calls.
  // Slot times follow the monotonic clock from the wall-clock time at construction, so a step
  // of the system clock (NTP) does not send every interval to the wrong slot.
  void Collect();

  // The registry's notion of now: wall-clock time at construction plus monotonic time since.
  WallTime Now() const;

  const Clock& clock() const { return clock_; }
  const RegistryOptions& options() const { return options_; }

 private:
  // InvalidArgument (and counted) for a label value over max_label_value_bytes.
  absl::Status CheckValues(std::string_view name, const Labels& labels);
  // GetOrCreate(), Values() and Gauge().
  absl::StatusOr<Series*> Make(std::string_view name, Labels labels, SeriesKind kind, Unit unit);
  // The series under `key`, made from `name` and `labels` when absent; nullptr when it exists as
  // another kind or unit. REQUIRES: mu_ held.
  Series* InsertLocked(std::string_view name, Labels labels, const std::string& key,
                       SeriesKind kind, Unit unit);

  const Clock& clock_;
  const RegistryOptions options_;
  const Duration wall_minus_mono_;

  // Series by canonical key: a hash map in registry.cc, kept out of this header so that the SDK's
  // headers expose no abseil container.
  struct SeriesIndex;

  mutable std::mutex mu_;
  const std::unique_ptr<SeriesIndex> series_;              // guarded by mu_
  std::vector<std::unique_ptr<RequestMetrics>> requests_;  // guarded by mu_

  // Relaxed: a count read for display, ordered with nothing.
  std::atomic<uint64_t> refused_{0};

  std::mutex collect_mu_;  // serialises Collect()
  WallTime last_collect_;  // guarded by collect_mu_
};

}  // namespace tailguard

#endif  // TAILGUARD_REGISTRY_H_
