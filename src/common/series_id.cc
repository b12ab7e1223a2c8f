#include "common/series_id.h"

#include <cinttypes>
#include <cstdint>
#include <cstdio>

namespace tailguard {
namespace {

std::string_view Base(std::string_view base) {
  while (base.ends_with('/')) base.remove_suffix(1);
  return base;
}

}  // namespace

std::string SeriesId(std::string_view key) {
  uint64_t h = 14695981039346656037ull;  // FNV-1a 64 offset basis
  for (unsigned char c : key) {
    h ^= c;
    h *= 1099511628211ull;
  }
  char buf[17];
  std::snprintf(buf, sizeof(buf), "%016" PRIx64, h);
  return buf;
}

std::string SeriesDashboardUrl(std::string_view base, std::string_view key) {
  if (base.empty()) return "";
  std::string out(Base(base));
  out += "/?view=series&id=";
  out += SeriesId(key);
  return out;
}

std::string AlertsDashboardUrl(std::string_view base) {
  if (base.empty()) return "";
  std::string out(Base(base));
  out += "/?view=alerts";
  return out;
}

}  // namespace tailguard
