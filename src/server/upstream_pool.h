// The upstream side of the proxy, one per worker: its idle connections to each upstream, the
// round-robin choice among a route's upstreams (skipping those the passive health check has
// marked down), and the exchange itself: the request sent, interim answers read past, the final
// answer's header read, with the retries that are safe. The body is the relay's business
// (gateway.cc). A failed try counts against its upstream's passive health at once, here, as the
// pool moves on; the health filter (server/health_filter.h) refuses requests while every upstream
// is down, and counts answers and answers that broke off. Internal to src/server: it includes
// Beast.
#ifndef TAILGUARD_SERVER_UPSTREAM_POOL_H_
#define TAILGUARD_SERVER_UPSTREAM_POOL_H_

#include <atomic>
#include <cstddef>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "absl/container/inlined_vector.h"
#include "server/filter.h"
#include "server/gateway_config.h"
#include "server/http_wire.h"
#include "server/stats.h"
#include "tailguard/clock.h"

namespace tailguard::server {

// A connection to an upstream server, owned by one worker.
struct UpstreamConn {
  explicit UpstreamConn(net::io_context& ioc) : stream(ioc) {}
  Stream stream;
  beast::flat_buffer buffer;
  std::string head;  // the serialized request header being written (reused)
};

// What every worker's pool shares; owned by the gateway, which outlives the pools.
struct UpstreamShared {
  const Clock* clock = nullptr;
  const GatewayConfig* config = nullptr;
  GatewayCounters* counters = nullptr;
  const std::vector<std::unique_ptr<UpstreamState>>* upstreams = nullptr;
  const std::vector<net::ip::tcp::endpoint>* endpoints = nullptr;  // parallel to upstreams
  const std::atomic<bool>* draining = nullptr;                     // no connection pooled then
};

// The result of UpstreamPool::Exchange().
struct UpstreamExchange {
  // On an answer: the connection it came on, and the parser holding its final header.
  std::unique_ptr<UpstreamConn> conn;
  std::optional<http::response_parser<http::empty_body>> header;
  // Which upstream answered, or was tried last; SIZE_MAX when none was tried.
  size_t upstream = SIZE_MAX;
  // Without an answer: why (kDown: every upstream was down and none due for a probe), the last
  // I/O error, and, for an answer that parsed but cannot be relayed, what was wrong with it.
  UpstreamError error = UpstreamError::kConnect;
  beast::error_code ec;
  std::string bad_answer;
  // The tries that failed, in order. Inline: a request tries one upstream, or a few.
  absl::InlinedVector<UpstreamAttempt, 4> failures;
  // When the request last went out (zero when it never did), and when the header was in.
  MonoTime sent{};
  MonoTime answered{};
};

class UpstreamPool {
 public:
  // `first`: where this worker's round robin starts on every route (the worker's index, so that
  // the workers do not all begin with the same upstream).
  UpstreamPool(net::io_context& ioc, const UpstreamShared& shared, size_t routes, size_t first);
  UpstreamPool(const UpstreamPool&) = delete;
  UpstreamPool& operator=(const UpstreamPool&) = delete;

  // Sends `req` (ready to go: hop-by-hop fields stripped, payload prepared) to one of
  // `upstreams` (route `route`'s, indexes into UpstreamShared::upstreams) and reads the final
  // answer's header, by `deadline`. `head`: the request is a HEAD (its answer has no body).
  //
  // Connect failures move on to the next upstream (nothing was sent). A reused connection that
  // turns out closed before any answer is retried once on a fresh one, for an idempotent
  // request (RFC 9110 9.2.2: GET, HEAD, PUT, DELETE, OPTIONS, TRACE), or for any request when
  // nothing of it was sent. A POST the upstream may have received is never sent twice, as with
  // nginx: instead, a pooled connection is looked at before a non-idempotent request goes on it,
  // and one the upstream closed while idle is dropped unused. Nothing else is retried.
  awaitable<void> Exchange(size_t route, std::span<const size_t> upstreams,
                           http::request<http::string_body>& req, bool head, MonoTime deadline,
                           UpstreamExchange& out);

  // Takes back the connection of a complete answer, for the next request to upstream `u`;
  // closes it instead when it cannot be reused.
  void Release(size_t u, std::unique_ptr<UpstreamConn> conn);
  // Closes every idle connection (the gateway is draining).
  void CloseIdle();

 private:
  size_t Pick(size_t route, std::span<const size_t> upstreams);
  // A new connection to upstream `u`. Null with `ec` set on failure.
  awaitable<std::unique_ptr<UpstreamConn>> Connect(size_t u, MonoTime deadline,
                                                   beast::error_code& ec);
  // Whether an idle pooled connection is still open, looked at without waiting.
  bool StillOpen(UpstreamConn& conn);

  net::io_context& ioc_;
  const UpstreamShared shared_;
  std::vector<size_t> rr_;                                        // round-robin position per route
  std::vector<std::vector<std::unique_ptr<UpstreamConn>>> idle_;  // per upstream
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_UPSTREAM_POOL_H_
