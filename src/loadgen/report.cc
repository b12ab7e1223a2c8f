// Report formatting: a table for people, JSON for machines.
#include "loadgen/report.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <nlohmann/json.hpp>

#include "common/format.h"
#include "common/strings.h"

namespace tailguard::loadgen {
namespace {

std::string Fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, format, v);
  return buf;
}

std::string Rate(double r) { return Fmt(r >= 100 ? "%.0f/s" : "%.2f/s", r); }

std::string Ns(uint64_t ns) { return FormatDuration(static_cast<double>(ns)); }

double Seconds(uint64_t ns) { return static_cast<double>(ns) * 1e-9; }

// "2xx 998, 5xx 2" and the like; "none" when there is nothing to list.
std::string ErrorList(const Counts& c) {
  std::string out;
  const auto add = [&out](const std::string& what, uint64_t n) {
    if (n == 0) return;
    out += Cat(out.empty() ? "" : ", ", what, ' ', n);
  };
  add("status 1xx", c.status_class[1]);
  add("status 4xx", c.status_class[4]);
  add("status 5xx", c.status_class[5]);
  add("other status", c.status_class[0]);
  add("connect errors", c.connect_errors);
  add("timeouts", c.timeouts);
  add("I/O errors", c.io_errors);
  return out.empty() ? "none" : out;
}

nlohmann::ordered_json SummaryJson(const LatencySummary& s) {
  return {
      {"count", s.count},         {"min", Seconds(s.min_ns)},    {"p50", Seconds(s.p50_ns)},
      {"p75", Seconds(s.p75_ns)}, {"p90", Seconds(s.p90_ns)},    {"p95", Seconds(s.p95_ns)},
      {"p99", Seconds(s.p99_ns)}, {"p99_9", Seconds(s.p999_ns)}, {"p99_99", Seconds(s.p9999_ns)},
      {"max", Seconds(s.max_ns)}, {"mean", s.mean_ns * 1e-9}};
}

nlohmann::ordered_json CountsJson(const Counts& c) {
  return {{"scheduled", c.scheduled},
          {"sent", c.sent},
          {"completed", c.completed},
          {"dropped", c.dropped},
          {"responses",
           {{"1xx", c.status_class[1]},
            {"2xx", c.status_class[2]},
            {"3xx", c.status_class[3]},
            {"4xx", c.status_class[4]},
            {"5xx", c.status_class[5]},
            {"other", c.status_class[0]}}},
          {"errors",
           {{"total", c.errors()},
            {"connect", c.connect_errors},
            {"timeout", c.timeouts},
            {"io", c.io_errors}}}};
}

}  // namespace

uint64_t InterpolatedQuantile(const Histogram& h, double q) {
  if (h.empty()) return 0;
  q = std::clamp(q, 0.0, 1.0);
  if (q == 0.0) return h.min();
  if (q == 1.0) return h.max();
  const double rank = q * static_cast<double>(h.count());  // continuous, in (0, count)
  const auto target = static_cast<uint64_t>(std::ceil(rank));
  uint64_t below = 0;
  uint64_t out = h.max();
  bool found = false;
  h.ForEachBucket([&](int index, uint64_t count) {
    if (found) return;
    if (below + count >= target) {
      // The fraction of this bucket's values at or below the rank, in (0, 1].
      const double f =
          std::clamp((rank - static_cast<double>(below)) / static_cast<double>(count), 0.0, 1.0);
      // The span the bucket's values can have: the bucket, narrowed to [min, max] (the first
      // and last buckets are often only partly used).
      const uint64_t lo = std::max(BucketLayout::Lowest(index), h.min());
      const uint64_t hi = std::min(BucketLayout::Highest(index), h.max());
      const double v = static_cast<double>(lo) + f * static_cast<double>(hi - lo);
      out = std::clamp(static_cast<uint64_t>(std::llround(v)), lo, hi);
      found = true;
    }
    below += count;
  });
  return out;
}

LatencySummary LatencySummary::Of(const Histogram& h) {
  LatencySummary s;
  s.count = h.count();
  if (h.empty()) return s;
  s.min_ns = h.min();
  s.p50_ns = InterpolatedQuantile(h, 0.50);
  s.p75_ns = InterpolatedQuantile(h, 0.75);
  s.p90_ns = InterpolatedQuantile(h, 0.90);
  s.p95_ns = InterpolatedQuantile(h, 0.95);
  s.p99_ns = InterpolatedQuantile(h, 0.99);
  s.p999_ns = InterpolatedQuantile(h, 0.999);
  s.p9999_ns = InterpolatedQuantile(h, 0.9999);
  s.max_ns = h.max();
  s.mean_ns = h.mean();
  return s;
}

std::string FormatReportText(const Report& r) {
  const Counts& c = r.counts;
  const double planned_s = std::chrono::duration<double>(r.planned_duration).count();
  const double elapsed_s = std::chrono::duration<double>(r.elapsed).count();
  std::string out;
  out += Cat("target      ", r.target, " (", r.connections, " connections, timeout ",
             FormatDuration(static_cast<double>(r.timeout.count())), ")\n");
  out += Cat("duration    ", Fmt("%.2fs", planned_s), " planned, ", Fmt("%.2fs", elapsed_s),
             " elapsed", r.stopped ? " (stopped early)" : "", "\n");
  out += Cat("requests    ", c.scheduled, " scheduled, ", c.sent, " sent, ", c.completed,
             " completed, ", c.dropped, " dropped (queue full)");
  if (r.abandoned > 0 || r.stopped) out += Cat(", ", r.abandoned, " abandoned");
  out += "\n";
  out += Cat("rate        ", Rate(r.intended_rate), " intended, ", Rate(r.achieved_rate),
             " achieved, ", Rate(r.throughput), " completed\n");
  out += Cat("responses   2xx ", c.status_class[2], ", 3xx ", c.status_class[3], ", 4xx ",
             c.status_class[4], ", 5xx ", c.status_class[5], "\n");
  out += Cat("errors      ", ErrorList(c), "\n");
  const LatencySummary& l = r.latency_summary;
  out += Cat("\nlatency from the intended send time (", l.count,
             " responses and timeouts; coordinated omission corrected):\n");
  const std::pair<const char*, uint64_t> rows[] = {
      {"p50", l.p50_ns}, {"p75", l.p75_ns},    {"p90", l.p90_ns},      {"p95", l.p95_ns},
      {"p99", l.p99_ns}, {"p99.9", l.p999_ns}, {"p99.99", l.p9999_ns}, {"max", l.max_ns}};
  for (const auto& [name, ns] : rows) {
    char line[64];
    std::snprintf(line, sizeof line, "  %-8s %10s\n", name, Ns(ns).c_str());
    out += line;
  }
  char mean[64];
  std::snprintf(mean, sizeof mean, "  %-8s %10s\n", "mean", FormatDuration(l.mean_ns).c_str());
  out += mean;
  const LatencySummary& s = r.send_lag_summary;
  out += Cat("\nsend lag (actual minus intended send time): p50 ", Ns(s.p50_ns), ", p99 ",
             Ns(s.p99_ns), ", max ", Ns(s.max_ns), "\n");
  if (r.phases.size() > 1) {
    out += "\nphases:\n";
    char head[200];
    std::snprintf(head, sizeof head, "  %-16s %-32s %8s %10s %8s %7s %9s %9s %9s\n", "name",
                  "pattern", "duration", "achieved", "sent", "errors", "p50", "p99", "max");
    out += head;
    for (const PhaseReport& p : r.phases) {
      char line[400];
      std::snprintf(line, sizeof line, "  %-16s %-32s %8s %10s %8llu %7llu %9s %9s %9s\n",
                    p.name.substr(0, 16).c_str(), p.pattern.substr(0, 32).c_str(),
                    Fmt("%.1fs", std::chrono::duration<double>(p.duration).count()).c_str(),
                    Rate(p.achieved_rate).c_str(), static_cast<unsigned long long>(p.counts.sent),
                    static_cast<unsigned long long>(p.counts.errors() + p.counts.dropped),
                    Ns(p.latency.p50_ns).c_str(), Ns(p.latency.p99_ns).c_str(),
                    Ns(p.latency.max_ns).c_str());
      out += line;
    }
  }
  if (c.dropped > 0) {
    out += Cat("\nWARNING: ", c.dropped,
               " requests were dropped because every connection was busy and the queue was full;"
               " the latencies above do not include them. Raise --connections or --max-queue, or "
               "lower the rate.\n");
  }
  return out;
}

std::string FormatReportJson(const Report& r) {
  nlohmann::ordered_json phases = nlohmann::ordered_json::array();
  for (const PhaseReport& p : r.phases) {
    phases.push_back({{"name", p.name},
                      {"pattern", p.pattern},
                      {"duration_seconds", std::chrono::duration<double>(p.duration).count()},
                      {"intended_rate", p.intended_rate},
                      {"achieved_rate", p.achieved_rate},
                      {"requests", CountsJson(p.counts)},
                      {"latency_seconds", SummaryJson(p.latency)}});
  }
  nlohmann::ordered_json j = {
      {"target", r.target},
      {"connections", r.connections},
      {"timeout_seconds", std::chrono::duration<double>(r.timeout).count()},
      {"planned_duration_seconds", std::chrono::duration<double>(r.planned_duration).count()},
      {"elapsed_seconds", std::chrono::duration<double>(r.elapsed).count()},
      {"stopped", r.stopped},
      {"expected_requests", r.expected_requests},
      {"intended_rate", r.intended_rate},
      {"achieved_rate", r.achieved_rate},
      {"throughput", r.throughput},
      {"requests", CountsJson(r.counts)},
      {"abandoned", r.abandoned},
      {"latency_seconds", SummaryJson(r.latency_summary)},
      {"send_lag_seconds", SummaryJson(r.send_lag_summary)},
      {"phases", std::move(phases)}};
  return j.dump(2, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace tailguard::loadgen
