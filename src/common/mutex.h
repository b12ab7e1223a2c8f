// A mutex that both ThreadSanitizer and clang's -Wthread-safety understand.
//
// std::mutex carries no capability annotations in libstdc++, so GUARDED_BY cannot name it; and
// Debian's prebuilt abseil is not built with TSan, so absl::Mutex synchronises through atomics
// TSan never sees: every access it guards is reported as a race (and with halt_on_error the
// test process hangs on its way out). This wraps std::mutex (pthread, which TSan intercepts)
// in the annotations.
#ifndef TAILGUARD_COMMON_MUTEX_H_
#define TAILGUARD_COMMON_MUTEX_H_

#include <chrono>
#include <condition_variable>
#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tailguard {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }
  // Tells the thread-safety analysis that the caller holds it (a callback made from inside a
  // locked region the analysis cannot follow). Checks nothing at run time.
  void AssertHeld() const ABSL_ASSERT_EXCLUSIVE_LOCK() {}

 private:
  friend class CondVar;
  std::mutex mu_;
};

// Holds `mu` for its scope.
class ABSL_SCOPED_LOCKABLE MutexLock {
 public:
  explicit MutexLock(Mutex* mu) ABSL_EXCLUSIVE_LOCK_FUNCTION(mu) : mu_(mu) { mu_->Lock(); }
  ~MutexLock() ABSL_UNLOCK_FUNCTION() { mu_->Unlock(); }
  MutexLock(const MutexLock&) = delete;
  MutexLock& operator=(const MutexLock&) = delete;

 private:
  Mutex* const mu_;
};

// A condition variable over Mutex (std::condition_variable on its std::mutex, so TSan sees the
// waits as it sees pthread's). The waits take the mutex the caller holds, which -Wthread-safety
// checks; loop on the condition around them (wakeups may be spurious):
//
//   MutexLock lock(&mu_);
//   while (!stopping_ && queue_.empty()) cv_.Wait(&mu_);
class CondVar {
 public:
  // Releases `mu`, waits for a Signal() (or a spurious wakeup), and holds `mu` again.
  void Wait(Mutex* mu) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    cv_.wait(lock);
    lock.release();
  }
  // Wait() that gives up at `deadline` (steady clock): false when it did.
  bool WaitUntil(Mutex* mu, std::chrono::steady_clock::time_point deadline)
      ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu) {
    std::unique_lock<std::mutex> lock(mu->mu_, std::adopt_lock);
    const bool woken = cv_.wait_until(lock, deadline) == std::cv_status::no_timeout;
    lock.release();
    return woken;
  }
  void Signal() { cv_.notify_one(); }
  void SignalAll() { cv_.notify_all(); }

 private:
  std::condition_variable cv_;
};

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_MUTEX_H_
