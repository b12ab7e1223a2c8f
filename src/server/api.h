// The gateway's own endpoints: /metrics, /healthz, /readyz and the JSON API under /api/v1/.
// Plain functions of a request to a response, with no networking, so they are tested directly
// and run on the control thread, off the data path.
#ifndef TAILGUARD_SERVER_API_H_
#define TAILGUARD_SERVER_API_H_

#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "metrics/collector.h"
#include "server/live_loop.h"
#include "server/stats.h"
#include "tailguard/registry.h"

namespace tailguard::notify {
class AlertJournal;
class DeliveryWorker;
}  // namespace tailguard::notify
namespace tailguard::store {
class EventStore;
}  // namespace tailguard::store
namespace tailguard::model {
class ModelBackend;
}  // namespace tailguard::model

namespace tailguard::server {

class OtlpExporter;

struct ApiRequest {
  std::string_view method;         // "GET", ...
  std::string_view target;         // path and query, e.g. "/api/v1/events?limit=10"
  std::string_view accept;         // the Accept header
  std::string_view authorization;  // the Authorization header, for mutating calls
  std::string_view body;           // POST bodies (JSON)
  std::string_view content_type;   // the Content-Type header of a POST
  std::string_view origin;         // the Origin header (browsers send it on cross-site requests)
  std::string_view host;           // the Host header
};

struct ApiResponse {
  int status = 200;
  std::string content_type = "application/json";
  std::string body;
};

// The host of a Host header, lower-cased, without its port or an IPv6 address's brackets:
// "Tailguard:8080" -> "tailguard", "[::1]:80" -> "::1".
std::string HostOfHeader(std::string_view host);

// A JSON error body: {"error": {"code": "...", "message": "..."}}.
std::string ErrorJson(std::string_view code, std::string_view message);

// What the endpoints read. Pointers are borrowed; they must outlive the Api.
struct ApiSources {
  Registry* registry = nullptr;
  LiveLoop* loop = nullptr;
  const GatewayCounters* counters = nullptr;
  RouteCounterTable* routes = nullptr;
  std::vector<const UpstreamState*> upstreams;
  const OtlpExporter* otlp = nullptr;  // may be null
  // The alert pipeline's journal, delivery worker and store; all null without store.path.
  const notify::AlertJournal* journal = nullptr;
  const notify::DeliveryWorker* delivery = nullptr;
  store::EventStore* store = nullptr;
  // The built-in model backend; null without models. POST /api/v1/models/{name}/default
  // switches its default version.
  model::ModelBackend* backend = nullptr;
  // The bearer token mutating calls must present; "" refuses every mutating call (403,
  // saying how to set a token).
  std::string api_token;
  // Host names (lower case, no port) the API answers to besides IP addresses and "localhost":
  // the gateway's external_url host, this machine's name, allowed_hosts. Requests with the API
  // token are answered whatever their Host.
  std::vector<std::string> allowed_hosts;
  // False while starting or draining: /readyz answers 503.
  std::function<bool()> ready;
  // For /api/v1/info: when the gateway started and how long the store keeps history.
  WallTime started_at{};
  Duration history_retention{};
  // More subsystems' metrics for /metrics, after the gateway's own and before the process
  // metrics, in this order (a mitigation, a signal collector). Borrowed: must outlive the Api.
  std::vector<const metrics::Collector*> collectors;
  // What /readyz reads upstream health at; nullptr: Clock::Real().
  const Clock* clock = nullptr;
};

class Api {
 public:
  explicit Api(ApiSources sources);

  // True for the paths this class answers: /metrics, /healthz, /readyz and /api/... .
  static bool Handles(std::string_view path);

  ApiResponse Handle(const ApiRequest& request) const;

  // The /metrics page. With `openmetrics`, OpenMetrics 1.0 text (ends with "# EOF");
  // otherwise Prometheus text format 0.0.4.
  std::string Metrics(bool openmetrics) const;

 private:
  ApiResponse Series(std::string_view query) const;
  ApiResponse History(std::string_view id, std::string_view query) const;
  ApiResponse Heatmap(std::string_view id, std::string_view query) const;
  ApiResponse Info() const;
  ApiResponse Alerts(std::string_view query) const;
  ApiResponse Ack(std::string_view id, const ApiRequest& request) const;
  ApiResponse Diagnosis(std::string_view id) const;
  ApiResponse Silences(std::string_view method, std::string_view id,
                       const ApiRequest& request) const;
  ApiResponse Events(std::string_view query) const;
  ApiResponse Samples(std::string_view query) const;
  // Nothing when the mutating `request` may go ahead; otherwise the answer refusing it, saying
  // what `action` needs: 403 for a cross-site request (an Origin that is not this gateway, so a
  // web page cannot act with the browser of someone on call), 403 when no API token is
  // configured, 401 without the token, 415 for a body not declared JSON when `json_body`.
  std::optional<ApiResponse> Refused(const ApiRequest& request, std::string_view action,
                                     bool json_body) const;
  ApiResponse Ready() const;
  // Whether `request` carries the API token.
  bool HasToken(const ApiRequest& request) const;
  // Whether a browser that sends `host` reached this gateway by a name it answers to (not a web
  // page's name pointed at it: DNS rebinding).
  bool HostAllowed(std::string_view host) const;
  ApiResponse Models(std::string_view method, std::string_view path, std::string_view query,
                     const ApiRequest& request) const;

  ApiSources s_;
  // What /metrics renders after the registry's histograms, in order; owned_ holds those the Api
  // made for the gateway's subsystems.
  std::vector<const metrics::Collector*> collectors_;
  std::vector<std::unique_ptr<metrics::Collector>> owned_;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_API_H_
