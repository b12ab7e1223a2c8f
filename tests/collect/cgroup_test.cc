// cgroup v2, PSI and host CPU from fixture trees: exact values, "max", absent files (cgroup v1,
// no PSI) and the errors.
#include "collect/cgroup.h"

#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>

#include "gtest/gtest.h"

namespace tailguard {
namespace {

class CgroupTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = std::filesystem::temp_directory_path() /
            ("cgroup_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::remove_all(root_);
    std::filesystem::create_directories(root_);
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    std::filesystem::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::string Path(const std::string& rel = "") const { return (root_ / rel).string(); }

 private:
  std::filesystem::path root_;
};

TEST_F(CgroupTest, ReadsCpuMemoryOomAndPressure) {
  Write("cg/cpu.stat",
        "usage_usec 2500000\nuser_usec 2000000\nsystem_usec 500000\nnr_periods 100\n"
        "nr_throttled 25\nthrottled_usec 750000\n");
  Write("cg/memory.current", "104857600\n");
  Write("cg/memory.max", "max\n");
  Write("cg/memory.events", "low 0\nhigh 0\nmax 3\noom 2\noom_kill 1\n");
  Write("cg/cpu.pressure",
        "some avg10=12.50 avg60=3.25 avg300=0.75 total=4000000\n"
        "full avg10=0.00 avg60=0.00 avg300=0.00 total=0\n");
  Write("cg/memory.pressure",
        "some avg10=1.00 avg60=0.50 avg300=0.10 total=200\n"
        "full avg10=0.50 avg60=0.25 avg300=0.05 total=100\n");
  absl::StatusOr<CgroupStats> s = ReadCgroupStats(Path("cg"));
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->cpu_usage_seconds, 2.5);
  EXPECT_DOUBLE_EQ(s->cpu_periods, 100);
  EXPECT_DOUBLE_EQ(s->cpu_throttled_periods, 25);
  EXPECT_DOUBLE_EQ(s->cpu_throttled_seconds, 0.75);
  EXPECT_DOUBLE_EQ(s->memory_bytes, 104857600);
  EXPECT_TRUE(std::isinf(s->memory_limit_bytes));
  EXPECT_DOUBLE_EQ(s->oom_events, 2);
  EXPECT_DOUBLE_EQ(s->oom_kill_events, 1);
  EXPECT_DOUBLE_EQ(s->cpu_some.avg10, 12.5);
  EXPECT_DOUBLE_EQ(s->cpu_some.avg60, 3.25);
  EXPECT_DOUBLE_EQ(s->cpu_some.avg300, 0.75);
  EXPECT_DOUBLE_EQ(s->cpu_some.total_seconds, 4);
  EXPECT_DOUBLE_EQ(s->memory_full.avg10, 0.5);
  EXPECT_DOUBLE_EQ(s->memory_full.total_seconds, 1e-4);
  EXPECT_TRUE(std::isnan(s->io_some.avg10));  // no io.pressure: unknown
}

TEST_F(CgroupTest, AbsentFilesLeaveFieldsUnknown) {
  Write("empty/.keep", "");
  Write("odd/memory.max", "lots\n");
  absl::StatusOr<CgroupStats> s = ReadCgroupStats(Path("empty"));
  ASSERT_TRUE(s.ok());
  EXPECT_TRUE(std::isnan(s->cpu_usage_seconds));
  EXPECT_TRUE(std::isnan(s->memory_bytes));
  EXPECT_TRUE(std::isnan(s->cpu_some.avg10));
  absl::StatusOr<CgroupStats> odd = ReadCgroupStats(Path("odd"));
  ASSERT_TRUE(odd.ok());
  EXPECT_TRUE(std::isnan(odd->memory_limit_bytes));
  EXPECT_TRUE(absl::IsNotFound(ReadCgroupStats(Path("none")).status()));
  Write("file", "x");
  EXPECT_TRUE(absl::IsNotFound(ReadCgroupStats(Path("file")).status()));
}

TEST_F(CgroupTest, FindsTheProcessCgroup) {
  Write("proc/self/cgroup", "0::/system.slice/tailguard.service\n");
  Write("proc/42/cgroup", "0::/\n");
  Write("proc/7/cgroup", "12:cpu,cpuacct:/docker/abc\n");
  EXPECT_EQ(*CgroupDirOf(Path("proc"), "self", "/sys/fs/cgroup"),
            "/sys/fs/cgroup/system.slice/tailguard.service");
  EXPECT_EQ(*CgroupDirOf(Path("proc"), "42", "/cg"), "/cg");
  absl::StatusOr<std::string> v1 = CgroupDirOf(Path("proc"), "7");
  ASSERT_FALSE(v1.ok());
  EXPECT_NE(v1.status().message().find("cgroup v1"), std::string::npos);
  EXPECT_TRUE(absl::IsNotFound(CgroupDirOf(Path("proc"), "8").status()));
}

TEST_F(CgroupTest, HostCpuFromProcStat) {
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  Write("proc/stat", "cpu  100 20 30 400 50 6 4 10 0 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n");
  absl::StatusOr<HostCpu> c = ReadHostCpu(Path("proc"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_DOUBLE_EQ(c->busy_seconds, 170 / hz);
  EXPECT_DOUBLE_EQ(c->idle_seconds, 450 / hz);
  EXPECT_DOUBLE_EQ(c->steal_seconds, 10 / hz);
  Write("bad/stat", "intr 1 2 3\n");
  EXPECT_TRUE(absl::IsInternal(ReadHostCpu(Path("bad")).status()));
  Write("short/stat", "cpu 1 2 3\n");
  EXPECT_TRUE(absl::IsInternal(ReadHostCpu(Path("short")).status()));
  EXPECT_TRUE(absl::IsNotFound(ReadHostCpu(Path("nowhere")).status()));
}

TEST(CgroupLiveTest, ThisHostReadsWithoutFailing) {
  // Whatever this machine is (cgroup v1 or v2, PSI or not), reading never fails on /proc/stat
  // and a cgroup lookup answers ok or NotFound.
  EXPECT_TRUE(ReadHostCpu().ok());
  absl::StatusOr<std::string> dir = CgroupDirOf();
  if (dir.ok()) {
    EXPECT_TRUE(ReadCgroupStats(*dir).ok() || !std::filesystem::exists(*dir));
  }
}

}  // namespace
}  // namespace tailguard
