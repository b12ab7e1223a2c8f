// The gateway's data path: Boost.Beast on C++20 coroutines.
//
// Each worker thread owns an io_context, the client connections handed to it, and its own idle
// connections to each upstream, so a request is read, forwarded, answered and measured on one
// thread without locks. Only counters (relaxed atomics), the recorder (per-thread histograms),
// the sampler and the span queue are shared, and none of them waits for the control plane.
#include "server/gateway.h"

#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <future>
#include <list>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "common/format.h"
#include "common/mutex.h"
#include "common/strings.h"
#include "model/backend.h"
#include "server/api.h"
#include "server/control_plane.h"
#include "server/dashboard.h"
#include "server/filter.h"
#include "server/health_filter.h"
#include "server/http_wire.h"
#include "server/otlp.h"
#include "server/protocol.h"
#include "server/stream.h"
#include "server/upstream_pool.h"
#include "store/feature_store.h"

namespace tailguard::server {
namespace {

// Distinct (model, version) pairs per route before new ones are counted under model="other":
// model names come from request paths and bodies, and must not grow the series without bound.
constexpr size_t kMaxLabelSetsPerRoute = 64;
// Distinct Server-Timing names per route recorded as series of their own.
constexpr size_t kMaxStageNamesPerRoute = 16;
// Request bodies past this size yield the worker between the steps that take their time.
constexpr size_t kYieldBodyBytes = 256 * 1024;

int64_t UnixNanos(WallTime t) { return t.time_since_epoch().count(); }

// One route at run time.
struct RouteRuntime {
  const RouteConfig* config = nullptr;
  std::vector<size_t> upstreams;  // indexes into Impl::upstreams
  Duration request_timeout{};
  // Label sets seen so far (for the cap), guarded by Impl::labels_mu.
  std::vector<std::pair<std::string, std::string>> label_sets;
  // Server-Timing names with a series, guarded by Impl::labels_mu.
  std::vector<std::string> stage_names;
  // The route's request filters, in order; the passive health check first (null, and not in
  // the chain, on a local-model route, which has no upstream).
  std::unique_ptr<PassiveHealthFilter> health;
  FilterChain filters;
};

// What a request is recorded under.
struct Labeled {
  RequestMetrics* metrics = nullptr;
  RouteCounters* counters = nullptr;
};

class Worker;

// What a new client connection may do.
enum class Admission : uint8_t {
  kAccepted,
  kAdminOnly,      // past limits.max_connections: /healthz, /readyz and /metrics only
  kRefusedFull,    // past that too
  kRefusedClient,  // its address is at limits.max_connections_per_client
};

}  // namespace

struct Gateway::Impl {
  GatewayOptions options;
  const GatewayConfig& config() const { return options.config; }
  // Measurements, passive health, the live loop and delivery read this clock (GatewayOptions::
  // clock); sockets wait in real time, for the durations it computes.
  const Clock& clock;

  Registry registry;
  RouteCounterTable route_counters;
  GatewayCounters counters;
  std::vector<std::unique_ptr<UpstreamState>> upstreams;
  std::vector<tcp::endpoint> upstream_endpoints;  // parallel to upstreams
  UpstreamShared upstream_shared;                 // what the workers' pools read of the above
  std::unique_ptr<FilterChainCollector> filter_metrics;  // the routes' filter decisions
  std::vector<RouteRuntime> routes;                      // parallel to config().routes
  // Analysis, store, history, journal, delivery, OTLP and the API (server/control_plane.h).
  // Before the workers, which record into the registry it reads and export spans through it,
  // and are destroyed first.
  std::unique_ptr<ControlPlane> control_plane;
  OtlpExporter* otlp = nullptr;  // control_plane->otlp(), read by the workers
  // The built-in model backend and its feature store; null without models. Stopped in
  // Shutdown() before the workers, whose event loops its answers are posted to.
  std::unique_ptr<store::FeatureStore> owned_features;
  std::unique_ptr<model::ModelBackend> backend;

  std::mutex labels_mu;  // RouteRuntime::label_sets and stage_names

  // Connections open per client address, for limits.max_connections_per_client. A map
  // touched twice per connection, never per request. Before the workers, whose sessions leave
  // it as their frames are destroyed.
  Mutex clients_mu;  // common/mutex.h: TSan sees it, -Wthread-safety checks it
  absl::flat_hash_map<std::string, uint32_t> clients ABSL_GUARDED_BY(clients_mu);

  std::vector<std::unique_ptr<Worker>> workers;
  std::vector<std::thread> threads;
  net::thread_pool control{1};
  std::unique_ptr<net::io_context> accept_ioc;  // the acceptor's, run by a thread of its own
  std::unique_ptr<tcp::acceptor> acceptor;
  HostPort bound;

  std::atomic<bool> started{false};
  std::atomic<bool> draining{false};
  std::atomic<bool> stopped{false};
  std::atomic<size_t> next_worker{0};

  explicit Impl(GatewayOptions o)
      : options(std::move(o)),
        clock(options.clock != nullptr ? *options.clock : Clock::Real()),
        registry(clock, MakeRegistryOptions(options.config)) {}

  // The registry's bounds cover what the per-route caps allow (every label set of every route
  // with every stage and Server-Timing name), so a request is never refused its series.
  static RegistryOptions MakeRegistryOptions(const GatewayConfig& config) {
    RegistryOptions r;
    r.windows.slot = config.tick;
    const size_t per_route =
        (kMaxLabelSetsPerRoute + 1) *
        (static_cast<size_t>(kStageCount) + 2 + kMaxStageNamesPerRoute);  // + input and body size
    r.max_series = std::max(r.max_series, config.routes.size() * per_route + 1024);
    return r;
  }

  void Log(const std::string& line) const {
    if (options.log == nullptr) return;
    std::fprintf(options.log, "tailguard: %s\n", line.c_str());
    std::fflush(options.log);
  }

  // The (model, version) labels of a request on `route`, created on first use.
  Labeled Lookup(size_t route, std::string model, std::string version);
  // The series for Server-Timing name `name` (already sanitised) on `m`; nullptr over the cap.
  Series* StageSeries(size_t route, const RequestMetrics& m, const std::string& name);

  void Accept();

  // Counts a new client connection from `peer` (its address; "" when unknown) against the
  // limits, and says what it may do. Every call but a refusal is paired with Leave(peer).
  Admission Admit(const std::string& peer);
  void Leave(const std::string& peer);
};

namespace {

// A client connection, as the worker tracks it for draining.
struct SessionEntry {
  Stream* stream = nullptr;
  bool idle = true;  // waiting for the next request
};

// Everything measured about one proxied request.
struct Exchange {
  MonoTime start{};
  MonoTime upstream_start{}, upstream_end{};
  MonoTime last_token{};
  RequestRecord record;
  uint64_t events = 0;
  int status = 0;
  bool failed = false;         // the stream broke after its header (any 5xx counts as failed too)
  size_t upstream = SIZE_MAX;  // which upstream answered (or failed last)
  bool answered = false;       // `upstream` answered (its header came)
  std::string server_timing;   // the upstream's Server-Timing header
  std::vector<model::TimedStage> timings;  // the local backend's stages
  // The answer broke off after its header: why (for the health filter).
  std::optional<UpstreamError> broke;
  // The filter that answered or refused (SIZE_MAX: none), and its answer.
  size_t decided_by = SIZE_MAX;
  FilterAnswer answer;
  // A buffered answer, kept until the filters have seen how the request ended.
  http::response<http::string_body> response;
};

// The trace a request joins (the caller's, or a new one), the gateway's server span in it, and
// the span id of the gateway's call onward.
struct Tracing {
  std::optional<TraceContext> incoming;
  TraceContext trace;
  std::array<uint8_t, 8> client_span{};
};

Tracing StartTrace(const http::request<http::string_body>& req) {
  Tracing t;
  t.incoming = ParseTraceparent(View(FieldValue(req, "traceparent")));
  t.trace.trace_id = t.incoming ? t.incoming->trace_id : NewTraceId();
  t.trace.span_id = NewSpanId();
  t.trace.flags = t.incoming ? t.incoming->flags : 0;
  t.client_span = NewSpanId();
  return t;
}

class Worker {
 public:
  Worker(Gateway::Impl& g, size_t index)
      : g_(g),
        ioc_(1),
        work_(ioc_.get_executor()),
        pool_(ioc_, g.upstream_shared, g.routes.size(), index) {
    labels_.resize(g.routes.size());
  }

  net::io_context& ioc() { return ioc_; }

  void Run() { ioc_.run(); }
  void Stop() {
    work_.reset();
    ioc_.stop();
  }

  // Closes connections waiting for their next request; busy ones close after their answer.
  void Drain() {
    net::post(ioc_, [this] {
      for (SessionEntry& s : sessions_) {
        if (s.idle) {
          beast::error_code ec;
          s.stream->socket().shutdown(tcp::socket::shutdown_both, ec);
          s.stream->socket().close(ec);
        }
      }
      pool_.CloseIdle();
    });
  }

  awaitable<void> Session(Socket socket);
  // A connection refused at accept: a 503 that says why (`message`), a short lingering close.
  awaitable<void> RefuseConnection(Socket socket, std::string message);

 private:
  // `admin_only`: the connection is past limits.max_connections, and only IsAdminOnlyPath()
  // is answered.
  awaitable<bool> Handle(Stream& client, const std::string& peer,
                         http::request<http::string_body>& req, MonoTime start, bool keep_alive,
                         bool admin_only);
  // A request no route matches.
  awaitable<bool> NotFound(Stream& client, const http::request<http::string_body>& req,
                           std::string_view path, bool keep_alive);
  awaitable<bool> Admin(Stream& client, http::request<http::string_body>& req, bool keep_alive);
  // The embedded dashboard's files, answered on this worker (they are static bytes).
  awaitable<bool> Dashboard(Stream& client, const http::request<http::string_body>& req,
                            std::string_view path, bool keep_alive);
  awaitable<bool> Proxy(Stream& client, const std::string& peer,
                        http::request<http::string_body>& req, size_t route, MonoTime start,
                        bool keep_alive);
  // A request on a `backend: local` route: answered by the built-in model backend.
  awaitable<bool> Local(Stream& client, http::request<http::string_body>& req, size_t route,
                        MonoTime start, bool keep_alive);
  // An error answer, the JSON body of ErrorJson(); `head`: the request is a HEAD, and gets the
  // header only (its Content-Length that of the body it would have had).
  awaitable<bool> WriteError(Stream& client, unsigned version, bool keep_alive, http::status status,
                             std::string_view code, std::string_view message, bool head = false);
  // WriteError() with the message in the coroutine's frame: for callers that return the
  // awaitable instead of awaiting it (Handle()), whose temporaries are gone by the time it runs.
  // `code` must be a literal.
  awaitable<bool> WriteOwnedError(Stream& client, unsigned version, bool keep_alive,
                                  http::status status, std::string_view code, std::string message) {
    co_return co_await WriteError(client, version, keep_alive, status, code, message);
  }
  // The request's own fields made into what the upstream is sent: hop-by-hop fields out, the
  // trace and X-Forwarded-For in, the route's rewrite, HTTP/1.1 kept alive.
  void PrepareForUpstream(http::request<http::string_body>& req, const std::string& peer,
                          const RouteConfig& rc, std::string_view target, const Tracing& tracing);
  // The answer of the filter that said `d` (kRespond or kReject), from x.answer.
  // `head`: the request is a HEAD (the answer's header only).
  awaitable<bool> WriteFilterAnswer(Stream& client, unsigned version, bool keep_alive, bool head,
                                    const FilterChain& chain, FilterDecision d, Exchange& x);
  // The error of a request no upstream answered (502 or 504, saying which and why).
  awaitable<bool> WriteNoAnswer(Stream& client, unsigned version, bool keep_alive, bool head,
                                const RouteRuntime& route, const UpstreamExchange& ux, Exchange& x);
  // The relay: an answer read whole and sent on, or an event stream sent on as it comes, timing
  // every event.
  awaitable<bool> RelayBody(Stream& client, unsigned client_version, bool keep_alive, bool head,
                            UpstreamExchange& ux, Exchange& x, uint64_t& response_bytes);
  awaitable<bool> RelayEvents(Stream& client, unsigned client_version, bool keep_alive,
                              MonoTime deadline, const Labeled& lab, UpstreamExchange& ux,
                              Exchange& x, uint64_t& response_bytes);
  // Lets this worker's other connections go first: before each step of a large request that
  // holds the thread for a while (inspecting a body of a megabyte takes about 0.4 ms, copying it
  // into the upstream's socket about as long), so that small requests do not wait behind all of
  // it at once.
  awaitable<void> YieldToOthers() { co_await net::post(ioc_.get_executor(), use_awaitable); }
  Labeled LabelsFor(size_t route, const std::string& model, const std::string& version);
  // `value`, taken from a request, as a label value: itself, or "other" (counted by reason)
  // when CheckRequestLabel() refuses it. Empty stays empty, for the caller's default.
  std::string RequestLabel(std::string_view value);
  // The recording: the request's stages and status into its series and counters, the filters
  // told how it ended (`fr`, `seen`: as FilterChain::Decide left them), and a kept request
  // exported as spans.
  void Finish(Labeled lab, size_t route, Exchange& x, const http::request<http::string_body>& req,
              const Tracing& tracing, const FilterRequest& fr, size_t seen);

  Gateway::Impl& g_;
  // Before ioc_: a session's frame, destroyed with ioc_ when the gateway stops, takes its entry
  // out of this list as it goes (Session's guard).
  std::list<SessionEntry> sessions_;
  net::io_context ioc_;
  net::executor_work_guard<net::io_context::executor_type> work_;
  UpstreamPool pool_;
  // Per route, the (model, version) label sets seen by this worker, so the registry's lock is
  // taken once per label set (at most kMaxLabelSetsPerRoute + "other" each: a scan is cheap).
  struct LabelSet {
    std::string model, version;
    Labeled labeled;
  };
  std::vector<std::vector<LabelSet>> labels_;
  // (metrics, Server-Timing name) -> series, nullptr over the cap.
  absl::flat_hash_map<std::pair<const RequestMetrics*, std::string>, Series*> stages_;
  // An answer's serialised header between SerializeHead() and TrySend(), which do not suspend:
  // shared by the worker's sessions, so its capacity is kept.
  std::string head_;
};

// A connection refused at accept: a 503 that says why, sent as far as the socket takes it at
// once (the connection is not read, and never waited on), then closed.
// How long a refused connection is kept after its 503, reading (and dropping) what the client
// sends, before it is closed: closing a socket with unread bytes sends a reset, and the client
// then often sees "connection reset" instead of the 503. Short, as such connections count
// against no limit.
constexpr auto kLingerOnRefusal = std::chrono::milliseconds(200);
// Deadlines of a connection past limits.max_connections (health checks and scrapes, which send
// their request at once): a slow client may not sit on the reserve for timeouts.header.
constexpr auto kAdminOnlyDeadline = std::chrono::seconds(1);

// Reads and drops what the socket holds now, without waiting.
void DrainReceived(Socket& socket) {
  char sink[4096];
  for (int i = 0; i < 16; ++i) {
    beast::error_code ec;
    const size_t n = socket.receive(net::buffer(sink), 0, ec);
    if (ec || n == 0) return;
  }
}

// The paths a connection past limits.max_connections may ask for.
bool IsAdminOnlyPath(std::string_view path) {
  return path == "/healthz" || path == "/readyz" || path == "/metrics";
}

awaitable<void> Worker::RefuseConnection(Socket socket, std::string message) {
  const std::string body = ErrorJson("overloaded", message);
  const std::string answer =
      Cat("HTTP/1.1 503 Service Unavailable\r\nServer: tailguard\r\nContent-Type: "
          "application/json\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: ",
          body.size(), "\r\n\r\n", body);
  beast::error_code ec;
  socket.non_blocking(true, ec);
  DrainReceived(socket);  // a request sent at once is read first: no reset for it
  if (!ec) socket.send(net::buffer(answer), 0, ec);
  socket.shutdown(tcp::socket::shutdown_send, ec);
  // A lingering close, as nginx's: what arrives in the next moments is dropped, then the end
  // (the stream's timer closes the socket at the deadline).
  Stream stream(std::move(socket));
  stream.expires_after(kLingerOnRefusal);
  char sink[4096];
  for (;;) {
    const size_t n = co_await stream.async_read_some(net::buffer(sink), Token(ec));
    if (ec || n == 0) break;
  }
  stream.socket().close(ec);
}

awaitable<void> Worker::Session(Socket socket) {
  GatewayCounters& c = g_.counters;
  const auto& cfg = g_.config();
  beast::error_code ec;
  const std::string peer = [&] {
    const tcp::endpoint e = socket.remote_endpoint(ec);
    return ec ? std::string() : e.address().to_string();
  }();
  const Admission admission = g_.Admit(peer);
  if (admission == Admission::kRefusedFull) {
    co_await RefuseConnection(
        std::move(socket), Cat("the gateway has ", cfg.limits.max_connections + kAdminConnections,
                               " connections open, its limit (limits.max_connections and ",
                               kAdminConnections, " more for health checks); retry later"));
    co_return;
  }
  if (admission == Admission::kRefusedClient) {
    co_await RefuseConnection(
        std::move(socket),
        Cat("your address has ", cfg.limits.max_connections_per_client,
            " connections open to the gateway, its limit "
            "(limits.max_connections_per_client); reuse connections or retry later"));
    co_return;
  }
  // Past limits.max_connections: health checks and scrapes only, one request a connection, with
  // short deadlines.
  const bool admin_only = admission == Admission::kAdminOnly;
  const Duration header_timeout = admin_only
                                      ? std::min<Duration>(cfg.timeouts.header, kAdminOnlyDeadline)
                                      : cfg.timeouts.header;
  Add(c.connections_accepted);
  socket.set_option(tcp::no_delay(true), ec);
  socket.non_blocking(true, ec);  // for TrySend()
  Stream client(std::move(socket));
  client.EnableDrainedReads();
  beast::flat_buffer buffer;
  // Leaves the admission and the worker's list however the session ends: its return, an
  // exception out of it, or the destruction of its frame with the worker's io_context.
  struct Guard {
    Worker& w;
    const std::string& peer;
    std::list<SessionEntry>::iterator entry;
    ~Guard() {
      w.sessions_.erase(entry);
      w.g_.Leave(peer);
    }
  } guard{*this, peer, sessions_.insert(sessions_.end(), SessionEntry{&client, true})};
  const auto entry = guard.entry;

  for (bool first = true;; first = false) {
    entry->idle = true;
    if (g_.draining.load(std::memory_order_relaxed)) break;
    http::request_parser<http::string_body> parser;
    parser.header_limit(static_cast<std::uint32_t>(cfg.limits.max_header_bytes));
    parser.body_limit(cfg.limits.max_body_bytes);
    // The request's first byte: awaited up to timeouts.idle between requests, and on a new
    // connection no longer than timeouts.header either (one that sends nothing holds a slot no
    // longer than one that sends slowly).
    if (buffer.size() == 0) {
      client.expires_after(first ? std::min(header_timeout, cfg.timeouts.idle) : cfg.timeouts.idle);
      client.MarkNewMessage();  // the client's next request follows our answer
      const size_t n = co_await client.async_read_some(
          buffer.prepare(beast::read_size(buffer, 64 * 1024)), Token(ec));
      buffer.commit(n);
      // Nothing of a request came: the connection ends without a word, as keep-alive ones do.
      if (ec) break;
    }
    client.MarkNewMessage(false);
    entry->idle = false;
    // The whole header within timeouts.header of its first byte, so a client that sends it a
    // byte at a time (a slowloris) is cut off. Parsed from the buffer when it is all there (the
    // usual case); otherwise read under a timer of its own rather than the stream's, whose expiry
    // would close the socket before the 408 could say why.
    buffer.consume(parser.put(buffer.data(), ec));
    if (ec == http::error::need_more) {
      ec = {};
      // The stream's own timer stays as a backstop a second later, should the cancel below find
      // no read to stop (one that completed at once, and was posted).
      client.expires_after(header_timeout + std::chrono::seconds(1));
      // Shared with the timer's handler, which may run after this read (and even after the
      // session) when it fired just as the header completed: `done` makes it touch nothing then.
      struct HeaderDeadline {
        bool done = false;
        bool late = false;
      };
      auto state = std::make_shared<HeaderDeadline>();
      net::steady_timer deadline(ioc_, header_timeout);
      deadline.async_wait([&client, state](const beast::error_code& e) {
        if (e || state->done) return;
        state->late = true;
        // Stops the read waiting now, and makes any later one end at once (the 408 can still be
        // written: only receiving is shut).
        beast::error_code ignored;
        client.socket().shutdown(tcp::socket::shutdown_receive, ignored);
        client.socket().cancel(ignored);
      });
      co_await http::async_read_header(client, buffer, parser, Token(ec));
      state->done = true;
      deadline.cancel();
      // Late only if the read did not finish: a header that completed as the timer fired stands.
      if (state->late && ec) ec = beast::error::timeout;
    }
    if (ec) {
      if (ec == http::error::header_limit) {
        Add(c.header_too_large);
        co_await WriteError(
            client, 11, false, http::status::request_header_fields_too_large, "header_too_large",
            Cat("the request header is over ", std::to_string(cfg.limits.max_header_bytes),
                " bytes (limits.max_header_bytes)"));
      } else if (ec == http::error::body_limit) {
        // A Content-Length over the limit is seen with the header.
        Add(c.too_large);
        co_await WriteError(
            client, parser.get().version(), false, http::status::payload_too_large, "too_large",
            Cat("the request body is over ", std::to_string(cfg.limits.max_body_bytes),
                " bytes (limits.max_body_bytes)"));
      } else if (IsParseError(ec)) {
        Add(c.bad_request);
        co_await WriteError(client, 11, false, http::status::bad_request, "bad_request",
                            Cat("malformed HTTP request: ", ec.message()));
      } else if (ec == beast::error::timeout) {
        Add(c.header_timeouts);
        co_await WriteError(client, 11, false, http::status::request_timeout, "header_timeout",
                            Cat("the request header did not arrive within ",
                                FormatDuration(static_cast<double>(header_timeout.count())),
                                " of its first byte (timeouts.header)"));
      }
      break;
    }
    const MonoTime start = g_.clock.MonotonicNow();
    http::request<http::string_body>& head = parser.get();
    // Framing the gateway cannot pass on safely (RFC 9112): 400, and the connection closed, since
    // where the next request starts is not known.
    {
      size_t hosts = 0, codings = 0;
      std::string_view host, coding;
      for (const auto& f : head) {
        if (f.name() == http::field::host) {
          ++hosts;
          host = View(f.value());
        } else if (f.name() == http::field::transfer_encoding) {
          ++codings;
          coding = View(f.value());
        }
      }
      if (const std::optional<std::string> problem =
              RequestFramingProblem(head.version(), hosts, host, codings, coding)) {
        Add(c.bad_request);
        co_await WriteError(client, head.version(), false, http::status::bad_request, "bad_request",
                            *problem);
        break;
      }
    }
    if (head.version() >= 11 &&
        beast::iequals(FieldValue(head, http::field::expect), "100-continue")) {
      static constexpr std::string_view kContinue = "HTTP/1.1 100 Continue\r\n\r\n";
      co_await net::async_write(client, net::buffer(kContinue.data(), kContinue.size()), Token(ec));
      if (ec) break;
    }
    if (!parser.is_done()) {
      client.expires_after(cfg.timeouts.request);
      ReserveForBody(buffer, parser.content_length());
      co_await http::async_read(client, buffer, parser, Token(ec));
      if (ec == http::error::body_limit) {
        Add(c.too_large);
        co_await WriteError(
            client, parser.get().version(), false, http::status::payload_too_large, "too_large",
            Cat("the request body is over ", std::to_string(cfg.limits.max_body_bytes),
                " bytes (limits.max_body_bytes)"));
        break;
      }
      if (ec) {
        if (IsParseError(ec)) {
          Add(c.bad_request);
          co_await WriteError(client, parser.get().version(), false, http::status::bad_request,
                              "bad_request", Cat("malformed HTTP request body: ", ec.message()));
        }
        break;
      }
    }
    http::request<http::string_body> req = parser.release();
    ShrinkAfterBody(buffer);
    const bool keep_alive = KeepAlive(req, req.version()) && !admin_only &&
                            !g_.draining.load(std::memory_order_relaxed);
    c.in_flight.fetch_add(1, std::memory_order_relaxed);
    const bool ok = co_await Handle(client, peer, req, start, keep_alive, admin_only);
    c.in_flight.fetch_sub(1, std::memory_order_relaxed);
    if (!ok || !keep_alive) break;
  }
  client.socket().shutdown(tcp::socket::shutdown_send, ec);
  client.socket().close(ec);
}

awaitable<bool> Worker::WriteError(Stream& client, unsigned version, bool keep_alive,
                                   http::status status, std::string_view code,
                                   std::string_view message, bool head) {
  http::response<http::string_body> res{status, version};
  res.set(http::field::server, "tailguard");
  res.set(http::field::content_type, "application/json");
  res.keep_alive(keep_alive);
  res.body() = ErrorJson(code, message);
  res.prepare_payload();
  beast::error_code ec;
  client.expires_after(g_.config().timeouts.request);
  if (head) {
    http::response_serializer<http::string_body> sr{res};
    co_await http::async_write_header(client, sr, Token(ec));
  } else {
    co_await http::async_write(client, res, Token(ec));
  }
  co_return !ec;
}

// Not a coroutine: it hands back the handler's own awaitable, which saves a coroutine frame and
// a resumption per request. Everything the handlers refer to lives in Session's frame.
awaitable<bool> Worker::Handle(Stream& client, const std::string& peer,
                               http::request<http::string_body>& req, MonoTime start,
                               bool keep_alive, bool admin_only) {
  // Dot segments and repeated slashes resolved before anything looks at the path: the route,
  // its rewrite and the upstream all see the same one ("/fraud/../../etc/passwd" is refused,
  // "/fraud//x" is "/fraud/x").
  absl::StatusOr<std::optional<std::string>> normal = NormalizeTarget(View(req.target()));
  if (!normal.ok()) {
    Add(g_.counters.bad_request);
    return WriteOwnedError(client, req.version(), false, http::status::bad_request, "bad_request",
                           std::string(normal.status().message()));
  }
  if (normal->has_value()) req.target(**normal);
  const std::string_view target = View(req.target());
  const std::string_view path = target.substr(0, target.find('?'));
  if (admin_only && !IsAdminOnlyPath(path)) {
    Add(g_.counters.admin_only_refused);
    return WriteOwnedError(
        client, req.version(), false, http::status::service_unavailable, "overloaded",
        Cat("the gateway is at its connection limit (limits.max_connections, ",
            g_.config().limits.max_connections,
            "): connections past it are answered only for /healthz, /readyz and /metrics; retry "
            "later"));
  }
  if (Api::Handles(path)) return Admin(client, req, keep_alive);
  if ((path == "/" || path.starts_with("/assets/")) && !g_.options.dashboard.empty() &&
      g_.config().dashboard) {
    return Dashboard(client, req, path, keep_alive);
  }
  const RouteConfig* route = MatchRoute(g_.config(), path);
  if (route == nullptr) return NotFound(client, req, path, keep_alive);
  const size_t index = static_cast<size_t>(route - g_.config().routes.data());
  return Proxy(client, peer, req, index, start, keep_alive);
}

awaitable<bool> Worker::NotFound(Stream& client, const http::request<http::string_body>& req,
                                 std::string_view path, bool keep_alive) {
  Add(g_.counters.not_found);
  co_return co_await WriteError(client, req.version(), keep_alive, http::status::not_found,
                                "not_found",
                                Cat("no route for ", path,
                                    "; the configured prefixes are listed under routes: in the "
                                    "gateway configuration"),
                                req.method() == http::verb::head);
}

awaitable<bool> Worker::Dashboard(Stream& client, const http::request<http::string_body>& req,
                                  std::string_view path, bool keep_alive) {
  const DashboardAsset* asset = FindDashboardAsset(g_.options.dashboard, path);
  if (asset == nullptr) {
    co_return co_await WriteError(client, req.version(), keep_alive, http::status::not_found,
                                  "not_found", Cat("the dashboard has no file ", path),
                                  req.method() == http::verb::head);
  }
  if (req.method() != http::verb::get && req.method() != http::verb::head) {
    co_return co_await WriteError(client, req.version(), keep_alive,
                                  http::status::method_not_allowed, "method_not_allowed",
                                  Cat(req.method_string(), " is not allowed on ", path,
                                      "; the dashboard's files are read with GET"));
  }
  http::response<http::string_body> res{http::status::ok, req.version()};
  res.set(http::field::server, "tailguard");
  res.set(http::field::content_type, Bsv(asset->content_type));
  // Revalidated on every load (cheap: 304 while unchanged), so an upgrade shows at once.
  res.set(http::field::cache_control, "no-cache");
  res.set(http::field::etag, Bsv(asset->etag));
  res.set(http::field::vary, "Accept-Encoding");
  res.set("X-Content-Type-Options", "nosniff");
  res.keep_alive(keep_alive);
  if (View(req[http::field::if_none_match]) == asset->etag) {
    res.result(http::status::not_modified);
  } else {
    const bool gzip =
        !asset->gzip.empty() &&
        View(req[http::field::accept_encoding]).find("gzip") != std::string_view::npos;
    if (gzip) res.set(http::field::content_encoding, "gzip");
    const std::string_view body = gzip ? asset->gzip : asset->body;
    res.content_length(body.size());
    if (req.method() != http::verb::head) res.body().assign(body);
  }
  beast::error_code ec;
  client.expires_after(g_.config().timeouts.request);
  co_await http::async_write(client, res, Token(ec));
  co_return !ec;
}

awaitable<bool> Worker::Admin(Stream& client, http::request<http::string_body>& req,
                              bool keep_alive) {
  const ApiRequest request{View(req.method_string()),
                           View(req.target()),
                           View(req[http::field::accept]),
                           View(req[http::field::authorization]),
                           View(req.body()),
                           View(req[http::field::content_type]),
                           View(req[http::field::origin]),
                           View(req[http::field::host])};
  // Rendered on the control thread: a slow page never holds up this worker's requests.
  const Api& api = g_.control_plane->api();
  ApiResponse r = co_await net::co_spawn(
      g_.control.get_executor(),
      [&api, &request]() -> net::awaitable<ApiResponse> {
        // An exception must not escape into the session: it would skip the connection's
        // bookkeeping and leave the client without an answer.
        try {
          co_return api.Handle(request);
        } catch (const std::exception& e) {
          co_return ApiResponse{500, "application/json",
                                ErrorJson("internal", Cat("the API failed: ", e.what()))};
        }
      },
      use_awaitable);
  http::response<http::string_body> res{static_cast<http::status>(r.status), req.version()};
  res.set(http::field::server, "tailguard");
  res.set(http::field::content_type, r.content_type);
  res.set(http::field::cache_control, "no-store");
  res.keep_alive(keep_alive);
  res.body() = std::move(r.body);
  res.prepare_payload();
  if (req.method() == http::verb::head) res.body().clear();
  beast::error_code ec;
  client.expires_after(g_.config().timeouts.request);
  co_await http::async_write(client, res, Token(ec));
  co_return !ec;
}

Labeled Worker::LabelsFor(size_t route, const std::string& model, const std::string& version) {
  std::vector<LabelSet>& sets = labels_[route];
  for (const LabelSet& l : sets) {
    if (l.model == model && l.version == version) return l.labeled;
  }
  const Labeled labeled = g_.Lookup(route, model, version);
  // A set over the route's cap comes back as "other": not kept, so hostile model names cannot
  // grow this list (each such request counts in tailguard_series_dropped_total).
  if (labeled.metrics->labels().model == model) sets.push_back({model, version, labeled});
  return labeled;
}

std::string Worker::RequestLabel(std::string_view value) {
  switch (CheckRequestLabel(value)) {
    case RequestLabelCheck::kOk:
      return std::string(value);
    case RequestLabelCheck::kEmpty:
      return {};
    case RequestLabelCheck::kTooLong:
      Add(g_.counters.label_too_long);
      return "other";
    case RequestLabelCheck::kCharacters:
      Add(g_.counters.label_characters);
      return "other";
  }
  return "other";
}

awaitable<bool> Worker::Proxy(Stream& client, const std::string& peer,
                              http::request<http::string_body>& req, size_t route_index,
                              MonoTime start, bool keep_alive) {
  const RouteRuntime& route = g_.routes[route_index];
  const RouteConfig& rc = *route.config;
  const std::string_view target = View(req.target());
  const std::string_view path = target.substr(0, target.find('?'));
  if (rc.local_backend) co_return co_await Local(client, req, route_index, start, keep_alive);

  // What kind of API this is, and the labels and input size it gives.
  RouteProtocol protocol = rc.protocol;
  if (protocol == RouteProtocol::kAuto) {
    if (path.starts_with("/v2/models/")) {
      protocol = RouteProtocol::kKServe;
    } else if (path.ends_with("/v1/completions") || path.ends_with("/v1/chat/completions")) {
      protocol = RouteProtocol::kOpenAI;
    } else {
      protocol = RouteProtocol::kHttp;
    }
  }
  std::string model = rc.model, version = rc.version;
  uint64_t input_size = 0;
  if (protocol == RouteProtocol::kKServe) {
    if (std::optional<KServeTarget> k = ParseKServePath(path)) {
      if (model.empty()) model = RequestLabel(k->model);
      if (version.empty()) version = RequestLabel(k->version);
      if (req.method() == http::verb::post && k->verb == "infer") {
        std::optional<size_t> header_length;
        const std::string_view h = View(req["Inference-Header-Content-Length"]);
        if (!h.empty()) {
          size_t n = 0;
          const auto r = std::from_chars(h.data(), h.data() + h.size(), n);
          if (r.ec != std::errc() || r.ptr != h.data() + h.size()) {
            Add(g_.counters.bad_request);
            co_return co_await WriteError(
                client, req.version(), keep_alive, http::status::bad_request, "bad_request",
                Cat("Inference-Header-Content-Length: expected a byte count, got \"", h, "\""));
          }
          header_length = n;
        }
        if (req.body().size() > kYieldBodyBytes) co_await YieldToOthers();
        absl::StatusOr<uint64_t> size = KServeInputSize(req.body(), header_length);
        if (!size.ok()) {
          Add(g_.counters.bad_request);
          co_return co_await WriteError(
              client, req.version(), keep_alive, http::status::bad_request, "bad_request",
              Cat("KServe v2 inference request: ", std::string(size.status().message())));
        }
        input_size = *size;
      }
    }
  } else if (protocol == RouteProtocol::kOpenAI && req.method() == http::verb::post) {
    if (req.body().size() > kYieldBodyBytes) co_await YieldToOthers();
    absl::StatusOr<OpenAIRequest> o =
        InspectOpenAIRequest(req.body(), path.ends_with("/chat/completions"));
    if (!o.ok()) {
      Add(g_.counters.bad_request);
      co_return co_await WriteError(
          client, req.version(), keep_alive, http::status::bad_request, "bad_request",
          Cat("OpenAI-compatible request: ", std::string(o.status().message())));
    }
    input_size = o->prompt_chars;
    if (model.empty()) model = RequestLabel(o->model);
  }
  if (model.empty()) model = rc.name;
  if (version.empty()) version = "default";
  const Labeled lab = LabelsFor(route_index, model, version);

  Exchange x;
  x.start = start;
  x.record.input_size = input_size;

  const Tracing tracing = StartTrace(req);
  char trace_hex[32];
  HexEncodeTo(tracing.trace.trace_id, trace_hex);
  x.record.set_trace(std::string_view(trace_hex, sizeof(trace_hex)));

  // The filters see the request as the client sent it, through the whole exchange: the path is
  // kept aside when the route rewrites it (which frees the original), and so is a method Beast
  // does not know (kept in the same buffer).
  std::string original_path, original_method;
  if (!rc.rewrite_prefix.empty()) original_path = path;
  if (req.method() == http::verb::unknown) original_method = View(req.method_string());
  FilterRequest fr;
  fr.route = route_index;
  fr.route_name = rc.name;
  fr.method = req.method() == http::verb::unknown ? std::string_view(original_method)
                                                  : View(http::to_string(req.method()));
  fr.path = rc.rewrite_prefix.empty() ? path : std::string_view(original_path);
  fr.model = model;
  fr.version = version;
  fr.body = req.body();
  fr.input_size = input_size;
  fr.start = start;
  size_t seen = 0;
  bool ok = true;
  uint64_t response_bytes = 0;
  const unsigned client_version = req.version();
  if (const FilterDecision d = route.filters.Decide(fr, x.answer, &seen, &x.decided_by);
      d != FilterDecision::kContinue) {
    const bool head = req.method() == http::verb::head;
    ok = co_await WriteFilterAnswer(client, client_version, keep_alive, head, route.filters, d, x);
    if (!head) response_bytes = x.answer.body.size();
  } else {
    const bool head = req.method() == http::verb::head;
    PrepareForUpstream(req, peer, rc, target, tracing);
    // Before a connection is taken, so that the look the pool takes at an idle one is fresh
    // when the request goes out.
    if (req.body().size() > kYieldBodyBytes) co_await YieldToOthers();
    const MonoTime deadline = start + route.request_timeout;
    UpstreamExchange ux;
    co_await pool_.Exchange(route_index, route.upstreams, req, head, deadline, ux);
    x.upstream = ux.upstream;
    x.upstream_start = ux.sent;
    UpstreamResult result;
    result.failures = ux.failures;
    result.answered = ux.conn ? ux.upstream : SIZE_MAX;
    result.status = ux.conn ? static_cast<int>(ux.header->get().result_int()) : 0;
    result.at = ux.answered;
    route.filters.Answered(fr, result, seen);
    if (!ux.conn) {
      x.upstream_end = ux.answered;
      ok = co_await WriteNoAnswer(client, client_version, keep_alive, head, route, ux, x);
    } else {
      x.answered = true;
      auto& h = ux.header->get();
      x.status = static_cast<int>(h.result_int());
      x.server_timing = std::string(View(FieldValue(h, "Server-Timing")));
      // An answer without a body (to HEAD, a 204, a 304: the parser is done with its header) is
      // relayed as a plain one even when it names an event stream: chunked framing would put a
      // stray last chunk on the client's connection, ahead of its next answer.
      const bool streaming = !ux.header->is_done() &&
                             beast::iequals(FieldValue(h, http::field::content_type).substr(0, 17),
                                            "text/event-stream");
      if (!streaming) {
        ok = co_await RelayBody(client, client_version, keep_alive, head, ux, x, response_bytes);
      } else {
        ok = co_await RelayEvents(client, client_version, keep_alive, deadline, lab, ux, x,
                                  response_bytes);
      }
    }
  }

  Add(lab.counters->response_bytes, response_bytes);
  Finish(lab, route_index, x, req, tracing, fr, seen);
  co_return ok;
}

void Worker::PrepareForUpstream(http::request<http::string_body>& req, const std::string& peer,
                                const RouteConfig& rc, std::string_view target,
                                const Tracing& tracing) {
  TraceContext forwarded = tracing.trace;
  forwarded.span_id = tracing.client_span;
  StripHopByHop(req);
  if (HasField(req, http::field::expect)) req.erase(http::field::expect);
  char traceparent[55];  // FormatTraceparent(forwarded), without a string
  std::memcpy(traceparent, "00-", 3);
  HexEncodeTo(forwarded.trace_id, traceparent + 3);
  traceparent[35] = '-';
  HexEncodeTo(forwarded.span_id, traceparent + 36);
  traceparent[52] = '-';
  HexEncodeTo(std::span(&forwarded.flags, 1), traceparent + 53);
  req.set("traceparent", beast::string_view(traceparent, sizeof(traceparent)));
  if (!peer.empty()) {
    const std::string_view prior = View(FieldValue(req, "X-Forwarded-For"));
    req.set("X-Forwarded-For", prior.empty() ? peer : Cat(prior, ", ", peer));
  }
  if (!rc.rewrite_prefix.empty()) req.target(RewritePath(rc, target));
  req.version(11);
  SetKeepAlive(req, true);
  if (!req.body().empty() || req.method() == http::verb::post || req.method() == http::verb::put ||
      req.method() == http::verb::patch) {
    req.prepare_payload();
  }
}

awaitable<bool> Worker::WriteFilterAnswer(Stream& client, unsigned version, bool keep_alive,
                                          bool head, const FilterChain& chain, FilterDecision d,
                                          Exchange& x) {
  FilterAnswer& a = x.answer;
  x.status = a.status > 0 ? a.status : 503;
  if (x.status < 200 || x.status > 599) {
    // No filter should, but a 1xx or a number outside HTTP's is no answer to send: the client
    // gets a 500 that names the filter instead.
    a.message = Cat("filter ", chain.filter(x.decided_by).name(), " answered with status ",
                    x.status, ", which is not a final HTTP status; this is a bug in the filter");
    a.code = "internal";
    x.status = 500;
    d = FilterDecision::kReject;
  }
  http::response<http::string_body> res{static_cast<http::status>(x.status), version};
  res.set(http::field::server, "tailguard");
  if (d == FilterDecision::kReject) {
    res.set(http::field::content_type, "application/json");
    res.body() = ErrorJson(a.code.empty() ? std::string_view("rejected") : a.code, a.message);
  } else {
    res.set(http::field::content_type,
            Bsv(a.content_type.empty() ? std::string_view("application/json") : a.content_type));
    res.body() = std::move(a.body);
  }
  if (a.retry_after_s > 0) res.set(http::field::retry_after, std::to_string(a.retry_after_s));
  res.keep_alive(keep_alive);
  // A 204 or a 304 has no body (Beast refuses to frame one).
  if (x.status == 204 || x.status == 304) res.body().clear();
  res.prepare_payload();
  beast::error_code ec;
  client.expires_after(g_.config().timeouts.request);
  if (head) {
    // The answer to a HEAD: the header a GET would get, with its length, and no body.
    http::response_serializer<http::string_body> sr{res};
    co_await http::async_write_header(client, sr, Token(ec));
  } else {
    co_await http::async_write(client, res, Token(ec));
  }
  // For OnComplete (and the response byte count): the body as sent; none for a refusal (the
  // gateway's error JSON is no answer to keep) or a HEAD.
  if (d == FilterDecision::kRespond && !head) {
    a.body = std::move(res.body());
  } else {
    a.body.clear();
  }
  co_return !ec;
}

awaitable<bool> Worker::WriteNoAnswer(Stream& client, unsigned version, bool keep_alive, bool head,
                                      const RouteRuntime& route, const UpstreamExchange& ux,
                                      Exchange& x) {
  if (ux.error == UpstreamError::kDown) {
    // The health filter let the request on, but another worker took the one probe in between.
    x.status = 502;
    route.health->Refuse(x.answer);
    co_return co_await WriteError(client, version, keep_alive, http::status::bad_gateway,
                                  "upstream_unavailable", x.answer.message, head);
  }
  const std::string address =
      ux.upstream == SIZE_MAX ? std::string("(none)") : g_.upstreams[ux.upstream]->address();
  if (ux.error == UpstreamError::kTimeout) {
    x.status = 504;
    co_return co_await WriteError(
        client, version, keep_alive, http::status::gateway_timeout, "upstream_timeout",
        Cat("upstream ", address, " did not answer within ",
            FormatDuration(static_cast<double>(route.request_timeout.count())),
            " (timeouts.request)"),
        head);
  }
  x.status = 502;
  const char* what = ux.error == UpstreamError::kConnect ? "could not be connected to"
                     : ux.error == UpstreamError::kProtocol
                         ? "sent a malformed response"
                         : "closed the connection without an answer";
  // Built outside the co_await (see the GCC 12 note in RelayBody).
  std::string message = Cat("upstream ", address, " ");
  if (ux.bad_answer.empty()) {
    message += Cat(what, " (", ux.ec.message(), ")");
  } else {
    message += ux.bad_answer;
  }
  co_return co_await WriteError(client, version, keep_alive, http::status::bad_gateway,
                                "upstream_unavailable", message, head);
}

awaitable<bool> Worker::RelayBody(Stream& client, unsigned client_version, bool keep_alive,
                                  bool head, UpstreamExchange& ux, Exchange& x,
                                  uint64_t& response_bytes) {
  std::unique_ptr<UpstreamConn>& conn = ux.conn;
  beast::error_code ec;
  http::response_parser<http::string_body> body{std::move(*ux.header)};
  body.body_limit(kMaxResponseBytes);
  if (!body.is_done()) ReserveForBody(conn->buffer, body.content_length());
  // A small answer's body is usually in the buffer with its header: parsed here as
  // http::async_read would parse it first, without an asynchronous operation.
  if (!body.is_done() && conn->buffer.size() > 0) {
    conn->buffer.consume(body.put(conn->buffer.data(), ec));
    if (ec == http::error::need_more) ec = {};
  }
  if (!ec && !body.is_done()) {
    co_await http::async_read(conn->stream, conn->buffer, body, Token(ec));
  }
  x.upstream_end = g_.clock.MonotonicNow();
  if (ec) {
    const bool timeout = ec == beast::error::timeout;
    x.broke = timeout ? UpstreamError::kTimeout : UpstreamError::kReset;
    x.status = timeout ? 504 : 502;
    conn.reset();
    // Built outside the co_await: GCC 12 destroys a temporary of a conditional expression
    // twice inside one (a double free, found by GatewayTest.AnswersThatEndWithTheConnection).
    std::string message = Cat("upstream ", g_.upstreams[x.upstream]->address());
    if (timeout) {
      message += " did not finish its answer in time (timeouts.request)";
    } else {
      message += Cat(" broke off its answer (", ec.message(), ")");
    }
    co_return co_await WriteError(
        client, client_version, keep_alive,
        timeout ? http::status::gateway_timeout : http::status::bad_gateway,
        timeout ? "upstream_timeout" : "upstream_unavailable", message);
  }
  // The parser's verdict: the Connection field and the version, and false for an answer
  // whose body ended with the connection (no length), whose socket is gone.
  const bool upstream_keep = body.keep_alive();
  x.response = body.release();
  http::response<http::string_body>& res = x.response;
  if (upstream_keep) {
    pool_.Release(x.upstream, std::move(conn));
  } else {
    conn.reset();
  }
  StripHopByHop(res);
  res.version(client_version);
  SetKeepAlive(res, keep_alive);
  const int code = x.status;
  if (!head && code >= 200 && code != 204 && code != 304) {
    SetContentLength(res, res.body().size());
  }
  response_bytes = res.body().size();
  client.expires_after(g_.config().timeouts.request);
  SerializeHead(res, head_);
  const size_t sent = TrySend(
      client, std::array<net::const_buffer, 2>{net::buffer(head_), net::buffer(res.body())}, ec);
  if (!ec && sent < head_.size() + res.body().size()) {
    // The rest is written across a wait: with this session's own copy of the header.
    const std::string head_copy = head_;
    beast::buffers_suffix<std::array<net::const_buffer, 2>> rest(
        std::array<net::const_buffer, 2>{net::buffer(head_copy), net::buffer(res.body())});
    rest.consume(sent);
    co_await net::async_write(client, rest, Token(ec));
  }
  co_return !ec;
}

awaitable<bool> Worker::RelayEvents(Stream& client, unsigned client_version, bool keep_alive,
                                    MonoTime deadline, const Labeled& lab, UpstreamExchange& ux,
                                    Exchange& x, uint64_t& response_bytes) {
  std::unique_ptr<UpstreamConn>& conn = ux.conn;
  beast::error_code ec;
  bool ok = true;
  // Relay the event stream as it arrives, timing every event.
  http::response_parser<http::buffer_body> stream{std::move(*ux.header)};
  auto& msg = stream.get();
  StripHopByHop(msg);
  msg.version(client_version);
  // Without a length the body is chunked, which an HTTP/1.0 client cannot read: it gets the
  // body as it comes, and its end is the end of the connection.
  const bool unframed = !msg.has_content_length();
  const bool close_to_end = unframed && client_version < 11;
  msg.keep_alive(keep_alive && !close_to_end);
  if (unframed && !close_to_end) msg.chunked(true);
  http::response_serializer<http::buffer_body> sr{msg};
  SseScanner scanner;
  char buf[16 * 1024];
  bool upstream_ok = true;
  // The header goes out at once, so the client sees the answer start before the first event.
  client.expires_after(g_.config().timeouts.request);
  co_await http::async_write_header(client, sr, Token(ec));
  if (ec) ok = false;
  while (ok && !stream.is_done() && !sr.is_done()) {
    if (!stream.is_done()) {
      msg.body().data = buf;
      msg.body().size = sizeof(buf);
      // Between events the idle timeout applies, not the request's: streams can be long.
      conn->stream.expires_after(x.events == 0
                                     ? std::max(Duration(deadline - g_.clock.MonotonicNow()),
                                                Duration(std::chrono::milliseconds(1)))
                                     : Duration(g_.config().timeouts.idle));
      co_await http::async_read_some(conn->stream, conn->buffer, stream, Token(ec));
      if (ec == http::error::need_buffer) ec = {};
      if (ec) {
        upstream_ok = false;
        break;
      }
      const size_t n = sizeof(buf) - msg.body().size;
      const size_t events = scanner.Feed(std::string_view(buf, n));
      if (events > 0) {
        const MonoTime now = g_.clock.MonotonicNow();
        for (size_t e = 0; e < events; ++e) {
          if (x.events++ == 0) {
            x.record.stage_ns[static_cast<size_t>(Stage::kFirstToken)] =
                static_cast<uint64_t>((now - x.start).count());
          } else {
            const uint64_t gap = static_cast<uint64_t>((now - x.last_token).count());
            lab.metrics->stage(Stage::kInterToken).Record(gap);
            uint64_t& longest = x.record.stage_ns[static_cast<size_t>(Stage::kInterToken)];
            longest = std::max(longest, gap);
          }
          x.last_token = now;
        }
      }
      response_bytes += n;
      // A chunk of size zero would end the client's body: wait for data instead.
      if (n == 0 && !stream.is_done()) continue;
      msg.body().size = n;
      // The upstream's last chunk alone ends the body with no data: no buffer, so that the
      // serializer writes only the last chunk. An empty buffer would be written as a chunk
      // of size zero (itself a last chunk) followed by a second one.
      msg.body().data = n == 0 ? nullptr : buf;
      msg.body().more = !stream.is_done();
    } else {
      msg.body().data = nullptr;
      msg.body().size = 0;
    }
    client.expires_after(g_.config().timeouts.idle);
    co_await http::async_write(client, sr, Token(ec));
    if (ec == http::error::need_buffer) ec = {};
    if (ec) {
      ok = false;
      break;
    }
  }
  if (ok && upstream_ok && !sr.is_done()) {
    msg.body().data = nullptr;
    msg.body().size = 0;
    msg.body().more = false;
    co_await http::async_write(client, sr, Token(ec));
    if (ec == http::error::need_buffer) ec = {};
    ok = !ec;
  }
  x.upstream_end = g_.clock.MonotonicNow();
  Add(lab.counters->streamed_tokens, x.events);
  if (!upstream_ok) {
    // The header is out; all that can be done is to cut the client off.
    x.failed = true;
    x.status = 0;
    ok = false;
    x.broke = ec == beast::error::timeout ? UpstreamError::kTimeout : UpstreamError::kReset;
    conn.reset();
  } else if (ok && stream.is_done() && stream.keep_alive()) {
    pool_.Release(x.upstream, std::move(conn));
  }
  if (close_to_end) ok = false;  // the client's connection ends the body
  co_return ok;
}

awaitable<bool> Worker::Local(Stream& client, http::request<http::string_body>& req,
                              size_t route_index, MonoTime start, bool keep_alive) {
  const RouteRuntime& route = g_.routes[route_index];
  const RouteConfig& rc = *route.config;
  const std::string_view target = View(req.target());
  const std::string_view path = target.substr(0, target.find('?'));
  const std::optional<KServeTarget> k = ParseKServePath(path);
  if (!k || k->verb != "infer" || req.method() != http::verb::post) {
    Add(g_.counters.not_found);
    co_return co_await WriteError(
        client, req.version(), keep_alive, http::status::not_found, "not_found",
        Cat("the built-in model backend serves POST /v2/models/{model}[/versions/{version}]/infer; "
            "got ",
            View(req.method_string()), ' ', path, ". GET /api/v1/models lists the models"),
        req.method() == http::verb::head);
  }
  Exchange x;
  x.start = start;
  const Tracing tracing = StartTrace(req);
  x.record.set_trace(tracing.trace.TraceIdHex());
  model::ModelBackend& backend = *g_.backend;
  const std::string model_name = k->model;
  const std::string version = k->version;
  // A name the backend does not serve is recorded as "other": request paths must not be able
  // to use up the route's label sets.
  const std::string model_label = !rc.model.empty()            ? rc.model
                                  : backend.Serves(model_name) ? model_name
                                                               : std::string("other");
  const std::string asked_version = !rc.version.empty() ? rc.version
                                    : !version.empty()  ? version
                                                        : std::string("default");
  FilterRequest fr;
  fr.route = route_index;
  fr.route_name = rc.name;
  fr.method = "POST";
  fr.path = path;
  fr.model = model_label;
  fr.version = asked_version;
  fr.body = req.body();
  fr.start = start;
  size_t seen = 0;
  if (const FilterDecision d = route.filters.Decide(fr, x.answer, &seen, &x.decided_by);
      d != FilterDecision::kContinue) {
    const bool ok = co_await WriteFilterAnswer(client, req.version(), keep_alive, /*head=*/false,
                                               route.filters, d, x);
    const Labeled lab = LabelsFor(route_index, model_label, asked_version);
    Add(lab.counters->response_bytes, x.answer.body.size());
    Finish(lab, route_index, x, req, tracing, fr, seen);
    co_return ok;
  }
  x.upstream_start = g_.clock.MonotonicNow();
  model::InferResult result =
      co_await net::async_initiate<decltype(use_awaitable), void(model::InferResult)>(
          [this, &backend, &model_name, &version, &req,
           deadline = start + route.request_timeout](auto handler) {
            auto h = std::make_shared<decltype(handler)>(std::move(handler));
            // The answer comes on a backend thread (or at once on this one): it resumes this
            // coroutine on its own worker.
            backend.Submit(
                model_name, version, req.body(), deadline, [this, h](model::InferResult r) {
                  net::post(ioc_, [h, r = std::move(r)]() mutable { (*h)(std::move(r)); });
                });
          },
          use_awaitable);
  x.upstream_end = g_.clock.MonotonicNow();
  x.status = result.status;
  x.timings = std::move(result.timings);
  x.record.input_size = result.input_size;
  x.answered = true;
  const Labeled lab = LabelsFor(route_index, model_label,
                                !rc.version.empty()       ? rc.version
                                : !result.version.empty() ? result.version
                                                          : std::string("default"));

  http::response<http::string_body> res{static_cast<http::status>(result.status), req.version()};
  res.set(http::field::server, "tailguard");
  res.set(http::field::content_type, "application/json");
  if (!result.server_timing.empty()) res.set("Server-Timing", result.server_timing);
  if (result.retry_after_s > 0)
    res.set(http::field::retry_after, std::to_string(result.retry_after_s));
  res.keep_alive(keep_alive);
  res.body() = std::move(result.body);
  res.prepare_payload();
  const uint64_t response_bytes = res.body().size();
  beast::error_code ec;
  client.expires_after(g_.config().timeouts.request);
  co_await http::async_write(client, res, Token(ec));

  Add(lab.counters->response_bytes, response_bytes);
  Finish(lab, route_index, x, req, tracing, fr, seen);
  co_return !ec;
}

void Worker::Finish(Labeled lab, size_t route, Exchange& x,
                    const http::request<http::string_body>& req, const Tracing& tracing,
                    const FilterRequest& fr, size_t seen) {
  const TraceContext& trace = tracing.trace;
  const std::array<uint8_t, 8>& client_span = tracing.client_span;
  const bool has_parent = tracing.incoming.has_value();
  const std::array<uint8_t, 8> parent =
      tracing.incoming ? tracing.incoming->span_id : std::array<uint8_t, 8>{};
  const MonoTime end = g_.clock.MonotonicNow();
  RequestRecord& r = x.record;
  auto ns = [](Duration d) { return static_cast<uint64_t>(std::max<int64_t>(d.count(), 1)); };
  r.stage_ns[static_cast<size_t>(Stage::kTotal)] = ns(end - x.start);
  const bool reached = x.upstream_start != MonoTime{};
  if (reached) {
    const uint64_t upstream = ns(x.upstream_end - x.upstream_start);
    r.stage_ns[static_cast<size_t>(Stage::kUpstream)] = upstream;
    r.stage_ns[static_cast<size_t>(Stage::kGateway)] =
        ns(Duration(r.total_ns() > upstream ? r.total_ns() - upstream : 1));
  }
  r.start = lab.metrics->ToWall(x.start);
  r.status = x.status;
  r.failed = x.failed || x.status >= 500;
  const uint64_t request_bytes = req.body().size();
  Add(lab.counters->request_bytes, request_bytes);
  // Sizes of the requests that sent a body (a GET's zero would only dilute them).
  if (request_bytes > 0 && lab.counters->request_size != nullptr) {
    lab.counters->request_size->Record(request_bytes);
  }

  // The stages reported: the local backend's as it measured them (x.timings), an upstream's
  // from its Server-Timing header.
  auto reported = [&](std::string_view reported_name, uint64_t d) {
    if (std::optional<Stage> s = StageForServerTiming(reported_name)) {
      r.stage_ns[static_cast<size_t>(*s)] += d;
      return;
    }
    const std::string name = SanitizeStageName(reported_name);
    if (name.empty()) return;
    auto key = std::make_pair(static_cast<const RequestMetrics*>(lab.metrics), name);
    auto it = stages_.find(key);
    if (it == stages_.end()) {
      Series* series = g_.StageSeries(route, *lab.metrics, name);
      if (series == nullptr) {  // over the cap: not kept, for the same reason as labels
        Add(g_.counters.stage_series_dropped);
        return;
      }
      it = stages_.emplace(std::move(key), series).first;
    }
    it->second->Record(d);
  };
  for (const model::TimedStage& t : x.timings) {
    reported(t.name, static_cast<uint64_t>(std::max<int64_t>(t.duration.count(), 0)));
  }
  std::vector<ServerTimingMetric> timing;
  if (!x.server_timing.empty()) timing = ParseServerTiming(x.server_timing);
  for (const ServerTimingMetric& m : timing) {
    if (m.duration_ms >= 0) reported(m.name, static_cast<uint64_t>(m.duration_ms * 1e6));
  }

  lab.counters->CountStatus(x.status);
  if (r.failed) Add(lab.counters->failed);
  if (seen > 0) {
    FilterOutcome outcome;
    outcome.status = x.status;
    outcome.failed = r.failed;
    outcome.latency = end - x.start;
    if (reached) outcome.upstream_latency = x.upstream_end - x.upstream_start;
    outcome.end = end;
    outcome.upstream = x.answered ? x.upstream : SIZE_MAX;
    outcome.broke = x.broke;
    outcome.decided_by = x.decided_by;
    outcome.body = x.decided_by != SIZE_MAX ? std::string_view(x.answer.body)
                                            : std::string_view(x.response.body());
    g_.routes[route].filters.Complete(fr, outcome, seen);
  }
  const SampleDecision decision = lab.metrics->RecordRequest(r);
  if (decision != SampleDecision::kKept || g_.otlp == nullptr) return;

  // Export the kept request as spans: the gateway's, the upstream call's, and one per reported
  // stage laid back to back inside the upstream call (Server-Timing gives durations, not
  // offsets).
  const RouteConfig& rc = *g_.routes[route].config;
  Span server;
  server.trace_id = trace.trace_id;
  server.span_id = trace.span_id;
  if (has_parent) server.parent_span_id = parent;
  server.name = Cat(View(req.method_string()), " ", rc.name);
  server.kind = Span::Kind::kServer;
  server.start_unix_nano = UnixNanos(r.start);
  server.end_unix_nano = UnixNanos(lab.metrics->ToWall(end));
  const std::string_view target = View(req.target());
  server.attributes = {
      {"http.request.method", std::string(View(req.method_string()))},
      {"url.path", std::string(target.substr(0, target.find('?')))},
      {"http.response.status_code", static_cast<int64_t>(x.status)},
      {"tailguard.route", lab.metrics->labels().route},
      {"tailguard.model", lab.metrics->labels().model},
      {"tailguard.version", lab.metrics->labels().version},
      {"tailguard.input_size", static_cast<int64_t>(r.input_size)},
  };
  if (r.stage_ns[static_cast<size_t>(Stage::kFirstToken)] != 0) {
    server.attributes.push_back(
        {"tailguard.time_to_first_token_ms",
         static_cast<double>(r.stage_ns[static_cast<size_t>(Stage::kFirstToken)]) / 1e6});
  }
  server.error = r.failed;
  if (r.failed) server.status_message = Cat("status ", std::to_string(x.status));
  if (!g_.otlp->Export(server) || !reached || x.upstream == SIZE_MAX) return;

  Span call;
  call.trace_id = trace.trace_id;
  call.span_id = client_span;
  call.parent_span_id = trace.span_id;
  const UpstreamState& up = *g_.upstreams[x.upstream];
  call.name = Cat("upstream ", up.address());
  call.kind = Span::Kind::kClient;
  call.start_unix_nano = UnixNanos(lab.metrics->ToWall(x.upstream_start));
  call.end_unix_nano = UnixNanos(lab.metrics->ToWall(x.upstream_end));
  call.attributes = {{"server.address", up.host},
                     {"server.port", static_cast<int64_t>(up.port)},
                     {"http.response.status_code", static_cast<int64_t>(x.status)}};
  call.error = r.failed;
  g_.otlp->Export(call);

  int64_t at = call.start_unix_nano;
  for (const ServerTimingMetric& m : timing) {
    if (!(m.duration_ms >= 0)) continue;
    Span stage;
    stage.trace_id = trace.trace_id;
    stage.span_id = NewSpanId();
    stage.parent_span_id = client_span;
    stage.name = m.name;
    stage.kind = Span::Kind::kInternal;
    stage.start_unix_nano = at;
    at += static_cast<int64_t>(m.duration_ms * 1e6);
    stage.end_unix_nano = at;
    if (!m.description.empty()) stage.attributes.push_back({"description", m.description});
    g_.otlp->Export(std::move(stage));
  }
}

}  // namespace

Labeled Gateway::Impl::Lookup(size_t route, std::string model, std::string version) {
  RouteRuntime& rt = routes[route];
  {
    std::lock_guard<std::mutex> lock(labels_mu);
    const auto pair = std::make_pair(model, version);
    if (std::find(rt.label_sets.begin(), rt.label_sets.end(), pair) == rt.label_sets.end()) {
      if (rt.label_sets.size() >= kMaxLabelSetsPerRoute) {
        Add(counters.label_overflow);
        model = "other";
        version = "other";
      } else {
        rt.label_sets.push_back(pair);
      }
    }
  }
  absl::StatusOr<RequestMetrics*> m =
      registry.Requests(RouteLabels{std::move(model), std::move(version), rt.config->name});
  if (!m.ok()) {
    // Labels are never empty nor too long here, and the registry's max_series covers every
    // route's caps (see Create()): this cannot happen. Fall back to "other" all the same.
    Log(Cat("route ", rt.config->name, ": ", m.status().message(), "; recorded as other"));
    m = registry.Requests(RouteLabels{"other", "other", rt.config->name});
  }
  if (!m.ok()) {
    Log(Cat("route ", rt.config->name, ": cannot record requests: ", m.status().message()));
    std::abort();
  }
  RequestMetrics* metrics = *m;
  return Labeled{metrics, route_counters.Get(metrics, [&]() -> Series* {
                   const RouteLabels& l = metrics->labels();
                   absl::StatusOr<Series*> size = registry.Values(
                       kRequestSizeMetric,
                       {{"model", l.model}, {"version", l.version}, {"route", l.route}},
                       Unit::kBytes);
                   if (!size.ok()) Log(Cat("route ", l.route, ": ", size.status().message()));
                   return size.ok() ? *size : nullptr;
                 })};
}

Series* Gateway::Impl::StageSeries(size_t route, const RequestMetrics& m, const std::string& name) {
  RouteRuntime& rt = routes[route];
  {
    std::lock_guard<std::mutex> lock(labels_mu);
    if (std::find(rt.stage_names.begin(), rt.stage_names.end(), name) == rt.stage_names.end()) {
      if (rt.stage_names.size() >= kMaxStageNamesPerRoute) return nullptr;
      rt.stage_names.push_back(name);
    }
  }
  absl::StatusOr<Series*> s =
      registry.GetOrCreate(kRequestDurationMetric, {{"model", m.labels().model},
                                                    {"version", m.labels().version},
                                                    {"route", m.labels().route},
                                                    {"stage", name}});
  return s.ok() ? *s : nullptr;
}

Admission Gateway::Impl::Admit(const std::string& peer) {
  const GatewayConfig::Limits& limits = config().limits;
  const size_t active =
      static_cast<size_t>(counters.connections_active.fetch_add(1, std::memory_order_relaxed)) + 1;
  if (active > limits.max_connections + kAdminConnections) {
    counters.connections_active.fetch_sub(1, std::memory_order_relaxed);
    Add(counters.connections_rejected);
    return Admission::kRefusedFull;
  }
  if (limits.max_connections_per_client > 0 && !peer.empty()) {
    MutexLock lock(&clients_mu);
    uint32_t& open = clients[peer];
    if (open >= limits.max_connections_per_client) {
      counters.connections_active.fetch_sub(1, std::memory_order_relaxed);
      Add(counters.connections_rejected_per_client);
      return Admission::kRefusedClient;
    }
    ++open;
  }
  return active > limits.max_connections ? Admission::kAdminOnly : Admission::kAccepted;
}

void Gateway::Impl::Leave(const std::string& peer) {
  if (config().limits.max_connections_per_client > 0 && !peer.empty()) {
    MutexLock lock(&clients_mu);
    if (auto it = clients.find(peer); it != clients.end() && --it->second == 0) clients.erase(it);
  }
  counters.connections_active.fetch_sub(1, std::memory_order_relaxed);
}

void Gateway::Impl::Accept() {
  if (draining.load()) return;
  Worker& w = *workers[next_worker.fetch_add(1, std::memory_order_relaxed) % workers.size()];
  acceptor->async_accept(w.ioc(), [this, &w](beast::error_code ec, Socket socket) {
    if (ec == net::error::operation_aborted || !acceptor->is_open()) return;
    if (!ec) {
      net::co_spawn(w.ioc(), w.Session(std::move(socket)), net::detached);
    } else if (ec == net::error::no_descriptors || ec == net::error::no_buffer_space) {
      Log(Cat("accept failed: ", ec.message(), "; raise the open-file limit (ulimit -n)"));
    }
    Accept();
  });
}

Gateway::Gateway(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Gateway::~Gateway() { Shutdown(); }

absl::StatusOr<std::unique_ptr<Gateway>> Gateway::Create(GatewayOptions options) {
  auto g = std::make_unique<Impl>(std::move(options));
  const GatewayConfig& cfg = g->config();
  if (cfg.routes.empty()) return absl::InvalidArgumentError("routes: at least one is needed");

  // Upstreams: one state per distinct host:port, resolved once now.
  net::io_context resolve_ioc;
  tcp::resolver resolver(resolve_ioc);
  g->routes.resize(cfg.routes.size());
  for (size_t r = 0; r < cfg.routes.size(); ++r) {
    RouteRuntime& rt = g->routes[r];
    rt.config = &cfg.routes[r];
    rt.request_timeout = rt.config->request_timeout.value_or(cfg.timeouts.request);
    for (const HostPort& hp : rt.config->upstreams) {
      size_t u = 0;
      for (; u < g->upstreams.size(); ++u) {
        if (g->upstreams[u]->host == hp.host && g->upstreams[u]->port == hp.port) break;
      }
      if (u == g->upstreams.size()) {
        beast::error_code ec;
        auto results = resolver.resolve(hp.host, std::to_string(hp.port), ec);
        if (ec || results.empty()) {
          return absl::InvalidArgumentError(Cat("routes[", std::to_string(r), "] (",
                                                rt.config->name, "): upstream ", hp.ToString(),
                                                " does not resolve: ", ec.message()));
        }
        g->upstreams.push_back(std::make_unique<UpstreamState>(
            hp.host, hp.port, cfg.health.max_fails, cfg.health.fail_timeout));
        g->upstream_endpoints.push_back(results.begin()->endpoint());
      }
      rt.upstreams.push_back(u);
    }
    if (rt.upstreams.empty() && !rt.config->local_backend) {
      return absl::InvalidArgumentError(
          Cat("routes[", std::to_string(r), "] (", rt.config->name, "): no upstream"));
    }
  }
  // Each proxied route's filter chain: the passive health check first.
  for (RouteRuntime& rt : g->routes) {
    if (rt.config->local_backend) continue;
    rt.health = std::make_unique<PassiveHealthFilter>(rt.config->name, g->upstreams, rt.upstreams,
                                                      g->clock);
    rt.filters.Add(rt.health.get());
  }
  for (const RouteFilter& f : g->options.filters) {
    auto it = std::find_if(g->routes.begin(), g->routes.end(),
                           [&f](const RouteRuntime& rt) { return rt.config->name == f.route; });
    if (it == g->routes.end() || f.filter == nullptr) {
      return absl::InvalidArgumentError(Cat(
          "filter ", f.filter == nullptr ? std::string("(null)") : std::string(f.filter->name()),
          ": no route is named \"", f.route, "\""));
    }
    it->filters.Add(f.filter);
  }
  {
    std::vector<std::pair<std::string, const FilterChain*>> chains;
    for (const RouteRuntime& rt : g->routes) chains.emplace_back(rt.config->name, &rt.filters);
    g->filter_metrics = std::make_unique<FilterChainCollector>(std::move(chains));
  }
  g->upstream_shared.clock = &g->clock;
  g->upstream_shared.config = &g->config();
  g->upstream_shared.counters = &g->counters;
  g->upstream_shared.upstreams = &g->upstreams;
  g->upstream_shared.endpoints = &g->upstream_endpoints;
  g->upstream_shared.draining = &g->draining;

  // The listening socket first: its address goes into the links of alert messages.
  g->accept_ioc = std::make_unique<net::io_context>(1);
  beast::error_code ec;
  const net::ip::address address = net::ip::make_address(cfg.listen.host, ec);
  if (ec) {
    return absl::InvalidArgumentError(
        Cat("listen: \"", cfg.listen.host, "\" is not an IP address: ", ec.message()));
  }
  const tcp::endpoint endpoint(address, cfg.listen.port);
  g->acceptor = std::make_unique<tcp::acceptor>(*g->accept_ioc);
  g->acceptor->open(endpoint.protocol(), ec);
  if (!ec) g->acceptor->set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) g->acceptor->bind(endpoint, ec);
  if (!ec) g->acceptor->listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    return absl::UnavailableError(
        Cat("cannot listen on ", cfg.listen.ToString(), ": ", ec.message(),
            ec == net::error::address_in_use
                ? "; another process has the port: pick another with listen: or --listen"
                : ""));
  }
  const tcp::endpoint local = g->acceptor->local_endpoint(ec);
  g->bound = HostPort{cfg.listen.host, local.port()};

  if (!cfg.models.empty()) {
    store::FeatureStore* features = g->options.feature_store;
    if (features == nullptr) {
      if (cfg.feature_store.redis.empty()) {
        g->owned_features = store::NewMemoryFeatureStore();
      } else {
        absl::StatusOr<HostPort> hp = ParseHostPort(cfg.feature_store.redis);
        if (!hp.ok()) return hp.status();
        store::RedisOptions redis;
        redis.host = hp->host;
        redis.port = hp->port;
        redis.key_prefix = cfg.feature_store.key_prefix;
        redis.timeout =
            std::chrono::duration_cast<std::chrono::milliseconds>(cfg.feature_store.timeout);
        absl::StatusOr<std::unique_ptr<store::FeatureStore>> r =
            store::ConnectRedisFeatureStore(redis);
        if (!r.ok()) {
          return absl::UnavailableError(Cat("feature_store.redis: ", r.status().message()));
        }
        g->owned_features = *std::move(r);
      }
      features = g->owned_features.get();
    }
    model::BackendOptions backend;
    backend.intra_op_threads = cfg.model_threads;
    backend.features = [features](std::string_view key) { return features->Get(key); };
    backend.clock = &g->clock;
    backend.log = g->options.log;
    backend.registry = &g->registry;
    Impl* changes = g.get();
    backend.on_change = [changes](std::string_view model, std::string_view what) {
      // Version switches come through the API, after Create() made the control plane.
      if (changes->control_plane == nullptr) return;
      if (analyze::LiveDiagnoser* d = changes->control_plane->loop().diagnoser()) {
        d->RecordChange({changes->clock.WallNow(), diagnose::Quadrant::kModel, Cat("model=", model),
                         std::string(what)});
      }
    };
    absl::StatusOr<std::unique_ptr<model::ModelBackend>> b =
        model::ModelBackend::Create(cfg.models, backend);
    if (!b.ok()) return absl::InvalidArgumentError(Cat("models: ", b.status().message()));
    g->backend = *std::move(b);
  }

  ControlPlaneOptions control;
  control.config = cfg;
  control.rules = g->options.rules;
  control.registry = &g->registry;
  control.routes = &g->route_counters;
  control.clock = &g->clock;
  control.log = g->options.log;
  control.address = g->bound.ToString();
  control.host_signals = g->options.host_signals;
  control.api.counters = &g->counters;
  for (const auto& u : g->upstreams) control.api.upstreams.push_back(u.get());
  control.api.backend = g->backend.get();
  control.api.collectors.push_back(g->filter_metrics.get());
  control.api.clock = &g->clock;
  Impl* raw = g.get();
  control.api.ready = [raw] { return raw->started.load() && !raw->draining.load(); };
  absl::StatusOr<std::unique_ptr<ControlPlane>> plane = ControlPlane::Create(std::move(control));
  if (!plane.ok()) return plane.status();
  g->control_plane = std::move(*plane);
  g->otlp = g->control_plane->otlp();

  // Workers and the listening socket.
  const int threads = cfg.threads > 0
                          ? cfg.threads
                          : std::max(1, static_cast<int>(std::thread::hardware_concurrency()));
  for (int i = 0; i < threads; ++i) {
    g->workers.push_back(std::make_unique<Worker>(*g, static_cast<size_t>(i)));
  }
  return std::unique_ptr<Gateway>(new Gateway(std::move(g)));
}

HostPort Gateway::endpoint() const { return impl_->bound; }
Registry& Gateway::registry() { return impl_->registry; }
LiveLoop& Gateway::loop() { return impl_->control_plane->loop(); }
const GatewayCounters& Gateway::counters() const { return impl_->counters; }
model::ModelBackend* Gateway::backend() { return impl_->backend.get(); }

void Gateway::Start() {
  Impl& g = *impl_;
  if (g.started.exchange(true)) return;
  for (auto& w : g.workers) {
    Worker* worker = w.get();
    g.threads.emplace_back([worker] { worker->Run(); });
  }
  g.threads.emplace_back([&g] {
    auto guard = net::make_work_guard(*g.accept_ioc);
    g.Accept();
    g.accept_ioc->run();
  });
  g.control_plane->Start(g.options.run_loop);
  g.Log(Cat("listening on ", g.bound.ToString(), " with ", std::to_string(g.workers.size()),
            " worker thread(s), ", std::to_string(g.config().routes.size()), " route(s)"));
  if (!g.options.dashboard.empty()) g.Log(Cat("dashboard: http://", g.bound.ToString(), "/"));
}

void Gateway::Shutdown() {
  Impl& g = *impl_;
  if (g.stopped.exchange(true)) return;
  g.draining = true;
  // Everything below is bounded by timeouts.shutdown (and a second of grace for the threads'
  // last steps): in-flight requests, the API call being rendered, a notification being sent.
  const auto deadline = std::chrono::steady_clock::now() + g.config().timeouts.shutdown;
  if (g.started.load()) {
    net::post(*g.accept_ioc, [&g] {
      beast::error_code ec;
      g.acceptor->close(ec);
    });
    for (auto& w : g.workers) w->Drain();
    // Let in-flight requests finish, up to the shutdown timeout.
    while (g.counters.connections_active.load() > 0 &&
           std::chrono::steady_clock::now() < deadline) {
      for (auto& w : g.workers) w->Drain();
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    const int64_t left = g.counters.connections_active.load();
    // Queued model requests are answered (503) while the workers can still send the answers.
    if (g.backend != nullptr) g.backend->Stop();
    g.accept_ioc->stop();
    for (auto& w : g.workers) w->Stop();
    for (auto& t : g.threads) t.join();
    g.threads.clear();
    g.control_plane->Stop();
    g.Log(left > 0 ? Cat("shut down; ", std::to_string(left),
                         " connection(s) cut off after timeouts.shutdown")
                   : std::string("shut down cleanly"));
  }
  // The control thread finishes the API call it may be rendering. Nothing it runs can take long
  // (selectors are RE2, reads are bounded), but should one ever not end, the process exits
  // rather than hang: the call uses the gateway's state, which cannot be freed under it.
  std::promise<void> idle;
  std::future<void> idle_done = idle.get_future();
  net::post(g.control, [&idle] { idle.set_value(); });
  if (idle_done.wait_until(
          std::max(deadline, std::chrono::steady_clock::now() + std::chrono::seconds(1))) !=
      std::future_status::ready) {
    g.Log("shutdown: an API call is still running after timeouts.shutdown; exiting now");
    std::_Exit(1);
  }
  g.control.join();
  // Spans still queued get what is left of the time (at least a second to flush).
  g.control_plane->ShutdownTracing(
      std::max(std::chrono::duration_cast<Duration>(deadline - std::chrono::steady_clock::now()),
               Duration(std::chrono::seconds(1))));
}

}  // namespace tailguard::server
