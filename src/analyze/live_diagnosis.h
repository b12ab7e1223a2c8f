// The live diagnosis: on every alert that fires or escalates, which quadrant and which signal
// caused it, ranked from the signals the analyzer saw in the last hour (latency stages, request
// rate and sizes, batches and queues, the host's and the cgroup's CPU, pressure and memory) and
// the changes near the onset (a model version or graph, a restart). The algorithm is
// diagnose::RankCauses, the same as `tailguard diagnose` offline; this class keeps the history
// it needs, knows what each of tailguard's own series means, and adds what only a live system
// knows: the changes it saw, the share of the latency rise each stage explains, and whether the
// cause is another route's load on the same CPUs (contention) rather than this route's own.
//
// A Subscriber of the analyzer: OnBatch() records (and rechecks the alerts that stay on),
// OnAlertEvent() diagnoses, Annotate() puts the one-line finding into notifications. Not
// thread-safe but for RecordChange().
#ifndef TAILGUARD_ANALYZE_LIVE_DIAGNOSIS_H_
#define TAILGUARD_ANALYZE_LIVE_DIAGNOSIS_H_

#include <cstddef>
#include <deque>
#include <functional>
#include <limits>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "diagnose/quadrant.h"
#include "diagnose/ranker.h"
#include "tailguard/analyzer.h"

namespace tailguard::analyze {

// A change near an incident: a model version or graph switched, a managed process restarted,
// a configuration reloaded. Ranked before the signals when it falls in the window before the
// alert: "what changed?" is the first question on call, and a change at the onset is its answer.
struct ChangeEvent {
  WallTime time{};
  diagnose::Quadrant quadrant = diagnose::Quadrant::kModel;
  std::string subject;  // what changed: "model=risk"
  std::string what;     // one line: "version v1 -> v2 (graph 3fa2 -> 9b1c; layer fc2 added)"
};

// The signals tailguard records itself, by metric (the gateway's, the backend's, the host
// sampler's), with what they mean for a diagnosis. Request stages: "feature_fetch" and the
// upstream's own Server-Timing names are dependency causes, "layer_*" model causes; "total",
// "upstream", "gateway", "inference", "queue", "preprocess", "postprocess" and the token gaps
// are symptoms (the time they take is what the causes change: wider inputs, a busy CPU or a
// heavier layer all make "inference" slower). The process'
// own CPU and queue depth are symptoms too (load makes them rise); the CPU of other processes,
// steal, throttling and pressure are hardware causes. Other metrics: ClassifySignal(metric).
diagnose::SignalClass ClassifyTailguardSeries(std::string_view metric, const Labels& labels);

struct DiagnosedCause {
  diagnose::Candidate candidate;
  // For a stage of the alerted route: its rise over the alerted series' rise (both from their
  // baselines to their peaks), in [0, 1]: how much of the latency change this stage accounts for.
  // NaN for every other signal.
  double explained = std::numeric_limits<double>::quiet_NaN();
  // The signal around the alert, for a sparkline: (seconds from the alert, value), at most
  // LiveDiagnosisOptions::sparkline_points, each the worst value of its bucket.
  std::vector<std::pair<double, double>> points;
};

struct Diagnosis {
  std::string rule;
  std::string series;  // the alerted series' key
  WallTime alert_time{};
  diagnose::Quadrant quadrant = diagnose::Quadrant::kUnknown;
  // One line for a message: "hardware: tailguard_host_cpu_other_millicores rose from 20 to 1900
  // (95 IQRs above its baseline) at -4s". "no signal moved" when none did.
  std::string summary;
  // Another model (or route) whose signal is the top cause, "model=text": this one slowed
  // because that one's load took the shared CPUs. "" when the cause is its own or the host's.
  std::string contention;
  std::vector<ChangeEvent> changes;    // in the window before the alert, newest first
  std::vector<DiagnosedCause> causes;  // the top causes, best first
  std::vector<std::string> symptoms;   // symptoms that moved, kept apart from the causes
  size_t series_considered = 0;        // signals with a baseline and points in the window
  double seconds = 0;                  // how long the diagnosis took
};

struct LiveDiagnosisOptions {
  // The ranker's windows. `after_s` is 0 live: the diagnosis is made when the alert fires. The
  // guard band grows to cover the breach when the rule took longer than it to fire.
  diagnose::RankOptions rank{
      .baseline_s = 3600, .guard_s = 60, .after_s = 0, .min_score = 3, .baseline_gap_s = 0};
  // The window of the statistic the rules watch (the live loop's, 10 s): a breach seen at time
  // B holds points from B - window on. With the breach's start known, the guard band is the
  // breach plus this window, not rank.guard_s (the offline default when the onset is unknown).
  double stat_window_s = 10;
  // While an alert stays on, it is diagnosed again every this often, over the last this long
  // against the baseline from before its breach; a new finding is kept (and sent to the sink)
  // when its top cause changed: the incident moved on (another cause took over). 0: never.
  double recheck_s = 15;
  size_t top = 5;            // causes kept
  size_t max_series = 2000;  // signals kept in history; later ones are not recorded (counted)
  double sparkline_s = 600;  // ten minutes before the alert
  size_t sparkline_points = 120;
  // A change counts when it falls in this window before the alert: the guard band and the
  // window of the alerting statistic (a change takes a window to show in a P99).
  double change_window_s = 120;
};

class LiveDiagnoser final : public Subscriber {
 public:
  // `sink` receives each diagnosis (on the analyzer's thread, inside Analyze()): the event
  // store's adapter, a printer. May be null.
  using Sink = std::function<void(const Diagnosis&)>;
  explicit LiveDiagnoser(LiveDiagnosisOptions options = {}, Sink sink = nullptr);
  ~LiveDiagnoser() override;

  void OnBatch(const Batch& batch) override;
  void OnAlertEvent(const AlertEvent& event) override;
  void Annotate(NotifiedAlert& alert) const override;

  // Thread-safe (the gateway's reload and the backend's version switch call it).
  void RecordChange(ChangeEvent change);

  // Diagnoses `series` (a key seen in a batch, or any) as alerted by `rule` at `at`, from the
  // points up to `at`. `breach_start` (when known) widens the guard band to cover the breach.
  // With `recent_s` > 0, only the last `recent_s` seconds are scored, against the baseline
  // from before the breach (a recheck of an alert that stays on).
  Diagnosis Diagnose(std::string_view rule, std::string_view series, WallTime at,
                     WallTime breach_start = {}, double recent_s = 0) const;

  // The latest diagnosis of (rule, series); nullptr when there is none.
  const Diagnosis* Latest(std::string_view rule, std::string_view series) const;

  size_t series_count() const { return history_.size(); }
  size_t series_refused() const { return refused_; }

 private:
  struct History {
    std::string metric;
    Labels labels;
    diagnose::SignalClass signal;
    std::deque<std::pair<double, double>> points;  // (seconds since the epoch, value)
  };
  void Recheck(WallTime now);
  void Record(const std::string& key, const SeriesPoint& p, std::string_view metric, double t,
              double value);

  const LiveDiagnosisOptions options_;
  const Sink sink_;
  std::map<std::string, std::unique_ptr<History>, std::less<>> history_;
  size_t refused_ = 0;
  double horizon_s_ = 0;
  mutable std::mutex changes_mu_;
  std::deque<ChangeEvent> changes_;  // guarded by changes_mu_; oldest first
  struct Active {
    WallTime breach_start{};
    WallTime checked{};  // the latest diagnosis or recheck
  };
  std::map<std::pair<std::string, std::string>, Diagnosis> latest_;
  std::map<std::pair<std::string, std::string>, Active> active_;
};

// "hardware: <rationale>" with the contention and the change first when there are: what a
// notification's "diagnosis" annotation says.
std::string DiagnosisSummary(const Diagnosis& d);

}  // namespace tailguard::analyze

#endif  // TAILGUARD_ANALYZE_LIVE_DIAGNOSIS_H_
