#include "metrics/series_key.h"

#include <algorithm>
#include <vector>

namespace tailguard::metrics {

void AppendLabelValue(std::string& out, std::string_view value) {
  for (char c : value) {
    if (c == '\\' || c == '"') {
      out.push_back('\\');
      out.push_back(c);
    } else if (c == '\n') {
      out += "\\n";
    } else {
      out.push_back(c);
    }
  }
}

std::string FormatLabelSet(LabelPairs labels) {
  std::string out = "{";
  for (size_t i = 0; i < labels.size(); ++i) {
    if (i > 0) out.push_back(',');
    out += labels[i].first;
    out += "=\"";
    AppendLabelValue(out, labels[i].second);
    out.push_back('"');
  }
  out.push_back('}');
  return out;
}

std::string SeriesKey(std::string_view metric, LabelPairs labels) {
  std::string out(metric);
  if (std::is_sorted(labels.begin(), labels.end())) {
    out += FormatLabelSet(labels);
    return out;
  }
  std::vector<std::pair<std::string, std::string>> sorted(labels.begin(), labels.end());
  std::sort(sorted.begin(), sorted.end());
  out += FormatLabelSet(sorted);
  return out;
}

}  // namespace tailguard::metrics
