// The gateway's configuration file (`tailguard serve --config gateway.yaml`): where to listen,
// the routes to the model servers, limits, timeouts, passive health and tracing.
// docs/gateway-config.md is the reference; examples/gateway.yaml is a commented sample.
#ifndef TAILGUARD_SERVER_GATEWAY_CONFIG_H_
#define TAILGUARD_SERVER_GATEWAY_CONFIG_H_

#include <chrono>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "model/model_config.h"
#include "server/otlp.h"
#include "tailguard/clock.h"

namespace tailguard::server {

// A TCP endpoint. An IPv6 host is kept without its brackets ("::1").
struct HostPort {
  std::string host;
  uint16_t port = 0;

  // "127.0.0.1:8080", "[::1]:8080".
  std::string ToString() const;

  friend bool operator==(const HostPort&, const HostPort&) = default;
};

// Parses "host:port", or "[ipv6]:port" for IPv6. The host is a name or an address (letters,
// digits, '-', '.', '_'; inside brackets hex digits, ':', '.' and a "%zone"); the port is
// 0-65535. InvalidArgument saying what is wrong and how to write it otherwise; the message
// names no file, so a command-line flag can use it too.
absl::StatusOr<HostPort> ParseHostPort(std::string_view text);

// How the gateway reads requests on a route, for labels and request introspection.
enum class RouteProtocol : uint8_t {
  kAuto,    // by path: KServe v2 (/v2/models/...), OpenAI (/v1/completions,
            // /v1/chat/completions), anything else plain HTTP
  kKServe,  // KServe v2 / Triton
  kOpenAI,  // OpenAI-compatible (vLLM, TGI)
  kHttp,    // any HTTP/JSON API
};

// "auto", "kserve", "openai", "http": the names the configuration uses.
std::string_view RouteProtocolName(RouteProtocol protocol);

// One route: requests whose path starts with `prefix` go to `upstreams`.
struct RouteConfig {
  // The `route` label. Default: the prefix. Unique within the configuration.
  std::string name;
  // Required. A URL path prefix starting with '/'; unique within the configuration. See
  // MatchRoute() for how it matches.
  std::string prefix;
  // Default: kAuto.
  RouteProtocol protocol = RouteProtocol::kAuto;
  // 1 to kMaxUpstreamsPerRoute distinct endpoints with a port of 1-65535; required unless
  // `local_backend`.
  std::vector<HostPort> upstreams;
  // `backend: local`: the route is served by the built-in model backend (GatewayConfig::models),
  // not proxied. It speaks KServe v2: /v2/models/{name}[/versions/{v}]/infer. No upstreams.
  bool local_backend = false;
  // The `model` label. Empty (the default) means: the model name from the KServe path
  // (/v2/models/{model}/...) when the request has one, else the route name.
  std::string model;
  // The `version` label. Empty (the default) means: the version from the KServe path
  // (/v2/models/{model}/versions/{version}/...) when the request has one, else "default".
  std::string version;
  // Overrides GatewayConfig::timeouts.request for this route; positive. Default: unset.
  std::optional<Duration> request_timeout;
  // When not empty, replaces the matched prefix before forwarding (see RewritePath()); starts
  // with '/'. Default: empty, the path is forwarded unchanged.
  std::string rewrite_prefix;
};

// OTLP/HTTP (JSON) trace export: the `tracing:` block fills the exporter's own options. YAML
// `otlp_endpoint` is OtlpOptions::endpoint, empty (the default) when tracing export is off;
// `service_name`, `headers`, `queue_capacity`, `max_batch`, `flush_interval` and `timeout` keep
// their names and defaults. The retry settings are not configurable and keep their defaults.
using TracingConfig = OtlpOptions;

// What the control plane (server/control_plane.h) is built from: the analysis loop's period
// and rules, the API's token and names, tracing, the store and delivery. The gateway's
// configuration has all of it (GatewayConfig derives from it); a control plane without a
// gateway (`tailguard watch`, an embedding server) is configured with this alone.
struct ControlPlaneConfig {
  // Period of the analysis loop. 100 ms to 1 min; default 1 s.
  Duration tick = std::chrono::seconds(1);
  // The alert rule file (docs/alerting.md). LoadGatewayConfig() resolves a relative path
  // against the configuration file's directory. Default: empty, the built-in default rules.
  std::string rules_file;
  // Bearer token that mutating API calls must present. From `api_token`, or read from
  // `api_token_file` by LoadGatewayConfig() with its trailing newline stripped. Never log it.
  std::string api_token;
  // `api_token_file` as written (ParseGatewayConfig) or resolved (LoadGatewayConfig); empty
  // when the file has none. ParseGatewayConfig() does not read it.
  std::string api_token_file;
  TracingConfig tracing;

  // The SQLite event store (docs/store.md): alert transitions, notifications and their delivery
  // outbox, silences, acknowledgements and the alert engine's state, so a restart neither
  // re-fires nor forgets an alert and resumes pending deliveries.
  struct Store {
    // The database file. LoadGatewayConfig() resolves a relative path against the configuration
    // file's directory. "" keeps alerts in memory only: nothing survives a restart and nothing is
    // delivered to receivers. Default "tailguard.db".
    std::string path = "tailguard.db";
    // Ended alerts are archived this long after they ended; 0 never. Default 7 days.
    Duration archive_after = std::chrono::hours(24 * 7);
    // How long the per-minute series history (points and heatmap rows) is kept; older minutes
    // are pruned about once an hour. 1h to kMaxHistoryRetention; default 35 days.
    Duration history_retention = std::chrono::hours(24 * 35);
  } store;

  // How notifications are delivered (docs/notifications.md). All positive.
  struct Delivery {
    Duration initial_backoff = std::chrono::seconds(1);  // the first retry's wait
    Duration max_backoff = std::chrono::minutes(5);      // waits double up to this
    Duration give_up_after = std::chrono::hours(24);     // then a message is marked failed
  } delivery;

  // The gateway's address as people reach it, for the links in alert messages, e.g.
  // "https://tailguard.example.com". Default: http://<listen>.
  std::string external_url;

  // Host names the API (/api/...) answers to, besides IP addresses, "localhost", this
  // machine's host name and external_url's host: what a browser's Host header may say. A web
  // page on another name (DNS rebinding) is refused. Requests with the API token are let through
  // whatever their Host. Default: none. Names only ("tailguard.internal"), without a port.
  std::vector<std::string> allowed_hosts;
};

// The whole file. Every field has the documented default when the file leaves it out.
struct GatewayConfig : ControlPlaneConfig {
  // Where the gateway listens. Port 0 picks a free port. Default 127.0.0.1:8080 (this machine
  // only; "0.0.0.0:8080" listens on every interface).
  HostPort listen{"127.0.0.1", 8080};
  // I/O threads; 0 (the default) means one per core. 0 to 1024.
  int threads = 0;

  struct Limits {
    // Largest request body accepted; larger requests get 413. Default 16 MiB; at most 4 GiB.
    size_t max_body_bytes = size_t{16} << 20;
    // Largest request header block accepted; larger requests get 431. Default 16 KiB; at most
    // 1 MiB.
    size_t max_header_bytes = size_t{16} << 10;
    // Open client connections. Past it, kAdminConnections more are accepted for /healthz,
    // /readyz and /metrics only (others get 503); past those, a connection gets a 503 and is
    // closed. Default 10000; at most 1048576.
    size_t max_connections = 10000;
    // Open connections from one client address; more get a 503 and are closed, so one client
    // (a slowloris) cannot hold every slot. 0 turns the limit off (behind a load balancer or a
    // sidecar that is the only client, say). Default 1000; at most max_connections.
    size_t max_connections_per_client = 1000;
    // Idle keep-alive connections kept per upstream endpoint. Default 64; at most 65536.
    size_t max_upstream_idle_per_host = 64;
  } limits;

  // All positive.
  struct Timeouts {
    Duration connect = std::chrono::seconds(1);    // connecting to an upstream
    Duration request = std::chrono::seconds(30);   // a whole upstream request (see RouteConfig)
    Duration idle = std::chrono::seconds(60);      // an idle client keep-alive connection
    // A request's header, from its first byte: a client that sends it slower is answered 408 and
    // closed. A new connection's first byte is awaited this long too (or `idle`, if shorter).
    Duration header = std::chrono::seconds(10);
    Duration shutdown = std::chrono::seconds(10);  // draining in-flight requests on stop
  } timeouts;

  // Passive health checks per upstream endpoint, as nginx's max_fails / fail_timeout: after
  // `max_fails` failures within `fail_timeout` the endpoint is skipped for `fail_timeout`.
  struct Health {
    int max_fails = 3;                                 // 0 turns the checks off; at most 1000
    Duration fail_timeout = std::chrono::seconds(10);  // positive
  } health;

  // Serve the dashboard at / and /assets/ (before the routes). false gives those paths to the
  // routes, for a catch-all route in front of an application that uses them. Default true.
  bool dashboard = true;

  // At least one, at most kMaxRoutes.
  std::vector<RouteConfig> routes;

  // The TorchScript models the built-in backend serves on `backend: local` routes
  // (docs/model-backend.md). LoadGatewayConfig() resolves relative version paths against the
  // configuration file's directory. Default: none.
  std::vector<model::ModelConfig> models;
  // Threads each model operator may use (LibTorch's intra-op setting, process-wide). 1 to 256;
  // default 1.
  int model_threads = 1;

  // Where models with `features:` look their feature vectors up.
  struct FeatureStore {
    // "" (the default): an in-process store, filled by the demo or through the C++ API.
    // "host:port": a Redis server, values stored as little-endian float32 (docs/feature-store.md).
    std::string redis;
    std::string key_prefix = "tg:features:";            // Redis only: prepended to every key
    Duration timeout = std::chrono::milliseconds(100);  // Redis only: per command; positive
  } feature_store;
};

// What the parser accepts at most.
inline constexpr size_t kMaxConfigBytes = size_t{4} << 20;
// Connections past limits.max_connections kept for /healthz, /readyz and /metrics, so that a
// gateway at its cap can still be checked and scraped.
inline constexpr size_t kAdminConnections = 32;
inline constexpr size_t kMaxRoutes = 1000;
inline constexpr size_t kMaxUpstreamsPerRoute = 64;
inline constexpr Duration kMaxHistoryRetention = std::chrono::hours(24 * 3650);

// Parses and validates a configuration. `file_name` is only used in messages. Never throws.
// InvalidArgument "file:line: field.path: problem" (with how to fix it) for malformed YAML,
// unknown fields, wrong types and anything outside the ranges documented above. Does not read
// `rules_file` or `api_token_file`.
absl::StatusOr<GatewayConfig> ParseGatewayConfig(std::string_view yaml,
                                                 std::string_view file_name = "<config>");

// Reads and parses the file at `path`, then resolves `rules_file` and `api_token_file`
// against the file's directory, checks that the rule file can be opened, and reads the token.
// NotFound when the configuration, rule or token file cannot be read; otherwise as
// ParseGatewayConfig().
absl::StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path);

// The route for a request path: the one with the longest matching prefix, nullptr when none
// matches. A prefix matches a path that starts with it at a segment boundary: the path equals
// it, continues with '/' or '?', or the prefix ends with '/'. So "/v1" matches "/v1" and
// "/v1/x" but not "/v10", while "/v1/" matches "/v1/x" but not "/v1". Does not allocate.
// The result points into `config.routes`.
const RouteConfig* MatchRoute(const GatewayConfig& config, std::string_view path);

// The request target to send upstream for `target` (a path, possibly with "?query") matched by
// `route`: unchanged when `route.rewrite_prefix` is empty, otherwise the matched prefix
// replaced with it, joined with exactly one '/' ("/fraud/v1/predict" with prefix "/fraud" and
// rewrite_prefix "/" becomes "/v1/predict"). REQUIRES: MatchRoute() chose `route` for `target`.
std::string RewritePath(const RouteConfig& route, std::string_view target);

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_GATEWAY_CONFIG_H_
