// Benchmarks of the detectors and the ensemble, one core. Prints FIGURE lines (DESIGN.md).
#include <benchmark/benchmark.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "figure_reporter.h"
#include "tailguard/detect.h"

namespace tailguard {
namespace {

// A latency-like series at 5-minute resolution: a daily cycle, noise, and a few incidents.
struct Series {
  std::vector<WallTime> t;
  std::vector<double> v;
};

const Series& Synthetic() {
  static const Series s = [] {
    Series out;
    std::mt19937_64 rng(7);
    std::normal_distribution<double> noise(0, 3);
    const int n = 288 * 365;  // a year of 5-minute points
    for (int i = 0; i < n; ++i) {
      out.t.push_back(FakeClock::DefaultStart() + std::chrono::minutes(5 * i));
      const double day = 20 * std::sin(2 * M_PI * (i % 288) / 288.0);
      const double incident = (i % 5000) < 20 ? 80 : 0;
      out.v.push_back(120 + day + incident + noise(rng));
    }
    return out;
  }();
  return s;
}

void BM_Ensemble(benchmark::State& state) {
  const Series& s = Synthetic();
  for (auto _ : state) {
    AnomalyDetector d;
    double sum = 0;
    for (size_t i = 0; i < s.v.size(); ++i) sum += d.Update(s.t[i], s.v[i]).score;
    benchmark::DoNotOptimize(sum);
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.v.size()));
}
BENCHMARK(BM_Ensemble)->Unit(benchmark::kMillisecond);

void BM_Hampel(benchmark::State& state) {
  const Series& s = Synthetic();
  Hampel h;
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(h.Update(s.v[i]));
    if (++i == s.v.size()) i = 0;
  }
}
BENCHMARK(BM_Hampel);

void BM_HoltWintersDaily(benchmark::State& state) {
  const Series& s = Synthetic();
  for (auto _ : state) {
    HoltWinters hw({.seasons = {288}});
    for (double x : s.v) benchmark::DoNotOptimize(hw.Update(x));
  }
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(s.v.size()));
}
BENCHMARK(BM_HoltWintersDaily)->Unit(benchmark::kMillisecond);

void BM_Ewma(benchmark::State& state) {
  const Series& s = Synthetic();
  Ewma e(0.2);
  size_t i = 0;
  for (auto _ : state) {
    benchmark::DoNotOptimize(e.Update(s.v[i]));
    if (++i == s.v.size()) i = 0;
  }
}
BENCHMARK(BM_Ewma);

}  // namespace
}  // namespace tailguard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tailguard::FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  tailguard::PrintFigure("replay_points_per_sec",
                         reporter.Counter("BM_Ensemble", "items_per_second"), "points/s");
  tailguard::PrintFigure("hampel_update_ns", reporter.RealTime("BM_Hampel"), "ns");
  const double hw = reporter.Counter("BM_HoltWintersDaily", "items_per_second");
  if (hw > 0) tailguard::PrintFigure("holt_winters_update_ns", 1e9 / hw, "ns");
  return 0;
}
