// One gateway per store (regression, issue 16: two gateways could open the same store).
#include "store/store_lock.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <csignal>
#include <string>

namespace tailguard::store {
namespace {

using ::testing::HasSubstr;

std::string StorePath(const char* name) {
  return ::testing::TempDir() + "/tg_lock_" + std::to_string(::getpid()) + "_" + name + ".db";
}

TEST(StoreLockTest, ASecondHolderIsRefusedWithTheFirstOnesPid) {
  const std::string path = StorePath("second");
  absl::StatusOr<std::unique_ptr<StoreLock>> first = StoreLock::Acquire(path);
  ASSERT_TRUE(first.ok()) << first.status();
  // flock(2) locks belong to the open file: a second open, even in this process, is refused.
  absl::StatusOr<std::unique_ptr<StoreLock>> second = StoreLock::Acquire(path);
  ASSERT_FALSE(second.ok());
  EXPECT_EQ(second.status().code(), absl::StatusCode::kFailedPrecondition);
  EXPECT_THAT(second.status().message(), HasSubstr("is in use by another tailguard serve (pid " +
                                                   std::to_string(::getpid()) + ")"));
  EXPECT_THAT(second.status().message(), HasSubstr("give this one a store.path of its own"));
  // Released with its holder.
  first->reset();
  EXPECT_TRUE(StoreLock::Acquire(path).ok());
}

TEST(StoreLockTest, AnotherProcessIsRefusedAndAnEndedOneLeavesNoLock) {
  const std::string path = StorePath("process");
  int ready[2];
  ASSERT_EQ(::pipe(ready), 0);
  const pid_t child = ::fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    // Holds the lock, says so, and waits to be killed: the kernel releases it.
    absl::StatusOr<std::unique_ptr<StoreLock>> held = StoreLock::Acquire(path);
    const char c = held.ok() ? 'y' : 'n';
    (void)!::write(ready[1], &c, 1);
    ::pause();
    ::_exit(0);
  }
  ::close(ready[1]);
  char c = 0;
  ASSERT_EQ(::read(ready[0], &c, 1), 1);
  ::close(ready[0]);
  ASSERT_EQ(c, 'y');
  absl::StatusOr<std::unique_ptr<StoreLock>> refused = StoreLock::Acquire(path);
  ASSERT_FALSE(refused.ok());
  EXPECT_THAT(refused.status().message(), HasSubstr("(pid " + std::to_string(child) + ")"));
  ::kill(child, SIGKILL);
  int status = 0;
  ASSERT_EQ(::waitpid(child, &status, 0), child);
  EXPECT_TRUE(StoreLock::Acquire(path).ok());
}

TEST(StoreLockTest, ALockFileThatCannotBeMadeIsUnavailable) {
  absl::StatusOr<std::unique_ptr<StoreLock>> lock = StoreLock::Acquire("/nonexistent/dir/x.db");
  ASSERT_FALSE(lock.ok());
  EXPECT_EQ(lock.status().code(), absl::StatusCode::kUnavailable);
  EXPECT_THAT(lock.status().message(), HasSubstr("/nonexistent/dir/x.db.lock"));
}

}  // namespace
}  // namespace tailguard::store
