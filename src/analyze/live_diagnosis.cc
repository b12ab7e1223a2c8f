#include "analyze/live_diagnosis.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>

#include "common/strings.h"
#include "metrics/series_key.h"

namespace tailguard::analyze {

namespace {

using diagnose::Quadrant;
using diagnose::SignalClass;
using diagnose::SignalKind;

double Seconds(WallTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::string_view LabelOf(const Labels& labels, std::string_view name) {
  for (const auto& [k, v] : labels) {
    if (k == name) return v;
  }
  return {};
}

Labels Without(const Labels& labels, std::string_view name) {
  Labels out;
  for (const auto& kv : labels) {
    if (kv.first != name) out.push_back(kv);
  }
  return out;
}

// The route's request rate and error ratio, made from its total-latency point.
constexpr std::string_view kRateMetric = "tailguard_request_rate";
constexpr std::string_view kErrorMetric = "tailguard_request_error_ratio";

}  // namespace

SignalClass ClassifyTailguardSeries(std::string_view metric, const Labels& labels) {
  if (metric == kRequestDurationMetric) {
    const std::string_view stage = LabelOf(labels, "stage");
    if (stage.starts_with("layer_")) return {Quadrant::kModel, SignalKind::kCause};
    // The stages of include/tailguard/sampler.h (StageName) and the backend's own names.
    for (std::string_view s : {"inference", "infer", "preprocess", "postprocess", "post", "queue",
                               "first_token", "inter_token"}) {
      if (stage == s) return {Quadrant::kModel, SignalKind::kSymptom};
    }
    if (stage == "total" || stage == "upstream" || stage == "gateway" || stage.empty()) {
      return {Quadrant::kDependency, SignalKind::kSymptom};
    }
    // "feature_fetch" and the upstream's own Server-Timing stages (its database, its cache).
    return {Quadrant::kDependency, SignalKind::kCause};
  }
  if (metric == kRateMetric) return {Quadrant::kTraffic, SignalKind::kCause};
  if (metric == kErrorMetric) return {Quadrant::kDependency, SignalKind::kSymptom};
  if (metric == kRequestInputSizeMetric || metric == "tailguard_request_size_bytes") {
    return {Quadrant::kTraffic, SignalKind::kCause};
  }
  if (metric == "tailguard_model_queue_depth") return {Quadrant::kModel, SignalKind::kSymptom};
  if (metric.starts_with("tailguard_process_cpu")) {
    return {Quadrant::kHardware, SignalKind::kSymptom};  // our own work: load makes it rise
  }
  return diagnose::ClassifySignal(metric);
}

LiveDiagnoser::LiveDiagnoser(LiveDiagnosisOptions options, Sink sink)
    : options_(options),
      sink_(std::move(sink)),
      horizon_s_(options.rank.baseline_s + std::max(options.rank.guard_s, options.sparkline_s) +
                 options.change_window_s) {}

LiveDiagnoser::~LiveDiagnoser() = default;

void LiveDiagnoser::Record(const std::string& key, const SeriesPoint& p, std::string_view metric,
                           double t, double value) {
  auto it = history_.find(key);
  if (it == history_.end()) {
    if (history_.size() >= options_.max_series) {
      ++refused_;
      return;
    }
    auto h = std::make_unique<History>();
    h->metric = std::string(metric);
    h->labels = metric == p.metric ? p.labels : Without(p.labels, "stage");
    h->signal = ClassifyTailguardSeries(h->metric, h->labels);
    it = history_.emplace(key, std::move(h)).first;
  }
  std::deque<std::pair<double, double>>& points = it->second->points;
  if (!std::isnan(value)) points.emplace_back(t, value);
  while (!points.empty() && points.front().first < t - horizon_s_) points.pop_front();
}

void LiveDiagnoser::Recheck(WallTime now) {
  if (options_.recheck_s <= 0) return;
  const auto every =
      std::chrono::duration_cast<Duration>(std::chrono::duration<double>(options_.recheck_s));
  for (auto& [key, a] : active_) {
    if (now - a.checked < every) continue;
    a.checked = now;
    Diagnosis d = Diagnose(key.first, key.second, now, a.breach_start, options_.recheck_s);
    Diagnosis& latest = latest_[key];
    const std::string top = d.causes.empty() ? "" : d.causes.front().candidate.series;
    const std::string was = latest.causes.empty() ? "" : latest.causes.front().candidate.series;
    // A new finding when the top cause changed to one that moved.
    if (top == was || d.quadrant == Quadrant::kUnknown) continue;
    if (sink_) sink_(d);
    latest = std::move(d);
  }
}

void LiveDiagnoser::OnBatch(const Batch& batch) {
  const double t = Seconds(batch.time);
  for (const SeriesPoint& p : batch.points) {
    const std::string key = p.key.empty() ? metrics::SeriesKey(p.metric, p.labels) : p.key;
    // A latency by its P99 (what the rules watch); a size, a count or a gauge by its mean, which
    // moves with the whole distribution (wider inputs, fuller batches).
    Record(key, p, p.metric, t, p.unit == Unit::kNanoseconds ? p.p99 : p.mean);
    if (p.metric == kRequestDurationMetric && LabelOf(p.labels, "stage") == "total") {
      const Labels route = Without(p.labels, "stage");
      Record(metrics::SeriesKey(kRateMetric, route), p, kRateMetric, t, p.rate);
      Record(metrics::SeriesKey(kErrorMetric, route), p, kErrorMetric, t, p.error_ratio);
    }
  }
  Recheck(batch.time);
}

void LiveDiagnoser::RecordChange(ChangeEvent change) {
  std::lock_guard<std::mutex> lock(changes_mu_);
  changes_.push_back(std::move(change));
  while (changes_.size() > 1000) changes_.pop_front();
}

Diagnosis LiveDiagnoser::Diagnose(std::string_view rule, std::string_view series, WallTime at,
                                  WallTime breach_start, double recent_s) const {
  const auto started = std::chrono::steady_clock::now();
  Diagnosis d;
  d.rule = std::string(rule);
  d.series = std::string(series);
  d.alert_time = at;
  const double t = Seconds(at);
  diagnose::RankOptions rank = options_.rank;
  // With the breach's start known, the guard band is the breach and the statistic's window
  // before it (the first breaching P99 already held that much of the incident): the baseline
  // holds none of it, and a young service (minutes of history) still has one.
  if (breach_start != WallTime{} && breach_start <= at) {
    rank.guard_s = t - Seconds(breach_start) + options_.stat_window_s;
    if (recent_s > 0 && recent_s < rank.guard_s) {
      rank.baseline_gap_s = rank.guard_s - recent_s;
      rank.guard_s = recent_s;
    }
  }

  std::vector<diagnose::TimedSeries> all;
  all.reserve(history_.size());
  for (const auto& [key, h] : history_) {
    diagnose::TimedSeries s;
    s.name = key;
    s.signal = h->signal;
    s.times.reserve(h->points.size());
    s.values.reserve(h->points.size());
    for (const auto& [pt, v] : h->points) {
      if (pt > t) break;
      s.times.push_back(pt);
      s.values.push_back(v);
    }
    all.push_back(std::move(s));
  }
  diagnose::Ranking ranking = diagnose::RankCauses(all, t, rank);
  d.series_considered = ranking.ranked.size();
  d.symptoms = ranking.symptoms;

  const History* alerted = nullptr;
  if (auto it = history_.find(series); it != history_.end()) alerted = it->second.get();
  const diagnose::Candidate* alert_candidate = nullptr;
  for (const diagnose::Candidate& c : ranking.ranked) {
    if (c.series == series) alert_candidate = &c;
  }
  const double alert_rise =
      alert_candidate == nullptr
          ? 0
          : alert_candidate->evidence.peak - alert_candidate->evidence.baseline.median;
  // The share of the alerted latency's rise a stage of the same requests accounts for; NaN for
  // any other signal.
  auto explained = [&](const diagnose::Candidate& c) {
    const History& h = *history_.find(c.series)->second;
    if (alerted == nullptr || alert_rise <= 0 || h.metric != kRequestDurationMetric ||
        alerted->metric != kRequestDurationMetric ||
        Without(h.labels, "stage") != Without(alerted->labels, "stage")) {
      return std::numeric_limits<double>::quiet_NaN();
    }
    return std::clamp((c.evidence.peak - c.evidence.baseline.median) / alert_rise, 0.0, 1.0);
  };
  // A stage of the alerted requests that moved but accounts for under a tenth of the rise (a
  // 20 us layer in a 15 ms incident) cannot be its cause, however many IQRs it moved: it ranks
  // with the signals that did not move. A tenth: below it, removing the cause would leave the
  // alert standing.
  auto moved = [&](const diagnose::Candidate& c) {
    return c.signal.kind == SignalKind::kCause && c.evidence.score >= rank.min_score;
  };
  // A model whose inputs grew (or whose requests came faster) does more work in every layer:
  // its layer timings then follow the traffic, they do not explain it. (Inference time given
  // input size: a heavier layer of a new version moves without its inputs moving.)
  std::vector<std::string> busier;  // models whose traffic moved
  for (const diagnose::Candidate& c : ranking.ranked) {
    if (!moved(c) || c.signal.quadrant != Quadrant::kTraffic) continue;
    const std::string_view m = LabelOf(history_.find(c.series)->second->labels, "model");
    if (!m.empty()) busier.emplace_back(m);
  }
  auto counts = [&](const diagnose::Candidate& c) {
    if (!moved(c)) return false;
    const History& h = *history_.find(c.series)->second;
    if (h.metric == kRequestDurationMetric && LabelOf(h.labels, "stage").starts_with("layer_") &&
        std::find(busier.begin(), busier.end(), LabelOf(h.labels, "model")) != busier.end()) {
      return false;
    }
    const double share = explained(c);
    return std::isnan(share) || share >= 0.1;
  };
  std::stable_sort(ranking.ranked.begin(), ranking.ranked.end(),
                   [&](const diagnose::Candidate& a, const diagnose::Candidate& b) {
                     return counts(a) && !counts(b);
                   });
  // The confidence, shared again among the first five that count (RankCauses' rule).
  {
    const bool any = !ranking.ranked.empty() && counts(ranking.ranked.front());
    size_t sharing = 0;
    double mass = 0;
    for (size_t i = 0; i < ranking.ranked.size() && sharing < 5; ++i) {
      if (any && !counts(ranking.ranked[i])) break;
      mass += ranking.ranked[i].evidence.score;
      ++sharing;
    }
    for (size_t i = 0; i < ranking.ranked.size(); ++i) {
      diagnose::Candidate& c = ranking.ranked[i];
      c.confidence = (i < sharing && mass > 0) ? c.evidence.score / mass : 0;
    }
  }
  d.quadrant = !ranking.ranked.empty() && ranking.ranked.front().evidence.score >= rank.min_score
                   ? ranking.ranked.front().signal.quadrant
                   : Quadrant::kUnknown;

  for (size_t i = 0; i < ranking.ranked.size() && d.causes.size() < options_.top; ++i) {
    DiagnosedCause cause;
    cause.candidate = ranking.ranked[i];
    const History& h = *history_.find(cause.candidate.series)->second;
    cause.explained = explained(cause.candidate);
    // The sparkline: the worst value of each bucket over the last sparkline_s.
    const double from = t - options_.sparkline_s;
    const double step = options_.sparkline_s / static_cast<double>(options_.sparkline_points);
    const bool up = cause.candidate.signal.higher_is_worse;
    for (const auto& [pt, v] : h.points) {
      if (pt < from || pt > t) continue;
      // The point at the alert itself closes the last bucket rather than opening one more.
      const double index = std::min(std::floor((pt - from) / step),
                                    static_cast<double>(options_.sparkline_points - 1));
      const double bucket = from + index * step;
      if (!cause.points.empty() && cause.points.back().first == bucket - t) {
        double& worst = cause.points.back().second;
        worst = up ? std::max(worst, v) : std::min(worst, v);
      } else {
        cause.points.emplace_back(bucket - t, v);
      }
    }
    d.causes.push_back(std::move(cause));
  }

  // Contention: the top cause is another route's signal (its inputs, its rate), so this route
  // slowed because that one's work took the CPUs they share.
  if (!d.causes.empty() && alerted != nullptr) {
    const diagnose::Candidate& top = d.causes.front().candidate;
    // By model first (two models behind one route share its label), else by route.
    const Labels& top_labels = history_.find(top.series)->second->labels;
    for (std::string_view label : {"model", "route"}) {
      const std::string_view mine = LabelOf(alerted->labels, label);
      const std::string_view theirs = LabelOf(top_labels, label);
      if (mine.empty() || theirs.empty()) continue;
      if (mine != theirs && top.signal.kind == SignalKind::kCause &&
          top.evidence.score >= rank.min_score) {
        d.contention = Cat(label, "=", theirs);
        d.quadrant = Quadrant::kHardware;
      }
      break;
    }
  }

  {
    std::lock_guard<std::mutex> lock(changes_mu_);
    const double window = std::max(options_.change_window_s, rank.guard_s);
    for (auto it = changes_.rbegin(); it != changes_.rend(); ++it) {
      const double ct = Seconds(it->time);
      if (ct <= t && ct >= t - window) d.changes.push_back(*it);
    }
  }
  if (!d.changes.empty()) d.quadrant = d.changes.front().quadrant;
  d.summary = DiagnosisSummary(d);
  d.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  return d;
}

void LiveDiagnoser::OnAlertEvent(const AlertEvent& e) {
  const auto key = std::make_pair(e.rule, e.series);
  switch (e.kind) {
    case AlertEventKind::kFire:
    case AlertEventKind::kEscalate: {
      Diagnosis d = Diagnose(e.rule, e.series, e.time, e.breach_start);
      if (sink_) sink_(d);
      latest_[key] = std::move(d);
      active_[key] = {e.breach_start, e.time};
      break;
    }
    case AlertEventKind::kResolve:
    case AlertEventKind::kCancel:
      latest_.erase(key);
      active_.erase(key);
      break;
    default:
      break;
  }
}

const Diagnosis* LiveDiagnoser::Latest(std::string_view rule, std::string_view series) const {
  auto it = latest_.find(std::make_pair(std::string(rule), std::string(series)));
  return it == latest_.end() ? nullptr : &it->second;
}

void LiveDiagnoser::Annotate(NotifiedAlert& alert) const {
  if (alert.status != NotifyStatus::kFiring) return;
  const Diagnosis* d = Latest(alert.rule, alert.series);
  if (d == nullptr) return;
  auto pos = std::lower_bound(alert.annotations.begin(), alert.annotations.end(),
                              std::string_view("diagnosis"),
                              [](const auto& kv, std::string_view n) { return kv.first < n; });
  if (pos != alert.annotations.end() && pos->first == "diagnosis") return;  // the rule's own
  alert.annotations.insert(pos, {"diagnosis", d->summary});
}

std::string DiagnosisSummary(const Diagnosis& d) {
  const double t = Seconds(d.alert_time);
  std::string out(diagnose::QuadrantName(d.quadrant));
  if (!d.changes.empty()) {
    const ChangeEvent& c = d.changes.front();
    char at[32];
    std::snprintf(at, sizeof at, "%+.0fs", Seconds(c.time) - t);
    out += Cat(": ", c.subject, " changed at ", at, ": ", c.what);
    if (!d.causes.empty()) out += Cat("; top signal ", d.causes.front().candidate.rationale);
    return out;
  }
  if (d.causes.empty() || d.quadrant == Quadrant::kUnknown) {
    return Cat("unknown: no signal moved more than its baseline's spread (", d.series_considered,
               " signals looked at)");
  }
  if (!d.contention.empty()) out += Cat(" (contention with ", d.contention, ")");
  out += Cat(": ", d.causes.front().candidate.rationale);
  return out;
}

}  // namespace tailguard::analyze
