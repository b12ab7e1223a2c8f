// Fuzzes ParseGatewayConfig and ParseHostPort: arbitrary YAML never crashes the parser or
// escapes as an exception, and whatever it accepts keeps the documented invariants.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/gateway_config.h"

namespace {

using tailguard::Duration;
using namespace tailguard::server;

void Check(bool ok) {
  if (!ok) std::abort();
}

// Printing an endpoint and parsing it again gives it back.
void CheckRoundTrip(const HostPort& hp) {
  absl::StatusOr<HostPort> again = ParseHostPort(hp.ToString());
  Check(again.ok() && *again == hp);
}

void CheckConfig(const GatewayConfig& c) {
  CheckRoundTrip(c.listen);
  Check(c.threads >= 0 && c.threads <= 1024);
  Check(c.limits.max_body_bytes > 0 && c.limits.max_header_bytes > 0);
  Check(c.limits.max_connections > 0 && c.limits.max_upstream_idle_per_host > 0);
  for (Duration d : {c.timeouts.connect, c.timeouts.request, c.timeouts.idle, c.timeouts.shutdown,
                     c.health.fail_timeout, c.tracing.flush_interval, c.tracing.timeout}) {
    Check(d > Duration::zero());
  }
  Check(c.tick >= std::chrono::milliseconds(100) && c.tick <= std::chrono::minutes(1));
  Check(c.tracing.max_batch >= 1 && c.tracing.max_batch <= c.tracing.queue_capacity);
  Check(!c.routes.empty() && c.routes.size() <= kMaxRoutes);
  for (const RouteConfig& r : c.routes) {
    Check(!r.name.empty() && !r.prefix.empty() && r.prefix.front() == '/');
    Check(!r.upstreams.empty() && r.upstreams.size() <= kMaxUpstreamsPerRoute);
    for (const HostPort& hp : r.upstreams) {
      Check(hp.port != 0);
      CheckRoundTrip(hp);
    }
    Check(!r.request_timeout || *r.request_timeout > Duration::zero());
    // A route's own prefix finds a route at least as specific, and rewriting it works.
    const RouteConfig* m = MatchRoute(c, r.prefix);
    Check(m != nullptr && m->prefix.size() >= r.prefix.size());
    const std::string path = r.prefix + (r.prefix.ends_with('/') ? "x/y?z" : "/x/y?z");
    m = MatchRoute(c, path);
    Check(m != nullptr && path.starts_with(m->prefix));
    const std::string rewritten = RewritePath(*m, path);
    Check(m->rewrite_prefix.empty() ? rewritten == path : rewritten.starts_with('/'));
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  if (absl::StatusOr<HostPort> hp = ParseHostPort(text); hp.ok()) CheckRoundTrip(*hp);
  absl::StatusOr<GatewayConfig> config = ParseGatewayConfig(text, "fuzz.yaml");
  if (config.ok()) {
    CheckConfig(*config);
  } else {
    Check(config.status().code() == absl::StatusCode::kInvalidArgument);
    Check(std::string(config.status().message()).starts_with("fuzz.yaml"));
  }
  return 0;
}
