// The NVML reader against a fake libnvidia-ml (tests/collect/fake_nvml.c), and on this host
// without a driver: it says there is no GPU rather than failing.
#include "collect/nvml.h"

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard {
namespace {

using ::testing::HasSubstr;

TEST(Nvml, ReadsEveryDeviceThatAnswers) {
  absl::StatusOr<std::unique_ptr<Nvml>> n = Nvml::Open(TAILGUARD_FAKE_NVML);
  ASSERT_TRUE(n.ok()) << n.status();
  EXPECT_EQ((*n)->device_count(), 2u);
  const std::vector<GpuStats> gpus = (*n)->Read();
  ASSERT_EQ(gpus.size(), 1u);  // device 1 does not report its memory: left out
  EXPECT_EQ(gpus[0].index, 0u);
  EXPECT_EQ(gpus[0].name, "Fake H200");
  EXPECT_EQ(gpus[0].utilization_pct, 87);
  EXPECT_EQ(gpus[0].memory_utilization_pct, 42);
  EXPECT_EQ(gpus[0].memory_used_bytes, 20.0 * (1ull << 30));
  EXPECT_EQ(gpus[0].memory_total_bytes, 80.0 * (1ull << 30));
  EXPECT_EQ(gpus[0].compute_processes, 3);
}

TEST(Nvml, NoDriverSaysThereIsNoGpu) {
  absl::StatusOr<std::unique_ptr<Nvml>> n = Nvml::Open("/nonexistent/libnvidia-ml.so.1");
  ASSERT_FALSE(n.ok());
  EXPECT_TRUE(absl::IsUnavailable(n.status()));
  EXPECT_THAT(n.status().message(), HasSubstr("no GPU signals"));
  EXPECT_THAT(n.status().message(), HasSubstr("no NVIDIA driver"));
}

TEST(Nvml, ALibraryWithoutNvmlIsRefused) {
  absl::StatusOr<std::unique_ptr<Nvml>> n = Nvml::Open("libz.so.1");
  ASSERT_FALSE(n.ok());
  EXPECT_THAT(n.status().message(), HasSubstr("lacks the NVML functions"));
}

}  // namespace
}  // namespace tailguard
