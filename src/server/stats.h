// Counters of the gateway, shared by the worker threads (which only add) and the /metrics page
// (which only reads). Every counter is a relaxed atomic: each is a self-contained number.
#ifndef TAILGUARD_SERVER_STATS_H_
#define TAILGUARD_SERVER_STATS_H_

#include <algorithm>
#include <array>
#include <atomic>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "absl/functional/function_ref.h"
#include "common/mutex.h"
#include "tailguard/clock.h"
#include "tailguard/registry.h"

namespace tailguard::server {

inline void Add(std::atomic<uint64_t>& c, uint64_t n = 1) {
  c.fetch_add(n, std::memory_order_relaxed);
}
inline uint64_t Load(const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); }

// Each request's body size in bytes, a value histogram with labels model, version, route.
inline constexpr std::string_view kRequestSizeMetric = "tailguard_request_size_bytes";

// Counters of one (model, version, route): requests by HTTP status, bytes, and samples exported.
struct RouteCounters {
  RouteCounters(RequestMetrics* m, Series* size) : metrics(m), request_size(size) {}

  RequestMetrics* const metrics;
  // kRequestSizeMetric of the route's labels: each request's body bytes; nullptr when the
  // registry refused it.
  Series* const request_size;
  // Indexed by status code; 0 holds codes outside [100, 599] and requests without an answer
  // (the client went away, or a stream broke after its header).
  std::array<std::atomic<uint64_t>, 600> by_code{};
  std::atomic<uint64_t> request_bytes{0};
  std::atomic<uint64_t> response_bytes{0};
  std::atomic<uint64_t> streamed_tokens{0};
  std::atomic<uint64_t> failed{0};  // 5xx, upstream errors and broken streams

  void CountStatus(int code) { Add(by_code[code >= 100 && code < 600 ? code : 0]); }
};

// Why the upstream exchange failed.
// kDown: not tried, every upstream of the route was down and none due for a probe.
enum class UpstreamError : uint8_t { kConnect, kTimeout, kReset, kProtocol, kDown };
inline constexpr int kUpstreamErrorKinds = 4;  // the kinds counted per upstream (not kDown)
inline const char* UpstreamErrorName(UpstreamError e) {
  switch (e) {
    case UpstreamError::kConnect:
      return "connect";
    case UpstreamError::kTimeout:
      return "timeout";
    case UpstreamError::kReset:
      return "reset";
    case UpstreamError::kProtocol:
      return "protocol";
    case UpstreamError::kDown:
      return "down";
  }
  return "unknown";
}

// One upstream server (host:port) with its passive health, shared by every route and worker
// that sends to it. The health filter (server/health_filter.h) counts failures and successes;
// the upstream pool reads Available() and TryProbe(). Passive health as nginx's max_fails /
// fail_timeout: after `max_fails` consecutive failures the upstream is skipped for `fail_timeout`,
// then tried again.
struct UpstreamState {
  UpstreamState(std::string host_, uint16_t port_, int max_fails_, Duration fail_timeout_)
      : host(std::move(host_)), port(port_), max_fails(max_fails_), fail_timeout(fail_timeout_) {}

  const std::string host;
  const uint16_t port;
  const int max_fails;  // 0: never taken out
  const Duration fail_timeout;
  std::string address() const { return host + ":" + std::to_string(port); }

  std::atomic<uint64_t> requests{0};
  std::array<std::atomic<uint64_t>, kUpstreamErrorKinds> errors{};
  std::atomic<uint32_t> consecutive_fails{0};
  std::atomic<int64_t> down_until_ns{0};  // monotonic; 0 when up
  // While every upstream of a route is down: the earliest time (monotonic) the next probe may
  // go. Relaxed, like the fields above: a hint shared by workers, exchanged with a CAS so that
  // one request, not one per worker, probes at a time.
  std::atomic<int64_t> next_probe_ns{0};
  std::atomic<uint64_t> probes_skipped{0};  // requests answered 502 at once, no connect tried

  // The first wait between probes of a down upstream; it doubles with every failed probe, up to
  // fail_timeout. 100 ms: a restart that takes a moment is noticed at once, and a dead upstream
  // costs 10 connects a second at first and one a fail_timeout soon after.
  static constexpr Duration kFirstProbeInterval = std::chrono::milliseconds(100);

  bool Available(MonoTime now) const {
    return down_until_ns.load(std::memory_order_relaxed) <= now.time_since_epoch().count();
  }
  // Whether a request may try this upstream although it is down: true for one caller per probe
  // interval.
  bool TryProbe(MonoTime now) {
    const int64_t t = now.time_since_epoch().count();
    int64_t next = next_probe_ns.load(std::memory_order_relaxed);
    if (t < next) return false;
    const uint32_t fails = consecutive_fails.load(std::memory_order_relaxed);
    const uint32_t failed_probes =
        fails > static_cast<uint32_t>(max_fails) ? fails - static_cast<uint32_t>(max_fails) : 0;
    const Duration interval =
        std::min(fail_timeout, kFirstProbeInterval * (int64_t{1} << std::min(failed_probes, 20u)));
    return next_probe_ns.compare_exchange_strong(next, t + interval.count(),
                                                 std::memory_order_relaxed);
  }
  // Whether TryProbe() would let a request through now, without taking the probe: the health
  // filter's look before a request goes on (the pool takes the probe).
  bool ProbeDue(MonoTime now) const {
    return now.time_since_epoch().count() >= next_probe_ns.load(std::memory_order_relaxed);
  }
  // When the next probe may go, for the message of a request refused without one.
  Duration UntilNextProbe(MonoTime now) const {
    return std::max(Duration::zero(), Duration(next_probe_ns.load(std::memory_order_relaxed) -
                                               now.time_since_epoch().count()));
  }
  // Called for every answer: it writes only what is not already clear, so that the answers of
  // a healthy upstream leave its cache line shared between the workers.
  void Success() {
    if (consecutive_fails.load(std::memory_order_relaxed) != 0) {
      consecutive_fails.store(0, std::memory_order_relaxed);
    }
    if (down_until_ns.load(std::memory_order_relaxed) != 0) {
      down_until_ns.store(0, std::memory_order_relaxed);
    }
    if (next_probe_ns.load(std::memory_order_relaxed) != 0) {
      next_probe_ns.store(0, std::memory_order_relaxed);
    }
  }
  void Failure(UpstreamError e, MonoTime now) {
    Add(errors[static_cast<size_t>(e)]);
    const uint32_t fails = consecutive_fails.fetch_add(1, std::memory_order_relaxed) + 1;
    if (max_fails > 0 && fails >= static_cast<uint32_t>(max_fails)) {
      down_until_ns.store((now + fail_timeout).time_since_epoch().count(),
                          std::memory_order_relaxed);
    }
  }
};

// Gateway-wide counters.
struct GatewayCounters {
  std::atomic<uint64_t> connections_accepted{0};
  // Connections refused with a 503: past limits.max_connections and the admin reserve, or
  // past limits.max_connections_per_client.
  std::atomic<uint64_t> connections_rejected{0};
  std::atomic<uint64_t> connections_rejected_per_client{0};
  std::atomic<int64_t> connections_active{0};
  std::atomic<int64_t> in_flight{0};
  // Requests answered by the gateway itself with an error before reaching a route, by reason.
  std::atomic<uint64_t> bad_request{0};         // 400: malformed HTTP or body
  std::atomic<uint64_t> not_found{0};           // 404: no route
  std::atomic<uint64_t> too_large{0};           // 413: body over limits.max_body_bytes
  std::atomic<uint64_t> header_too_large{0};    // 431: header over limits.max_header_bytes
  std::atomic<uint64_t> header_timeouts{0};     // 408: header slower than timeouts.header
  std::atomic<uint64_t> admin_only_refused{0};  // 503: a route asked for past max_connections
  // Upstream connections: idle ones found closed before a non-idempotent request was put on
  // them, and connects that reached the gateway's own socket (refused).
  std::atomic<uint64_t> stale_connections_dropped{0};
  std::atomic<uint64_t> self_connections{0};
  std::atomic<uint64_t> stage_series_dropped{0};  // Server-Timing names over the per-route cap
  std::atomic<uint64_t> label_overflow{0};        // (model, version) pairs over the per-route cap
  // Model names and versions from requests recorded as "other" instead: longer than
  // kMaxRequestLabelBytes, or with characters outside CheckRequestLabel()'s set.
  std::atomic<uint64_t> label_too_long{0};
  std::atomic<uint64_t> label_characters{0};
};

// Route counters by RequestMetrics; entries are created once and never removed, so a pointer
// handed out stays valid for the life of the table.
class RouteCounterTable {
 public:
  // The counters of `m`, made on first use with the request-size series `make_size()` gives.
  RouteCounters* Get(RequestMetrics* m, absl::FunctionRef<Series*()> make_size) {
    MutexLock lock(&mu_);
    for (auto& c : all_) {
      if (c->metrics == m) return c.get();
    }
    all_.push_back(std::make_unique<RouteCounters>(m, make_size()));
    return all_.back().get();
  }
  std::vector<RouteCounters*> All() const {
    MutexLock lock(&mu_);
    std::vector<RouteCounters*> out;
    for (auto& c : all_) out.push_back(c.get());
    return out;
  }

 private:
  mutable Mutex mu_;
  std::vector<std::unique_ptr<RouteCounters>> all_ ABSL_GUARDED_BY(mu_);
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_STATS_H_
