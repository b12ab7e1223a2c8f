// Embedding tailguard in a C++ inference server: time each request's stages with the SDK, record
// its input size and a gauge of requests in flight, run the analysis in process once a second
// (the same analyzer and default rules as `tailguard serve`), read percentiles from the windows,
// and render the registry for a /metrics endpoint.
//
// Build: part of the default build (build/release/examples/embed_example), or on its own against
// the installed SDK (examples/CMakeLists.txt). It serves a fake model for three seconds from two
// worker threads and prints the 10 s window of every stage.
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "tailguard/analyzer.h"
#include "tailguard/exposition.h"
#include "tailguard/registry.h"
#include "tailguard/version.h"

namespace {

// Stand-ins for the server's own work.
void SleepMicros(std::mt19937& rng, int median) {
  std::lognormal_distribution<double> d(std::log(static_cast<double>(median)), 0.3);
  std::this_thread::sleep_for(std::chrono::microseconds(static_cast<int>(d(rng))));
}

// What the analysis finds; a real server would page, or open its own breaker on kFire.
class PrintAlerts final : public tailguard::Subscriber {
 public:
  void OnAlertEvent(const tailguard::AlertEvent& e) override {
    std::printf("alert: %s %s %s on %s\n",
                std::string(tailguard::AlertEventKindName(e.kind)).c_str(), e.severity.c_str(),
                e.rule.c_str(), e.series.c_str());
  }
  void OnAnomaly(const tailguard::AnomalyEvent& a) override {
    std::printf("anomaly on %s: score %.2f\n", a.series.c_str(), a.score);
  }
};

}  // namespace

int main() {
  std::printf("tailguard SDK %s\n", std::string(tailguard::kVersion).c_str());
  // One registry per process; the real clock by default.
  tailguard::Registry registry;
  // Look the route up once and keep the reference: the hot path never touches the registry.
  absl::StatusOr<tailguard::RequestMetrics*> route =
      registry.Requests({.model = "ctr-ranker", .version = "2026-11-01", .route = "/rank"});
  if (!route.ok()) {
    std::fprintf(stderr, "%s\n", route.status().ToString().c_str());
    return 1;
  }
  tailguard::RequestMetrics& metrics = **route;
  // A level the server sets itself: requests being worked on (sampled once a second).
  absl::StatusOr<tailguard::Series*> in_flight = registry.Gauge(
      "ctr_ranker_requests_in_flight", {{"route", "/rank"}}, tailguard::Unit::kCount);
  if (!in_flight.ok()) {
    std::fprintf(stderr, "%s\n", in_flight.status().ToString().c_str());
    return 1;
  }

  std::atomic<bool> stop{false};
  std::vector<std::thread> workers;
  for (int w = 0; w < 2; ++w) {
    workers.emplace_back([&, w] {
      std::mt19937 rng(static_cast<unsigned>(w));
      while (!stop.load(std::memory_order_relaxed)) {
        tailguard::RequestTimer t(metrics);  // one clock read
        (*in_flight)->Add(1);
        SleepMicros(rng, 800);  // fetch features
        t.EndStage(tailguard::Stage::kFeatureFetch);
        SleepMicros(rng, 2000);  // run the model
        t.EndStage(tailguard::Stage::kInference);
        t.set_input_size(100);  // into tailguard_request_input_size
        t.set_status(200, /*failed=*/false);
        (*in_flight)->Add(-1);
      }  // total recorded here
    });
  }

  // The analysis, in process: every second the source collects the registry (moving what was
  // recorded into the windows) and the analyzer runs the detectors and the default rules.
  tailguard::RegistrySource source(registry);
  absl::StatusOr<std::unique_ptr<tailguard::Analyzer>> analyzer =
      tailguard::Analyzer::Create(tailguard::DefaultAlertRules(), {});
  if (!analyzer.ok()) {
    std::fprintf(stderr, "%s\n", analyzer.status().ToString().c_str());
    return 1;
  }
  PrintAlerts alerts;
  (*analyzer)->Subscribe(&alerts);
  tailguard::Batch batch;
  for (int second = 0; second < 3; ++second) {
    std::this_thread::sleep_for(std::chrono::seconds(1));
    if (source.Next(batch).ok()) (*analyzer)->Analyze(batch);  // the registry's never fails
  }
  stop = true;
  for (auto& t : workers) t.join();
  registry.Collect();

  const tailguard::WallTime now = registry.clock().WallNow();
  for (tailguard::Stage s :
       {tailguard::Stage::kFeatureFetch, tailguard::Stage::kInference, tailguard::Stage::kTotal}) {
    const tailguard::Histogram h = metrics.stage(s).Window(tailguard::kWindow10s, now);
    std::printf(
        "%-14s n=%-6llu p50=%.2fms p99=%.2fms\n", std::string(tailguard::StageName(s)).c_str(),
        static_cast<unsigned long long>(h.count()), h.Quantile(0.5) / 1e6, h.Quantile(0.99) / 1e6);
  }
  const tailguard::Histogram sizes = metrics.input_size().Window(tailguard::kWindow10s, now);
  std::printf("%-14s n=%-6llu p50=%llu\n", "input_size",
              static_cast<unsigned long long>(sizes.count()),
              static_cast<unsigned long long>(sizes.Quantile(0.5)));
  const tailguard::Histogram levels = (*in_flight)->Window(tailguard::kWindow10s, now);
  std::printf("%-14s samples=%llu max=%llu now=%lld\n", "in_flight",
              static_cast<unsigned long long>(levels.count()),
              static_cast<unsigned long long>(levels.max()),
              static_cast<long long>((*in_flight)->level()));
  std::printf("sampled requests held: %zu\n", metrics.sampler().Snapshot().size());
  // What a /metrics endpoint of the server would answer.
  const std::string page = tailguard::PrometheusText(registry);
  std::printf("/metrics: %zu bytes, %zu series analysed in the last tick\n", page.size(),
              batch.points.size());
  return 0;
}
