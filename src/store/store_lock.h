// One gateway per store file: an exclusive lock that `tailguard serve` holds while it runs.
// The CLI (`alerts`, `import`) does not take it: it may work on the store of a running gateway,
// as SQLite's own locking allows; two gateways writing one outbox and one engine state would
// deliver twice and overwrite each other's state.
#ifndef TAILGUARD_STORE_STORE_LOCK_H_
#define TAILGUARD_STORE_STORE_LOCK_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"

namespace tailguard::store {

class StoreLock {
 public:
  // Takes the lock of the store at `store_path`: flock(2) on "<store_path>.lock" (made if
  // missing; the store file itself is left to SQLite, whose POSIX locks a second descriptor
  // would drop). The lock file holds the owner's pid, for the message. FailedPrecondition,
  // naming the other process, when another holder has it; Unavailable when the lock file
  // cannot be made. Released when the StoreLock is destroyed or the process ends, however.
  static absl::StatusOr<std::unique_ptr<StoreLock>> Acquire(const std::string& store_path);

  ~StoreLock();
  StoreLock(const StoreLock&) = delete;
  StoreLock& operator=(const StoreLock&) = delete;

 private:
  explicit StoreLock(int fd) : fd_(fd) {}
  int fd_;
};

}  // namespace tailguard::store

#endif  // TAILGUARD_STORE_STORE_LOCK_H_
