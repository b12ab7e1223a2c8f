// `tailguard serve`: the gateway in front of a model server.

#include <csignal>
#include <cstdio>
#include <string>

#include "commands.h"
#include "common/strings.h"
#include "server/dashboard.h"
#include "server/gateway.h"
#include "server/gateway_config.h"
#include "signals.h"
#include "tailguard/alert.h"
#include "tailguard/analyzer.h"

namespace tailguard::cli {
namespace {

struct ServeFlags {
  std::string config;
  std::string listen;  // overrides the file's listen:
  int threads = -1;    // overrides the file's threads:
  std::string rules;   // overrides the file's rules_file:
};

int RunServe(const ServeFlags& flags) {
  absl::StatusOr<server::GatewayConfig> config = server::LoadGatewayConfig(flags.config);
  if (!config.ok()) {
    std::fprintf(stderr, "tailguard serve: %s\n", std::string(config.status().message()).c_str());
    return 2;
  }
  if (!flags.listen.empty()) {
    absl::StatusOr<server::HostPort> listen = server::ParseHostPort(flags.listen);
    if (!listen.ok()) {
      std::fprintf(stderr, "tailguard serve: --listen: %s\n",
                   std::string(listen.status().message()).c_str());
      return 2;
    }
    config->listen = *listen;
  }
  if (flags.threads >= 0) config->threads = flags.threads;
  if (!flags.rules.empty()) config->rules_file = flags.rules;

  AlertConfig rules = DefaultAlertRules();
  if (!config->rules_file.empty()) {
    absl::StatusOr<AlertConfig> loaded = LoadAlertConfig(config->rules_file);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tailguard serve: %s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    rules = *std::move(loaded);
  }

  InstallStopSignals();

  server::GatewayOptions options;
  options.config = *std::move(config);
  options.rules = std::move(rules);
  options.dashboard = server::DashboardAssets();
  options.host_signals = true;
  absl::StatusOr<std::unique_ptr<server::Gateway>> gateway =
      server::Gateway::Create(std::move(options));
  if (!gateway.ok()) {
    std::fprintf(stderr, "tailguard serve: %s\n", std::string(gateway.status().message()).c_str());
    return absl::IsUnavailable(gateway.status()) ? 1 : 2;
  }
  (*gateway)->Start();
  const int signal = WaitForStopSignal();
  std::fprintf(stderr, "tailguard: %s: draining in-flight requests\n",
               signal == SIGINT ? "interrupted" : "terminated");
  (*gateway)->Shutdown();
  return 0;
}

}  // namespace

void AddServe(CLI::App& app, Action& action) {
  auto flags = std::make_shared<ServeFlags>();
  CLI::App* cmd = app.add_subcommand(
      "serve",
      "Run the gateway: a reverse proxy in front of model servers that measures every request,\n"
      "serves /metrics and the JSON API, and runs the live analysis and alert rules.");
  cmd->add_option("-c,--config", flags->config, "Gateway configuration (YAML)")
      ->required()
      ->check(CLI::ExistingFile);
  cmd->add_option("--listen", flags->listen, "Listen address host:port (overrides listen:)");
  cmd->add_option("--threads", flags->threads,
                  "Worker threads, 0 for one per core (overrides threads:)")
      ->check(CLI::Range(0, 1024));
  cmd->add_option("--rules", flags->rules, "Alert rules (YAML; overrides rules_file:)")
      ->check(CLI::ExistingFile);
  cmd->footer(
      "Example:\n  tailguard serve --config examples/gateway.yaml\n"
      "Then: curl localhost:8080/metrics, localhost:8080/api/v1/series.\n"
      "SIGINT or SIGTERM drain in-flight requests (up to timeouts.shutdown) and exit 0.");
  cmd->callback([flags, &action] { action = [flags] { return RunServe(*flags); }; });
}

}  // namespace tailguard::cli
