// tg_test_upstream: a scriptable HTTP/1.1 upstream for the reverse-proxy integration tests.
// Request headers choose the interim answers, delay, status, body, streaming and failure mode of
// each answer, so a proxy in front forwards them; every request is recorded and can be read back
// at /test/requests. See tests/integration/README.md for the controls, and MakePlan().
#include <algorithm>
#include <array>
#include <cctype>
#include <charconv>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <iostream>
#include <memory>
#include <mutex>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "CLI/CLI.hpp"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/escaping.h"
#include "boost/asio.hpp"
#include "boost/beast/core.hpp"
#include "boost/beast/http.hpp"
#include "nlohmann/json.hpp"

namespace {

namespace beast = boost::beast;
namespace http = beast::http;
namespace net = boost::asio;
using tcp = net::ip::tcp;
using json = nlohmann::json;
using Request = http::request<http::string_body>;

constexpr std::size_t kMaxRecorded = 10000;
// --max-recorded-body: a longer body is recorded by its size only ("body_bytes").
std::size_t g_max_recorded_body = SIZE_MAX;
constexpr std::uint64_t kMaxRequestBodyBytes = 64 << 20;
constexpr std::uint32_t kMaxHeaderBytes = 64 << 10;
constexpr std::int64_t kMaxResponseBodyBytes = std::int64_t{1} << 30;
constexpr std::int64_t kMaxDelayMs = 24 * 3600 * 1000;
constexpr std::int64_t kMaxTokens = 1'000'000;
constexpr std::size_t kMaxInterim = 256;

std::string_view View(beast::string_view s) { return {s.data(), s.size()}; }

// Debian's abseil has its own string_view, so plain helpers stand in for absl/strings here.
std::string Lower(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return out;
}

std::string_view Trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::vector<std::string_view> Split(std::string_view s, char sep) {
  std::vector<std::string_view> parts;
  for (std::size_t start = 0;;) {
    std::size_t end = s.find(sep, start);
    parts.push_back(s.substr(start, end - start));
    if (end == std::string_view::npos) return parts;
    start = end + 1;
  }
}

// Returns the path of a request target: everything before the query string.
std::string_view PathOf(std::string_view target) { return target.substr(0, target.find('?')); }

// Stores the body; one that is not UTF-8 (a protobuf OTLP export, say) is also kept in base64,
// since the JSON dump replaces its invalid bytes.
void PutBody(json& entry, const std::string& body) {
  entry["body"] = body;
  try {
    (void)entry["body"].dump();
  } catch (const json::type_error&) {
    entry["body_base64"] = absl::Base64Escape(body);
  }
}

// The requests received, oldest first, at most kMaxRecorded of them. Thread-safe.
class Recorder {
 public:
  void Add(const Request& req, std::uint64_t connection) {
    json headers = json::object();
    for (const auto& field : req) {
      // Names are lower-cased (a proxy may change their case); repeated fields are joined.
      std::string name = Lower(View(field.name_string()));
      std::string value(View(field.value()));
      auto it = headers.find(name);
      if (it == headers.end()) {
        headers[name] = value;
      } else {
        *it = it->get<std::string>() + ", " + value;
      }
    }
    json entry = {{"method", std::string(View(req.method_string()))},
                  {"target", std::string(View(req.target()))},
                  {"version", req.version() == 10 ? "HTTP/1.0" : "HTTP/1.1"},
                  {"connection", connection},
                  {"headers", std::move(headers)}};
    if (req.body().size() > g_max_recorded_body) {
      entry["body_bytes"] = req.body().size();
    } else {
      PutBody(entry, req.body());
    }
    std::lock_guard lock(mu_);
    entries_.push_back(std::move(entry));
    if (entries_.size() > kMaxRecorded) entries_.pop_front();
  }

  void Clear() {
    std::lock_guard lock(mu_);
    entries_.clear();
  }

  // Returns the recorded requests as a JSON array.
  std::string Dump() const {
    json all = json::array();
    {
      std::lock_guard lock(mu_);
      for (const json& e : entries_) all.push_back(e);
    }
    return all.dump(-1, ' ', false, json::error_handler_t::replace);
  }

 private:
  mutable std::mutex mu_;
  std::deque<json> entries_;  // Guarded by mu_.
};

// What the request headers ask the server to do.
struct Plan {
  // kEofBody: the answer's body ends where the connection does (no Content-Length, not
  // chunked), with Connection: close; kEofBodySilent: the same without the Connection field,
  // as an HTTP/1.1 server may do. kTruncate: the connection closes 10 bytes short of the
  // Content-Length.
  enum class Action { kAnswer, kReset, kHang, kClose, kEofBody, kEofBodySilent, kTruncate };

  Action action = Action::kAnswer;
  std::chrono::milliseconds delay{0};
  unsigned status = 200;
  std::optional<std::int64_t> body_bytes;
  // X-Test-Trailing-Bytes: N bytes '!' right after the answer, in the same write: an upstream
  // out of step, as one that sends a body to HEAD.
  std::int64_t trailing_bytes = 0;
  std::string server_timing;
  bool stream = false;
  std::int64_t tokens = 5;
  std::chrono::milliseconds first_token{0};
  std::chrono::milliseconds token_interval{0};
  // X-Test-Interim: 103, 100: interim (1xx) answers sent, in order, in one write before the
  // delay and the final answer (a 103 with a Link field, a 101 with Upgrade: websocket).
  std::vector<unsigned> interim;
};

// Reads the integer header `name` into `out` when present. REQUIRES: min <= max.
absl::Status ReadInt(const Request& req, std::string_view name, std::int64_t min, std::int64_t max,
                     std::int64_t& out) {
  auto it = req.find(beast::string_view(name.data(), name.size()));
  if (it == req.end()) return absl::OkStatus();
  std::string_view v = Trim(View(it->value()));
  std::int64_t n = 0;
  auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), n);
  if (ec != std::errc() || end != v.data() + v.size() || n < min || n > max) {
    return absl::InvalidArgumentError(std::string(name) + ": expected an integer in [" +
                                      std::to_string(min) + ", " + std::to_string(max) +
                                      "], got '" + std::string(v) + "'");
  }
  out = n;
  return absl::OkStatus();
}

// True when an OpenAI-style completion request asks for a streamed answer.
bool WantsStream(const Request& req, std::string_view path) {
  if (req.method() != http::verb::post) return false;
  if (path != "/v1/completions" && path != "/v1/chat/completions") return false;
  json body = json::parse(req.body(), nullptr, /*allow_exceptions=*/false);
  if (!body.is_object()) return false;
  auto it = body.find("stream");
  return it != body.end() && it->is_boolean() && it->get<bool>();
}

absl::StatusOr<Plan> MakePlan(const Request& req) {
  Plan plan;
  std::int64_t delay = 0, status = 200, body = -1, first = 0, interval = 0, stream = 0;
  for (absl::Status s : {
           ReadInt(req, "X-Test-Delay-Ms", 0, kMaxDelayMs, delay),
           ReadInt(req, "X-Test-Status", 200, 999, status),
           ReadInt(req, "X-Test-Body-Bytes", 0, kMaxResponseBodyBytes, body),
           ReadInt(req, "X-Test-Trailing-Bytes", 0, 65536, plan.trailing_bytes),
           ReadInt(req, "X-Test-Stream", 0, 1, stream),
           ReadInt(req, "X-Test-Tokens", 0, kMaxTokens, plan.tokens),
           ReadInt(req, "X-Test-First-Token-Ms", 0, kMaxDelayMs, first),
           ReadInt(req, "X-Test-Token-Interval-Ms", 0, kMaxDelayMs, interval),
       }) {
    if (!s.ok()) return s;
  }
  plan.delay = std::chrono::milliseconds(delay);
  plan.status = static_cast<unsigned>(status);
  if (body >= 0) plan.body_bytes = body;
  plan.first_token = std::chrono::milliseconds(first);
  plan.token_interval = std::chrono::milliseconds(interval);
  plan.stream = stream == 1 || WantsStream(req, PathOf(View(req.target())));
  if (auto it = req.find("X-Test-Server-Timing"); it != req.end()) {
    plan.server_timing = std::string(View(it->value()));
  }
  if (auto it = req.find("X-Test-Interim"); it != req.end()) {
    for (std::string_view part : Split(View(it->value()), ',')) {
      part = Trim(part);
      unsigned code = 0;
      auto [end, ec] = std::from_chars(part.data(), part.data() + part.size(), code);
      if (ec != std::errc() || end != part.data() + part.size() || code < 100 || code > 199 ||
          plan.interim.size() >= kMaxInterim) {
        return absl::InvalidArgumentError(
            "X-Test-Interim: expected a comma-separated list of at most " +
            std::to_string(kMaxInterim) + " statuses in [100, 199], got '" +
            std::string(View(it->value())) + "'");
      }
      plan.interim.push_back(code);
    }
  }
  if (auto it = req.find("X-Test-Action"); it != req.end()) {
    std::string action = Lower(Trim(View(it->value())));
    if (action == "reset") {
      plan.action = Plan::Action::kReset;
    } else if (action == "hang") {
      plan.action = Plan::Action::kHang;
    } else if (action == "close") {
      plan.action = Plan::Action::kClose;
    } else if (action == "eof-body") {
      plan.action = Plan::Action::kEofBody;
    } else if (action == "eof-body-silent") {
      plan.action = Plan::Action::kEofBodySilent;
    } else if (action == "truncate") {
      plan.action = Plan::Action::kTruncate;
    } else if (!action.empty()) {
      return absl::InvalidArgumentError(
          "X-Test-Action: expected reset, hang, close, eof-body, eof-body-silent or truncate, got "
          "'" +
          action + "'");
    }
  }
  return plan;
}

// The default JSON body: a KServe v2 inference answer or an echo of the request.
std::string DefaultBody(const Request& req) {
  std::string_view path = PathOf(View(req.target()));
  std::vector<std::string_view> parts = Split(path, '/');
  // "/v2/models/m/infer" splits into {"", "v2", "models", "m", "infer"}.
  bool v2 = req.method() == http::verb::post && parts.size() >= 5 && parts[1] == "v2" &&
            parts[2] == "models" && !parts[3].empty() && parts.back() == "infer";
  if (v2 && (parts.size() == 5 || (parts.size() == 7 && parts[4] == "versions"))) {
    json out = {{"model_name", parts[3]}};
    if (parts.size() == 7) out["model_version"] = parts[5];
    out["outputs"] =
        json::array({{{"name", "out"}, {"datatype", "FP32"}, {"shape", {1}}, {"data", {0.5}}}});
    return out.dump();
  }
  // An OTLP/HTTP receiver answers an export with an empty object.
  if (req.method() == http::verb::post &&
      (path == "/v1/traces" || path == "/v1/metrics" || path == "/v1/logs")) {
    return "{}";
  }
  std::string traceparent;
  if (auto it = req.find("traceparent"); it != req.end()) traceparent = View(it->value());
  nlohmann::ordered_json out = {{"ok", true},
                                {"method", std::string(View(req.method_string()))},
                                {"path", path},
                                {"traceparent", traceparent}};
  return out.dump(-1, ' ', false, json::error_handler_t::replace);
}

// One accepted connection: reads requests one at a time and answers each as its headers ask.
// Not thread-safe: all handlers run on the socket's strand, and at most one operation is pending.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, Recorder& recorder, std::uint64_t id)
      : socket_(std::move(socket)), timer_(socket_.get_executor()), recorder_(recorder), id_(id) {}

  void Start() {
    beast::error_code ec;
    socket_.set_option(tcp::no_delay(true), ec);
    ReadHeader();
  }

 private:
  void ReadHeader() {
    parser_.emplace();
    parser_->header_limit(kMaxHeaderBytes);
    parser_->body_limit(kMaxRequestBodyBytes);
    http::async_read_header(
        socket_, buffer_, *parser_,
        [self = shared_from_this()](beast::error_code ec, std::size_t) { self->OnHeader(ec); });
  }

  void OnHeader(beast::error_code ec) {
    if (ec) return Shutdown();
    // Answer "Expect: 100-continue" so that clients do not wait before sending the body.
    auto& req = parser_->get();
    if (auto it = req.find(http::field::expect);
        it != req.end() && beast::iequals(it->value(), "100-continue") && !parser_->is_done()) {
      continue_ = http::response<http::empty_body>(http::status::continue_, req.version());
      http::async_write(socket_, continue_,
                        [self = shared_from_this()](beast::error_code ec, std::size_t) {
                          if (ec) return self->Shutdown();
                          self->ReadBody();
                        });
      return;
    }
    ReadBody();
  }

  void ReadBody() {
    if (parser_->is_done()) return OnRequest();
    http::async_read(socket_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->Shutdown();
                       self->OnRequest();
                     });
  }

  void OnRequest() {
    req_ = parser_->release();
    std::string_view path = PathOf(View(req_.target()));
    if (path == "/test/requests" && req_.method() == http::verb::get) {
      return WriteJson(http::status::ok, recorder_.Dump());
    }
    if (path == "/test/reset" && req_.method() == http::verb::post) {
      recorder_.Clear();
      return WriteJson(http::status::ok, "{}");
    }
    recorder_.Add(req_, id_);
    absl::StatusOr<Plan> plan = MakePlan(req_);
    if (!plan.ok()) {
      json error = {
          {"error",
           {{"code", "bad_test_header"}, {"message", std::string(plan.status().message())}}}};
      return WriteJson(http::status::bad_request,
                       error.dump(-1, ' ', false, json::error_handler_t::replace));
    }
    plan_ = *std::move(plan);
    if (plan_.interim.empty()) return Delay();
    // All interim answers in one write: a proxy must find the final answer behind them in the
    // same buffer as well as in a later read (X-Test-Delay-Ms).
    interim_.clear();
    for (unsigned code : plan_.interim) {
      // Boost 1.74 predates 103 (RFC 8297).
      const std::string reason =
          code == 103 ? std::string("Early Hints")
                      : std::string(View(http::obsolete_reason(static_cast<http::status>(code))));
      interim_ += "HTTP/1.1 " + std::to_string(code) + " " + reason + "\r\n";
      if (code == 101) interim_ += "Connection: Upgrade\r\nUpgrade: websocket\r\n";
      if (code == 103) interim_ += "Link: </style.css>; rel=preload; as=style\r\n";
      interim_ += "\r\n";
    }
    net::async_write(socket_, net::buffer(interim_),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->Shutdown();
                       self->Delay();
                     });
  }

  void Delay() {
    if (plan_.delay.count() == 0) return Act();
    timer_.expires_after(plan_.delay);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Shutdown();
      self->Act();
    });
  }

  void Act() {
    switch (plan_.action) {
      case Plan::Action::kReset: {
        beast::error_code ec;
        socket_.set_option(net::socket_base::linger(true, 0), ec);
        socket_.close(ec);
        return;
      }
      case Plan::Action::kHang:
        return Drain();
      case Plan::Action::kAnswer:
      case Plan::Action::kClose:
      case Plan::Action::kEofBody:
      case Plan::Action::kEofBodySilent:
      case Plan::Action::kTruncate:
        break;
    }
    if (plan_.stream) return StartStream();
    http::response<http::string_body> res(static_cast<http::status>(plan_.status), req_.version());
    if (plan_.body_bytes) {
      res.set(http::field::content_type, "application/octet-stream");
      res.body().assign(static_cast<std::size_t>(*plan_.body_bytes), 'x');
    } else {
      res.set(http::field::content_type, "application/json");
      res.body() = DefaultBody(req_);
    }
    // These statuses never carry a body.
    if (plan_.status == 204 || plan_.status == 304) {
      res.body().clear();
      res.erase(http::field::content_type);
    }
    if (!plan_.server_timing.empty()) res.set("Server-Timing", plan_.server_timing);
    Write(std::move(res), plan_.action != Plan::Action::kAnswer);
  }

  void WriteJson(http::status status, std::string body) {
    http::response<http::string_body> res(status, req_.version());
    res.set(http::field::content_type, "application/json");
    res.body() = std::move(body);
    Write(std::move(res), /*close=*/false);
  }

  void Write(http::response<http::string_body> res, bool close) {
    res_ = std::move(res);
    res_.set(http::field::server, "tg_test_upstream");
    res_.keep_alive(req_.keep_alive() && !close);
    res_.prepare_payload();
    if (res_.result() == http::status::no_content) res_.erase(http::field::content_length);
    if (plan_.action == Plan::Action::kEofBody || plan_.action == Plan::Action::kEofBodySilent) {
      res_.erase(http::field::content_length);
      if (plan_.action == Plan::Action::kEofBodySilent) res_.erase(http::field::connection);
    } else if (plan_.action == Plan::Action::kTruncate) {
      res_.content_length(res_.body().size() + 10);
    }
    // An answer to HEAD has the fields a GET's would have, and no body.
    if (req_.method() == http::verb::head) res_.body().clear();
    auto written = [self = shared_from_this()](beast::error_code ec, std::size_t) {
      self->AfterAnswer(ec);
    };
    if (plan_.trailing_bytes == 0) return http::async_write(socket_, res_, std::move(written));
    std::ostringstream wire;
    wire << res_;
    wire_ = wire.str().append(static_cast<size_t>(plan_.trailing_bytes), '!');
    net::async_write(socket_, net::buffer(wire_), std::move(written));
  }

  void AfterAnswer(beast::error_code ec) {
    if (ec) return Shutdown();
    if (!req_.keep_alive() || plan_.action != Plan::Action::kAnswer) return Shutdown();
    plan_ = Plan();
    ReadHeader();
  }

  // Streaming: the headers now, then one chunk per token and a final "[DONE]" chunk.
  void StartStream() {
    stream_res_ =
        http::response<http::empty_body>(static_cast<http::status>(plan_.status), req_.version());
    stream_res_.set(http::field::server, "tg_test_upstream");
    stream_res_.set(http::field::content_type, "text/event-stream");
    stream_res_.set(http::field::cache_control, "no-cache");
    if (!plan_.server_timing.empty()) stream_res_.set("Server-Timing", plan_.server_timing);
    stream_res_.keep_alive(req_.keep_alive() && plan_.action != Plan::Action::kClose);
    // 204 and 304 have no body, so no framing either; an answer to HEAD has the fields (chunked,
    // no Content-Length) of the GET's, and no body.
    const bool no_content = plan_.status == 204 || plan_.status == 304;
    const bool bodiless = no_content || req_.method() == http::verb::head;
    if (!no_content) stream_res_.chunked(true);
    serializer_.emplace(stream_res_);
    next_token_ = 0;
    http::async_write_header(
        socket_, *serializer_,
        [self = shared_from_this(), bodiless](beast::error_code ec, std::size_t) {
          if (ec) return self->Shutdown();
          if (bodiless) {
            self->serializer_.reset();
            return self->AfterAnswer(ec);
          }
          self->WaitForToken(self->plan_.first_token);
        });
  }

  void WaitForToken(std::chrono::milliseconds wait) {
    if (wait.count() == 0) return WriteToken();
    timer_.expires_after(wait);
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->Shutdown();
      self->WriteToken();
    });
  }

  void WriteToken() {
    if (next_token_ < plan_.tokens) {
      chunk_ = R"(data: {"choices":[{"delta":{"content":"tok)" + std::to_string(next_token_) +
               "\"}}]}\n\n";
      ++next_token_;
      net::async_write(socket_, http::make_chunk(net::buffer(chunk_)),
                       [self = shared_from_this()](beast::error_code ec, std::size_t) {
                         if (ec) return self->Shutdown();
                         self->WaitForToken(self->plan_.token_interval);
                       });
      return;
    }
    chunk_ = "data: [DONE]\n\n";
    net::async_write(socket_, http::make_chunk(net::buffer(chunk_)),
                     [self = shared_from_this()](beast::error_code ec, std::size_t) {
                       if (ec) return self->Shutdown();
                       net::async_write(self->socket_, http::make_chunk_last(),
                                        [self](beast::error_code ec, std::size_t) {
                                          self->serializer_.reset();
                                          self->AfterAnswer(ec);
                                        });
                     });
  }

  // "hang": reads and discards until the client goes away or the server stops.
  void Drain() {
    socket_.async_read_some(net::buffer(drain_),
                            [self = shared_from_this()](beast::error_code ec, std::size_t) {
                              if (ec) return self->Shutdown();
                              self->Drain();
                            });
  }

  void Shutdown() {
    beast::error_code ec;
    socket_.shutdown(tcp::socket::shutdown_send, ec);
    socket_.close(ec);
  }

  tcp::socket socket_;
  net::steady_timer timer_;
  Recorder& recorder_;
  const std::uint64_t id_;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Request req_;
  Plan plan_;
  http::response<http::empty_body> continue_;
  std::string interim_;
  std::string wire_;  // an answer with trailing bytes, as written
  http::response<http::string_body> res_;
  http::response<http::empty_body> stream_res_;
  std::optional<http::response_serializer<http::empty_body>> serializer_;
  std::string chunk_;
  std::int64_t next_token_ = 0;
  std::array<char, 4096> drain_;
};

// Accepts connections until the io_context stops. Not thread-safe; handlers run on one strand.
class Listener {
 public:
  Listener(net::io_context& ioc, tcp::acceptor& acceptor, Recorder& recorder)
      : ioc_(ioc), acceptor_(acceptor), retry_(ioc), recorder_(recorder) {}

  void Accept() {
    acceptor_.async_accept(
        net::make_strand(ioc_), [this](beast::error_code ec, tcp::socket socket) {
          if (ec == net::error::operation_aborted) return;
          if (ec) {
            // Out of descriptors or a transient error: back off instead of spinning.
            std::cerr << "tg_test_upstream: accept: " << ec.message() << "\n";
            retry_.expires_after(std::chrono::milliseconds(10));
            retry_.async_wait([this](beast::error_code ec) {
              if (!ec) Accept();
            });
            return;
          }
          std::make_shared<Session>(std::move(socket), recorder_, ++connections_)->Start();
          Accept();
        });
  }

 private:
  net::io_context& ioc_;
  tcp::acceptor& acceptor_;
  net::steady_timer retry_;
  Recorder& recorder_;
  std::uint64_t connections_ = 0;
};

absl::StatusOr<tcp::endpoint> ParseEndpoint(const std::string& text) {
  std::size_t colon = text.rfind(':');
  if (colon == std::string::npos) {
    return absl::InvalidArgumentError("'" + text + "': expected HOST:PORT");
  }
  std::string host = text.substr(0, colon);
  if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
    host = host.substr(1, host.size() - 2);
  }
  std::string_view port_text = std::string_view(text).substr(colon + 1);
  unsigned port = 0;
  auto [end, perr] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
  if (perr != std::errc() || end != port_text.data() + port_text.size() || port > 65535) {
    return absl::InvalidArgumentError("'" + text + "': bad port");
  }
  beast::error_code ec;
  net::ip::address address = net::ip::make_address(host, ec);
  if (ec) return absl::InvalidArgumentError("'" + text + "': bad IP address");
  return tcp::endpoint(address, static_cast<unsigned short>(port));
}

std::string Format(const tcp::endpoint& endpoint) {
  std::string host = endpoint.address().to_string();
  if (endpoint.address().is_v6()) host = "[" + host + "]";
  return host + ":" + std::to_string(endpoint.port());
}

int PrintFreePort() {
  net::io_context ioc;
  tcp::acceptor acceptor(ioc, tcp::endpoint(net::ip::address_v4::loopback(), 0));
  std::printf("%u\n", acceptor.local_endpoint().port());
  return 0;
}

int Serve(const tcp::endpoint& endpoint, int threads) {
  // Declared first: sessions still pending when the io_context is destroyed refer to it.
  Recorder recorder;
  net::io_context ioc(threads);
  net::signal_set signals(ioc, SIGINT, SIGTERM);
  signals.async_wait([&ioc](beast::error_code, int) { ioc.stop(); });

  tcp::acceptor acceptor(ioc);
  beast::error_code ec;
  acceptor.open(endpoint.protocol(), ec);
  if (!ec) acceptor.set_option(net::socket_base::reuse_address(true), ec);
  if (!ec) acceptor.bind(endpoint, ec);
  if (!ec) acceptor.listen(net::socket_base::max_listen_connections, ec);
  if (ec) {
    std::cerr << "tg_test_upstream: cannot listen on " << Format(endpoint) << ": " << ec.message()
              << "\n";
    return 1;
  }
  Listener listener(ioc, acceptor, recorder);
  listener.Accept();
  std::printf("listening on %s\n", Format(acceptor.local_endpoint()).c_str());
  std::fflush(stdout);

  std::vector<std::thread> pool;
  for (int i = 1; i < threads; ++i) pool.emplace_back([&ioc] { ioc.run(); });
  ioc.run();
  for (std::thread& t : pool) t.join();
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  CLI::App app{
      "A scriptable HTTP/1.1 upstream for proxy integration tests; request headers choose each\n"
      "answer (see tests/integration/README.md).",
      "tg_test_upstream"};
  std::string listen = "127.0.0.1:0";
  bool free_port = false;
  int threads = 4;
  app.add_option("--listen", listen, "HOST:PORT to listen on; port 0 picks a free one")
      ->capture_default_str();
  app.add_flag("--free-port", free_port, "Print a free loopback TCP port and exit");
  app.add_option("--threads", threads, "I/O threads")
      ->check(CLI::Range(1, 256))
      ->capture_default_str();
  app.add_option("--max-recorded-body", g_max_recorded_body,
                 "record longer request bodies by their size only (body_bytes)");
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    std::cerr << "tg_test_upstream: " << e.what() << "\n";
    return 2;
  }
  try {
    if (free_port) return PrintFreePort();
    absl::StatusOr<tcp::endpoint> endpoint = ParseEndpoint(listen);
    if (!endpoint.ok()) {
      std::cerr << "tg_test_upstream: --listen " << endpoint.status().message() << "\n";
      return 2;
    }
    return Serve(*endpoint, threads);
  } catch (const std::exception& e) {
    std::cerr << "tg_test_upstream: " << e.what() << "\n";
    return 1;
  }
}
