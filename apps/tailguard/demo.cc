// `tailguard demo` (what `make run` runs): the gateway serving the demo's TorchScript models
// in-process, a feature store (a private redis-server when one is installed, in-process
// otherwise), and two open-loop load generators playing a scripted scenario: steady traffic,
// then the field report's incident (the upstream feature service starts sending much wider
// inputs to the text classifier), then a feature-store slow-down under the risk model. It prints
// live P50/P99 per stage, the alert timeline as it happens, and a summary of what was detected,
// when, and by which rule.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <future>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "commands.h"
#include "common/duration.h"
#include "common/format.h"
#include "common/strings.h"
#include "loadgen/loadgen.h"
#include "model/backend.h"
#include "server/dashboard.h"
#include "server/gateway.h"
#include "server/gateway_config.h"
#include "server/protocol.h"
#include "signals.h"
#include "store/feature_store.h"
#include "store/redis.h"
#include "tailguard/analyzer.h"
#include "yaml-cpp/yaml.h"

namespace tailguard::cli {
namespace {

using namespace std::chrono_literals;
using Json = nlohmann::json;

constexpr size_t kUsers = 1000;
constexpr size_t kStoredFeatures = 48;
constexpr size_t kRealtimeFeatures = 16;

// One step of the scenario. Rates and the text length carry over from the previous phase when a
// phase leaves them out; the feature delay does not (it is the incident).
struct DemoPhase {
  std::string name;
  Duration duration{};
  double risk_rate = 0;  // requests per second to the risk model
  double text_rate = 0;  // requests per second to the text classifier
  int text_length = 0;   // tokens per text request
  Duration feature_delay{0};
  // What goes wrong in this phase, for the summary; "" when nothing does. `affects` is the model
  // whose alert counts as its detection.
  std::string incident;
  std::string affects;
};

std::vector<DemoPhase> DefaultScenario() {
  return {
      {"steady", 55s, 100, 30, 32, 0s, "", ""},
      {"wide_inputs", 30s, 100, 30, 512, 0s,
       "the feature service silently sends much wider inputs (32 -> 512 tokens)", "text"},
      {"recovered", 10s, 100, 30, 32, 0s, "", ""},
      {"feature_store_slowdown", 25s, 100, 30, 32, 15ms,
       "the feature store slows down (+15 ms a lookup)", "risk"},
  };
}

// Reads a scenario file (docs/demo.md). Errors name the file, the line and the field.
absl::StatusOr<std::vector<DemoPhase>> LoadScenario(const std::string& path) {
  YAML::Node root;
  try {
    root = YAML::LoadFile(path);
  } catch (const YAML::Exception& e) {
    return absl::InvalidArgumentError(Cat(path, ":", e.mark.line + 1, ": ", e.msg));
  }
  auto fail = [&path](const YAML::Node& n, std::string_view field, std::string_view what) {
    return absl::InvalidArgumentError(Cat(path, ":", n.Mark().line + 1, ": ", field, ": ", what));
  };
  if (!root.IsMap() || !root["phases"] || !root["phases"].IsSequence() ||
      root["phases"].size() == 0) {
    return absl::InvalidArgumentError(
        Cat(path,
            ": expected phases: [{name: steady, duration: 60s}, ...] (see "
            "examples/demo-scenario.yaml)"));
  }
  for (const auto& kv : root) {
    if (!kv.first.IsScalar() || kv.first.Scalar() != "phases") {
      return fail(kv.first, kv.first.IsScalar() ? kv.first.Scalar() : "(key)",
                  "unknown field (expected phases)");
    }
  }
  std::vector<DemoPhase> phases;
  DemoPhase previous{"", 0s, 100, 30, 32, 0s, "", ""};
  for (size_t i = 0; i < root["phases"].size(); ++i) {
    const YAML::Node p = root["phases"][i];
    const std::string at = Cat("phases[", i, "]");
    if (!p.IsMap()) return fail(p, at, "expected a map");
    DemoPhase d = previous;
    d.name = Cat("phase ", i + 1);
    d.feature_delay = 0s;
    d.incident.clear();
    d.affects.clear();
    bool has_duration = false;
    for (const auto& kv : p) {
      if (!kv.first.IsScalar()) return fail(kv.first, at, "field names must be plain words");
      const std::string key = kv.first.Scalar();
      const YAML::Node& v = kv.second;
      const std::string field = Cat(at, '.', key);
      try {
        if (key == "name") {
          d.name = v.as<std::string>();
        } else if (key == "duration" || key == "feature_delay") {
          const std::optional<Duration> dur = ParseDurationText(v.as<std::string>());
          if (!dur || *dur < 0s) return fail(v, field, "expected a duration like 30s or 20ms");
          (key == "duration" ? d.duration : d.feature_delay) = *dur;
          has_duration |= key == "duration";
        } else if (key == "risk_rate" || key == "text_rate") {
          const double r = v.as<double>();
          if (!(r >= 0 && r <= 100000)) return fail(v, field, "expected 0 to 100000 requests/s");
          (key == "risk_rate" ? d.risk_rate : d.text_rate) = r;
        } else if (key == "text_length") {
          d.text_length = v.as<int>();
          if (d.text_length < 1 || d.text_length > 4096) {
            return fail(v, field, "expected 1 to 4096 tokens");
          }
        } else if (key == "incident") {
          d.incident = v.as<std::string>();
        } else if (key == "affects") {
          d.affects = v.as<std::string>();
          if (d.affects != "risk" && d.affects != "text") {
            return fail(v, field, "expected risk or text (the model whose alert detects it)");
          }
        } else {
          return fail(kv.first, field,
                      "unknown field (expected name, duration, risk_rate, text_rate, "
                      "text_length, feature_delay, incident, affects)");
        }
      } catch (const YAML::Exception&) {
        return fail(v, field, "has the wrong type");
      }
    }
    if (!has_duration || d.duration <= 0s) return fail(p, at, "needs a positive duration");
    if (!d.incident.empty() && d.affects.empty()) {
      d.affects = d.feature_delay > 0s ? "risk" : "text";
    }
    phases.push_back(d);
    previous = d;
  }
  return phases;
}

struct DemoFlags {
  std::string listen = "127.0.0.1:8080";
  bool listen_given = false;
  std::string duration;  // scales the scenario to this total
  std::string scenario;
  std::string models = TAILGUARD_DEMO_MODELS_DIR;
  std::string feature_store = "auto";  // auto, redis, memory
  std::string store;                   // keep the event store here; "" for a file removed at exit
  bool json = false;
  bool quiet = false;
};

// Milliseconds of `seconds`, to three significant digits or so.
std::string Ms(double seconds) {
  if (!(seconds >= 0)) return "-";
  const double ms = seconds * 1e3;
  char buf[32];
  std::snprintf(buf, sizeof(buf), ms >= 10 ? "%.0f" : ms >= 1 ? "%.1f" : "%.2f", ms);
  return buf;
}

// The demo's rules: the total P99 of each model against its baseline (+50 % warning, +100 %
// critical, +200 % emergency; sub-millisecond services jitter by tens of percent), confirmed after
// 10 s, and the anomaly score of the same series. Shorter debounce than `serve`'s defaults, so a
// two-minute scenario shows the whole life of an alert.
AlertConfig DemoRules() {
  AlertConfig c = DefaultAlertRules();
  for (AlertRule& r : c.rules) {
    r.debounce.alert_after = 10s;
    r.debounce.resolve_after = 15s;
    r.debounce.deescalate_after = 15s;
    if (r.name != "p99_vs_baseline") continue;
    r.tiers.clear();
    for (const auto& [fraction, severity] :
         {std::pair{0.5, "warning"}, std::pair{1.0, "critical"}, std::pair{2.0, "emergency"}}) {
      AlertTier t;
      t.above = Threshold::Relative(fraction);
      t.severity = severity;
      r.tiers.push_back(t);
    }
  }
  return c;
}

// The label value `name` of a series key, "" when absent.
std::string LabelOf(const std::string& key, std::string_view name) {
  const std::string needle = Cat(name, "=\"");
  size_t at = key.find(needle);
  if (at == std::string::npos) return "";
  at += needle.size();
  return key.substr(at, key.find('"', at) - at);
}

// One line per model: request rate and P50/P99 of total and of each backend stage.
void PrintLive(const server::LiveLoop& loop, double elapsed_s, const std::string& phase) {
  std::map<std::string, std::map<std::string, server::SeriesSnapshot>> by_model;
  for (const server::SeriesSnapshot& s : loop.Snapshot()) {
    const std::string key = s.series->key();
    if (key.find(kRequestDurationMetric) != 0) continue;
    by_model[LabelOf(key, "model")][LabelOf(key, "stage")] = s;
  }
  std::printf("[%4.0fs %-22s]", elapsed_s, phase.c_str());
  for (const auto& [model, stages] : by_model) {
    const auto total = stages.find("total");
    if (total == stages.end()) continue;
    std::printf("  %s %3.0f/s p50 %s p99 %s ms (", model.c_str(), total->second.rate,
                Ms(total->second.stats.p50).c_str(), Ms(total->second.stats.p99).c_str());
    bool first = true;
    for (const char* stage : {"queue", "feature_fetch", "inference"}) {
      const auto it = stages.find(stage);
      if (it == stages.end() || it->second.stats.count == 0) continue;
      if (std::string_view(stage) == "feature_fetch" && model != "risk") continue;
      std::printf("%s%s %s", first ? "" : ", ",
                  std::string_view(stage) == "feature_fetch" ? "feature" : stage,
                  Ms(it->second.stats.p99).c_str());
      first = false;
    }
    std::printf(")%s", total->second.alert_state == AlertState::kNormal
                           ? ""
                           : Cat(" [", AlertStateName(total->second.alert_state), "]").c_str());
  }
  std::printf("\n");
  std::fflush(stdout);
}

std::string RiskBody(std::mt19937_64& rng) {
  std::string body =
      Cat(R"({"inputs":[{"name":"user_id","shape":[1],"datatype":"BYTES","data":[")",
          rng() % kUsers, R"("]},{"name":"realtime","shape":[1,16],"datatype":"FP32","data":[)");
  for (size_t i = 0; i < kRealtimeFeatures; ++i) {
    body += Cat(i == 0 ? "" : ",", static_cast<double>(rng() % 1000) / 1000.0);
  }
  return body + "]}]}";
}

std::string TextBody(std::mt19937_64& rng, int length) {
  std::string body =
      Cat(R"({"inputs":[{"name":"ids","shape":[1,)", length, R"(],"datatype":"INT64","data":[)");
  for (int i = 0; i < length; ++i) body += Cat(i == 0 ? "" : ",", rng() % 5000);
  return body + "]}]}";
}

// P99 (seconds) per stage of one model's series, as the live loop saw it last.
using StageP99 = std::map<std::string, double>;

StageP99 StagesOf(const server::LiveLoop& loop, const std::string& model) {
  StageP99 out;
  for (const server::SeriesSnapshot& s : loop.Snapshot()) {
    const std::string& key = s.series->key();
    if (key.find(kRequestDurationMetric) != 0 || LabelOf(key, "model") != model) continue;
    if (s.stats.count > 0 && s.stats.p99 >= 0) out[LabelOf(key, "stage")] = s.stats.p99;
  }
  return out;
}

struct Detection {
  const DemoPhase* phase = nullptr;
  StageP99 before, during;  // the affected model's stages before the incident and during it
  double start_s = 0;       // since the scenario started
  std::optional<double> detected_s;  // seconds from the incident's start to the first alert
  std::string rule, kind, series, message;
  // The affected model's alert that was already active when the incident began, if any: it
  // cannot fire again, so the incident shows as that alert staying on.
  std::string already;
  // The live diagnosis of the affected model's alert in the incident's window (its quadrant and
  // one line), and those of the other models' alerts then (contention, most often).
  std::string quadrant, diagnosis;
  std::vector<std::string> others;
};

int RunDemo(const DemoFlags& flags) {
  // The scenario.
  std::vector<DemoPhase> phases = DefaultScenario();
  if (!flags.scenario.empty()) {
    absl::StatusOr<std::vector<DemoPhase>> loaded = LoadScenario(flags.scenario);
    if (!loaded.ok()) {
      std::fprintf(stderr, "tailguard demo: %s\n", std::string(loaded.status().message()).c_str());
      return 2;
    }
    phases = *std::move(loaded);
  }
  if (!flags.duration.empty()) {
    const std::optional<Duration> total = ParseDurationText(flags.duration);
    if (!total || *total < 10s) {
      std::fprintf(stderr,
                   "tailguard demo: --duration: expected at least 10s (like 2m or 45s), got "
                   "\"%s\"\n",
                   flags.duration.c_str());
      return 2;
    }
    Duration planned{0};
    for (const DemoPhase& p : phases) planned += p.duration;
    const double scale = static_cast<double>(total->count()) / static_cast<double>(planned.count());
    for (DemoPhase& p : phases) {
      p.duration = Duration(static_cast<int64_t>(static_cast<double>(p.duration.count()) * scale));
    }
  }
  const std::filesystem::path models(flags.models);
  for (const char* file : {"risk_mlp_v1.pt", "risk_mlp_v2.pt", "text_classifier.pt"}) {
    if (!std::filesystem::exists(models / file)) {
      std::fprintf(stderr,
                   "tailguard demo: %s is missing: the build writes the demo models with "
                   "python3-torch (run make, or scripts/install-deps first), or pass --models "
                   "DIR\n",
                   (models / file).c_str());
      return 2;
    }
  }

  InstallStopSignals();

  // The feature store. The directory outlives the server (destroyed in reverse order), and goes
  // on every return.
  struct TempDir {
    std::string path;
    ~TempDir() {
      std::error_code ec;
      if (!path.empty()) std::filesystem::remove_all(path, ec);
    }
  } redis_dir;
  std::unique_ptr<store::RedisServerProcess> redis_server;
  std::unique_ptr<store::FeatureStore> inner;
  const std::optional<std::string> redis_binary = store::FindRedisServer();
  if (flags.feature_store != "memory" && redis_binary) {
    char dir_template[] = "/tmp/tailguard-demo-redis-XXXXXX";
    if (mkdtemp(dir_template) != nullptr) {
      redis_dir.path = dir_template;
      absl::StatusOr<std::unique_ptr<store::RedisServerProcess>> server =
          store::RedisServerProcess::Start(*redis_binary, redis_dir.path);
      if (server.ok()) {
        store::RedisOptions options;
        options.port = (*server)->port();
        absl::StatusOr<std::unique_ptr<store::FeatureStore>> client =
            store::ConnectRedisFeatureStore(options);
        if (client.ok()) {
          redis_server = *std::move(server);
          inner = *std::move(client);
        } else {
          std::fprintf(stderr, "tailguard demo: redis: %s; using the in-process store\n",
                       std::string(client.status().message()).c_str());
        }
      } else {
        std::fprintf(stderr,
                     "tailguard demo: cannot start redis-server (%s); using the "
                     "in-process store\n",
                     std::string(server.status().message()).c_str());
      }
    }
  }
  if (flags.feature_store == "redis" && inner == nullptr) {
    std::fprintf(stderr,
                 "tailguard demo: --feature-store redis: no redis-server could be started "
                 "(install it with scripts/install-deps)\n");
    return 1;
  }
  if (inner == nullptr) inner = store::NewMemoryFeatureStore();
  store::SlowableFeatureStore features(std::move(inner));
  if (absl::Status s = store::SeedFeatures(features, kUsers, kStoredFeatures, 7); !s.ok()) {
    std::fprintf(stderr, "tailguard demo: seeding the feature store: %s\n",
                 std::string(s.message()).c_str());
    return 1;
  }

  // The gateway, with an event store in a directory of its own for the run, so the dashboard's
  // alerts view can acknowledge and silence (nothing is delivered: the demo rules name no
  // receivers). In memory only when no directory can be made.
  // With --store the file stays, for `tailguard alerts` and `tailguard report` after the run.
  TempDir store_dir;
  char store_template[] = "/tmp/tailguard-demo-XXXXXX";
  if (flags.store.empty() && mkdtemp(store_template) != nullptr) store_dir.path = store_template;
  const std::string store_path =
      !flags.store.empty()     ? flags.store
      : store_dir.path.empty() ? ""
                               : (std::filesystem::path(store_dir.path) / "tailguard.db").string();
  const std::string yaml = Cat(
      "listen: \"", flags.listen, "\"\nthreads: 2\ntick: 1s\nstore: {path: \"", store_path, "\"}\n",
      "routes:\n  - {name: models, prefix: /v2/models/, backend: local}\n", "models:\n",
      "  - name: risk\n    features: {input: user_id, prefix: \"user:\"}\n",
      "    max_batch_size: 8\n    workers: 4\n", "    profile_sample_rate: 0.02\n    versions:\n",
      "      - {version: \"1\", path: \"", (models / "risk_mlp_v1.pt").string(), "\"}\n",
      "      - {version: \"2\", path: \"", (models / "risk_mlp_v2.pt").string(), "\"}\n",
      "  - name: text\n    profile_sample_rate: 0.05\n    queue_capacity: 64\n    versions:\n",
      "      - {version: \"1\", path: \"", (models / "text_classifier.pt").string(), "\"}\n");
  absl::StatusOr<server::GatewayConfig> config = server::ParseGatewayConfig(yaml, "demo");
  if (!config.ok()) {
    std::fprintf(stderr, "tailguard demo: --listen: %s\n",
                 std::string(config.status().message()).c_str());
    return 2;
  }
  config->feature_store.redis.clear();
  // A token for this run only, so the dashboard can acknowledge and silence (the API refuses
  // changes without one): the dashboard link below carries it.
  {
    std::random_device rd;
    std::array<uint8_t, 16> bytes;
    for (uint8_t& b : bytes) b = static_cast<uint8_t>(rd());
    config->api_token = server::HexEncode(bytes);
  }
  auto make_gateway = [&](server::GatewayConfig c) {
    server::GatewayOptions options;
    options.config = std::move(c);
    options.rules = DemoRules();
    options.feature_store = &features;
    options.log = nullptr;  // the demo prints its own timeline
    options.dashboard = server::DashboardAssets();
    options.host_signals = true;
    return server::Gateway::Create(std::move(options));
  };
  absl::StatusOr<std::unique_ptr<server::Gateway>> gateway = make_gateway(*config);
  if (!gateway.ok() && absl::IsUnavailable(gateway.status()) && !flags.listen_given) {
    std::fprintf(stderr, "tailguard demo: %s; using a free port instead\n",
                 std::string(gateway.status().message()).c_str());
    config->listen.port = 0;
    gateway = make_gateway(*config);
  }
  if (!gateway.ok()) {
    std::fprintf(stderr, "tailguard demo: %s\n", std::string(gateway.status().message()).c_str());
    return absl::IsUnavailable(gateway.status()) ? 1 : 2;
  }
  server::Gateway& g = **gateway;
  g.Start();
  const std::string address = g.endpoint().ToString();

  // The load: one generator per model, with the same phases.
  auto make_load = [&](const std::string& model, auto rate_of, auto body_of, uint64_t seed) {
    loadgen::LoadgenOptions o;
    o.url = Cat("http://", address, "/v2/models/", model, "/infer");
    o.method = "POST";
    o.headers = {{"Content-Type", "application/json"}};
    o.connections = 32;
    o.timeout = 10s;
    o.seed = seed;
    for (const DemoPhase& p : phases) {
      loadgen::Phase phase =
          loadgen::ConstantPhase(p.duration, rate_of(p), loadgen::Distribution::kPoisson);
      phase.name = p.name;
      o.phases.push_back(std::move(phase));
    }
    auto rng = std::make_shared<std::mutex>();
    auto gen = std::make_shared<std::mt19937_64>(seed);
    o.generator = [rng, gen, body_of, &phases](const loadgen::RequestContext& c,
                                               loadgen::HttpRequest& r) {
      std::lock_guard<std::mutex> lock(*rng);
      r.body = body_of(*gen, phases[c.phase]);
    };
    return loadgen::Loadgen::Create(std::move(o));
  };
  auto risk_load = make_load(
      "risk", [](const DemoPhase& p) { return p.risk_rate; },
      [](std::mt19937_64& rng, const DemoPhase&) { return RiskBody(rng); }, 11);
  auto text_load = make_load(
      "text", [](const DemoPhase& p) { return p.text_rate; },
      [](std::mt19937_64& rng, const DemoPhase& p) { return TextBody(rng, p.text_length); }, 13);
  if (!risk_load.ok() || !text_load.ok()) {
    std::fprintf(stderr, "tailguard demo: load generator: %s\n",
                 std::string((risk_load.ok() ? text_load : risk_load).status().message()).c_str());
    g.Shutdown();
    return 2;
  }

  // Warm-up: TorchScript optimises a model over its first runs, which are slow; let that happen
  // before the scenario, so the baseline is the model's steady state.
  {
    std::mt19937_64 rng(5);
    model::InferResult ignored;
    for (int i = 0; i < 30; ++i) {
      for (const auto& [name, body] : {std::pair{"risk", RiskBody(rng)},
                                       std::pair{"text", TextBody(rng, phases[0].text_length)}}) {
        std::promise<model::InferResult> done;
        g.backend()->Submit(name, "", body, {},
                            [&done](model::InferResult r) { done.set_value(std::move(r)); });
        ignored = done.get_future().get();
      }
    }
  }

  Duration planned{0};
  for (const DemoPhase& p : phases) planned += p.duration;
  std::printf("tailguard demo: serving the demo models at http://%s (feature store: %s)\n",
              address.c_str(), features.Describe().c_str());
  std::printf(
      "  dashboard: http://%s/#token=%s   live API: /api/v1/series  /api/v1/alerts  "
      "/metrics\n",
      address.c_str(), config->api_token.c_str());
  std::printf("  scenario (%s):", FormatDuration(static_cast<double>(planned.count())).c_str());
  for (const DemoPhase& p : phases) {
    std::printf(" %s %s%s", p.name.c_str(),
                FormatDuration(static_cast<double>(p.duration.count())).c_str(),
                &p == &phases.back() ? "\n" : ",");
  }
  std::printf("  Ctrl-C ends it early.\n\n");
  std::fflush(stdout);

  // Runs: the generators on threads of their own, the signal watcher, and the control loop here.
  absl::StatusOr<loadgen::Report> risk_report = absl::UnknownError("not run");
  absl::StatusOr<loadgen::Report> text_report = absl::UnknownError("not run");
  const auto start = std::chrono::steady_clock::now();
  const WallTime wall_start = Clock::Real().WallNow();
  std::thread risk_thread([&] { risk_report = (*risk_load)->Run(); });
  std::thread text_thread([&] { text_report = (*text_load)->Run(); });

  std::vector<Detection> detections;
  std::vector<double> phase_start;
  {
    double at = 0;
    for (const DemoPhase& p : phases) {
      phase_start.push_back(at);
      if (!p.incident.empty()) {
        Detection d;
        d.phase = &p;
        d.start_s = at;
        detections.push_back(std::move(d));
      }
      at += std::chrono::duration<double>(p.duration).count();
    }
  }
  uint64_t last_event = 0;
  size_t current = SIZE_MAX;
  double next_print = 5;
  const double planned_s = std::chrono::duration<double>(planned).count();
  for (;;) {
    const double elapsed =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (StopSignal() != 0 || elapsed >= planned_s) break;
    size_t phase = 0;
    while (phase + 1 < phases.size() && elapsed >= phase_start[phase + 1]) ++phase;
    for (Detection& d : detections) {
      if (d.phase == &phases[phase]) {
        if (phase != current) {
          d.before = StagesOf(g.loop(), d.phase->affects);
          for (const ActiveAlert& a : g.loop().ActiveAlerts()) {
            if (LabelOf(a.series, "model") == d.phase->affects && d.already.empty()) {
              d.already = Cat(a.rule, " (", a.severity, ", ", AlertStateName(a.state), ")");
            }
          }
        }
        const StageP99 now = StagesOf(g.loop(), d.phase->affects);
        const auto worst = d.during.find("total");
        if (now.contains("total") &&
            (worst == d.during.end() || now.at("total") >= worst->second)) {
          d.during = now;
        }
      }
    }
    if (phase != current) {
      current = phase;
      features.set_delay(
          std::chrono::duration_cast<std::chrono::microseconds>(phases[phase].feature_delay));
      std::printf(
          "[%4.0fs] phase %s%s%s\n", elapsed, phases[phase].name.c_str(),
          phases[phase].incident.empty() ? "" : ": injecting: ", phases[phase].incident.c_str());
      std::fflush(stdout);
    }
    for (const server::TimelineEvent& e : g.loop().Events(last_event, 1000)) {
      last_event = e.id;
      const double at = std::chrono::duration<double>(e.time - wall_start).count();
      if (e.type == "diagnosis") {
        if (!flags.quiet) std::printf("[%4.0fs] DIAGNOSIS %s\n", at, e.message.c_str());
        for (Detection& d : detections) {
          const double end_s = d.start_s + std::chrono::duration<double>(d.phase->duration).count();
          if (at < d.start_s || at > end_s + 10) continue;
          const std::string model(LabelOf(e.series, "model"));
          const std::string summary =
              e.message.substr(std::min(e.message.size(), e.message.find(": ") + 2));
          if (model == d.phase->affects) {
            if (d.diagnosis.empty()) {
              d.quadrant = e.kind;
              d.diagnosis = summary;
            }
          } else if (d.others.size() < 3) {
            d.others.push_back(Cat(model, ": ", summary));
          }
        }
        continue;
      }
      if (e.type != "alert") continue;
      if (!flags.quiet) {
        std::printf("[%4.0fs] ALERT %s %s %s: %s\n", at, e.kind.c_str(), e.rule.c_str(),
                    e.severity.c_str(), e.message.c_str());
      }
      // A new alert, or one that worsens, in the incident's window detects it.
      if (e.kind != "pre_alert" && e.kind != "fire" && e.kind != "escalate") continue;
      for (Detection& d : detections) {
        const double end_s = d.start_s + std::chrono::duration<double>(d.phase->duration).count();
        if (d.detected_s || at < d.start_s || at > end_s + 10) continue;
        if (LabelOf(e.series, "model") != d.phase->affects) continue;
        d.detected_s = at - d.start_s;
        d.rule = e.rule;
        d.kind = e.kind;
        d.series = e.series;
        d.message = e.message;
      }
    }
    if (!flags.quiet && elapsed >= next_print) {
      PrintLive(g.loop(), elapsed, phases[current].name);
      next_print += 5;
    }
    std::this_thread::sleep_for(200ms);
  }
  const bool interrupted = StopSignal() != 0;
  (*risk_load)->Stop();
  (*text_load)->Stop();
  risk_thread.join();
  text_thread.join();
  features.set_delay(std::chrono::microseconds(0));
  const double elapsed =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  g.Shutdown();

  // The summary.
  std::printf("\n== summary (%s%.0f s)\n", interrupted ? "interrupted after " : "", elapsed);
  Json summary;
  summary["interrupted"] = interrupted;
  summary["elapsed_seconds"] = elapsed;
  summary["feature_store"] = features.Describe();
  for (const auto& [name, report] :
       {std::pair{"risk", &risk_report}, std::pair{"text", &text_report}}) {
    if (!report->ok()) {
      std::printf("  %s load: %s\n", name, std::string(report->status().message()).c_str());
      continue;
    }
    const loadgen::Report& r = **report;
    std::printf("  %s: %llu requests, %llu errors, p50 %s ms, p99 %s ms, max %s ms\n", name,
                static_cast<unsigned long long>(r.counts.completed),
                static_cast<unsigned long long>(r.counts.errors()),
                Ms(static_cast<double>(r.latency.Quantile(0.5)) / 1e9).c_str(),
                Ms(static_cast<double>(r.latency.Quantile(0.99)) / 1e9).c_str(),
                Ms(static_cast<double>(r.latency.max()) / 1e9).c_str());
    summary["load"][name] = {{"requests", r.counts.completed},
                             {"errors", r.counts.errors()},
                             {"p99_seconds", static_cast<double>(r.latency.Quantile(0.99)) / 1e9}};
  }
  summary["incidents"] = Json::array();
  for (const Detection& d : detections) {
    Json j{{"phase", d.phase->name},
           {"incident", d.phase->incident},
           {"started_at_seconds", d.start_s},
           {"detected", d.detected_s.has_value()}};
    if (d.detected_s) {
      std::printf("  %s at %.0f s: %s\n    detected after %.1f s by rule %s (%s) on %s\n",
                  d.phase->name.c_str(), d.start_s, d.phase->incident.c_str(), *d.detected_s,
                  d.rule.c_str(), d.kind.c_str(), d.series.c_str());
      j["detect_seconds"] = *d.detected_s;
      j["rule"] = d.rule;
      j["kind"] = d.kind;
      j["series"] = d.series;
    } else if (!d.already.empty()) {
      std::printf("  %s at %.0f s: %s\n    the %s model was already alerting when it began: %s\n",
                  d.phase->name.c_str(), d.start_s, d.phase->incident.c_str(),
                  d.phase->affects.c_str(), d.already.c_str());
      j["already_alerting"] = d.already;
    } else {
      std::printf("  %s at %.0f s: %s\n    %s\n", d.phase->name.c_str(), d.start_s,
                  d.phase->incident.c_str(),
                  interrupted && elapsed < d.start_s ? "not reached (the run was interrupted)"
                  : interrupted                      ? "NOT detected (the run was interrupted)"
                                                     : "NOT detected");
    }
    // Which stages moved, most first: the quadrant to look at first.
    std::vector<std::pair<double, std::string>> grew;
    for (const char* stage : {"queue", "feature_fetch", "preprocess", "inference", "postprocess"}) {
      const auto b = d.before.find(stage);
      const auto a = d.during.find(stage);
      if (b == d.before.end() || a == d.during.end() || b->second <= 0) continue;
      if (a->second / b->second < 2) continue;
      grew.emplace_back(a->second / b->second,
                        Cat(stage, " ", Ms(b->second), " -> ", Ms(a->second), " ms"));
    }
    std::sort(grew.begin(), grew.end(), std::greater<>());
    if (d.during.contains("total") && d.before.contains("total")) {
      std::string stages;
      for (const auto& [ratio, text] : grew) stages += Cat(stages.empty() ? "" : ", ", text);
      std::printf("    %s total P99 %s -> %s ms%s%s\n", d.phase->affects.c_str(),
                  Ms(d.before.at("total")).c_str(), Ms(d.during.at("total")).c_str(),
                  stages.empty() ? "" : "; stages that grew (P99): ", stages.c_str());
      j["stages_that_grew"] = stages;
    }
    if (!d.diagnosis.empty()) {
      std::printf("    diagnosis: %s\n", d.diagnosis.c_str());
      j["quadrant"] = d.quadrant;
      j["diagnosis"] = d.diagnosis;
    }
    for (const std::string& o : d.others) std::printf("    meanwhile %s\n", o.c_str());
    if (!d.others.empty()) j["other_diagnoses"] = d.others;
    summary["incidents"].push_back(j);
  }
  if (!detections.empty() && detections.front().detected_s) {
    std::printf("FIGURE demo_detect_seconds %.1f s\n", *detections.front().detected_s);
  }
  if (!flags.store.empty()) {
    std::printf(
        "the alerts are kept in %s: tailguard alerts list --all --db %s; the incident "
        "report of the last: tailguard report latest --db %s\n",
        flags.store.c_str(), flags.store.c_str(), flags.store.c_str());
  }
  if (flags.json) std::printf("%s\n", summary.dump().c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

void AddDemo(CLI::App& app, Action& action) {
  auto flags = std::make_shared<DemoFlags>();
  CLI::App* cmd = app.add_subcommand(
      "demo",
      "Serve the demo models in-process, drive them with a scripted scenario (steady traffic,\n"
      "then much wider inputs, then a feature-store slow-down) and show the loop working:\n"
      "live P50/P99 per stage, the alert timeline, and what was detected when.");
  cmd->add_option("--listen", flags->listen, "Listen address host:port (default 127.0.0.1:8080)")
      ->each([flags](const std::string&) { flags->listen_given = true; });
  cmd->add_option("--duration", flags->duration,
                  "Scale the scenario to this total, e.g. 45s or 5m (default about 2 minutes)");
  cmd->add_option("--scenario", flags->scenario, "A scenario file (YAML, docs/demo.md)")
      ->check(CLI::ExistingFile);
  cmd->add_option("--models", flags->models, "Where the demo's TorchScript models are")
      ->capture_default_str();
  cmd->add_option("--feature-store", flags->feature_store,
                  "auto (a private redis-server when installed, else in-process), redis or memory")
      ->check(CLI::IsMember({"auto", "redis", "memory"}))
      ->capture_default_str();
  cmd->add_option("--store", flags->store,
                  "Keep the event store (alerts, diagnoses, history) in this file, for tailguard "
                  "alerts and tailguard report after the run (default: a file removed at exit)");
  cmd->add_flag("--json", flags->json, "Also print the summary as one JSON line");
  cmd->add_flag("-q,--quiet", flags->quiet, "Only the phases and the summary");
  cmd->footer(
      "Example:\n  tailguard demo                 (what make run runs)\n"
      "  tailguard demo --duration 45s --feature-store memory\n"
      "  tailguard demo --store demo.db && tailguard report latest --db demo.db\n"
      "While it runs: curl localhost:8080/api/v1/alerts, localhost:8080/metrics.");
  cmd->callback([flags, &action] { action = [flags] { return RunDemo(*flags); }; });
}

}  // namespace tailguard::cli
