#include "diagnose/quadrant.h"

#include <algorithm>
#include <cctype>
#include <initializer_list>
#include <string>

namespace tailguard::diagnose {

std::string_view QuadrantName(Quadrant q) {
  switch (q) {
    case Quadrant::kHardware:
      return "hardware";
    case Quadrant::kTraffic:
      return "traffic";
    case Quadrant::kDependency:
      return "dependency";
    case Quadrant::kModel:
      return "model";
    case Quadrant::kUnknown:
      break;
  }
  return "unknown";
}

namespace {

// The '/' that ends the entity of "<entity>/<metric>", if any: a metric family with labels
// (name{route="/v2/..."}) has none, whatever its label values hold.
size_t EntityEnd(std::string_view series) {
  const size_t slash = series.find('/');
  const size_t brace = series.find('{');
  return brace < slash ? std::string_view::npos : slash;
}

bool HasAny(const std::string& s, std::initializer_list<std::string_view> words) {
  return std::any_of(words.begin(), words.end(),
                     [&](std::string_view w) { return s.find(w) != std::string::npos; });
}

SignalClass Classify(const std::string& m) {
  if (HasAny(m, {"layer", "operator", "op=", "batch", "queue", "model_version", "graph"})) {
    return {Quadrant::kModel, SignalKind::kCause};
  }
  if (HasAny(m, {"cpu", "mem", "rss", "throttl", "pressure", "psi", "gpu", "oom", "restart",
                 "threads", "fds", "node_"})) {
    return {Quadrant::kHardware, SignalKind::kCause};
  }
  if (HasAny(m, {"rps", "qps", "load", "workload", "request_rate", "input_size", "size_bytes",
                 "burst", "net_rx", "net_tx"})) {
    return {Quadrant::kTraffic, SignalKind::kCause};
  }
  if (HasAny(m, {"stage", "redis", "feature", "upstream", "dependency", "timeout"})) {
    return {Quadrant::kDependency, SignalKind::kCause};
  }
  if (HasAny(m, {"latency", "duration", "p50", "p90", "p95", "p99", "success", "error"})) {
    return {Quadrant::kDependency, SignalKind::kSymptom};
  }
  return {Quadrant::kUnknown, SignalKind::kCause};
}

}  // namespace

std::string_view EntityOf(std::string_view series) {
  const size_t slash = EntityEnd(series);
  return slash == std::string_view::npos ? series : series.substr(0, slash);
}

SignalClass ClassifySignal(std::string_view series) {
  const size_t slash = EntityEnd(series);
  std::string m(slash == std::string_view::npos ? series : series.substr(slash + 1));
  std::transform(m.begin(), m.end(), m.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  SignalClass c = Classify(m);
  c.higher_is_worse = !HasAny(m, {"success", "hit", "free", "available"});
  return c;
}

const char* UnitNameOf(std::string_view series) {
  const std::string_view metric = series.substr(0, series.find('{'));
  if (metric.ends_with("_seconds")) return "seconds";
  if (metric.ends_with("_bytes")) return "bytes";
  return "count";
}

}  // namespace tailguard::diagnose
