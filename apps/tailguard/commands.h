// Sub-commands of the tailguard binary: each registers itself on the CLI11 app.
#ifndef TAILGUARD_APPS_COMMANDS_H_
#define TAILGUARD_APPS_COMMANDS_H_

#include <functional>

#include "CLI/CLI.hpp"
#include "tailguard/alert.h"

namespace tailguard::cli {

// A sub-command's action returns the process exit code: 0 ok, 1 runtime failure, 2 usage or
// configuration error.
using Action = std::function<int()>;

// Adds `selftest-record` to `app`; `action` is set to run it when it is chosen.
void AddSelftestRecord(CLI::App& app, Action& action);
// `replay`: a recorded series or request log through the detectors and rules (replay.cc).
void AddReplay(CLI::App& app, Action& action);
// `backtest`: score detectors and rules against labelled incident windows (backtest.cc).
void AddBacktest(CLI::App& app, Action& action);
// `serve`: the gateway (serve.cc).
void AddServe(CLI::App& app, Action& action);
// `demo`: the demo models served in-process under a scripted scenario (demo.cc); `make run`.
void AddDemo(CLI::App& app, Action& action);
// `alerts`: the event store's alerts, silences and delivery outbox (alerts.cc).
void AddAlerts(CLI::App& app, Action& action);
// `loadgen`: the open-loop HTTP load generator (loadgen.cc).
void AddLoadgen(CLI::App& app, Action& action);
// `import`: past per-minute series from a CSV file into the store's history (import.cc).
void AddImport(CLI::App& app, Action& action);
// `diagnose`: offline root-cause ranking and slice attribution (diagnose.cc).
void AddDiagnose(CLI::App& app, Action& action);
// `report`: the incident report of one alert, HTML and Markdown (report.cc).
void AddReport(CLI::App& app, Action& action);

}  // namespace tailguard::cli

#endif  // TAILGUARD_APPS_COMMANDS_H_
