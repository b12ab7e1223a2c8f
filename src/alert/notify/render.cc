// Message rendering per receiver kind. Everything people read goes through SanitizeText() first,
// so lengths are measured on the bytes that are sent and JSON encoding never has to replace
// anything (which would change the length).
#include "alert/notify/render.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>
#include <vector>

#include "common/series_id.h"
#include "common/strings.h"

namespace tailguard::notify {
namespace {

using Json = nlohmann::ordered_json;

// ---------------------------------------------------------------------------------------------
// Text.

// The length of the well-formed UTF-8 sequence at s[i] (no overlongs, no surrogates, at most
// U+10FFFF), or 0 when there is none.
size_t Utf8SequenceLength(std::string_view s, size_t i) {
  const auto byte = [&](size_t k) { return static_cast<unsigned char>(s[k]); };
  const unsigned char c = byte(i);
  if (c < 0x80) return 1;
  size_t n = 0;
  unsigned char lo = 0x80, hi = 0xbf;  // the allowed range of the second byte
  if (c >= 0xc2 && c <= 0xdf) {
    n = 2;
  } else if (c >= 0xe0 && c <= 0xef) {
    n = 3;
    if (c == 0xe0) lo = 0xa0;
    if (c == 0xed) hi = 0x9f;
  } else if (c >= 0xf0 && c <= 0xf4) {
    n = 4;
    if (c == 0xf0) lo = 0x90;
    if (c == 0xf4) hi = 0x8f;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  if (byte(i + 1) < lo || byte(i + 1) > hi) return 0;
  for (size_t k = 2; k < n; ++k) {
    if (byte(i + k) < 0x80 || byte(i + k) > 0xbf) return 0;
  }
  return n;
}

// Valid UTF-8 without control characters: invalid bytes become U+FFFD, tabs and (unless
// `keep_newlines`) CR and LF become spaces, other C0 controls and DEL are dropped.
std::string SanitizeText(std::string_view s, bool keep_newlines = false) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size();) {
    const size_t n = Utf8SequenceLength(s, i);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    const char c = s[i];
    if (n == 1 && (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)) {
      if (c == '\n' && keep_newlines) {
        out.push_back('\n');
      } else if (c == '\t' || c == '\n' || c == '\r') {
        out.push_back(' ');
      }
    } else {
      out.append(s.substr(i, n));
    }
    i += n;
  }
  return out;
}

// `s` (valid UTF-8) cut to at most `max_bytes` at a character boundary, ending in "…" when cut.
std::string TruncateUtf8(std::string_view s, size_t max_bytes) {
  if (s.size() <= max_bytes) return std::string(s);
  constexpr std::string_view kEllipsis = "\xe2\x80\xa6";
  if (max_bytes < kEllipsis.size()) return "";
  size_t cut = max_bytes - kEllipsis.size();
  while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
  return Cat(s.substr(0, cut), kEllipsis);
}

std::string SafeText(std::string_view s, size_t max_bytes) {
  return TruncateUtf8(SanitizeText(s), max_bytes);
}

// RFC 3986: everything but the unreserved characters is %XX.
std::string PercentEncode(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  out.reserve(s.size());
  for (unsigned char c : s) {
    if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

// `s` with the bytes a URL cannot hold (spaces, controls, non-ASCII, "<>\\^`{|}) as %XX; the
// rest, '%' included, as written.
std::string UrlSafe(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (c <= 0x20 || c >= 0x7f ||
        std::string_view("\"<>\\^`{|}").find(static_cast<char>(c)) != std::string_view::npos) {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    } else {
      out.push_back(static_cast<char>(c));
    }
  }
  return out;
}

// The body of a JSON string (without the quotes). `s` is valid UTF-8.
std::string JsonEscape(std::string_view s) {
  std::string quoted = Json(std::string(s)).dump();
  return quoted.substr(1, quoted.size() - 2);
}

// An Idempotency-Key header value: visible ASCII stays, anything else (and '%') is %XX, so a
// key built from label values can never break the header.
std::string HeaderSafe(std::string_view s) {
  static constexpr char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if (c > 0x20 && c < 0x7f && c != '%') {
      out.push_back(static_cast<char>(c));
    } else {
      out.push_back('%');
      out.push_back(kHex[c >> 4]);
      out.push_back(kHex[c & 0xf]);
    }
  }
  return out;
}

std::string_view LabelValue(const Labels& labels, std::string_view name) {
  for (const auto& [n, v] : labels) {
    if (n == name) return v;
  }
  return {};
}

const std::string* FindLabel(const Labels& labels, std::string_view name) {
  for (const auto& [n, v] : labels) {
    if (n == name) return &v;
  }
  return nullptr;
}

// ---------------------------------------------------------------------------------------------
// Numbers, times and durations for people.

// Three significant digits without an exponent and without trailing zeros: "412", "12.5",
// "0.85", "0.0123".
std::string Number(double v) {
  if (v == 0) return "0";
  const double a = std::fabs(v);
  char buf[64];
  if (a >= 1e15) {
    std::snprintf(buf, sizeof(buf), "%.3g", v);
    return buf;
  }
  int decimals = 0;
  if (a >= 100) {
    decimals = 0;
  } else if (a >= 10) {
    decimals = 1;
  } else if (a >= 1) {
    decimals = 2;
  } else {
    decimals = std::min(9, 2 - static_cast<int>(std::floor(std::log10(a))));
  }
  std::snprintf(buf, sizeof(buf), "%.*f", decimals, v);
  std::string out = buf;
  if (out.find('.') != std::string::npos) {
    while (out.back() == '0') out.pop_back();
    if (out.back() == '.') out.pop_back();
  }
  if (out == "-0") out = "0";
  return out;
}

std::string_view StatLabel(Statistic s) {
  switch (s) {
    case Statistic::kP50:
      return "P50";
    case Statistic::kP90:
      return "P90";
    case Statistic::kP99:
      return "P99";
    case Statistic::kP999:
      return "P99.9";
    case Statistic::kRate:
      return "rate";
    case Statistic::kErrorRatio:
      return "error ratio";
    case Statistic::kAnomalyScore:
      return "anomaly score";
  }
  return "value";
}

bool HasBaseline(const NotifiedAlert& a) {
  return IsLatencyStatistic(a.stat) && std::isfinite(a.baseline_p99) && a.baseline_p99 > 0;
}

// "P99 412 ms, baseline 180 ms (+129 %), threshold 270 ms". `value` formats the value (bold
// in markdown); `joiner` separates it from the baseline (", " or " vs ").
template <typename Decorate>
std::string ValueText(const NotifiedAlert& a, std::string_view joiner, Decorate decorate) {
  // A firing alert without a value holds for want of data (AlertEventKind::kNoData): say so,
  // rather than "n/a", which reads like a recovery.
  const bool no_data = a.status == NotifyStatus::kFiring && std::isnan(a.value);
  std::string out =
      Cat(StatLabel(a.stat), " ",
          decorate(no_data ? std::string("no data") : FormatStatValue(a.stat, a.value, a.unit)));
  if (HasBaseline(a)) {
    out += Cat(joiner, a.stat == Statistic::kP99 ? "baseline " : "baseline P99 ",
               FormatStatValue(a.stat, a.baseline_p99, a.unit));
    if (std::isfinite(a.value)) {
      const double pct = std::clamp((a.value / a.baseline_p99 - 1) * 100, -1e9, 1e9);
      char buf[32];
      std::snprintf(buf, sizeof(buf), " (%+ld %%)", std::lround(pct));
      out += buf;
    }
  }
  return Cat(out, ", threshold ", FormatStatValue(a.stat, a.threshold, a.unit));
}

std::string ValueText(const NotifiedAlert& a, std::string_view joiner) {
  return ValueText(a, joiner, [](std::string s) { return s; });
}

absl::Time ToAbsl(WallTime t) { return absl::FromUnixNanos(t.time_since_epoch().count()); }

// RFC 3339 in UTC, fractional seconds only when there are any: "2026-11-03T06:02:10Z".
std::string Rfc3339(WallTime t) {
  return absl::FormatTime("%Y-%m-%dT%H:%M:%E*SZ", ToAbsl(t), absl::UTCTimeZone());
}

// Go's zero time, which Alertmanager's webhook uses as the end of a firing alert.
constexpr std::string_view kGoZeroTime = "0001-01-01T00:00:00Z";

// "14:02:10 CST", with the date in front when `t` is not on `now`'s day.
std::string ClockTime(WallTime t, WallTime now, const absl::TimeZone& tz) {
  const absl::Time at = ToAbsl(t);
  const bool same_day = absl::ToCivilDay(at, tz) == absl::ToCivilDay(ToAbsl(now), tz);
  return absl::FormatTime(same_day ? "%H:%M:%S %Z" : "%Y-%m-%d %H:%M:%S %Z", at, tz);
}

// ---------------------------------------------------------------------------------------------
// Alerts.

// Higher is more severe; names outside this list rank below "info".
int SeverityRank(std::string_view severity) {
  static constexpr std::array<std::string_view, 5> kOrder = {"info", "warning", "error", "critical",
                                                             "emergency"};
  for (size_t i = 0; i < kOrder.size(); ++i) {
    if (EqualsIgnoreCase(severity, kOrder[i])) return static_cast<int>(i) + 1;
  }
  return 0;
}

// Firing before resolved, then most severe, then oldest.
bool MoreUrgent(const NotifiedAlert& a, const NotifiedAlert& b) {
  const bool fa = a.status == NotifyStatus::kFiring, fb = b.status == NotifyStatus::kFiring;
  if (fa != fb) return fa;
  const int ra = SeverityRank(a.severity), rb = SeverityRank(b.severity);
  if (ra != rb) return ra > rb;
  if (a.tier != b.tier) return a.tier > b.tier;
  return a.starts_at < b.starts_at;
}

// Indices of n.alerts, most urgent first.
std::vector<size_t> UrgencyOrder(const Notification& n) {
  std::vector<size_t> order(n.alerts.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(),
                   [&](size_t a, size_t b) { return MoreUrgent(n.alerts[a], n.alerts[b]); });
  return order;
}

// The most severe firing alert, else the first; null when there are none.
const NotifiedAlert* LeadAlert(const Notification& n) {
  if (n.alerts.empty()) return nullptr;
  const std::vector<size_t> order = UrgencyOrder(n);
  const NotifiedAlert& first = n.alerts[order.front()];
  return first.status == NotifyStatus::kFiring ? &first : &n.alerts.front();
}

// The label part of a canonical series key, `{model="rank",...}`; "" when it has no labels.
std::string_view SeriesLabels(std::string_view series) {
  const size_t brace = series.find('{');
  if (brace == std::string_view::npos || series.substr(brace) == "{}") return {};
  return series.substr(brace);
}

// How a message shows a series: its labels, or the metric name when it has none.
std::string_view SeriesDisplay(std::string_view series) {
  const std::string_view labels = SeriesLabels(series);
  return labels.empty() ? series : labels;
}

// `rule{labels} severity: value text, since ...` for one alert.
std::string AlertSummary(const NotifiedAlert& a, WallTime now, const absl::TimeZone& tz) {
  std::string out = Cat(a.rule, SeriesLabels(a.series));
  if (!a.severity.empty()) out += Cat(" ", a.severity);
  out += Cat(": ", ValueText(a, " vs "), ", ");
  if (a.status == NotifyStatus::kFiring) {
    out += Cat("since ", ClockTime(a.starts_at, now, tz));
  } else {
    out += Cat("lasted ", HumanDuration(a.ends_at - a.starts_at));
  }
  return out;
}

std::string TimeZoneError(std::string_view name) {
  return Cat("time_zone: unknown time zone \"", SafeText(name, 64), "\"");
}

// ---------------------------------------------------------------------------------------------
// WeCom.

// How a WeCom message is written: markdown, or plain text (the only type that can mention
// mobiles).
struct WeComStyle {
  bool markdown = true;
  size_t limit = kWeComMarkdownMaxBytes;

  std::string Color(std::string_view color, std::string_view text) const {
    return markdown ? Cat("<font color=\"", color, "\">", text, "</font>") : std::string(text);
  }
  std::string Bold(std::string_view text) const {
    return markdown ? Cat("**", text, "**") : std::string(text);
  }
  // Backticks inside would end the code span early.
  std::string Code(std::string_view text) const {
    if (!markdown) return std::string(text);
    std::string t(text);
    std::replace(t.begin(), t.end(), '`', '\'');
    return Cat("`", t, "`");
  }
  std::string Link(std::string_view text, std::string_view url) const {
    return markdown ? Cat("[", text, "](", url, ")") : std::string(url);
  }
  std::string_view Quote() const { return markdown ? "> " : "  "; }
};

// Caps that keep every part of a message well under the limits, so the header and the "more"
// line always fit and one alert can never crowd out all others.
constexpr size_t kMaxTitleBytes = 200;
constexpr size_t kMaxContextBytes = 300;
constexpr size_t kMaxSeriesBytes = 400;
constexpr size_t kMaxAnnotationBytes = 300;
constexpr size_t kMaxCauseBytes = 200;
constexpr size_t kMaxCauses = 5;
constexpr size_t kMaxCompactSeriesBytes = 200;
constexpr size_t kMaxLinkBytes = 600;
// Alerts shown with their annotations and link; the ones after them get the compact form, so a
// storm lists more series (they mostly share their annotations).
constexpr size_t kMaxFullBlocks = 3;
constexpr size_t kMaxCategoryBytes = 32;
constexpr size_t kMaxCategories = 6;

std::string_view SeverityColor(const NotifiedAlert& a) {
  if (a.status == NotifyStatus::kResolved) return "info";
  return SeverityRank(a.severity) >= SeverityRank("critical") ? "warning" : "comment";
}

// A link usable inside markdown's (...) : no spaces, no parentheses. "" when too long.
std::string MarkdownSafeUrl(std::string_view url) {
  if (url.size() > kMaxLinkBytes) return "";
  std::string out;
  for (char c : SanitizeText(url)) {
    if (c == ' ') {
      out += "%20";
    } else if (c == '(') {
      out += "%28";
    } else if (c == ')') {
      out += "%29";
    } else {
      out.push_back(c);
    }
  }
  return out;
}

// What the "more" line counts an alert as: its severity, or "resolved".
std::string Category(const NotifiedAlert& a) {
  if (a.status == NotifyStatus::kResolved) return "resolved";
  return a.severity.empty() ? std::string("firing") : SafeText(a.severity, kMaxCategoryBytes);
}

struct CategoryCount {
  std::string name;
  int rank = 0;  // order in the line: most severe first, "resolved" last
  size_t count = 0;
};

class Counts {
 public:
  void Add(const NotifiedAlert& a, int delta) {
    const std::string name = Category(a);
    auto it = std::find_if(counts_.begin(), counts_.end(),
                           [&](const CategoryCount& c) { return c.name == name; });
    if (it == counts_.end()) {
      const int rank = a.status == NotifyStatus::kResolved ? -1 : SeverityRank(a.severity);
      counts_.push_back({name, rank, 0});
      it = counts_.end() - 1;
    }
    it->count = static_cast<size_t>(static_cast<int64_t>(it->count) + delta);
    total_ = static_cast<size_t>(static_cast<int64_t>(total_) + delta);
  }
  size_t total() const { return total_; }

  // "… and 487 more alerts (412 emergency, 75 warning); see <link>"
  std::string MoreLine(const WeComStyle& style, std::string_view link) const {
    std::vector<CategoryCount> shown;
    for (const CategoryCount& c : counts_) {
      if (c.count > 0) shown.push_back(c);
    }
    std::stable_sort(
        shown.begin(), shown.end(),
        [](const CategoryCount& a, const CategoryCount& b) { return a.rank > b.rank; });
    std::string out = Cat("\xe2\x80\xa6 and ", total_, " more alert", total_ == 1 ? "" : "s");
    if (!shown.empty()) {
      out += " (";
      for (size_t i = 0; i < shown.size() && i < kMaxCategories; ++i) {
        if (i > 0) out += ", ";
        out += Cat(shown[i].count, " ", shown[i].name);
      }
      if (shown.size() > kMaxCategories) out += ", \xe2\x80\xa6";
      out += ")";
    }
    if (!link.empty()) out += Cat("; see ", style.Link("dashboard", link));
    return out;
  }

 private:
  std::vector<CategoryCount> counts_;
  size_t total_ = 0;
};

// Annotations in display order: summary, description, the others as given, root causes last
// (handled apart).
std::vector<const std::pair<std::string, std::string>*> DisplayAnnotations(const Labels& a) {
  std::vector<const std::pair<std::string, std::string>*> out;
  for (std::string_view first : {"summary", "description"}) {
    for (const auto& kv : a) {
      if (kv.first == first) out.push_back(&kv);
    }
  }
  for (const auto& kv : a) {
    if (kv.first != "summary" && kv.first != "description" && kv.first != "root_causes") {
      out.push_back(&kv);
    }
  }
  return out;
}

class WeComMessage {
 public:
  WeComMessage(const Notification& n, const MessageContext& ctx, const absl::TimeZone& tz,
               WeComStyle style)
      : n_(n), ctx_(ctx), tz_(tz), style_(style) {}

  std::string Content() const {
    const std::vector<size_t> order = UrgencyOrder(n_);
    std::string content = Header(order);
    Counts remaining;
    for (const NotifiedAlert& a : n_.alerts) remaining.Add(a, +1);
    const std::string group_link = MarkdownSafeUrl(GroupLink(ctx_, n_.group_key));
    size_t shown = 0;
    for (size_t i : order) {
      const NotifiedAlert& a = n_.alerts[i];
      remaining.Add(a, -1);
      const std::string more =
          remaining.total() > 0 ? Cat("\n\n", remaining.MoreLine(style_, group_link)) : "";
      bool placed = false;
      for (bool compact : {false, true}) {
        if (!compact && shown >= kMaxFullBlocks) continue;
        const std::string block = Block(a, compact);
        if (content.size() + 2 + block.size() + more.size() <= style_.limit) {
          content += Cat("\n\n", block);
          placed = true;
          ++shown;
          break;
        }
      }
      if (!placed) {
        remaining.Add(a, +1);
        break;
      }
    }
    if (remaining.total() > 0) content += Cat("\n\n", remaining.MoreLine(style_, group_link));
    // The caps above keep this from ever cutting; it is the last guard of WeCom's limit.
    return TruncateUtf8(content, style_.limit);
  }

 private:
  // "## [FIRING:3] p99_vs_baseline rank" and a line of context.
  std::string Header(const std::vector<size_t>& order) const {
    size_t firing = 0;
    for (const NotifiedAlert& a : n_.alerts) firing += a.status == NotifyStatus::kFiring;
    const bool is_firing = n_.status == NotifyStatus::kFiring;
    const std::string badge =
        is_firing ? Cat("[FIRING:", firing, "]") : Cat("[RESOLVED:", n_.alerts.size(), "]");
    std::string_view color = is_firing ? "warning" : "info";
    if (is_firing && !order.empty()) color = SeverityColor(n_.alerts[order.front()]);
    std::string group;
    for (const auto& [name, value] : n_.group_labels) {
      if (!group.empty()) group += " ";
      group += value;
    }
    if (group.empty()) group = n_.receiver;
    std::string title = Cat(style_.markdown ? "## " : "", style_.Color(color, badge), " ",
                            SafeText(group, kMaxTitleBytes));
    std::string context = Cat("receiver ", n_.receiver);
    if (!ctx_.instance.empty()) context += Cat(" \xc2\xb7 instance ", ctx_.instance);
    context += Cat(" \xc2\xb7 ", ClockTime(n_.time, n_.time, tz_));
    if (n_.repeat) context += " \xc2\xb7 repeated";
    return Cat(title, "\n", style_.Color("comment", SafeText(context, kMaxContextBytes)));
  }

  // One alert: a title line and quoted details. `compact`: the title and the values only.
  std::string Block(const NotifiedAlert& a, bool compact) const {
    const bool firing = a.status == NotifyStatus::kFiring;
    const std::string_view q = style_.Quote();
    std::string out =
        Cat(style_.Color(SeverityColor(a),
                         SafeText(firing ? a.severity : "resolved", kMaxCategoryBytes)),
            " ", style_.Bold(SafeText(a.rule, kMaxCategoryBytes * 4)), " ",
            style_.Code(SafeText(SeriesDisplay(a.series),
                                 compact ? kMaxCompactSeriesBytes : kMaxSeriesBytes)));
    if (!firing && !a.severity.empty()) {
      out += Cat(" (was ", SafeText(a.severity, kMaxCategoryBytes), ")");
    }
    out += Cat("\n", q, ValueText(a, ", ", [&](const std::string& v) { return style_.Bold(v); }));
    if (firing) {
      out += Cat("\n", q, "since ", ClockTime(a.starts_at, n_.time, tz_), " (for ",
                 HumanDuration(n_.time - a.starts_at), ")");
    } else {
      out += Cat("\n", q, "from ", ClockTime(a.starts_at, n_.time, tz_), " to ",
                 ClockTime(a.ends_at, n_.time, tz_), ", lasted ",
                 HumanDuration(a.ends_at - a.starts_at));
    }
    if (compact) return out;
    for (const auto* kv : DisplayAnnotations(a.annotations)) {
      out += Cat("\n", q, SafeText(kv->first, 64), ": ", SafeText(kv->second, kMaxAnnotationBytes));
    }
    if (const std::string* causes = FindLabel(a.annotations, "root_causes")) {
      std::vector<std::string> lines;
      size_t more = 0;
      std::string_view rest = *causes;
      while (!rest.empty()) {
        const size_t nl = rest.find('\n');
        const std::string_view line = TrimAsciiSpace(rest.substr(0, nl));
        rest = nl == std::string_view::npos ? std::string_view() : rest.substr(nl + 1);
        if (line.empty()) continue;
        if (lines.size() < kMaxCauses) {
          lines.push_back(SafeText(line, kMaxCauseBytes));
        } else {
          ++more;
        }
      }
      if (!lines.empty()) {
        out += Cat("\n", q, "root causes:");
        for (size_t i = 0; i < lines.size(); ++i) out += Cat("\n", q, i + 1, ". ", lines[i]);
        if (more > 0) out += Cat("\n", q, "(+", more, " more)");
      }
    }
    const std::string link = MarkdownSafeUrl(DashboardLink(ctx_, a.series));
    if (!link.empty()) out += Cat("\n", q, style_.Link("dashboard", link));
    return out;
  }

  const Notification& n_;
  const MessageContext& ctx_;
  const absl::TimeZone& tz_;
  const WeComStyle style_;
};

std::string RenderWeCom(const ReceiverTarget& target, const Notification& n,
                        const MessageContext& ctx, const absl::TimeZone& tz) {
  Json body = Json::object();
  if (target.mentioned_mobile_list.empty()) {
    const WeComMessage message(n, ctx, tz, {true, kWeComMarkdownMaxBytes});
    body["msgtype"] = "markdown";
    body["markdown"] = {{"content", message.Content()}};
  } else {
    const WeComMessage message(n, ctx, tz, {false, kWeComTextMaxBytes});
    Json mobiles = Json::array();
    for (const std::string& m : target.mentioned_mobile_list) {
      mobiles.push_back(SanitizeText(TrimAsciiSpace(m)));
    }
    body["msgtype"] = "text";
    body["text"] = {{"content", message.Content()}, {"mentioned_mobile_list", std::move(mobiles)}};
  }
  return body.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// ---------------------------------------------------------------------------------------------
// JSON payloads.

std::string Dump(const Json& j) { return j.dump(-1, ' ', false, Json::error_handler_t::replace); }

Json LabelObject(const Labels& labels) {
  Json o = Json::object();
  for (const auto& [name, value] : labels) o[name] = value;
  return o;
}

Json NumberOrNull(double v) { return std::isfinite(v) ? Json(v) : Json(nullptr); }

// The pairs every alert has with the same value.
Labels Common(const Notification& n, const Labels NotifiedAlert::*field) {
  if (n.alerts.empty()) return {};
  Labels common;
  for (const auto& kv : n.alerts.front().*field) {
    const bool shared = std::all_of(n.alerts.begin() + 1, n.alerts.end(), [&](const auto& a) {
      const std::string* v = FindLabel(a.*field, kv.first);
      return v != nullptr && *v == kv.second;
    });
    if (shared) common.push_back(kv);
  }
  return common;
}

std::string RenderWebhook(const Notification& n, const MessageContext& ctx) {
  Json alerts = Json::array();
  for (const NotifiedAlert& a : n.alerts) {
    const bool firing = a.status == NotifyStatus::kFiring;
    Json j = Json::object();
    j["status"] = NotifyStatusName(a.status);
    j["labels"] = LabelObject(a.labels);
    j["annotations"] = LabelObject(a.annotations);
    j["startsAt"] = Rfc3339(a.starts_at);
    j["endsAt"] = firing ? std::string(kGoZeroTime) : Rfc3339(a.ends_at);
    j["generatorURL"] = DashboardLink(ctx, a.series);
    j["fingerprint"] = Fingerprint(a.labels);
    j["series"] = a.series;
    j["stat"] = StatisticName(a.stat);
    j["unit"] = UnitName(a.unit);  // of value, threshold and baseline_p99 when stat is a percentile
    j["tier"] = a.tier;
    j["value"] = NumberOrNull(a.value);
    j["threshold"] = NumberOrNull(a.threshold);
    j["baseline_p99"] = NumberOrNull(a.baseline_p99);
    alerts.push_back(std::move(j));
  }
  Json body = Json::object();
  body["version"] = "4";
  body["groupKey"] = n.group_key;
  body["truncatedAlerts"] = 0;
  body["status"] = NotifyStatusName(n.status);
  body["receiver"] = n.receiver;
  body["groupLabels"] = LabelObject(n.group_labels);
  body["commonLabels"] = LabelObject(Common(n, &NotifiedAlert::labels));
  body["commonAnnotations"] = LabelObject(Common(n, &NotifiedAlert::annotations));
  body["externalURL"] = ctx.external_url;
  body["alerts"] = std::move(alerts);
  body["idempotency_key"] = n.idempotency_key;
  body["sequence"] = n.sequence;
  body["repeat"] = n.repeat;
  return Dump(body);
}

std::string RenderAlertmanager(const Notification& n, const MessageContext& ctx,
                               const absl::TimeZone& tz) {
  Json alerts = Json::array();
  for (const NotifiedAlert& a : n.alerts) {
    Labels annotations = a.annotations;
    const auto add = [&](std::string_view name, std::string value) {
      if (FindLabel(annotations, name) == nullptr) annotations.emplace_back(name, std::move(value));
    };
    add("summary", AlertSummary(a, n.time, tz));
    add("value", FormatStatValue(a.stat, a.value, a.unit));
    add("threshold", FormatStatValue(a.stat, a.threshold, a.unit));
    if (HasBaseline(a)) add("baseline", FormatStatValue(a.stat, a.baseline_p99, a.unit));
    Json j = Json::object();
    j["labels"] = LabelObject(a.labels);
    j["annotations"] = LabelObject(annotations);
    j["startsAt"] = Rfc3339(a.starts_at);
    // Without endsAt Alertmanager keeps a firing alert for its resolve_timeout; with the end
    // it resolves the alert.
    if (a.status == NotifyStatus::kResolved) j["endsAt"] = Rfc3339(a.ends_at);
    const std::string link = DashboardLink(ctx, a.series);
    if (!link.empty()) j["generatorURL"] = link;
    alerts.push_back(std::move(j));
  }
  return Dump(alerts);
}

// ---------------------------------------------------------------------------------------------
// Templates.

constexpr std::array<std::string_view, 13> kTemplateFields = {
    "receiver",  "status",   "summary", "alertname", "severity",      "series",         "value",
    "threshold", "baseline", "since",   "count",     "dashboard_url", "idempotency_key"};

bool IsLabelName(std::string_view s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s.front()))) return false;
  return std::all_of(s.begin(), s.end(),
                     [](unsigned char c) { return std::isalnum(c) || c == '_'; });
}

bool IsKnownField(std::string_view name) {
  if (std::find(kTemplateFields.begin(), kTemplateFields.end(), name) != kTemplateFields.end()) {
    return true;
  }
  for (std::string_view prefix : {"labels.", "annotations."}) {
    if (name.starts_with(prefix)) return IsLabelName(name.substr(prefix.size()));
  }
  return false;
}

struct Segment {
  bool field = false;
  std::string_view text;  // literal text, or the field's name
};

absl::StatusOr<std::vector<Segment>> ParseTemplate(std::string_view t) {
  std::vector<Segment> out;
  size_t i = 0;
  while (i < t.size()) {
    const size_t open = t.find("{{", i);
    if (open == std::string_view::npos) {
      out.push_back({false, t.substr(i)});
      break;
    }
    if (open > i) out.push_back({false, t.substr(i, open - i)});
    if (t.substr(open, 4) == "{{{{") {
      out.push_back({false, t.substr(open, 2)});
      i = open + 4;
      continue;
    }
    const size_t close = t.find("}}", open + 2);
    if (close == std::string_view::npos) {
      return absl::InvalidArgumentError(Cat("body: unclosed {{ at offset ", open));
    }
    const std::string_view name = TrimAsciiSpace(t.substr(open + 2, close - open - 2));
    if (!IsKnownField(name)) {
      std::string known;
      for (std::string_view f : kTemplateFields) known += Cat(f, ", ");
      known += "labels.NAME, annotations.NAME";
      return absl::InvalidArgumentError(Cat("body: unknown field {{", SafeText(name, 64),
                                            "}} at offset ", open, "; known: ", known));
    }
    out.push_back({true, name});
    i = close + 2;
  }
  return out;
}

enum class Escape : uint8_t { kNone, kJson, kPercent };

Escape EscapeFor(const ReceiverTarget& target) {
  if (EqualsIgnoreCase(target.method, "GET")) return Escape::kPercent;
  std::string media(TrimAsciiSpace(
      std::string_view(target.content_type)
          .substr(0, std::min(target.content_type.find(';'), target.content_type.size()))));
  std::transform(media.begin(), media.end(), media.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  if (media.ends_with("/json") || media.ends_with("+json")) return Escape::kJson;
  if (media == "application/x-www-form-urlencoded") return Escape::kPercent;
  return Escape::kNone;
}

std::string FieldValue(std::string_view name, const Notification& n, const NotifiedAlert* lead,
                       const MessageContext& ctx, const absl::TimeZone& tz) {
  if (name == "receiver") return n.receiver;
  if (name == "status") return std::string(NotifyStatusName(n.status));
  if (name == "summary") return Summary(n, tz);
  if (name == "count") return Cat(n.alerts.size());
  if (name == "idempotency_key") return n.idempotency_key;
  if (lead == nullptr) return "";
  const NotifiedAlert& a = *lead;
  if (name == "alertname") return a.rule;
  if (name == "severity") return a.severity;
  if (name == "series") return a.series;
  if (name == "value") return FormatStatValue(a.stat, a.value, a.unit);
  if (name == "threshold") return FormatStatValue(a.stat, a.threshold, a.unit);
  if (name == "baseline") {
    return HasBaseline(a) ? FormatStatValue(a.stat, a.baseline_p99, a.unit) : "";
  }
  if (name == "since") return ClockTime(a.starts_at, n.time, tz);
  if (name == "dashboard_url") return DashboardLink(ctx, a.series);
  if (name.starts_with("labels.")) return std::string(LabelValue(a.labels, name.substr(7)));
  if (name.starts_with("annotations.")) {
    return std::string(LabelValue(a.annotations, name.substr(12)));
  }
  return "";
}

absl::StatusOr<std::string> FillTemplate(const ReceiverTarget& target, const Notification& n,
                                         const MessageContext& ctx, const absl::TimeZone& tz) {
  absl::StatusOr<std::vector<Segment>> segments = ParseTemplate(target.body_template);
  if (!segments.ok()) return segments.status();
  const Escape escape = EscapeFor(target);
  const NotifiedAlert* lead = LeadAlert(n);
  std::string out;
  const bool query = EqualsIgnoreCase(TrimAsciiSpace(target.method), "GET");
  for (const Segment& s : *segments) {
    if (!s.field) {
      out += query ? UrlSafe(s.text) : std::string(s.text);
      continue;
    }
    const std::string value = SanitizeText(FieldValue(s.text, n, lead, ctx, tz), true);
    switch (escape) {
      case Escape::kNone:
        out += value;
        break;
      case Escape::kJson:
        out += JsonEscape(value);
        break;
      case Escape::kPercent:
        out += PercentEncode(value);
        break;
    }
  }
  return out;
}

}  // namespace

std::span<const std::string_view> TemplateFields() { return kTemplateFields; }

absl::Status ValidateTemplate(std::string_view body_template) {
  return ParseTemplate(body_template).status();
}

std::string FormatStatValue(Statistic s, double value, Unit unit) {
  if (std::isnan(value)) return "n/a";
  if (std::isinf(value)) return value > 0 ? "+Inf" : "-Inf";
  switch (s) {
    case Statistic::kP50:
    case Statistic::kP90:
    case Statistic::kP99:
    case Statistic::kP999:
      if (unit == Unit::kCount) return Number(value);
      if (unit == Unit::kBytes) {
        static constexpr const char* kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
        size_t i = 0;
        while (std::fabs(value) >= 1024 && i + 1 < std::size(kUnits)) {
          value /= 1024;
          ++i;
        }
        return Cat(Number(value), " ", kUnits[i]);
      }
      if (std::fabs(value) >= 10) return Cat(Number(value), " s");
      return Cat(Number(value * 1e3), " ms");
    case Statistic::kRate:
      return Cat(Number(value), unit == Unit::kNanoseconds ? " req/s" : " /s");
    case Statistic::kErrorRatio:
      return Cat(Number(value * 100), " %");
    case Statistic::kAnomalyScore:
      return Number(value);
  }
  return Number(value);
}

std::string OneLine(std::string_view text, size_t max_bytes) { return SafeText(text, max_bytes); }

std::string Fingerprint(const Labels& labels) {
  Labels sorted = labels;
  std::sort(sorted.begin(), sorted.end());
  uint64_t h = 14695981039346656037ULL;  // FNV-1a 64 offset basis
  const auto add = [&h](std::string_view s) {
    for (unsigned char c : s) {
      h ^= c;
      h *= 1099511628211ULL;
    }
  };
  for (const auto& [name, value] : sorted) {
    add(name);
    add("\xff");  // model.SeparatorByte
    add(value);
    add("\xff");
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

std::string DashboardLink(const MessageContext& ctx, std::string_view series) {
  if (ctx.external_url.empty()) return "";
  std::string_view base = ctx.external_url;
  while (base.ends_with('/')) base.remove_suffix(1);
  return SeriesDashboardUrl(base, series);
}

std::string GroupLink(const MessageContext& ctx, std::string_view group_key) {
  if (ctx.external_url.empty()) return "";
  std::string_view base = ctx.external_url;
  while (base.ends_with('/')) base.remove_suffix(1);
  (void)group_key;  // the alerts view lists every active alert; it has no filter by group
  return AlertsDashboardUrl(base);
}

std::string Summary(const Notification& n, const absl::TimeZone& tz) {
  const NotifiedAlert* lead = LeadAlert(n);
  std::string out;
  if (lead == nullptr) {
    out = Cat(NotifyStatusName(n.status), " ", n.group_key.empty() ? n.receiver : n.group_key,
              ": no alerts");
  } else {
    out = Cat(NotifyStatusName(n.status), " ", AlertSummary(*lead, n.time, tz));
    if (n.alerts.size() > 1) out += Cat(" (+", n.alerts.size() - 1, " more)");
  }
  return SanitizeText(out);
}

absl::StatusOr<HttpRequest> Render(const ReceiverTarget& target, const Notification& n,
                                   const MessageContext& ctx) {
  if (target.kind == ReceiverTarget::Kind::kNone) {
    return absl::InvalidArgumentError("receiver has no target to render for");
  }
  if (target.url.empty()) return absl::InvalidArgumentError("url: must not be empty");
  absl::TimeZone tz;
  if (!absl::LoadTimeZone(ctx.time_zone, &tz)) {
    return absl::InvalidArgumentError(TimeZoneError(ctx.time_zone));
  }
  HttpRequest r;
  r.url = target.url;
  std::string content_type = "application/json";
  switch (target.kind) {
    case ReceiverTarget::Kind::kNone:
      break;
    case ReceiverTarget::Kind::kWeCom:
      r.body = RenderWeCom(target, n, ctx, tz);
      r.check = HttpRequest::Check::kWeComErrcode;
      break;
    case ReceiverTarget::Kind::kWebhook:
      r.body = RenderWebhook(n, ctx);
      break;
    case ReceiverTarget::Kind::kAlertmanager: {
      std::string_view base = target.url;
      while (base.ends_with('/')) base.remove_suffix(1);
      r.url = Cat(base, "/api/v2/alerts");
      r.body = RenderAlertmanager(n, ctx, tz);
      break;
    }
    case ReceiverTarget::Kind::kTemplate: {
      absl::StatusOr<std::string> filled = FillTemplate(target, n, ctx, tz);
      if (!filled.ok()) return filled.status();
      std::string method(TrimAsciiSpace(target.method));
      std::transform(method.begin(), method.end(), method.begin(),
                     [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
      if (method != "POST" && method != "PUT" && method != "GET") {
        return absl::InvalidArgumentError(
            Cat("method: expected POST, PUT or GET, got \"", SafeText(target.method, 16), "\""));
      }
      r.method = method;
      if (method == "GET") {
        if (!filled->empty()) {
          r.url += Cat(r.url.find('?') == std::string::npos ? "?" : "&", *filled);
        }
      } else {
        r.body = *std::move(filled);
      }
      content_type = target.content_type;
      break;
    }
  }
  const bool has_body = r.method != "GET";
  if (has_body && !content_type.empty()) r.headers.emplace_back("Content-Type", content_type);
  for (const auto& [name, value] : target.headers) {
    if (EqualsIgnoreCase(name, "Idempotency-Key")) continue;
    if (EqualsIgnoreCase(name, "Content-Type")) {
      if (!has_body) continue;
      auto it = std::find_if(r.headers.begin(), r.headers.end(), [](const auto& h) {
        return EqualsIgnoreCase(h.first, "Content-Type");
      });
      if (it != r.headers.end()) {
        it->second = value;
        continue;
      }
    }
    r.headers.emplace_back(name, value);
  }
  r.headers.emplace_back("Idempotency-Key", HeaderSafe(n.idempotency_key));
  return r;
}

std::string HumanDuration(Duration d) {
  const int64_t s =
      std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::seconds>(d).count());
  const auto two = [](int64_t a, std::string_view ua, int64_t b, std::string_view ub) {
    return b == 0 ? Cat(a, ua) : Cat(a, ua, b, ub);
  };
  if (s < 60) return Cat(s, "s");
  if (s < 3600) return two(s / 60, "m", s % 60, "s");
  if (s < 86400) return two(s / 3600, "h", s % 3600 / 60, "m");
  return two(s / 86400, "d", s % 86400 / 3600, "h");
}

}  // namespace tailguard::notify
