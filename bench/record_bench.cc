// Benchmarks of the record path, windows and accuracy. Prints `FIGURE <name> <value> <unit>`
// lines after Google Benchmark's table (see DESIGN.md).
//
// Side by side in one run: the per-thread Recorder at one and two threads, against a plain
// Histogram and against one shared histogram of atomic counters (what per-thread writers avoid).
#include <benchmark/benchmark.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "figure_reporter.h"
#include "metrics/compact_histogram.h"
#include "tailguard/histogram.h"
#include "tailguard/recorder.h"
#include "tailguard/windows.h"

namespace tailguard {
namespace {

// Latencies to record: log-normal around 20 ms, precomputed so the benchmark times recording,
// not random number generation.
const std::vector<uint64_t>& Values() {
  static const std::vector<uint64_t> v = [] {
    std::mt19937_64 rng(1);
    std::lognormal_distribution<double> ln(std::log(20e6), 0.8);
    std::vector<uint64_t> out(4096);
    for (auto& x : out) x = static_cast<uint64_t>(ln(rng));
    return out;
  }();
  return v;
}

// Runs `record` once per iteration and reports this thread's own nanoseconds per record in the
// ns_per_record counter (averaged over threads), so one and two threads compare per thread.
template <typename F>
void TimePerThread(benchmark::State& state, F&& record) {
  const std::vector<uint64_t>& values = Values();
  size_t i = static_cast<size_t>(state.thread_index()) * 997;
  const auto start = std::chrono::steady_clock::now();
  for (auto _ : state) {
    benchmark::DoNotOptimize(record(values[i & 4095]));
    ++i;
  }
  const double ns =
      std::chrono::duration<double, std::nano>(std::chrono::steady_clock::now() - start).count();
  state.counters["ns_per_record"] = benchmark::Counter(ns / static_cast<double>(state.iterations()),
                                                       benchmark::Counter::kAvgThreads);
}

Recorder* shared_recorder = nullptr;

void BM_RecorderRecord(benchmark::State& state) {
  if (state.thread_index() == 0) shared_recorder = new Recorder();
  // Google Benchmark starts every thread's loop together, after this setup.
  TimePerThread(state, [](uint64_t v) { return shared_recorder->Record(v); });
  if (state.thread_index() == 0) {
    delete shared_recorder;
    shared_recorder = nullptr;
  }
}
BENCHMARK(BM_RecorderRecord)->Threads(1)->Threads(2)->UseRealTime();

// The same record as a call the compiler cannot inline or hoist anything out of, as from code
// that only sees the recorder through a pointer in another translation unit.
[[gnu::noinline]] bool RecordOutOfLine(Recorder* r, uint64_t v) { return r->Record(v); }
void BM_RecorderRecordOutOfLine(benchmark::State& state) {
  Recorder r;
  Recorder* volatile rp = &r;
  TimePerThread(state, [&](uint64_t v) { return RecordOutOfLine(rp, v); });
}
BENCHMARK(BM_RecorderRecordOutOfLine);

void BM_HistogramRecord(benchmark::State& state) {
  Histogram h;
  TimePerThread(state, [&](uint64_t v) { return h.Record(v); });
}
BENCHMARK(BM_HistogramRecord);

// The design per-thread writers avoid: one histogram of atomic counters shared by all threads.
std::atomic<uint64_t> shared_counts[BucketLayout::kBucketCount];
void BM_SharedAtomicHistogram(benchmark::State& state) {
  TimePerThread(state, [](uint64_t v) {
    return shared_counts[BucketLayout::Index(v)].fetch_add(1, std::memory_order_relaxed);
  });
}
BENCHMARK(BM_SharedAtomicHistogram)->Threads(1)->Threads(2)->UseRealTime();

// A service with latencies between 1 ms and 2 s (log-uniform), `n` requests in a slot.
Histogram Slot(uint64_t seed, int n) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> u(std::log(1e6), std::log(2e9));
  Histogram h;
  for (int i = 0; i < n; ++i) h.Record(static_cast<uint64_t>(std::exp(u(rng))));
  return h;
}

void BM_QuantileQuery1m(benchmark::State& state) {
  FakeClock clock;
  SlidingWindows w;
  for (int s = 0; s < 120; ++s) {
    w.Add(clock.WallNow(), Slot(static_cast<uint64_t>(s), 10'000));
    clock.Advance(std::chrono::seconds(1));
  }
  for (auto _ : state) {
    Histogram h = w.Window(kWindow1m, clock.WallNow());
    benchmark::DoNotOptimize(h.Quantile(0.99));
  }
}
BENCHMARK(BM_QuantileQuery1m)->Unit(benchmark::kMicrosecond);

void BM_Serialize(benchmark::State& state) {
  const Histogram h = Slot(1, 10'000);
  for (auto _ : state) benchmark::DoNotOptimize(h.Serialize());
}
BENCHMARK(BM_Serialize)->Unit(benchmark::kMicrosecond);

void BM_Deserialize(benchmark::State& state) {
  const std::string bytes = Slot(1, 10'000).Serialize();
  for (auto _ : state) benchmark::DoNotOptimize(Histogram::Deserialize(bytes));
}
BENCHMARK(BM_Deserialize)->Unit(benchmark::kMicrosecond);

// Largest relative error at P50/P90/P99/P99.9 against exact sorted quantiles, over 1 M samples
// of each workload, in percent.
double QuantileMaxRelErrorPct() {
  constexpr int kN = 1'000'000;
  std::mt19937_64 rng(2026);
  std::uniform_real_distribution<double> u(0, 1);
  std::lognormal_distribution<double> ln(std::log(20e6), 0.7);
  std::normal_distribution<double> fast(3e6, 4e5), slow(250e6, 60e6);
  double worst = 0;
  for (int workload = 0; workload < 3; ++workload) {
    std::vector<uint64_t> v(kN);
    for (auto& x : v) {
      double d;
      if (workload == 0)
        d = ln(rng);  // log-normal
      else if (workload == 1)
        d = 1e6 / std::pow(1 - u(rng), 1 / 1.2);  // Pareto, alpha 1.2
      else
        d = u(rng) < 0.98 ? fast(rng) : slow(rng);  // fast path + slow tail
      x = static_cast<uint64_t>(std::clamp(d, 1.0, 3.6e12));
    }
    Histogram h;
    for (uint64_t x : v) h.Record(x);
    std::sort(v.begin(), v.end());
    for (double q : {0.5, 0.9, 0.99, 0.999}) {
      const double exact = static_cast<double>(v[static_cast<size_t>(std::ceil(q * kN)) - 1]);
      worst = std::max(worst, std::abs(static_cast<double>(h.Quantile(q)) - exact) / exact);
    }
  }
  return worst * 100;
}

}  // namespace
}  // namespace tailguard

int main(int argc, char** argv) {
  using namespace tailguard;
  benchmark::Initialize(&argc, argv);
  FigureReporter reporter;
  benchmark::RunSpecifiedBenchmarks(&reporter);
  benchmark::Shutdown();

  const double one = reporter.Counter("BM_RecorderRecord/real_time/threads:1", "ns_per_record");
  const double two = reporter.Counter("BM_RecorderRecord/real_time/threads:2", "ns_per_record");
  PrintFigure("record_ns_1thread", one, "ns");
  PrintFigure("record_ns_2threads_per_thread", two, "ns");
  if (one > 0) PrintFigure("record_2threads_over_1thread", two / one, "ratio");
  PrintFigure("record_ns_1thread_out_of_line",
              reporter.Counter("BM_RecorderRecordOutOfLine", "ns_per_record"), "ns");
  PrintFigure("shared_atomic_record_ns_2threads_per_thread",
              reporter.Counter("BM_SharedAtomicHistogram/real_time/threads:2", "ns_per_record"),
              "ns");
  PrintFigure("quantile_query_us", reporter.RealTime("BM_QuantileQuery1m"), "us");
  PrintFigure("quantile_max_rel_error_pct", QuantileMaxRelErrorPct(), "%");
  PrintFigure("slot_bytes", static_cast<double>(CompactHistogram(Slot(7, 10'000)).MemoryBytes()),
              "bytes");
  return 0;
}
