// Signals to quadrants: the offline names of the public sets and tailguard's own families.
#include "diagnose/quadrant.h"

#include "gtest/gtest.h"

namespace tailguard::diagnose {
namespace {

TEST(QuadrantTest, ClassifiesByMetricName) {
  struct Case {
    const char* series;
    Quadrant quadrant;
    SignalKind kind;
  } cases[] = {
      {"carts/cpu", Quadrant::kHardware, SignalKind::kCause},
      {"carts/db_mem_mb", Quadrant::kHardware, SignalKind::kCause},
      {"host/cgroup_cpu_throttled_seconds", Quadrant::kHardware, SignalKind::kCause},
      {"carts/load_rps", Quadrant::kTraffic, SignalKind::kCause},
      {"tailguard_request_input_size{route=\"/v2/models/risk/infer\"}", Quadrant::kTraffic,
       SignalKind::kCause},
      {"risk/stage_redis_seconds", Quadrant::kDependency, SignalKind::kCause},
      {"tailguard_model_batch_size{model=\"risk\"}", Quadrant::kModel, SignalKind::kCause},
      {"tailguard_model_queue_depth{model=\"risk\"}", Quadrant::kModel, SignalKind::kCause},
      {"carts/latency_p90_s", Quadrant::kDependency, SignalKind::kSymptom},
      {"frontend/client_latency_p99_s", Quadrant::kDependency, SignalKind::kSymptom},
      {"sli/success_pct", Quadrant::kDependency, SignalKind::kSymptom},
      {"orders/syscall_read", Quadrant::kUnknown, SignalKind::kCause},
  };
  for (const Case& c : cases) {
    SignalClass got = ClassifySignal(c.series);
    EXPECT_EQ(got.quadrant, c.quadrant) << c.series;
    EXPECT_EQ(got.kind, c.kind) << c.series;
  }
}

TEST(QuadrantTest, SuccessAndHitRatesAreWorseWhenTheyFall) {
  EXPECT_FALSE(ClassifySignal("sli/success_pct").higher_is_worse);
  EXPECT_FALSE(ClassifySignal("cache/hit_ratio").higher_is_worse);
  EXPECT_TRUE(ClassifySignal("carts/cpu").higher_is_worse);
  EXPECT_TRUE(ClassifySignal("carts/latency_p99_s").higher_is_worse);
}

TEST(QuadrantTest, EntityAndNames) {
  EXPECT_EQ(EntityOf("carts/cpu"), "carts");
  EXPECT_EQ(EntityOf("plain"), "plain");
  EXPECT_EQ(EntityOf("tailguard_request_duration{route=\"/v2/x\"}"),
            "tailguard_request_duration{route=\"/v2/x\"}");
  EXPECT_EQ(QuadrantName(Quadrant::kHardware), "hardware");
  EXPECT_EQ(QuadrantName(Quadrant::kModel), "model");
  EXPECT_EQ(QuadrantName(Quadrant::kUnknown), "unknown");
}

TEST(QuadrantTest, UnitFromTheMetricsSuffix) {
  EXPECT_STREQ(UnitNameOf("tailguard_request_duration_seconds{stage=\"total\"}"), "seconds");
  EXPECT_STREQ(UnitNameOf("tailguard_process_resident_memory_bytes"), "bytes");
  EXPECT_STREQ(UnitNameOf("tailguard_request_rate{route=\"fraud\"}"), "count");
  EXPECT_STREQ(UnitNameOf("tailguard_host_cpu_steal_millicores{}"), "count");
  // A label value ending in _seconds does not make the metric a latency.
  EXPECT_STREQ(UnitNameOf("tailguard_request_rate{route=\"x_seconds\"}"), "count");
}

}  // namespace
}  // namespace tailguard::diagnose
