#include "signals.h"

#include <atomic>
#include <csignal>
#include <thread>

namespace tailguard::cli {
namespace {

// Lock-free, so the handler may store to it; relaxed is enough: the pollers only need to see it
// eventually.
std::atomic<int> g_stop_signal{0};
static_assert(std::atomic<int>::is_always_lock_free);

extern "C" void OnStopSignal(int signal) { g_stop_signal.store(signal, std::memory_order_relaxed); }

}  // namespace

void InstallStopSignals() {
  struct sigaction action = {};
  action.sa_handler = OnStopSignal;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_RESTART;
  sigaction(SIGTERM, &action, nullptr);
  struct sigaction old_int = {};
  sigaction(SIGINT, nullptr, &old_int);
  if (old_int.sa_handler != SIG_IGN) sigaction(SIGINT, &action, nullptr);
  std::signal(SIGPIPE, SIG_IGN);
}

int StopSignal() { return g_stop_signal.load(std::memory_order_relaxed); }

int WaitForStopSignal(const std::function<bool()>& done, std::chrono::milliseconds poll) {
  for (;;) {
    if (const int s = StopSignal(); s != 0) return s;
    if (done && done()) return 0;
    std::this_thread::sleep_for(poll);
  }
}

}  // namespace tailguard::cli
