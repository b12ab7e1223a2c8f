// The gateway configuration: defaults, every field, the sample in examples/, error messages that
// name the file, line and field, and the per-request route lookup.
#include "server/gateway_config.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/strings.h"

namespace tailguard::server {
namespace {

using std::chrono::milliseconds;
using std::chrono::minutes;
using std::chrono::seconds;
using ::testing::ElementsAre;
using ::testing::HasSubstr;
using ::testing::Pair;
using ::testing::StartsWith;

const std::string kSample = std::string(TAILGUARD_EXAMPLES_DIR) + "/gateway.yaml";

// The smallest valid file, with `extra` before its routes.
std::string Minimal(std::string_view extra = "") {
  return Cat(extra, "routes:\n  - prefix: /\n    upstream: \"127.0.0.1:8000\"\n");
}

std::string ErrorOf(std::string_view yaml) {
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(yaml, "gateway.yaml");
  if (c.ok()) return "OK";
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  return std::string(c.status().message());
}

HostPort HP(std::string host, uint16_t port) { return {std::move(host), port}; }

// A file under the test's temporary directory.
std::string WriteFile(const std::string& name, std::string_view text) {
  const std::filesystem::path path = std::filesystem::path(::testing::TempDir()) / name;
  std::filesystem::create_directories(path.parent_path());
  std::ofstream(path, std::ios::binary) << text;
  return path.string();
}

TEST(GatewayConfigTest, Defaults) {
  absl::StatusOr<GatewayConfig> parsed = ParseGatewayConfig(Minimal());
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const GatewayConfig& c = *parsed;
  EXPECT_EQ(c.listen, HP("127.0.0.1", 8080));  // loopback only unless told otherwise
  EXPECT_EQ(c.threads, 0);
  EXPECT_EQ(c.limits.max_body_bytes, 16u << 20);
  EXPECT_EQ(c.limits.max_header_bytes, 16u << 10);
  EXPECT_EQ(c.limits.max_connections, 10000u);
  EXPECT_EQ(c.limits.max_upstream_idle_per_host, 64u);
  EXPECT_EQ(c.timeouts.connect, seconds(1));
  EXPECT_EQ(c.timeouts.request, seconds(30));
  EXPECT_EQ(c.timeouts.idle, seconds(60));
  EXPECT_EQ(c.timeouts.shutdown, seconds(10));
  EXPECT_EQ(c.health.max_fails, 3);
  EXPECT_EQ(c.health.fail_timeout, seconds(10));
  EXPECT_EQ(c.tick, seconds(1));
  EXPECT_EQ(c.rules_file, "");
  EXPECT_EQ(c.api_token, "");
  EXPECT_EQ(c.api_token_file, "");
  EXPECT_EQ(c.tracing.endpoint, "");
  EXPECT_EQ(c.tracing.service_name, "tailguard");
  EXPECT_TRUE(c.tracing.headers.empty());
  EXPECT_EQ(c.tracing.queue_capacity, 4096u);
  EXPECT_EQ(c.tracing.max_batch, 512u);
  EXPECT_EQ(c.tracing.flush_interval, seconds(1));
  EXPECT_EQ(c.tracing.timeout, seconds(5));
  ASSERT_EQ(c.routes.size(), 1u);
  const RouteConfig& r = c.routes[0];
  EXPECT_EQ(r.name, "/");  // named after its prefix
  EXPECT_EQ(r.prefix, "/");
  EXPECT_EQ(r.protocol, RouteProtocol::kAuto);
  EXPECT_THAT(r.upstreams, ElementsAre(HP("127.0.0.1", 8000)));
  EXPECT_EQ(r.model, "");
  EXPECT_EQ(r.version, "");
  EXPECT_EQ(r.request_timeout, std::nullopt);
  EXPECT_EQ(r.rewrite_prefix, "");

  // The struct's own defaults are the file's.
  const GatewayConfig built;
  EXPECT_EQ(built.listen, c.listen);
  EXPECT_EQ(built.limits.max_body_bytes, c.limits.max_body_bytes);
  EXPECT_EQ(built.tick, c.tick);
}

TEST(GatewayConfigTest, EveryField) {
  absl::StatusOr<GatewayConfig> parsed = ParseGatewayConfig(R"(
listen: "[::1]:0"
threads: 8
limits:
  max_body_bytes: 64MiB
  max_header_bytes: 8 KiB
  max_connections: 500
  max_upstream_idle_per_host: 16
timeouts:
  connect: 250ms
  request: 1m30s
  idle: 2m
  shutdown: 5s
health:
  max_fails: 0
  fail_timeout: 30s
tick: 500ms
rules_file: rules/p99.yaml
api_token: s3cr3t-t0ken
tracing:
  otlp_endpoint: "https://otel.example.com:4318/v1/traces"
  service_name: edge-gw
  headers:
    Authorization: Bearer abc
    X-Tenant: ml
  queue_capacity: 1000
  max_batch: 100
  flush_interval: 200ms
  timeout: 2s
routes:
  - name: triton
    prefix: /v2/models/
    protocol: kserve
    upstream: "triton.internal:8000"
  - name: llm
    prefix: /v1
    protocol: openai
    upstreams: ["10.0.0.1:8001", "10.0.0.2:8001", "[fe80::1%eth0]:8001"]
    model: llama
    version: "3"
    request_timeout: 2m
  - prefix: /api/fraud/
    protocol: http
    upstreams: "127.0.0.1:9000"
    rewrite_prefix: /score
  - prefix: /keep
    upstream: "localhost:9001"
    rewrite_prefix: ""
)",
                                                            "full.yaml");
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const GatewayConfig& c = *parsed;
  EXPECT_EQ(c.listen, HP("::1", 0));
  EXPECT_EQ(c.threads, 8);
  EXPECT_EQ(c.limits.max_body_bytes, 64u << 20);
  EXPECT_EQ(c.limits.max_header_bytes, 8u << 10);
  EXPECT_EQ(c.limits.max_connections, 500u);
  EXPECT_EQ(c.limits.max_upstream_idle_per_host, 16u);
  EXPECT_EQ(c.timeouts.connect, milliseconds(250));
  EXPECT_EQ(c.timeouts.request, seconds(90));
  EXPECT_EQ(c.timeouts.idle, minutes(2));
  EXPECT_EQ(c.timeouts.shutdown, seconds(5));
  EXPECT_EQ(c.health.max_fails, 0);
  EXPECT_EQ(c.health.fail_timeout, seconds(30));
  EXPECT_EQ(c.tick, milliseconds(500));
  EXPECT_EQ(c.rules_file, "rules/p99.yaml");  // resolved only by LoadGatewayConfig
  EXPECT_EQ(c.api_token, "s3cr3t-t0ken");
  EXPECT_EQ(c.tracing.endpoint, "https://otel.example.com:4318/v1/traces");
  EXPECT_EQ(c.tracing.service_name, "edge-gw");
  EXPECT_THAT(c.tracing.headers,
              ElementsAre(Pair("Authorization", "Bearer abc"), Pair("X-Tenant", "ml")));
  EXPECT_EQ(c.tracing.queue_capacity, 1000u);
  EXPECT_EQ(c.tracing.max_batch, 100u);
  EXPECT_EQ(c.tracing.flush_interval, milliseconds(200));
  EXPECT_EQ(c.tracing.timeout, seconds(2));
  ASSERT_EQ(c.routes.size(), 4u);
  EXPECT_EQ(c.routes[0].name, "triton");
  EXPECT_EQ(c.routes[0].prefix, "/v2/models/");
  EXPECT_EQ(c.routes[0].protocol, RouteProtocol::kKServe);
  EXPECT_THAT(c.routes[0].upstreams, ElementsAre(HP("triton.internal", 8000)));
  EXPECT_EQ(c.routes[1].protocol, RouteProtocol::kOpenAI);
  EXPECT_THAT(c.routes[1].upstreams,
              ElementsAre(HP("10.0.0.1", 8001), HP("10.0.0.2", 8001), HP("fe80::1%eth0", 8001)));
  EXPECT_EQ(c.routes[1].model, "llama");
  EXPECT_EQ(c.routes[1].version, "3");
  EXPECT_EQ(c.routes[1].request_timeout, minutes(2));
  EXPECT_EQ(c.routes[2].name, "/api/fraud/");
  EXPECT_EQ(c.routes[2].protocol, RouteProtocol::kHttp);
  EXPECT_THAT(c.routes[2].upstreams, ElementsAre(HP("127.0.0.1", 9000)));  // one, no list
  EXPECT_EQ(c.routes[2].rewrite_prefix, "/score");
  EXPECT_EQ(c.routes[3].rewrite_prefix, "");
}

TEST(GatewayConfigTest, SizesAndCounts) {
  const auto body = [](std::string_view size) -> std::optional<size_t> {
    absl::StatusOr<GatewayConfig> c =
        ParseGatewayConfig(Minimal(Cat("limits:\n  max_body_bytes: ", size, "\n")));
    if (!c.ok()) return std::nullopt;
    return c->limits.max_body_bytes;
  };
  EXPECT_EQ(body("1048576"), 1048576u);
  EXPECT_EQ(body("100B"), 100u);
  EXPECT_EQ(body("2KB"), 2000u);
  EXPECT_EQ(body("2kB"), 2000u);
  EXPECT_EQ(body("3MB"), 3000000u);
  EXPECT_EQ(body("1GB"), 1000000000u);
  EXPECT_EQ(body("2KiB"), 2048u);
  EXPECT_EQ(body("3 MiB"), 3u << 20);
  EXPECT_EQ(body("4GiB"), size_t{4} << 30);  // the most
  EXPECT_EQ(body("5GiB"), std::nullopt);
  EXPECT_EQ(body("0"), std::nullopt);
  EXPECT_EQ(body("16M"), std::nullopt);
  EXPECT_EQ(body("1.5MiB"), std::nullopt);
  EXPECT_EQ(body("-1"), std::nullopt);
  EXPECT_EQ(body("99999999999999999999999"), std::nullopt);
  EXPECT_EQ(body("18446744073709551615GiB"), std::nullopt);
  EXPECT_EQ(body("'16  MiB'"), std::nullopt);
}

TEST(GatewayConfigTest, TracingBatchFollowsASmallQueue) {
  absl::StatusOr<GatewayConfig> c =
      ParseGatewayConfig(Minimal("tracing:\n  queue_capacity: 100\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->tracing.max_batch, 100u);  // the default 512 does not fit
}

TEST(GatewayConfigTest, ParsesTheSampleFile) {
  absl::StatusOr<GatewayConfig> parsed = LoadGatewayConfig(kSample);
  ASSERT_TRUE(parsed.ok()) << parsed.status();
  const GatewayConfig& c = *parsed;
  EXPECT_EQ(c.listen, HP("127.0.0.1", 8080));
  EXPECT_EQ(c.rules_file, std::string(TAILGUARD_EXAMPLES_DIR) + "/rules.yaml");
  EXPECT_EQ(c.api_token, "");
  EXPECT_EQ(c.tracing.endpoint, "");  // commented out
  ASSERT_EQ(c.routes.size(), 3u);
  EXPECT_EQ(c.routes[0].name, "triton");
  EXPECT_EQ(c.routes[0].protocol, RouteProtocol::kKServe);
  EXPECT_THAT(c.routes[0].upstreams, ElementsAre(HP("127.0.0.1", 8000)));
  EXPECT_EQ(c.routes[1].name, "llm");
  EXPECT_EQ(c.routes[1].protocol, RouteProtocol::kOpenAI);
  EXPECT_THAT(c.routes[1].upstreams, ElementsAre(HP("127.0.0.1", 8001), HP("127.0.0.1", 8002)));
  EXPECT_EQ(c.routes[1].request_timeout, minutes(2));
  EXPECT_EQ(c.routes[2].name, "fraud");
  EXPECT_EQ(c.routes[2].protocol, RouteProtocol::kHttp);
  EXPECT_EQ(c.routes[2].rewrite_prefix, "/");
  EXPECT_EQ(RewritePath(c.routes[2], "/fraud/score"), "/score");
  EXPECT_EQ(MatchRoute(c, "/v2/models/resnet50/infer"), &c.routes[0]);
  EXPECT_EQ(MatchRoute(c, "/v1/chat/completions"), &c.routes[1]);
  EXPECT_EQ(MatchRoute(c, "/healthz"), nullptr);

  // The tracing block, uncommented, is valid too.
  std::ifstream in(kSample);
  std::stringstream text;
  text << in.rdbuf();
  std::string uncommented;
  std::string line;
  bool in_tracing = false;
  while (std::getline(text, line)) {
    if (line == "# tracing:") in_tracing = true;
    if (in_tracing && line.starts_with("# ")) line = line.substr(2);
    if (line.empty()) in_tracing = false;
    uncommented += line + "\n";
  }
  absl::StatusOr<GatewayConfig> traced = ParseGatewayConfig(uncommented);
  ASSERT_TRUE(traced.ok()) << traced.status();
  EXPECT_EQ(traced->tracing.endpoint, "http://127.0.0.1:4318/v1/traces");
  EXPECT_THAT(traced->tracing.headers,
              ElementsAre(Pair("Authorization", "Bearer collector-token")));
}

constexpr std::string_view kLocal = "routes:\n  - {prefix: /v2/models/, backend: local}\n";

TEST(GatewayConfigTest, ModelsForTheBuiltInBackend) {
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(
      Cat(kLocal,
          "model_threads: 2\n"
          "feature_store: {redis: \"127.0.0.1:6379\", key_prefix: \"f:\", timeout: 50ms}\n"
          "models:\n"
          "  - name: risk\n"
          "    versions: [{version: \"1\", path: a.pt}, {version: \"2\", path: b.pt}]\n"
          "    default_version: \"2\"\n"
          "    max_batch_size: 8\n"
          "    max_queue_delay: 2ms\n"
          "    queue_capacity: 64\n"
          "    workers: 3\n"
          "    profile_sample_rate: 0.5\n"
          "    profile_depth: 1\n"
          "    features: {input: user_id, prefix: \"user:\"}\n"
          "  - {name: text, versions: [{version: \"1\", path: t.pt}]}\n"),
      "gateway.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->routes[0].local_backend);
  EXPECT_TRUE(c->routes[0].upstreams.empty());
  EXPECT_EQ(c->routes[0].protocol, RouteProtocol::kKServe);
  EXPECT_EQ(c->model_threads, 2);
  EXPECT_EQ(c->feature_store.redis, "127.0.0.1:6379");
  EXPECT_EQ(c->feature_store.key_prefix, "f:");
  EXPECT_EQ(c->feature_store.timeout, std::chrono::milliseconds(50));
  ASSERT_EQ(c->models.size(), 2u);
  const model::ModelConfig& risk = c->models[0];
  EXPECT_EQ(risk.name, "risk");
  ASSERT_EQ(risk.versions.size(), 2u);
  EXPECT_EQ(risk.versions[1].path, "b.pt");
  EXPECT_EQ(risk.default_version, "2");
  EXPECT_EQ(risk.max_batch_size, 8);
  EXPECT_EQ(risk.max_queue_delay, std::chrono::milliseconds(2));
  EXPECT_EQ(risk.queue_capacity, 64u);
  EXPECT_EQ(risk.workers, 3);
  EXPECT_EQ(risk.profile_sample_rate, 0.5);
  EXPECT_EQ(risk.profile_depth, 1);
  EXPECT_EQ(risk.features.input, "user_id");
  EXPECT_EQ(risk.features.prefix, "user:");
  const model::ModelConfig& text = c->models[1];
  EXPECT_EQ(text.max_batch_size, 1);
  EXPECT_EQ(text.workers, 1);
  EXPECT_EQ(text.profile_sample_rate, 0.01);
  EXPECT_TRUE(text.features.input.empty());

  const std::string one = "models:\n  - {name: m, versions: [{version: \"1\", path: a.pt}]";
  EXPECT_EQ(ErrorOf(Cat("routes:\n  - {prefix: /, backend: triton}\n", one, "}\n")),
            "gateway.yaml:2: routes[0].backend: the only backend is \"local\" (the built-in model "
            "backend, models:); proxy to a server with upstream: \"host:port\" instead, got "
            "\"triton\"");
  EXPECT_EQ(
      ErrorOf(Cat("routes:\n  - {prefix: /, backend: local, upstream: \"a:1\"}\n", one, "}\n")),
      "gateway.yaml:2: routes[0].upstream: a route with backend: local is served "
      "in-process; remove upstream(s)");
  EXPECT_THAT(ErrorOf(kLocal), HasSubstr("models: a route has backend: local but no models"));
  EXPECT_THAT(ErrorOf(Minimal(Cat(one, "}\n"))),
              HasSubstr("models: models are configured but no route serves them"));
  EXPECT_EQ(ErrorOf(Cat(kLocal, one, ", workers: 0}\n")),
            "gateway.yaml:4: models[0].workers: must be at least 1");
  EXPECT_THAT(ErrorOf(Cat(kLocal, one, ", profile_sample_rate: 2}\n")),
              HasSubstr("models[0].profile_sample_rate: must be a fraction from 0 (off) to 1"));
  EXPECT_THAT(ErrorOf(Cat(kLocal, one, ", default_version: \"3\"}\n")),
              HasSubstr("models[0].default_version: \"3\" is not one of the versions"));
  EXPECT_THAT(ErrorOf(Cat(kLocal, one, ", max_queue_delay: 2s}\n")),
              HasSubstr("models[0].max_queue_delay: must be from 0 to 1s"));
  EXPECT_THAT(ErrorOf(Cat(kLocal, one, "}\n", one.substr(8), "}\n")),
              HasSubstr("models[1].name: model \"m\" is configured twice"));
  EXPECT_THAT(ErrorOf(Cat(kLocal, "models:\n  - {name: m, versions: []}\n")),
              HasSubstr("models[0].versions: needs at least one version"));
  EXPECT_THAT(ErrorOf(Cat(kLocal, one, ", features: {prefix: x}}\n")),
              HasSubstr("models[0].features.input: required"));
  EXPECT_THAT(ErrorOf(Cat(kLocal, one, "}\nfeature_store: {redis: localhost}\n")),
              HasSubstr("feature_store.redis:"));
}

TEST(GatewayConfigTest, ParsesTheModelsSample) {
  std::ifstream in(std::string(TAILGUARD_EXAMPLES_DIR) + "/models.yaml");
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_FALSE(text.empty());
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(text, "models.yaml");
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->routes[0].local_backend);
  ASSERT_EQ(c->models.size(), 2u);
  EXPECT_EQ(c->models[1].name, "risk");
  EXPECT_EQ(c->models[1].versions.size(), 2u);
  EXPECT_EQ(c->models[1].max_batch_size, 8);
}

TEST(GatewayConfigTest, ModelPathsResolveAgainstTheFileAndMustExist) {
  WriteFile("models_cfg/m.pt", "x");
  const std::string path =
      WriteFile("models_cfg/gw.yaml",
                Cat(kLocal, "models:\n  - {name: m, versions: [{version: \"1\", path: m.pt}]}\n"));
  absl::StatusOr<GatewayConfig> c = LoadGatewayConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->models[0].versions[0].path,
            (std::filesystem::path(::testing::TempDir()) / "models_cfg/m.pt").string());
  const std::string missing = WriteFile(
      "models_cfg/bad.yaml",
      Cat(kLocal, "models:\n  - {name: m, versions: [{version: \"1\", path: gone.pt}]}\n"));
  c = LoadGatewayConfig(missing);
  ASSERT_FALSE(c.ok());
  EXPECT_THAT(c.status().message(), HasSubstr("models[0].versions[0].path: cannot open"));
  EXPECT_THAT(c.status().message(), HasSubstr("gone.pt"));
}

TEST(GatewayConfigTest, ErrorsNameFileLineAndField) {
  // Malformed YAML: yaml-cpp's message, at its line.
  EXPECT_THAT(ErrorOf("routes:\n  - prefix: /\n    upstream: [a\n"),
              StartsWith("gateway.yaml:4: "));
  EXPECT_EQ(ErrorOf("- a\n- b\n"),
            "gateway.yaml:1: expected a map with fields listen, threads, limits, timeouts, "
            "health, tick, rules_file, api_token, api_token_file, tracing, store, delivery, "
            "external_url, routes, models, model_threads, feature_store, dashboard, allowed_hosts");
  // Unknown fields, with a suggestion when one is close.
  EXPECT_EQ(ErrorOf(Minimal("listn: \"127.0.0.1:80\"\n")),
            "gateway.yaml:1: listn: unknown field; did you mean \"listen\"? (expected one of: "
            "listen, threads, limits, timeouts, health, tick, rules_file, api_token, "
            "api_token_file, tracing, store, delivery, external_url, routes, models, "
            "model_threads, feature_store, dashboard, allowed_hosts)");
  EXPECT_EQ(
      ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    timeout: 1s\n"),
      "gateway.yaml:4: routes[0].timeout: unknown field (expected one of: name, prefix, "
      "protocol, upstream, upstreams, backend, model, version, request_timeout, rewrite_prefix)");
  EXPECT_EQ(ErrorOf(Minimal("timeouts:\n  conect: 1s\n")),
            "gateway.yaml:2: timeouts.conect: unknown field; did you mean \"connect\"? (expected "
            "one of: connect, request, idle, header, shutdown)");
  EXPECT_EQ(ErrorOf(Minimal("api-token: x\n")),
            "gateway.yaml:1: api-token: unknown field; did you mean \"api_token\"? (expected one "
            "of: listen, threads, limits, timeouts, health, tick, rules_file, api_token, "
            "api_token_file, tracing, store, delivery, external_url, routes, models, "
            "model_threads, feature_store, dashboard, allowed_hosts)");
  EXPECT_EQ(ErrorOf(Minimal("tick: 1s\ntick: 2s\n")), "gateway.yaml:2: tick: appears twice");

  // listen and upstreams.
  EXPECT_EQ(ErrorOf(Minimal("listen: 127.0.0.1\n")),
            "gateway.yaml:1: listen: \"127.0.0.1\" has no port; write it as host:port, like "
            "\"127.0.0.1:8080\"");
  EXPECT_EQ(ErrorOf(Minimal("listen: \"127.0.0.1:70000\"\n")),
            "gateway.yaml:1: listen: \"127.0.0.1:70000\": the port is out of range (0-65535)");
  EXPECT_EQ(ErrorOf(Minimal("listen: \":8080\"\n")),
            "gateway.yaml:1: listen: \":8080\" has no host; write \"127.0.0.1:8080\" (this "
            "machine only) or \"0.0.0.0:8080\" (every interface)");
  EXPECT_EQ(ErrorOf(Minimal("listen: 8080\n")),
            "gateway.yaml:1: listen: \"8080\" is only a port; write \"127.0.0.1:8080\" (this "
            "machine only) or \"0.0.0.0:8080\" (every interface)");
  EXPECT_EQ(ErrorOf(Minimal("listen: \"::1:8080\"\n")),
            "gateway.yaml:1: listen: \"::1:8080\": put an IPv6 address in brackets, like "
            "\"[::1]:8080\"");
  EXPECT_EQ(ErrorOf(Minimal("listen: [a, b]\n")), "gateway.yaml:1: listen: expected a string");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"http://10.0.0.1:8000/v2\"\n"),
            "gateway.yaml:3: routes[0].upstream: \"http://10.0.0.1:8000/v2\" is a URL; write "
            "just host:port, like \"10.0.0.1:8000\"");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"10.0.0.1:0\"\n"),
            "gateway.yaml:3: routes[0].upstream: \"10.0.0.1:0\": port 0 is no upstream port; "
            "give the port the model server listens on (1-65535)");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstreams:\n      - \"a:1\"\n      - \"b\"\n"),
            "gateway.yaml:5: routes[0].upstreams[1]: \"b\" has no port; write it as host:port, "
            "like \"b:8080\"");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstreams:\n      - \"a:1\"\n      - \"a:1\"\n"),
            "gateway.yaml:5: routes[0].upstreams[1]: \"a:1\" appears twice");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    upstreams: [\"b:2\"]\n"),
            "gateway.yaml:4: routes[0].upstreams: give upstream (one host:port) or upstreams (a "
            "list), not both");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: [\"a:1\", \"b:2\"]\n"),
            "gateway.yaml:3: routes[0].upstream: is one host:port; write a list as upstreams: "
            "[\"host:port\", ...]");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstreams: []\n"),
            "gateway.yaml:3: routes[0].upstreams: needs at least one host:port");
  EXPECT_EQ(ErrorOf("routes:\n  - name: a\n    prefix: /\n"),
            "gateway.yaml:2: routes[0].upstream: required: give upstream: \"host:port\", "
            "upstreams: [\"host:port\", ...] or backend: local");

  // Routes.
  EXPECT_EQ(ErrorOf("listen: \"127.0.0.1:80\"\n"),
            "gateway.yaml:1: routes: required: at least one route, like routes: [{prefix: \"/\", "
            "upstream: \"127.0.0.1:8000\"}]");
  EXPECT_EQ(ErrorOf(""),
            "gateway.yaml:1: routes: required: at least one route, like routes: [{prefix: \"/\", "
            "upstream: \"127.0.0.1:8000\"}]");
  EXPECT_EQ(ErrorOf("threads: 2\nroutes: []\n"),
            "gateway.yaml:2: routes: needs at least one route, like [{prefix: \"/\", upstream: "
            "\"127.0.0.1:8000\"}]");
  EXPECT_EQ(ErrorOf("routes:\n  - upstream: \"a:1\"\n"),
            "gateway.yaml:2: routes[0].prefix: required: the URL path prefix this route serves, "
            "like \"/v2/models/\" or \"/\"");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: v1\n    upstream: \"a:1\"\n"),
            "gateway.yaml:2: routes[0].prefix: must start with '/', like \"/v1\"");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: \"\"\n    upstream: \"a:1\"\n"),
            "gateway.yaml:2: routes[0].prefix: must not be empty; \"/\" matches every path");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: \"/a b\"\n    upstream: \"a:1\"\n"),
            "gateway.yaml:2: routes[0].prefix: \"/a b\" is no URL path: it may not contain "
            "spaces, control characters, '?' or '#'");
  EXPECT_EQ(ErrorOf("routes:\n"
                    "  - prefix: /a\n    upstream: \"a:1\"\n"
                    "  - prefix: /b\n    upstream: \"a:1\"\n"
                    "  - prefix: /a\n    upstream: \"a:1\"\n"),
            "gateway.yaml:6: routes[2].prefix: prefix \"/a\" is already the prefix of routes[0]; "
            "one route per prefix");
  EXPECT_EQ(ErrorOf("routes:\n"
                    "  - prefix: /a\n    name: x\n    upstream: \"a:1\"\n"
                    "  - prefix: /b\n    name: x\n    upstream: \"a:1\"\n"),
            "gateway.yaml:6: routes[1].name: route name \"x\" is already the name of routes[0]; "
            "route names are the `route` label and must be unique (a route without a name is "
            "named after its prefix)");
  // A route without a name clashes at its own line.
  EXPECT_EQ(ErrorOf("routes:\n"
                    "  - prefix: /a\n    name: /b\n    upstream: \"a:1\"\n"
                    "  - prefix: /b\n    upstream: \"a:1\"\n"),
            "gateway.yaml:5: routes[1].name: route name \"/b\" is already the name of routes[0]; "
            "route names are the `route` label and must be unique (a route without a name is "
            "named after its prefix)");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    name: \"\"\n    upstream: \"a:1\"\n"),
            "gateway.yaml:3: routes[0].name: must not be empty");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    protocol: grpc\n"),
            "gateway.yaml:4: routes[0].protocol: unknown protocol \"grpc\" (expected one of auto, "
            "kserve, openai, http)");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    protocol: kserv\n"),
            "gateway.yaml:4: routes[0].protocol: unknown protocol \"kserv\"; did you mean "
            "\"kserve\"? (expected one of auto, kserve, openai, http)");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    request_timeout: 0\n"),
            "gateway.yaml:4: routes[0].request_timeout: must be positive, like \"1s\", got \"0\"");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    rewrite_prefix: v2\n"),
            "gateway.yaml:4: routes[0].rewrite_prefix: must start with '/', like \"/v2\"");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    model: \"\"\n"),
            "gateway.yaml:4: routes[0].model: must not be empty");
  EXPECT_EQ(ErrorOf(Cat("routes:\n  - prefix: /\n    upstream: \"a:1\"\n    version: ",
                        std::string(300, 'v'), "\n")),
            "gateway.yaml:4: routes[0].version: is 300 bytes long; at most 256 are allowed");
  EXPECT_EQ(ErrorOf("routes:\n  - /v1\n"),
            "gateway.yaml:2: routes[0]: expected a map with fields name, prefix, protocol, "
            "upstream, upstreams, backend, model, version, request_timeout, rewrite_prefix");
  EXPECT_EQ(ErrorOf("routes:\n  prefix: /\n"), "gateway.yaml:1: routes: expected a list");

  // Numbers, sizes and durations.
  EXPECT_EQ(ErrorOf(Minimal("threads: -1\n")),
            "gateway.yaml:1: threads: must be from 0 (one per core) to 1024, got -1");
  EXPECT_EQ(ErrorOf(Minimal("threads: 2000\n")),
            "gateway.yaml:1: threads: must be from 0 (one per core) to 1024, got 2000");
  EXPECT_EQ(ErrorOf(Minimal("threads: many\n")),
            "gateway.yaml:1: threads: expected a whole number, got \"many\"");
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_body_bytes: 0\n")),
            "gateway.yaml:2: limits.max_body_bytes: must be from 1 byte to 4GiB, got \"0\"");
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_header_bytes: 2MiB\n")),
            "gateway.yaml:2: limits.max_header_bytes: must be from 1 byte to 1MiB, got \"2MiB\"");
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_body_bytes: 16M\n")),
            "gateway.yaml:2: limits.max_body_bytes: expected a size like \"16MiB\", \"512KiB\" or "
            "a number of bytes (units: B, KB, MB, GB, KiB, MiB, GiB), got \"16M\"");
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_connections: 0\n")),
            "gateway.yaml:2: limits.max_connections: must be from 1 to 1048576, got \"0\"");
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_upstream_idle_per_host: 0\n")),
            "gateway.yaml:2: limits.max_upstream_idle_per_host: must be from 1 to 65536, got "
            "\"0\"");
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_connections: lots\n")),
            "gateway.yaml:2: limits.max_connections: expected a whole number, got \"lots\"");
  EXPECT_EQ(ErrorOf(Minimal("timeouts:\n  connect: 0\n")),
            "gateway.yaml:2: timeouts.connect: must be positive, like \"1s\", got \"0\"");
  EXPECT_EQ(ErrorOf(Minimal("timeouts:\n  request: -5s\n")),
            "gateway.yaml:2: timeouts.request: must be positive, like \"1s\", got \"-5s\"");
  EXPECT_EQ(ErrorOf(Minimal("timeouts:\n  idle: 0s\n")),
            "gateway.yaml:2: timeouts.idle: must be positive, like \"1s\", got \"0s\"");
  EXPECT_EQ(ErrorOf(Minimal("timeouts:\n  shutdown: soon\n")),
            "gateway.yaml:2: timeouts.shutdown: expected a duration like \"30s\", \"5m\" or "
            "\"1h30m\", got \"soon\"");
  EXPECT_EQ(ErrorOf(Minimal("health:\n  max_fails: -1\n")),
            "gateway.yaml:2: health.max_fails: must be from 0 (no passive health checks) to "
            "1000, got -1");
  EXPECT_EQ(ErrorOf(Minimal("health:\n  fail_timeout: 0\n")),
            "gateway.yaml:2: health.fail_timeout: must be positive, like \"1s\", got \"0\"");
  EXPECT_EQ(ErrorOf(Minimal("tick: 10ms\n")),
            "gateway.yaml:1: tick: must be from 100ms to 1m (the analysis loop runs once a tick), "
            "got \"10ms\"");
  EXPECT_EQ(ErrorOf(Minimal("tick: 2m\n")),
            "gateway.yaml:1: tick: must be from 100ms to 1m (the analysis loop runs once a tick), "
            "got \"2m\"");
  EXPECT_EQ(ErrorOf(Minimal("limits: 5\n")),
            "gateway.yaml:1: limits: expected a map with fields max_body_bytes, max_header_bytes, "
            "max_connections, max_connections_per_client, max_upstream_idle_per_host");

  // Files and the token; the token itself is never shown.
  EXPECT_EQ(ErrorOf(Minimal("rules_file: \"\"\n")),
            "gateway.yaml:1: rules_file: must not be empty");
  EXPECT_EQ(ErrorOf(Minimal("api_token: abc\napi_token_file: t\n")),
            "gateway.yaml:2: api_token_file: give api_token or api_token_file, not both");
  EXPECT_EQ(ErrorOf(Minimal("api_token: \"two words\"\n")),
            "gateway.yaml:1: api_token: the token contains spaces or control characters; a "
            "bearer token is one word, like the output of `openssl rand -hex 32`");
  EXPECT_EQ(ErrorOf(Minimal("api_token: \"\"\n")),
            "gateway.yaml:1: api_token: the token is empty; give a long random token");

  // Tracing.
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  otlp_endpoint: \"127.0.0.1:4318\"\n")),
            "gateway.yaml:2: tracing.otlp_endpoint: expected an OTLP/HTTP URL like "
            "\"http://127.0.0.1:4318/v1/traces\", got \"127.0.0.1:4318\"");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  otlp_endpoint: \"http://otel:4318\"\n")),
            "gateway.yaml:2: tracing.otlp_endpoint: \"http://otel:4318\" has no path; collectors "
            "take OTLP/HTTP traces at /v1/traces, like \"http://127.0.0.1:4318/v1/traces\"");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  headers:\n    \"Bad Name\": x\n")),
            "gateway.yaml:3: tracing.headers.Bad Name: is no HTTP header name (letters, digits "
            "and !#$%&'*+-.^_`|~ only)");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  headers:\n    X-A: \"secret\\r\\nX-B: y\"\n")),
            "gateway.yaml:3: tracing.headers.X-A: the value contains a line break or another "
            "control character");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  max_batch: 5000\n")),
            "gateway.yaml:2: tracing.max_batch: is larger than queue_capacity (4096); a batch is "
            "taken from the queue");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  queue_capacity: 0\n")),
            "gateway.yaml:2: tracing.queue_capacity: must be from 1 to 1048576, got \"0\"");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  service_name: \"\"\n")),
            "gateway.yaml:2: tracing.service_name: must not be empty");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  flush_interval: 0\n")),
            "gateway.yaml:2: tracing.flush_interval: must be positive, like \"1s\", got \"0\"");
  EXPECT_EQ(ErrorOf(Minimal("tracing:\n  timeout: 0\n")),
            "gateway.yaml:2: tracing.timeout: must be positive, like \"1s\", got \"0\"");
}

TEST(GatewayConfigTest, LineNumbersFollowTheFile) {
  // Comments, blank lines and flow style do not throw the line count off.
  EXPECT_EQ(ErrorOf("# gateway\n\nlisten: \"127.0.0.1:8080\"\n\n# routes\nroutes:\n"
                    "  - {prefix: /a, upstream: \"a:1\"}\n"
                    "  - {prefix: /b, upstream: \"a:1\", protocol: soap}\n"),
            "gateway.yaml:8: routes[1].protocol: unknown protocol \"soap\" (expected one of auto, "
            "kserve, openai, http)");
  EXPECT_EQ(ErrorOf("routes:\n  - prefix: /\n    upstreams:\n\n      - \"a:1\"\n\n"
                    "      - \"b:99999\"\n"),
            "gateway.yaml:7: routes[0].upstreams[1]: \"b:99999\": the port is out of range "
            "(0-65535)");
}

TEST(GatewayConfigTest, BoundsWhatItAccepts) {
  std::string routes = "routes:\n";
  for (size_t i = 0; i <= kMaxRoutes; ++i) {
    routes += Cat("  - {prefix: /r", i, ", upstream: \"a:1\"}\n");
  }
  EXPECT_EQ(ErrorOf(routes), "gateway.yaml:1: routes: has 1001 entries; at most 1000 are allowed");
  std::string upstreams = "routes:\n  - prefix: /\n    upstreams:\n";
  for (size_t i = 0; i <= kMaxUpstreamsPerRoute; ++i)
    upstreams += Cat("      - \"a:", i + 1, "\"\n");
  EXPECT_EQ(ErrorOf(upstreams),
            "gateway.yaml:3: routes[0].upstreams: has 65 entries; at most 64 are allowed");
  EXPECT_THAT(ErrorOf(Minimal(Cat("# ", std::string(kMaxConfigBytes, 'x'), "\n"))),
              StartsWith("gateway.yaml: the file is 4194"));
}

TEST(GatewayConfigTest, OddYamlFailsCleanly) {
  for (std::string_view yaml : {
           "routes: *nope\n",
           "a: &a [*a]\n",
           "routes:\n  - &r {prefix: /, upstream: \"a:1\"}\n  - *r\n",
           "!!binary routes: x\n",
           "? [a, b]\n: c\n",
           "routes:\n  - prefix: !!int /\n    upstream: \"a:1\"\n",
           "{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{{",
           "routes:\n  - prefix: /\n    upstream: \"a:1\"\n---\nfoo: bar\n",
           "\xff\xfe\x00\x01",
       }) {
    absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(yaml, "odd.yaml");
    if (!c.ok()) {
      EXPECT_THAT(std::string(c.status().message()), StartsWith("odd.yaml:")) << yaml;
    }
  }
  // An alias of a whole route repeats its prefix.
  EXPECT_THAT(ErrorOf("routes:\n  - &r {prefix: /, upstream: \"a:1\"}\n  - *r\n"),
              HasSubstr("routes[1].prefix: prefix \"/\" is already the prefix of routes[0]"));
}

TEST(GatewayConfigTest, StoreDeliveryAndExternalUrl) {
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(Minimal());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->store.path, "tailguard.db");
  EXPECT_EQ(c->store.archive_after, std::chrono::hours(24 * 7));
  EXPECT_EQ(c->delivery.initial_backoff, seconds(1));
  EXPECT_EQ(c->delivery.max_backoff, std::chrono::minutes(5));
  EXPECT_EQ(c->delivery.give_up_after, std::chrono::hours(24));
  EXPECT_EQ(c->external_url, "");

  c = ParseGatewayConfig(
      Minimal("store: {path: \"\", archive_after: 0s}\n"
              "delivery: {initial_backoff: 200ms, max_backoff: 1m, give_up_after: 2h}\n"
              "external_url: https://tg.example.com/\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->store.path, "");  // in memory only
  EXPECT_EQ(c->store.archive_after, Duration::zero());
  EXPECT_EQ(c->delivery.initial_backoff, std::chrono::milliseconds(200));
  EXPECT_EQ(c->delivery.max_backoff, std::chrono::minutes(1));
  EXPECT_EQ(c->delivery.give_up_after, std::chrono::hours(2));
  EXPECT_EQ(c->external_url, "https://tg.example.com");  // trailing / dropped

  EXPECT_EQ(ErrorOf(Minimal("external_url: tg.example.com\n")),
            "gateway.yaml:1: external_url: must start with http:// or https://, got "
            "\"tg.example.com\"");
  EXPECT_EQ(ErrorOf(Minimal("delivery:\n  initial_backoff: 1m\n  max_backoff: 1s\n")),
            "gateway.yaml:1: delivery: max_backoff must be at least initial_backoff");
  EXPECT_EQ(ErrorOf(Minimal("delivery:\n  give_up_after: 0s\n")),
            "gateway.yaml:2: delivery.give_up_after: must be positive, like \"1s\", got \"0s\"");
  EXPECT_THAT(ErrorOf(Minimal("store:\n  pth: x.db\n")),
              StartsWith("gateway.yaml:2: store.pth: unknown field; did you mean \"path\"?"));
}

TEST(GatewayConfigTest, StoreHistoryRetention) {
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(Minimal());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->store.history_retention, std::chrono::hours(24 * 35));
  c = ParseGatewayConfig(Minimal("store: {path: h.db, history_retention: 8d}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->store.history_retention, std::chrono::hours(24 * 8));
  c = ParseGatewayConfig(Minimal("store: {history_retention: 1h}\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->store.history_retention, std::chrono::hours(1));

  EXPECT_EQ(ErrorOf(Minimal("store:\n  path: h.db\n  history_retention: 30m\n")),
            "gateway.yaml:3: store.history_retention: must be from 1h to 3650d (the per-minute "
            "history is pruned past it; 35d keeps last week and last month to compare with), "
            "got \"30m\"");
  EXPECT_THAT(ErrorOf(Minimal("store:\n  history_retention: 3651d\n")),
              StartsWith("gateway.yaml:2: store.history_retention: must be from 1h to 3650d"));
  EXPECT_THAT(ErrorOf(Minimal("store:\n  history_retention: forever\n")),
              StartsWith("gateway.yaml:2: store.history_retention: expected a duration like"));
  EXPECT_THAT(ErrorOf(Minimal("store:\n  history_retension: 8d\n")),
              StartsWith("gateway.yaml:2: store.history_retension: unknown field; did you mean "
                         "\"history_retention\"?"));
}

TEST(GatewayConfigTest, HostileClientLimits) {
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(Minimal());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->limits.max_connections_per_client, 1000u);
  EXPECT_EQ(c->timeouts.header, seconds(10));
  EXPECT_TRUE(c->allowed_hosts.empty());
  // The per-client limit follows a smaller total, and 0 turns it off.
  c = ParseGatewayConfig(Minimal("limits:\n  max_connections: 100\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->limits.max_connections_per_client, 100u);
  c = ParseGatewayConfig(Minimal(
      "limits:\n  max_connections_per_client: 0\ntimeouts:\n  header: 2s\n"
      "allowed_hosts: [Tailguard.Internal, gw-1]\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->limits.max_connections_per_client, 0u);
  EXPECT_EQ(c->timeouts.header, seconds(2));
  EXPECT_THAT(c->allowed_hosts, ElementsAre("tailguard.internal", "gw-1"));
  EXPECT_EQ(ErrorOf(Minimal("limits:\n  max_connections: 10\n  max_connections_per_client: 11\n")),
            "gateway.yaml:3: limits.max_connections_per_client: must be from 1 to 10, got \"11\"");
  EXPECT_EQ(ErrorOf(Minimal("allowed_hosts: [\"http://x:80\"]\n")),
            "gateway.yaml:1: allowed_hosts[0]: expected a host name like \"tailguard.internal\" "
            "(letters, digits, '-', '.', '_'; no port, no scheme), got \"http://x:80\"");
}

TEST(GatewayConfigTest, DashboardCanBeTurnedOff) {
  absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(Minimal());
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_TRUE(c->dashboard);
  c = ParseGatewayConfig(Minimal("dashboard: false\n"));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_FALSE(c->dashboard);
  EXPECT_EQ(ErrorOf(Minimal("dashboard: off\n")),
            "gateway.yaml:1: dashboard: expected true or false, got \"off\"");
}

TEST(GatewayConfigTest, LoadResolvesFilesAgainstTheConfigDirectory) {
  WriteFile("load/conf/rules.yaml", "rules: []\n");
  WriteFile("load/conf/secrets/api.token", "tok-123\r\n\n");
  const std::string path =
      WriteFile("load/conf/gateway.yaml",
                Minimal("rules_file: rules.yaml\napi_token_file: secrets/api.token\n"));
  absl::StatusOr<GatewayConfig> c = LoadGatewayConfig(path);
  ASSERT_TRUE(c.ok()) << c.status();
  const std::string dir = std::filesystem::path(path).parent_path().string();
  EXPECT_EQ(c->rules_file, dir + "/rules.yaml");
  EXPECT_EQ(c->api_token_file, dir + "/secrets/api.token");
  EXPECT_EQ(c->api_token, "tok-123");  // trailing newlines stripped
  EXPECT_EQ(c->store.path, dir + "/tailguard.db");

  // Absolute paths stay as they are.
  const std::string abs_rules = WriteFile("load/elsewhere/rules.yaml", "rules: []\n");
  c = LoadGatewayConfig(
      WriteFile("load/conf/abs.yaml", Minimal(Cat("rules_file: ", abs_rules, "\n"))));
  ASSERT_TRUE(c.ok()) << c.status();
  EXPECT_EQ(c->rules_file, abs_rules);
}

TEST(GatewayConfigTest, LoadErrors) {
  absl::StatusOr<GatewayConfig> c = LoadGatewayConfig("/nonexistent/gateway.yaml");
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()),
              StartsWith("/nonexistent/gateway.yaml: cannot read the configuration file: "));

  c = LoadGatewayConfig(::testing::TempDir());
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_THAT(std::string(c.status().message()), HasSubstr("is a directory"));

  std::string path = WriteFile("errors/bad.yaml", Minimal("threads: x\n"));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), Cat(path, ":1: threads: expected a whole number, got \"x\""));

  path = WriteFile("errors/norules.yaml", Minimal("threads: 1\nrules_file: missing.yaml\n"));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  const std::string dir = std::filesystem::path(path).parent_path().string();
  EXPECT_EQ(c.status().message(),
            Cat(path, ":2: rules_file: cannot open \"", dir,
                "/missing.yaml\" (a relative path is relative to the directory of ", path, ")"));

  path = WriteFile("errors/notoken.yaml", Minimal("api_token_file: none.token\n"));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kNotFound);
  EXPECT_EQ(c.status().message(),
            Cat(path, ":1: api_token_file: cannot read \"", dir,
                "/none.token\": No such file or directory (a relative path is relative to the "
                "directory of ",
                path, ")"));

  WriteFile("errors/empty.token", "\n");
  path = WriteFile("errors/emptytoken.yaml", Minimal("api_token_file: empty.token\n"));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), Cat(path, ":1: api_token_file: the token in \"", dir,
                                      "/empty.token\" is empty; give a long random token"));

  WriteFile("errors/spaced.token", "hunter2 hunter3\n");
  path = WriteFile("errors/spacedtoken.yaml", Minimal("api_token_file: spaced.token\n"));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_THAT(std::string(c.status().message()),
              StartsWith(Cat(path, ":1: api_token_file: the token in \"", dir,
                             "/spaced.token\" contains spaces")));
  EXPECT_THAT(std::string(c.status().message()), ::testing::Not(HasSubstr("hunter")));

  WriteFile("errors/big.token", std::string(5000, 'x'));
  path = WriteFile("errors/bigtoken.yaml", Minimal("api_token_file: big.token\n"));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(), Cat(path, ":1: api_token_file: cannot read \"", dir,
                                      "/big.token\": is larger than 4KiB"));

  path = WriteFile("errors/huge.yaml", Minimal(Cat("# ", std::string(kMaxConfigBytes, 'x'), "\n")));
  c = LoadGatewayConfig(path);
  EXPECT_EQ(c.status().code(), absl::StatusCode::kInvalidArgument);
  EXPECT_EQ(c.status().message(),
            Cat(path, ": the file is larger than 4MiB; that is too much for a configuration"));
}

TEST(HostPortTest, ParsesAndPrints) {
  EXPECT_EQ(*ParseHostPort("127.0.0.1:8080"), HP("127.0.0.1", 8080));
  EXPECT_EQ(*ParseHostPort("0.0.0.0:0"), HP("0.0.0.0", 0));
  EXPECT_EQ(*ParseHostPort("model-server.svc.cluster.local:65535"),
            HP("model-server.svc.cluster.local", 65535));
  EXPECT_EQ(*ParseHostPort("[::1]:8080"), HP("::1", 8080));
  EXPECT_EQ(*ParseHostPort("[::]:80"), HP("::", 80));
  EXPECT_EQ(*ParseHostPort("[::ffff:10.0.0.1]:80"), HP("::ffff:10.0.0.1", 80));
  EXPECT_EQ(*ParseHostPort("[fe80::1%eth0]:80"), HP("fe80::1%eth0", 80));
  EXPECT_EQ(HP("127.0.0.1", 8080).ToString(), "127.0.0.1:8080");
  EXPECT_EQ(HP("::1", 8080).ToString(), "[::1]:8080");
  EXPECT_EQ(HP("fe80::1%eth0", 1).ToString(), "[fe80::1%eth0]:1");

  for (std::string_view bad :
       {"",         "host",      "host:",       ":80",        "[::1]",
        "[::1]:",   "[::1]x80",  "[]:80",       "[host]:80",  "[::1:80",
        "::1:80",   "host:http", "host:-1",     "host:65536", "host:99999999999999999999",
        "ho st:80", "a/b:80",    "http://a:80", "80",         "host:+80",
        "host:80\n"}) {
    EXPECT_FALSE(ParseHostPort(bad).ok()) << bad;
  }
  EXPECT_EQ(ParseHostPort("[::1]").status().message(),
            "\"[::1]\" has no port; write it as host:port, like \"[::1]:8080\"");
  EXPECT_EQ(ParseHostPort("[host]:80").status().message(),
            "\"[host]:80\": only an IPv6 address goes in brackets, like \"[::1]:8080\"");
  EXPECT_EQ(ParseHostPort("host:http").status().message(),
            "\"host:http\": the port must be a number from 0 to 65535");
  EXPECT_EQ(ParseHostPort("a/b:80").status().message(),
            "\"a/b:80\": the host may contain only letters, digits, '-', '.' and '_'");
  EXPECT_EQ(ParseHostPort(std::string(300, 'h') + ":80").status().message(),
            Cat('"', std::string(77, 'h'), "...\": the host is longer than 253 characters"));
}

TEST(RouteProtocolTest, Names) {
  EXPECT_EQ(RouteProtocolName(RouteProtocol::kAuto), "auto");
  EXPECT_EQ(RouteProtocolName(RouteProtocol::kKServe), "kserve");
  EXPECT_EQ(RouteProtocolName(RouteProtocol::kOpenAI), "openai");
  EXPECT_EQ(RouteProtocolName(RouteProtocol::kHttp), "http");
}

GatewayConfig WithPrefixes(std::initializer_list<std::string_view> prefixes) {
  GatewayConfig c;
  for (std::string_view p : prefixes) {
    RouteConfig r;
    r.name = r.prefix = std::string(p);
    c.routes.push_back(std::move(r));
  }
  return c;
}

std::string Matched(const GatewayConfig& c, std::string_view path) {
  const RouteConfig* r = MatchRoute(c, path);
  return r == nullptr ? "none" : r->prefix;
}

TEST(MatchRouteTest, LongestPrefixWins) {
  // Order in the file does not matter.
  const GatewayConfig c = WithPrefixes({"/", "/v2/models/resnet/", "/v2/", "/v2/models/"});
  EXPECT_EQ(Matched(c, "/v2/models/resnet/infer"), "/v2/models/resnet/");
  EXPECT_EQ(Matched(c, "/v2/models/bert/infer"), "/v2/models/");
  EXPECT_EQ(Matched(c, "/v2/health/ready"), "/v2/");
  EXPECT_EQ(Matched(c, "/v1/completions"), "/");
  EXPECT_EQ(Matched(c, "/"), "/");
  EXPECT_EQ(Matched(c, ""), "none");
  EXPECT_EQ(Matched(WithPrefixes({"/v2/models/", "/v2/", "/"}), "/v2/models/x"), "/v2/models/");
}

TEST(MatchRouteTest, MatchesAtSegmentBoundaries) {
  const GatewayConfig c = WithPrefixes({"/v1", "/api/fraud/"});
  EXPECT_EQ(Matched(c, "/v1"), "/v1");
  EXPECT_EQ(Matched(c, "/v1/chat/completions"), "/v1");
  EXPECT_EQ(Matched(c, "/v1?stream=true"), "/v1");
  EXPECT_EQ(Matched(c, "/v10"), "none");
  EXPECT_EQ(Matched(c, "/v1-beta/x"), "none");
  EXPECT_EQ(Matched(c, "/V1"), "none");  // case matters
  EXPECT_EQ(Matched(c, "/api/fraud/score"), "/api/fraud/");
  EXPECT_EQ(Matched(c, "/api/fraud/"), "/api/fraud/");
  EXPECT_EQ(Matched(c, "/api/fraud"), "none");  // the prefix's '/' is part of it
  EXPECT_EQ(Matched(c, "/api/fraudulent"), "none");
  // A longer prefix that does not match at a boundary leaves the shorter one.
  const GatewayConfig nested = WithPrefixes({"/models", "/models/bert"});
  EXPECT_EQ(Matched(nested, "/models/bert2/infer"), "/models");
  EXPECT_EQ(Matched(nested, "/models/bert/infer"), "/models/bert");
  EXPECT_EQ(Matched(WithPrefixes({}), "/x"), "none");
}

TEST(RewritePathTest, ReplacesTheMatchedPrefix) {
  RouteConfig r;
  r.prefix = "/fraud";
  EXPECT_EQ(RewritePath(r, "/fraud/v1/predict?x=1"), "/fraud/v1/predict?x=1");  // no rewrite
  r.rewrite_prefix = "/";
  EXPECT_EQ(RewritePath(r, "/fraud/v1/predict"), "/v1/predict");
  EXPECT_EQ(RewritePath(r, "/fraud"), "/");
  EXPECT_EQ(RewritePath(r, "/fraud?x=1"), "/?x=1");
  r.rewrite_prefix = "/api";
  EXPECT_EQ(RewritePath(r, "/fraud/v1"), "/api/v1");
  EXPECT_EQ(RewritePath(r, "/fraud"), "/api");
  EXPECT_EQ(RewritePath(r, "/fraud?x=1"), "/api?x=1");
  r.prefix = "/fraud/";
  EXPECT_EQ(RewritePath(r, "/fraud/v1"), "/api/v1");
  EXPECT_EQ(RewritePath(r, "/fraud/"), "/api");
  r.rewrite_prefix = "/api/";
  EXPECT_EQ(RewritePath(r, "/fraud/v1"), "/api/v1");
  EXPECT_EQ(RewritePath(r, "/fraud/"), "/api/");
}

}  // namespace
}  // namespace tailguard::server
