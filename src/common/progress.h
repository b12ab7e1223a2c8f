// A progress bar for long command-line work: a redrawn bar on a terminal, a line every 10 %
// otherwise (CI logs, pipes).
#ifndef TAILGUARD_COMMON_PROGRESS_H_
#define TAILGUARD_COMMON_PROGRESS_H_

#include <atomic>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <string>

#include "common/mutex.h"

namespace tailguard {

// Thread-safe: workers call Advance() from any thread.
class Progress {
 public:
  // Reports on `out` (stderr by default) the progress of `total` units of `what`.
  Progress(std::string what, int64_t total, std::FILE* out = stderr);
  ~Progress();  // finishes the line

  // `n` more units are done; `item` (optional) names the latest one.
  void Advance(int64_t n = 1, const std::string& item = "");

 private:
  void Draw(int64_t done, const std::string& item) ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const std::string what_;
  const int64_t total_;
  std::FILE* const out_;
  const bool tty_;
  const std::chrono::steady_clock::time_point start_;
  Mutex mu_;
  int64_t done_ ABSL_GUARDED_BY(mu_) = 0;
  int last_decile_ ABSL_GUARDED_BY(mu_) = -1;
  std::chrono::steady_clock::time_point last_draw_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_PROGRESS_H_
