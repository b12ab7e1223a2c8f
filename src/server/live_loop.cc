// The live analysis loop.
#include "server/live_loop.h"

#include <algorithm>
#include <cinttypes>
#include <cmath>

#include "alert/notify/journal.h"
#include "common/format.h"
#include "common/strings.h"
#include "tailguard/series_io.h"

namespace tailguard::server {
namespace {

constexpr double kNs = 1e-9;
// An anomaly event is logged when the once-per-incident score reaches this (one in 100 000).
constexpr double kAnomalyEventScore = 0.5;
constexpr size_t kMaxHistoryPoints = 11000;

double Seconds(uint64_t ns) { return static_cast<double>(ns) * kNs; }

void FillStats(const Histogram& h, HistoryPoint& p) {
  p.count = h.count();
  if (h.empty()) return;
  p.p50 = Seconds(h.Quantile(0.5));
  p.p90 = Seconds(h.Quantile(0.9));
  p.p99 = Seconds(h.Quantile(0.99));
  p.p999 = Seconds(h.Quantile(0.999));
  p.mean = h.mean() * kNs;
  p.max = Seconds(h.max());
}

// What a series remembers between ticks.
struct TickScore {
  WallTime time{};
  float score = 0;
  float baseline = 0;
};

}  // namespace

struct LiveLoop::SeriesState {
  std::string id;
  AnomalyDetector detector;
  RouteCounters* counters = nullptr;  // for a route's total series
  // Per-tick (count, failed) of the route, for the error ratio over the window.
  std::deque<std::pair<uint64_t, uint64_t>> recent;
  uint64_t last_total = 0, last_failed = 0;
  // The last hour of per-tick scores, for history.
  std::deque<TickScore> scores;
  std::deque<HistoryPoint> minutes;
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
  std::unique_ptr<LiveLoop> loop(new LiveLoop(registry, options, counters));
  absl::StatusOr<std::unique_ptr<AlertEngine>> engine =
      AlertEngine::Create(std::move(rules), *loop, options.journal);
  if (!engine.ok()) return engine.status();
  loop->engine_ = std::move(*engine);
  if (options.journal != nullptr) {
    absl::StatusOr<std::optional<std::string>> state = options.journal->LoadState();
    if (!state.ok()) return state.status();
    bool restored = false;
    if (state->has_value()) {
      absl::Status status = loop->engine_->RestoreState(**state);
      restored = status.ok();
      if (!restored && options.log != nullptr) {
        // A state this version cannot read: start clean rather than refuse to serve. Alerts that
        // were active fire again when their breach is seen again.
        std::fprintf(options.log, "tailguard: alert state not restored (starting clean): %s\n",
                     std::string(status.message()).c_str());
      } else if (restored && options.log != nullptr) {
        std::fprintf(options.log, "tailguard: alert state restored: %zu active alert(s)\n",
                     loop->engine_->ActiveAlerts().size());
      }
    }
    // Episodes the store holds as active but the engine does not have (no state restored, or
    // their rule changed) are ended.
    absl::Status clean = options.journal->Reconcile(
        restored ? loop->engine_->ActiveAlerts() : std::vector<ActiveAlert>{}, registry.Now());
    if (!clean.ok()) return clean;
  }
  return loop;
}

LiveLoop::LiveLoop(Registry& registry, LiveLoopOptions options, RouteCounterTable* counters)
    : registry_(registry), options_(options), counters_(counters) {}

LiveLoop::~LiveLoop() { Stop(); }

std::string LiveLoop::SeriesId(std::string_view key) {
  uint64_t h = 14695981039346656037ull;
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
  return buf;
}

void LiveLoop::Tick() {
  registry_.Collect();
  const WallTime now = registry_.Now();
  const std::vector<Series*> all = registry_.AllSeries();
  // Each route's total series, to find its counters (for the error ratio).
  absl::flat_hash_map<const Series*, RouteCounters*> route_of_total;
  if (counters_ != nullptr) {
    for (RouteCounters* rc : counters_->All()) {
      route_of_total[&rc->metrics->stage(Stage::kTotal)] = rc;
    }
  }
  const size_t window_ticks = static_cast<size_t>(options_.window / options_.tick);
  const double window_seconds = std::chrono::duration<double>(options_.window).count();
  const size_t score_ticks =
      static_cast<size_t>(std::chrono::hours(1) / std::max(options_.tick, Duration(1)));

  // Windows merge under each series' own lock; compute them before taking ours.
  std::vector<Histogram> windows;
  windows.reserve(all.size());
  for (Series* s : all) windows.push_back(s->Window(options_.window, now));
  const bool new_minute = now - last_minute_ >= std::chrono::minutes(1);
  std::vector<Histogram> minutes;
  if (new_minute) {
    for (Series* s : all) minutes.push_back(s->Window(std::chrono::minutes(1), now));
  }

  if (options_.journal != nullptr) options_.journal->BeginTick(now);  // reads the silences
  std::unique_lock<std::mutex> lock(mu_);
  if (new_minute) last_minute_ = now;
  std::vector<SeriesSnapshot> snapshot;
  snapshot.reserve(all.size());
  for (size_t i = 0; i < all.size(); ++i) {
    Series* s = all[i];
    auto [it, inserted] = states_.try_emplace(s);
    if (inserted) {
      it->second = std::make_unique<SeriesState>();
      it->second->id = SeriesId(s->key());
      by_id_[it->second->id] = s;
      EnsembleOptions ensemble;
      ensemble.step = options_.tick;
      it->second->detector = AnomalyDetector(ensemble);
    }
    SeriesState& st = *it->second;
    if (st.counters == nullptr) {
      auto rc = route_of_total.find(s);
      if (rc != route_of_total.end()) st.counters = rc->second;
    }

    SeriesSnapshot snap;
    snap.id = st.id;
    snap.series = s;
    HistoryPoint& stats = snap.stats;
    stats.time = now;
    FillStats(windows[i], stats);
    snap.rate = static_cast<double>(stats.count) / window_seconds;

    if (st.counters != nullptr) {
      uint64_t total = 0;
      for (const auto& c : st.counters->by_code) total += Load(c);
      const uint64_t failed = Load(st.counters->failed);
      st.recent.emplace_back(total - st.last_total, failed - st.last_failed);
      st.last_total = total;
      st.last_failed = failed;
      while (st.recent.size() > window_ticks) st.recent.pop_front();
      uint64_t n = 0, f = 0;
      for (const auto& [dn, df] : st.recent) {
        n += dn;
        f += df;
      }
      if (n > 0) snap.error_ratio = static_cast<double>(f) / static_cast<double>(n);
    }

    const AnomalyPoint a = st.detector.Update(now, stats.p99);
    stats.anomaly_score = std::isnan(stats.p99) ? 0 : a.level;
    stats.baseline_p99 = a.baseline;
    st.scores.push_back(
        {now, static_cast<float>(stats.anomaly_score), static_cast<float>(a.baseline)});
    while (st.scores.size() > score_ticks) st.scores.pop_front();

    if (a.score >= kAnomalyEventScore && !std::isnan(stats.p99)) {
      TimelineEvent e;
      e.time = now;
      e.type = "anomaly";
      e.kind = "anomaly";
      e.series = s->key();
      e.value = stats.p99;
      e.baseline_p99 = a.baseline;
      e.message = Cat("anomaly on ", s->key(), ": P99 ", FormatDuration(stats.p99 * 1e9),
                      std::isnan(a.baseline)
                          ? std::string()
                          : Cat(" against a baseline of ", FormatDuration(a.baseline * 1e9)),
                      " (score ", std::to_string(a.score).substr(0, 4), ")");
      PushEvent(std::move(e));
    }

    Observation obs;
    obs.time = now;
    obs.metric = s->name();
    obs.labels = s->labels();
    obs.p50 = stats.p50;
    obs.p90 = stats.p90;
    obs.p99 = stats.p99;
    obs.p999 = stats.p999;
    obs.rate = snap.rate;
    obs.error_ratio = snap.error_ratio;
    obs.anomaly_score = stats.anomaly_score;
    obs.baseline_p99 = stats.baseline_p99;
    engine_->Observe(obs);

    if (new_minute) {
      HistoryPoint p;
      p.time = now;
      FillStats(minutes[i], p);
      p.anomaly_score = stats.anomaly_score;
      p.baseline_p99 = stats.baseline_p99;
      st.minutes.push_back(p);
      while (!st.minutes.empty() && now - st.minutes.front().time > options_.minute_history) {
        st.minutes.pop_front();
      }
    }
    snapshot.push_back(std::move(snap));
  }
  engine_->Advance(now);
  // The store is written after the lock is released, so a slow disk never holds up the API.
  std::string engine_state;
  if (options_.journal != nullptr) engine_state = engine_->SaveState();

  // The worst alert state per series.
  absl::flat_hash_map<std::string_view, SeriesSnapshot*> by_key;
  for (SeriesSnapshot& snap : snapshot) by_key[snap.series->key()] = &snap;
  for (const ActiveAlert& a : engine_->ActiveAlerts()) {
    auto it = by_key.find(a.series);
    if (it != by_key.end() && a.state > it->second->alert_state) {
      it->second->alert_state = a.state;
      it->second->severity = a.severity;
    }
  }
  snapshot_ = std::move(snapshot);

  for (RequestMetrics* m : registry_.AllRequests()) {
    for (SampledRequest& r : m->sampler().Drain()) {
      samples_.push_back({m->labels(), r});
      if (samples_.size() > options_.sample_capacity) samples_.pop_front();
    }
  }
  lock.unlock();
  // Only this thread uses the journal.
  if (options_.journal != nullptr) options_.journal->Commit(engine_state);
  ticks_.fetch_add(1, std::memory_order_relaxed);
}

void LiveLoop::PushEvent(TimelineEvent e) {
  e.id = next_event_id_++;
  if (options_.log != nullptr) {
    std::fprintf(options_.log, "tailguard: %s %s\n", FormatTimestamp(e.time).c_str(),
                 e.message.c_str());
    std::fflush(options_.log);
  }
  events_.push_back(std::move(e));
  while (events_.size() > options_.event_capacity) events_.pop_front();
}

void LiveLoop::OnEvent(const AlertEvent& event) {
  if (options_.journal != nullptr) options_.journal->OnEvent(event);
  TimelineEvent e;
  e.time = event.time;
  e.type = "alert";
  e.kind = std::string(AlertEventKindName(event.kind));
  e.rule = event.rule;
  e.series = event.series;
  e.severity = event.severity;
  e.value = event.value;
  e.threshold = event.threshold;
  e.baseline_p99 = event.baseline_p99;
  const bool latency = IsLatencyStatistic(event.stat);
  auto show = [&](double v) {
    if (std::isnan(v)) return std::string("n/a");
    return latency ? FormatDuration(v * 1e9) : std::to_string(v).substr(0, 6);
  };
  e.message = Cat(e.kind, " ", event.severity, " ", event.rule, " on ", event.series, ": ",
                  StatisticName(event.stat), " ", show(event.value), " (threshold ",
                  show(event.threshold), ", baseline ", show(event.baseline_p99), ")");
  PushEvent(std::move(e));
}

void LiveLoop::OnNotification(const Notification& n) {
  if (options_.journal != nullptr) options_.journal->OnNotification(n);
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
  if (options_.journal != nullptr) options_.journal->OnMuted(muted);
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

void LiveLoop::Start() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    if (thread_.joinable()) return;
    stop_ = false;
  }
  thread_ = std::thread([this] {
    auto next = std::chrono::steady_clock::now() + options_.tick;
    std::unique_lock<std::mutex> lock(run_mu_);
    while (!stop_) {
      if (run_cv_.wait_until(lock, next, [this] { return stop_; })) break;
      lock.unlock();
      Tick();
      lock.lock();
      next += options_.tick;
      // After a stall (a suspended process), skip the missed ticks instead of bursting.
      const auto now = std::chrono::steady_clock::now();
      if (next < now) next = now + options_.tick;
    }
  });
}

void LiveLoop::Stop() {
  {
    std::lock_guard<std::mutex> lock(run_mu_);
    stop_ = true;
  }
  run_cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

std::vector<SeriesSnapshot> LiveLoop::Snapshot() const {
  std::lock_guard<std::mutex> lock(mu_);
  return snapshot_;
}

Series* LiveLoop::FindSeries(std::string_view id) const {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = by_id_.find(std::string(id));
  return it == by_id_.end() ? nullptr : it->second;
}

absl::StatusOr<std::vector<HistoryPoint>> LiveLoop::History(std::string_view id, WallTime from,
                                                            WallTime to, Duration step) const {
  if (step <= Duration::zero()) return absl::InvalidArgumentError("step must be positive");
  if (to < from) return absl::InvalidArgumentError("`to` is before `from`");
  Series* series = FindSeries(id);
  if (series == nullptr) {
    return absl::NotFoundError(Cat("no series with id \"", id, "\"; see /api/v1/series"));
  }
  const WallTime now = registry_.Now();
  const WallTime exact_from = now - std::chrono::hours(1);
  // Older than the window span: per-minute points, at least a minute apart.
  const Duration old_step = std::max(step, Duration(std::chrono::minutes(1)));
  size_t points = 0;
  for (WallTime t = from + step; t <= to && points <= kMaxHistoryPoints;
       t += (t - step < exact_from ? old_step : step)) {
    ++points;
  }
  if (points > kMaxHistoryPoints) {
    return absl::InvalidArgumentError(
        Cat("more than ", std::to_string(kMaxHistoryPoints), " points; use a larger step"));
  }

  std::vector<HistoryPoint> out;
  std::deque<HistoryPoint> minutes;
  std::deque<TickScore> scores;
  {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = states_.find(series);
    if (it != states_.end()) {
      minutes = it->second->minutes;
      scores = it->second->scores;
    }
  }
  for (WallTime t = from + step; t <= to;) {
    const bool exact = t - step >= exact_from;
    HistoryPoint p;
    p.time = t;
    if (exact) {
      FillStats(series->Window(step, t), p);
      // The score of the last tick at or before t.
      auto s = std::upper_bound(scores.begin(), scores.end(), t,
                                [](WallTime v, const TickScore& x) { return v < x.time; });
      if (s != scores.begin()) {
        --s;
        if (t - s->time <= step) {
          p.anomaly_score = s->score;
          p.baseline_p99 = s->baseline;
        }
      }
      t += step;
    } else {
      // Every per-minute point in (t - old_step, t]: counts add, the rest take the worst.
      const WallTime begin = t - old_step;
      double weighted_mean = 0;
      for (const HistoryPoint& m : minutes) {
        if (m.time <= begin || m.time > t) continue;
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
        if (m.count > 0) weighted_mean += m.mean * static_cast<double>(m.count);
        p.count += m.count;
      }
      if (p.count > 0) p.mean = weighted_mean / static_cast<double>(p.count);
      t += old_step;
    }
    out.push_back(p);
  }
  return out;
}

std::vector<ActiveAlert> LiveLoop::ActiveAlerts() const {
  std::lock_guard<std::mutex> lock(mu_);
  return engine_->ActiveAlerts();
}

std::vector<TimelineEvent> LiveLoop::Events(uint64_t after_id, size_t limit) const {
  std::lock_guard<std::mutex> lock(mu_);
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
    std::lock_guard<std::mutex> lock(mu_);
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
