// The hardware signals from a fixture /proc and cgroup tree: rates between two samples by hand,
// PSI from the cgroup and from the host, an OOM kill reported once, and a host without cgroup v2
// or PSI leaving those gauges out and saying so.
#include "collect/host_signals.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace tailguard {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;

class HostSignalsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("host_signals_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_);
  }
  void TearDown() override { fs::remove_all(root_); }
  void Write(const std::string& rel, const std::string& text) {
    fs::create_directories((root_ / rel).parent_path());
    std::ofstream(root_ / rel) << text;
  }
  std::string Path(const std::string& rel) const { return (root_ / rel).string(); }
  // utime and stime in ticks; 7 threads; 1000 pages resident.
  void Process(int utime, int stime) {
    Write("proc/4242/stat", "4242 (model server) S 1 4242 4242 0 -1 4194560 2000 0 0 0 " +
                                std::to_string(utime) + " " + std::to_string(stime) +
                                " 0 0 20 0 7 0 12345 123456789 1000 18446744073709551615 1 1 0 0 "
                                "0 0 0 4096 0 0 0 17 3 0 0 0 0 0\n");
  }
  // user nice system idle iowait irq softirq steal, in ticks.
  void Host(int user, int idle, int steal) {
    Write("proc/stat", "cpu  " + std::to_string(user) + " 0 0 " + std::to_string(idle) + " 0 0 0 " +
                           std::to_string(steal) + " 0 0\nbtime 1700000000\n");
  }
  int64_t Level(Registry& r, const char* name) {
    Series* s = r.Find(name, {});
    return s == nullptr ? -1 : s->level();
  }

 private:
  fs::path root_;
};

TEST_F(HostSignalsTest, RatesBetweenTwoSamplesAndCgroupSignals) {
  const double hz = static_cast<double>(::sysconf(_SC_CLK_TCK));
  ASSERT_EQ(hz, 100) << "the fixture's ticks assume USER_HZ 100";
  Write("proc/4242/cgroup", "0::/svc\n");
  Write("cg/svc/cpu.stat", "usage_usec 0\nnr_periods 10\nnr_throttled 0\nthrottled_usec 0\n");
  Write("cg/svc/memory.current", "5000000\n");
  Write("cg/svc/memory.events", "oom 0\noom_kill 0\n");
  Write("cg/svc/cpu.pressure", "some avg10=12.50 avg60=3.25 avg300=0.75 total=4000000\n");
  Process(100, 50);
  Host(1000, 5000, 100);
  Registry registry;
  double kills = 0;
  HostSignals h(registry, {.proc_root = Path("proc"),
                           .cgroup_root = Path("cg"),
                           .pid = "4242",
                           .on_oom_kill = [&](double n) { kills += n; }});
  EXPECT_THAT(h.Describe(), HasSubstr("cgroup v2 " + Path("cg") + "/svc"));
  h.Sample(10);
  // No rate from one sample; levels are there.
  EXPECT_EQ(Level(registry, "tailguard_process_cpu_millicores"), -1);
  EXPECT_EQ(Level(registry, "tailguard_process_threads"), 7);
  EXPECT_EQ(Level(registry, "tailguard_process_resident_memory_bytes"), 1000 * ::getpagesize());
  EXPECT_EQ(Level(registry, "tailguard_cgroup_memory_bytes"), 5000000);
  EXPECT_EQ(Level(registry, "tailguard_cpu_pressure_some_permille"), 125);

  // Two seconds later: the process used 2 s of CPU (1 core), the host 6 s busy (user 5, steal 1)
  // stolen: the neighbours took 6 - 1 - 2 = 3 s, 1.5 cores. Throttled 0.5 s of 2: 250 permille.
  Process(250, 100);
  Host(1500, 5200, 200);
  Write("cg/svc/cpu.stat",
        "usage_usec 2000000\nnr_periods 30\nnr_throttled 5\n"
        "throttled_usec 500000\n");
  Write("cg/svc/memory.events", "oom 2\noom_kill 2\n");
  h.Sample(12);
  EXPECT_EQ(Level(registry, "tailguard_process_cpu_millicores"), 1000);
  EXPECT_EQ(Level(registry, "tailguard_host_cpu_other_millicores"), 1500);
  EXPECT_EQ(Level(registry, "tailguard_host_cpu_steal_millicores"), 500);
  EXPECT_EQ(Level(registry, "tailguard_cgroup_cpu_throttled_permille"), 250);
  EXPECT_EQ(Level(registry, "tailguard_cgroup_oom_kills"), 2);
  EXPECT_EQ(kills, 2);
  h.Sample(13);  // no new kill
  EXPECT_EQ(kills, 2);
}

TEST_F(HostSignalsTest, NoCgroupV2UsesTheHostsPressureOrSaysThereIsNone) {
  Write("proc/4242/cgroup", "4:memory:/x\n1:cpu:/\n");  // cgroup v1 only
  Process(1, 1);
  Host(10, 10, 0);
  Registry registry;
  {
    HostSignals h(registry, {.proc_root = Path("proc"),
                             .cgroup_root = Path("cg"),
                             .pid = "4242",
                             .on_oom_kill = nullptr});
    EXPECT_THAT(h.Describe(), HasSubstr("no cgroup v2"));
    EXPECT_THAT(h.Describe(), HasSubstr("no pressure (PSI)"));
    h.Sample(1);
    EXPECT_EQ(Level(registry, "tailguard_cgroup_memory_bytes"), -1);
    EXPECT_EQ(Level(registry, "tailguard_cpu_pressure_some_permille"), -1);
  }
  Write("proc/pressure/cpu", "some avg10=2.00 avg60=1.00 avg300=0.50 total=100\n");
  Write("proc/pressure/memory", "some avg10=0.30 avg60=0.00 avg300=0.00 total=1\n");
  HostSignals h(registry, {.proc_root = Path("proc"),
                           .cgroup_root = Path("cg"),
                           .pid = "4242",
                           .on_oom_kill = nullptr});
  EXPECT_THAT(h.Describe(), HasSubstr("; pressure (PSI)"));
  h.Sample(1);
  EXPECT_EQ(Level(registry, "tailguard_cpu_pressure_some_permille"), 20);
  EXPECT_EQ(Level(registry, "tailguard_memory_pressure_some_permille"), 3);
}

TEST_F(HostSignalsTest, GpusThroughNvmlOrSaysThereAreNone) {
  Process(1, 1);
  Host(10, 10, 0);
  Registry registry;
  HostSignals h(registry, {.proc_root = Path("proc"),
                           .cgroup_root = Path("cg"),
                           .pid = "4242",
                           .on_oom_kill = nullptr,
                           .nvml_library = TAILGUARD_FAKE_NVML});
  EXPECT_THAT(h.Describe(), HasSubstr("2 GPU(s) through NVML"));
  h.Sample(1);
  Series* util = registry.Find("tailguard_gpu_utilization_pct", {{"gpu", "0"}});
  ASSERT_NE(util, nullptr);
  EXPECT_EQ(util->level(), 87);
  EXPECT_EQ(registry.Find("tailguard_gpu_memory_used_bytes", {{"gpu", "0"}})->level(),
            int64_t{20} << 30);
  EXPECT_EQ(registry.Find("tailguard_gpu_compute_processes", {{"gpu", "0"}})->level(), 3);
  EXPECT_EQ(registry.Find("tailguard_gpu_utilization_pct", {{"gpu", "1"}}), nullptr);
  HostSignals none(registry, {.proc_root = Path("proc"),
                              .cgroup_root = Path("cg"),
                              .pid = "4242",
                              .on_oom_kill = nullptr,
                              .nvml_library = "/nonexistent/libnvidia-ml.so.1"});
  EXPECT_THAT(none.Describe(), HasSubstr("no GPU signals"));
}

TEST_F(HostSignalsTest, ThisMachineNeverFails) {
  Registry registry;
  HostSignals h(registry);
  h.Sample(1);
  h.Sample(2);
  EXPECT_GE(Level(registry, "tailguard_process_threads"), 1);
  EXPECT_GE(Level(registry, "tailguard_process_cpu_millicores"), 0);
}

}  // namespace
}  // namespace tailguard
