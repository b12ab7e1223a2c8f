// Progress bar.
#include "common/progress.h"

#include <unistd.h>

#include <algorithm>

namespace tailguard {

Progress::Progress(std::string what, int64_t total, std::FILE* out)
    : what_(std::move(what)),
      total_(std::max<int64_t>(total, 1)),
      out_(out),
      tty_(isatty(fileno(out)) != 0),
      start_(std::chrono::steady_clock::now()) {}

Progress::~Progress() {
  MutexLock lock(&mu_);
  if (tty_) {
    Draw(done_, "");
    std::fputc('\n', out_);
  }
  std::fflush(out_);
}

void Progress::Advance(int64_t n, const std::string& item) {
  MutexLock lock(&mu_);
  done_ += n;
  const auto now = std::chrono::steady_clock::now();
  if (tty_) {
    // Redraw at most 20 times a second.
    if (now - last_draw_ > std::chrono::milliseconds(50) || done_ >= total_) {
      last_draw_ = now;
      Draw(done_, item);
    }
    return;
  }
  // Not a terminal (a log): a line per 10 %, once the work has taken a second.
  const int decile = static_cast<int>(10 * std::min(done_, total_) / total_);
  const double secs = std::chrono::duration<double>(now - start_).count();
  if (decile != last_decile_ && secs >= 1.0) {
    last_decile_ = decile;
    std::fprintf(out_, "%s: %lld/%lld (%d%%) %.1fs\n", what_.c_str(), static_cast<long long>(done_),
                 static_cast<long long>(total_), decile * 10, secs);
  }
}

void Progress::Draw(int64_t done, const std::string& item) {
  constexpr int kWidth = 30;
  const double frac = std::min(1.0, static_cast<double>(done) / static_cast<double>(total_));
  const int fill = static_cast<int>(frac * kWidth);
  std::string bar(static_cast<size_t>(fill), '#');
  bar.append(static_cast<size_t>(kWidth - fill), '.');
  const double secs =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
  const double eta = frac > 0 ? secs / frac - secs : 0;
  std::fprintf(out_, "\r\033[K%s [%s] %lld/%lld %3.0f%% %.1fs, eta %.0fs %s", what_.c_str(),
               bar.c_str(), static_cast<long long>(done), static_cast<long long>(total_),
               frac * 100, secs, eta, item.substr(0, 40).c_str());
  std::fflush(out_);
}

}  // namespace tailguard
