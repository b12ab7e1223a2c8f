// Prometheus text exposition of the registry.
#include "tailguard/exposition.h"

#include <charconv>
#include <cmath>
#include <map>

namespace tailguard {
namespace {

constexpr double kDefaultBuckets[] = {0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005,
                                      0.01,   0.025,   0.05,   0.1,   0.25,   0.5,
                                      1,      2.5,     5,      10,    25,     60};

// `{a="x",b="y"` without the closing brace, so `le` can follow: the series key (which the
// registry already builds sorted and escaped, Prometheus style) without name and brace.
std::string OpenLabels(const Series& s) {
  return s.key().substr(s.name().size(), s.key().size() - s.name().size() - 1);
}

}  // namespace

std::span<const double> DefaultExpositionBuckets() { return kDefaultBuckets; }

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
  // Group by metric name, keeping AllSeries()' key order inside each.
  std::map<std::string, std::vector<std::pair<Series*, Histogram>>> by_name;
  for (Series* s : registry.AllSeries()) {
    Histogram h = s->Cumulative();
    // A series appears with its first collected value, as Prometheus clients do for labelled
    // series: a route's stages that never happen (streaming, say) add no empty histograms.
    if (!h.empty()) by_name[s->name()].emplace_back(s, std::move(h));
  }
  std::vector<std::string> le_text;
  for (double le : le_seconds) le_text.push_back(FormatSampleValue(le));
  for (const auto& [name, series] : by_name) {
    out += "# HELP " + name + " Latency histogram recorded by tailguard, in seconds.\n";
    out += "# TYPE " + name + " histogram\n";
    for (const auto& [s, h] : series) {
      const std::string labels = OpenLabels(*s);
      const std::string sep = s->labels().empty() ? "" : ",";
      // Walk buckets and boundaries together: each bucket counts under the first boundary at
      // or above its upper edge.
      uint64_t cumulative = 0;
      int bucket = 0;
      for (size_t b = 0; b < le_seconds.size(); ++b) {
        const double le_ns = le_seconds[b] * 1e9;
        for (; bucket < BucketLayout::kBucketCount &&
               static_cast<double>(BucketLayout::Highest(bucket)) <= le_ns;
             ++bucket) {
          cumulative += h.bucket_count(bucket);
        }
        out += name + "_bucket" + labels + sep + "le=\"" + le_text[b] + "\"} " +
               std::to_string(cumulative) + "\n";
      }
      out += name + "_bucket" + labels + sep + "le=\"+Inf\"} " + std::to_string(h.count()) + "\n";
      out += name + "_sum" + (s->labels().empty() ? "" : labels + "}") + " " +
             FormatSampleValue(h.sum() * 1e-9) + "\n";
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
