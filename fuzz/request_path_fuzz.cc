// Fuzzes the request path up to the choice of a route, as the gateway takes it: Beast's request
// parser on the bytes, then RequestFramingProblem() on the header's Host and Transfer-Encoding
// fields, NormalizeTarget() on the target, MatchRoute() and RewritePath() on the result, and
// the labels a KServe path gives. Nothing crashes or throws, and:
// - a normalised target starts with '/', has no empty, "." or ".." segment (nor one with a
//   ";parameter") and no backslash in its path, keeps the query as it was, and normalises to
//   itself;
// - a route's rewritten target starts with '/';
// - a label the checks accept is 1 to kMaxRequestLabelBytes bytes.
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include "server/gateway_config.h"
#include "server/protocol.h"

namespace {

namespace http = boost::beast::http;
using namespace tailguard::server;

const GatewayConfig& Config() {
  static const GatewayConfig config = [] {
    absl::StatusOr<GatewayConfig> c = ParseGatewayConfig(
        "routes:\n"
        "  - {prefix: /fraud, upstream: \"127.0.0.1:1\", rewrite_prefix: /}\n"
        "  - {prefix: /v2/models/, upstream: \"127.0.0.1:1\"}\n"
        "  - {prefix: /api/x/, upstream: \"127.0.0.1:1\", rewrite_prefix: /v1/}\n"
        "  - {prefix: /, upstream: \"127.0.0.1:1\"}\n");
    if (!c.ok()) std::abort();
    return *c;
  }();
  return config;
}

void CheckNormal(std::string_view target) {
  if (target.empty() || target.front() != '/') std::abort();
  const std::string_view path = target.substr(0, target.find('?'));
  if (path.find('\\') != std::string_view::npos) std::abort();
  for (size_t at = 1; at < path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string_view seg = path.substr(at, slash - at);
    if (seg.empty() && slash < path.size()) std::abort();
    const std::string_view bare = seg.substr(0, seg.find(';'));
    if (bare == "." || bare == "..") std::abort();
    at = slash + 1;
  }
  absl::StatusOr<std::optional<std::string>> again = NormalizeTarget(target);
  if (!again.ok() || again->has_value()) std::abort();
}

void Route(std::string_view target) {
  absl::StatusOr<std::optional<std::string>> normal = NormalizeTarget(target);
  if (!normal.ok()) {
    if (normal.status().message().empty()) std::abort();
    return;
  }
  const std::string t = normal->has_value() ? **normal : std::string(target);
  CheckNormal(t);
  const size_t q = target.find('?');
  if (q != std::string_view::npos && t.substr(t.find('?')) != target.substr(q)) std::abort();
  if (target.starts_with('/') && q == std::string_view::npos && t.find('?') != std::string::npos) {
    std::abort();  // a query out of nowhere
  }
  const std::string_view path = std::string_view(t).substr(0, t.find('?'));
  if (const RouteConfig* route = MatchRoute(Config(), path)) {
    const std::string rewritten = RewritePath(*route, t);
    if (rewritten.empty() || rewritten.front() != '/') std::abort();
  }
  if (std::optional<KServeTarget> k = ParseKServePath(path)) {
    for (const std::string& label : {k->model, k->version}) {
      if (CheckRequestLabel(label) == RequestLabelCheck::kOk &&
          (label.empty() || label.size() > kMaxRequestLabelBytes)) {
        std::abort();
      }
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  // The bytes as a target on their own, and as a whole request.
  Route(input.substr(0, 4096));

  http::request_parser<http::string_body> parser;
  parser.header_limit(16 * 1024);
  parser.body_limit(64 * 1024);
  boost::beast::error_code ec;
  parser.put(boost::asio::buffer(data, size), ec);
  if (!parser.is_header_done()) return 0;
  const auto& head = parser.get();
  size_t hosts = 0, codings = 0;
  std::string_view host, coding;
  for (const auto& f : head) {
    if (f.name() == http::field::host) {
      ++hosts;
      host = std::string_view(f.value().data(), f.value().size());
    } else if (f.name() == http::field::transfer_encoding) {
      ++codings;
      coding = std::string_view(f.value().data(), f.value().size());
    }
  }
  const std::optional<std::string> problem =
      RequestFramingProblem(head.version(), hosts, host, codings, coding);
  if (problem.has_value() && problem->empty()) std::abort();
  // What the gateway lets through is never framed by anything but chunked or a length.
  if (!problem.has_value() && codings > 0 && !parser.chunked()) std::abort();
  Route(std::string_view(head.target().data(), head.target().size()));
  return 0;
}
