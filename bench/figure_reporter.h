// A Google Benchmark reporter that prints the usual table and keeps every run's figures, so a
// benchmark's main() can print `FIGURE <name> <value> <unit>` lines (DESIGN.md conventions).
#ifndef TAILGUARD_BENCH_FIGURE_REPORTER_H_
#define TAILGUARD_BENCH_FIGURE_REPORTER_H_

#include <benchmark/benchmark.h>

#include <cstdio>
#include <map>
#include <string>
#include <vector>

namespace tailguard {

class FigureReporter : public benchmark::ConsoleReporter {
 public:
  // No colour codes: the output is read by scripts and pasted into documents.
  FigureReporter() : ConsoleReporter(OO_Tabular) {}

  void ReportRuns(const std::vector<Run>& runs) override {
    for (const Run& r : runs) {
      Figures& f = runs_[r.benchmark_name()];
      f.real_time = r.GetAdjustedRealTime();
      for (const auto& [name, counter] : r.counters) f.counters[name] = counter.value;
    }
    ConsoleReporter::ReportRuns(runs);
  }

  // The real time per iteration of `benchmark` (in its time unit), or 0 when it did not run.
  double RealTime(const std::string& benchmark) const {
    const auto it = runs_.find(benchmark);
    return it == runs_.end() ? 0 : it->second.real_time;
  }
  // A counter of `benchmark` (e.g. "items_per_second"), or 0.
  double Counter(const std::string& benchmark, const std::string& counter) const {
    const auto it = runs_.find(benchmark);
    if (it == runs_.end()) return 0;
    const auto c = it->second.counters.find(counter);
    return c == it->second.counters.end() ? 0 : c->second;
  }

 private:
  struct Figures {
    double real_time = 0;
    std::map<std::string, double> counters;
  };
  std::map<std::string, Figures> runs_;
};

// Prints `FIGURE name value unit` with three significant digits, never in exponent form; a
// value of 0 (a benchmark that did not run) prints nothing.
inline void PrintFigure(const char* name, double value, const char* unit) {
  if (value == 0) return;
  const int decimals = value >= 100 ? 0 : value >= 10 ? 1 : value >= 1 ? 2 : 3;
  std::printf("FIGURE %s %.*f %s\n", name, decimals, value, unit);
}

}  // namespace tailguard

#endif  // TAILGUARD_BENCH_FIGURE_REPORTER_H_
