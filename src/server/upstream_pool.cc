#include "server/upstream_pool.h"

#include <sys/socket.h>

#include <algorithm>
#include <cerrno>

#include "common/strings.h"

namespace tailguard::server {
namespace {

// The time left until `deadline` on the gateway's clock, for a socket's timer: sockets wait in
// real time, for as long as the (possibly simulated) clock says is left.
Duration Until(const Clock& clock, MonoTime deadline) {
  return std::max(Duration::zero(), Duration(deadline - clock.MonotonicNow()));
}

}  // namespace

UpstreamPool::UpstreamPool(net::io_context& ioc, const UpstreamShared& shared, size_t routes,
                           size_t first)
    : ioc_(ioc), shared_(shared), rr_(routes, first), idle_(shared.upstreams->size()) {}

void UpstreamPool::CloseIdle() {
  for (auto& pool : idle_) pool.clear();
}

size_t UpstreamPool::Pick(size_t route, std::span<const size_t> ups) {
  const auto& all = *shared_.upstreams;
  const MonoTime now = shared_.clock->MonotonicNow();
  for (size_t i = 0; i < ups.size(); ++i) {
    const size_t u = ups[rr_[route]++ % ups.size()];
    if (all[u]->Available(now)) return u;
  }
  // Every upstream is marked down: one request a probe interval tries one anyway (as nginx
  // does), so that recovery is noticed; the others are answered at once, without a connect.
  for (size_t i = 0; i < ups.size(); ++i) {
    const size_t u = ups[rr_[route]++ % ups.size()];
    if (all[u]->TryProbe(now)) return u;
  }
  return SIZE_MAX;
}

awaitable<std::unique_ptr<UpstreamConn>> UpstreamPool::Connect(size_t u, MonoTime deadline,
                                                              beast::error_code& ec) {
  // A new connection: Exchange() takes idle ones itself. An idle connection the upstream has
  // closed in the meantime fails at once and is retried on a new one (see Exchange), which is
  // cheaper than probing every connection before use.
  auto conn = std::make_unique<UpstreamConn>(ioc_);
  const Clock& clock = *shared_.clock;
  conn->stream.expires_after(std::min(Until(clock, deadline), shared_.config->timeouts.connect));
  co_await conn->stream.async_connect((*shared_.endpoints)[u], Token(ec));
  if (ec) co_return nullptr;
  // An upstream port in the ephemeral range on this host, with nothing listening, can be
  // "connected" to by a TCP simultaneous open of the socket with itself: it would then hold the
  // port the upstream restarts on. Such a connection is refused, and closed at once.
  {
    beast::error_code local_ec, remote_ec;
    const net::ip::tcp::endpoint local = conn->stream.socket().local_endpoint(local_ec);
    const net::ip::tcp::endpoint remote = conn->stream.socket().remote_endpoint(remote_ec);
    if (!local_ec && !remote_ec && local == remote) {
      Add(shared_.counters->self_connections);
      // Aborted (RST), not closed: a close would leave it in TIME_WAIT on the port, which
      // would keep the upstream from binding it for a minute all the same.
      beast::error_code ignored;
      conn->stream.socket().set_option(net::socket_base::linger(true, 0), ignored);
      conn->stream.socket().close(ignored);
      ec = net::error::connection_refused;
      co_return nullptr;
    }
  }
  conn->stream.socket().set_option(net::ip::tcp::no_delay(true), ec);
  conn->stream.socket().non_blocking(true, ec);  // for TrySend()
  conn->stream.EnableDrainedReads();
  ec = {};
  co_return conn;
}

bool UpstreamPool::StillOpen(UpstreamConn& conn) {
  // One non-blocking look: EAGAIN is an open, quiet connection; 0 bytes (a FIN), an error, or
  // bytes nobody asked for all mean it must not carry a request.
  char byte;
  const ssize_t n = ::recv(conn.stream.socket().native_handle(), &byte, 1, MSG_PEEK | MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) return true;
  Add(shared_.counters->stale_connections_dropped);
  return false;
}

void UpstreamPool::Release(size_t u, std::unique_ptr<UpstreamConn> conn) {
  if (shared_.draining->load(std::memory_order_relaxed)) return;
  // Bytes after the answer (a body sent to HEAD, a 204 or a 304; anything unasked for): the
  // connection is out of step, and its next answer would be these bytes. Closed, not pooled.
  if (conn->buffer.size() != 0) return;
  if (idle_[u].size() >= shared_.config->limits.max_upstream_idle_per_host) return;
  ShrinkAfterBody(conn->buffer);
  conn->stream.expires_never();
  idle_[u].push_back(std::move(conn));
}

awaitable<void> UpstreamPool::Exchange(size_t route, std::span<const size_t> upstreams,
                                       http::request<http::string_body>& req, bool head,
                                       MonoTime deadline, UpstreamExchange& x) {
  const Clock& clock = *shared_.clock;
  std::unique_ptr<UpstreamConn>& conn = x.conn;
  std::optional<http::response_parser<http::empty_body>>& header = x.header;
  beast::error_code& ec = x.ec;
  x.error = UpstreamError::kConnect;
  const bool idempotent = IsIdempotent(req.method());
  size_t connect_attempts = 0;
  bool retried_stale = false;
  bool same_upstream = false;
  // A failed try counts against its upstream at once, before the next try or any answer: other
  // requests must stop picking a dead upstream now, not when this one ends (an answer from
  // another upstream can take seconds), and this request's own next Pick() must see it.
  const auto fail = [this, &x, &clock](UpstreamError e) {
    x.error = e;
    const MonoTime now = clock.MonotonicNow();
    (*shared_.upstreams)[x.upstream]->Failure(e, now);
    x.failures.push_back({x.upstream, e, now});
  };
  for (;;) {
    const size_t u = same_upstream ? x.upstream : Pick(route, upstreams);
    same_upstream = false;
    if (u == SIZE_MAX) {
      // Every upstream is down and none is due for a probe: a 502 at once (with the last
      // connect error, if this request tried one).
      if (connect_attempts == 0) x.error = UpstreamError::kDown;
      break;
    }
    x.upstream = u;
    UpstreamState& up = *(*shared_.upstreams)[u];
    bool reused = false;
    ec = {};
    // An idle connection is taken here, without Connect()'s coroutine frame: the usual case.
    // Not for the retry after a stale one: the upstream may have restarted and closed them all.
    for (auto& pool = idle_[u]; !conn && !pool.empty() && !retried_stale;) {
      conn = std::move(pool.back());
      pool.pop_back();
      if (!idempotent && !StillOpen(*conn)) conn.reset();
      reused = conn != nullptr;
    }
    if (!conn) conn = co_await Connect(u, deadline, ec);
    if (!conn) {
      fail(ec == beast::error::timeout ? UpstreamError::kTimeout : UpstreamError::kConnect);
      if (++connect_attempts < upstreams.size() && clock.MonotonicNow() < deadline) continue;
      break;
    }
    Add(up.requests);
    x.sent = clock.MonotonicNow();
    conn->stream.expires_after(Until(clock, deadline));
    // Neither message is chunked (Transfer-Encoding is stripped as hop-by-hop), so the header
    // and the body go out as they are, in one gather write.
    SerializeHead(req, conn->head);
    // The first send failed outright: no byte of the request left (retried even if a POST).
    bool nothing_sent = false;
    {
      const std::array<net::const_buffer, 2> out{net::buffer(conn->head), net::buffer(req.body())};
      const size_t sent = TrySend(conn->stream, out, ec);
      nothing_sent = ec && sent == 0;
      if (!ec && sent < net::buffer_size(out)) {
        beast::buffers_suffix<std::array<net::const_buffer, 2>> rest(out);
        rest.consume(sent);
        co_await net::async_write(conn->stream, rest, Token(ec));
      }
    }
    int interim = 0;
    if (!ec) {
      const auto new_header = [&header, head] {
        header.emplace();
        header->header_limit(kMaxUpstreamHeaderBytes);
        header->body_limit(kMaxResponseBytes);
        if (head) header->skip(true);  // an answer to HEAD has no body, whatever its fields say
      };
      new_header();
      conn->stream.MarkNewMessage();  // the answer follows the request just sent
      co_await http::async_read_header(conn->stream, conn->buffer, *header, Token(ec));
      conn->stream.MarkNewMessage(false);
      // Interim answers (1xx, RFC 9110 15.2: 103 Early Hints, a 100 Continue nobody asked for)
      // come before the final one and have no body. Like nginx and Envoy, the gateway does not
      // relay them but reads past them: the final answer must not be left unread on a
      // connection that goes back to the pool.
      while (!ec && header->get().result_int() / 100 == 1 && header->get().result_int() != 101 &&
             interim < kMaxInterimAnswers) {
        ++interim;
        new_header();
        co_await http::async_read_header(conn->stream, conn->buffer, *header, Token(ec));
      }
    }
    if (!ec) {
      const unsigned code = header->get().result_int();
      if (code / 100 != 1) {
        x.answered = clock.MonotonicNow();
        co_return;
      }
      // A 101 switches protocols, which the gateway never asks for (Upgrade is stripped), and a
      // run of 1xx this long is no answer: the connection is in an unknown state, and dropped.
      if (code == 101) {
        x.bad_answer = "switched protocols (101) without being asked to";
      } else {
        x.bad_answer = Cat("sent more than ", std::to_string(kMaxInterimAnswers),
                           " interim (1xx) answers without a final one");
      }
      conn.reset();
      header.reset();
      fail(UpstreamError::kProtocol);
      break;
    }
    // A connection that has already answered (with a 1xx) is not stale: the upstream has the
    // request, and may have acted on it.
    const bool stale = reused && !retried_stale && interim == 0 && (idempotent || nothing_sent) &&
                       (ec == http::error::end_of_stream || ec == net::error::connection_reset ||
                        ec == net::error::broken_pipe || ec == net::error::eof);
    conn.reset();
    header.reset();
    if (stale) {
      retried_stale = true;
      same_upstream = true;
      continue;
    }
    fail(ec == beast::error::timeout ? UpstreamError::kTimeout
         : IsParseError(ec)          ? UpstreamError::kProtocol
                                     : UpstreamError::kReset);
    break;
  }
  x.answered = clock.MonotonicNow();
}

}  // namespace tailguard::server
