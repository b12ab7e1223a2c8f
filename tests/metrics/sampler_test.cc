// Sampler: the keep fraction follows traffic (all at 5 QPS, a few percent at 50, 1 % at 500),
// slow and failed requests are always kept, memory is bounded.
#include "tailguard/sampler.h"

#include <gtest/gtest.h>

#include <atomic>
#include <thread>

#include "tailguard/registry.h"

namespace tailguard {
namespace {

TEST(SamplerTest, KeepFractionFollowsTrafficSmoothly) {
  const SamplerOptions o;
  EXPECT_EQ(Sampler::KeepFraction(0, o), 1.0);
  EXPECT_EQ(Sampler::KeepFraction(5, o), 1.0);
  EXPECT_EQ(Sampler::KeepFraction(10, o), 1.0);
  EXPECT_NEAR(Sampler::KeepFraction(50, o), 0.04, 1e-12);
  EXPECT_NEAR(Sampler::KeepFraction(99.999, o), 0.01, 1e-5);  // continuous at both ends
  EXPECT_NEAR(Sampler::KeepFraction(10.001, o), 1.0, 1e-3);
  EXPECT_EQ(Sampler::KeepFraction(100, o), 0.01);
  EXPECT_EQ(Sampler::KeepFraction(1e6, o), 0.01);
  double prev = 1.0;
  for (double q = 10; q <= 100; q += 0.5) {
    const double f = Sampler::KeepFraction(q, o);
    ASSERT_LE(f, prev);
    prev = f;
  }
}

// Drives a route at `qps` for `seconds` on a fake clock, ticking once a second as the live loop
// does, and returns requests kept per second after a short warm-up.
double KeptPerSecond(int qps, int seconds) {
  FakeClock clock;
  Registry registry(clock);
  RequestMetrics& m = **registry.Requests({"m", "v1", "/predict"});
  RequestRecord r;
  r.stage_ns[0] = 10'000'000;  // every request equally fast: none is slower than the P99
  int kept = 0;
  constexpr int kWarmup = 5;
  for (int s = 0; s < kWarmup + seconds; ++s) {
    for (int i = 0; i < qps; ++i) {
      const SampleDecision d = m.RecordRequest(r);
      if (s >= kWarmup && d == SampleDecision::kKept) ++kept;
    }
    clock.Advance(std::chrono::seconds(1));
    registry.Collect();
  }
  return static_cast<double>(kept) / seconds;
}

TEST(SamplerTest, KeepsEveryRequestAtFiveQps) { EXPECT_EQ(KeptPerSecond(5, 100), 5.0); }

TEST(SamplerTest, KeepsAboutFourPercentAtFiftyQps) {
  // (10 / 50)^2 = 4 % of 50 requests/s = 2 a second; the bounds are about 4 standard deviations.
  EXPECT_NEAR(KeptPerSecond(50, 200), 2.0, 0.4);
}

TEST(SamplerTest, KeepsAboutOnePercentAtFiveHundredQps) {
  EXPECT_NEAR(KeptPerSecond(500, 200), 5.0, 0.7);
}

TEST(SamplerTest, AlwaysKeepsSlowAndFailedRequests) {
  FakeClock clock;
  Registry registry(clock);
  RequestMetrics& m = **registry.Requests({"m", "v1", "/predict"});
  RequestRecord r;
  for (int s = 0; s < 10; ++s) {
    for (int i = 0; i < 1000; ++i) {
      r.stage_ns[0] = 10'000'000 + static_cast<uint64_t>(i) * 1000;
      m.RecordRequest(r);
    }
    clock.Advance(std::chrono::seconds(1));
    registry.Collect();
  }
  EXPECT_EQ(m.sampler().keep_fraction(), 0.01);
  m.sampler().Drain();
  int slow_kept = 0;
  int failed_kept = 0;
  for (int i = 0; i < 100; ++i) {
    RequestRecord slow;
    slow.stage_ns[0] = 50'000'000;  // far above the P99 of about 11 ms
    if (m.RecordRequest(slow) == SampleDecision::kKept) ++slow_kept;
    RequestRecord failed;
    failed.stage_ns[0] = 1'000'000;
    failed.failed = true;
    failed.status = 500;
    if (m.RecordRequest(failed) == SampleDecision::kKept) ++failed_kept;
  }
  EXPECT_EQ(slow_kept, 100);
  EXPECT_EQ(failed_kept, 100);
  int by_reason[3] = {0, 0, 0};
  for (const SampledRequest& s : m.sampler().Snapshot()) ++by_reason[static_cast<int>(s.reason)];
  EXPECT_EQ(by_reason[static_cast<int>(SampleReason::kSlow)], 100);
  EXPECT_EQ(by_reason[static_cast<int>(SampleReason::kFailed)], 100);
}

TEST(SamplerTest, MemoryIsBoundedAndEvictionsCounted) {
  Sampler s({.capacity = 16});
  RequestRecord r;
  r.stage_ns[0] = 1;
  for (int i = 0; i < 100; ++i) {
    r.input_size = static_cast<uint64_t>(i);
    EXPECT_EQ(s.Offer(r), SampleDecision::kKept);  // no rate known yet: keep all
  }
  EXPECT_EQ(s.kept(), 100u);
  EXPECT_EQ(s.evicted(), 84u);
  std::vector<SampledRequest> held = s.Drain();
  ASSERT_EQ(held.size(), 16u);
  EXPECT_EQ(held.front().record.input_size, 84u);  // oldest kept first
  EXPECT_EQ(held.back().record.input_size, 99u);
  EXPECT_TRUE(s.Drain().empty());
}

TEST(SamplerTest, TraceIdsAreTruncatedNotOverflowed) {
  RequestRecord r;
  r.set_trace("4bf92f3577b34da6a3ce929d0e0e4736");
  EXPECT_EQ(r.trace(), "4bf92f3577b34da6a3ce929d0e0e4736");
  r.set_trace(std::string(100, 'a'));
  EXPECT_EQ(r.trace().size(), 32u);
}

}  // namespace
}  // namespace tailguard

namespace tailguard {
namespace {

// Regression (review): failed requests met a busy lock and were dropped.
TEST(SamplerConcurrencyTest, FailedRequestsAreNeverDroppedUnderContention) {
  Sampler s({.capacity = 1 << 16});
  s.Update(1e6, 1);  // high traffic: ordinary requests kept at 1 %
  std::atomic<bool> stop{false};
  std::atomic<uint64_t> drained{0};
  std::thread drainer([&] {
    while (!stop.load()) drained += s.Drain().size();
  });
  std::vector<std::thread> ts;
  std::atomic<uint64_t> kept{0};
  for (int t = 0; t < 4; ++t) {
    ts.emplace_back([&] {
      RequestRecord r;
      r.stage_ns[0] = 0;
      r.failed = true;
      for (int i = 0; i < 20000; ++i) kept += s.Offer(r) == SampleDecision::kKept;
    });
  }
  for (auto& t : ts) t.join();
  stop = true;
  drainer.join();
  drained += s.Drain().size();
  EXPECT_EQ(kept.load(), 80000u);
  EXPECT_EQ(s.evicted() + drained.load(), 80000u);
}

}  // namespace
}  // namespace tailguard
