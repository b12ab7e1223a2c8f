// SIGINT and SIGTERM for the long-running sub-commands (serve, demo, loadgen). Handlers record
// the signal; the command polls for it. Not a blocked mask and sigwait(): libraries start threads
// before main() (OpenBLAS's pool, loaded with LibTorch), those threads do not have the mask, and
// a signal delivered to one of them would kill the process instead of draining it.
#ifndef TAILGUARD_APPS_SIGNALS_H_
#define TAILGUARD_APPS_SIGNALS_H_

#include <chrono>
#include <functional>

namespace tailguard::cli {

// Installs the handlers and ignores SIGPIPE. A SIGINT that was ignored when the process started
// (a background job of a non-interactive shell) stays ignored.
void InstallStopSignals();

// 0 until SIGINT or SIGTERM arrived; then the signal's number.
int StopSignal();

// Waits until a stop signal arrives or `done` (when given) returns true, checking every `poll`.
// Returns the signal, or 0 when `done` ended the wait.
int WaitForStopSignal(const std::function<bool()>& done = nullptr,
                      std::chrono::milliseconds poll = std::chrono::milliseconds(50));

}  // namespace tailguard::cli

#endif  // TAILGUARD_APPS_SIGNALS_H_
