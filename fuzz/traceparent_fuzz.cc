// Fuzzes ParseTraceparent: arbitrary values never crash it; whatever it accepts has non-zero
// ids, formats to a 55-character version 00 value that parses back to the same context, and a
// version 00 input formats back to exactly itself (less surrounding whitespace).
#include <cstdint>
#include <cstdlib>
#include <string>
#include <string_view>

#include "server/protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using tailguard::server::TraceContext;
  std::string_view text(reinterpret_cast<const char*>(data), size);
  const std::optional<TraceContext> c = tailguard::server::ParseTraceparent(text);

  // HexEncode of any bytes is lowercase hex, two digits a byte.
  const std::string hex =
      tailguard::server::HexEncode(std::span(data, size < 64 ? size : size_t{64}));
  if (hex.size() != 2 * (size < 64 ? size : 64)) std::abort();
  if (hex.find_first_not_of("0123456789abcdef") != std::string::npos) std::abort();

  if (!c.has_value()) return 0;
  while (!text.empty() && (text.front() == ' ' || text.front() == '\t')) text.remove_prefix(1);
  while (!text.empty() && (text.back() == ' ' || text.back() == '\t')) text.remove_suffix(1);
  if (text.size() < 55 || text.substr(0, 2) == "ff") std::abort();
  bool trace_zero = true;
  for (uint8_t b : c->trace_id) trace_zero &= b == 0;
  bool span_zero = true;
  for (uint8_t b : c->span_id) span_zero &= b == 0;
  if (trace_zero || span_zero) std::abort();

  const std::string formatted = tailguard::server::FormatTraceparent(*c);
  if (formatted.size() != 55) std::abort();
  const std::optional<TraceContext> again = tailguard::server::ParseTraceparent(formatted);
  if (!again.has_value() || !(*again == *c)) std::abort();
  if (text.substr(0, 2) == "00" && formatted != text) std::abort();
  // Any version shares the first 55 characters' ids and flags.
  if (formatted.substr(2) != text.substr(2, 53)) std::abort();
  if (c->TraceIdHex() != formatted.substr(3, 32) || c->SpanIdHex() != formatted.substr(36, 16)) {
    std::abort();
  }
  return 0;
}
