// The live analysis loop.
#include "server/live_loop.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>
#include <span>
#include <utility>

#include "alert/notify/journal.h"
#include "alert/notify/render.h"
#include "analyze/journal_subscriber.h"
#include "collect/host_signals.h"
#include "common/format.h"
#include "common/series_id.h"
#include "common/strings.h"
#include "metrics/unit_format.h"
#include "store/history_store.h"
#include "tailguard/series_io.h"

namespace tailguard::server {
namespace {

constexpr size_t kMaxHistoryPoints = 11000;

WallTime FloorMinute(WallTime t) {
  return WallTime(std::chrono::duration_cast<Duration>(
      std::chrono::floor<std::chrono::minutes>(t.time_since_epoch())));
}

// The statistics of a source's point, as a history point holds them.
void CopyStats(const SeriesPoint& from, HistoryPoint& p) {
  p.count = from.count;
  p.p50 = from.p50;
  p.p90 = from.p90;
  p.p99 = from.p99;
  p.p999 = from.p999;
  p.mean = from.mean;
  p.max = from.max;
}

void FillStats(const Histogram& h, Unit unit, HistoryPoint& p) {
  SeriesPoint point;
  SetStats(h, unit, point);
  CopyStats(point, p);
}

// What a series remembers between ticks.
struct TickScore {
  WallTime time{};
  float score = 0;
  float baseline = 0;
  float forecast = 0, forecast_lower = 0, forecast_upper = 0;
};

// Folds the per-minute point `m` into column point `p`: counts add, the rest take the worst,
// except baseline and forecast: those of the last minute (minutes come oldest first).
// `weighted_mean` sums mean * count, for the column's mean.
void Fold(const HistoryPoint& m, HistoryPoint& p, double& weighted_mean) {
  auto worst = [](double& into, double v) {
    if (!std::isnan(v) && (std::isnan(into) || v > into)) into = v;
  };
  worst(p.p50, m.p50);
  worst(p.p90, m.p90);
  worst(p.p99, m.p99);
  worst(p.p999, m.p999);
  worst(p.max, m.max);
  worst(p.anomaly_score, m.anomaly_score);
  p.baseline_p99 = m.baseline_p99;
  p.forecast = m.forecast;
  p.forecast_lower = m.forecast_lower;
  p.forecast_upper = m.forecast_upper;
  if (m.count > 0) weighted_mean += m.mean * static_cast<double>(m.count);
  p.count += m.count;
}

store::MinuteRow ToRow(const HistoryPoint& p, std::string heatmap) {
  store::MinuteRow r;
  r.time = p.time;
  r.count = p.count;
  r.p50 = p.p50;
  r.p90 = p.p90;
  r.p99 = p.p99;
  r.p999 = p.p999;
  r.mean = p.mean;
  r.max = p.max;
  r.anomaly_score = p.anomaly_score;
  r.baseline_p99 = p.baseline_p99;
  r.forecast = p.forecast;
  r.forecast_lower = p.forecast_lower;
  r.forecast_upper = p.forecast_upper;
  r.heatmap = std::move(heatmap);
  return r;
}

HistoryPoint FromRow(const store::MinuteRow& r) {
  HistoryPoint p;
  p.time = r.time;
  p.count = r.count;
  p.p50 = r.p50;
  p.p90 = r.p90;
  p.p99 = r.p99;
  p.p999 = r.p999;
  p.mean = r.mean;
  p.max = r.max;
  p.anomaly_score = r.anomaly_score;
  p.baseline_p99 = r.baseline_p99;
  p.forecast = r.forecast;
  p.forecast_lower = r.forecast_lower;
  p.forecast_upper = r.forecast_upper;
  return p;
}

}  // namespace

// One minute of a series: its point and its heatmap row (EncodeHeatmapRow; "" when unknown).
struct LiveLoop::MinuteEntry {
  HistoryPoint point;
  std::string heatmap;
};

// Which per-minute column (a prefix of History()'s columns, each (end - step, end] with ends one
// step apart) a minute falls in.
class LiveLoop::ColumnIndex {
 public:
  ColumnIndex(std::span<const Column> columns, Duration step) : step_(step) {
    while (n_ < columns.size() && !columns[n_].exact) ++n_;
    if (n_ > 0) first_end_ = columns[0].end;
  }
  // The number of per-minute columns.
  size_t size() const { return n_; }
  // The column holding the minute that ends at `t`; nullopt when none does.
  std::optional<size_t> Of(WallTime t) const {
    if (n_ == 0 || t <= first_end_ - step_) return std::nullopt;
    const size_t k =
        t <= first_end_ ? 0 : static_cast<size_t>((t - first_end_ + step_ - Duration(1)) / step_);
    if (k >= n_) return std::nullopt;
    return k;
  }

 private:
  const Duration step_;
  size_t n_ = 0;
  WallTime first_end_{};
};

struct LiveLoop::SeriesState {
  std::string id;
  // The last hour of per-tick scores, for history.
  std::deque<TickScore> scores;
  // Per-minute points, for LiveLoopOptions::minute_history.
  std::deque<MinuteEntry> minutes;
};

absl::StatusOr<std::unique_ptr<LiveLoop>> LiveLoop::Create(Registry& registry, AlertConfig rules,
                                                           LiveLoopOptions options,
                                                           RouteCounterTable* counters) {
  if (options.tick <= Duration::zero()) {
    return absl::InvalidArgumentError("live loop: tick must be positive");
  }
  if (options.window < options.tick) {
    return absl::InvalidArgumentError("live loop: window must be at least one tick");
  }
  if (options.tick != registry.options().windows.slot) {
    // The windows, the error ratio's per-tick counts and the per-minute cut all count slots.
    return absl::InvalidArgumentError(
        Cat("live loop: tick (", FormatDuration(static_cast<double>(options.tick.count())),
            ") must equal the registry's slot (",
            FormatDuration(static_cast<double>(registry.options().windows.slot.count())), ")"));
  }
  std::unique_ptr<LiveLoop> loop(new LiveLoop(registry, options, counters));
  // Nobody else has the loop yet; the lock is for the analysis (checked by -Wthread-safety).
  MutexLock lock(&loop->mu_);
  AnalyzerOptions analysis = options.analysis;
  if (analysis.ensemble.step == Duration::zero()) analysis.ensemble.step = options.tick;
  if (options.journal != nullptr) analysis.muter = options.journal;
  absl::StatusOr<std::unique_ptr<Analyzer>> analyzer =
      Analyzer::Create(std::move(rules), std::move(analysis));
  if (!analyzer.ok()) return analyzer.status();
  loop->analyzer_ = *std::move(analyzer);
  // The store first, so that a timeline reader never sees what the store may not have.
  if (options.journal != nullptr) {
    loop->journal_subscriber_ = std::make_unique<analyze::JournalSubscriber>(*options.journal);
    loop->analyzer_->Subscribe(loop->journal_subscriber_.get());
  }
  loop->analyzer_->Subscribe(loop.get());
  if (options.diagnose) {
    // After the journal and the loop: the fire is in both before its diagnosis.
    LiveLoop* self = loop.get();
    loop->diagnoser_ = std::make_unique<analyze::LiveDiagnoser>(
        options.diagnosis, [self](const analyze::Diagnosis& d) {
          self->mu_.AssertHeld();  // the analyzer calls it inside Tick()
          self->OnDiagnosis(d);
        });
    loop->analyzer_->Subscribe(loop->diagnoser_.get());
  }
  if (options.host_signals) {
    loop->host_signals_ = std::make_unique<HostSignals>(registry);
    if (options.log != nullptr) {
      std::fprintf(options.log, "tailguard: %s\n", loop->host_signals_->Describe().c_str());
    }
  }
  AlertEngine& engine = loop->analyzer_->engine();
  if (options.journal != nullptr) {
    absl::StatusOr<std::optional<std::string>> state = options.journal->LoadState();
    if (!state.ok()) return state.status();
    bool restored = false;
    if (state->has_value()) {
      absl::Status status = engine.RestoreState(**state);
      restored = status.ok();
      if (!restored && options.log != nullptr) {
        // A state this version cannot read: start clean rather than refuse to serve. Alerts that
        // were active fire again when their breach is seen again.
        std::fprintf(options.log, "tailguard: alert state not restored (starting clean): %s\n",
                     std::string(status.message()).c_str());
      } else if (restored && options.log != nullptr) {
        std::fprintf(options.log, "tailguard: alert state restored: %zu active alert(s)\n",
                     engine.ActiveAlerts().size());
      }
    }
    // Episodes the store holds as active but the engine does not have (no state restored, or
    // their rule changed) are ended.
    absl::Status clean = options.journal->Reconcile(
        restored ? engine.ActiveAlerts() : std::vector<ActiveAlert>{}, registry.Now());
    if (!clean.ok()) return clean;
  }
  return loop;
}

LiveLoop::LiveLoop(Registry& registry, LiveLoopOptions options, RouteCounterTable* counters)
    : registry_(registry),
      options_(options),
      counters_(counters),
      last_boundary_(FloorMinute(registry.Now())) {
  RegistrySource::ErrorCounts errors;
  if (counters_ != nullptr) {
    errors = [this](const Series& s) -> std::optional<std::pair<uint64_t, uint64_t>> {
      auto it = route_of_total_.find(&s);
      if (it == route_of_total_.end()) return std::nullopt;
      uint64_t total = 0;
      for (const auto& c : it->second->by_code) total += Load(c);
      return std::pair{total, Load(it->second->failed)};
    };
  }
  source_ = std::make_unique<RegistrySource>(registry_, options_.window, std::move(errors));
}

LiveLoop::~LiveLoop() { Stop(); }

void LiveLoop::Subscribe(Subscriber* s) {
  MutexLock lock(&mu_);
  analyzer_->Subscribe(s);
}

std::string LiveLoop::SeriesId(std::string_view key) { return tailguard::SeriesId(key); }

void LiveLoop::Tick() {
  // Each route's total series, to find its counters (for the error ratio).
  if (counters_ != nullptr) {
    route_of_total_.clear();
    for (RouteCounters* rc : counters_->All()) {
      route_of_total_[&rc->metrics->stage(Stage::kTotal)] = rc;
    }
  }
  if (host_signals_ != nullptr) {
    host_signals_->Sample(
        std::chrono::duration<double>(registry_.Now().time_since_epoch()).count());
  }
  // Windows merge under each series' own lock; the source computes them before we take ours.
  Batch batch;
  if (absl::StatusOr<bool> got = source_->Next(batch); !got.ok() || !*got) return;
  const WallTime now = batch.time;
  const size_t score_ticks =
      static_cast<size_t>(std::chrono::hours(1) / std::max(options_.tick, Duration(1)));

  // The minutes that ended since the last tick: every later Collect() lands at or after `now`,
  // so their slots are final.
  const std::vector<WallTime> ends = MinutesEnded(now);
  const bool new_minute = !ends.empty();
  // minutes[i * ends.size() + j]: point i, minute ending at ends[j].
  std::vector<Histogram> minutes;
  std::vector<store::SeriesMinutes> batch_rows;  // for the history store
  minutes.reserve(batch.points.size() * ends.size());
  for (const SeriesPoint& p : batch.points) {
    for (WallTime end : ends) minutes.push_back(p.series->Window(std::chrono::minutes(1), end));
  }

  if (options_.journal != nullptr) options_.journal->BeginTick(now);  // reads the silences
  mu_.Lock();
  std::vector<PointVerdict> verdicts;
  analyzer_->Analyze(batch, &verdicts);  // events reach the subscribers here

  std::vector<SeriesSnapshot> snapshot;
  snapshot.reserve(batch.points.size());
  for (size_t i = 0; i < batch.points.size(); ++i) {
    const SeriesPoint& p = batch.points[i];
    const PointVerdict& v = verdicts[i];
    Series* s = p.series;
    auto [it, inserted] = states_.try_emplace(s);
    if (inserted) {
      it->second = std::make_unique<SeriesState>();
      it->second->id = SeriesId(s->key());
      by_id_[it->second->id] = s;
    }
    SeriesState& st = *it->second;

    SeriesSnapshot snap;
    snap.id = st.id;
    snap.series = s;
    HistoryPoint& stats = snap.stats;
    stats.time = now;
    CopyStats(p, stats);
    snap.rate = p.rate;
    snap.error_ratio = p.error_ratio;
    stats.anomaly_score = v.level;
    stats.baseline_p99 = v.baseline;
    stats.forecast = v.forecast.value;
    stats.forecast_lower = v.forecast.lower;
    stats.forecast_upper = v.forecast.upper;
    st.scores.push_back({now, static_cast<float>(v.level), static_cast<float>(v.baseline),
                         static_cast<float>(v.forecast.value), static_cast<float>(v.forecast.lower),
                         static_cast<float>(v.forecast.upper)});
    while (st.scores.size() > score_ticks) st.scores.pop_front();

    if (new_minute) {
      store::SeriesMinutes* rows = nullptr;
      if (options_.history != nullptr) {
        batch_rows.push_back({s->key(), s->name(), s->labels(), {}, s->unit()});
        rows = &batch_rows.back();
      }
      for (size_t j = 0; j < ends.size(); ++j) {
        const Histogram& minute = minutes[i * ends.size() + j];
        HistoryPoint m;
        m.time = ends[j];
        FillStats(minute, s->unit(), m);
        m.anomaly_score = stats.anomaly_score;
        m.baseline_p99 = stats.baseline_p99;
        m.forecast = stats.forecast;
        m.forecast_lower = stats.forecast_lower;
        m.forecast_upper = stats.forecast_upper;
        // Heatmaps are of latencies (their buckets start at 1 us).
        std::string heatmap = s->unit() == Unit::kNanoseconds
                                  ? EncodeHeatmapRow(HeatmapRowOf(minute))
                                  : std::string();
        if (rows != nullptr) rows->minutes.push_back(ToRow(m, heatmap));
        st.minutes.push_back({m, std::move(heatmap)});
      }
      while (!st.minutes.empty() && now - st.minutes.front().point.time > options_.minute_history) {
        st.minutes.pop_front();
      }
    }
    snapshot.push_back(std::move(snap));
  }
  // The store is written after the lock is released, so a slow disk never holds up the API.
  const AlertEngine& engine = analyzer_->engine();
  std::string engine_state;
  if (options_.journal != nullptr) engine_state = engine.SaveState();

  // The worst alert state per series.
  absl::flat_hash_map<std::string_view, SeriesSnapshot*> by_key;
  for (SeriesSnapshot& snap : snapshot) by_key[snap.series->key()] = &snap;
  for (const ActiveAlert& a : engine.ActiveAlerts()) {
    auto it = by_key.find(a.series);
    if (it != by_key.end() && a.state > it->second->alert_state) {
      it->second->alert_state = a.state;
      it->second->severity = a.severity;
      it->second->no_data = a.no_data;
    }
  }
  snapshot_ = std::move(snapshot);

  for (RequestMetrics* m : registry_.AllRequests()) {
    for (SampledRequest& r : m->sampler().Drain()) {
      samples_.push_back({m->labels(), r});
      if (samples_.size() > options_.sample_capacity) samples_.pop_front();
    }
  }
  mu_.Unlock();
  // Only this thread uses the journal.
  if (options_.journal != nullptr) options_.journal->Commit(engine_state);
  if (options_.history != nullptr && new_minute) Persist(batch_rows, now);
  ticks_.fetch_add(1, std::memory_order_relaxed);
}

void LiveLoop::Persist(const std::vector<store::SeriesMinutes>& batch, WallTime now) {
  auto failed = [&](std::string_view what, const absl::Status& s) {
    history_write_failures_.fetch_add(1, std::memory_order_relaxed);
    if (options_.log != nullptr) {
      std::fprintf(options_.log, "tailguard: history %s failed (skipped): %s\n",
                   std::string(what).c_str(), std::string(s.message()).c_str());
      std::fflush(options_.log);
    }
  };
  if (absl::Status s = options_.history->WriteMinutes(batch); !s.ok()) failed("write", s);
  // A pass about once an hour, in bounded batches: one batch a minute until it is done.
  if (prune_pending_ || now - last_prune_ >= std::chrono::hours(1)) {
    if (!prune_pending_) last_prune_ = now;
    absl::StatusOr<store::PruneResult> pruned =
        options_.history->Prune(now - options_.history_retention, options_.history_prune_batch);
    prune_pending_ = pruned.ok() && !pruned->done;
    if (!pruned.ok()) failed("prune", pruned.status());
  }
}

std::vector<WallTime> LiveLoop::MinutesEnded(WallTime now) {
  using std::chrono::minutes;
  std::vector<WallTime> ends;
  const WallTime boundary = FloorMinute(now);
  if (boundary <= last_boundary_) return ends;
  // Window(1 min, B) reads the fine slot ring (or, when that is shorter than a minute, the
  // coarse one); a minute that begins before what the ring surely still holds is skipped.
  const WindowOptions& w = registry_.options().windows;
  const Duration fine = w.slot * w.fine_slots;
  const Duration kept =
      minutes(1) <= fine ? fine : fine + w.slot * w.coarse_factor * w.coarse_slots;
  const WallTime oldest_begin = now - kept + w.slot;
  WallTime first = last_boundary_ + minutes(1);
  if (first - minutes(1) < oldest_begin) {
    // The first B with B - 1 min >= oldest_begin.
    first = FloorMinute(oldest_begin - Duration(1)) + minutes(2);
  }
  for (WallTime b = first; b <= boundary; b += minutes(1)) ends.push_back(b);
  last_boundary_ = boundary;
  return ends;
}

void LiveLoop::PushEvent(TimelineEvent e) {
  e.id = next_event_id_++;
  if (options_.log != nullptr) {
    std::fprintf(options_.log, "tailguard: %s %s\n", FormatTimestampUtc(e.time).c_str(),
                 e.message.c_str());
    std::fflush(options_.log);
  }
  events_.push_back(std::move(e));
  while (events_.size() > options_.event_capacity) events_.pop_front();
}

void LiveLoop::OnAlertEvent(const AlertEvent& event) {
  TimelineEvent e;
  e.time = event.time;
  e.type = "alert";
  e.kind = std::string(AlertEventKindName(event.kind));
  e.rule = event.rule;
  e.series = event.series;
  e.severity = event.severity;
  e.statistic = std::string(StatisticName(event.stat));
  e.unit = std::string(UnitName(event.unit));
  e.value = event.value;
  e.threshold = event.threshold;
  e.baseline_p99 = event.baseline_p99;
  // Each statistic in its own unit, as the notifications show it.
  const auto show = [&](Statistic s, double v) {
    return notify::FormatStatValue(s, v, event.unit);
  };
  e.message = Cat(e.kind, " ", event.severity, " ", event.rule, " on ", event.series, ": ",
                  StatisticName(event.stat), " ", show(event.stat, event.value), " (threshold ",
                  show(event.stat, event.threshold), ", baseline P99 ",
                  show(Statistic::kP99, event.baseline_p99), ")");
  PushEvent(std::move(e));
}

void LiveLoop::OnNotification(const Notification& n) {
  TimelineEvent e;
  e.time = n.time;
  e.type = "notification";
  e.kind = std::string(NotifyStatusName(n.status));
  e.receiver = n.receiver;
  e.message = Cat("notify ", n.receiver, " ", e.kind, " ", n.group_key, ": ",
                  std::to_string(n.alerts.size()), " alert(s)", n.repeat ? " (repeat)" : "");
  PushEvent(std::move(e));
}

void LiveLoop::OnMuted(const MutedAlert& muted) {
  TimelineEvent e;
  e.time = muted.time;
  e.type = "muted";
  e.kind = muted.reason;
  e.rule = muted.rule;
  e.series = muted.series;
  e.message = Cat("muted (", muted.reason, muted.detail.empty() ? "" : Cat(": ", muted.detail),
                  ") ", muted.rule, " on ", muted.series);
  PushEvent(std::move(e));
}

void LiveLoop::OnAnomaly(const AnomalyEvent& a) {
  TimelineEvent e;
  e.time = a.time;
  e.type = "anomaly";
  e.kind = "anomaly";
  e.series = a.series;
  e.statistic = std::string(StatisticName(Statistic::kP99));
  e.unit = std::string(UnitName(a.unit));
  e.value = a.p99;
  e.baseline_p99 = a.baseline;
  e.message = Cat("anomaly on ", a.series, ": P99 ", metrics::FormatInUnit(a.p99, a.unit),
                  std::isnan(a.baseline)
                      ? std::string()
                      : Cat(" against a baseline of ", metrics::FormatInUnit(a.baseline, a.unit)),
                  " (score ", std::to_string(a.score).substr(0, 4), ")");
  PushEvent(std::move(e));
}

void LiveLoop::OnDrift(const DriftEvent& d) {
  TimelineEvent e;
  e.time = d.time;
  e.type = "drift";
  e.kind = d.drifting ? "began" : "ended";
  e.series = d.series;
  e.statistic = std::string(StatisticName(Statistic::kP99));
  e.message = d.drifting ? Cat("drift on ", d.series, ": P99 ", d.finding.Describe())
                         : Cat("drift ended on ", d.series, ": P99 no longer trending");
  PushEvent(std::move(e));
}

void LiveLoop::OnAction(const ActionRecord& a) {
  TimelineEvent e;
  e.time = a.time;
  e.type = "action";
  e.kind = std::string(ActionDecisionName(a.outcome.decision));
  e.action = a.action;
  e.rule = a.cause.rule;
  e.series = a.cause.series;
  e.severity = a.cause.severity;
  e.message = Cat("action ", a.action, " (", a.cause.severity, " ", a.cause.rule, " on ",
                  a.cause.series, "): ", a.outcome.detail);
  PushEvent(std::move(e));
}

void LiveLoop::OnDiagnosis(const analyze::Diagnosis& d) {
  TimelineEvent e;
  e.time = d.alert_time;
  e.type = "diagnosis";
  e.kind = std::string(diagnose::QuadrantName(d.quadrant));
  e.rule = d.rule;
  e.series = d.series;
  e.message = Cat("diagnosis of ", d.rule, " on ", d.series, ": ", d.summary);
  PushEvent(std::move(e));  // logs it too
  if (options_.journal == nullptr) return;
  store::DiagnosisRow row;
  row.time = d.alert_time;
  row.quadrant = std::string(diagnose::QuadrantName(d.quadrant));
  row.summary = d.summary;
  row.contention = d.contention;
  for (const analyze::ChangeEvent& c : d.changes) {
    row.changes.push_back(
        {c.time, std::string(diagnose::QuadrantName(c.quadrant)), c.subject, c.what});
  }
  row.symptoms = d.symptoms;
  row.series_considered = static_cast<int64_t>(d.series_considered);
  row.seconds = d.seconds;
  int rank = 0;
  for (const analyze::DiagnosedCause& c : d.causes) {
    const diagnose::Candidate& k = c.candidate;
    store::DiagnosisCauseRow r;
    r.rank = ++rank;
    r.series = k.series;
    r.quadrant = std::string(diagnose::QuadrantName(k.signal.quadrant));
    r.kind = k.signal.kind == diagnose::SignalKind::kCause ? "cause" : "symptom";
    r.score = k.evidence.score;
    r.confidence = k.confidence;
    r.baseline_median = k.evidence.baseline.median;
    r.baseline_q1 = k.evidence.baseline.q1;
    r.baseline_q3 = k.evidence.baseline.q3;
    r.peak = k.evidence.peak;
    r.onset = WallTime(
        std::chrono::duration_cast<Duration>(std::chrono::duration<double>(k.evidence.onset_time)));
    r.explained = c.explained;
    r.rationale = k.rationale;
    r.points = c.points;
    row.causes.push_back(std::move(r));
  }
  options_.journal->OnDiagnosis(d.rule, d.series, std::move(row));
}

std::optional<analyze::Diagnosis> LiveLoop::LatestDiagnosis(std::string_view rule,
                                                            std::string_view series) const {
  MutexLock lock(&mu_);
  if (diagnoser_ == nullptr) return std::nullopt;
  const analyze::Diagnosis* d = diagnoser_->Latest(rule, series);
  if (d == nullptr) return std::nullopt;
  return *d;
}

void LiveLoop::Start() {
  {
    MutexLock lock(&run_mu_);
    if (thread_.joinable()) return;
    stop_ = false;
  }
  thread_ = std::thread([this] { RunTicks(); });
}

void LiveLoop::RunTicks() {
  // The thread sleeps in real time between ticks; what a tick reads is the registry's clock.
  auto next = std::chrono::steady_clock::now() + options_.tick;
  while (true) {
    {
      MutexLock lock(&run_mu_);
      while (!stop_ && run_cv_.WaitUntil(&run_mu_, next)) {
      }
      if (stop_) return;
    }
    Tick();
    next += options_.tick;
    // After a stall (a suspended process), skip the missed ticks instead of bursting.
    const auto now = std::chrono::steady_clock::now();
    if (next < now) next = now + options_.tick;
  }
}

void LiveLoop::Stop() {
  {
    MutexLock lock(&run_mu_);
    stop_ = true;
  }
  run_cv_.SignalAll();
  if (thread_.joinable()) thread_.join();
}

std::vector<SeriesSnapshot> LiveLoop::Snapshot() const {
  MutexLock lock(&mu_);
  return snapshot_;
}

Series* LiveLoop::FindSeries(std::string_view id) const {
  MutexLock lock(&mu_);
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : it->second;
}

absl::StatusOr<Series*> LiveLoop::Resolve(std::string_view id) const {
  absl::StatusOr<std::pair<Series*, Unit>> r = ResolveWithUnit(id);
  if (!r.ok()) return r.status();
  return r->first;
}

absl::StatusOr<std::pair<Series*, Unit>> LiveLoop::ResolveWithUnit(std::string_view id) const {
  if (Series* series = FindSeries(id); series != nullptr) {
    return std::make_pair(series, series->unit());
  }
  if (options_.history != nullptr) {
    absl::StatusOr<std::optional<store::StoredSeriesInfo>> stored =
        options_.history->FindSeries(id);
    if (!stored.ok()) return stored.status();
    if (stored->has_value()) return std::make_pair(static_cast<Series*>(nullptr), (*stored)->unit);
  }
  return absl::NotFoundError(Cat("no series with id \"", id, "\"; see /api/v1/series"));
}

absl::StatusOr<std::vector<LiveLoop::Column>> LiveLoop::Columns(Series* series, WallTime from,
                                                                WallTime to, Duration step) const {
  // Within the window span of a live series columns are exact; older ones (and every column of
  // a series only the store knows) come from per-minute data, at least a minute apart.
  const WallTime exact_from =
      series != nullptr ? registry_.Now() - std::chrono::hours(1) : WallTime::max();
  const Duration old_step = std::max(step, Duration(std::chrono::minutes(1)));
  std::vector<Column> out;
  for (WallTime t = from + step; t <= to;) {
    if (out.size() >= kMaxHistoryPoints) {
      return absl::InvalidArgumentError(
          Cat("more than ", std::to_string(kMaxHistoryPoints), " points; use a larger step"));
    }
    const bool exact = t - step >= exact_from;
    out.push_back({t, exact});
    t += exact ? step : old_step;
  }
  return out;
}

absl::Status LiveLoop::VisitMinutes(
    std::string_view id, Series* series, WallTime lo, WallTime hi, bool heatmaps,
    absl::FunctionRef<void(const HistoryPoint&, const HeatmapRow*)> visit) const {
  // Nothing older than the retention is kept, and nothing newer than the current minute exists.
  const WallTime now = registry_.Now();
  lo = std::max(lo, now - options_.history_retention);
  hi = std::min(hi, now + std::chrono::minutes(1));
  if (hi <= lo) return absl::OkStatus();
  if (const int64_t span = (hi - lo) / std::chrono::minutes(1); span > kMaxHistoryMinutes) {
    return absl::InvalidArgumentError(
        Cat("the per-minute part of this range spans ", span, " minutes; at most ",
            kMaxHistoryMinutes, " minutes (about 69 days) are read per series: narrow from/to"));
  }
  std::vector<MinuteEntry> memory;
  WallTime store_hi = hi;
  if (series != nullptr) {
    MutexLock lock(&mu_);
    auto it = states_.find(series);
    if (it != states_.end()) {
      for (const MinuteEntry& m : it->second->minutes) {
        if (m.point.time > lo && m.point.time <= hi) memory.push_back(m);
      }
      // The store holds what is older than the oldest minute in memory.
      if (!it->second->minutes.empty()) {
        store_hi = std::min(hi, it->second->minutes.front().point.time - Duration(1));
      }
    }
  }
  if (options_.history != nullptr && lo < store_hi) {
    absl::Status s = options_.history->VisitMinutes(
        id, lo, store_hi, heatmaps,
        [&](const store::MinuteRow& r, const HeatmapRow* h) { visit(FromRow(r), h); });
    if (!s.ok()) return s;
  }
  for (const MinuteEntry& m : memory) {
    if (!heatmaps || m.heatmap.empty()) {
      visit(m.point, nullptr);
      continue;
    }
    // Our own encoding: a row that does not decode is left out rather than failing the view.
    absl::StatusOr<HeatmapRow> row = DecodeHeatmapRow(m.heatmap);
    visit(m.point, row.ok() ? &*row : nullptr);
  }
  return absl::OkStatus();
}

absl::StatusOr<LiveLoop::Plan> LiveLoop::PlanRange(std::string_view id, WallTime from, WallTime to,
                                                   Duration step) const {
  if (step <= Duration::zero()) return absl::InvalidArgumentError("step must be positive");
  if (to < from) return absl::InvalidArgumentError("`to` is before `from`");
  absl::StatusOr<std::pair<Series*, Unit>> series = ResolveWithUnit(id);
  if (!series.ok()) return series.status();
  absl::StatusOr<std::vector<Column>> columns = Columns(series->first, from, to, step);
  if (!columns.ok()) return columns.status();
  return Plan{series->first, series->second, *std::move(columns),
              std::max(step, Duration(std::chrono::minutes(1)))};
}

absl::StatusOr<std::vector<HistoryPoint>> LiveLoop::History(std::string_view id, WallTime from,
                                                            WallTime to, Duration step) const {
  absl::StatusOr<Plan> plan = PlanRange(id, from, to, step);
  if (!plan.ok()) return plan.status();
  Series* const series = plan->series;
  const std::vector<Column>& columns = plan->columns;
  const Duration old_step = plan->old_step;

  std::vector<HistoryPoint> out;
  out.reserve(columns.size());
  for (const Column& c : columns) {
    out.emplace_back();
    out.back().time = c.end;
  }
  // The per-minute columns are a prefix; each minute is folded into its column as it is read.
  const ColumnIndex old(columns, old_step);
  if (old.size() > 0) {
    std::vector<double> weighted_mean(old.size(), 0);
    absl::Status s =
        VisitMinutes(id, series, columns[0].end - old_step, columns[old.size() - 1].end,
                     /*heatmaps=*/false, [&](const HistoryPoint& m, const HeatmapRow*) {
                       const std::optional<size_t> k = old.Of(m.time);
                       if (k) Fold(m, out[*k], weighted_mean[*k]);
                     });
    if (!s.ok()) return s;
    for (size_t k = 0; k < old.size(); ++k) {
      if (out[k].count > 0) out[k].mean = weighted_mean[k] / static_cast<double>(out[k].count);
    }
  }

  std::deque<TickScore> scores;
  if (series != nullptr && old.size() < columns.size()) {
    MutexLock lock(&mu_);
    auto it = states_.find(series);
    if (it != states_.end()) scores = it->second->scores;
  }
  for (size_t k = old.size(); k < columns.size(); ++k) {
    const WallTime t = columns[k].end;
    HistoryPoint& p = out[k];
    FillStats(series->Window(step, t), series->unit(), p);
    // The score of the last tick at or before t.
    auto s = std::upper_bound(scores.begin(), scores.end(), t,
                              [](WallTime v, const TickScore& x) { return v < x.time; });
    if (s != scores.begin()) {
      --s;
      if (t - s->time <= step) {
        p.anomaly_score = s->score;
        p.baseline_p99 = s->baseline;
        p.forecast = s->forecast;
        p.forecast_lower = s->forecast_lower;
        p.forecast_upper = s->forecast_upper;
      }
    }
  }
  return out;
}

absl::StatusOr<tailguard::Heatmap> LiveLoop::Heatmap(std::string_view id, WallTime from,
                                                     WallTime to, Duration step) const {
  absl::StatusOr<Plan> plan = PlanRange(id, from, to, step);
  if (!plan.ok()) return plan.status();
  Series* const series = plan->series;
  // Heatmaps are of latencies: a size or a count, live or known only to the store, says so.
  if (plan->unit != Unit::kNanoseconds) {
    return absl::InvalidArgumentError(Cat("series ", id, " measures ", UnitName(plan->unit),
                                          ": heatmaps are of latencies; ask for its history"));
  }
  const std::vector<Column>& columns = plan->columns;
  const Duration old_step = plan->old_step;

  std::vector<WallTime> times;
  times.reserve(columns.size());
  for (const Column& c : columns) times.push_back(c.end);
  std::vector<HeatmapRow> rows(columns.size());
  const ColumnIndex old(columns, old_step);
  if (old.size() > 0) {
    // Minutes arrive oldest first, so one dense row at a time: the column being filled.
    std::vector<uint64_t> dense(kHeatmapBucketCount, 0);
    std::optional<size_t> filling;
    auto flush = [&] {
      if (!filling) return;
      rows[*filling] = SparseHeatmapRow(dense);
      std::fill(dense.begin(), dense.end(), 0);
      filling.reset();
    };
    absl::Status s =
        VisitMinutes(id, series, columns[0].end - old_step, columns[old.size() - 1].end,
                     /*heatmaps=*/true, [&](const HistoryPoint& m, const HeatmapRow* row) {
                       const std::optional<size_t> k = old.Of(m.time);
                       if (!k || row == nullptr) return;
                       if (filling != k) {
                         flush();
                         filling = k;
                       }
                       AddHeatmapRow(*row, dense);
                     });
    if (!s.ok()) return s;
    flush();
  }
  for (size_t k = old.size(); k < columns.size(); ++k) {
    rows[k] = HeatmapRowOf(series->Window(step, columns[k].end));
  }
  return MakeHeatmap(std::move(times), rows);
}

std::vector<StoredSeries> LiveLoop::StoredSeries() const {
  std::vector<server::StoredSeries> out;
  if (options_.history == nullptr) return out;
  absl::StatusOr<std::vector<store::StoredSeriesInfo>> all = options_.history->ListSeries();
  if (!all.ok()) {
    history_read_failures_.fetch_add(1, std::memory_order_relaxed);
    return out;
  }
  MutexLock lock(&mu_);
  for (store::StoredSeriesInfo& s : *all) {
    if (by_id_.contains(s.id)) continue;
    out.push_back({std::move(s.id), std::move(s.key), std::move(s.metric), std::move(s.labels),
                   s.first, s.last, s.unit});
  }
  return out;
}

std::vector<ActiveAlert> LiveLoop::ActiveAlerts() const {
  MutexLock lock(&mu_);
  return analyzer_->engine().ActiveAlerts();
}

std::vector<TimelineEvent> LiveLoop::Events(uint64_t after_id, size_t limit) const {
  MutexLock lock(&mu_);
  std::vector<TimelineEvent> out;
  // The newest `limit` after `after_id`, returned oldest first.
  for (auto it = events_.rbegin(); it != events_.rend() && out.size() < limit; ++it) {
    if (it->id <= after_id) break;
    out.push_back(*it);
  }
  std::reverse(out.begin(), out.end());
  return out;
}

std::vector<SampleView> LiveLoop::SlowestSamples(Duration within, size_t limit) const {
  const WallTime since = registry_.Now() - within;
  std::vector<SampleView> out;
  {
    MutexLock lock(&mu_);
    for (const SampleView& s : samples_) {
      if (s.sample.record.start >= since) out.push_back(s);
    }
  }
  // And those kept since the last tick, still in the samplers.
  for (RequestMetrics* m : registry_.AllRequests()) {
    for (SampledRequest& r : m->sampler().Snapshot()) {
      if (r.record.start >= since) out.push_back({m->labels(), r});
    }
  }
  std::sort(out.begin(), out.end(), [](const SampleView& a, const SampleView& b) {
    return a.sample.record.total_ns() > b.sample.record.total_ns();
  });
  if (out.size() > limit) out.resize(limit);
  return out;
}

}  // namespace tailguard::server
