#include "diagnose/ranker.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <string_view>

#include "common/format.h"
#include "common/strings.h"

namespace tailguard::diagnose {

Evidence Score(const TimedSeries& series, double alert_time, const RankOptions& options,
               bool higher_is_worse) {
  const double sign = higher_is_worse ? 1 : -1;
  Evidence e;
  const double window_start = alert_time - options.guard_s;
  const double baseline_end = window_start - options.baseline_gap_s;
  const double baseline_start = baseline_end - options.baseline_s;
  const double window_end = alert_time + options.after_s;
  std::vector<double> before;
  std::vector<size_t> window;
  std::vector<double> window_values;
  for (size_t i = 0; i < series.times.size() && i < series.values.size(); ++i) {
    const double t = series.times[i];
    const double v = series.values[i];
    if (std::isnan(v) || std::isnan(t)) continue;
    if (t >= baseline_start && t < baseline_end) {
      before.push_back(v);
    } else if (t >= window_start && t <= window_end) {
      window.push_back(i);
      window_values.push_back(v);
    }
  }
  if (before.empty() || window.empty()) return e;
  // Points in time order, whatever the input order, for the onset.
  std::sort(window.begin(), window.end(),
            [&](size_t a, size_t b) { return series.times[a] < series.times[b]; });
  e.baseline = DescribeBaseline(std::move(before), window_values);
  e.window_points = window.size();
  std::vector<double> scores;  // per window point, in time order
  scores.reserve(window.size());
  double best = -1;
  for (size_t i : window) {
    scores.push_back(std::max(0.0, sign * RobustScore(e.baseline, series.values[i])));
    if (scores.back() > best) {
      best = scores.back();
      e.peak = series.values[i];
      e.peak_time = series.times[i];
    }
  }
  e.score = best;
  e.rose = e.peak >= e.baseline.median;
  // The first point at half the peak: there is one, the peak itself at the latest.
  const size_t onset = static_cast<size_t>(
      std::find_if(scores.begin(), scores.end(), [&](double d) { return d >= best / 2; }) -
      scores.begin());
  e.onset_time = series.times[window[onset]];
  return e;
}

namespace {

// A value as its metric's name says it reads (diagnose::UnitNameOf): "15.5ms" for a latency in
// seconds, "227MiB" for bytes, four significant digits for the rest (offline series' units are
// not known).
std::string ValueText(std::string_view series, double v) {
  const std::string_view unit = UnitNameOf(series);
  if (unit == "seconds") return FormatDuration(v * 1e9);
  if (unit == "bytes") return FormatBytes(v);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.4g", v);
  return buf;
}

std::string Rationale(const Candidate& c, double alert_time) {
  const Evidence& e = c.evidence;
  char tail[96];
  std::snprintf(tail, sizeof tail, " (%.1f IQRs %s its baseline) at %+.0fs", e.score,
                e.rose ? "above" : "below", e.onset_time - alert_time);
  return Cat(c.series, e.rose ? " rose from " : " fell from ",
             ValueText(c.series, e.baseline.median), " to ", ValueText(c.series, e.peak), tail);
}

}  // namespace

Ranking RankCauses(const std::vector<TimedSeries>& series, double alert_time,
                   const RankOptions& options) {
  Ranking r;
  for (const TimedSeries& s : series) {
    const SignalClass signal = s.signal ? *s.signal : ClassifySignal(s.name);
    Evidence e = Score(s, alert_time, options, signal.higher_is_worse);
    if (e.window_points == 0) continue;
    Candidate c;
    c.series = s.name;
    c.signal = signal;
    c.evidence = e;
    r.ranked.push_back(std::move(c));
  }
  auto moved_cause = [&](const Candidate& c) {
    return c.signal.kind == SignalKind::kCause && c.evidence.score >= options.min_score;
  };
  std::stable_sort(r.ranked.begin(), r.ranked.end(), [&](const Candidate& a, const Candidate& b) {
    const bool ma = moved_cause(a), mb = moved_cause(b);
    if (ma != mb) return ma;
    if (a.evidence.score != b.evidence.score) return a.evidence.score > b.evidence.score;
    return a.series < b.series;
  });
  // The confidence is shared by the first five causes that moved, or, when none did, by the
  // first five of all: a symptom that ranks after a moved cause is explained by it.
  const bool any_cause = !r.ranked.empty() && moved_cause(r.ranked.front());
  size_t sharing = 0;
  double mass = 0;
  for (size_t i = 0; i < r.ranked.size() && sharing < 5; ++i) {
    if (any_cause && !moved_cause(r.ranked[i])) break;
    mass += r.ranked[i].evidence.score;
    ++sharing;
  }
  for (size_t i = 0; i < r.ranked.size(); ++i) {
    Candidate& c = r.ranked[i];
    c.confidence = (i < sharing && mass > 0) ? c.evidence.score / mass : 0;
    c.rationale = Rationale(c, alert_time);
    if (c.signal.kind == SignalKind::kSymptom && c.evidence.score >= options.min_score) {
      r.symptoms.push_back(c.series);
    }
  }
  if (!r.ranked.empty() && r.ranked.front().evidence.score >= options.min_score) {
    r.quadrant = r.ranked.front().signal.quadrant;
  }
  return r;
}

}  // namespace tailguard::diagnose
