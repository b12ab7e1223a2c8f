// `tailguard selftest-record`: several threads record a synthetic inference workload through the
// SDK, one simulated second at a time, then the percentile table per stage, a text histogram of
// the total latency, and what the request sampler kept.
#include <algorithm>
#include <barrier>
#include <cmath>
#include <cstdio>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "common/format.h"
#include "tailguard/registry.h"

namespace tailguard::cli {
namespace {

struct Options {
  int threads = 4;
  int64_t requests = 50000;  // per thread
  int qps = 2000;            // per thread, simulated
  uint64_t seed = 1;
};

// A synthetic risk-control inference request: feature fetch from a feature store with rare
// hiccups, preprocessing, a model whose latency is bimodal (3 % wait for a batch), and
// postprocessing; 0.2 % fail.
class Workload {
 public:
  explicit Workload(uint64_t seed) : rng_(seed) {}

  RequestRecord Next() {
    RequestRecord r;
    const uint64_t fetch = LogNormal(6e6, 0.35) * (Chance(0.005) ? 8 : 1);
    const uint64_t pre = LogNormal(1.2e6, 0.2);
    const uint64_t infer = Chance(0.03) ? LogNormal(60e6, 0.3) : LogNormal(18e6, 0.15);
    const uint64_t post = LogNormal(0.4e6, 0.3);
    r.stage_ns[static_cast<size_t>(Stage::kFeatureFetch)] = fetch;
    r.stage_ns[static_cast<size_t>(Stage::kPreprocess)] = pre;
    r.stage_ns[static_cast<size_t>(Stage::kInference)] = infer;
    r.stage_ns[static_cast<size_t>(Stage::kPostprocess)] = post;
    r.stage_ns[static_cast<size_t>(Stage::kTotal)] = fetch + pre + infer + post + 100'000;
    r.input_size = 256;
    if (Chance(0.002)) {
      r.failed = true;
      r.status = 503;
    } else {
      r.status = 200;
    }
    char trace[33];
    std::snprintf(trace, sizeof(trace), "%016llx%016llx", static_cast<unsigned long long>(rng_()),
                  static_cast<unsigned long long>(rng_()));
    r.set_trace(trace);
    return r;
  }

 private:
  uint64_t LogNormal(double median, double sigma) {
    return static_cast<uint64_t>(median * std::exp(sigma * normal_(rng_)));
  }
  bool Chance(double p) { return uniform_(rng_) < p; }

  std::mt19937_64 rng_;
  std::normal_distribution<double> normal_;
  std::uniform_real_distribution<double> uniform_;
};

void PrintTable(const RequestMetrics& m) {
  std::printf("%-14s %9s %9s %9s %9s %9s %9s %9s\n", "stage", "count", "p50", "p90", "p99", "p99.9",
              "mean", "max");
  for (int i = 1; i <= kStageCount; ++i) {
    const Stage s = static_cast<Stage>(i % kStageCount);  // the stages first, total last
    const Histogram h = m.stage(s).Cumulative();
    if (h.empty()) continue;
    std::printf("%-14s %9llu %9s %9s %9s %9s %9s %9s\n", std::string(StageName(s)).c_str(),
                static_cast<unsigned long long>(h.count()),
                FormatDuration(static_cast<double>(h.Quantile(0.5))).c_str(),
                FormatDuration(static_cast<double>(h.Quantile(0.9))).c_str(),
                FormatDuration(static_cast<double>(h.Quantile(0.99))).c_str(),
                FormatDuration(static_cast<double>(h.Quantile(0.999))).c_str(),
                FormatDuration(h.mean()).c_str(),
                FormatDuration(static_cast<double>(h.max())).c_str());
  }
}

// Groups the fine buckets into rows of equal width on a log scale, 4 rows per doubling.
void PrintHistogram(const Histogram& h) {
  if (h.empty()) return;
  std::printf("\ntotal latency, %llu requests (log scale, 4 rows per doubling):\n",
              static_cast<unsigned long long>(h.count()));
  const double lo = std::floor(std::log2(static_cast<double>(std::max<uint64_t>(h.min(), 1))) * 4);
  const double hi = std::ceil(std::log2(static_cast<double>(h.max()) + 1) * 4);
  std::vector<uint64_t> rows(static_cast<size_t>(hi - lo) + 1, 0);
  h.ForEachBucket([&](int i, uint64_t c) {
    const double v = static_cast<double>(std::max<uint64_t>(BucketLayout::Midpoint(i), 1));
    const size_t row = static_cast<size_t>(
        std::clamp(std::floor(std::log2(v) * 4) - lo, 0.0, static_cast<double>(rows.size() - 1)));
    rows[row] += c;
  });
  const uint64_t peak = *std::max_element(rows.begin(), rows.end());
  // Trim empty rows at both ends.
  size_t first = 0;
  size_t last = rows.size() - 1;
  while (first < last && rows[first] == 0) ++first;
  while (last > first && rows[last] == 0) --last;
  for (size_t r = first; r <= last; ++r) {
    const double from = std::exp2((lo + static_cast<double>(r)) / 4);
    const int width = static_cast<int>(
        std::lround(50.0 * static_cast<double>(rows[r]) / static_cast<double>(peak)));
    // Block characters are three bytes in UTF-8, so pad by hand rather than with printf.
    std::string bar;
    for (int i = 0; i < width; ++i) bar += "\u2588";
    if (width == 0 && rows[r] != 0) bar = "\u258f";
    bar.append(static_cast<size_t>(50 - std::max(width, 1)), ' ');
    std::printf("  >= %8s | %s %llu\n", FormatDuration(from).c_str(), bar.c_str(),
                static_cast<unsigned long long>(rows[r]));
  }
}

void PrintSamples(const Sampler& sampler) {
  std::vector<SampledRequest> samples = sampler.Snapshot();
  uint64_t by_reason[3] = {0, 0, 0};
  for (const auto& s : samples) ++by_reason[static_cast<int>(s.reason)];
  std::printf(
      "\nsampler: kept %llu (held %zu: %llu by rate, %llu slow, %llu failed), evicted %llu, "
      "dropped %llu\n",
      static_cast<unsigned long long>(sampler.kept()), samples.size(),
      static_cast<unsigned long long>(by_reason[0]), static_cast<unsigned long long>(by_reason[1]),
      static_cast<unsigned long long>(by_reason[2]),
      static_cast<unsigned long long>(sampler.evicted()),
      static_cast<unsigned long long>(sampler.dropped()));
  std::sort(samples.begin(), samples.end(), [](const SampledRequest& a, const SampledRequest& b) {
    return a.record.total_ns() > b.record.total_ns();
  });
  std::printf("slowest sampled requests:\n");
  for (size_t i = 0; i < std::min<size_t>(3, samples.size()); ++i) {
    const RequestRecord& r = samples[i].record;
    std::printf("  %s total %s:", std::string(r.trace()).c_str(),
                FormatDuration(static_cast<double>(r.total_ns())).c_str());
    for (int s = 1; s < kStageCount; ++s) {
      const uint64_t ns = r.stage_ns[static_cast<size_t>(s)];
      if (ns != 0) {
        std::printf(" %s %s", std::string(StageName(static_cast<Stage>(s))).c_str(),
                    FormatDuration(static_cast<double>(ns)).c_str());
      }
    }
    std::printf(" status %d\n", r.status);
  }
}

int Run(const Options& o) {
  FakeClock clock;
  Registry registry(clock);
  absl::StatusOr<RequestMetrics*> metrics = registry.Requests(
      {.model = "risk-mlp", .version = "v1", .route = "/v2/models/risk-mlp/infer"});
  if (!metrics.ok()) {
    std::fprintf(stderr, "tailguard: %s\n", metrics.status().ToString().c_str());
    return 1;
  }
  const int64_t seconds = (o.requests + o.qps - 1) / o.qps;
  std::printf(
      "tailguard selftest-record: %d threads x %lld requests, %d requests/s per thread, %lld "
      "simulated seconds\n\n",
      o.threads, static_cast<long long>(o.requests), o.qps, static_cast<long long>(seconds));

  // Every thread records one simulated second, then the last to arrive advances the clock and
  // collects, as the live loop does once a second.
  std::barrier tick(o.threads, [&]() noexcept {
    clock.Advance(std::chrono::seconds(1));
    registry.Collect();
  });
  std::vector<std::thread> threads;
  for (int t = 0; t < o.threads; ++t) {
    threads.emplace_back([&, t] {
      Workload w(o.seed * 1000003 + static_cast<uint64_t>(t));
      int64_t left = o.requests;
      for (int64_t s = 0; s < seconds; ++s) {
        const int64_t n = std::min<int64_t>(left, o.qps);
        for (int64_t i = 0; i < n; ++i) (*metrics)->RecordRequest(w.Next());
        left -= n;
        tick.arrive_and_wait();
      }
    });
  }
  for (auto& th : threads) th.join();

  PrintTable(**metrics);
  PrintHistogram((*metrics)->stage(Stage::kTotal).Cumulative());
  PrintSamples((*metrics)->sampler());
  const Histogram total = (*metrics)->stage(Stage::kTotal).Cumulative();
  std::printf("\ntotal requests: %llu\n", static_cast<unsigned long long>(total.count()));
  const Histogram minute = (*metrics)->stage(Stage::kTotal).Window(kWindow1m, clock.WallNow());
  std::printf("last minute: %llu requests, p99 %s (%zu bytes in this series' windows)\n",
              static_cast<unsigned long long>(minute.count()),
              FormatDuration(static_cast<double>(minute.Quantile(0.99))).c_str(),
              (*metrics)->stage(Stage::kTotal).MemoryBytes());
  return 0;
}

}  // namespace

void AddSelftestRecord(CLI::App& app, Action& action) {
  auto opts = std::make_shared<Options>();
  CLI::App* cmd = app.add_subcommand(
      "selftest-record",
      "Record a synthetic inference workload from several threads and print the percentiles");
  cmd->add_option("--threads", opts->threads, "recording threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--requests", opts->requests, "requests per thread")
      ->check(CLI::Range(int64_t{1}, int64_t{1} << 40))
      ->capture_default_str();
  cmd->add_option("--qps", opts->qps, "simulated requests per second per thread")
      ->check(CLI::Range(1, 10'000'000))
      ->capture_default_str();
  cmd->add_option("--seed", opts->seed, "random seed of the workload")->capture_default_str();
  cmd->callback([opts, &action] { action = [opts] { return Run(*opts); }; });
}

}  // namespace tailguard::cli
