// The metrics writer of collectors.
#include "metrics/collector.h"

#include "common/strings.h"
#include "metrics/series_key.h"
#include "tailguard/exposition.h"

namespace tailguard::metrics {

void MetricsWriter::Counter(std::string_view name, std::string_view help) {
  Header(om_ ? std::string(name) : Cat(name, "_total"), "counter", help);
  sample_ = Cat(name, "_total");
}

void MetricsWriter::Gauge(std::string_view name, std::string_view help) {
  Header(std::string(name), "gauge", help);
  sample_ = std::string(name);
}

void MetricsWriter::Sample(const Labels& labels, double value) {
  out_ += sample_;
  if (!labels.empty()) out_ += FormatLabelSet(labels);
  out_ += ' ';
  out_ += FormatSampleValue(value);
  out_ += '\n';
}

void MetricsWriter::Header(const std::string& family, std::string_view type,
                           std::string_view help) {
  out_ += Cat("# HELP ", family, " ", help, "\n# TYPE ", family, " ", type, "\n");
}

}  // namespace tailguard::metrics
