// The gateway: an HTTP/1.1 reverse proxy that measures every request it forwards, serves
// /metrics and the JSON API, exports sampled requests as OTLP spans and runs the live analysis
// loop. Boost.Beast stays inside gateway.cc; this header does not include it.
#ifndef TAILGUARD_SERVER_GATEWAY_H_
#define TAILGUARD_SERVER_GATEWAY_H_

#include <cstdio>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "server/gateway_config.h"
#include "server/live_loop.h"
#include "server/stats.h"
#include "tailguard/alert.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::store {
class FeatureStore;
}  // namespace tailguard::store
namespace tailguard::model {
class ModelBackend;
}  // namespace tailguard::model

namespace tailguard::server {

struct DashboardAsset;
class RequestFilter;

// A request filter added to a route's chain, after the passive health check (server/filter.h).
struct RouteFilter {
  std::string route;               // the route's name
  RequestFilter* filter = nullptr;  // borrowed, must outlive the gateway
};

struct GatewayOptions {
  GatewayConfig config;
  AlertConfig rules;  // what the live loop evaluates
  // Where startup, shutdown, alert transitions and notifications are logged; nullptr for none.
  std::FILE* log = stderr;
  // Run the live loop on its own thread every config.tick (the default). Tests turn it off and
  // call loop().Tick() themselves.
  bool run_loop = true;
  // The feature store models with `features:` read; borrowed, must outlive the gateway. nullptr
  // (the default): the one config.feature_store describes.
  store::FeatureStore* feature_store = nullptr;
  // The dashboard served at / and /assets/ (see server/dashboard.h; the tailguard binary passes
  // DashboardAssets()). Empty (the default): those paths go to the routes like any other.
  std::span<const DashboardAsset> dashboard;
  // What the gateway measures latencies with, and what passive health, the live loop and
  // delivery read; borrowed, must outlive the gateway. nullptr (the default): Clock::Real().
  // Sockets still wait in real time, for the durations this clock computes: a test that
  // advances a FakeClock sees health, probes and timings move, and its connections unchanged.
  const Clock* clock = nullptr;
  // Filters added to routes' chains, in the order given (each after the route's own). A route
  // name that no route has is refused by Create().
  std::vector<RouteFilter> filters;
  // Sample the hardware quadrant's signals (collect/host_signals.h) into the registry. Default
  // off; `serve` and `demo` turn it on.
  bool host_signals = false;
};

// Threads: config.threads workers, each running its own event loop with its own upstream
// connection pools (a connection and everything about it stays on one thread); one control
// thread for /metrics and the API, so they never hold up a proxied request; the live loop's
// thread; and the OTLP exporter's.
class Gateway {
 public:
  // Resolves the upstreams and binds the listening socket (port 0 picks a free port).
  // InvalidArgument for a configuration the gateway cannot use (an upstream that does not
  // resolve, bad rules); Unavailable when the address cannot be bound.
  static absl::StatusOr<std::unique_ptr<Gateway>> Create(GatewayOptions options);
  ~Gateway();
  Gateway(const Gateway&) = delete;
  Gateway& operator=(const Gateway&) = delete;

  // The address actually bound.
  HostPort endpoint() const;

  // Starts the threads and begins accepting. Returns at once.
  void Start();

  // Graceful shutdown: stops accepting, fails /readyz, lets in-flight requests finish and
  // closes idle connections, waiting at most config.timeouts.shutdown; then stops every
  // thread and flushes the span exporter. Idempotent; the destructor calls it.
  void Shutdown();

  Registry& registry();
  LiveLoop& loop();
  const GatewayCounters& counters() const;
  // The built-in model backend; nullptr without models.
  model::ModelBackend* backend();

  // Implementation detail, public only for gateway.cc's helpers.
  struct Impl;

 private:
  explicit Gateway(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_GATEWAY_H_
