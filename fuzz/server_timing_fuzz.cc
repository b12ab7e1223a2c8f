// Fuzzes ParseServerTiming: arbitrary header values never crash it, every metric it returns is
// well formed (a token name, a finite non-negative duration or none, a printable description),
// and writing the metrics back as a header parses to the same metrics with nothing malformed.
// Also checks SanitizeStageName's promises on the same bytes and on every metric name.
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/protocol.h"

namespace {

using tailguard::server::ServerTimingMetric;

void CheckSanitized(std::string_view input) {
  const std::string s = tailguard::server::SanitizeStageName(input);
  if (s.size() > tailguard::server::kMaxStageNameLength) std::abort();
  for (char c : s) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_')) std::abort();
  }
  if (!s.empty() && (s.front() == '_' || s.back() == '_')) std::abort();
  if (s.find("__") != std::string::npos) std::abort();
  if (tailguard::server::SanitizeStageName(s) != s) std::abort();  // idempotent
}

bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  for (unsigned char c : s) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum &&
        std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) == std::string_view::npos) {
      return false;
    }
  }
  return true;
}

// Writes `m` back in the header syntax.
void Append(const ServerTimingMetric& m, std::string& out) {
  if (!out.empty()) out += ", ";
  out += m.name;
  if (m.has_duration()) {
    char buf[32];
    const auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), m.duration_ms);
    if (ec != std::errc()) std::abort();
    out += ";dur=";
    out.append(buf, end);
  }
  if (!m.description.empty()) {
    out += ";desc=\"";
    for (char c : m.description) {
      if (c == '"' || c == '\\') out += '\\';
      out += c;
    }
    out += '"';
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  int malformed = -1;
  const std::vector<ServerTimingMetric> metrics =
      tailguard::server::ParseServerTiming(text, &malformed);
  if (malformed < 0 || metrics.size() > tailguard::server::kMaxServerTimingMetrics) std::abort();
  std::string header;
  for (const ServerTimingMetric& m : metrics) {
    if (!IsToken(m.name)) std::abort();
    if (m.has_duration() &&
        (!std::isfinite(m.duration_ms) || m.duration_ms < 0 || std::signbit(m.duration_ms))) {
      std::abort();
    }
    for (unsigned char c : m.description) {
      if ((c < 0x20 && c != '\t') || c == 0x7f) std::abort();
    }
    // A recognised stage always has a usable label.
    if (tailguard::server::StageForServerTiming(m.name).has_value() &&
        tailguard::server::SanitizeStageName(m.name).empty()) {
      std::abort();
    }
    CheckSanitized(m.name);
    Append(m, header);
  }
  int again_malformed = -1;
  const std::vector<ServerTimingMetric> again =
      tailguard::server::ParseServerTiming(header, &again_malformed);
  if (again_malformed != 0 || again.size() != metrics.size()) std::abort();
  for (size_t i = 0; i < again.size(); ++i) {
    const ServerTimingMetric& a = metrics[i];
    const ServerTimingMetric& b = again[i];
    if (a.name != b.name || a.description != b.description) std::abort();
    if (a.has_duration() != b.has_duration()) std::abort();
    if (a.has_duration() && a.duration_ms != b.duration_ms) std::abort();
  }
  CheckSanitized(text);
  return 0;
}
