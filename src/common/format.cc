// Human-readable numbers.
#include "common/format.h"

#include <cmath>
#include <cstdio>
#include <initializer_list>

namespace tailguard {

namespace {

// `v` scaled down by `step` while it is at least `step`, with three significant digits and the
// unit of its step.
std::string Scaled(double v, double step, std::initializer_list<const char*> units) {
  if (std::isnan(v)) return "NaN";
  auto u = units.begin();
  while (std::fabs(v) >= step && u + 1 != units.end()) {
    v /= step;
    ++u;
  }
  char buf[32];
  const bool whole = u == units.begin() && v == std::floor(v);
  const int decimals = whole || std::fabs(v) >= 100 ? 0 : (std::fabs(v) >= 10 ? 1 : 2);
  std::snprintf(buf, sizeof(buf), "%.*f%s", decimals, v, *u);
  return buf;
}

}  // namespace

std::string FormatBytes(double bytes) {
  return Scaled(bytes, 1024, {"B", "KiB", "MiB", "GiB", "TiB"});
}

std::string FormatCount(double n) { return Scaled(n, 1000, {"", "k", "M", "G", "T"}); }

std::string FormatDuration(double ns) {
  struct Unit {
    double scale;
    const char* name;
  };
  static constexpr Unit kUnits[] = {{1, "ns"}, {1e3, "us"}, {1e6, "ms"}, {1e9, "s"}};
  char buf[32];
  if (ns >= 60e9) {
    std::snprintf(buf, sizeof(buf), "%.1fmin", ns / 60e9);
    return buf;
  }
  const Unit* u = &kUnits[0];
  for (const Unit& candidate : kUnits) {
    if (std::fabs(ns) >= candidate.scale) u = &candidate;
  }
  const double v = ns / u->scale;
  const int decimals = (u->scale == 1 || v >= 100) ? 0 : (v >= 10 ? 1 : 2);
  std::snprintf(buf, sizeof(buf), "%.*f%s", decimals, v, u->name);
  return buf;
}

std::string SizeText(uint64_t bytes) {
  constexpr uint64_t kKiB = 1024, kMiB = kKiB * 1024, kGiB = kMiB * 1024;
  char buf[48];
  if (bytes >= kGiB && bytes % kGiB == 0) {
    std::snprintf(buf, sizeof(buf), "%lluGiB", static_cast<unsigned long long>(bytes / kGiB));
  } else if (bytes >= kMiB && bytes % kMiB == 0) {
    std::snprintf(buf, sizeof(buf), "%lluMiB", static_cast<unsigned long long>(bytes / kMiB));
  } else if (bytes >= kKiB && bytes % kKiB == 0) {
    std::snprintf(buf, sizeof(buf), "%lluKiB", static_cast<unsigned long long>(bytes / kKiB));
  } else {
    std::snprintf(buf, sizeof(buf), "%llu %s", static_cast<unsigned long long>(bytes),
                  bytes == 1 ? "byte" : "bytes");
  }
  return buf;
}

}  // namespace tailguard
