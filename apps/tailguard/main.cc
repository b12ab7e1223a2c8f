// The tailguard command line: parses the sub-command and runs it.
// Exit codes: 0 ok, 1 runtime failure, 2 usage or configuration error.
#include <cstdio>
#include <iostream>

#include "CLI/CLI.hpp"
#include "commands.h"
#include "tailguard/version.h"

int main(int argc, char** argv) {
  CLI::App app{
      "tailguard guards the latency of AI inference services: it records every request, turns\n"
      "the stream into percentiles and forecasts, catches spikes and drifts, and acts on them.",
      "tailguard"};
  app.set_version_flag("--version", "tailguard " TAILGUARD_VERSION_STRING);
  app.require_subcommand(1);
  app.footer("Run 'tailguard <command> --help' for a command's options.");

  tailguard::cli::Action action;
  tailguard::cli::AddSelftestRecord(app, action);
  tailguard::cli::AddReplay(app, action);
  tailguard::cli::AddBacktest(app, action);
  tailguard::cli::AddServe(app, action);
  tailguard::cli::AddAlerts(app, action);
  tailguard::cli::AddImport(app, action);
  tailguard::cli::AddDiagnose(app, action);
  tailguard::cli::AddReport(app, action);
  tailguard::cli::AddLoadgen(app, action);
  tailguard::cli::AddDemo(app, action);

  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForAllHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tailguard: " << e.what() << "\nRun 'tailguard --help' for usage.\n";
    return 2;
  }
  return action ? action() : 2;
}
