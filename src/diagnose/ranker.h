// Root-cause ranking: which signals moved at an incident, scored against their own baseline, the
// likely causes kept apart from the symptoms they produce. The algorithm core of `tailguard
// diagnose` and of the live diagnosis on every alert; no I/O, no HTTP types.
//
// The method (BARO's robust scorer, with a guard band and symptoms set apart):
//  1. A series' baseline is the median and IQR of its points in [alert - guard - baseline,
//     alert - guard). The guard band keeps the first part of the incident out of the baseline:
//     an alert fires after the onset, by as much as its rule's window and `for:` allow.
//  2. Its score is the largest (x - median) / scale over the points in [alert - guard,
//     alert + after], in the direction that is worse for the signal (up for CPU, load and
//     latency; down for a success rate): how far it moved, in units of its own normal spread.
//     Its onset is the first point there that reaches half of that peak deviation.
//  3. Series are ranked by score. A cause signal (resource, load, input, model: see
//     ClassifySignal) that moved at least `min_score` ranks before a symptom (the latency or
//     errors of what is served): a slow service makes its callers slow too, and a CPU hog makes
//     every latency on the host rise, so a moved cause explains its symptoms, not the reverse.
//     A symptom ranks among the causes only when no cause moved that much: then the delay
//     started in a call (a dependency).
#ifndef TAILGUARD_DIAGNOSE_RANKER_H_
#define TAILGUARD_DIAGNOSE_RANKER_H_

#include <optional>
#include <string>
#include <vector>

#include "diagnose/quadrant.h"
#include "diagnose/robust.h"

namespace tailguard::diagnose {

// One signal's points: times in seconds (any epoch, increasing or not) and values.
struct TimedSeries {
  std::string name;
  std::vector<double> times;
  std::vector<double> values;
  // What the signal is, when its source knows (the live diagnosis knows its own series); unset:
  // ClassifySignal(name).
  std::optional<SignalClass> signal;
};

struct RankOptions {
  // An hour of history: long enough that the median shrugs off earlier incidents inside it (a
  // few minutes each), short enough that a daily season barely moves it.
  double baseline_s = 3600;
  // One minute: how late an alert on a one-minute window with `for: 1m` fires after an onset.
  double guard_s = 60;
  // Five minutes after the alert, the window that RCAEval's benchmarks score.
  double after_s = 300;
  // A robust score of 3 (three IQRs, about four standard deviations of a normal series) is
  // where "moved" starts: below it a cause signal does not outrank a symptom.
  double min_score = 3;
  // A gap between the baseline and the window: the baseline ends this long before the window
  // starts. 0 offline; the live diagnosis of an alert that stays on looks at its last seconds
  // against the baseline from before its breach.
  double baseline_gap_s = 0;
};

// Why a series is where it is in the ranking.
struct Evidence {
  Baseline baseline;  // before the guard band
  double peak = 0;    // the value furthest from the median in the window
  double peak_time = 0;
  double onset_time = 0;  // the first point at half the peak deviation
  double score = 0;       // (peak - median) / scale in the worse direction, >= 0
  bool rose = true;       // the peak is above the median
  size_t window_points = 0;
};

struct Candidate {
  std::string series;
  SignalClass signal;
  Evidence evidence;
  // Its share of the score mass of the first five causes that moved (of the first five of all
  // when no cause moved), in [0, 1]; 0 below them.
  double confidence = 0;
  // One line: "carts/cpu rose from 12.3 to 96.1 (31.4 IQRs above its baseline) at +25s".
  std::string rationale;
};

struct Ranking {
  // Every series with a baseline and points in the window, best first: causes that moved, then
  // the rest by score (see the method above).
  std::vector<Candidate> ranked;
  // The quadrant of the top candidate (kUnknown when nothing moved).
  Quadrant quadrant = Quadrant::kUnknown;
  // Symptoms that moved (score >= min_score): what the causes produced.
  std::vector<std::string> symptoms;
};

// Ranks `series` for an alert at `alert_time` (seconds, the same epoch as the points). Points
// after alert + after_s are ignored, so the ranking never sees more than that.
Ranking RankCauses(const std::vector<TimedSeries>& series, double alert_time,
                   const RankOptions& options = {});

// The evidence of one series (used by RankCauses; exposed for tests and the live diagnosis).
// `window_points` is 0 when the series has no baseline or no point in the window.
// `higher_is_worse` picks the direction counted (the other direction scores 0 at most).
Evidence Score(const TimedSeries& series, double alert_time, const RankOptions& options,
               bool higher_is_worse = true);

}  // namespace tailguard::diagnose

#endif  // TAILGUARD_DIAGNOSE_RANKER_H_
