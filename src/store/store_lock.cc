#include "store/store_lock.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <string>

#include "common/strings.h"

namespace tailguard::store {

absl::StatusOr<std::unique_ptr<StoreLock>> StoreLock::Acquire(const std::string& store_path) {
  const std::string path = store_path + ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd < 0) {
    return absl::UnavailableError(
        Cat(path, ": cannot open the store's lock file: ", std::strerror(errno)));
  }
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int err = errno;
    char buf[32] = {};
    const ssize_t n = ::pread(fd, buf, sizeof(buf) - 1, 0);
    ::close(fd);
    if (err != EWOULDBLOCK) {
      return absl::UnavailableError(Cat(path, ": cannot lock: ", std::strerror(err)));
    }
    std::string pid(buf, n > 0 ? static_cast<size_t>(n) : 0);
    while (!pid.empty() && (pid.back() == '\n' || pid.back() == ' ')) pid.pop_back();
    return absl::FailedPreconditionError(
        Cat("the store ", store_path, " is in use by another tailguard serve",
            pid.empty() ? std::string() : Cat(" (pid ", pid, ")"),
            ": two gateways on one store would deliver every notification twice; stop the other "
            "one, or give this one a store.path of its own"));
  }
  const std::string pid = Cat(::getpid(), "\n");
  if (::ftruncate(fd, 0) == 0) {
    (void)!::pwrite(fd, pid.data(), pid.size(), 0);
  }
  return std::unique_ptr<StoreLock>(new StoreLock(fd));
}

StoreLock::~StoreLock() { ::close(fd_); }

}  // namespace tailguard::store
