// `tailguard backtest`: not yet implemented (placeholder while it is built).
#include "commands.h"

namespace tailguard::cli {

void AddBacktest(CLI::App& app, Action& action) {
  (void)app;
  (void)action;
}

}  // namespace tailguard::cli
