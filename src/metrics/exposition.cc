// Prometheus text exposition of the registry.
#include "tailguard/exposition.h"

#include <charconv>
#include <cmath>
#include <map>
#include <optional>

#include "common/strings.h"

namespace tailguard {
namespace {

constexpr double kDefaultBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                      1,      2.5,     5,      10,    25,     60};

// Value histograms (bytes, counts): powers of 4 from 1 to 4^15 (about 10^9), 16 boundaries
// like the latencies' 18; a factor of 4 is as coarse as a scrape needs, tailguard's own
// quantiles keep 1 %.
constexpr double kValueBuckets[] = {1,        4,        16,        64,        256,     1024,
                                    4096,     16384,    65536,     262144,    1048576, 4194304,
                                    16777216, 67108864, 268435456, 1073741824};

// `{a="x",b="y"` without the closing brace, so `le` can follow: the series key (which the
// registry already builds sorted and escaped, Prometheus style) without name and brace.
std::string OpenLabels(const Series& s) {
  return s.key().substr(s.name().size(), s.key().size() - s.name().size() - 1);
}

}  // namespace

std::span<const double> DefaultExpositionBuckets() { return kDefaultBuckets; }
std::span<const double> DefaultValueBuckets() { return kValueBuckets; }

std::string FormatSampleValue(double v) {
  if (std::isnan(v)) return "NaN";
  if (std::isinf(v)) return v > 0 ? "+Inf" : "-Inf";
  char buf[32];
  // Plain decimals where they are short ("0.00025", "10", "60"), as Go's 'g' format writes
  // them for Prometheus; otherwise the shortest form that reads back the same ("1e-05").
  const bool plain = v != 0 && std::fabs(v) >= 1e-4 && std::fabs(v) < 1e15;
  const auto r = plain ? std::to_chars(buf, buf + sizeof(buf), v, std::chars_format::fixed)
                       : std::to_chars(buf, buf + sizeof(buf), v);
  return std::string(buf, r.ptr);
}

void AppendPrometheusText(const Registry& registry, std::span<const double> le_seconds,
                          std::string& out) {
  // Group by metric name, keeping AllSeries()' key order inside each. A name has one kind and
  // unit (the registry refuses a second).
  // A gauge shows its level, and has no histogram here.
  std::map<std::string, std::vector<std::pair<Series*, std::optional<Histogram>>>> by_name;
  for (Series* s : registry.AllSeries()) {
    if (s->kind() == SeriesKind::kGauge) {
      by_name[s->name()].emplace_back(s, std::nullopt);
      continue;
    }
    Histogram h = s->Cumulative();
    // A series appears with its first collected value, as Prometheus clients do for labelled
    // series: a route's stages that never happen (streaming, say) add no empty histograms.
    if (!h.empty()) by_name[s->name()].emplace_back(s, std::move(h));
  }
  std::vector<std::string> le_seconds_text, le_value_text;
  for (double le : le_seconds) le_seconds_text.push_back(FormatSampleValue(le));
  for (double le : kValueBuckets) le_value_text.push_back(FormatSampleValue(le));
  for (const auto& [name, series] : by_name) {
    const Series& first = *series.front().first;
    const bool seconds = first.unit() == Unit::kNanoseconds;
    const double scale = UnitScale(first.unit());
    // ", in seconds" or ", in bytes"; counts need no unit.
    const std::string unit =
        first.unit() == Unit::kCount ? std::string() : Cat(", in ", UnitName(first.unit()));
    if (first.kind() == SeriesKind::kGauge) {
      out += Cat("# HELP ", name, " Gauge set by its owner", unit, ".\n");
      out += "# TYPE " + name + " gauge\n";
      for (const auto& entry : series) {
        const Series* s = entry.first;
        out += (s->labels().empty() ? name : s->key()) + " " +
               FormatSampleValue(static_cast<double>(s->level()) * scale) + "\n";
      }
      continue;
    }
    out += Cat("# HELP ", name, seconds ? " Latency histogram" : " Histogram",
               " recorded by tailguard", unit, ".\n");
    out += "# TYPE " + name + " histogram\n";
    const std::span<const double> bounds =
        seconds ? le_seconds : std::span<const double>(kValueBuckets);
    const std::vector<std::string>& le_text = seconds ? le_seconds_text : le_value_text;
    for (const auto& [s, cumulative_histogram] : series) {
      const Histogram& h = *cumulative_histogram;
      const std::string labels = OpenLabels(*s);
      const std::string sep = s->labels().empty() ? "" : ",";
      // Walk buckets and boundaries together: each bucket counts under the first boundary at
      // or above its upper edge.
      uint64_t cumulative = 0;
      int bucket = 0;
      for (size_t b = 0; b < bounds.size(); ++b) {
        const double le = bounds[b] / scale;
        for (; bucket < BucketLayout::kBucketCount &&
               static_cast<double>(BucketLayout::Highest(bucket)) <= le;
             ++bucket) {
          cumulative += h.bucket_count(bucket);
        }
        out += name + "_bucket" + labels + sep + "le=\"" + le_text[b] + "\"} " +
               std::to_string(cumulative) + "\n";
      }
      out += name + "_bucket" + labels + sep + "le=\"+Inf\"} " + std::to_string(h.count()) + "\n";
      out += name + "_sum" + (s->labels().empty() ? "" : labels + "}") + " " +
             FormatSampleValue(h.sum() * scale) + "\n";
      out += name + "_count" + (s->labels().empty() ? "" : labels + "}") + " " +
             std::to_string(h.count()) + "\n";
    }
  }
}

std::string PrometheusText(const Registry& registry) {
  std::string out;
  AppendPrometheusText(registry, DefaultExpositionBuckets(), out);
  return out;
}

}  // namespace tailguard
