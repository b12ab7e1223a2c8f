// `tailguard loadgen`: an open-loop HTTP load generator. Sends requests on a fixed or scripted
// schedule whatever the server does, measures latency from each request's intended send time,
// and prints the percentile spectrum. See docs/loadgen.md.
#include "loadgen/loadgen.h"

#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <fstream>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "common/duration.h"
#include "common/format.h"
#include "common/strings.h"
#include "loadgen/histogram_log.h"
#include "loadgen/scenario.h"
#include "signals.h"

namespace tailguard::cli {
namespace {

using loadgen::Distribution;

struct LoadgenFlags {
  std::string url;
  std::string rate;  // parsed here for a message that says how to fix it
  std::string duration = "10s";
  std::string distribution = "constant";
  int connections = 64;
  int threads = 1;
  std::string timeout = "5s";
  size_t max_queue = 10000;
  std::string method;
  std::vector<std::string> headers;
  std::string body;
  std::string scenario;
  bool json = false;
  std::string histogram_log;
  std::string interval = "1s";
  bool quiet = false;
  uint64_t seed = 1;
  // Which flags were given on the command line.
  CLI::Option* rate_opt = nullptr;
  CLI::Option* duration_opt = nullptr;
  CLI::Option* distribution_opt = nullptr;
};

int Usage(const std::string& message) {
  std::fprintf(stderr, "tailguard loadgen: %s\nRun 'tailguard loadgen --help' for usage.\n",
               message.c_str());
  return 2;
}

std::optional<double> ParseRate(std::string_view s) {
  if (s.ends_with("/s")) s.remove_suffix(2);
  double r = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), r);
  if (s.empty() || ec != std::errc() || end != s.data() + s.size() || !std::isfinite(r)) {
    return std::nullopt;
  }
  return r;
}

// Builds the options from the flags; a usage error message on failure.
std::optional<std::string> BuildOptions(const LoadgenFlags& f, loadgen::LoadgenOptions& o) {
  o.url = f.url;
  o.connections = f.connections;
  o.threads = f.threads;
  o.max_queue = f.max_queue;
  o.seed = f.seed;
  const std::optional<Duration> timeout = ParseDurationText(f.timeout);
  if (!timeout || *timeout <= Duration::zero()) {
    return Cat("--timeout \"", f.timeout, "\": expected a positive duration like 5s or 500ms");
  }
  o.timeout = *timeout;
  const std::optional<Duration> interval = ParseDurationText(f.interval);
  if (!interval || *interval < std::chrono::milliseconds(10)) {
    return Cat("--interval \"", f.interval, "\": expected a duration of at least 10ms, like 1s");
  }
  o.progress_interval = *interval;
  for (const std::string& h : f.headers) {
    const size_t colon = h.find(':');
    if (colon == std::string::npos || colon == 0) {
      return Cat("--header \"", h,
                 "\": expected NAME:VALUE, like \"Content-Type: application/json\"");
    }
    std::string name = h.substr(0, colon);
    std::string_view value = std::string_view(h).substr(colon + 1);
    while (!value.empty() && (value.front() == ' ' || value.front() == '\t'))
      value.remove_prefix(1);
    if (auto p = loadgen::HeaderProblem(name, value)) return Cat("--header \"", h, "\": ", *p);
    o.headers.emplace_back(std::move(name), std::string(value));
  }
  if (f.body.starts_with('@')) {
    absl::StatusOr<std::string> body =
        loadgen::ReadWholeFile(f.body.substr(1), loadgen::kMaxBodyBytes);
    if (!body.ok()) {
      return Cat("--body ", f.body, ": cannot read \"", f.body.substr(1),
                 "\": ", body.status().message());
    }
    o.body = *std::move(body);
  } else {
    o.body = f.body;
  }
  o.method = !f.method.empty() ? f.method : (f.body.empty() ? "GET" : "POST");
  if (auto p = loadgen::MethodProblem(o.method)) return Cat("--method: ", *p);

  if (!f.scenario.empty()) {
    for (const CLI::Option* opt : {f.rate_opt, f.duration_opt, f.distribution_opt}) {
      if (opt->count() > 0) {
        return Cat(opt->get_name(),
                   " cannot be combined with --scenario: the scenario file sets "
                   "the rates; remove one of them");
      }
    }
    return std::nullopt;  // loaded by the caller (its errors have their own form)
  }
  if (f.rate_opt->count() == 0) {
    return "--rate is required (requests per second, like --rate 1000), or give --scenario FILE";
  }
  const std::optional<double> rate = ParseRate(f.rate);
  if (!rate) return Cat("--rate \"", f.rate, "\": expected requests per second, like 1000");
  if (*rate <= 0 || *rate > loadgen::kMaxRate) {
    return Cat("--rate ", f.rate, ": must be more than 0 and at most ", loadgen::kMaxRate,
               " requests per second");
  }
  const std::optional<Duration> duration = ParseDurationText(f.duration);
  if (!duration || *duration <= Duration::zero()) {
    return Cat("--duration \"", f.duration, "\": expected a positive duration like 30s or 5m");
  }
  const Distribution dist = *loadgen::ParseDistribution(f.distribution);  // CLI11 checked the name
  o.phases = {loadgen::ConstantPhase(*duration, *rate, dist)};
  return std::nullopt;
}

std::string ProgressLine(const loadgen::ProgressUpdate& u, size_t phases) {
  char buf[320];
  std::snprintf(
      buf, sizeof buf,
      "%6.1fs %s sent %llu (%.0f/s of %.0f/s) done %llu err %llu drop %llu in flight %llu "
      "queued %llu p50 %s p99 %s",
      std::chrono::duration<double>(u.elapsed).count(),
      phases > 1 ? Cat("[", u.phase_name, "]").c_str() : "",
      static_cast<unsigned long long>(u.total.sent), u.rate, u.intended_rate,
      static_cast<unsigned long long>(u.total.completed),
      static_cast<unsigned long long>(u.total.errors()),
      static_cast<unsigned long long>(u.total.dropped),
      static_cast<unsigned long long>(u.in_flight), static_cast<unsigned long long>(u.queued),
      FormatDuration(static_cast<double>(u.p50_ns)).c_str(),
      FormatDuration(static_cast<double>(u.p99_ns)).c_str());
  return buf;
}

int RunLoadgen(const LoadgenFlags& flags) {
  loadgen::LoadgenOptions options;
  if (std::optional<std::string> problem = BuildOptions(flags, options)) return Usage(*problem);
  if (!flags.scenario.empty()) {
    absl::StatusOr<loadgen::Scenario> scenario = loadgen::LoadScenario(flags.scenario);
    if (!scenario.ok()) {
      std::fprintf(stderr, "tailguard loadgen: %s\n",
                   std::string(scenario.status().message()).c_str());
      return 2;
    }
    options.phases = std::move(scenario->phases);
  }

  std::ofstream log;
  if (!flags.histogram_log.empty()) {
    errno = 0;
    log.open(flags.histogram_log, std::ios::trunc);
    if (!log) {
      return Usage(Cat("--histogram-log \"", flags.histogram_log, "\": cannot create it: ",
                       errno != 0 ? std::strerror(errno) : "unknown error"));
    }
  }

  const bool tty = isatty(STDERR_FILENO) != 0;
  const size_t phase_count = options.phases.size();
  int64_t last_plain = 0;
  bool drew = false;
  options.progress = [&](const loadgen::ProgressUpdate& u) {
    if (log.is_open() && (u.interval > Duration::zero() || u.interval_latency->count() > 0)) {
      log << loadgen::HistogramLogLine(u.elapsed - u.interval, u.interval, *u.interval_latency);
      log.flush();
    }
    if (flags.quiet) return;
    if (tty) {
      if (u.final) {
        if (drew) std::fputs("\r\033[K", stderr);
      } else {
        std::fprintf(stderr, "\r\033[K%s", ProgressLine(u, phase_count).c_str());
        drew = true;
      }
      std::fflush(stderr);
      return;
    }
    // Not a terminal (a log): a plain line every 5 s.
    const int64_t fives = std::chrono::duration_cast<std::chrono::seconds>(u.elapsed).count() / 5;
    if (!u.final && fives > last_plain) {
      last_plain = fives;
      std::fprintf(stderr, "%s\n", ProgressLine(u, phase_count).c_str());
    }
  };

  // SIGINT and SIGTERM set a flag that the watcher thread below turns into Stop().
  InstallStopSignals();

  absl::StatusOr<std::unique_ptr<loadgen::Loadgen>> lg =
      loadgen::Loadgen::Create(std::move(options));
  if (!lg.ok()) {
    std::fprintf(stderr, "tailguard loadgen: %s\n", std::string(lg.status().message()).c_str());
    return absl::IsInvalidArgument(lg.status()) ? 2 : 1;
  }
  if (log.is_open()) log << loadgen::HistogramLogHeader(Clock::Real().WallNow());

  std::atomic<bool> finished{false};  // atomic: read by the watcher; seq_cst is plenty
  std::thread watcher([&] {
    while (!finished) {
      if (StopSignal() != 0) {
        (*lg)->Stop();
        return;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
  });
  absl::StatusOr<loadgen::Report> report = (*lg)->Run();
  finished = true;
  watcher.join();
  if (!report.ok()) {
    std::fprintf(stderr, "tailguard loadgen: %s\n", std::string(report.status().message()).c_str());
    return 1;
  }
  if (const int caught = StopSignal(); caught != 0) {
    std::fprintf(stderr, "tailguard loadgen: %s: reporting what completed\n",
                 caught == SIGINT ? "interrupted" : "terminated");
  }
  const std::string out =
      flags.json ? loadgen::FormatReportJson(*report) + "\n" : loadgen::FormatReportText(*report);
  std::fwrite(out.data(), 1, out.size(), stdout);
  std::fflush(stdout);
  if (log.is_open() && !log) {
    std::fprintf(stderr, "tailguard loadgen: writing %s failed\n", flags.histogram_log.c_str());
    return 1;
  }
  return 0;
}

}  // namespace

void AddLoadgen(CLI::App& app, Action& action) {
  auto f = std::make_shared<LoadgenFlags>();
  CLI::App* cmd = app.add_subcommand(
      "loadgen",
      "Open-loop HTTP load generator: sends requests at a fixed or scripted rate whatever the\n"
      "server does, and reports latency from each request's intended send time (coordinated\n"
      "omission corrected), send lag, errors and drops.");
  cmd->add_option("url", f->url, "Target, http://HOST:PORT/PATH")->required();
  f->rate_opt = cmd->add_option("-r,--rate", f->rate, "Requests per second (e.g. 1000)");
  f->duration_opt = cmd->add_option("-d,--duration", f->duration, "How long to send (e.g. 30s, 5m)")
                        ->capture_default_str();
  f->distribution_opt =
      cmd->add_option("--distribution", f->distribution,
                      "Spacing of requests: constant (even) or poisson (exponential gaps)")
          ->check(CLI::IsMember({"constant", "poisson"}))
          ->capture_default_str();
  cmd->add_option("-c,--connections", f->connections,
                  "Connections (at most this many requests in flight)")
      ->check(CLI::Range(1, 100000))
      ->capture_default_str();
  cmd->add_option("--threads", f->threads, "I/O threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  cmd->add_option("--timeout", f->timeout,
                  "Most a request may take from its intended send time; then it is a timeout")
      ->capture_default_str();
  cmd->add_option("--max-queue", f->max_queue,
                  "Requests that may wait for a busy connection; more are dropped and counted")
      ->capture_default_str();
  cmd->add_option("-m,--method", f->method, "HTTP method (default GET, or POST with --body)");
  cmd->add_option("-H,--header", f->headers, "Request header NAME:VALUE (repeatable)");
  cmd->add_option("--body", f->body, "Request body: text, or @FILE for a file's contents");
  cmd->add_option("-s,--scenario", f->scenario,
                  "Scenario file (YAML): phases with rate patterns and request overrides")
      ->check(CLI::ExistingFile);
  cmd->add_flag("--json", f->json, "Print the report as JSON");
  cmd->add_option("--histogram-log", f->histogram_log,
                  "Write each interval's latency histogram to FILE (docs/loadgen.md)");
  cmd->add_option("--interval", f->interval, "Progress and histogram log interval")
      ->capture_default_str();
  cmd->add_flag("-q,--quiet", f->quiet, "No progress line on stderr");
  cmd->add_option("--seed", f->seed, "Seed of the Poisson arrival times")->capture_default_str();
  cmd->footer(
      "Examples:\n"
      "  tailguard loadgen http://127.0.0.1:8080/ --rate 1000 --duration 30s\n"
      "  tailguard loadgen http://127.0.0.1:8080/v2/models/m/infer --rate 500 --distribution "
      "poisson \\\n      --body @request.json -H 'Content-Type: application/json' --json\n"
      "  tailguard loadgen http://127.0.0.1:8080/ --scenario examples/scenario.yaml\n"
      "Exit codes: 0 done (whatever the responses), 1 runtime failure (cannot connect),\n"
      "2 usage or scenario error.");
  cmd->callback([f, &action] { action = [f] { return RunLoadgen(*f); }; });
}

}  // namespace tailguard::cli
