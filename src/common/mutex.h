// A mutex that both ThreadSanitizer and clang's -Wthread-safety understand.
//
// std::mutex carries no capability annotations in libstdc++, so GUARDED_BY cannot name it; and
// Debian's prebuilt abseil is not built with TSan, so absl::Mutex synchronises through atomics
// TSan never sees: every access it guards is reported as a race (and with halt_on_error the
// test process hangs on its way out). This wraps std::mutex (pthread, which TSan intercepts)
// in the annotations.
#ifndef TAILGUARD_COMMON_MUTEX_H_
#define TAILGUARD_COMMON_MUTEX_H_

#include <mutex>

#include "absl/base/thread_annotations.h"

namespace tailguard {

class ABSL_LOCKABLE Mutex {
 public:
  void Lock() ABSL_EXCLUSIVE_LOCK_FUNCTION() { mu_.lock(); }
  void Unlock() ABSL_UNLOCK_FUNCTION() { mu_.unlock(); }

 private:
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

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_MUTEX_H_
