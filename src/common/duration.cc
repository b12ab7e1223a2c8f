// Durations and latency units as written by people.
#include "common/duration.h"

#include <charconv>
#include <cmath>
#include <utility>

namespace tailguard {

std::optional<Duration> ParseDurationText(std::string_view text) {
  if (text == "0") return Duration::zero();
  if (text.empty()) return std::nullopt;
  static constexpr std::pair<std::string_view, double> kUnits[] = {
      {"ns", 1},   {"us", 1e3},   {"ms", 1e6},    {"s", 1e9},
      {"m", 60e9}, {"h", 3600e9}, {"d", 86400e9}, {"w", 604800e9},
  };
  double total_ns = 0;
  size_t pos = 0;
  while (pos < text.size()) {
    size_t start = pos;
    while (pos < text.size() && ((text[pos] >= '0' && text[pos] <= '9') || text[pos] == '.')) {
      ++pos;
    }
    if (pos == start) return std::nullopt;
    double n = 0;
    const std::string_view digits = text.substr(start, pos - start);
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), n);
    if (ec != std::errc() || end != digits.data() + digits.size() || !std::isfinite(n)) {
      return std::nullopt;
    }
    size_t unit_start = pos;
    while (pos < text.size() && text[pos] >= 'a' && text[pos] <= 'z') ++pos;
    std::string_view unit = text.substr(unit_start, pos - unit_start);
    bool found = false;
    for (const auto& [name, ns] : kUnits) {
      if (unit == name) {
        total_ns += n * ns;
        found = true;
      }
    }
    if (!found) return std::nullopt;
  }
  if (!(total_ns < 100 * 365 * 86400e9)) return std::nullopt;
  return Duration(static_cast<int64_t>(std::llround(total_ns)));
}

std::optional<double> LatencyUnitSeconds(std::string_view unit) {
  if (unit == "ns") return 1e-9;
  if (unit == "us") return 1e-6;
  if (unit == "ms") return 1e-3;
  if (unit == "s") return 1.0;
  return std::nullopt;
}

}  // namespace tailguard
