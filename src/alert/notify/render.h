// Turns one Notification into the HTTP request for one receiver: a WeCom robot markdown message,
// an Alertmanager-style webhook payload, a filled template (SMS and phone gateways) or
// Alertmanager API v2 alerts. Pure functions: no I/O, no clock. docs/notifications.md shows the
// messages.
#ifndef TAILGUARD_ALERT_NOTIFY_RENDER_H_
#define TAILGUARD_ALERT_NOTIFY_RENDER_H_

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "tailguard/alert.h"

namespace tailguard::notify {

// One outbound HTTP request, ready for an HttpSender.
struct HttpRequest {
  // How the sender decides whether the request was delivered.
  enum class Check : uint8_t {
    kStatus,        // by the HTTP status alone: 2xx is delivered
    kWeComErrcode,  // 2xx and a JSON body whose "errcode" is 0 (WeCom answers errors with 200)
  };

  std::string method = "POST";  // POST, PUT or GET
  std::string url;              // may hold secrets (WeCom's key=...): never log it
  // In order. Render() sets Content-Type (except for GET) and Idempotency-Key, plus the
  // receiver's own headers, whose values may be secrets.
  Labels headers;
  std::string body;  // empty for GET
  Check check = Check::kStatus;
};

// What a message needs to know about the tailguard instance that sends it.
struct MessageContext {
  // The dashboard's base URL, e.g. "http://127.0.0.1:9090"; "" = no links in messages.
  std::string external_url;
  // Where tailguard runs (hostname), shown in messages; "" = not shown.
  std::string instance;
  // IANA time zone for the times shown to people (absl::LoadTimeZone). Machine-readable times
  // (RFC 3339 in JSON payloads) are always UTC.
  std::string time_zone = "UTC";
};

// WeCom's limits on a robot message's content, in bytes of UTF-8.
inline constexpr size_t kWeComMarkdownMaxBytes = 4096;
inline constexpr size_t kWeComTextMaxBytes = 2048;

// The request that delivers `n` to `target`:
//   kWeCom         POST url, {"msgtype":"markdown",...}; {"msgtype":"text",...} with
//                  mentioned_mobile_list when that list is not empty (markdown cannot mention
//                  mobiles). The content holds as many whole alerts as fit WeCom's limit
//                  (kWeComMarkdownMaxBytes / kWeComTextMaxBytes), most severe first, then
//                  oldest, the first three in full and the others compact, and ends with a line
//                  counting the alerts left out. Never cut inside a character or a markdown
//                  construct.
//   kWebhook       POST url, Alertmanager's webhook payload (version "4") plus tailguard fields.
//   kTemplate      target.method to url with body_template filled (see ValidateTemplate); for GET
//                  the filled template is the URL's query and there is no body.
//   kAlertmanager  POST {url}/api/v2/alerts, a JSON array of postable alerts.
// Every request carries "Idempotency-Key: <n.idempotency_key>" (bytes outside visible ASCII,
// and '%', percent-encoded). InvalidArgument for kind kNone, an empty url, an unknown
// ctx.time_zone, a kTemplate method other than POST, PUT or GET (any case), or a template
// ValidateTemplate() rejects.
absl::StatusOr<HttpRequest> Render(const ReceiverTarget& target, const Notification& n,
                                   const MessageContext& ctx);

// Checks a kTemplate body at configuration time. A field is `{{name}}` (spaces inside the braces
// are allowed), one of TemplateFields() or `labels.NAME` / `annotations.NAME` with NAME a label
// name ([A-Za-z_][A-Za-z0-9_]*). `{{{{` is a literal `{{`; a `}}` outside a field is literal
// text. InvalidArgument "body: unknown field {{foo}} at offset 12; known: receiver, ..." or
// "body: unclosed {{ at offset 7".
absl::Status ValidateTemplate(std::string_view body_template);

// The plain field names a template may use, in documentation order.
std::span<const std::string_view> TemplateFields();

// One line for logs and the CLI, about the notification's lead alert (the most severe firing
// one, else the first), e.g.
//   firing p99_vs_baseline{model="rank"} emergency: P99 412 ms vs baseline 180 ms (+129 %),
//   threshold 270 ms, since 14:02:10 UTC (+2 more)
// (on one line). Times are shown in `tz`; a date is added when it is not n.time's day.
std::string Summary(const Notification& n, const absl::TimeZone& tz = absl::UTCTimeZone());

// A link to the series on the dashboard: {external_url}/?view=series&id=<series id>
// (SeriesDashboardUrl, common/series_id.h); "" when ctx.external_url is empty.
std::string DashboardLink(const MessageContext& ctx, std::string_view series);

// A link to a group's alerts on the dashboard: {external_url}/?view=alerts, where the group's
// active alerts are listed; "" when ctx.external_url is empty.
std::string GroupLink(const MessageContext& ctx, std::string_view group_key);

// `value` of statistic `s` of a series of `unit` for people: latency percentiles in ms ("412 ms";
// "12.3 s" from 10 s), percentiles of sizes in B/KiB/MiB/GiB ("4 KiB"), of counts as a number;
// rates in "req/s" (a latency's) or "/s", error ratios in "%", anomaly scores as a number; "n/a"
// for NaN.
std::string FormatStatValue(Statistic s, double value, Unit unit);

// `text` as one line of valid UTF-8 of at most `max_bytes`: invalid bytes become U+FFFD, tabs,
// CR and LF spaces, other control characters are dropped, and a longer text is cut at a
// character boundary and ends in "…". For excerpts of untrusted text in messages and errors.
std::string OneLine(std::string_view text, size_t max_bytes);

// Alertmanager's fingerprint of a label set: FNV-1a 64 over the sorted names and values, as 16
// hex digits (prometheus/common model.LabelSet.Fingerprint).
std::string Fingerprint(const Labels& labels);

// "45s", "12m30s", "2h5m", "3d4h": the two largest units, for people.
std::string HumanDuration(Duration d);

}  // namespace tailguard::notify

#endif  // TAILGUARD_ALERT_NOTIFY_RENDER_H_
