// The HTTP side of the load generator: Boost.Beast clients on per-thread event loops, each
// driven by its own Dispatcher (the open-loop algorithm, dispatcher.h), and the monitor that
// reports progress and assembles the Report.
//
// Threads: `threads` workers, each owning an io_context, its connections, a pacing timer and a
// Dispatcher with its share of the schedule (sequence % threads). A worker's handlers run on its
// thread only; the Dispatcher is guarded by the worker's mutex because the monitor (the thread
// in Run()) reads it for progress. Beast stays in this file.
#include "loadgen/loadgen.h"

#include <algorithm>
#include <atomic>
#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>
#include <charconv>
#include <cmath>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "common/strings.h"

namespace tailguard::loadgen {
namespace {

namespace net = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = net::ip::tcp;

constexpr uint64_t kMaxResponseBodyBytes = uint64_t{256} << 20;
constexpr uint32_t kMaxResponseHeaderBytes = 64 * 1024;

MonoTime Now() { return std::chrono::steady_clock::now(); }

double Secs(Duration d) { return std::chrono::duration<double>(d).count(); }

}  // namespace

std::string HttpTarget::ToString() const {
  const std::string h = host.find(':') != std::string::npos ? Cat('[', host, ']') : host;
  return Cat("http://", h, ':', port, path);
}

absl::StatusOr<HttpTarget> ParseHttpUrl(std::string_view url) {
  const auto bad = [&](std::string_view why) {
    return absl::InvalidArgumentError(Cat("bad URL \"", url, "\": ", why,
                                          "; expected http://HOST[:PORT][/PATH], like "
                                          "http://127.0.0.1:8080/v2/models/m/infer"));
  };
  std::string_view rest = url;
  if (rest.starts_with("https://")) {
    return absl::InvalidArgumentError(
        Cat("\"", url,
            "\": https is not supported: tailguard loadgen speaks plain HTTP only; "
            "target the server's plain-HTTP port (or a local TLS-terminating proxy)"));
  }
  if (rest.starts_with("http://")) {
    rest.remove_prefix(7);
  } else if (rest.find("://") != std::string_view::npos) {
    return bad("only http:// is supported");
  }
  const size_t slash = rest.find_first_of("/?");
  std::string_view authority = rest.substr(0, slash);
  HttpTarget t;
  if (slash != std::string_view::npos) {
    t.path = std::string(rest.substr(slash));
    if (t.path.front() == '?') t.path = Cat('/', t.path);
  }
  if (t.path.find('#') != std::string::npos) t.path.resize(t.path.find('#'));
  if (authority.find('@') != std::string_view::npos) return bad("user info is not supported");
  std::string_view port_text;
  if (authority.starts_with('[')) {
    const size_t close = authority.find(']');
    if (close == std::string_view::npos) return bad("unclosed '[' in the host");
    t.host = std::string(authority.substr(1, close - 1));
    std::string_view after = authority.substr(close + 1);
    if (!after.empty()) {
      if (after.front() != ':') return bad("expected ':' after the IPv6 address");
      port_text = after.substr(1);
      if (port_text.empty()) return bad("empty port");
    }
  } else {
    const size_t colon = authority.rfind(':');
    t.host = std::string(authority.substr(0, colon));
    if (colon != std::string_view::npos) {
      port_text = authority.substr(colon + 1);
      if (port_text.empty()) return bad("empty port");
    }
  }
  if (t.host.empty()) return bad("no host");
  for (char c : t.host) {
    const bool ok = (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                    c == '-' || c == '.' || c == '_' || c == ':' || c == '%';
    if (!ok) return bad(Cat("'", std::string(1, c), "' cannot appear in a host name"));
  }
  if (!port_text.empty()) {
    unsigned p = 0;
    const auto [end, ec] =
        std::from_chars(port_text.data(), port_text.data() + port_text.size(), p);
    if (ec != std::errc() || end != port_text.data() + port_text.size() || p == 0 || p > 65535) {
      return bad(Cat("port \"", port_text, "\" is not a number from 1 to 65535"));
    }
    t.port = static_cast<uint16_t>(p);
  }
  if (std::optional<std::string> problem = PathProblem(t.path)) return bad(*problem);
  return t;
}

absl::Status ValidateOptions(const LoadgenOptions& o) {
  absl::StatusOr<HttpTarget> target = ParseHttpUrl(o.url);
  if (!target.ok()) return target.status();
  const auto bad = [](std::string message) { return absl::InvalidArgumentError(message); };
  if (o.phases.empty()) {
    return bad("no phases: give a rate and a duration, or a scenario with at least one phase");
  }
  Duration total{};
  for (size_t i = 0; i < o.phases.size(); ++i) {
    for (const RateSegment& s : o.phases[i].segments) {
      if (s.duration < Duration::zero() || !std::isfinite(s.from) || !std::isfinite(s.to) ||
          s.from < 0 || s.to < 0 || s.from > kMaxRate || s.to > kMaxRate) {
        return bad(Cat(PhaseName(o.phases, i), ": rates must be from 0 to ", kMaxRate,
                       " requests per second and durations positive"));
      }
    }
    total += o.phases[i].duration();
    const RequestOverrides& r = o.phases[i].request;
    if (r.method) {
      if (auto p = MethodProblem(*r.method)) return bad(Cat(PhaseName(o.phases, i), ": ", *p));
    }
    if (r.path) {
      if (auto p = PathProblem(*r.path)) return bad(Cat(PhaseName(o.phases, i), ": ", *p));
    }
    for (const Header& h : r.headers) {
      if (auto p = HeaderProblem(h.first, h.second)) {
        return bad(Cat(PhaseName(o.phases, i), ": ", *p));
      }
    }
  }
  if (total <= Duration::zero()) return bad("the run's duration is 0; give a positive duration");
  if (o.connections < 1 || o.connections > 100000) {
    return bad(Cat("connections must be from 1 to 100000, got ", o.connections));
  }
  if (o.threads < 1 || o.threads > 256 || o.threads > o.connections) {
    return bad(Cat("threads must be from 1 to 256 and at most the connections, got ", o.threads));
  }
  if (o.timeout <= Duration::zero()) return bad("the timeout must be positive, like 5s");
  if (o.progress_interval < std::chrono::milliseconds(10)) {
    return bad("the progress interval must be at least 10ms");
  }
  if (auto p = MethodProblem(o.method)) return bad(*p);
  for (const Header& h : o.headers) {
    if (auto p = HeaderProblem(h.first, h.second)) return bad(*p);
  }
  return absl::OkStatus();
}

namespace {

class Worker;

// One HTTP/1.1 keep-alive connection: one request at a time. Not thread-safe; runs on its
// worker's thread.
class Connection {
 public:
  Connection(Worker& worker, int id, net::io_context& ioc)
      : worker_(worker), id_(id), stream_(ioc) {}

  // Opens the connection ahead of the run; calls done(error) once.
  void Preconnect(const tcp::endpoint& endpoint, Duration timeout,
                  std::function<void(beast::error_code)> done) {
    stream_.expires_after(timeout);
    stream_.async_connect(endpoint, [this, done = std::move(done)](beast::error_code ec) {
      stream_.expires_never();
      connected_ = !ec;
      if (!ec) stream_.socket().set_option(tcp::no_delay(true), ec);
      done(ec);
    });
  }

  // Sends `send`'s request and reports its end to the worker.
  void Start(const Dispatcher::Send& send);

  void Close() {
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_both, ec);
    stream_.socket().close(ec);
    connected_ = false;
  }

 private:
  void Connect();
  void Write();
  void Read();
  void Fail(beast::error_code ec);
  void Finish(Outcome outcome, int status);

  Worker& worker_;
  const int id_;
  beast::tcp_stream stream_;
  beast::flat_buffer buffer_;
  http::request<http::string_body> req_;
  std::optional<http::response_parser<http::string_body>> parser_;
  Dispatcher::Send send_;
  bool connected_ = false;
  bool reused_ = false;   // the connection carried a request before this one
  bool retried_ = false;  // this request was resent once on a new connection
};

}  // namespace

struct Loadgen::Impl {
  LoadgenOptions options;
  HttpTarget target;
  tcp::endpoint endpoint;
  std::string host_header;
  std::vector<HttpRequest> phase_requests;  // per phase: options + overrides
  std::vector<std::string> phase_names;
  Duration planned{};
  double expected_requests = 0;

  std::atomic<bool> stop{false};  // atomic: Stop() may come from any thread; seq_cst is plenty
  std::mutex mu;
  std::condition_variable cv;
  // Guarded by mu.
  bool ran = false;
  int preconnect_pending = 0;
  int preconnected = 0;
  std::string connect_error;
  int workers_done = 0;

  std::vector<std::unique_ptr<Worker>> workers;

  void OnPreconnect(const beast::error_code& ec) {
    std::lock_guard lock(mu);
    --preconnect_pending;
    if (!ec) {
      ++preconnected;
    } else if (connect_error.empty()) {
      connect_error = ec.message();
    }
    if (preconnect_pending == 0) cv.notify_all();
  }
  void OnWorkerDone() {
    std::lock_guard lock(mu);
    ++workers_done;
    cv.notify_all();
  }
};

namespace {

// A share of the run on its own thread and event loop. The dispatcher is guarded by mu_; the
// rest is touched only on the worker's thread (after Begin()).
class Worker {
 public:
  Worker(Loadgen::Impl& impl, uint32_t index, int connections, size_t max_queue)
      : impl_(impl),
        index_(index),
        max_queue_(max_queue),
        connections_(connections),
        guard_(net::make_work_guard(ioc_)),
        pacer_(ioc_) {
    for (int c = 0; c < connections; ++c) {
      conns_.push_back(std::make_unique<Connection>(*this, c, ioc_));
    }
    thread_ = std::thread([this] { ioc_.run(); });
  }

  ~Worker() { Join(); }

  void Join() {
    if (thread_.joinable()) thread_.join();
  }

  int connections() const { return connections_; }
  Loadgen::Impl& impl() { return impl_; }

  void Preconnect() {
    net::post(ioc_, [this] {
      for (auto& c : conns_) {
        c->Preconnect(impl_.endpoint, impl_.options.timeout,
                      [this](beast::error_code ec) { impl_.OnPreconnect(ec); });
      }
    });
  }

  void Begin(MonoTime start) {
    net::post(ioc_, [this, start] {
      {
        std::lock_guard lock(mu_);
        if (done_) return;
        Dispatcher::Options o;
        o.connections = connections_;
        o.max_queue = max_queue_;
        o.timeout = impl_.options.timeout;
        o.shard = index_;
        o.shards = static_cast<uint32_t>(impl_.workers.size());
        dispatcher_.emplace(Schedule(impl_.options.phases, impl_.options.seed),
                            impl_.options.phases.size(), o, start);
      }
      Wake();
    });
  }

  void RequestStop() {
    net::post(ioc_, [this] {
      {
        std::lock_guard lock(mu_);
        if (dispatcher_) dispatcher_->Stop();
      }
      MarkDone();
    });
  }

  // The request on connection `id` ended now.
  void OnDone(int id, Outcome outcome, int status) {
    std::vector<Dispatcher::Send> sends;
    bool finished = false;
    {
      std::lock_guard lock(mu_);
      if (!dispatcher_ || done_) return;
      dispatcher_->Complete(id, Now(), outcome, status, sends);
      finished = dispatcher_->Finished();
    }
    for (const Dispatcher::Send& s : sends) conns_[static_cast<size_t>(s.connection)]->Start(s);
    if (finished) MarkDone();
  }

  // Reads the interval (and starts a new one) with the cumulative counts. Thread-safe.
  template <typename F>
  void Read(F&& f) {
    std::lock_guard lock(mu_);
    if (dispatcher_) f(*dispatcher_);
  }

 private:
  void Wake() {
    std::vector<Dispatcher::Send> sends;
    std::optional<MonoTime> next;
    bool finished = false;
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      dispatcher_->Advance(Now(), sends);
      next = dispatcher_->NextWake();
      finished = dispatcher_->Finished();
    }
    for (const Dispatcher::Send& s : sends) conns_[static_cast<size_t>(s.connection)]->Start(s);
    if (finished) return MarkDone();
    if (next) {
      pacer_.expires_at(*next);
      pacer_.async_wait([this](beast::error_code ec) {
        if (!ec) Wake();
      });
    }
  }

  void MarkDone() {
    {
      std::lock_guard lock(mu_);
      if (done_) return;
      done_ = true;
    }
    pacer_.cancel();
    for (auto& c : conns_) c->Close();
    guard_.reset();
    impl_.OnWorkerDone();
  }

  Loadgen::Impl& impl_;
  const uint32_t index_;
  const size_t max_queue_;
  const int connections_;
  net::io_context ioc_{1};
  net::executor_work_guard<net::io_context::executor_type> guard_;
  net::steady_timer pacer_;
  std::vector<std::unique_ptr<Connection>> conns_;
  std::mutex mu_;
  std::optional<Dispatcher> dispatcher_;  // guarded by mu_
  bool done_ = false;                     // guarded by mu_
  std::thread thread_;                    // last: starts after everything above exists
};

void Connection::Start(const Dispatcher::Send& send) {
  send_ = send;
  retried_ = false;
  Loadgen::Impl& impl = worker_.impl();
  const uint32_t phase = send.request.phase;
  const HttpRequest* r = &impl.phase_requests[phase];
  HttpRequest changed;
  if (impl.options.generator) {
    changed = *r;
    try {
      impl.options.generator(RequestContext{phase, impl.phase_names[phase], send.request.sequence},
                             changed);
    } catch (...) {
      // The caller's generator failed: the request counts as failed, the run goes on.
      net::post(stream_.get_executor(), [this] { Finish(Outcome::kIoError, 0); });
      return;
    }
    r = &changed;
  }
  req_ = {};
  req_.version(11);
  req_.method_string(r->method);
  req_.target(r->path);
  req_.set(http::field::host, impl.host_header);
  bool agent = false;
  for (const Header& h : r->headers) {
    req_.insert(h.first, h.second);
    agent = agent || EqualsIgnoreCase(h.first, "user-agent");
  }
  if (!agent) req_.set(http::field::user_agent, "tailguard-loadgen");
  req_.body() = r->body;
  req_.keep_alive(true);
  if (!r->body.empty() || r->method == "POST" || r->method == "PUT" || r->method == "PATCH") {
    req_.prepare_payload();
  }
  stream_.expires_at(send.deadline);
  if (connected_) {
    reused_ = true;
    Write();
  } else {
    Connect();
  }
}

void Connection::Connect() {
  reused_ = false;
  buffer_.consume(buffer_.size());
  stream_.async_connect(worker_.impl().endpoint, [this](beast::error_code ec) {
    if (ec) {
      Close();
      return Finish(ec == beast::error::timeout ? Outcome::kTimeout : Outcome::kConnectError, 0);
    }
    connected_ = true;
    stream_.socket().set_option(tcp::no_delay(true), ec);
    Write();
  });
}

void Connection::Write() {
  http::async_write(stream_, req_, [this](beast::error_code ec, size_t) {
    if (ec) return Fail(ec);
    Read();
  });
}

void Connection::Read() {
  parser_.emplace();
  parser_->body_limit(kMaxResponseBodyBytes);
  parser_->header_limit(kMaxResponseHeaderBytes);
  // The answer to HEAD announces a body that does not follow.
  if (req_.method() == http::verb::head) parser_->skip(true);
  http::async_read(stream_, buffer_, *parser_, [this](beast::error_code ec, size_t) {
    if (ec) return Fail(ec);
    const int status = static_cast<int>(parser_->get().result_int());
    if (!parser_->get().keep_alive()) Close();
    parser_.reset();
    Finish(Outcome::kResponse, status);
  });
}

void Connection::Fail(beast::error_code ec) {
  const bool timeout = ec == beast::error::timeout;
  Close();
  if (timeout) return Finish(Outcome::kTimeout, 0);
  // A kept-alive connection that the server closed while it was idle fails at once; resend the
  // request once on a new connection, as browsers and HTTP clients do.
  const bool closed_idle = ec == http::error::end_of_stream || ec == net::error::connection_reset ||
                           ec == net::error::eof || ec == net::error::broken_pipe;
  if (reused_ && !retried_ && closed_idle) {
    retried_ = true;
    return Connect();
  }
  Finish(Outcome::kIoError, 0);
}

void Connection::Finish(Outcome outcome, int status) { worker_.OnDone(id_, outcome, status); }

}  // namespace

Loadgen::Loadgen(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

Loadgen::~Loadgen() {
  Stop();
  for (auto& w : impl_->workers) w->Join();
}

absl::StatusOr<std::unique_ptr<Loadgen>> Loadgen::Create(LoadgenOptions options) {
  if (absl::Status s = ValidateOptions(options); !s.ok()) return s;
  auto impl = std::make_unique<Impl>();
  impl->target = *ParseHttpUrl(options.url);
  {
    net::io_context ioc;
    tcp::resolver resolver(ioc);
    beast::error_code ec;
    const auto results = resolver.resolve(impl->target.host, std::to_string(impl->target.port), ec);
    if (ec || results.empty()) {
      return absl::UnavailableError(Cat("cannot resolve \"", impl->target.host,
                                        "\": ", ec ? ec.message() : "no addresses",
                                        "; check the host name in the URL"));
    }
    impl->endpoint = results.begin()->endpoint();
  }
  const HttpTarget& t = impl->target;
  const std::string host = t.host.find(':') != std::string::npos ? Cat('[', t.host, ']') : t.host;
  impl->host_header = t.port == 80 ? host : Cat(host, ':', t.port);
  for (size_t i = 0; i < options.phases.size(); ++i) {
    const RequestOverrides& o = options.phases[i].request;
    HttpRequest r{options.method, t.path, options.headers, options.body};
    if (o.method) r.method = *o.method;
    if (o.path) r.path = *o.path;
    if (o.body) r.body = *o.body;
    MergeHeaders(r.headers, o.headers);
    impl->phase_requests.push_back(std::move(r));
    impl->phase_names.push_back(PhaseName(options.phases, i));
    impl->planned += options.phases[i].duration();
    impl->expected_requests += options.phases[i].expected_requests();
  }
  impl->options = std::move(options);
  return std::unique_ptr<Loadgen>(new Loadgen(std::move(impl)));
}

void Loadgen::Stop() {
  impl_->stop = true;
  std::lock_guard lock(impl_->mu);
  impl_->cv.notify_all();
}

absl::StatusOr<Report> Loadgen::Run() {
  Impl& impl = *impl_;
  const LoadgenOptions& o = impl.options;
  {
    std::lock_guard lock(impl.mu);
    if (impl.ran) return absl::FailedPreconditionError("Loadgen::Run() was called twice");
    impl.ran = true;
  }
  const int threads = o.threads;
  for (int w = 0; w < threads; ++w) {
    const int conns = o.connections / threads + (w < o.connections % threads ? 1 : 0);
    const size_t queue = o.max_queue / static_cast<size_t>(threads) +
                         (static_cast<size_t>(w) < o.max_queue % static_cast<size_t>(threads));
    impl.workers.push_back(std::make_unique<Worker>(impl, static_cast<uint32_t>(w), conns, queue));
  }

  // Open every connection first, so the first requests do not pay for the handshakes.
  {
    std::unique_lock lock(impl.mu);
    impl.preconnect_pending = o.connections;
  }
  for (auto& w : impl.workers) w->Preconnect();
  {
    std::unique_lock lock(impl.mu);
    impl.cv.wait(lock, [&] { return impl.preconnect_pending == 0 || impl.stop; });
    if (impl.preconnected == 0 && !impl.stop) {
      lock.unlock();
      for (auto& w : impl.workers) w->RequestStop();
      for (auto& w : impl.workers) w->Join();
      return absl::UnavailableError(Cat("cannot connect to ", impl.target.ToString(), ": ",
                                        impl.connect_error,
                                        "; is the server running and listening there?"));
    }
  }

  const MonoTime start = Now() + std::chrono::milliseconds(2);
  for (auto& w : impl.workers) w->Begin(start);

  // Reads every worker: the interval just ended merged, the counts, the queue and the phase.
  const auto collect = [&](ProgressUpdate& u, Histogram& interval) {
    IntervalStats merged;
    for (auto& w : impl.workers) {
      w->Read([&](Dispatcher& d) {
        IntervalStats s = d.TakeInterval();
        merged.latency.Merge(s.latency);
        merged.counts.Add(s.counts);
        u.total.Add(d.counts());
        u.in_flight += d.in_flight();
        u.queued += d.queued();
        u.phase = std::max(u.phase, d.current_phase());
      });
    }
    interval = std::move(merged.latency);
    return merged.counts;
  };
  MonoTime last_tick = start;
  const auto progress = [&](MonoTime now, bool final) {
    ProgressUpdate u;
    Histogram interval;
    const Counts c = collect(u, interval);
    u.elapsed = std::max(Duration::zero(), now - start);
    u.interval = std::max(Duration::zero(), now - last_tick);
    last_tick = now;
    u.phase_name = impl.phase_names[std::min<size_t>(u.phase, impl.phase_names.size() - 1)];
    const double secs = Secs(u.interval);
    if (secs > 0) {
      u.rate = static_cast<double>(c.sent) / secs;
      u.intended_rate = static_cast<double>(c.scheduled) / secs;
    }
    u.p50_ns = InterpolatedQuantile(interval, 0.5);
    u.p99_ns = InterpolatedQuantile(interval, 0.99);
    u.interval_latency = &interval;
    u.final = final;
    if (o.progress) o.progress(u);
  };

  bool stop_sent = false;
  MonoTime next_tick = start + o.progress_interval;
  MonoTime stopped_at{};
  {
    std::unique_lock lock(impl.mu);
    while (impl.workers_done < threads) {
      if (impl.stop && !stop_sent) {
        stop_sent = true;
        stopped_at = Now();
        lock.unlock();
        for (auto& w : impl.workers) w->RequestStop();
        lock.lock();
        continue;
      }
      const bool ticked = !impl.cv.wait_until(lock, next_tick, [&] {
        return impl.workers_done == threads || (impl.stop && !stop_sent);
      });
      if (ticked) {
        lock.unlock();
        progress(next_tick, false);
        lock.lock();
        next_tick += o.progress_interval;
        // After a long stall of this thread, skip the ticks that were missed.
        const MonoTime now = Now();
        if (next_tick < now) next_tick = now + o.progress_interval;
      }
    }
  }
  for (auto& w : impl.workers) w->Join();
  const MonoTime end = Now();
  progress(end, true);

  Report r;
  r.target = impl.target.ToString();
  r.connections = o.connections;
  r.timeout = o.timeout;
  r.planned_duration = impl.planned;
  r.expected_requests = impl.expected_requests;
  r.stopped = stop_sent;
  MonoTime last_send = start, last_done = start;
  std::vector<Counts> phase_counts(o.phases.size());
  std::vector<Histogram> phase_latency(o.phases.size());
  for (auto& w : impl.workers) {
    w->Read([&](Dispatcher& d) {
      r.counts.Add(d.counts());
      r.abandoned += d.abandoned();
      r.latency.Merge(d.latency());
      r.send_lag.Merge(d.send_lag());
      last_send = std::max(last_send, d.last_send());
      last_done = std::max(last_done, d.last_completion());
      for (size_t p = 0; p < o.phases.size(); ++p) {
        phase_counts[p].Add(d.phase_counts()[p]);
        phase_latency[p].Merge(d.phase_latency()[p]);
      }
    });
  }
  r.elapsed =
      std::max(Duration::zero(), (r.stopped ? stopped_at : std::max(last_send, last_done)) - start);
  const double planned_s = Secs(impl.planned);
  r.intended_rate = planned_s > 0 ? impl.expected_requests / planned_s : 0;
  const double send_span =
      r.stopped ? Secs(r.elapsed) : std::max(planned_s, Secs(last_send - start));
  r.achieved_rate = send_span > 0 ? static_cast<double>(r.counts.sent) / send_span : 0;
  r.throughput =
      r.elapsed > Duration::zero() ? static_cast<double>(r.counts.completed) / Secs(r.elapsed) : 0;
  r.latency_summary = LatencySummary::Of(r.latency);
  r.send_lag_summary = LatencySummary::Of(r.send_lag);
  for (size_t p = 0; p < o.phases.size(); ++p) {
    PhaseReport pr;
    pr.name = impl.phase_names[p];
    pr.pattern = o.phases[p].pattern;
    pr.duration = o.phases[p].duration();
    const double d = Secs(pr.duration);
    pr.intended_rate = d > 0 ? o.phases[p].expected_requests() / d : 0;
    pr.achieved_rate = d > 0 ? static_cast<double>(phase_counts[p].sent) / d : 0;
    pr.counts = phase_counts[p];
    pr.latency = LatencySummary::Of(phase_latency[p]);
    r.phases.push_back(std::move(pr));
  }
  return r;
}

}  // namespace tailguard::loadgen
