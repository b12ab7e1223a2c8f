// The gateway configuration parser: YAML to GatewayConfig, every error as
// "file:line: field.path: problem", and the route lookup the proxy runs per request.
#include "server/gateway_config.h"

#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <climits>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>

#include "common/file.h"
#include "common/format.h"
#include "common/strings.h"
#include "common/yaml_fields.h"

namespace tailguard::server {
namespace {

using namespace std::chrono_literals;

constexpr size_t kMaxNameBytes = 256;   // route names, model and version labels
constexpr size_t kMaxPathBytes = 1024;  // prefixes
constexpr size_t kMaxTracingHeaders = 64;
constexpr size_t kMaxTokenBytes = 4096;

constexpr uint64_t KiB = uint64_t{1} << 10;
constexpr uint64_t MiB = uint64_t{1} << 20;
constexpr uint64_t GiB = uint64_t{1} << 30;

bool IsDigit(char c) { return c >= '0' && c <= '9'; }
bool IsAlnum(char c) { return IsDigit(c) || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool IsHex(char c) { return IsDigit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool IsControlOrSpace(char c) { return static_cast<unsigned char>(c) <= ' ' || c == 0x7f; }

// What is wrong with a bearer token, never showing it; nullopt when it is fine.
std::optional<std::string> TokenProblem(std::string_view token) {
  if (token.empty()) return "is empty; give a long random token";
  if (token.size() > kMaxTokenBytes) {
    return Cat("is ", token.size(), " bytes long; at most ", kMaxTokenBytes, " are allowed");
  }
  if (std::any_of(token.begin(), token.end(), IsControlOrSpace)) {
    return "contains spaces or control characters; a bearer token is one word, like the output "
           "of `openssl rand -hex 32`";
  }
  return std::nullopt;
}

// A name or an IPv4 address.
bool IsHostName(std::string_view host) {
  return std::all_of(host.begin(), host.end(),
                     [](char c) { return IsAlnum(c) || c == '-' || c == '.' || c == '_'; });
}

// An IPv6 address, possibly with a "%zone"; the resolver checks the rest.
bool IsIpv6Host(std::string_view host) {
  const size_t zone = host.find('%');
  const std::string_view address = host.substr(0, zone);
  if (address.find(':') == std::string_view::npos) return false;
  if (!std::all_of(address.begin(), address.end(),
                   [](char c) { return IsHex(c) || c == ':' || c == '.'; })) {
    return false;
  }
  return zone == std::string_view::npos ||
         (zone + 1 < host.size() && IsHostName(host.substr(zone + 1)));
}

// An HTTP header name (RFC 9110 token).
bool IsHeaderName(std::string_view name) {
  static constexpr std::string_view kPunctuation = "!#$%&'*+-.^_`|~";
  return !name.empty() && std::all_of(name.begin(), name.end(), [](char c) {
    return IsAlnum(c) || kPunctuation.find(c) != std::string_view::npos;
  });
}

// A URL path: no spaces, control characters, query or fragment.
bool IsUrlPath(std::string_view path) {
  return std::none_of(path.begin(), path.end(),
                      [](char c) { return IsControlOrSpace(c) || c == '?' || c == '#'; });
}

// "16MiB", "16 MiB", "512KiB", "1GB", "1048576": bytes. nullopt when malformed or over 2^64.
std::optional<uint64_t> ParseSizeText(std::string_view s) {
  size_t digits = 0;
  while (digits < s.size() && IsDigit(s[digits])) ++digits;
  if (digits == 0) return std::nullopt;
  uint64_t n = 0;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + digits, n);
  if (ec != std::errc()) return std::nullopt;
  std::string_view unit = s.substr(digits);
  if (unit.size() > 1 && unit[0] == ' ') unit.remove_prefix(1);
  static constexpr std::pair<std::string_view, uint64_t> kUnits[] = {
      {"", 1},
      {"B", 1},
      {"KB", 1000},
      {"kB", 1000},
      {"MB", 1000 * 1000},
      {"GB", 1000000000},
      {"KiB", KiB},
      {"MiB", MiB},
      {"GiB", GiB},
  };
  for (const auto& [name, multiplier] : kUnits) {
    if (unit == name) {
      if (n > UINT64_MAX / multiplier) return std::nullopt;
      return n * multiplier;
    }
  }
  return std::nullopt;
}

class Parser : public YamlWalker {
 public:
  Parser() : YamlWalker(/*suggest_names=*/true) {}

  GatewayConfig Parse(const YAML::Node& root);

 private:
  static HostPort Endpoint(const YamlItem& at, bool upstream) {
    const std::string s = Str(at);
    absl::StatusOr<HostPort> hp = ParseHostPort(s);
    if (!hp.ok()) Fail(at, std::string(hp.status().message()));
    if (upstream && hp->port == 0) {
      Fail(at, Cat(Quoted(s),
                   ": port 0 is no upstream port; give the port the model server "
                   "listens on (1-65535)"));
    }
    return *std::move(hp);
  }

  // A non-empty label or name, at most kMaxNameBytes.
  static std::string Label(const YamlItem& at) {
    std::string s = Name(at);
    if (s.size() > kMaxNameBytes) {
      Fail(at, Cat("is ", s.size(), " bytes long; at most ", kMaxNameBytes, " are allowed"));
    }
    return s;
  }

  // A URL path prefix: "/", "/v2/models/", "/api/fraud".
  static std::string PathPrefix(const YamlItem& at) {
    std::string s = Str(at);
    if (s.empty()) Fail(at, "must not be empty; \"/\" matches every path");
    if (s.front() != '/') {
      Fail(at, Cat("must start with '/', like ", Quoted(Cat('/', s))));
    }
    if (s.size() > kMaxPathBytes) {
      Fail(at, Cat("is ", s.size(), " bytes long; at most ", kMaxPathBytes, " are allowed"));
    }
    if (!IsUrlPath(s)) {
      Fail(at, Cat(Quoted(s),
                   " is no URL path: it may not contain spaces, control characters, "
                   "'?' or '#'"));
    }
    return s;
  }

  static Duration Positive(const YamlItem& at) { return PositiveDur(at, "1s"); }

  // A byte size in [1, max].
  static size_t Size(const YamlItem& at, uint64_t max) {
    const std::string s = Str(at);
    const std::optional<uint64_t> n = ParseSizeText(s);
    if (!n) {
      Fail(at, Cat("expected a size like \"16MiB\", \"512KiB\" or a number of bytes (units: B, KB, "
                   "MB, GB, KiB, MiB, GiB), got ",
                   Quoted(s)));
    }
    if (*n == 0 || *n > max) {
      Fail(at, Cat("must be from 1 byte to ", SizeText(max), ", got ", Quoted(s)));
    }
    return static_cast<size_t>(*n);
  }

  // A whole number in [1, max].
  static size_t Count(const YamlItem& at, uint64_t max) {
    const std::string s = Str(at);
    uint64_t n = 0;
    const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), n);
    if (s.empty() || ec == std::errc::invalid_argument || end != s.data() + s.size()) {
      Fail(at, Cat("expected a whole number, got ", Quoted(s)));
    }
    if (ec != std::errc() || n == 0 || n > max) {
      Fail(at, Cat("must be from 1 to ", max, ", got ", Quoted(s)));
    }
    return static_cast<size_t>(n);
  }

  static RouteProtocol Protocol(const YamlItem& at) {
    const std::string s = Str(at);
    static constexpr RouteProtocol kAll[] = {RouteProtocol::kAuto, RouteProtocol::kKServe,
                                             RouteProtocol::kOpenAI, RouteProtocol::kHttp};
    for (RouteProtocol p : kAll) {
      if (s == RouteProtocolName(p)) return p;
    }
    const std::string_view guess = ClosestName(s, {"auto", "kserve", "openai", "http"});
    Fail(at, Cat("unknown protocol ", Quoted(s),
                 guess.empty() ? std::string() : Cat("; did you mean \"", guess, "\"?"),
                 " (expected one of auto, kserve, openai, http)"));
  }

  void ParseLimits(const YamlItem& at, GatewayConfig::Limits& limits) {
    YamlMap m = Map(at, {"max_body_bytes", "max_header_bytes", "max_connections",
                         "max_connections_per_client", "max_upstream_idle_per_host"});
    if (const YamlItem* f = m.Get("max_body_bytes")) limits.max_body_bytes = Size(*f, 4 * GiB);
    if (const YamlItem* f = m.Get("max_header_bytes")) limits.max_header_bytes = Size(*f, MiB);
    if (const YamlItem* f = m.Get("max_connections")) {
      limits.max_connections = Count(*f, 1 << 20);
    }
    if (const YamlItem* f = m.Get("max_upstream_idle_per_host")) {
      limits.max_upstream_idle_per_host = Count(*f, 1 << 16);
    }
    if (const YamlItem* f = m.Get("max_connections_per_client")) {
      limits.max_connections_per_client =
          Str(*f) == "0" ? 0 : Count(*f, limits.max_connections);
    } else {
      limits.max_connections_per_client =
          std::min(limits.max_connections_per_client, limits.max_connections);
    }
  }

  void ParseTimeouts(const YamlItem& at, GatewayConfig::Timeouts& t) {
    YamlMap m = Map(at, {"connect", "request", "idle", "header", "shutdown"});
    if (const YamlItem* f = m.Get("connect")) t.connect = Positive(*f);
    if (const YamlItem* f = m.Get("request")) t.request = Positive(*f);
    if (const YamlItem* f = m.Get("idle")) t.idle = Positive(*f);
    if (const YamlItem* f = m.Get("header")) t.header = Positive(*f);
    if (const YamlItem* f = m.Get("shutdown")) t.shutdown = Positive(*f);
  }

  void ParseHealth(const YamlItem& at, GatewayConfig::Health& h) {
    YamlMap m = Map(at, {"max_fails", "fail_timeout"});
    if (const YamlItem* f = m.Get("max_fails")) {
      h.max_fails = Int(*f, INT_MIN);
      if (h.max_fails < 0 || h.max_fails > 1000) {
        Fail(*f, Cat("must be from 0 (no passive health checks) to 1000, got ", h.max_fails));
      }
    }
    if (const YamlItem* f = m.Get("fail_timeout")) h.fail_timeout = Positive(*f);
  }

  void ParseTracing(const YamlItem& at, TracingConfig& t) {
    YamlMap m = Map(at, {"otlp_endpoint", "service_name", "headers", "queue_capacity", "max_batch",
                         "flush_interval", "timeout"});
    if (const YamlItem* f = m.Get("otlp_endpoint")) {
      t.endpoint = Str(*f);
      if (!t.endpoint.empty()) CheckOtlpEndpoint(*f, t.endpoint);
    }
    if (const YamlItem* f = m.Get("service_name")) t.service_name = Label(*f);
    if (const YamlItem* f = m.Get("headers")) {
      t.headers = StringMap(*f, kMaxTracingHeaders);
      for (const auto& [name, value] : t.headers) {
        const YamlItem header{m.PathOf(Cat("headers.", name)), MarkOf(Cat(f->path, '.', name)),
                              YAML::Node(), name};
        if (!IsHeaderName(name)) {
          Fail(header, "is no HTTP header name (letters, digits and !#$%&'*+-.^_`|~ only)");
        }
        if (std::any_of(value.begin(), value.end(),
                        [](char c) { return IsControlOrSpace(c) && c != ' ' && c != '\t'; })) {
          Fail(header, "the value contains a line break or another control character");
        }
      }
    }
    if (const YamlItem* f = m.Get("queue_capacity")) t.queue_capacity = Count(*f, 1 << 20);
    if (const YamlItem* f = m.Get("max_batch")) {
      t.max_batch = Count(*f, 1 << 20);
      if (t.max_batch > t.queue_capacity) {
        Fail(*f, Cat("is larger than queue_capacity (", t.queue_capacity,
                     "); a batch is taken from the queue"));
      }
    } else {
      t.max_batch = std::min(t.max_batch, t.queue_capacity);
    }
    if (const YamlItem* f = m.Get("flush_interval")) t.flush_interval = Positive(*f);
    if (const YamlItem* f = m.Get("timeout")) t.timeout = Positive(*f);
  }

  static void CheckOtlpEndpoint(const YamlItem& at, std::string_view url) {
    const std::string example = "\"http://127.0.0.1:4318/v1/traces\"";
    std::string_view rest = url;
    if (rest.starts_with("http://")) {
      rest.remove_prefix(7);
    } else if (rest.starts_with("https://")) {
      rest.remove_prefix(8);
    } else {
      Fail(at, Cat("expected an OTLP/HTTP URL like ", example, ", got ", Quoted(url)));
    }
    const size_t slash = rest.find('/');
    const std::string_view authority = rest.substr(0, slash);
    const std::string_view path = slash == std::string_view::npos ? "" : rest.substr(slash);
    if (authority.empty() || std::any_of(url.begin(), url.end(), IsControlOrSpace)) {
      Fail(at, Cat("expected an OTLP/HTTP URL like ", example, ", got ", Quoted(url)));
    }
    if (path.empty() || path == "/") {
      Fail(at, Cat(Quoted(url),
                   " has no path; collectors take OTLP/HTTP traces at /v1/traces, "
                   "like ",
                   example));
    }
  }

  RouteConfig ParseRoute(const YamlItem& at) {
    YamlMap m = Map(at, {"name", "prefix", "protocol", "upstream", "upstreams", "backend", "model",
                         "version", "request_timeout", "rewrite_prefix"});
    RouteConfig r;
    const YamlItem* prefix = m.Get("prefix");
    if (prefix == nullptr) {
      Fail(at.mark, m.PathOf("prefix"),
           "required: the URL path prefix this route serves, like \"/v2/models/\" or \"/\"");
    }
    r.prefix = PathPrefix(*prefix);
    r.name = r.prefix;
    if (const YamlItem* f = m.Get("name")) r.name = Label(*f);
    if (const YamlItem* f = m.Get("protocol")) r.protocol = Protocol(*f);
    const YamlItem* upstream = m.Get("upstream");
    const YamlItem* upstreams = m.Get("upstreams");
    if (const YamlItem* f = m.Get("backend")) {
      if (Str(*f) != "local") {
        Fail(*f, Cat("the only backend is \"local\" (the built-in model backend, models:); "
                     "proxy to a server with upstream: \"host:port\" instead, got ",
                     Quoted(Str(*f))));
      }
      if (upstream != nullptr || upstreams != nullptr) {
        Fail(upstream != nullptr ? *upstream : *upstreams,
             "a route with backend: local is served in-process; remove upstream(s)");
      }
      r.local_backend = true;
      r.protocol = RouteProtocol::kKServe;
    } else if (upstream != nullptr && upstreams != nullptr) {
      Fail(*upstreams, "give upstream (one host:port) or upstreams (a list), not both");
    }
    if (upstream != nullptr) {
      if (upstream->node.IsSequence()) {
        Fail(*upstream, "is one host:port; write a list as upstreams: [\"host:port\", ...]");
      }
      r.upstreams.push_back(Endpoint(*upstream, /*upstream=*/true));
    } else if (upstreams != nullptr) {
      const std::vector<YamlItem> items = upstreams->node.IsScalar()
                                              ? std::vector<YamlItem>{*upstreams}
                                              : List(*upstreams, kMaxUpstreamsPerRoute);
      for (const YamlItem& e : items) {
        HostPort hp = Endpoint(e, /*upstream=*/true);
        if (std::find(r.upstreams.begin(), r.upstreams.end(), hp) != r.upstreams.end()) {
          Fail(e, Cat(Quoted(hp.ToString()), " appears twice"));
        }
        r.upstreams.push_back(std::move(hp));
      }
      if (r.upstreams.empty()) Fail(*upstreams, "needs at least one host:port");
    } else if (!r.local_backend) {
      Fail(at.mark, m.PathOf("upstream"),
           "required: give upstream: \"host:port\", upstreams: [\"host:port\", ...] or "
           "backend: local");
    }
    if (const YamlItem* f = m.Get("model")) r.model = Label(*f);
    if (const YamlItem* f = m.Get("version")) r.version = Label(*f);
    if (const YamlItem* f = m.Get("request_timeout")) r.request_timeout = Positive(*f);
    if (const YamlItem* f = m.Get("rewrite_prefix")) {
      if (!Str(*f).empty()) r.rewrite_prefix = PathPrefix(*f);
    }
    return r;
  }

  model::ModelConfig ParseModel(const YamlItem& at) {
    YamlMap m =
        Map(at, {"name", "versions", "default_version", "max_batch_size", "max_queue_delay",
                 "queue_capacity", "workers", "profile_sample_rate", "profile_depth", "features"});
    model::ModelConfig c;
    const YamlItem* name = m.Get("name");
    if (name == nullptr) {
      Fail(at.mark, m.PathOf("name"), "required: the model's name in /v2/models/{name}/infer");
    }
    c.name = Label(*name);
    if (c.name.find('/') != std::string::npos) Fail(*name, "must not contain '/'");
    const YamlItem* versions = m.Get("versions");
    if (versions == nullptr) {
      Fail(at.mark, m.PathOf("versions"),
           "required: a list like [{version: \"1\", path: models/risk_v1.pt}]");
    }
    for (const YamlItem& e : List(*versions, 64)) {
      YamlMap v = Map(e, {"version", "path"});
      const YamlItem* version = v.Get("version");
      const YamlItem* path = v.Get("path");
      if (version == nullptr || path == nullptr) {
        Fail(e, "needs version (its label) and path (the TorchScript file)");
      }
      model::ModelVersionConfig mv{Label(*version), Name(*path)};
      if (mv.version.find('/') != std::string::npos) Fail(*version, "must not contain '/'");
      for (const model::ModelVersionConfig& other : c.versions) {
        if (other.version == mv.version) Fail(*version, Cat(Quoted(mv.version), " appears twice"));
      }
      c.versions.push_back(std::move(mv));
    }
    if (c.versions.empty()) Fail(*versions, "needs at least one version");
    if (const YamlItem* f = m.Get("default_version")) {
      c.default_version = Label(*f);
      bool known = false;
      for (const auto& v : c.versions) known |= v.version == c.default_version;
      if (!known) Fail(*f, Cat(Quoted(c.default_version), " is not one of the versions"));
    }
    if (const YamlItem* f = m.Get("max_batch_size")) c.max_batch_size = Int(*f, 1, 1024);
    if (const YamlItem* f = m.Get("max_queue_delay")) {
      c.max_queue_delay = Dur(*f);
      if (c.max_queue_delay < Duration(0) || c.max_queue_delay > 1s) {
        Fail(*f, Cat("must be from 0 to 1s, got ", Quoted(Str(*f))));
      }
    }
    if (const YamlItem* f = m.Get("queue_capacity")) c.queue_capacity = Count(*f, 1 << 20);
    if (const YamlItem* f = m.Get("workers")) c.workers = Int(*f, 1, 64);
    if (const YamlItem* f = m.Get("profile_sample_rate")) {
      double rate = -1;
      if (!YAML::convert<double>::decode(f->node, rate) || !(rate >= 0 && rate <= 1)) {
        Fail(*f, Cat("must be a fraction from 0 (off) to 1 (every pass), got ", Quoted(Str(*f))));
      }
      c.profile_sample_rate = rate;
    }
    if (const YamlItem* f = m.Get("profile_depth")) c.profile_depth = Int(*f, 1, 8);
    if (const YamlItem* f = m.Get("features")) {
      YamlMap fm = Map(*f, {"input", "prefix"});
      const YamlItem* input = fm.Get("input");
      if (input == nullptr) {
        Fail(f->mark, fm.PathOf("input"), "required: the BYTES input that holds the keys");
      }
      c.features.input = Str(*input);
      if (c.features.input.empty()) Fail(*input, "must not be empty");
      if (const YamlItem* p = fm.Get("prefix")) c.features.prefix = Str(*p);
    }
    return c;
  }

  void ParseModels(const YamlItem& at, std::vector<model::ModelConfig>& models) {
    for (const YamlItem& e : List(at, 256)) {
      model::ModelConfig c = ParseModel(e);
      for (const model::ModelConfig& other : models) {
        if (other.name == c.name) {
          Fail(MarkOf(Cat(e.path, ".name")), Cat(e.path, ".name"),
               Cat("model ", Quoted(c.name), " is configured twice"));
        }
      }
      models.push_back(std::move(c));
    }
  }

  void ParseRoutes(const YamlItem& at, std::vector<RouteConfig>& routes) {
    std::map<std::string, size_t, std::less<>> names;
    std::map<std::string, size_t, std::less<>> prefixes;
    for (const YamlItem& e : List(at, kMaxRoutes)) {
      RouteConfig r = ParseRoute(e);
      const size_t i = routes.size();
      if (auto [it, added] = prefixes.emplace(r.prefix, i); !added) {
        Fail(MarkOf(Cat(e.path, ".prefix")), Cat(e.path, ".prefix"),
             Cat("prefix ", Quoted(r.prefix), " is already the prefix of ", at.path, '[',
                 it->second, "]; one route per prefix"));
      }
      if (auto [it, added] = names.emplace(r.name, i); !added) {
        const std::string name_path = Cat(e.path, ".name");
        Fail(
            MarkOf(name_path), name_path,
            Cat("route name ", Quoted(r.name), " is already the name of ", at.path, '[', it->second,
                "]; route names are the `route` label and must be unique (a route without a "
                "name is named after its prefix)"));
      }
      routes.push_back(std::move(r));
    }
    if (routes.empty()) {
      Fail(at, "needs at least one route, like [{prefix: \"/\", upstream: \"127.0.0.1:8000\"}]");
    }
  }
};

GatewayConfig Parser::Parse(const YAML::Node& root) {
  GatewayConfig c;
  YamlMap top = Map(Root(root),
                    {"listen", "threads", "limits", "timeouts", "health", "tick", "rules_file",
                     "api_token", "api_token_file", "tracing", "store", "delivery", "external_url",
                     "routes", "models", "model_threads", "feature_store", "dashboard",
                     "allowed_hosts"});
  if (const YamlItem* f = top.Get("listen")) c.listen = Endpoint(*f, /*upstream=*/false);
  if (const YamlItem* f = top.Get("threads")) {
    c.threads = Int(*f, INT_MIN);
    if (c.threads < 0 || c.threads > 1024) {
      Fail(*f, Cat("must be from 0 (one per core) to 1024, got ", c.threads));
    }
  }
  if (const YamlItem* f = top.Get("limits")) ParseLimits(*f, c.limits);
  if (const YamlItem* f = top.Get("timeouts")) ParseTimeouts(*f, c.timeouts);
  if (const YamlItem* f = top.Get("health")) ParseHealth(*f, c.health);
  if (const YamlItem* f = top.Get("tick")) {
    c.tick = Dur(*f);
    if (c.tick < 100ms || c.tick > 1min) {
      Fail(*f, Cat("must be from 100ms to 1m (the analysis loop runs once a tick), got ",
                   Quoted(Str(*f))));
    }
  }
  if (const YamlItem* f = top.Get("rules_file")) c.rules_file = Name(*f);
  if (const YamlItem* f = top.Get("dashboard")) c.dashboard = Bool(*f);
  const YamlItem* token = top.Get("api_token");
  const YamlItem* token_file = top.Get("api_token_file");
  if (token != nullptr && token_file != nullptr) {
    Fail(*token_file, "give api_token or api_token_file, not both");
  }
  if (token != nullptr) {
    c.api_token = Str(*token);
    if (std::optional<std::string> problem = TokenProblem(c.api_token)) {
      Fail(*token, Cat("the token ", *problem));
    }
  }
  if (token_file != nullptr) c.api_token_file = Name(*token_file);
  if (const YamlItem* f = top.Get("tracing")) ParseTracing(*f, c.tracing);
  if (const YamlItem* f = top.Get("store")) {
    YamlMap m = Map(*f, {"path", "archive_after", "history_retention"});
    if (const YamlItem* p = m.Get("path")) c.store.path = Str(*p);
    if (const YamlItem* a = m.Get("archive_after")) c.store.archive_after = Dur(*a);
    if (const YamlItem* r = m.Get("history_retention")) {
      c.store.history_retention = Dur(*r);
      if (c.store.history_retention < 1h || c.store.history_retention > kMaxHistoryRetention) {
        Fail(*r, Cat("must be from 1h to 3650d (the per-minute history is pruned past it; 35d "
                     "keeps last week and last month to compare with), got ",
                     Quoted(Str(*r))));
      }
    }
  }
  if (const YamlItem* f = top.Get("delivery")) {
    YamlMap m = Map(*f, {"initial_backoff", "max_backoff", "give_up_after"});
    if (const YamlItem* d = m.Get("initial_backoff")) c.delivery.initial_backoff = Positive(*d);
    if (const YamlItem* d = m.Get("max_backoff")) c.delivery.max_backoff = Positive(*d);
    if (const YamlItem* d = m.Get("give_up_after")) c.delivery.give_up_after = Positive(*d);
    if (c.delivery.max_backoff < c.delivery.initial_backoff) {
      Fail(*f, "max_backoff must be at least initial_backoff");
    }
  }
  if (const YamlItem* f = top.Get("external_url")) {
    c.external_url = Str(*f);
    if (!c.external_url.starts_with("http://") && !c.external_url.starts_with("https://")) {
      Fail(*f, Cat("must start with http:// or https://, got ", Quoted(c.external_url)));
    }
    while (c.external_url.ends_with('/')) c.external_url.pop_back();
  }
  if (const YamlItem* f = top.Get("allowed_hosts")) {
    for (const YamlItem& e : List(*f, 256)) {
      std::string host = Str(e);
      for (char& ch : host) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
      const bool name = !host.empty() && host.size() <= 253 &&
                        std::all_of(host.begin(), host.end(), [](char ch) {
                          return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
                                 ch == '-' || ch == '.' || ch == '_';
                        });
      if (!name) {
        Fail(e, Cat("expected a host name like \"tailguard.internal\" (letters, digits, '-', "
                    "'.', '_'; no port, no scheme), got ",
                    Quoted(Str(e))));
      }
      c.allowed_hosts.push_back(std::move(host));
    }
  }
  const YamlItem* routes = top.Get("routes");
  if (routes == nullptr) {
    Fail(YAML::Mark(), "routes",
         "required: at least one route, like routes: [{prefix: \"/\", upstream: "
         "\"127.0.0.1:8000\"}]");
  }
  ParseRoutes(*routes, c.routes);
  if (const YamlItem* f = top.Get("models")) ParseModels(*f, c.models);
  if (const YamlItem* f = top.Get("model_threads")) c.model_threads = Int(*f, 1, 256);
  if (const YamlItem* f = top.Get("feature_store")) {
    YamlMap m = Map(*f, {"redis", "key_prefix", "timeout"});
    if (const YamlItem* r = m.Get("redis")) {
      c.feature_store.redis = Str(*r);
      if (!c.feature_store.redis.empty()) Endpoint(*r, /*upstream=*/true);
    }
    if (const YamlItem* p = m.Get("key_prefix")) c.feature_store.key_prefix = Str(*p);
    if (const YamlItem* t = m.Get("timeout")) c.feature_store.timeout = Positive(*t);
  }
  const bool local = std::any_of(c.routes.begin(), c.routes.end(),
                                 [](const RouteConfig& r) { return r.local_backend; });
  if (local && c.models.empty()) {
    Fail(MarkOf("routes"), "models",
         "a route has backend: local but no models are configured; add models: [{name: ..., "
         "versions: [{version: \"1\", path: model.pt}]}]");
  }
  if (!local && !c.models.empty()) {
    Fail(MarkOf("models"), "models",
         "models are configured but no route serves them; add a route with backend: local, like "
         "{prefix: \"/v2/models/\", backend: local}");
  }
  return c;
}

// The parse with the walker kept, for LoadGatewayConfig to locate fields.
absl::StatusOr<GatewayConfig> Parse(std::string_view yaml, std::string_view file_name,
                                    Parser& parser) {
  if (yaml.size() > kMaxConfigBytes) {
    return absl::InvalidArgumentError(Cat(file_name, ": the file is ", yaml.size(),
                                          " bytes; a configuration may be at most ",
                                          SizeText(kMaxConfigBytes)));
  }
  try {
    const YAML::Node root = YAML::Load(std::string(yaml));
    return parser.Parse(root);
  } catch (const YamlFailure& f) {
    return YamlErrorStatus(file_name, f);
  } catch (const YAML::Exception& e) {
    return YamlErrorStatus(file_name, YamlFailure{e.mark, "", e.msg});
  } catch (const std::exception& e) {
    return absl::InvalidArgumentError(Cat(file_name, ": cannot parse: ", e.what()));
  }
}

std::string Resolve(const std::string& config_path, const std::string& path) {
  const std::filesystem::path p(path);
  if (p.is_absolute()) return path;
  return (std::filesystem::path(config_path).parent_path() / p).string();
}

}  // namespace

std::string HostPort::ToString() const {
  return host.find(':') != std::string::npos ? Cat('[', host, "]:", port) : Cat(host, ':', port);
}

absl::StatusOr<HostPort> ParseHostPort(std::string_view text) {
  const std::string q = Quoted(text);
  const auto error = [](std::string message) {
    return absl::InvalidArgumentError(std::move(message));
  };
  if (text.empty()) return error("expected host:port like \"127.0.0.1:8080\", got \"\"");
  if (const size_t scheme = text.find("://"); scheme != std::string_view::npos) {
    std::string_view rest = text.substr(scheme + 3);
    rest = rest.substr(0, rest.find('/'));
    return error(Cat(q, " is a URL; write just host:port, like ", Quoted(rest)));
  }
  if (std::any_of(text.begin(), text.end(), IsControlOrSpace)) {
    return error(Cat(q,
                     " contains spaces or control characters; expected host:port like "
                     "\"127.0.0.1:8080\""));
  }
  if (std::all_of(text.begin(), text.end(), IsDigit)) {
    return error(Cat(q, " is only a port; write \"127.0.0.1:", text,
                     "\" (this machine only) or \"0.0.0.0:", text, "\" (every interface)"));
  }
  HostPort hp;
  std::string_view port;
  if (text.front() == '[') {
    const size_t close = text.find(']');
    if (close == std::string_view::npos) {
      return error(Cat(q, " has no closing ']'; write an IPv6 address like \"[::1]:8080\""));
    }
    hp.host = std::string(text.substr(1, close - 1));
    const std::string_view after = text.substr(close + 1);
    if (after.empty()) {
      return error(
          Cat(q, " has no port; write it as host:port, like ", Quoted(Cat(text, ":8080"))));
    }
    if (after.front() != ':') {
      return error(Cat(q, ": expected ':' and a port after ']', like \"[::1]:8080\""));
    }
    port = after.substr(1);
    if (!hp.host.empty() && !IsIpv6Host(hp.host)) {
      return error(Cat(q, ": only an IPv6 address goes in brackets, like \"[::1]:8080\""));
    }
  } else {
    const size_t colon = text.rfind(':');
    if (colon == std::string_view::npos) {
      return error(
          Cat(q, " has no port; write it as host:port, like ", Quoted(Cat(text, ":8080"))));
    }
    if (text.find(':') != colon) {
      return error(Cat(q, ": put an IPv6 address in brackets, like \"[::1]:8080\""));
    }
    hp.host = std::string(text.substr(0, colon));
    port = text.substr(colon + 1);
    if (!IsHostName(hp.host)) {
      return error(Cat(q, ": the host may contain only letters, digits, '-', '.' and '_'"));
    }
  }
  if (hp.host.empty()) {
    return error(Cat(q, " has no host; write \"127.0.0.1", text.substr(text.rfind(':')),
                     "\" (this machine only) or \"0.0.0.0", text.substr(text.rfind(':')),
                     "\" (every interface)"));
  }
  if (hp.host.size() > 253) return error(Cat(q, ": the host is longer than 253 characters"));
  if (port.empty()) {
    return error(Cat(q, " has no port; write it as host:port, like ",
                     Quoted(Cat(text.substr(0, text.size() - 1), ":8080"))));
  }
  if (!std::all_of(port.begin(), port.end(), IsDigit)) {
    return error(Cat(q, ": the port must be a number from 0 to 65535"));
  }
  unsigned value = 0;
  const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
  if (ec != std::errc() || value > 65535) {
    return error(Cat(q, ": the port is out of range (0-65535)"));
  }
  hp.port = static_cast<uint16_t>(value);
  return hp;
}

std::string_view RouteProtocolName(RouteProtocol protocol) {
  switch (protocol) {
    case RouteProtocol::kAuto:
      return "auto";
    case RouteProtocol::kKServe:
      return "kserve";
    case RouteProtocol::kOpenAI:
      return "openai";
    case RouteProtocol::kHttp:
      return "http";
  }
  return "auto";
}

absl::StatusOr<GatewayConfig> ParseGatewayConfig(std::string_view yaml,
                                                 std::string_view file_name) {
  Parser parser;
  return Parse(yaml, file_name, parser);
}

absl::StatusOr<GatewayConfig> LoadGatewayConfig(const std::string& path) {
  absl::StatusOr<std::string> text = ReadFileUpTo(path, kMaxConfigBytes);
  if (absl::IsOutOfRange(text.status())) {
    return absl::InvalidArgumentError(Cat(path, ": the file ", text.status().message(),
                                          "; that is too much for a configuration"));
  }
  if (!text.ok()) {
    return absl::NotFoundError(
        Cat(path, ": cannot read the configuration file: ", text.status().message()));
  }
  Parser parser;
  absl::StatusOr<GatewayConfig> config = Parse(*text, path, parser);
  if (!config.ok()) return config;
  // Errors about the files the configuration names, at the line that names them.
  const auto error = [&](absl::StatusCode code, std::string field, std::string message) {
    const YamlFailure f{parser.MarkOf(field), field, std::move(message)};
    return absl::Status(code, YamlErrorText(path, f));
  };
  const std::string relative_hint =
      Cat(" (a relative path is relative to the directory of ", path, ")");
  if (!config->rules_file.empty()) {
    config->rules_file = Resolve(path, config->rules_file);
    std::error_code ec;
    if (!std::ifstream(config->rules_file) ||
        std::filesystem::is_directory(config->rules_file, ec)) {
      return error(absl::StatusCode::kNotFound, "rules_file",
                   Cat("cannot open \"", config->rules_file, '"', relative_hint));
    }
  }
  if (!config->store.path.empty()) config->store.path = Resolve(path, config->store.path);
  for (size_t i = 0; i < config->models.size(); ++i) {
    model::ModelConfig& m = config->models[i];
    for (size_t k = 0; k < m.versions.size(); ++k) {
      m.versions[k].path = Resolve(path, m.versions[k].path);
      std::error_code ec;
      if (!std::ifstream(m.versions[k].path) ||
          std::filesystem::is_directory(m.versions[k].path, ec)) {
        return error(absl::StatusCode::kNotFound, Cat("models[", i, "].versions[", k, "].path"),
                     Cat("cannot open \"", m.versions[k].path, '"', relative_hint));
      }
    }
  }
  if (!config->api_token_file.empty()) {
    config->api_token_file = Resolve(path, config->api_token_file);
    absl::StatusOr<std::string> token = ReadFileUpTo(config->api_token_file, kMaxTokenBytes);
    if (!token.ok()) {
      return error(absl::IsOutOfRange(token.status()) ? absl::StatusCode::kInvalidArgument
                                                      : absl::StatusCode::kNotFound,
                   "api_token_file",
                   Cat("cannot read \"", config->api_token_file, "\": ", token.status().message(),
                       absl::IsNotFound(token.status()) ? relative_hint : ""));
    }
    while (!token->empty() && (token->back() == '\n' || token->back() == '\r')) {
      token->pop_back();
    }
    if (std::optional<std::string> problem = TokenProblem(*token)) {
      return error(absl::StatusCode::kInvalidArgument, "api_token_file",
                   Cat("the token in \"", config->api_token_file, "\" ", *problem));
    }
    config->api_token = *std::move(token);
  }
  return config;
}

const RouteConfig* MatchRoute(const GatewayConfig& config, std::string_view path) {
  const RouteConfig* best = nullptr;
  for (const RouteConfig& r : config.routes) {
    const std::string_view prefix = r.prefix;
    if (!path.starts_with(prefix)) continue;
    if (best != nullptr && best->prefix.size() >= prefix.size()) continue;
    if (path.size() == prefix.size() || prefix.back() == '/' || path[prefix.size()] == '/' ||
        path[prefix.size()] == '?') {
      best = &r;
    }
  }
  return best;
}

std::string RewritePath(const RouteConfig& route, std::string_view target) {
  if (route.rewrite_prefix.empty()) return std::string(target);
  const std::string_view rest = target.substr(std::min(route.prefix.size(), target.size()));
  if (rest.empty() || rest.front() == '?') return Cat(route.rewrite_prefix, rest);
  std::string_view base = route.rewrite_prefix;
  if (base.back() == '/') base.remove_suffix(1);
  return rest.front() == '/' ? Cat(base, rest) : Cat(base, '/', rest);
}

}  // namespace tailguard::server
