// /metrics, health and the JSON API.
#include "server/api.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>

#include "alert/notify/delivery.h"
#include "alert/notify/journal.h"
#include "alert/notify/silences.h"
#include "alert/selector.h"
#include "collect/procfs.h"
#include "common/duration.h"
#include "common/strings.h"
#include "diagnose/quadrant.h"
#include "metrics/collector.h"
#include "metrics/heatmap.h"
#include "metrics/series_key.h"
#include "model/backend.h"
#include "nlohmann/json.hpp"
#include "server/http_status.h"
#include "server/otlp.h"
#include "server/protocol.h"
#include "store/event_store.h"
#include "tailguard/alert.h"
#include "tailguard/exposition.h"
#include "tailguard/series_io.h"
#include "tailguard/version.h"

namespace tailguard::server {
namespace {

using nlohmann::json;

// A double as JSON: null for NaN and infinities (JSON has neither).
json Num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

json LabelsJson(const Labels& labels) {
  json out = json::object();
  for (const auto& [k, v] : labels) out[k] = v;
  return out;
}

std::string TimeText(WallTime t) { return FormatRfc3339(t); }

// The value of `key` in a query string ("a=1&b=2"), percent-decoded; nullopt when absent.
std::optional<std::string> QueryParam(std::string_view query, std::string_view key) {
  while (!query.empty()) {
    const size_t amp = query.find('&');
    const std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    const size_t eq = pair.find('=');
    if (pair.substr(0, eq) != key) continue;
    const std::string_view raw = eq == std::string_view::npos ? "" : pair.substr(eq + 1);
    // A malformed escape is taken literally.
    return PercentDecode(raw, /*plus_as_space=*/true).value_or(std::string(raw));
  }
  return std::nullopt;
}

// The statistics of a point or of a series' window.
json PointJson(const HistoryPoint& p) {
  return {{"count", p.count},
          {"p50", Num(p.p50)},
          {"p90", Num(p.p90)},
          {"p99", Num(p.p99)},
          {"p999", Num(p.p999)},
          {"mean", Num(p.mean)},
          {"max", Num(p.max)},
          {"anomaly_score", Num(p.anomaly_score)},
          {"baseline_p99", Num(p.baseline_p99)}};
}

constexpr std::string_view kSilencesPath = "/api/v1/silences";

// One diagnosis of an episode (store::DiagnosisRow), as the diagnosis panel shows it.
json DiagnosisJson(const store::DiagnosisRow& d) {
  json changes = json::array();
  for (const store::ChangeRow& c : d.changes) {
    changes.push_back({{"time", TimeText(c.time)},
                       {"quadrant", c.quadrant},
                       {"subject", c.subject},
                       {"what", c.what}});
  }
  json causes = json::array();
  for (const store::DiagnosisCauseRow& c : d.causes) {
    json points = json::array();
    for (const auto& [t, v] : c.points) points.push_back({Num(t), Num(v)});
    causes.push_back({{"rank", c.rank},
                      {"series", c.series},
                      {"series_id", LiveLoop::SeriesId(c.series)},
                      {"unit", diagnose::UnitNameOf(c.series)},
                      {"quadrant", c.quadrant},
                      {"kind", c.kind},
                      {"score", Num(c.score)},
                      {"confidence", Num(c.confidence)},
                      {"baseline",
                       {{"median", Num(c.baseline_median)},
                        {"q1", Num(c.baseline_q1)},
                        {"q3", Num(c.baseline_q3)}}},
                      {"peak", Num(c.peak)},
                      {"onset", TimeText(c.onset)},
                      {"explained", Num(c.explained)},
                      {"rationale", c.rationale},
                      {"points", points}});
  }
  return {{"time", TimeText(d.time)},
          {"quadrant", d.quadrant},
          {"summary", d.summary},
          {"contention", d.contention.empty() ? json(nullptr) : json(d.contention)},
          {"changes", changes},
          {"causes", causes},
          {"symptoms", d.symptoms},
          {"series_considered", d.series_considered},
          {"seconds", Num(d.seconds)}};
}

// An alert episode of the store, as the alerts view shows it.
json EpisodeJson(const store::AlertRow& a) {
  json j{{"id", a.id},
         {"rule", a.rule},
         {"series", a.series},
         {"series_id", LiveLoop::SeriesId(a.series)},
         {"labels", LabelsJson(a.labels)},
         {"statistic", a.stat},
         {"unit", a.unit},
         {"state", store::EpisodeStateName(a.state)},
         {"tier", a.tier},
         {"severity", a.severity},
         {"value", Num(a.value)},
         {"threshold", Num(a.threshold)},
         {"baseline_p99", Num(a.baseline_p99)},
         {"started_at", TimeText(a.started_at)},
         {"fired_at", a.fired_at ? json(TimeText(*a.fired_at)) : json(nullptr)},
         {"ended_at", a.ended_at ? json(TimeText(*a.ended_at)) : json(nullptr)},
         {"updated_at", TimeText(a.updated_at)},
         {"acked_by", a.acked_by.empty() ? json(nullptr) : json(a.acked_by)},
         {"acked_at", a.acked_at ? json(TimeText(*a.acked_at)) : json(nullptr)},
         {"ack_comment", a.ack_comment}};
  return j;
}

json SilenceJson(const store::Silence& s, WallTime now) {
  return {{"id", s.id},
          {"matchers", s.matchers},
          {"starts_at", TimeText(s.starts_at)},
          {"ends_at", TimeText(s.ends_at)},
          {"created_by", s.created_by},
          {"comment", s.comment},
          {"created_at", TimeText(s.created_at)},
          {"active", s.starts_at <= now && now < s.ends_at}};
}

// A positive integer id from a path segment.
std::optional<int64_t> ParseId(std::string_view text) {
  int64_t v = 0;
  const auto r = std::from_chars(text.data(), text.data() + text.size(), v);
  if (r.ec != std::errc() || r.ptr != text.data() + text.size() || v <= 0) return std::nullopt;
  return v;
}

// A JSON object body; an error message naming what is wrong otherwise.
absl::StatusOr<json> ParseBody(std::string_view body, std::string_view example) {
  json j = json::parse(body, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.is_object()) {
    return absl::InvalidArgumentError(Cat("the body must be a JSON object, e.g. ", example));
  }
  return j;
}

// A string member of a JSON body: "" when absent; an error when of another type.
absl::StatusOr<std::string> StringField(const json& body, const char* name) {
  auto it = body.find(name);
  if (it == body.end() || it->is_null()) return std::string();
  if (!it->is_string()) {
    return absl::InvalidArgumentError(Cat("\"", name, "\" must be a string"));
  }
  return it->get<std::string>();
}

ApiResponse Error(int status, std::string_view code, std::string_view message) {
  return {status, "application/json", ErrorJson(code, message)};
}

// Invalid UTF-8 (from a percent-decoded query, say) becomes U+FFFD instead of an exception.
std::string Dump(const json& j) { return j.dump(-1, ' ', false, json::error_handler_t::replace); }

ApiResponse Json(const json& j) { return {200, "application/json", Dump(j)}; }

// A failed call's answer, through the one table of server/http_status.h. A 5xx names what was
// being done ("reading the silences") and the status code; a 4xx is the caller's to fix and
// gives the message alone.
ApiResponse StatusError(const absl::Status& s, std::string_view doing) {
  const HttpError e = HttpErrorFor(s.code());
  if (e.status < 500) return Error(e.status, e.code, std::string(s.message()));
  return Error(e.status, e.code,
               Cat(doing, " failed (", absl::StatusCodeToString(s.code()), "): ", s.message()));
}

// A positive integer query parameter with a default and a ceiling.
absl::StatusOr<size_t> Limit(std::string_view query, size_t default_value, size_t max) {
  const std::optional<std::string> text = QueryParam(query, "limit");
  if (!text) return default_value;
  size_t v = 0;
  const auto r = std::from_chars(text->data(), text->data() + text->size(), v);
  if (r.ec != std::errc() || r.ptr != text->data() + text->size() || v == 0) {
    return absl::InvalidArgumentError(
        Cat("limit: expected a positive integer, got \"", *text, "\""));
  }
  return std::min(v, max);
}

// A time: RFC 3339, Unix seconds, "now", or "now-1h" / "-1h" relative to now.
absl::StatusOr<WallTime> ParseTime(std::string_view text, WallTime now) {
  if (text == "now") return now;
  std::string_view rel = text;
  if (rel.starts_with("now")) rel.remove_prefix(3);
  if (rel.starts_with("-")) {
    std::optional<Duration> d = ParseDurationText(rel.substr(1));
    if (d) return now - *d;
  }
  return ParseTimestamp(text);
}

// Writes metric families in Prometheus text 0.0.4 or OpenMetrics 1.0.
using Page = metrics::MetricsWriter;

// The built-in model backend: versions and their graph fingerprints, queues, and the profile
// totals (the source of a per-layer heatmap).
void AppendModelMetrics(Page& page, const std::vector<model::ModelStatus>& models) {
  auto per_version = [&](auto value) {
    for (const model::ModelStatus& m : models) {
      for (const model::VersionStatus& v : m.versions) {
        page.Sample({{"model", m.name}, {"version", v.version}}, static_cast<double>(value(v)));
      }
    }
  };
  page.Gauge("tailguard_model_info",
             "Loaded model versions and their graph fingerprints; 1 for the default version.");
  for (const model::ModelStatus& m : models) {
    for (const model::VersionStatus& v : m.versions) {
      page.Sample({{"fingerprint", v.fingerprint}, {"model", m.name}, {"version", v.version}},
                  v.is_default ? 1 : 0);
    }
  }
  // tailguard_model_queue_depth is a gauge of the registry (the backend's), windowed and kept
  // in history: the page has it with the registry's series.
  page.Counter("tailguard_model_rejected",
               "Requests answered 503 because the model's queue was full.");
  for (const model::ModelStatus& m : models) {
    page.Sample({{"model", m.name}}, static_cast<double>(m.rejected));
  }
  page.Counter("tailguard_model_requests", "Requests a model version ran.");
  per_version([](const model::VersionStatus& v) { return v.requests; });
  page.Counter("tailguard_model_batches", "Forward passes (batches) a model version ran.");
  per_version([](const model::VersionStatus& v) { return v.batches; });
  page.Counter("tailguard_model_profiled_passes",
               "Forward passes timed per submodule and operator.");
  per_version([](const model::VersionStatus& v) { return v.profiled; });
  page.Counter("tailguard_model_layer_seconds",
               "Time in each submodule over the profiled forward passes.");
  for (const model::ModelStatus& m : models) {
    for (const model::VersionStatus& v : m.versions) {
      for (const auto& [layer, ns] : v.layer_ns) {
        page.Sample({{"layer", layer}, {"model", m.name}, {"version", v.version}},
                    static_cast<double>(ns) / 1e9);
      }
    }
  }
  page.Counter("tailguard_model_operator_seconds",
               "Time in each operator over the profiled forward passes.");
  for (const model::ModelStatus& m : models) {
    for (const model::VersionStatus& v : m.versions) {
      for (const auto& [op, ns] : v.op_ns) {
        page.Sample({{"model", m.name}, {"operator", op}, {"version", v.version}},
                    static_cast<double>(ns) / 1e9);
      }
    }
  }
}

Labels RouteLabelsOf(const RequestMetrics& m) {
  return {
      {"model", m.labels().model}, {"route", m.labels().route}, {"version", m.labels().version}};
}

}  // namespace

std::string ErrorJson(std::string_view code, std::string_view message) {
  return Dump(json{{"error", {{"code", code}, {"message", message}}}});
}

bool Api::Handles(std::string_view path) {
  return path == "/metrics" || path == "/healthz" || path == "/readyz" || path == "/api" ||
         path.starts_with("/api/");
}

std::string HostOfHeader(std::string_view host) {
  if (host.starts_with('[')) {
    const size_t end = host.find(']');
    host = host.substr(1, end == std::string_view::npos ? std::string_view::npos : end - 1);
  } else if (const size_t colon = host.rfind(':'); colon != std::string_view::npos) {
    host = host.substr(0, colon);
  }
  std::string out(host);
  for (char& c : out) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  while (out.ends_with('.')) out.pop_back();  // "localhost." is "localhost"
  return out;
}

bool Api::HasToken(const ApiRequest& request) const {
  if (s_.api_token.empty()) return false;
  // "Bearer <token>", the scheme in any case (RFC 9110 11.1), compared in constant time so
  // that the answer's timing tells nothing of the token.
  std::string_view a = request.authorization;
  constexpr std::string_view kScheme = "bearer ";
  if (a.size() < kScheme.size() || !EqualsIgnoreCase(a.substr(0, kScheme.size()), kScheme)) {
    return false;
  }
  a.remove_prefix(kScheme.size());
  const std::string_view token = s_.api_token;
  unsigned char diff = a.size() == token.size() ? 0 : 1;
  for (size_t i = 0; i < token.size(); ++i) {
    diff |= static_cast<unsigned char>(token[i] ^ (i < a.size() ? a[i] : 0));
  }
  return diff == 0;
}

bool Api::HostAllowed(std::string_view header) const {
  if (header.empty()) return true;  // HTTP/1.0 without Host: no browser sends that
  const std::string host = HostOfHeader(header);
  // An address typed into the browser is this gateway's (a rebinding needs a name).
  if (header.starts_with('[')) return true;  // IPv6, which a Host header writes in brackets
  if (!host.empty() && std::all_of(host.begin(), host.end(),
                                   [](char c) { return (c >= '0' && c <= '9') || c == '.'; })) {
    return true;
  }
  if (host == "localhost" || host.ends_with(".localhost")) return true;
  return std::find(s_.allowed_hosts.begin(), s_.allowed_hosts.end(), host) !=
         s_.allowed_hosts.end();
}

ApiResponse Api::Handle(const ApiRequest& request) const {
  std::string_view path = request.target;
  std::string_view query;
  if (const size_t q = path.find('?'); q != std::string_view::npos) {
    query = path.substr(q + 1);
    path = path.substr(0, q);
  }
  // The API by a name the gateway does not know: a web page that rebound its own name to this
  // address, reading alerts or changing silences through a browser on the inside. /metrics and
  // the health checks are not the browser's, and take any Host (Prometheus sends its target's).
  if (path.starts_with("/api/") && !HostAllowed(request.host) && !HasToken(request)) {
    return Error(403, "host_not_allowed",
                 Cat("the API does not answer to Host \"", request.host.substr(0, 256),
                     "\": only to IP addresses, localhost, this machine's name and external_url; "
                     "add the name to allowed_hosts: in the gateway configuration, or send "
                     "Authorization: Bearer <api_token>"));
  }
  if (path == "/api/v1/models" || path.starts_with("/api/v1/models/")) {
    return Models(request.method, path, query, request);
  }
  // The mutating endpoints: acknowledge an alert, add and expire silences.
  if (path == "/api/v1/silences" || path.starts_with("/api/v1/silences/")) {
    const std::string_view id =
        path.size() > kSilencesPath.size() ? path.substr(kSilencesPath.size() + 1) : "";
    return Silences(request.method, id, request);
  }
  if (path.starts_with("/api/v1/alerts/")) {
    std::string_view rest = path.substr(std::string_view("/api/v1/alerts/").size());
    if (rest.ends_with("/ack")) {
      if (request.method != "POST") {
        return Error(405, "method_not_allowed",
                     Cat(request.method, " is not allowed on ", path, "; use POST"));
      }
      return Ack(rest.substr(0, rest.size() - 4), request);
    }
  }
  if (request.method != "GET" && request.method != "HEAD") {
    return Error(405, "method_not_allowed",
                 Cat(request.method, " is not allowed on ", path,
                     "; the API is read-only but for POST /api/v1/alerts/{id}/ack, POST and DELETE "
                     "/api/v1/silences and POST /api/v1/models/{name}/default"));
  }
  if (path == "/healthz") return Json({{"status", "ok"}});
  if (path == "/readyz") return Ready();
  if (path == "/metrics") {
    const bool om = request.accept.find("application/openmetrics-text") != std::string_view::npos;
    return {200,
            om ? "application/openmetrics-text; version=1.0.0; charset=utf-8"
               : "text/plain; version=0.0.4; charset=utf-8",
            Metrics(om)};
  }
  if (path == "/api/v1/info") return Info();
  if (path == "/api/v1/series") return Series(query);
  if (path.starts_with("/api/v1/series/")) {
    std::string_view rest = path.substr(std::string_view("/api/v1/series/").size());
    const size_t slash = rest.find('/');
    if (slash != std::string_view::npos && rest.substr(slash) == "/history") {
      return History(rest.substr(0, slash), query);
    }
    if (slash != std::string_view::npos && rest.substr(slash) == "/heatmap") {
      return Heatmap(rest.substr(0, slash), query);
    }
  }
  if (path == "/api/v1/alerts") return Alerts(query);
  if (path.starts_with("/api/v1/alerts/") && path.ends_with("/diagnosis")) {
    std::string_view id = path.substr(std::string_view("/api/v1/alerts/").size());
    return Diagnosis(id.substr(0, id.size() - std::string_view("/diagnosis").size()));
  }
  if (path == "/api/v1/events") return Events(query);
  if (path == "/api/v1/samples") return Samples(query);
  return Error(404, "not_found",
               Cat("no API endpoint ", path,
                   "; see /api/v1/info, /api/v1/series, /api/v1/series/{id}/history, "
                   "/api/v1/series/{id}/heatmap, /api/v1/alerts, /api/v1/alerts/{id}/diagnosis, "
                   "/api/v1/silences, "
                   "/api/v1/events, /api/v1/samples, /api/v1/models, /metrics, /healthz, "
                   "/readyz (docs/gateway.md)"));
}

ApiResponse Api::Models(std::string_view method, std::string_view path, std::string_view query,
                        const ApiRequest& request) const {
  if (s_.backend == nullptr) {
    return Error(404, "no_models",
                 "this gateway serves no models; add models: and a route with backend: local");
  }
  if (path == "/api/v1/models") {
    if (method != "GET" && method != "HEAD") {
      return Error(405, "method_not_allowed",
                   Cat(method, " is not allowed on ", path, "; use GET"));
    }
    return {200, "application/json", s_.backend->StatusJson()};
  }
  // POST /api/v1/models/{name}/default?version=V
  std::string_view rest = path.substr(std::string_view("/api/v1/models/").size());
  const size_t slash = rest.find('/');
  if (slash == std::string_view::npos || rest.substr(slash) != "/default") {
    return Error(404, "not_found",
                 Cat("no API endpoint ", path,
                     "; see GET /api/v1/models and POST /api/v1/models/{name}/default?version=V"));
  }
  if (method != "POST") {
    return Error(405, "method_not_allowed", Cat(method, " is not allowed on ", path, "; use POST"));
  }
  if (auto denied = Refused(request, "switching a model's version", false)) return *denied;
  const std::string_view name = rest.substr(0, slash);
  std::string version;
  for (std::string_view q = query; !q.empty();) {
    const size_t amp = q.find('&');
    const std::string_view pair = q.substr(0, amp);
    if (pair.starts_with("version=")) {
      version = PercentDecode(pair.substr(8), true).value_or("");
    }
    q = amp == std::string_view::npos ? std::string_view() : q.substr(amp + 1);
  }
  if (version.empty()) {
    return Error(400, "bad_request", "say which version: ?version=V (one of GET /api/v1/models)");
  }
  const absl::Status s = s_.backend->SetDefaultVersion(name, version);
  if (!s.ok()) return Error(404, "not_found", std::string(s.message()));
  return Json({{"model", name}, {"default_version", version}});
}

ApiResponse Api::Ready() const {
  json upstreams = json::array();
  const MonoTime now = (s_.clock != nullptr ? *s_.clock : Clock::Real()).MonotonicNow();
  for (const UpstreamState* u : s_.upstreams) {
    const bool ok = u->Available(now);
    upstreams.push_back({{"upstream", u->address()}, {"up", ok}});
  }
  const bool ready = s_.ready ? s_.ready() : true;
  json body{{"status", ready ? "ready" : "not_ready"}, {"upstreams", upstreams}};
  return {ready ? 200 : 503, "application/json", Dump(body)};
}

ApiResponse Api::Series(std::string_view query) const {
  json out = json::array();
  const bool all = QueryParam(query, "all") == "1";
  // match=<selector>: Prometheus series selector syntax, e.g. {route="chat",stage="total"}.
  std::optional<alert_internal::SeriesSelector> selector;
  if (auto text = QueryParam(query, "match")) {
    absl::StatusOr<std::vector<LabelMatcher>> m = ParseSelector(*text);
    absl::StatusOr<alert_internal::SeriesSelector> compiled =
        m.ok() ? alert_internal::SeriesSelector::Compile(*m)
               : absl::StatusOr<alert_internal::SeriesSelector>(m.status());
    if (!compiled.ok()) {
      return Error(400, "bad_request",
                   Cat("match: ", std::string(compiled.status().message()),
                       "; write a selector like {route=\"chat\",stage=\"total\"}"));
    }
    selector = *std::move(compiled);
  }
  const bool cumulative = QueryParam(query, "cumulative") == "1";
  std::vector<SeriesSnapshot> snapshot = s_.loop->Snapshot();
  if (auto sort = QueryParam(query, "sort")) {
    if (*sort != "worst" && *sort != "key") {
      return Error(400, "bad_request",
                   Cat("sort: expected \"worst\" or \"key\", got \"", *sort, "\""));
    }
    // Worst first: the alert state, then how far the P99 is from its baseline (on a log scale,
    // so a collapse counts like a spike; the dashboard's overview ranks the same way), then the
    // anomaly score, then a latency's P99 (sizes and counts do not compare with seconds: they
    // come after the latencies there); ties by key.
    auto rank = [](const SeriesSnapshot& s) {
      auto v = [](double x) { return std::isnan(x) ? -1.0 : x; };
      const double p = s.stats.p99, b = s.stats.baseline_p99;
      const double distance = p > 0 && b > 0 ? std::abs(std::log(p / b)) : 0.0;
      const double latency = s.series->unit() == Unit::kNanoseconds ? v(p) : -2.0;
      return std::make_tuple(static_cast<int>(s.alert_state), distance, v(s.stats.anomaly_score),
                             latency);
    };
    std::sort(snapshot.begin(), snapshot.end(),
              [&](const SeriesSnapshot& a, const SeriesSnapshot& b) {
                if (*sort == "worst" && rank(a) != rank(b)) return rank(a) > rank(b);
                return a.series->key() < b.series->key();
              });
  }
  for (const SeriesSnapshot& s : snapshot) {
    if (selector && !selector->Matches(s.series->name(), s.series->labels())) continue;
    std::optional<Histogram> since_start;
    // A stage that never happened on a route (no streaming, no Server-Timing) is not shown.
    if (!all && s.stats.count == 0 && (since_start = s.series->Cumulative())->empty()) continue;
    json j = PointJson(s.stats);
    j.update(
        {{"id", s.id},
         {"key", s.series->key()},
         {"metric", s.series->name()},
         {"labels", LabelsJson(s.series->labels())},
         {"unit", UnitName(s.series->unit())},
         {"kind", SeriesKindName(s.series->kind())},
         {"rate", Num(s.rate)},
         {"error_ratio", Num(s.error_ratio)},
         {"alert_state", s.no_data ? std::string_view("no_data") : AlertStateName(s.alert_state)},
         {"severity", s.severity}});
    // Everything since start, for comparing with Prometheus' histogram_quantile over the
    // exported counters.
    if (cumulative) {
      if (!since_start) since_start = s.series->Cumulative();
      const Histogram& h = *since_start;
      const double scale = UnitScale(s.series->unit());
      j["cumulative"] = {
          {"count", h.count()},
          {"p50", h.empty() ? json(nullptr) : json(static_cast<double>(h.Quantile(0.5)) * scale)},
          {"p99", h.empty() ? json(nullptr) : json(static_cast<double>(h.Quantile(0.99)) * scale)}};
    }
    j["live"] = true;
    out.push_back(std::move(j));
  }
  // Series the history store knows that are not live now (imported, or not seen since a
  // restart): their history can be shown; they have no current statistics.
  if (QueryParam(query, "stored") != "0") {
    for (const StoredSeries& s : s_.loop->StoredSeries()) {
      if (selector && !selector->Matches(s.metric, s.labels)) continue;
      out.push_back({{"id", s.id},
                     {"key", s.key},
                     {"metric", s.metric},
                     {"labels", LabelsJson(s.labels)},
                     {"unit", UnitName(s.unit)},
                     {"live", false},
                     {"count", 0},
                     {"alert_state", AlertStateName(AlertState::kNormal)},
                     {"first", TimeText(s.first)},
                     {"last", TimeText(s.last)}});
    }
  }
  return Json({{"window_seconds", std::chrono::duration<double>(s_.loop->options().window).count()},
               {"series", out}});
}

namespace {

// from=, to= and step= of the history and heatmap endpoints: the last hour in 10 s steps unless
// the query says otherwise.
struct TimeRange {
  WallTime from, to;
  Duration step;
};
absl::StatusOr<TimeRange> ParseRange(std::string_view query, WallTime now) {
  TimeRange r{now - std::chrono::hours(1), now, std::chrono::seconds(10)};
  if (auto v = QueryParam(query, "from")) {
    absl::StatusOr<WallTime> t = ParseTime(*v, now);
    if (!t.ok()) return absl::InvalidArgumentError(Cat("from: ", t.status().message()));
    r.from = *t;
  }
  if (auto v = QueryParam(query, "to")) {
    absl::StatusOr<WallTime> t = ParseTime(*v, now);
    if (!t.ok()) return absl::InvalidArgumentError(Cat("to: ", t.status().message()));
    r.to = *t;
  }
  if (auto v = QueryParam(query, "step")) {
    std::optional<Duration> d = ParseDurationText(*v);
    if (!d) {
      double seconds = 0;
      const auto p = std::from_chars(v->data(), v->data() + v->size(), seconds);
      if (p.ec == std::errc() && p.ptr == v->data() + v->size() && seconds > 0 && seconds < 1e9) {
        d = std::chrono::duration_cast<Duration>(std::chrono::duration<double>(seconds));
      }
    }
    if (!d || *d <= Duration::zero()) {
      return absl::InvalidArgumentError(
          Cat("step: expected a duration like \"10s\" or seconds, got \"", *v, "\""));
    }
    r.step = *d;
  }
  return r;
}

// The answer for a failed History(), Heatmap() or Resolve().
ApiResponse RangeError(const absl::Status& s) {
  return StatusError(s, "reading the history store");
}

}  // namespace

ApiResponse Api::History(std::string_view id, std::string_view query) const {
  absl::StatusOr<TimeRange> range = ParseRange(query, s_.registry->Now());
  if (!range.ok()) return Error(400, "bad_request", std::string(range.status().message()));
  const auto [from, to, step] = *range;
  absl::StatusOr<std::vector<HistoryPoint>> points = s_.loop->History(id, from, to, step);
  if (!points.ok()) return RangeError(points.status());
  json out = json::array();
  for (const HistoryPoint& p : *points) {
    json j = PointJson(p);
    j["forecast"] = Num(p.forecast);
    j["forecast_lower"] = Num(p.forecast_lower);
    j["forecast_upper"] = Num(p.forecast_upper);
    j["time"] = TimeText(p.time);
    out.push_back(std::move(j));
  }
  return Json({{"id", id},
               {"from", TimeText(from)},
               {"to", TimeText(to)},
               {"step_seconds", std::chrono::duration<double>(step).count()},
               {"points", out}});
}

ApiResponse Api::Heatmap(std::string_view id, std::string_view query) const {
  absl::StatusOr<TimeRange> range = ParseRange(query, s_.registry->Now());
  if (!range.ok()) return Error(400, "bad_request", std::string(range.status().message()));
  absl::StatusOr<tailguard::Heatmap> map =
      s_.loop->Heatmap(id, range->from, range->to, range->step);
  if (!map.ok()) return RangeError(map.status());
  json times = json::array();
  for (WallTime t : map->times) times.push_back(TimeText(t));
  // Cells as [column, row, count] triples: compact, and what ECharts' heatmap series takes.
  json cells = json::array();
  for (const tailguard::Heatmap::Cell& c : map->cells) cells.push_back({c.column, c.row, c.count});
  return Json({{"id", id},
               {"from", TimeText(range->from)},
               {"to", TimeText(range->to)},
               {"step_seconds", std::chrono::duration<double>(range->step).count()},
               {"bounds", map->bounds},
               {"times", std::move(times)},
               {"cells", std::move(cells)}});
}

ApiResponse Api::Info() const {
  const WallTime now = s_.registry->Now();
  json j{{"version", TAILGUARD_VERSION_STRING},
         {"now", TimeText(now)},
         {"tick_seconds", std::chrono::duration<double>(s_.loop->options().tick).count()},
         {"window_seconds", std::chrono::duration<double>(s_.loop->options().window).count()},
         // Changes always need the token; without one configured they are off.
         {"token_required", true},
         {"token_configured", !s_.api_token.empty()},
         {"store", s_.store != nullptr}};
  if (s_.started_at != WallTime{}) j["started_at"] = TimeText(s_.started_at);
  if (s_.history_retention > Duration::zero()) {
    j["history_retention_seconds"] = std::chrono::duration<double>(s_.history_retention).count();
  }
  return Json(j);
}

std::optional<ApiResponse> Api::Refused(const ApiRequest& request, std::string_view action,
                                        bool json_body) const {
  // Browsers send Origin on every cross-site POST and DELETE: one that names another site is a
  // page trying to act through someone's browser (which may hold the network access the token
  // would otherwise be).
  if (!request.origin.empty()) {
    std::string_view o = request.origin;
    const size_t scheme = o.find("://");
    if (scheme != std::string_view::npos) o.remove_prefix(scheme + 3);
    if (o != request.host) {
      return Error(403, "cross_site",
                   Cat(action, " from another site is refused: Origin ", request.origin,
                       " is not this gateway (", request.host,
                       "); use the dashboard served by this gateway, or a client that sends no "
                       "Origin"));
    }
  }
  if (s_.api_token.empty()) {
    return Error(403, "api_token_not_set",
                 Cat(action,
                     " is refused: this gateway has no API token, so changes through the API are "
                     "off. Set api_token_file: (a file holding the token) or api_token: in the "
                     "gateway configuration and restart; then send Authorization: Bearer <token> "
                     "(the dashboard asks for it once)"));
  }
  if (!HasToken(request)) {
    return Error(401, "unauthorized",
                 Cat(action,
                     " needs the API token: send Authorization: Bearer <api_token> (the "
                     "api_token of the gateway configuration)",
                     request.authorization.empty() ? "" : "; the token sent does not match"));
  }
  if (json_body) {
    const std::string_view type = request.content_type.substr(0, request.content_type.find(';'));
    if (!EqualsIgnoreCase(TrimAsciiSpace(type), "application/json")) {
      return Error(415, "unsupported_media_type",
                   Cat(action, " takes a JSON body: send Content-Type: application/json (got \"",
                       request.content_type, "\")"));
    }
  }
  return std::nullopt;
}

ApiResponse Api::Alerts(std::string_view query) const {
  json active = json::array();
  for (const ActiveAlert& a : s_.loop->ActiveAlerts()) {
    active.push_back({{"rule", a.rule},
                      {"series", a.series},
                      {"series_id", LiveLoop::SeriesId(a.series)},
                      {"statistic", StatisticName(a.stat)},
                      {"unit", UnitName(a.unit)},
                      // "no_data" while the alert holds for want of data (docs/alerting.md)
                      {"state", a.no_data ? std::string_view("no_data") : AlertStateName(a.state)},
                      {"no_data", a.no_data},
                      {"tier", a.tier},
                      {"severity", a.severity},
                      {"since", TimeText(a.since)},
                      {"value", Num(a.value)},
                      {"threshold", Num(a.threshold)}});
  }
  json out{{"alerts", active}};
  if (s_.store != nullptr) {
    absl::StatusOr<size_t> limit = Limit(query, 50, 1000);
    if (!limit.ok()) return Error(400, "bad_request", std::string(limit.status().message()));
    store::AlertQuery q;
    q.limit = static_cast<int>(*limit);
    q.include_archived = QueryParam(query, "archived") == "1";
    absl::StatusOr<std::vector<store::AlertRow>> rows = s_.store->ListAlerts(q);
    if (!rows.ok()) return StatusError(rows.status(), "reading the alert store");
    json episodes = json::array();
    for (const store::AlertRow& a : *rows) episodes.push_back(EpisodeJson(a));
    out["episodes"] = std::move(episodes);
  }
  return Json(out);
}

ApiResponse Api::Ack(std::string_view id_text, const ApiRequest& request) const {
  if (auto denied = Refused(request, "acknowledging an alert", true)) return *denied;
  if (s_.store == nullptr) {
    return Error(503, "no_store",
                 "acknowledging needs the event store: set store.path in the gateway "
                 "configuration");
  }
  const std::optional<int64_t> id = ParseId(id_text);
  if (!id) {
    return Error(400, "bad_request",
                 Cat("\"", id_text, "\" is not an alert id; ids are in GET /api/v1/alerts"));
  }
  absl::StatusOr<json> body =
      ParseBody(request.body, R"({"by": "alice", "comment": "looking into it"})");
  if (!body.ok()) return Error(400, "bad_request", std::string(body.status().message()));
  absl::StatusOr<std::string> by = StringField(*body, "by");
  absl::StatusOr<std::string> comment = StringField(*body, "comment");
  if (!by.ok() || !comment.ok()) {
    return Error(400, "bad_request",
                 std::string((by.ok() ? comment.status() : by.status()).message()));
  }
  if (by->empty()) {
    return Error(400, "bad_request", "say who acknowledges: {\"by\": \"alice\"}");
  }
  const absl::Status s = s_.store->Ack(*id, *by, *comment, s_.registry->Now());
  if (!s.ok()) return StatusError(s, "acknowledging");
  absl::StatusOr<store::AlertDetail> detail = s_.store->GetAlert(*id);
  if (!detail.ok()) return StatusError(detail.status(), "reading the alert");
  return Json({{"alert", EpisodeJson(detail->alert)}});
}

ApiResponse Api::Diagnosis(std::string_view id_text) const {
  if (s_.store == nullptr) {
    return Error(503, "no_store",
                 "diagnoses are kept with their alerts in the event store: set store.path in "
                 "the gateway configuration");
  }
  const std::optional<int64_t> id = ParseId(id_text);
  if (!id) {
    return Error(400, "bad_request",
                 Cat("\"", id_text, "\" is not an alert id; ids are in GET /api/v1/alerts"));
  }
  absl::StatusOr<store::AlertDetail> detail = s_.store->GetAlert(*id);
  if (!detail.ok()) return StatusError(detail.status(), "reading the alert");
  absl::StatusOr<std::vector<store::DiagnosisRow>> list = s_.store->ListDiagnoses(*id);
  if (!list.ok()) return StatusError(list.status(), "reading the diagnoses");
  json all = json::array();
  for (const store::DiagnosisRow& d : *list) all.push_back(DiagnosisJson(d));
  // The latest is what the alert is now; the earlier ones are how it developed (a fire, then
  // each escalation).
  return Json({{"alert", EpisodeJson(detail->alert)},
               {"diagnosis", all.empty() ? json(nullptr) : all.back()},
               {"diagnoses", all}});
}

ApiResponse Api::Silences(std::string_view method, std::string_view id_text,
                          const ApiRequest& request) const {
  // Changes are refused before anything else is said about them.
  if (method == "POST" && id_text.empty()) {
    if (auto denied = Refused(request, "adding a silence", true)) return *denied;
  }
  if (method == "DELETE" && !id_text.empty()) {
    if (auto denied = Refused(request, "expiring a silence", false)) return *denied;
  }
  if (s_.store == nullptr) {
    return Error(503, "no_store",
                 "silences live in the event store: set store.path in the gateway configuration");
  }
  const WallTime now = s_.registry->Now();
  if (id_text.empty() && (method == "GET" || method == "HEAD")) {
    const size_t q = request.target.find('?');
    const std::string_view query =
        q == std::string_view::npos ? std::string_view() : request.target.substr(q + 1);
    const bool expired = QueryParam(query, "expired") == "true";
    absl::StatusOr<std::vector<store::Silence>> list = s_.store->ListSilences(now, expired);
    if (!list.ok()) return StatusError(list.status(), "reading the silences");
    json out = json::array();
    for (const store::Silence& s : *list) out.push_back(SilenceJson(s, now));
    return Json({{"silences", out}});
  }
  if (id_text.empty() && method == "POST") {
    static constexpr std::string_view kExample =
        R"({"matchers": "{model=\"risk\"}", "duration": "1h", "created_by": "alice", )"
        R"("comment": "deploying v2"})";
    absl::StatusOr<json> body = ParseBody(request.body, kExample);
    if (!body.ok()) return Error(400, "bad_request", std::string(body.status().message()));
    store::Silence silence;
    silence.starts_at = now;
    silence.created_at = now;
    for (auto [name, into] :
         {std::pair{"matchers", &silence.matchers}, std::pair{"created_by", &silence.created_by},
          std::pair{"comment", &silence.comment}}) {
      absl::StatusOr<std::string> v = StringField(*body, name);
      if (!v.ok()) return Error(400, "bad_request", std::string(v.status().message()));
      *into = *std::move(v);
    }
    absl::StatusOr<std::string> starts = StringField(*body, "starts_at");
    absl::StatusOr<std::string> ends = StringField(*body, "ends_at");
    absl::StatusOr<std::string> duration = StringField(*body, "duration");
    for (const auto* v : {&starts, &ends, &duration}) {
      if (!v->ok()) return Error(400, "bad_request", std::string(v->status().message()));
    }
    if (!starts->empty()) {
      absl::StatusOr<WallTime> t = ParseTime(*starts, now);
      if (!t.ok()) {
        return Error(400, "bad_request", Cat("starts_at: ", t.status().message()));
      }
      silence.starts_at = *t;
    }
    if (!ends->empty() == !duration->empty()) {
      return Error(400, "bad_request",
                   Cat("give either \"duration\" (e.g. \"1h\") or \"ends_at\", not ",
                       ends->empty() ? "neither" : "both", "; e.g. ", kExample));
    }
    if (!duration->empty()) {
      std::optional<Duration> d = ParseDurationText(*duration);
      if (!d || *d <= Duration::zero()) {
        return Error(
            400, "bad_request",
            Cat("duration: expected a positive duration like \"2h\", got \"", *duration, "\""));
      }
      silence.ends_at = silence.starts_at + *d;
    } else {
      absl::StatusOr<WallTime> t = ParseTime(*ends, now);
      if (!t.ok()) return Error(400, "bad_request", Cat("ends_at: ", t.status().message()));
      silence.ends_at = *t;
    }
    absl::StatusOr<int64_t> id = notify::AddSilence(*s_.store, silence);
    if (!id.ok()) return StatusError(id.status(), "adding the silence");
    silence.id = *id;
    ApiResponse r = Json({{"silence", SilenceJson(silence, now)}});
    r.status = 201;
    return r;
  }
  if (!id_text.empty() && method == "DELETE") {
    const std::optional<int64_t> id = ParseId(id_text);
    if (!id) {
      return Error(400, "bad_request",
                   Cat("\"", id_text, "\" is not a silence id; ids are in GET ", kSilencesPath));
    }
    const absl::Status s = s_.store->ExpireSilence(*id, now);
    if (!s.ok()) return StatusError(s, "expiring the silence");
    return Json({{"expired", *id}});
  }
  return Error(
      405, "method_not_allowed",
      Cat(method, " is not allowed on ", request.target.substr(0, request.target.find('?')),
          "; use GET or POST ", kSilencesPath, ", DELETE ", kSilencesPath, "/{id}"));
}

ApiResponse Api::Events(std::string_view query) const {
  absl::StatusOr<size_t> limit = Limit(query, 100, 10000);
  if (!limit.ok()) return Error(400, "bad_request", std::string(limit.status().message()));
  uint64_t after = 0;
  if (auto v = QueryParam(query, "after")) {
    const auto r = std::from_chars(v->data(), v->data() + v->size(), after);
    if (r.ec != std::errc() || r.ptr != v->data() + v->size()) {
      return Error(400, "bad_request", Cat("after: expected an event id, got \"", *v, "\""));
    }
  }
  // series=<id> and since=<time> narrow the timeline to one series' recent events.
  const std::optional<std::string> series = QueryParam(query, "series");
  std::optional<WallTime> since;
  if (auto v = QueryParam(query, "since")) {
    absl::StatusOr<WallTime> t = ParseTime(*v, s_.registry->Now());
    if (!t.ok()) return Error(400, "bad_request", Cat("since: ", t.status().message()));
    since = *t;
  }
  std::vector<TimelineEvent> events =
      s_.loop->Events(after, series || since ? s_.loop->options().event_capacity : *limit);
  if (series || since) {
    std::erase_if(events, [&](const TimelineEvent& e) {
      return (since && e.time < *since) ||
             (series && (e.series.empty() || LiveLoop::SeriesId(e.series) != *series));
    });
    // The newest `limit`, oldest first.
    if (events.size() > *limit) events.erase(events.begin(), events.end() - *limit);
  }
  json out = json::array();
  for (const TimelineEvent& e : events) {
    json j{{"id", e.id},
           {"time", TimeText(e.time)},
           {"type", e.type},
           {"kind", e.kind},
           {"message", e.message}};
    if (!e.rule.empty()) j["rule"] = e.rule;
    if (!e.series.empty()) {
      j["series"] = e.series;
      j["series_id"] = LiveLoop::SeriesId(e.series);
    }
    if (!e.severity.empty()) j["severity"] = e.severity;
    if (!e.receiver.empty()) j["receiver"] = e.receiver;
    if (!e.action.empty()) j["action"] = e.action;
    if (!e.statistic.empty()) j["statistic"] = e.statistic;
    if (!e.unit.empty()) j["unit"] = e.unit;
    if (!std::isnan(e.value)) j["value"] = Num(e.value);
    if (!std::isnan(e.threshold)) j["threshold"] = Num(e.threshold);
    if (!std::isnan(e.baseline_p99)) j["baseline_p99"] = Num(e.baseline_p99);
    out.push_back(std::move(j));
  }
  return Json({{"events", out}});
}

ApiResponse Api::Samples(std::string_view query) const {
  absl::StatusOr<size_t> limit = Limit(query, 20, 1000);
  if (!limit.ok()) return Error(400, "bad_request", std::string(limit.status().message()));
  Duration within = std::chrono::minutes(10);
  if (auto v = QueryParam(query, "within")) {
    std::optional<Duration> d = ParseDurationText(*v);
    if (!d || *d <= Duration::zero()) {
      return Error(400, "bad_request",
                   Cat("within: expected a duration like \"5m\", got \"", *v, "\""));
    }
    within = *d;
  }
  const std::optional<std::string> route = QueryParam(query, "route");
  // series=<id>: the requests of that series' route, model and version (labels it lacks match
  // anything).
  std::optional<Labels> of_series;
  if (auto id = QueryParam(query, "series")) {
    absl::StatusOr<tailguard::Series*> series = s_.loop->Resolve(*id);
    if (!series.ok()) return RangeError(series.status());
    // A series known only from history has no recent requests.
    if (*series == nullptr) return Json({{"samples", json::array()}});
    of_series = (*series)->labels();
  }
  auto matches = [&](const RouteLabels& r) {
    if (!of_series) return true;
    for (const auto& [k, v] : *of_series) {
      if ((k == "route" && v != r.route) || (k == "model" && v != r.model) ||
          (k == "version" && v != r.version)) {
        return false;
      }
    }
    return true;
  };
  const bool filtered = route || of_series;
  json out = json::array();
  for (const SampleView& s : s_.loop->SlowestSamples(within, filtered ? 10000 : *limit)) {
    if (route && s.route.route != *route) continue;
    if (!matches(s.route)) continue;
    if (out.size() >= *limit) break;
    const RequestRecord& r = s.sample.record;
    json stages = json::object();
    for (int i = 1; i < kStageCount; ++i) {
      if (r.stage_ns[i] != 0) {
        stages[std::string(StageName(static_cast<Stage>(i)))] =
            static_cast<double>(r.stage_ns[i]) * 1e-9;
      }
    }
    static constexpr const char* kReasons[] = {"rate", "slow", "failed"};
    out.push_back({{"start", TimeText(r.start)},
                   {"model", s.route.model},
                   {"version", s.route.version},
                   {"route", s.route.route},
                   {"total", static_cast<double>(r.total_ns()) * 1e-9},
                   {"stages", stages},
                   {"status", r.status},
                   {"failed", r.failed},
                   {"input_size", r.input_size},
                   {"trace_id", std::string(r.trace())},
                   {"reason", kReasons[static_cast<int>(s.sample.reason)]}});
  }
  return Json({{"samples", out}});
}

namespace {

// Each subsystem's metrics, in the order the page has always had them.

// Per route: answers by status code, failures, bytes, streamed tokens, the sampler. (Input
// sizes are a histogram of the registry: kRequestInputSizeMetric.)
class RouteCollector final : public metrics::Collector {
 public:
  explicit RouteCollector(RouteCounterTable* routes) : routes_table_(routes) {}
  void Collect(Page& page) const override {
    const std::vector<RouteCounters*> routes = routes_table_->All();
    page.Counter("tailguard_requests", "Requests answered, by route and HTTP status code.");
    for (const RouteCounters* r : routes) {
      for (size_t code = 0; code < r->by_code.size(); ++code) {
        const uint64_t n = Load(r->by_code[code]);
        if (n == 0) continue;
        Labels l = RouteLabelsOf(*r->metrics);
        l.emplace_back("code", code == 0 ? "none" : std::to_string(code));
        std::sort(l.begin(), l.end());
        page.Sample(l, static_cast<double>(n));
      }
    }
    auto per_route = [&](std::string_view name, std::string_view help,
                         const std::atomic<uint64_t> RouteCounters::*field) {
      page.Counter(name, help);
      for (const RouteCounters* r : routes) {
        page.Sample(RouteLabelsOf(*r->metrics), static_cast<double>(Load(r->*field)));
      }
    };
    per_route("tailguard_request_failures",
              "Requests that failed: 5xx answers, upstream errors and broken streams.",
              &RouteCounters::failed);
    per_route("tailguard_request_bytes", "Request body bytes received from clients.",
              &RouteCounters::request_bytes);
    per_route("tailguard_response_bytes", "Response body bytes sent to clients.",
              &RouteCounters::response_bytes);
    per_route("tailguard_streamed_tokens", "Server-sent events relayed on streamed responses.",
              &RouteCounters::streamed_tokens);

    page.Counter("tailguard_sampler_kept", "Requests kept by the request sampler.");
    for (const RouteCounters* r : routes) {
      page.Sample(RouteLabelsOf(*r->metrics), static_cast<double>(r->metrics->sampler().kept()));
    }
    page.Counter("tailguard_sampler_dropped",
                 "Sampled requests not kept: the buffer was busy (reason=busy) or full (evicted).");
    for (const RouteCounters* r : routes) {
      Labels l = RouteLabelsOf(*r->metrics);
      l.emplace_back("reason", "busy");
      page.Sample(l, static_cast<double>(r->metrics->sampler().dropped()));
      l.back().second = "evicted";
      page.Sample(l, static_cast<double>(r->metrics->sampler().evicted()));
    }
  }

 private:
  RouteCounterTable* const routes_table_;
};

// The gateway's own: requests in flight, connections, refusals, dropped series.
class GatewayCollector final : public metrics::Collector {
 public:
  GatewayCollector(const GatewayCounters& counters, const Registry& registry)
      : c_(counters), registry_(registry) {}
  void Collect(Page& page) const override {
    const GatewayCounters& c = c_;
    page.Gauge("tailguard_requests_in_flight", "Requests being handled now.");
    page.Sample({}, static_cast<double>(c.in_flight.load(std::memory_order_relaxed)));
    page.Gauge("tailguard_connections_active", "Client connections open now.");
    page.Sample({}, static_cast<double>(c.connections_active.load(std::memory_order_relaxed)));
    page.Counter("tailguard_connections_accepted", "Client connections accepted.");
    page.Sample({}, static_cast<double>(Load(c.connections_accepted)));
    page.Counter("tailguard_connections_rejected",
                 "Client connections answered 503 and closed at once: past limits.max_connections "
                 "and its reserve for health checks (reason=max_connections), or past "
                 "limits.max_connections_per_client (reason=per_client).");
    page.Sample({{"reason", "max_connections"}}, static_cast<double>(Load(c.connections_rejected)));
    page.Sample({{"reason", "per_client"}},
                static_cast<double>(Load(c.connections_rejected_per_client)));
    page.Counter("tailguard_upstream_connections_dropped",
                 "Upstream connections given up before use: idle ones found closed before a "
                 "non-idempotent request would have gone on them (reason=stale), and connects that "
                 "reached the gateway's own socket (reason=self).");
    page.Sample({{"reason", "stale"}}, static_cast<double>(Load(c.stale_connections_dropped)));
    page.Sample({{"reason", "self"}}, static_cast<double>(Load(c.self_connections)));
    page.Counter("tailguard_gateway_errors",
                 "Requests the gateway refused before choosing a route, by reason.");
    page.Sample({{"reason", "bad_request"}}, static_cast<double>(Load(c.bad_request)));
    page.Sample({{"reason", "header_too_large"}}, static_cast<double>(Load(c.header_too_large)));
    page.Sample({{"reason", "header_timeout"}}, static_cast<double>(Load(c.header_timeouts)));
    page.Sample({{"reason", "overloaded"}}, static_cast<double>(Load(c.admin_only_refused)));
    page.Sample({{"reason", "not_found"}}, static_cast<double>(Load(c.not_found)));
    page.Sample({{"reason", "too_large"}}, static_cast<double>(Load(c.too_large)));
    page.Counter("tailguard_series_dropped",
                 "Measurements not recorded under their own labels: a route over its cap of "
                 "Server-Timing stage names (reason=stage, not recorded), of model and version "
                 "labels (reason=labels), or a model name or version from a request over 128 bytes "
                 "(reason=label_too_long) or with characters outside [A-Za-z0-9._:/@+-] "
                 "(reason=label_characters); those three are recorded under model=\"other\". "
                 "reason=registry_full: series the registry refused (its limits).");
    page.Sample({{"reason", "labels"}}, static_cast<double>(Load(c.label_overflow)));
    page.Sample({{"reason", "label_too_long"}}, static_cast<double>(Load(c.label_too_long)));
    page.Sample({{"reason", "label_characters"}}, static_cast<double>(Load(c.label_characters)));
    page.Sample({{"reason", "registry_full"}}, static_cast<double>(registry_.refused()));
    page.Sample({{"reason", "stage"}}, static_cast<double>(Load(c.stage_series_dropped)));
  }

 private:
  const GatewayCounters& c_;
  const Registry& registry_;
};

// The upstream pool: requests, errors by kind, skipped while down, in rotation.
class UpstreamCollector final : public metrics::Collector {
 public:
  explicit UpstreamCollector(std::vector<const UpstreamState*> upstreams)
      : upstreams_(std::move(upstreams)) {}
  void Collect(Page& page) const override {
    page.Counter("tailguard_upstream_requests", "Requests sent to each upstream server.");
    for (const UpstreamState* u : upstreams_) {
      page.Sample({{"upstream", u->address()}}, static_cast<double>(Load(u->requests)));
    }
    page.Counter(
        "tailguard_upstream_errors",
        "Failed exchanges with each upstream, by kind: connect, timeout, reset, protocol.");
    for (const UpstreamState* u : upstreams_) {
      for (int k = 0; k < kUpstreamErrorKinds; ++k) {
        page.Sample({{"kind", UpstreamErrorName(static_cast<UpstreamError>(k))},
                     {"upstream", u->address()}},
                    static_cast<double>(Load(u->errors[k])));
      }
    }
    page.Counter("tailguard_upstream_skipped",
                 "Requests answered 502 at once, without a connect, while every upstream of their "
                 "route was down and none was due for a probe (counted on each of the route's "
                 "upstreams).");
    for (const UpstreamState* u : upstreams_) {
      page.Sample({{"upstream", u->address()}}, static_cast<double>(Load(u->probes_skipped)));
    }
    page.Gauge("tailguard_upstream_up",
               "1 when the upstream is in rotation, 0 while passive health keeps it out.");
    const MonoTime now = std::chrono::steady_clock::now();
    for (const UpstreamState* u : upstreams_) {
      page.Sample({{"upstream", u->address()}}, u->Available(now) ? 1 : 0);
    }
  }

 private:
  const std::vector<const UpstreamState*> upstreams_;
};

class OtlpCollector final : public metrics::Collector {
 public:
  explicit OtlpCollector(const OtlpExporter& otlp) : otlp_(otlp) {}
  void Collect(Page& page) const override {
    const OtlpStats o = otlp_.stats();
    page.Counter("tailguard_otlp_spans_exported", "Spans delivered to the OTLP collector.");
    page.Sample({}, static_cast<double>(o.exported));
    page.Counter("tailguard_otlp_spans_dropped",
                 "Spans not delivered: the export queue was full, or the collector kept failing.");
    page.Sample({{"reason", "export_failed"}}, static_cast<double>(o.dropped_failed));
    page.Sample({{"reason", "queue_full"}}, static_cast<double>(o.dropped_queue_full));
    page.Counter("tailguard_otlp_batches_failed", "OTLP export batches given up on.");
    page.Sample({}, static_cast<double>(o.batches_failed));
  }

 private:
  const OtlpExporter& otlp_;
};

class JournalCollector final : public metrics::Collector {
 public:
  explicit JournalCollector(const notify::AlertJournal& journal) : journal_(journal) {}
  void Collect(Page& page) const override {
    const notify::JournalStats& j = journal_.stats();
    page.Counter("tailguard_alert_notifications",
                 "Notifications stored in the outbox (duplicate: its idempotency key was already "
                 "there, e.g. after a restart).");
    page.Sample({{"result", "stored"}}, static_cast<double>(Load(j.notifications)));
    page.Sample({{"result", "duplicate"}}, static_cast<double>(Load(j.duplicates)));
    page.Sample({{"result", "render_error"}}, static_cast<double>(Load(j.render_errors)));
    page.Counter("tailguard_alert_muted",
                 "Alerts that became muted: silence, inhibition or "
                 "maintenance window.");
    page.Sample({}, static_cast<double>(Load(j.muted)));
    page.Counter("tailguard_alert_store_errors",
                 "Ticks whose alert records could not be written to the event store (kept in "
                 "memory and retried), and records dropped beyond the in-memory bound.");
    page.Sample({{"kind", "commit_failed"}}, static_cast<double>(Load(j.store_errors)));
    page.Sample({{"kind", "dropped"}}, static_cast<double>(Load(j.dropped)));
  }

 private:
  const notify::AlertJournal& journal_;
};

class HistoryCollector final : public metrics::Collector {
 public:
  explicit HistoryCollector(const LiveLoop& loop) : loop_(loop) {}
  void Collect(Page& page) const override {
    page.Counter("tailguard_history_store_errors",
                 "Per-minute history the store could not take (kind=write: a minute's points, "
                 "kept in memory for 24 h) or give (kind=read: a listing of stored series).");
    page.Sample({{"kind", "write"}}, static_cast<double>(loop_.history_write_failures()));
    page.Sample({{"kind", "read"}}, static_cast<double>(loop_.history_read_failures()));
  }

 private:
  const LiveLoop& loop_;
};

class DeliveryCollector final : public metrics::Collector {
 public:
  explicit DeliveryCollector(const notify::DeliveryWorker& delivery) : delivery_(delivery) {}
  void Collect(Page& page) const override {
    const notify::DeliveryStats& d = delivery_.stats();
    page.Counter("tailguard_notification_attempts",
                 "Delivery attempts to receivers, by result: delivered, retry (a retryable "
                 "failure), failed (given up).");
    page.Sample({{"result", "delivered"}}, static_cast<double>(Load(d.delivered)));
    page.Sample({{"result", "retry"}}, static_cast<double>(Load(d.retries)));
    page.Sample({{"result", "failed"}}, static_cast<double>(Load(d.failed)));
  }

 private:
  const notify::DeliveryWorker& delivery_;
};

class OutboxCollector final : public metrics::Collector {
 public:
  OutboxCollector(store::EventStore& store, const Clock& clock) : store_(store), clock_(clock) {}
  void Collect(Page& page) const override {
    if (absl::StatusOr<store::OutboxStats> o = store_.CountOutbox(); o.ok()) {
      page.Gauge("tailguard_outbox_messages",
                 "Notifications in the outbox, by receiver and state (pending: still to be "
                 "delivered).");
      for (const auto& [receiver, c] : o->by_receiver) {
        page.Sample({{"receiver", receiver}, {"state", "pending"}}, static_cast<double>(c.pending));
        page.Sample({{"receiver", receiver}, {"state", "delivered"}},
                    static_cast<double>(c.delivered));
        page.Sample({{"receiver", receiver}, {"state", "failed"}}, static_cast<double>(c.failed));
        page.Sample({{"receiver", receiver}, {"state", "skipped"}}, static_cast<double>(c.skipped));
      }
      page.Gauge("tailguard_outbox_oldest_pending_age_seconds",
                 "Age of the oldest undelivered notification; 0 when none is pending.");
      page.Sample({},
                  o->oldest_pending
                      ? std::chrono::duration<double>(clock_.WallNow() - *o->oldest_pending).count()
                      : 0.0);
    }
  }

 private:
  store::EventStore& store_;
  const Clock& clock_;  // the control plane's (ApiSources::clock), so tests may fake it
};

class AnalysisCollector final : public metrics::Collector {
 public:
  explicit AnalysisCollector(const LiveLoop& loop) : loop_(loop) {}
  void Collect(Page& page) const override {
    page.Counter("tailguard_analysis_ticks", "Ticks of the live analysis loop.");
    page.Sample({}, static_cast<double>(loop_.ticks()));
    page.Gauge("tailguard_alerts_active", "Rule and series pairs in pre_alert or alert.");
    size_t pre = 0, firing = 0;
    for (const ActiveAlert& a : loop_.ActiveAlerts()) {
      (a.state == AlertState::kAlert ? firing : pre) += 1;
    }
    page.Sample({{"state", "alert"}}, static_cast<double>(firing));
    page.Sample({{"state", "pre_alert"}}, static_cast<double>(pre));
  }

 private:
  const LiveLoop& loop_;
};

// The standard process metrics (procfs).
class ProcessCollector final : public metrics::Collector {
 public:
  void Collect(Page& page) const override {
    if (absl::StatusOr<ProcessStats> p = ReadProcessStats(); p.ok()) {
      AppendProcessMetrics(*p, page.out(), page.openmetrics());
    }
  }
};

class ModelCollector final : public metrics::Collector {
 public:
  explicit ModelCollector(const model::ModelBackend& backend) : backend_(backend) {}
  void Collect(Page& page) const override { AppendModelMetrics(page, backend_.Status()); }

 private:
  const model::ModelBackend& backend_;
};

}  // namespace

Api::Api(ApiSources sources) : s_(std::move(sources)) {
  auto add = [this](std::unique_ptr<metrics::Collector> c) {
    collectors_.push_back(c.get());
    owned_.push_back(std::move(c));
  };
  if (s_.routes != nullptr) add(std::make_unique<RouteCollector>(s_.routes));
  if (s_.counters != nullptr && s_.registry != nullptr) {
    add(std::make_unique<GatewayCollector>(*s_.counters, *s_.registry));
  }
  if (s_.counters != nullptr) add(std::make_unique<UpstreamCollector>(s_.upstreams));
  if (s_.otlp != nullptr) add(std::make_unique<OtlpCollector>(*s_.otlp));
  if (s_.journal != nullptr) add(std::make_unique<JournalCollector>(*s_.journal));
  if (s_.loop != nullptr && s_.loop->options().history != nullptr) {
    add(std::make_unique<HistoryCollector>(*s_.loop));
  }
  if (s_.delivery != nullptr) add(std::make_unique<DeliveryCollector>(*s_.delivery));
  if (s_.store != nullptr) {
    add(std::make_unique<OutboxCollector>(*s_.store,
                                          s_.clock != nullptr ? *s_.clock : Clock::Real()));
  }
  if (s_.loop != nullptr) add(std::make_unique<AnalysisCollector>(*s_.loop));
  for (const metrics::Collector* c : s_.collectors) collectors_.push_back(c);
  add(std::make_unique<ProcessCollector>());
  if (s_.backend != nullptr) add(std::make_unique<ModelCollector>(*s_.backend));
}

std::string Api::Metrics(bool om) const {
  std::string out;
  out.reserve(64 * 1024);
  AppendPrometheusText(*s_.registry, DefaultExpositionBuckets(), out);
  Page page(out, om);
  for (const metrics::Collector* c : collectors_) c->Collect(page);
  if (om) out += "# EOF\n";
  return out;
}

}  // namespace tailguard::server
