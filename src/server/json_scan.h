// A validating, streaming JSON scanner for the data path: the request-body inspectors
// (server/protocol.cc) walk a KServe or OpenAI body with it on the worker that handles the
// request, so it has to cost little on bodies of megabytes.
//
// The scanner reads RFC 8259 JSON in one pass, without recursion and without building anything:
// it calls a handler for each value, and hands over strings as views into the input when they
// have no escapes (the usual case) or into one reused buffer when they do. It accepts exactly
// what nlohmann::json::parse() accepts (a leading UTF-8 byte order mark included): strict UTF-8,
// no control characters in strings, escaped surrogates only in pairs, numbers as the grammar
// says, and none that overflows a double. Integers come as int64 (negative) or uint64; an integer
// too large for either is a float, as nlohmann has it. Floats are checked, never converted,
// unless their exponent is near the range's end.
//
// Measured by bench/body_bench.cc (FIGURE openai_inspect_mb_per_s and the speed-up over
// nlohmann's SAX parser on the same body, in the same run).
#ifndef TAILGUARD_SERVER_JSON_SCAN_H_
#define TAILGUARD_SERVER_JSON_SCAN_H_

#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

namespace tailguard::server {

// Where and why a scan stopped on malformed input. `offset` is the byte (1-based) where the
// problem was seen; the empty input's is 1.
struct JsonScanError {
  size_t offset = 0;
  const char* what = nullptr;  // a string literal, e.g. "expected a value"
};

// Scans `text`, calling on `h`:
//   bool null(); bool boolean(bool); bool number_integer(int64_t) (negative, and "-0");
//   bool number_unsigned(uint64_t); bool number_float(); bool string(std::string_view);
//   bool start_object(); bool key(std::string_view); bool end_object();
//   bool start_array(); bool end_array();
// A handler returning false stops the scan (the handler keeps its own reason). Returns true when
// the whole text was one JSON value and every call returned true; false otherwise, with `error`
// set when the text itself was malformed (error->what is null when a handler stopped it).
// Views passed to string() and key() are valid only during the call.
template <class Handler>
bool ScanJson(std::string_view text, Handler& h, JsonScanError* error);

// ---------------------------------------------------------------------------------------------
// Implementation.

namespace json_scan_internal {

inline bool IsSpace(unsigned char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; }

inline int HexDigit(unsigned char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

inline void AppendUtf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

// The length of the valid UTF-8 sequence at s[i] (RFC 3629: no overlong forms, no surrogates,
// nothing above U+10FFFF), or 0.
inline size_t Utf8Sequence(std::string_view s, size_t i) {
  const auto at = [&](size_t k) -> unsigned { return static_cast<unsigned char>(s[i + k]); };
  const size_t left = s.size() - i;
  const unsigned c = at(0);
  auto cont = [&](size_t k) { return k < left && (at(k) & 0xC0) == 0x80; };
  if (c >= 0xC2 && c <= 0xDF) return cont(1) ? 2 : 0;
  if (c >= 0xE0 && c <= 0xEF) {
    if (left < 3 || !cont(1) || !cont(2)) return 0;
    if (c == 0xE0 && at(1) < 0xA0) return 0;   // overlong
    if (c == 0xED && at(1) > 0x9F) return 0;   // a surrogate
    return 3;
  }
  if (c >= 0xF0 && c <= 0xF4) {
    if (left < 4 || !cont(1) || !cont(2) || !cont(3)) return 0;
    if (c == 0xF0 && at(1) < 0x90) return 0;  // overlong
    if (c == 0xF4 && at(1) > 0x8F) return 0;  // above U+10FFFF
    return 4;
  }
  return 0;
}

class Scanner {
 public:
  explicit Scanner(std::string_view text) : s_(text) {}

  bool Fail(size_t at, const char* what, JsonScanError* error) {
    if (error != nullptr) *error = {at + 1, what};
    return false;
  }

  // Reads the string whose opening quote is at pos_; leaves pos_ after the closing quote.
  // `out` is the string's text (a view into the input, or into scratch_).
  bool String(std::string_view& out, JsonScanError* error) {
    size_t i = pos_ + 1;
    const size_t start = i;
    const size_t n = s_.size();
    // The fast path: printable ASCII up to the closing quote, eight bytes at a time while none
    // of them is a quote, a backslash, a control character or above 0x7F.
    for (;;) {
      while (i + 8 <= n && PlainWord(i)) i += 8;
      while (i < n) {
        const unsigned char c = static_cast<unsigned char>(s_[i]);
        if (c == '"' || c == '\\' || c < 0x20 || c >= 0x80) break;
        ++i;
      }
      if (i >= n) return Fail(i, "unterminated string", error);
      const unsigned char c = static_cast<unsigned char>(s_[i]);
      if (c == '"') {
        out = s_.substr(start, i - start);
        pos_ = i + 1;
        return true;
      }
      if (c >= 0x80) {
        const size_t len = Utf8Sequence(s_, i);
        if (len == 0) return Fail(i, "invalid UTF-8 in a string", error);
        i += len;
        continue;
      }
      if (c < 0x20) return Fail(i, "control character in a string (escape it)", error);
      break;  // a backslash: the slow path from here
    }
    scratch_.assign(s_.data() + start, i - start);
    while (i < n) {
      const unsigned char c = static_cast<unsigned char>(s_[i]);
      if (c == '"') {
        out = scratch_;
        pos_ = i + 1;
        return true;
      }
      if (c < 0x20) return Fail(i, "control character in a string (escape it)", error);
      if (c >= 0x80) {
        const size_t len = Utf8Sequence(s_, i);
        if (len == 0) return Fail(i, "invalid UTF-8 in a string", error);
        scratch_.append(s_.data() + i, len);
        i += len;
        continue;
      }
      if (c != '\\') {
        scratch_.push_back(static_cast<char>(c));
        ++i;
        continue;
      }
      if (i + 1 >= n) return Fail(i, "unterminated string", error);
      const char e = s_[i + 1];
      i += 2;
      switch (e) {
        case '"':
        case '\\':
        case '/':
          scratch_.push_back(e);
          break;
        case 'b':
          scratch_.push_back('\b');
          break;
        case 'f':
          scratch_.push_back('\f');
          break;
        case 'n':
          scratch_.push_back('\n');
          break;
        case 'r':
          scratch_.push_back('\r');
          break;
        case 't':
          scratch_.push_back('\t');
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!Hex4(i, cp)) return Fail(i, "bad \\u escape", error);
          i += 4;
          if (cp >= 0xDC00 && cp <= 0xDFFF) return Fail(i, "lone low surrogate escape", error);
          if (cp >= 0xD800 && cp <= 0xDBFF) {
            uint32_t low = 0;
            if (i + 1 >= n || s_[i] != '\\' || s_[i + 1] != 'u' || !Hex4(i + 2, low) ||
                low < 0xDC00 || low > 0xDFFF) {
              return Fail(i, "high surrogate escape without its low half", error);
            }
            i += 6;
            cp = 0x10000 + ((cp - 0xD800) << 10) + (low - 0xDC00);
          }
          AppendUtf8(scratch_, cp);
          break;
        }
        default:
          return Fail(i - 1, "bad escape in a string", error);
      }
    }
    return Fail(i, "unterminated string", error);
  }

  // Whether the 8 bytes at s_[i] are all printable ASCII other than '"' and '\\'.
  bool PlainWord(size_t i) const {
    uint64_t w;
    std::memcpy(&w, s_.data() + i, 8);
    constexpr uint64_t kOnes = 0x0101010101010101ull, kHigh = 0x8080808080808080ull;
    const auto has_zero = [](uint64_t x) { return (x - kOnes) & ~x & kHigh; };
    const uint64_t special = has_zero(w ^ (kOnes * '"')) | has_zero(w ^ (kOnes * '\\')) |
                             ((w - kOnes * 0x20) & ~w & kHigh) | (w & kHigh);
    return special == 0;
  }

  bool Hex4(size_t i, uint32_t& cp) const {
    if (i + 4 > s_.size()) return false;
    cp = 0;
    for (size_t k = 0; k < 4; ++k) {
      const int d = HexDigit(static_cast<unsigned char>(s_[i + k]));
      if (d < 0) return false;
      cp = cp * 16 + static_cast<uint32_t>(d);
    }
    return true;
  }

  enum class Number { kNegative, kUnsigned, kFloat };

  // Reads the number at pos_. `neg` and `pos` hold an integer's value.
  bool NumberAt(Number& kind, int64_t& neg, uint64_t& pos, JsonScanError* error) {
    const size_t n = s_.size();
    size_t i = pos_;
    const size_t start = i;
    const bool negative = s_[i] == '-';
    if (negative) ++i;
    if (i >= n || s_[i] < '0' || s_[i] > '9') return Fail(i, "bad number", error);
    // Integer part, accumulated while it fits.
    uint64_t value = 0;
    bool overflow = false;
    const size_t int_start = i;
    if (s_[i] == '0') {
      ++i;
    } else {
      while (i < n && s_[i] >= '0' && s_[i] <= '9') {
        overflow |= __builtin_mul_overflow(value, 10u, &value) ||
                    __builtin_add_overflow(value, static_cast<uint64_t>(s_[i] - '0'), &value);
        ++i;
      }
    }
    const size_t int_digits = i - int_start;
    bool is_float = false;
    if (i < n && s_[i] == '.') {
      ++i;
      if (i >= n || s_[i] < '0' || s_[i] > '9') return Fail(i, "bad number", error);
      while (i < n && s_[i] >= '0' && s_[i] <= '9') ++i;
      is_float = true;
    }
    int64_t exponent = 0;
    if (i < n && (s_[i] == 'e' || s_[i] == 'E')) {
      ++i;
      bool exp_negative = false;
      if (i < n && (s_[i] == '+' || s_[i] == '-')) exp_negative = s_[i++] == '-';
      if (i >= n || s_[i] < '0' || s_[i] > '9') return Fail(i, "bad number", error);
      while (i < n && s_[i] >= '0' && s_[i] <= '9') {
        if (exponent < 100000) exponent = exponent * 10 + (s_[i] - '0');
        ++i;
      }
      if (exp_negative) exponent = -exponent;
      is_float = true;
    }
    pos_ = i;
    if (!is_float) {
      if (!negative && !overflow) {
        kind = Number::kUnsigned;
        pos = value;
        return true;
      }
      if (negative && !overflow && value <= uint64_t{1} << 63) {
        kind = Number::kNegative;
        neg = value == uint64_t{1} << 63 ? INT64_MIN : -static_cast<int64_t>(value);
        return true;
      }
    }
    kind = Number::kFloat;
    // The power of ten of the leading significant digit: below 308 the value is finite for
    // sure; from there on, ask strtod (as nlohmann does) whether it overflows.
    int64_t magnitude = static_cast<int64_t>(int_digits) - 1 + exponent;
    if (int_digits == 1 && s_[int_start] == '0') magnitude = exponent;  // "0.xxx": at most
    if (magnitude >= 308) {
      const std::string copy(s_.substr(start, i - start));
      if (!std::isfinite(std::strtod(copy.c_str(), nullptr))) {
        return Fail(start, "number overflows a double", error);
      }
    }
    return true;
  }

  bool Literal(std::string_view word, JsonScanError* error) {
    if (s_.substr(pos_, word.size()) != word) return Fail(pos_, "expected a value", error);
    pos_ += word.size();
    return true;
  }

  void SkipSpace() {
    while (pos_ < s_.size() && IsSpace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
  }

  std::string_view s_;
  size_t pos_ = 0;
  std::string scratch_;
};

}  // namespace json_scan_internal

template <class Handler>
bool ScanJson(std::string_view text, Handler& h, JsonScanError* error) {
  using json_scan_internal::Scanner;
  if (error != nullptr) *error = {};
  Scanner sc(text);
  if (text.substr(0, 3) == "\xEF\xBB\xBF") sc.pos_ = 3;  // a byte order mark, as nlohmann
  // Open containers: 'o' object, 'a' array. After a value inside one comes ',' or its end.
  std::vector<char> stack;
  bool want_value = true;  // the next token is a value (or, after '{', a key or '}')
  bool after_open = false;  // just after '{' or '[': the container may be empty
  for (;;) {
    sc.SkipSpace();
    if (want_value) {
      if (sc.pos_ >= text.size()) return sc.Fail(sc.pos_, "expected a value", error);
      const char c = text[sc.pos_];
      if (after_open && !stack.empty()) {
        after_open = false;
        if ((stack.back() == 'o' && c == '}') || (stack.back() == 'a' && c == ']')) {
          ++sc.pos_;
          const bool object = stack.back() == 'o';
          stack.pop_back();
          if (!(object ? h.end_object() : h.end_array())) return false;
          want_value = false;
          if (stack.empty()) break;
          continue;
        }
      }
      // Inside an object a member starts with its key.
      if (!stack.empty() && stack.back() == 'k') {
        if (c != '"') return sc.Fail(sc.pos_, "expected a member name in quotes", error);
        std::string_view key;
        if (!sc.String(key, error)) return false;
        if (!h.key(key)) return false;
        sc.SkipSpace();
        if (sc.pos_ >= text.size() || text[sc.pos_] != ':') {
          return sc.Fail(sc.pos_, "expected ':' after a member name", error);
        }
        ++sc.pos_;
        stack.back() = 'o';
        continue;
      }
      switch (c) {
        case '{':
          ++sc.pos_;
          if (!h.start_object()) return false;
          stack.push_back('k');
          after_open = true;
          // An empty object closes at once; otherwise a key comes next.
          sc.SkipSpace();
          if (sc.pos_ < text.size() && text[sc.pos_] == '}') {
            stack.back() = 'o';
          }
          continue;
        case '[':
          ++sc.pos_;
          if (!h.start_array()) return false;
          stack.push_back('a');
          after_open = true;
          continue;
        case '"': {
          std::string_view v;
          if (!sc.String(v, error)) return false;
          if (!h.string(v)) return false;
          break;
        }
        case 't':
          if (!sc.Literal("true", error)) return false;
          if (!h.boolean(true)) return false;
          break;
        case 'f':
          if (!sc.Literal("false", error)) return false;
          if (!h.boolean(false)) return false;
          break;
        case 'n':
          if (!sc.Literal("null", error)) return false;
          if (!h.null()) return false;
          break;
        default: {
          if (c != '-' && (c < '0' || c > '9')) return sc.Fail(sc.pos_, "expected a value", error);
          Scanner::Number kind;
          int64_t neg = 0;
          uint64_t pos = 0;
          if (!sc.NumberAt(kind, neg, pos, error)) return false;
          const bool ok = kind == Scanner::Number::kUnsigned   ? h.number_unsigned(pos)
                          : kind == Scanner::Number::kNegative ? h.number_integer(neg)
                                                               : h.number_float();
          if (!ok) return false;
        }
      }
      want_value = false;
      if (stack.empty()) break;
      continue;
    }
    // After a value inside a container: ',' or the container's end.
    if (sc.pos_ >= text.size()) return sc.Fail(sc.pos_, "unexpected end of the input", error);
    const char c = text[sc.pos_];
    const bool object = stack.back() == 'o';
    if (c == ',') {
      ++sc.pos_;
      if (object) stack.back() = 'k';
      want_value = true;
      continue;
    }
    if ((object && c == '}') || (!object && c == ']')) {
      ++sc.pos_;
      stack.pop_back();
      if (!(object ? h.end_object() : h.end_array())) return false;
      if (stack.empty()) break;
      continue;
    }
    return sc.Fail(sc.pos_, object ? "expected ',' or '}'" : "expected ',' or ']'", error);
  }
  sc.SkipSpace();
  if (sc.pos_ != text.size()) return sc.Fail(sc.pos_, "text after the value", error);
  return true;
}

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_JSON_SCAN_H_
