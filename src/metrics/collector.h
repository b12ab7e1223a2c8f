// Collectors: how each subsystem puts its own metrics on a /metrics page. A Collector writes its
// families through a MetricsWriter; the page is the registry's histograms followed by every
// registered collector in order, so the page's owner (the gateway's API) knows no subsystem's
// counters, and a new subsystem (a mitigation, a collector of host signals) adds one.
#ifndef TAILGUARD_METRICS_COLLECTOR_H_
#define TAILGUARD_METRICS_COLLECTOR_H_

#include <string>
#include <string_view>

#include "tailguard/registry.h"

namespace tailguard::metrics {

// Writes metric families in the Prometheus text format 0.0.4, or OpenMetrics 1.0 text.
// Not thread-safe: one page at a time.
class MetricsWriter {
 public:
  MetricsWriter(std::string& out, bool openmetrics) : out_(out), om_(openmetrics) {}

  // Starts a counter family. Counters are named without "_total"; samples get it.
  void Counter(std::string_view name, std::string_view help);
  // Starts a gauge family.
  void Gauge(std::string_view name, std::string_view help);
  // A sample of the family begun last. `labels` are written in the order given.
  void Sample(const Labels& labels, double value);

  // For writers of a whole block of their own (process metrics).
  std::string& out() { return out_; }
  bool openmetrics() const { return om_; }

 private:
  void Header(const std::string& family, std::string_view type, std::string_view help);

  std::string& out_;
  const bool om_;
  std::string sample_;
};

// A subsystem's metrics. Collect() is called from the thread that renders /metrics, while the
// subsystem works: it reads atomics and thread-safe accessors only.
class Collector {
 public:
  virtual ~Collector() = default;
  virtual void Collect(MetricsWriter& out) const = 0;
};

}  // namespace tailguard::metrics

#endif  // TAILGUARD_METRICS_COLLECTOR_H_
