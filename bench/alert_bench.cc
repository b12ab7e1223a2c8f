// Cost of the alert engine: one evaluation of one rule on one series, with a schedule in a
// non-UTC time zone. Prints FIGURE alert_eval_ns.
#include <benchmark/benchmark.h>

#include <cstdio>
#include <string>
#include <vector>

#include "figure_reporter.h"
#include "tailguard/alert.h"

namespace tailguard {
namespace {

void BM_AlertEvaluate(benchmark::State& state) {
  absl::StatusOr<AlertConfig> config = ParseAlertConfig(R"(timezone: Asia/Shanghai
schedules:
  - {name: weekend, days: weekend, scale: 1.2}
rules:
  - name: risk
  - {name: abs, above: 300ms}
  - {name: anomaly, stat: anomaly_score, above: 0.8}
)");
  if (!config.ok()) {
    state.SkipWithError(std::string(config.status().message()).c_str());
    return;
  }
  CollectingAlertSink sink;
  auto engine = AlertEngine::Create(*config, sink);
  std::vector<Labels> series;
  for (int i = 0; i < 1000; ++i) {
    series.push_back({{"model", "m" + std::to_string(i % 10)},
                      {"route", "/r" + std::to_string(i)},
                      {"stage", "total"}});
  }
  WallTime t = FakeClock::DefaultStart();
  int64_t tick = 0;
  for (auto _ : state) {
    t += std::chrono::seconds(1);
    for (size_t i = 0; i < series.size(); ++i) {
      Observation o;
      o.time = t;
      o.metric = "tailguard_request_duration_seconds";
      o.labels = series[i];
      o.p99 = (tick + static_cast<int64_t>(i)) % 7 == 0 ? 0.2 : 0.1;
      o.baseline_p99 = 0.1;
      o.anomaly_score = 0.1;
      (*engine)->Observe(o);
    }
    ++tick;
    sink.Clear();
  }
  // Three rules select every series.
  state.SetItemsProcessed(state.iterations() * static_cast<int64_t>(series.size()) * 3);
}
BENCHMARK(BM_AlertEvaluate)->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace tailguard

int main(int argc, char** argv) {
  benchmark::Initialize(&argc, argv);
  tailguard::FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();
  const double evals = reporter.Counter("BM_AlertEvaluate", "items_per_second");
  if (evals > 0) tailguard::PrintFigure("alert_eval_ns", 1e9 / evals, "ns");
  return 0;
}
