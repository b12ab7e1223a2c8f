#include "analyze/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string_view>
#include <tuple>
#include <utility>

#include "common/format.h"
#include "common/strings.h"
#include "diagnose/quadrant.h"
#include "metrics/unit_format.h"
#include "tailguard/registry.h"
#include "tailguard/series_io.h"
#include "tailguard/version.h"

namespace tailguard::analyze {
namespace {

using store::AlertRow;
using store::DiagnosisCauseRow;
using store::DiagnosisRow;
using store::TimelineEntry;
using store::TimelineType;

double Seconds(WallTime t) { return std::chrono::duration<double>(t.time_since_epoch()).count(); }

std::string Fixed(double v, int digits) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), "%.*f", digits, v);
  return buf;
}

std::string Percent(double ratio) {
  if (!std::isfinite(ratio)) return "–";
  const double p = ratio * 100;
  if (p == 0) return "0 %";
  if (p < 0.1) return "<0.1 %";
  return Cat(Fixed(p, p < 10 ? 1 : 0), " %");
}

// "HH:MM:SS" of a UTC time.
std::string ClockText(WallTime t) { return FormatTimestamp(t).substr(11); }

// ---------------------------------------------------------------------------------------------
// Escaping. Label values come from requests: nothing from the store goes out unescaped.

std::string Html(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

// Text in Markdown, also inside a table cell: what would start markup, HTML or a new cell is
// escaped, line breaks become spaces.
std::string Md(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (char c : s) {
    switch (c) {
      case '\\':
      case '`':
      case '*':
      case '_':
      case '[':
      case ']':
      case '|':
      case '#':
        out += '\\';
        out += c;
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '\n':
      case '\r':
        out += ' ';
        break;
      default:
        out += c;
    }
  }
  return out;
}

// A code span (series keys): backticks inside would end it, a bar would end a table cell.
std::string MdCode(std::string_view s) {
  std::string out = "`";
  for (char c : s) {
    if (c == '`') {
      out += '\'';
    } else if (c == '|') {
      out += "\\|";
    } else if (c == '\n' || c == '\r') {
      out += ' ';
    } else {
      out += c;
    }
  }
  return out + "`";
}

// ---------------------------------------------------------------------------------------------
// Values in their units.

Unit UnitOfName(std::string_view name) { return ParseUnit(name).value_or(Unit::kNanoseconds); }

// An alert's statistic as the alerts view shows it: rates in req/s, error ratios in %, anomaly
// scores bare, percentiles in the series' unit.
std::string StatText(std::string_view stat, std::string_view unit, double v) {
  if (!std::isfinite(v)) return "–";
  if (stat == "rate") {
    return Cat(Fixed(v, v >= 100  ? 0
                        : v >= 10 ? 1
                                  : 2),
               unit.empty() || unit == "seconds" ? " req/s" : "/s");
  }
  if (stat == "error_ratio") return Percent(v);
  if (stat == "anomaly_score") return Fixed(v, 2);
  return metrics::FormatInUnit(v, UnitOfName(unit));
}

// A diagnosed signal's value, in the unit its metric's name gives.
std::string CauseValue(std::string_view series, double v) {
  if (!std::isfinite(v)) return "–";
  return metrics::FormatInUnit(v, UnitOfName(diagnose::UnitNameOf(series)));
}

std::string Relative(double s) {
  if (!std::isfinite(s)) return "–";
  const long r = std::lround(s);
  return Cat(r >= 0 ? "+" : "−", std::abs(r), "s");
}

std::string DurationText(WallTime from, WallTime to) {
  return FormatDuration(std::chrono::duration<double, std::nano>(to - from).count());
}

// ---------------------------------------------------------------------------------------------
// SVG charts: a line chart with axes, and a sparkline.

struct Line {
  std::vector<std::pair<double, double>> points;  // NaN values break the line
  std::string color;
  double width = 1.5;
  bool dashed = false;
  std::string name;  // for the legend
};

struct Mark {
  double at = 0;
  std::string color;
  std::string label;  // "" for none
};

struct Chart {
  double width = 760;
  double height = 230;
  bool axes = true;
  bool from_zero = true;
  std::vector<Line> lines;
  double band_lo = NAN, band_hi = NAN;           // a shaded range of values (the baseline's IQR)
  std::vector<Mark> levels;                      // horizontal lines (threshold, baseline median)
  std::vector<Mark> moments;                     // vertical lines (fire, diagnosis, alert)
  std::vector<std::pair<double, double>> spans;  // shaded ranges of x (the episode)
  double x_min = NAN, x_max = NAN;               // NaN: from the data
  std::function<std::string(double)> x_text;
  std::function<std::string(double)> y_text;
  std::string label;  // aria-label
};

// 1, 2 or 5 times a power of ten, at least `raw`.
double NiceStep(double raw) {
  if (!(raw > 0) || !std::isfinite(raw)) return 1;
  const double p = std::pow(10, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * p >= raw) return m * p;
  }
  return 10 * p;
}

std::string Num(double v) { return Fixed(v, 1); }

std::string Svg(const Chart& c) {
  double x0 = c.x_min, x1 = c.x_max;
  double y0 = INFINITY, y1 = -INFINITY;
  auto take_x = [&](double x) {
    if (!std::isfinite(x)) return;
    if (std::isnan(c.x_min)) x0 = std::isfinite(x0) ? std::min(x0, x) : x;
    if (std::isnan(c.x_max)) x1 = std::isfinite(x1) ? std::max(x1, x) : x;
  };
  auto take_y = [&](double y) {
    if (!std::isfinite(y)) return;
    y0 = std::min(y0, y);
    y1 = std::max(y1, y);
  };
  for (const Line& l : c.lines) {
    for (const auto& [x, y] : l.points) {
      take_x(x);
      if (std::isfinite(x)) take_y(y);
    }
  }
  for (const Mark& m : c.levels) take_y(m.at);
  take_y(c.band_lo);
  take_y(c.band_hi);
  for (const auto& [a, b] : c.spans) {
    take_x(a);
    take_x(b);
  }
  if (!std::isfinite(x0) || !std::isfinite(x1) || !std::isfinite(y0)) return "";
  if (x1 <= x0) x1 = x0 + 1;
  if (c.from_zero && y0 > 0) y0 = 0;
  if (y1 <= y0) {
    const double pad = y0 == 0 ? 1 : std::abs(y0) * 0.1;
    y0 -= pad;
    y1 += pad;
  }
  double step = 0;
  if (c.axes) {
    step = NiceStep((y1 - y0) / 4);
    y1 = std::ceil(y1 / step - 1e-9) * step;
    if (!c.from_zero) y0 = std::floor(y0 / step + 1e-9) * step;
  } else {
    const double pad = (y1 - y0) * 0.08;
    y0 -= pad;
    y1 += pad;
  }
  const double left = c.axes ? 68 : 2, right = c.axes ? 14 : 2;
  const double top = c.axes ? 10 : 2, bottom = c.axes ? 26 : 2;
  const double pw = c.width - left - right, ph = c.height - top - bottom;
  auto X = [&](double x) { return left + (std::clamp(x, x0, x1) - x0) / (x1 - x0) * pw; };
  auto Y = [&](double y) { return top + (1 - (std::clamp(y, y0, y1) - y0) / (y1 - y0)) * ph; };

  std::string s = Cat("<svg xmlns=\"http://www.w3.org/2000/svg\" role=\"img\" width=\"",
                      Num(c.width), "\" height=\"", Num(c.height), "\" viewBox=\"0 0 ",
                      Num(c.width), " ", Num(c.height), "\" aria-label=\"", Html(c.label), "\">");
  for (const auto& [a, b] : c.spans) {
    s += Cat("<rect class=\"span\" x=\"", Num(X(a)), "\" y=\"", Num(top), "\" width=\"",
             Num(std::max(1.0, X(b) - X(a))), "\" height=\"", Num(ph),
             "\" fill=\"#cf222e\" fill-opacity=\"0.08\"/>");
  }
  if (std::isfinite(c.band_lo) && std::isfinite(c.band_hi)) {
    const double a = Y(std::max(c.band_lo, c.band_hi)), b = Y(std::min(c.band_lo, c.band_hi));
    s += Cat("<rect class=\"band\" x=\"", Num(left), "\" y=\"", Num(a), "\" width=\"", Num(pw),
             "\" height=\"", Num(std::max(1.0, b - a)),
             "\" fill=\"#0969da\" fill-opacity=\"0.15\"/>");
  }
  if (c.axes) {
    for (double v = y0; v <= y1 + step * 1e-6; v += step) {
      const double y = Y(v);
      s += Cat("<line x1=\"", Num(left), "\" x2=\"", Num(left + pw), "\" y1=\"", Num(y), "\" y2=\"",
               Num(y), "\" stroke=\"#d0d7de\" stroke-width=\"0.6\"/>");
      s += Cat("<text x=\"", Num(left - 6), "\" y=\"", Num(y + 4),
               "\" text-anchor=\"end\" font-size=\"11\" fill=\"#57606a\">",
               Html(c.y_text ? c.y_text(v) : Fixed(v, 2)), "</text>");
    }
    const int ticks = 6;
    for (int i = 0; i <= ticks; ++i) {
      const double v = x0 + (x1 - x0) * i / ticks;
      s += Cat("<text x=\"", Num(X(v)), "\" y=\"", Num(c.height - 8), "\" text-anchor=\"",
               i == 0       ? "start"
               : i == ticks ? "end"
                            : "middle",
               "\" font-size=\"11\" fill=\"#57606a\">", Html(c.x_text ? c.x_text(v) : Fixed(v, 0)),
               "</text>");
    }
    s += Cat("<line x1=\"", Num(left), "\" x2=\"", Num(left + pw), "\" y1=\"", Num(top + ph),
             "\" y2=\"", Num(top + ph), "\" stroke=\"#8c959f\" stroke-width=\"0.8\"/>");
  }
  for (const Mark& m : c.levels) {
    const double y = Y(m.at);
    s += Cat("<line class=\"level\" x1=\"", Num(left), "\" x2=\"", Num(left + pw), "\" y1=\"",
             Num(y), "\" y2=\"", Num(y), "\" stroke=\"", m.color,
             "\" stroke-width=\"1\" stroke-dasharray=\"5 3\"/>");
    if (!m.label.empty()) {
      // At the left: the moments' labels are at the right, where the episode usually is.
      s += Cat("<text x=\"", Num(left + 4), "\" y=\"", Num(y - 4), "\" font-size=\"11\" fill=\"",
               m.color, "\">", Html(m.label), "</text>");
    }
  }
  int label_row = -1;
  for (const Mark& m : c.moments) {
    const double x = X(m.at);
    s += Cat("<line class=\"moment\" x1=\"", Num(x), "\" x2=\"", Num(x), "\" y1=\"", Num(top),
             "\" y2=\"", Num(top + ph), "\" stroke=\"", m.color,
             "\" stroke-width=\"1\" stroke-dasharray=\"2 2\"/>");
    if (!m.label.empty()) {
      // Near the right edge the label goes to the left of its line; each label one row lower
      // than the last, so that moments close together stay readable.
      const bool flip = x > left + pw - 70;
      label_row = (label_row + 1) % 3;
      s += Cat("<text x=\"", Num(flip ? x - 3 : x + 3), "\" y=\"", Num(top + 11 + 12 * label_row),
               "\" text-anchor=\"", flip ? "end" : "start", "\" font-size=\"11\" fill=\"", m.color,
               "\">", Html(m.label), "</text>");
    }
  }
  for (const Line& l : c.lines) {
    std::string d;
    bool pen = false;
    for (const auto& [x, y] : l.points) {
      if (!std::isfinite(x) || !std::isfinite(y)) {
        pen = false;
        continue;
      }
      d += Cat(pen ? "L" : "M", Num(X(x)), " ", Num(Y(y)), " ");
      pen = true;
    }
    if (d.empty()) continue;
    s += Cat("<path class=\"line\" d=\"", d, "\" fill=\"none\" stroke=\"", l.color,
             "\" stroke-width=\"", Fixed(l.width, 1), "\"",
             l.dashed ? " stroke-dasharray=\"4 3\"" : "", "/>");
  }
  return s + "</svg>";
}

// Eight levels of a block sparkline over the values' range; a gap for NaN.
std::string TextSparkline(const std::vector<double>& values) {
  static constexpr std::string_view kBlocks[] = {"▁", "▂", "▃", "▄", "▅", "▆", "▇", "█"};
  double lo = INFINITY, hi = -INFINITY;
  for (double v : values) {
    if (std::isfinite(v)) {
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
  }
  std::string out;
  for (double v : values) {
    if (!std::isfinite(v)) {
      out += ' ';
      continue;
    }
    const int level = hi > lo ? static_cast<int>(std::lround((v - lo) / (hi - lo) * 7)) : 0;
    out += kBlocks[std::clamp(level, 0, 7)];
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// What the report says, shared by both renderings.

const char* QuadrantTitle(std::string_view q) {
  if (q == "hardware") return "Hardware";
  if (q == "traffic") return "Traffic";
  if (q == "dependency") return "Dependency";
  if (q == "model") return "Model";
  return "Unknown";
}

struct Event {
  WallTime time{};
  std::string kind;  // a word: fire, resolve, diagnosis, change, notification, action, ack, note
  std::string text;
};

std::string TransitionText(const TimelineEntry& e, const AlertRow& a) {
  std::string s = Cat(e.from_state, " → ", e.to_state);
  if (e.to_tier >= 0) s += Cat(", tier ", e.to_tier);
  if (!e.severity.empty()) s += Cat(" (", e.severity, ")");
  if (std::isfinite(e.value)) {
    s += Cat(": ", a.stat, " ", StatText(a.stat, a.unit, e.value), " against ",
             StatText(a.stat, a.unit, e.threshold));
  } else if (e.kind == "no_data") {
    s += ": the statistic went missing";
  }
  if (!e.schedule.empty()) s += Cat(" [schedule ", e.schedule, "]");
  if (!e.actions.empty()) {
    s += "; actions:";
    for (const std::string& x : e.actions) s += Cat(" ", x);
  }
  return s;
}

std::string OutcomeText(const store::OutboxItem& o) {
  std::string s(store::OutboxStateName(o.state));
  if (o.state == store::OutboxItem::State::kDelivered && o.delivered_at != WallTime{}) {
    s += Cat(" at ", ClockText(o.delivered_at));
  }
  if (o.attempts > 0) s += Cat(" after ", o.attempts, o.attempts == 1 ? " attempt" : " attempts");
  if (o.last_http_status != 0) s += Cat(", HTTP ", o.last_http_status);
  if (!o.last_error.empty() && o.state != store::OutboxItem::State::kDelivered) {
    s += Cat(": ", o.last_error);
  }
  return s;
}

// Every change any diagnosis saw, once, oldest first.
std::vector<store::ChangeRow> Changes(const IncidentReport& r) {
  std::vector<store::ChangeRow> all;
  std::set<std::tuple<int64_t, std::string, std::string>> seen;
  for (const DiagnosisRow& d : r.diagnoses) {
    for (const store::ChangeRow& c : d.changes) {
      if (seen.emplace(c.time.time_since_epoch().count(), c.subject, c.what).second) {
        all.push_back(c);
      }
    }
  }
  std::stable_sort(all.begin(), all.end(),
                   [](const auto& a, const auto& b) { return a.time < b.time; });
  return all;
}

std::vector<Event> Timeline(const IncidentReport& r) {
  const AlertRow& a = r.detail.alert;
  std::vector<Event> out;
  for (const TimelineEntry& e : r.detail.timeline) {
    switch (e.type) {
      case TimelineType::kTransition:
        out.push_back({e.time, e.kind, TransitionText(e, a)});
        break;
      case TimelineType::kAction:
        out.push_back({e.time, "action", Cat(e.kind, ": ", e.detail)});
        break;
      case TimelineType::kMuted:
        out.push_back({e.time, "muted", Cat("notification not sent: ", e.detail)});
        break;
      case TimelineType::kAck:
        out.push_back({e.time, "ack", Cat("acknowledged by ", e.detail)});
        break;
    }
  }
  for (const DiagnosisRow& d : r.diagnoses) {
    out.push_back({d.time, "diagnosis", d.summary});
  }
  for (const store::ChangeRow& c : Changes(r)) {
    out.push_back({c.time, "change", Cat(c.subject, ": ", c.what)});
  }
  for (const store::AlertNotification& n : r.detail.notifications) {
    out.push_back({n.outbox.created, "notification",
                   Cat(n.status, " to ", n.outbox.receiver, ": ", OutcomeText(n.outbox))});
  }
  for (const store::Annotation& n : r.detail.annotations) {
    out.push_back({n.time, "note", Cat(n.kind, ": ", n.text)});
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const Event& x, const Event& y) { return x.time < y.time; });
  return out;
}

// What people did and what tailguard did about it: actions, acknowledgements, notifications,
// mutes and notes, in time order.
std::vector<Event> Actions(const std::vector<Event>& timeline) {
  std::vector<Event> out;
  for (const Event& e : timeline) {
    if (e.kind == "action" || e.kind == "ack" || e.kind == "notification" || e.kind == "muted" ||
        e.kind == "note") {
      out.push_back(e);
    }
  }
  return out;
}

constexpr std::string_view kNoActions =
    "None recorded: no tier of the rule starts an action, nobody acknowledged the alert and no "
    "notification was sent.";

std::string Title(const AlertRow& a) {
  return Cat("Alert #", a.id, " · ", a.rule, " on ", a.series);
}

// "severity critical · resolved · started ... · fired ... · ended ... (lasted 4.2min)".
std::string Facts(const IncidentReport& r) {
  const AlertRow& a = r.detail.alert;
  std::string s =
      Cat(a.severity.empty() ? "" : Cat("severity ", a.severity, " · "),
          store::EpisodeStateName(a.state), " · started ", FormatTimestampUtc(a.started_at));
  if (a.fired_at) s += Cat(" · fired ", FormatTimestampUtc(*a.fired_at));
  if (a.ended_at) {
    s += Cat(" · ended ", FormatTimestampUtc(*a.ended_at), " (lasted ",
             DurationText(a.started_at, *a.ended_at), ")");
  } else {
    s += Cat(" · still active at ", FormatTimestampUtc(r.generated_at), " (",
             DurationText(a.started_at, r.generated_at), " so far)");
  }
  return s;
}

std::string ValueLine(const AlertRow& a) {
  std::string s = Cat(a.stat, " ", StatText(a.stat, a.unit, a.value), " against the threshold ",
                      StatText(a.stat, a.unit, a.threshold));
  if (std::isfinite(a.baseline_p99) && a.baseline_p99 > 0) {
    s += Cat("; the baseline P99 was ", metrics::FormatInUnit(a.baseline_p99, UnitOfName(a.unit)));
  }
  if (!a.acked_by.empty()) {
    s += Cat(". Acknowledged by ", a.acked_by);
    if (a.acked_at) s += Cat(" at ", FormatTimestampUtc(*a.acked_at));
    if (!a.ack_comment.empty()) s += Cat(": \"", a.ack_comment, "\"");
  }
  return s;
}

// The peak P99 of the charted minutes inside the episode, and when.
std::optional<std::pair<WallTime, double>> PeakMinute(const IncidentReport& r) {
  const AlertRow& a = r.detail.alert;
  const WallTime end = a.ended_at.value_or(r.generated_at) + std::chrono::minutes(1);
  std::optional<std::pair<WallTime, double>> best;
  for (const store::MinuteRow& m : r.minutes) {
    if (m.time < a.started_at || m.time > end || !std::isfinite(m.p99)) continue;
    if (!best || m.p99 > best->second) best = std::make_pair(m.time, m.p99);
  }
  return best;
}

Chart SeriesChart(const IncidentReport& r) {
  const AlertRow& a = r.detail.alert;
  const Unit unit = UnitOfName(a.unit);
  Chart c;
  c.label = Cat("P50 and P99 of ", a.series, " per minute around the alert");
  c.x_min = Seconds(r.from);
  c.x_max = Seconds(r.to);
  Line p50{.points = {}, .color = "#0969da", .width = 1.3, .dashed = false, .name = "P50"};
  Line p99{.points = {}, .color = "#8250df", .width = 2, .dashed = false, .name = "P99"};
  Line base{.points = {}, .color = "#6e7781", .width = 1, .dashed = true, .name = "baseline P99"};
  for (const store::MinuteRow& m : r.minutes) {
    const double t = Seconds(m.time);
    p50.points.emplace_back(t, m.p50);
    p99.points.emplace_back(t, m.p99);
    base.points.emplace_back(t, m.baseline_p99);
  }
  c.lines = {std::move(p50), std::move(p99)};
  if (std::any_of(base.points.begin(), base.points.end(),
                  [](const auto& p) { return std::isfinite(p.second); })) {
    c.lines.push_back(std::move(base));
  }
  // A threshold of the P99 itself is drawn; one of another statistic would mislead on this axis.
  if (a.stat == "p99" && std::isfinite(a.threshold)) {
    c.levels.push_back(
        {a.threshold, "#cf222e", Cat("threshold ", StatText(a.stat, a.unit, a.threshold))});
  }
  c.spans.emplace_back(Seconds(a.started_at), Seconds(a.ended_at.value_or(r.to)));
  if (a.fired_at) c.moments.push_back({Seconds(*a.fired_at), "#cf222e", "fired"});
  if (!r.diagnoses.empty()) {
    c.moments.push_back({Seconds(r.diagnoses.front().time), "#9a6700", "diagnosed"});
  }
  c.x_text = [](double t) {
    return ClockText(WallTime(std::chrono::nanoseconds(static_cast<int64_t>(t * 1e9))))
        .substr(0, 5);
  };
  c.y_text = [unit](double v) { return metrics::FormatInUnit(v, unit); };
  return c;
}

Chart CauseSparkline(const DiagnosisCauseRow& cause) {
  Chart c;
  c.width = 180;
  c.height = 40;
  c.axes = false;
  c.from_zero = false;
  c.label = Cat(cause.series, " over the ten minutes before the diagnosis, against its baseline");
  Line l{.points = cause.points,
         .color = cause.kind == "cause" ? "#cf222e" : "#6e7781",
         .width = 1.4,
         .dashed = false,
         .name = ""};
  c.lines.push_back(std::move(l));
  c.band_lo = cause.baseline_q1;
  c.band_hi = cause.baseline_q3;
  c.levels.push_back({cause.baseline_median, "#0969da", ""});
  c.moments.push_back({0, "#8c959f", ""});
  double first = 0;
  for (const auto& [t, v] : cause.points) first = std::min(first, t);
  c.x_min = std::min(-60.0, first);
  c.x_max = 0;
  return c;
}

std::vector<double> Values(const std::vector<std::pair<double, double>>& points) {
  std::vector<double> v;
  for (const auto& p : points) v.push_back(p.second);
  return v;
}

// ---------------------------------------------------------------------------------------------
// HTML.

constexpr std::string_view kCss = R"css(
:root { color-scheme: light; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, "Noto Sans", sans-serif;
  color: #1f2328; background: #fff; margin: 24px auto; max-width: 1100px; padding: 0 16px; }
h1 { font-size: 20px; margin: 0 0 4px; word-break: break-all; }
h2 { font-size: 16px; margin: 28px 0 8px; border-bottom: 1px solid #d0d7de; padding-bottom: 4px; }
.meta, .muted { color: #57606a; }
code, .key { font: 12px ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; word-break: break-all; }
table { border-collapse: collapse; width: 100%; }
th, td { text-align: left; padding: 5px 8px; border-bottom: 1px solid #eaeef2; vertical-align: top; }
th { font-size: 12px; color: #57606a; font-weight: 600; }
td.num, th.num { text-align: right; white-space: nowrap; }
td.time { white-space: nowrap; width: 11em; } td.key { min-width: 18em; }
.kind { display: block; font-size: 11px; color: #57606a; margin-top: 2px; }
tr.rationale td { color: #57606a; font-size: 12px; border-bottom: 1px solid #d0d7de; padding-top: 0; }
.finding { border: 1px solid #d0d7de; border-radius: 6px; padding: 10px 14px; background: #f6f8fa; }
.badge { display: inline-block; border-radius: 10px; padding: 1px 9px; font-size: 12px; font-weight: 600; color: #fff; }
.q-hardware { background: #8250df; } .q-traffic { background: #0969da; }
.q-dependency { background: #9a6700; } .q-model { background: #1a7f37; } .q-unknown { background: #6e7781; }
.legend span { margin-right: 16px; font-size: 12px; color: #57606a; }
.legend i { display: inline-block; width: 18px; height: 3px; vertical-align: middle; margin-right: 5px; }
.empty { color: #57606a; font-style: italic; }
footer { margin-top: 32px; font-size: 12px; color: #57606a; }
@media print { body { margin: 0; } h2 { break-after: avoid; } tr { break-inside: avoid; } }
)css";

std::string Badge(std::string_view quadrant) {
  const std::string q = quadrant.empty() ? "unknown" : std::string(quadrant);
  return Cat("<span class=\"badge q-", Html(q), "\" data-quadrant=\"", Html(q), "\">",
             QuadrantTitle(q), "</span>");
}

void HtmlEvents(std::string& s, const std::vector<Event>& events, std::string_view id,
                std::string_view none) {
  if (events.empty()) {
    s += Cat("<p class=\"empty\" id=\"", id, "\">", Html(none), "</p>\n");
    return;
  }
  s += Cat("<table id=\"", id,
           "\"><thead><tr><th>Time (UTC)</th><th>Event</th><th>What</th></tr>"
           "</thead><tbody>\n");
  for (const Event& e : events) {
    s += Cat("<tr data-kind=\"", Html(e.kind), "\"><td class=\"time\">",
             Html(FormatTimestampUtc(e.time).substr(0, 19)), "</td><td>", Html(e.kind), "</td><td>",
             Html(e.text), "</td></tr>\n");
  }
  s += "</tbody></table>\n";
}

}  // namespace

absl::StatusOr<IncidentReport> LoadIncidentReport(store::EventStore& events,
                                                  const store::HistoryStore* history, int64_t id,
                                                  WallTime now, const ReportOptions& options) {
  IncidentReport r;
  absl::StatusOr<store::AlertDetail> detail = events.GetAlert(id);
  if (!detail.ok()) return detail.status();
  r.detail = *std::move(detail);
  absl::StatusOr<std::vector<DiagnosisRow>> diagnoses = events.ListDiagnoses(id);
  if (!diagnoses.ok()) return diagnoses.status();
  r.diagnoses = *std::move(diagnoses);
  r.generated_at = now;
  r.source = events.path();
  const AlertRow& a = r.detail.alert;
  r.from = a.started_at - options.before;
  r.to = std::min(now, a.ended_at.value_or(now) + options.after);
  if (r.to <= r.from) r.to = r.from + std::chrono::minutes(1);
  if (history != nullptr) {
    absl::StatusOr<std::vector<store::MinuteRow>> minutes =
        history->ReadPoints(store::HistorySeriesId(a.series), r.from, r.to);
    if (!minutes.ok()) return minutes.status();
    r.minutes = *std::move(minutes);
  }
  return r;
}

std::string RenderReportHtml(const IncidentReport& r) {
  const AlertRow& a = r.detail.alert;
  const DiagnosisRow* d = r.diagnoses.empty() ? nullptr : &r.diagnoses.back();
  const std::vector<Event> timeline = Timeline(r);
  std::string s =
      Cat("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
          "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
          "<title>Incident report: ",
          Html(Title(a)), "</title>\n<style>", kCss, "</style></head>\n<body>\n");
  s += Cat("<header><h1 id=\"title\">Incident report · ", Html(Title(a)),
           "</h1>\n<p class=\"meta\" "
           "id=\"facts\">",
           Html(Facts(r)), "</p>\n<p id=\"value\">", Html(ValueLine(a)), "</p></header>\n");

  s += "<h2>Finding</h2>\n<div class=\"finding\" id=\"finding\">";
  if (d == nullptr) {
    s += "<p class=\"empty\">No diagnosis: one is made when an alert fires or escalates, and this "
         "episode did not fire (or alerted before diagnosis was on).</p>";
  } else {
    s += Cat("<p>", Badge(d->quadrant), " <span id=\"summary\">", Html(d->summary), "</span></p>");
    if (!d->contention.empty()) {
      s += Cat("<p>Contention: the cause is on ", Html(d->contention),
               ", whose load took the CPUs this route shares.</p>");
    }
    s += Cat("<p class=\"muted\">Diagnosed at ", Html(FormatTimestampUtc(d->time)), " from ",
             d->series_considered, " signals in ", Fixed(d->seconds * 1e3, 1), " ms.</p>");
  }
  s += "</div>\n";

  s += "<h2>The alerted series</h2>\n";
  if (r.minutes.empty()) {
    s += "<p class=\"empty\" id=\"series-chart\">No per-minute history of this series in the store "
         "for the episode's window: the gateway writes it each minute (give the store of the "
         "gateway that alerted with --store).</p>\n";
  } else {
    const Chart chart = SeriesChart(r);
    s += Cat("<figure id=\"series-chart\">", Svg(chart), "<figcaption class=\"legend\">");
    for (const Line& l : chart.lines) {
      s += Cat("<span><i style=\"background:", l.color, "\"></i>", Html(l.name), "</span>");
    }
    s += "<span><i style=\"background:#cf222e;opacity:.25;height:10px\"></i>the episode</span>";
    const auto peak = PeakMinute(r);
    if (peak) {
      s += Cat("<span>peak P99 ", Html(metrics::FormatInUnit(peak->second, UnitOfName(a.unit))),
               " in the minute to ", Html(ClockText(peak->first)), " UTC</span>");
    }
    s += "</figcaption></figure>\n";
  }

  s += "<h2>Ranked causes</h2>\n";
  if (d == nullptr || d->causes.empty()) {
    s += "<p class=\"empty\" id=\"causes\">No cause ranked.</p>\n";
  } else {
    s += "<table id=\"causes\"><thead><tr><th>#</th><th>Quadrant</th><th>Signal</th>"
         "<th class=\"num\">Baseline (median [IQR])</th><th class=\"num\">Peak</th>"
         "<th class=\"num\">Onset</th><th class=\"num\">Score</th><th class=\"num\">Explains</th>"
         "<th class=\"num\">Confidence</th><th>Last 10 min</th></tr></thead><tbody>\n";
    for (const DiagnosisCauseRow& c : d->causes) {
      const double onset = std::chrono::duration<double>(c.onset - d->time).count();
      s += Cat("<tr class=\"cause\" data-rank=\"", c.rank, "\" data-quadrant=\"", Html(c.quadrant),
               "\" data-kind=\"", Html(c.kind), "\"><td>", c.rank, "</td><td>", Badge(c.quadrant),
               c.kind == "cause" ? "" : Cat("<span class=\"kind\">", Html(c.kind), "</span>"),
               "</td><td class=\"key\">", Html(c.series), "</td><td class=\"num\">",
               Html(CauseValue(c.series, c.baseline_median)), " <span class=\"muted\">[",
               Html(CauseValue(c.series, c.baseline_q1)), "–",
               Html(CauseValue(c.series, c.baseline_q3)), "]</span></td><td class=\"num\"><b>",
               Html(CauseValue(c.series, c.peak)), "</b></td><td class=\"num\">",
               Html(Relative(onset)), "</td><td class=\"num\">",
               std::isfinite(c.score) ? Fixed(c.score, 1) : "–", "</td><td class=\"num\">",
               Html(Percent(c.explained)), "</td><td class=\"num\">", Html(Percent(c.confidence)),
               "</td><td>", Svg(CauseSparkline(c)), "</td></tr>\n");
      s += Cat("<tr class=\"rationale\"><td></td><td colspan=\"9\">", Html(c.rationale),
               "</td></tr>\n");
    }
    s += "</tbody></table>\n<p class=\"muted\">Sparklines: the worst value of each 5 s over the "
         "ten minutes before the diagnosis; the shaded band is the baseline's interquartile range, "
         "the dashed line its median, the dotted line the diagnosis.</p>\n";
  }

  s += "<h2>Symptoms (moved with the incident, not its cause)</h2>\n";
  if (d == nullptr || d->symptoms.empty()) {
    s += "<p class=\"empty\" id=\"symptoms\">No symptom moved beyond its baseline.</p>\n";
  } else {
    s += "<ul id=\"symptoms\">";
    for (const std::string& x : d->symptoms) s += Cat("<li><code>", Html(x), "</code></li>");
    s += "</ul>\n";
  }

  s += "<h2>What changed</h2>\n";
  const std::vector<store::ChangeRow> changes = Changes(r);
  if (changes.empty()) {
    s += "<p class=\"empty\" id=\"changes\">No model version, graph, configuration or restart "
         "changed near the onset.</p>\n";
  } else {
    s += "<ul id=\"changes\">";
    for (const store::ChangeRow& c : changes) {
      s += Cat("<li>", Html(FormatTimestampUtc(c.time)), " ", Badge(c.quadrant), " <b>",
               Html(c.subject), "</b>: ", Html(c.what), "</li>");
    }
    s += "</ul>\n";
  }

  s += "<h2>Timeline</h2>\n";
  HtmlEvents(s, timeline, "timeline", "Nothing recorded.");
  s += "<h2>Actions taken</h2>\n";
  HtmlEvents(s, Actions(timeline), "actions", kNoActions);

  if (r.diagnoses.size() > 1) {
    s += "<h2>How the diagnosis developed</h2>\n<ol id=\"diagnoses\">";
    for (const DiagnosisRow& x : r.diagnoses) {
      s += Cat("<li>", Html(FormatTimestampUtc(x.time)), " ", Badge(x.quadrant), " ",
               Html(x.summary), "</li>");
    }
    s += "</ol>\n";
  }
  s += Cat("<footer>Generated by tailguard ", TAILGUARD_VERSION_STRING, " at ",
           Html(FormatTimestampUtc(r.generated_at)), " from ", Html(r.source),
           ". Times are UTC.</footer>\n</body></html>\n");
  return s;
}

std::string RenderReportMarkdown(const IncidentReport& r) {
  const AlertRow& a = r.detail.alert;
  const DiagnosisRow* d = r.diagnoses.empty() ? nullptr : &r.diagnoses.back();
  const std::vector<Event> timeline = Timeline(r);
  std::string s = Cat("# Incident report: alert #", a.id, " · ", Md(a.rule), "\n\n",
                      MdCode(a.series), "\n\n", Md(Facts(r)), "\n\n", Md(ValueLine(a)), "\n\n");

  s += "## Finding\n\n";
  if (d == nullptr) {
    s += "No diagnosis: one is made when an alert fires or escalates.\n\n";
  } else {
    s += Cat("**", QuadrantTitle(d->quadrant), "**: ", Md(d->summary), "\n\n");
    if (!d->contention.empty()) {
      s += Cat("Contention: the cause is on ", Md(d->contention),
               ", whose load took the CPUs this route shares.\n\n");
    }
    s += Cat("Diagnosed at ", FormatTimestampUtc(d->time), " from ", d->series_considered,
             " signals in ", Fixed(d->seconds * 1e3, 1), " ms.\n\n");
  }

  s += "## The alerted series\n\n";
  if (r.minutes.empty()) {
    s += "No per-minute history of this series in the store for the episode's window.\n\n";
  } else {
    std::vector<double> p99;
    for (const store::MinuteRow& m : r.minutes) p99.push_back(m.p99);
    s += Cat("P99 per minute, ", ClockText(r.minutes.front().time).substr(0, 5), "–",
             ClockText(r.minutes.back().time).substr(0, 5), " UTC: `", TextSparkline(p99), "`\n\n");
    if (const auto peak = PeakMinute(r)) {
      s += Cat("Peak P99 ", metrics::FormatInUnit(peak->second, UnitOfName(a.unit)),
               " in the minute to ", ClockText(peak->first), " UTC.\n\n");
    }
  }

  s += "## Ranked causes\n\n";
  if (d == nullptr || d->causes.empty()) {
    s += "No cause ranked.\n\n";
  } else {
    s += "| # | Quadrant | Signal | Baseline (median [IQR]) | Peak | Onset | Score | Explains | "
         "Confidence | Last 10 min |\n|---|---|---|---:|---:|---:|---:|---:|---:|---|\n";
    for (const DiagnosisCauseRow& c : d->causes) {
      const double onset = std::chrono::duration<double>(c.onset - d->time).count();
      s += Cat("| ", c.rank, " | ", QuadrantTitle(c.quadrant),
               c.kind == "cause" ? "" : Cat(" (", Md(c.kind), ")"), " | ", MdCode(c.series), " | ",
               CauseValue(c.series, c.baseline_median), " [", CauseValue(c.series, c.baseline_q1),
               "–", CauseValue(c.series, c.baseline_q3), "] | **", CauseValue(c.series, c.peak),
               "** | ", Relative(onset), " | ", std::isfinite(c.score) ? Fixed(c.score, 1) : "–",
               " | ", Percent(c.explained), " | ", Percent(c.confidence), " | `",
               TextSparkline(Values(c.points)), "` |\n");
    }
    s += "\n";
    for (const DiagnosisCauseRow& c : d->causes) s += Cat(c.rank, ". ", Md(c.rationale), "\n");
    s += "\n";
  }

  s += "## Symptoms (moved with the incident, not its cause)\n\n";
  if (d == nullptr || d->symptoms.empty()) {
    s += "No symptom moved beyond its baseline.\n\n";
  } else {
    for (const std::string& x : d->symptoms) s += Cat("- ", MdCode(x), "\n");
    s += "\n";
  }

  s += "## What changed\n\n";
  const std::vector<store::ChangeRow> changes = Changes(r);
  if (changes.empty()) {
    s += "No model version, graph, configuration or restart changed near the onset.\n\n";
  } else {
    for (const store::ChangeRow& c : changes) {
      s += Cat("- ", FormatTimestampUtc(c.time), " (", QuadrantTitle(c.quadrant), ") **",
               Md(c.subject), "**: ", Md(c.what), "\n");
    }
    s += "\n";
  }

  auto events = [&](const std::vector<Event>& list, std::string_view none) {
    if (list.empty()) {
      s += Cat(none, "\n\n");
      return;
    }
    s += "| Time (UTC) | Event | What |\n|---|---|---|\n";
    for (const Event& e : list) {
      s += Cat("| ", FormatTimestampUtc(e.time).substr(0, 19), " | ", Md(e.kind), " | ", Md(e.text),
               " |\n");
    }
    s += "\n";
  };
  s += "## Timeline\n\n";
  events(timeline, "Nothing recorded.");
  s += "## Actions taken\n\n";
  events(Actions(timeline), kNoActions);

  if (r.diagnoses.size() > 1) {
    s += "## How the diagnosis developed\n\n";
    for (const DiagnosisRow& x : r.diagnoses) {
      s += Cat("1. ", FormatTimestampUtc(x.time), " (", QuadrantTitle(x.quadrant), ") ",
               Md(x.summary), "\n");
    }
    s += "\n";
  }
  s += Cat("---\nGenerated by tailguard ", TAILGUARD_VERSION_STRING, " at ",
           FormatTimestampUtc(r.generated_at), " from ", Md(r.source), ". Times are UTC.\n");
  return s;
}

}  // namespace tailguard::analyze
