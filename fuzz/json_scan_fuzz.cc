// Fuzzes ScanJson (server/json_scan.h) against nlohmann's SAX parser, event by event: both
// accept the same texts, and on an accepted text report the same values in the same order
// (strings and keys byte for byte, integers by value and kind, floats as floats). Nesting is
// capped at 200 levels in both, to keep nlohmann (which keeps a stack too) comparable.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>

#include "server/json_scan.h"

namespace {

constexpr int kMaxDepth = 200;

struct Log {
  std::string events;
  int depth = 0;
  bool too_deep = false;
  bool Open(char c) {
    events += c;
    if (++depth > kMaxDepth) too_deep = true;
    return !too_deep;
  }
  bool Close(char c) {
    events += c;
    --depth;
    return true;
  }
  void Str(char tag, std::string_view s) {
    events += tag;
    events += std::to_string(s.size());
    events += ':';
    events.append(s);
  }
};

struct ScanLog : Log {
  bool null() { return events += 'n', true; }
  bool boolean(bool b) { return events += b ? 'T' : 'F', true; }
  bool number_integer(int64_t v) { return events += "i" + std::to_string(v) + ";", true; }
  bool number_unsigned(uint64_t v) { return events += "u" + std::to_string(v) + ";", true; }
  bool number_float() { return events += 'd', true; }
  bool string(std::string_view s) { return Str('s', s), true; }
  bool key(std::string_view s) { return Str('k', s), true; }
  bool start_object() { return Open('{'); }
  bool end_object() { return Close('}'); }
  bool start_array() { return Open('['); }
  bool end_array() { return Close(']'); }
};

struct NlohmannLog : Log, nlohmann::json_sax<nlohmann::json> {
  bool null() override { return events += 'n', true; }
  bool boolean(bool b) override { return events += b ? 'T' : 'F', true; }
  bool number_integer(number_integer_t v) override {
    // nlohmann reports "-0" and other negatives here, non-negative integers as unsigned.
    return events += "i" + std::to_string(v) + ";", true;
  }
  bool number_unsigned(number_unsigned_t v) override {
    return events += "u" + std::to_string(v) + ";", true;
  }
  bool number_float(number_float_t, const string_t&) override { return events += 'd', true; }
  bool string(string_t& s) override { return Str('s', s), true; }
  bool binary(binary_t&) override { std::abort(); }
  bool key(string_t& s) override { return Str('k', s), true; }
  bool start_object(size_t) override { return Open('{'); }
  bool end_object() override { return Close('}'); }
  bool start_array(size_t) override { return Open('['); }
  bool end_array() override { return Close(']'); }
  bool parse_error(size_t, const std::string&, const nlohmann::detail::exception&) override {
    return false;
  }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  // nlohmann reads a NUL between tokens as the end of the input; the inspectors refuse NUL
  // before scanning (SchemaSax::Run), so inputs with one are out of this comparison.
  if (text.find('\0') != std::string_view::npos) return 0;
  ScanLog scan;
  tailguard::server::JsonScanError error;
  const bool scan_ok = tailguard::server::ScanJson(text, scan, &error);
  if (!scan_ok && !scan.too_deep && (error.what == nullptr || error.offset == 0)) std::abort();
  NlohmannLog ref;
  bool ref_ok = false;
  try {
    ref_ok = nlohmann::json::sax_parse(text.begin(), text.end(), &ref);
  } catch (const std::exception&) {
    ref_ok = false;
  }
  if (scan.too_deep || ref.too_deep) return 0;
  if (scan_ok != ref_ok) std::abort();
  if (scan_ok && scan.events != ref.events) std::abort();
  return 0;
}
