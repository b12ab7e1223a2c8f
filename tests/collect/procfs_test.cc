// procfs: process_* metrics from a fake /proc tree (exact values, missing and malformed files),
// the text and OpenMetrics exposition, and a sanity check against the real /proc/self.
#include "collect/procfs.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>
#include <thread>

namespace tailguard {
namespace {

namespace fs = std::filesystem;
using ::testing::HasSubstr;
using ::testing::Not;

// A stat line with a command name that holds spaces and parentheses. utime 250, stime 150,
// num_threads 7, starttime 12345 ticks, vsize 123456789 bytes, rss 1000 pages.
constexpr char kStat[] =
    "4242 (my (weird) proc) S 1 4242 4242 0 -1 4194560 2000 0 0 0 250 150 0 0 20 0 7 0 12345 "
    "123456789 1000 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 17 3 0 0 0 0 0\n";

constexpr char kLimits[] =
    "Limit                     Soft Limit           Hard Limit           Units     \n"
    "Max cpu time              unlimited            unlimited            seconds   \n"
    "Max open files            1024                 524288               files     \n"
    "Max locked memory         8388608              8388608              bytes     \n";

constexpr char kSystemStat[] =
    "cpu  1 2 3 4 5 6 7 0 0 0\n"
    "cpu0 1 2 3 4 5 6 7 0 0 0\n"
    "intr 12345 0 0\n"
    "ctxt 999\n"
    "btime 1700000000\n"
    "processes 100\n";

class FakeProcTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = fs::temp_directory_path() /
            ("procfs_test_" + std::to_string(::getpid()) + "_" +
             ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(root_);
    fs::create_directories(root_ / "4242" / "fd");
    Write("4242/stat", kStat);
    Write("4242/limits", kLimits);
    Write("stat", kSystemStat);
    for (int fd = 0; fd < 5; ++fd) Write("4242/fd/" + std::to_string(fd), "");
  }
  void TearDown() override { fs::remove_all(root_); }

  void Write(const std::string& path, std::string_view text) {
    std::ofstream(root_ / path) << text;
  }

  std::string root() const { return root_.string(); }

  fs::path root_;
};

const double kTicks = static_cast<double>(sysconf(_SC_CLK_TCK));
const double kPage = static_cast<double>(sysconf(_SC_PAGESIZE));

TEST_F(FakeProcTest, ReadsEveryField) {
  absl::StatusOr<ProcessStats> s = ReadProcessStats(root(), "4242");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_DOUBLE_EQ(s->cpu_seconds, 400 / kTicks);
  EXPECT_EQ(s->resident_bytes, 1000 * kPage);
  EXPECT_EQ(s->virtual_bytes, 123456789);
  EXPECT_EQ(s->open_fds, 5);
  EXPECT_EQ(s->max_fds, 1024);
  EXPECT_DOUBLE_EQ(s->start_time_seconds, 1700000000 + 12345 / kTicks);
  EXPECT_EQ(s->threads, 7);
}

TEST_F(FakeProcTest, UnlimitedOpenFilesIsTheGoClientsMaximum) {
  Write("4242/limits",
        "Limit                     Soft Limit           Hard Limit           Units     \n"
        "Max open files            unlimited            unlimited            files     \n");
  absl::StatusOr<ProcessStats> s = ReadProcessStats(root(), "4242");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_EQ(s->max_fds, 18446744073709551615.0);
}

TEST_F(FakeProcTest, OtherSourcesMissingLeaveTheirFieldsUnknown) {
  fs::remove(root_ / "4242" / "limits");
  fs::remove_all(root_ / "4242" / "fd");
  Write("stat", "cpu 1 2 3\nctxt 5\n");  // no btime
  absl::StatusOr<ProcessStats> s = ReadProcessStats(root(), "4242");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(std::isnan(s->max_fds));
  EXPECT_TRUE(std::isnan(s->open_fds));
  EXPECT_TRUE(std::isnan(s->start_time_seconds));
  EXPECT_EQ(s->threads, 7);

  std::string out;
  AppendProcessMetrics(*s, out);
  EXPECT_THAT(out, Not(HasSubstr("process_max_fds")));
  EXPECT_THAT(out, Not(HasSubstr("process_open_fds")));
  EXPECT_THAT(out, Not(HasSubstr("process_start_time_seconds")));
  EXPECT_THAT(out, HasSubstr("\nprocess_threads 7\n"));

  Write("4242/limits", "Max open files  lots  lots  files\n");
  s = ReadProcessStats(root(), "4242");
  ASSERT_TRUE(s.ok()) << s.status();
  EXPECT_TRUE(std::isnan(s->max_fds));
}

TEST_F(FakeProcTest, MissingProcessIsNotFound) {
  absl::StatusOr<ProcessStats> s = ReadProcessStats(root(), "999999");
  EXPECT_EQ(s.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(s.status().message(), HasSubstr("999999/stat"));
}

TEST_F(FakeProcTest, MalformedStatIsAnError) {
  for (const char* stat : {"", "4242 no parenthesis 1 2 3\n", "4242 (x) S 1 2 3\n",
                           "4242 (x) S 1 4242 4242 0 -1 4194560 2000 0 0 0 abc 150 0 0 20 0 7 0 "
                           "12345 123456789 1000\n"}) {
    Write("4242/stat", stat);
    absl::StatusOr<ProcessStats> s = ReadProcessStats(root(), "4242");
    EXPECT_EQ(s.status().code(), absl::StatusCode::kInternal) << stat;
    EXPECT_THAT(s.status().message(), HasSubstr("4242/stat")) << stat;
  }
}

TEST_F(FakeProcTest, RejectsPidsThatAreNotPids) {
  for (const char* pid : {"", "..", "../4242", "4242/..", "-1", "self/../4242", "12345678901"}) {
    EXPECT_EQ(ReadProcessStats(root(), pid).status().code(), absl::StatusCode::kInvalidArgument)
        << pid;
  }
}

ProcessStats Example() {
  ProcessStats s;
  s.cpu_seconds = 4;
  s.resident_bytes = 4096000;
  s.virtual_bytes = 123456789;
  s.open_fds = 5;
  s.max_fds = 1024;
  s.start_time_seconds = 1700000123.45;
  s.threads = 7;
  return s;
}

TEST(ProcessMetricsTest, WritesTheTextFormat) {
  std::string out = "# existing\n";
  AppendProcessMetrics(Example(), out);
  EXPECT_EQ(out,
            "# existing\n"
            "# HELP process_cpu_seconds_total Total user and system CPU time spent in seconds.\n"
            "# TYPE process_cpu_seconds_total counter\n"
            "process_cpu_seconds_total 4\n"
            "# HELP process_open_fds Number of open file descriptors.\n"
            "# TYPE process_open_fds gauge\n"
            "process_open_fds 5\n"
            "# HELP process_max_fds Maximum number of open file descriptors.\n"
            "# TYPE process_max_fds gauge\n"
            "process_max_fds 1024\n"
            "# HELP process_virtual_memory_bytes Virtual memory size in bytes.\n"
            "# TYPE process_virtual_memory_bytes gauge\n"
            "process_virtual_memory_bytes 123456789\n"
            "# HELP process_resident_memory_bytes Resident memory size in bytes.\n"
            "# TYPE process_resident_memory_bytes gauge\n"
            "process_resident_memory_bytes 4096000\n"
            "# HELP process_start_time_seconds Start time of the process since unix epoch in "
            "seconds.\n"
            "# TYPE process_start_time_seconds gauge\n"
            "process_start_time_seconds 1700000123.45\n"
            "# HELP process_threads Number of OS threads in the process.\n"
            "# TYPE process_threads gauge\n"
            "process_threads 7\n");
}

TEST(ProcessMetricsTest, OpenMetricsNamesTheCounterFamilyWithoutTotal) {
  std::string out;
  AppendProcessMetrics(Example(), out, /*openmetrics=*/true);
  EXPECT_THAT(out, HasSubstr("# HELP process_cpu_seconds Total user and system CPU time"));
  EXPECT_THAT(out, HasSubstr("# TYPE process_cpu_seconds counter\nprocess_cpu_seconds_total 4\n"));
  EXPECT_THAT(out, Not(HasSubstr("TYPE process_cpu_seconds_total")));
  EXPECT_THAT(out, HasSubstr("# TYPE process_open_fds gauge\nprocess_open_fds 5\n"));
}

TEST(ProcessMetricsTest, WritesNumbersThatReadBack) {
  ProcessStats s;
  s.cpu_seconds = 0.1 + 0.2;
  s.max_fds = 18446744073709551615.0;
  s.threads = std::numeric_limits<double>::infinity();
  std::string out;
  AppendProcessMetrics(s, out);
  EXPECT_THAT(out, HasSubstr("\nprocess_cpu_seconds_total 0.30000000000000004\n"));
  EXPECT_THAT(out, HasSubstr("\nprocess_threads +Inf\n"));
  const size_t at = out.find("\nprocess_max_fds ");
  ASSERT_NE(at, std::string::npos);
  EXPECT_EQ(std::stod(out.substr(at + 17)), 18446744073709551615.0);
  // Only the known fields are written.
  EXPECT_THAT(out, Not(HasSubstr("resident")));
  std::string empty;
  AppendProcessMetrics(ProcessStats{}, empty);
  EXPECT_EQ(empty, "");
}

// The real /proc of this test process.
TEST(RealProcTest, SelfLooksSane) {
  absl::StatusOr<ProcessStats> s = ReadProcessStats();
  ASSERT_TRUE(s.ok()) << s.status();
  const double now =
      std::chrono::duration<double>(std::chrono::system_clock::now().time_since_epoch()).count();
  EXPECT_GE(s->cpu_seconds, 0);
  EXPECT_GT(s->resident_bytes, 0);
  EXPECT_GE(s->virtual_bytes, s->resident_bytes);
  EXPECT_GE(s->open_fds, 1);
  EXPECT_GE(s->max_fds, s->open_fds);
  EXPECT_GE(s->threads, 1);
  // Started after 2020 and not in the future (boot time is whole seconds; allow a tick).
  EXPECT_GT(s->start_time_seconds, 1.58e9);
  EXPECT_LE(s->start_time_seconds, now + 1.5);
}

TEST(RealProcTest, CountsOpenedFilesAndStartedThreads) {
  // ThreadSanitizer starts a helper thread of its own with the process's first thread: start
  // and join one first, so the count below sees only the test's threads.
  std::thread([] {}).join();
  absl::StatusOr<ProcessStats> before = ReadProcessStats();
  ASSERT_TRUE(before.ok()) << before.status();
  int fds[3];
  for (int& fd : fds) fd = ::open("/dev/null", O_RDONLY | O_CLOEXEC);
  std::mutex mu;
  std::condition_variable cv;
  bool release = false;
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      std::unique_lock lock(mu);
      cv.wait(lock, [&] { return release; });
    });
  }
  absl::StatusOr<ProcessStats> after = ReadProcessStats();
  {
    std::lock_guard lock(mu);
    release = true;
  }
  cv.notify_all();
  for (std::thread& t : threads) t.join();
  for (int fd : fds) ::close(fd);
  ASSERT_TRUE(after.ok()) << after.status();
  EXPECT_EQ(after->open_fds - before->open_fds, 3);
  EXPECT_EQ(after->threads - before->threads, 3);
  EXPECT_EQ(after->start_time_seconds, before->start_time_seconds);
  EXPECT_GE(after->cpu_seconds, before->cpu_seconds);
}

}  // namespace
}  // namespace tailguard
