// Protocol introspection for the gateway: Server-Timing, traceparent, KServe paths, request bodies
// (streamed through server/json_scan.h) and server-sent events.
#include "server/protocol.h"

#include <atomic>
#include <charconv>
#include <chrono>
#include <cstring>
#include <new>
#include <random>

#include "absl/status/status.h"
#include "common/strings.h"
#include "server/json_scan.h"

namespace tailguard::server {
namespace {

// ---------------------------------------------------------------------------------------------
// HTTP grammar (RFC 9110, section 5.6)

bool IsTchar(unsigned char c) {
  if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9')) return true;
  return std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
}

bool IsOws(char c) { return c == ' ' || c == '\t'; }

char AsciiLower(char c) { return (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c; }

void SkipOws(std::string_view s, size_t& i) {
  while (i < s.size() && IsOws(s[i])) ++i;
}

std::string_view Token(std::string_view s, size_t& i) {
  const size_t start = i;
  while (i < s.size() && IsTchar(static_cast<unsigned char>(s[i]))) ++i;
  return s.substr(start, i - start);
}

// Reads a quoted-string starting at s[i] == '"' into `out`, unescaped; leaves `i` after the
// closing quote. False when unterminated or holding a control character.
bool QuotedString(std::string_view s, size_t& i, std::string& out) {
  // qdtext and the escaped byte of a quoted-pair: HTAB, SP, VCHAR, obs-text.
  auto allowed = [](unsigned char c) { return c == '\t' || (c >= 0x20 && c != 0x7f); };
  ++i;
  while (i < s.size()) {
    const unsigned char c = static_cast<unsigned char>(s[i++]);
    if (c == '"') return true;
    if (c == '\\') {
      if (i == s.size() || !allowed(static_cast<unsigned char>(s[i]))) return false;
      out += s[i++];
    } else if (allowed(c)) {
      out += static_cast<char>(c);
    } else {
      return false;
    }
  }
  return false;
}

// Moves `i` to the next comma outside a quoted-string, or to the end.
void SkipToComma(std::string_view s, size_t& i) {
  bool quoted = false;
  for (; i < s.size(); ++i) {
    const char c = s[i];
    if (quoted) {
      if (c == '\\') {
        ++i;
      } else if (c == '"') {
        quoted = false;
      }
    } else if (c == '"') {
      quoted = true;
    } else if (c == ',') {
      return;
    }
  }
  i = s.size();
}

// A `dur` value: a finite, non-negative decimal number filling the whole value, else NaN.
double Duration(std::string_view v) {
  constexpr double kAbsent = std::numeric_limits<double>::quiet_NaN();
  double d = 0;
  const auto [end, ec] = std::from_chars(v.data(), v.data() + v.size(), d);
  if (v.empty() || ec != std::errc() || end != v.data() + v.size()) return kAbsent;
  if (!std::isfinite(d) || !(d >= 0)) return kAbsent;
  return d + 0.0;  // turns -0 into 0
}

// Parses one metric starting at a token; on success leaves `i` at the next ',' or the end.
bool ServerTimingEntry(std::string_view s, size_t& i, ServerTimingMetric& m) {
  const std::string_view name = Token(s, i);
  if (name.empty()) return false;
  m.name = std::string(name);
  bool have_dur = false;
  bool have_desc = false;
  for (;;) {
    SkipOws(s, i);
    if (i == s.size() || s[i] == ',') return true;
    if (s[i] != ';') return false;
    ++i;
    SkipOws(s, i);
    const std::string_view param = Token(s, i);
    if (param.empty()) return false;
    SkipOws(s, i);
    std::string value;
    if (i < s.size() && s[i] == '=') {
      ++i;
      SkipOws(s, i);
      if (i < s.size() && s[i] == '"') {
        if (!QuotedString(s, i, value)) return false;
      } else {
        value = std::string(Token(s, i));
      }
    }
    // The first of duplicate parameters wins, as the W3C processing model says.
    if (!have_dur && EqualsIgnoreCase(param, "dur")) {
      have_dur = true;
      m.duration_ms = Duration(value);
    } else if (!have_desc && EqualsIgnoreCase(param, "desc")) {
      have_desc = true;
      m.description = std::move(value);
    }
  }
}

// ---------------------------------------------------------------------------------------------
// Hex and random ids

constexpr char kHexDigits[] = "0123456789abcdef";

int LowerHexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  return -1;
}

// Decodes 2 * out.size() lowercase hex digits.
bool DecodeLowerHex(std::string_view hex, std::span<uint8_t> out) {
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = LowerHexValue(hex[2 * i]);
    const int lo = LowerHexValue(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<uint8_t>(hi << 4 | lo);
  }
  return true;
}

bool AllZero(std::span<const uint8_t> bytes) {
  for (uint8_t b : bytes) {
    if (b != 0) return false;
  }
  return true;
}

uint64_t SeedForThisThread() {
  // The counter keeps seeds apart even where std::random_device is deterministic or missing;
  // relaxed is enough, only uniqueness matters.
  static std::atomic<uint64_t> counter{0};
  uint64_t seed = counter.fetch_add(1, std::memory_order_relaxed) * 0xD1B54A32D192ED03ull;
  try {
    std::random_device device;
    seed ^= static_cast<uint64_t>(device()) << 32 ^ device();
  } catch (...) {
    // No entropy source: the clock and the counter still separate threads and processes.
  }
  seed ^= static_cast<uint64_t>(std::chrono::steady_clock::now().time_since_epoch().count());
  return seed;
}

// splitmix64: one add and a mix per call, full 2^64 period, good enough for ids.
uint64_t NextRandom() {
  thread_local uint64_t state = SeedForThisThread();
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

void StoreBigEndian(uint64_t v, uint8_t* out) {
  for (int i = 7; i >= 0; --i, v >>= 8) out[i] = static_cast<uint8_t>(v);
}

// ---------------------------------------------------------------------------------------------
// Paths

// Percent-decodes one path segment; nullopt for a bad escape or a decoded '/' or control byte,
// and for "", "." and "..".
std::optional<std::string> PathSegment(std::string_view s) {
  std::optional<std::string> out = PercentDecode(s);
  if (!out) return std::nullopt;
  for (char c : *out) {
    const unsigned char u = static_cast<unsigned char>(c);
    if (c == '/' || u < 0x20 || u == 0x7f) return std::nullopt;
  }
  if (out->empty() || *out == "." || *out == "..") return std::nullopt;
  return out;
}

// ---------------------------------------------------------------------------------------------
// Request bodies

// A JSON value as the inspectors see it: a scalar, or the start of an object or array.
struct JsonValue {
  enum class Type { kNull, kBool, kNegative, kUnsigned, kFloat, kString, kObject, kArray };
  Type type = Type::kNull;
  bool boolean = false;
  int64_t negative = 0;    // kNegative
  uint64_t unsigned_ = 0;  // kUnsigned
  std::string_view string;
};

// A JSON handler (ScanJson(), server/json_scan.h) that knows where in the document it is, so
// that a subclass can give a schema as roles: the role of the root, of an object's member by key,
// of an array's elements. Values whose role is kIgnored are skipped with all they contain. Bounds
// the nesting depth; the scanner is iterative, so nothing recurses on hostile input.
class SchemaSax {
 public:
  static constexpr int kIgnored = 0;
  static constexpr int kRoot = 1;

  virtual ~SchemaSax() = default;

  // Parses `text` and returns the first error, if any.
  absl::Status Run(std::string_view text) {
    // A NUL byte can only be an error in JSON text (in strings it must be escaped); say so
    // plainly.
    if (const size_t nul = text.find('\0'); nul != std::string_view::npos) {
      return absl::InvalidArgumentError(Cat("malformed JSON at byte ", nul + 1, ": NUL byte"));
    }
    JsonScanError error;
    try {
      if (ScanJson(text, *this, &error)) return absl::OkStatus();
    } catch (const std::bad_alloc&) {
      return absl::ResourceExhaustedError("request body too large to inspect");
    }
    if (status_.ok() && error.what != nullptr) {
      return absl::InvalidArgumentError(
          Cat("malformed JSON at byte ", error.offset, ": ", error.what));
    }
    return status_;
  }

  // The ScanJson() handler (server/json_scan.h).
  bool null() { return Visit(JsonValue{}); }
  bool boolean(bool b) {
    JsonValue v;
    v.type = JsonValue::Type::kBool;
    v.boolean = b;
    return Visit(v);
  }
  bool number_integer(int64_t n) {
    JsonValue v;
    v.type = n < 0 ? JsonValue::Type::kNegative : JsonValue::Type::kUnsigned;
    v.negative = n;
    v.unsigned_ = n < 0 ? 0 : static_cast<uint64_t>(n);
    return Visit(v);
  }
  bool number_unsigned(uint64_t n) {
    JsonValue v;
    v.type = JsonValue::Type::kUnsigned;
    v.unsigned_ = n;
    return Visit(v);
  }
  bool number_float() {
    JsonValue v;
    v.type = JsonValue::Type::kFloat;
    return Visit(v);
  }
  bool string(std::string_view s) {
    JsonValue v;
    v.type = JsonValue::Type::kString;
    v.string = s;
    return Visit(v);
  }
  bool start_object() { return Open(JsonValue::Type::kObject); }
  bool key(std::string_view k) {
    Frame& f = stack_.back();
    f.child_role = f.role == kIgnored ? kIgnored : MemberRole(f.role, k);
    f.child_key.clear();
    if (f.child_role == kIgnored) return true;
    const uint32_t bit = uint32_t{1} << f.child_role;
    if (f.seen & bit) return FailAt(stack_.size() - 1, Cat("has a duplicate ", k));
    f.seen |= bit;
    f.child_key = k;
    return true;
  }
  bool end_object() { return Close(); }
  bool start_array() { return Open(JsonValue::Type::kArray); }
  bool end_array() { return Close(); }

 protected:
  // The role of member `key` of an object with role `parent`; roles are 1..31.
  virtual int MemberRole(int parent, std::string_view key) = 0;
  // The role of every element of an array with role `parent`.
  virtual int ElementRole(int parent) = 0;
  // Sees each value that has a role (for objects and arrays, before their contents). Returns
  // false after Fail().
  virtual bool OnValue(int role, const JsonValue& v) = 0;
  // Sees the end of each object or array that has a role; `seen` has bit r set when a member
  // with role r was present.
  virtual bool OnClose(int role, uint32_t seen) = 0;

  // Records the error "<path of the current value> <what>" and returns false.
  bool Fail(std::string_view what) { return FailAt(stack_.size(), what); }
  // The same for the container being closed (inside OnClose()).
  bool FailClosing(std::string_view what) { return FailAt(stack_.size() - 1, what); }

 private:
  struct Frame {
    int role = kIgnored;
    bool array = false;
    uint64_t elements = 0;  // arrays: elements started so far
    int child_role = kIgnored;
    std::string child_key;  // objects: the key of the current member, when it has a role
    uint32_t seen = 0;
  };

  // The role of the value that starts now, counting it as an element of an array parent.
  int RoleOfNextValue() {
    if (stack_.empty()) return kRoot;
    Frame& parent = stack_.back();
    if (!parent.array) return parent.child_role;
    ++parent.elements;
    return parent.role == kIgnored ? kIgnored : ElementRole(parent.role);
  }

  bool Visit(const JsonValue& v) {
    const int role = RoleOfNextValue();
    return role == kIgnored || OnValue(role, v);
  }

  bool Open(JsonValue::Type type) {
    if (stack_.size() >= static_cast<size_t>(kMaxJsonDepth)) {
      if (status_.ok()) {
        status_ = absl::InvalidArgumentError(
            Cat("request body nests deeper than ", kMaxJsonDepth, " levels"));
      }
      return false;
    }
    const int role = RoleOfNextValue();
    JsonValue v;
    v.type = type;
    if (role != kIgnored && !OnValue(role, v)) return false;
    Frame& f = stack_.emplace_back();
    f.role = role;
    f.array = type == JsonValue::Type::kArray;
    return true;
  }

  bool Close() {
    const Frame& f = stack_.back();
    if (f.role != kIgnored && !OnClose(f.role, f.seen)) return false;
    stack_.pop_back();
    return true;
  }

  // Fails for the value reached through the first `levels` frames.
  bool FailAt(size_t levels, std::string_view what) {
    std::string path;
    for (size_t i = 0; i < levels; ++i) {
      const Frame& f = stack_[i];
      if (f.array) {
        path += Cat('[', f.elements - 1, ']');
      } else {
        if (!path.empty()) path += '.';
        path += f.child_key;
      }
    }
    if (status_.ok()) {
      status_ = absl::InvalidArgumentError(Cat(path.empty() ? "request body" : path, ' ', what));
    }
    return false;
  }

  std::vector<Frame> stack_;
  absl::Status status_;
};

// KServe v2: inputs[*].shape[*].
class KServeSax final : public SchemaSax {
 public:
  uint64_t total() const { return total_; }

 private:
  enum Role { kInputs = 2, kInput, kShape, kDim };

  int MemberRole(int parent, std::string_view key) override {
    if (parent == kRoot && key == "inputs") return kInputs;
    if (parent == kInput && key == "shape") return kShape;
    return kIgnored;
  }
  int ElementRole(int parent) override {
    if (parent == kInputs) return kInput;
    if (parent == kShape) return kDim;
    return kIgnored;
  }
  bool OnValue(int role, const JsonValue& v) override {
    using T = JsonValue::Type;
    switch (role) {
      case kRoot:
        return v.type == T::kObject || Fail("must be a JSON object");
      case kInputs:
        return v.type == T::kArray || Fail("must be an array");
      case kInput:
        return v.type == T::kObject || Fail("must be an object");
      case kShape:
        if (v.type != T::kArray) return Fail("must be an array of integers");
        product_ = 1;
        zero_ = false;
        overflow_ = false;
        return true;
      case kDim:
        if (v.type == T::kNegative) return Fail(Cat("is negative: ", v.negative));
        if (v.type != T::kUnsigned) return Fail("must be a non-negative integer");
        if (v.unsigned_ == 0) zero_ = true;
        overflow_ |= __builtin_mul_overflow(product_, v.unsigned_, &product_);
        return true;
      default:
        return true;
    }
  }
  bool OnClose(int role, uint32_t seen) override {
    switch (role) {
      case kRoot:
        return (seen & (1u << kInputs)) || FailClosing("has no inputs");
      case kInput:
        if (!(seen & (1u << kShape))) return FailClosing("has no shape");
        if (__builtin_add_overflow(total_, zero_ ? 0 : product_, &total_)) {
          return FailClosing("makes the input size overflow 64 bits");
        }
        return true;
      case kShape:
        // A zero dimension wins over an overflowing product: the tensor is empty.
        if (overflow_ && !zero_) return FailClosing("has a product above 2^64 - 1");
        return true;
      default:
        return true;
    }
  }

  uint64_t product_ = 1;  // of the current shape
  bool zero_ = false;     // the current shape has a 0 dimension
  bool overflow_ = false;
  uint64_t total_ = 0;
};

// Unicode code points of valid UTF-8 (the scanner has validated it): every byte that does not
// continue a sequence.
uint64_t CodePoints(std::string_view s) {
  uint64_t n = 0;
  size_t i = 0;
  // Eight bytes at a time: a continuation byte has its top bits 10.
  constexpr uint64_t kHigh = 0x8080808080808080ull;
  for (; i + 8 <= s.size(); i += 8) {
    uint64_t w;
    std::memcpy(&w, s.data() + i, 8);
    n += 8 - static_cast<uint64_t>(__builtin_popcountll(w & ~(w << 1) & kHigh));
  }
  for (; i < s.size(); ++i) n += (static_cast<unsigned char>(s[i]) & 0xC0) != 0x80;
  return n;
}

// OpenAI-compatible completions and chat completions.
class OpenAISax final : public SchemaSax {
 public:
  explicit OpenAISax(bool chat) : chat_(chat) {}
  OpenAIRequest& request() { return request_; }

 private:
  enum Role {
    kModel = 2,
    kStream,
    kPrompt,       // completions: the prompt
    kPromptItem,   // an element of an array prompt: string, token id, or array of token ids
    kPromptToken,  // a token id inside a batch of token arrays
    kMessages,     // chat
    kMessage,
    kContent,
    kPart,
    kPartText,
  };

  int MemberRole(int parent, std::string_view key) override {
    if (parent == kRoot) {
      if (key == "model") return kModel;
      if (key == "stream") return kStream;
      if (chat_ && key == "messages") return kMessages;
      if (!chat_ && key == "prompt") return kPrompt;
    }
    if (parent == kMessage && key == "content") return kContent;
    if (parent == kPart && key == "text") return kPartText;
    return kIgnored;
  }
  int ElementRole(int parent) override {
    switch (parent) {
      case kPrompt:
        return kPromptItem;
      case kPromptItem:
        return kPromptToken;
      case kMessages:
        return kMessage;
      case kContent:
        return kPart;
      default:
        return kIgnored;
    }
  }
  bool OnValue(int role, const JsonValue& v) override {
    using T = JsonValue::Type;
    switch (role) {
      case kRoot:
        return v.type == T::kObject || Fail("must be a JSON object");
      case kModel:
        if (v.type != T::kString) return Fail("must be a string");
        request_.model = std::string(v.string);
        return true;
      case kStream:
        if (v.type != T::kBool && v.type != T::kNull) return Fail("must be a boolean");
        request_.stream = v.boolean;
        return true;
      case kPrompt:
        if (v.type == T::kString) return Count(v.string);
        return v.type == T::kArray ||
               Fail("must be a string, an array of strings, or an array of token ids");
      case kPromptItem:
        if (v.type == T::kString) return Count(v.string);
        if (v.type == T::kUnsigned) return Count(1);
        return v.type == T::kArray || Fail("must be a string, a token id or an array of them");
      case kPromptToken:
        return v.type == T::kUnsigned ? Count(1) : Fail("must be a token id");
      case kMessages:
        return v.type == T::kArray || Fail("must be an array");
      case kMessage:
        return v.type == T::kObject || Fail("must be an object");
      case kContent:
        if (v.type == T::kString) return Count(v.string);
        return v.type == T::kArray || v.type == T::kNull ||
               Fail("must be a string, an array of parts, or null");
      case kPart:
        return v.type == T::kObject || Fail("must be an object");
      case kPartText:
        return v.type == T::kString ? Count(v.string) : Fail("must be a string");
      default:
        return true;
    }
  }
  bool OnClose(int role, uint32_t seen) override {
    if (role != kRoot) return true;
    if (chat_ && !(seen & (1u << kMessages))) return FailClosing("has no messages");
    if (!chat_ && !(seen & (1u << kPrompt))) return FailClosing("has no prompt");
    return true;
  }

  bool Count(std::string_view text) { return Count(CodePoints(text)); }
  bool Count(uint64_t n) {
    request_.prompt_chars += n;
    return true;
  }

  const bool chat_;
  OpenAIRequest request_;
};

}  // namespace

// ---------------------------------------------------------------------------------------------
// Server-Timing

std::vector<ServerTimingMetric> ParseServerTiming(std::string_view header_value, int* malformed) {
  std::vector<ServerTimingMetric> metrics;
  int bad = 0;
  const std::string_view s = header_value;
  size_t i = 0;
  while (metrics.size() < kMaxServerTimingMetrics) {
    SkipOws(s, i);
    if (i == s.size()) break;
    if (s[i] == ',') {  // an empty list element
      ++i;
      continue;
    }
    const size_t start = i;
    ServerTimingMetric m;
    if (ServerTimingEntry(s, i, m)) {
      metrics.push_back(std::move(m));
    } else {
      ++bad;
      i = start;
      SkipToComma(s, i);
    }
    if (i < s.size()) ++i;  // the comma
  }
  if (malformed != nullptr) *malformed = bad;
  return metrics;
}

std::optional<Stage> StageForServerTiming(std::string_view name) {
  struct Alias {
    std::string_view name;
    Stage stage;
  };
  static constexpr Alias kAliases[] = {
      {"feature", Stage::kFeatureFetch},
      {"features", Stage::kFeatureFetch},
      {"feature_fetch", Stage::kFeatureFetch},
      {"featurestore", Stage::kFeatureFetch},
      {"fetch", Stage::kFeatureFetch},
      {"pre", Stage::kPreprocess},
      {"preprocess", Stage::kPreprocess},
      {"preprocessing", Stage::kPreprocess},
      {"infer", Stage::kInference},
      {"inference", Stage::kInference},
      {"model", Stage::kInference},
      {"compute", Stage::kInference},
      {"post", Stage::kPostprocess},
      {"postprocess", Stage::kPostprocess},
      {"postprocessing", Stage::kPostprocess},
      {"queue", Stage::kQueue},
      {"queue_wait", Stage::kQueue},
      {"queueing", Stage::kQueue},
      {"queuing", Stage::kQueue},
  };
  char buf[16];
  if (name.size() > sizeof(buf)) return std::nullopt;
  for (size_t i = 0; i < name.size(); ++i) buf[i] = name[i] == '-' ? '_' : AsciiLower(name[i]);
  const std::string_view lower(buf, name.size());
  for (const Alias& a : kAliases) {
    if (a.name == lower) return a.stage;
  }
  return std::nullopt;
}

std::optional<std::string> RequestFramingProblem(unsigned version, size_t host_fields,
                                                 std::string_view host, size_t coding_fields,
                                                 std::string_view coding) {
  if (version >= 11 && host_fields == 0) {
    return "an HTTP/1.1 request needs a Host header (RFC 9112 3.2)";
  }
  if (host_fields > 1) return "the request has more than one Host header (RFC 9112 3.2)";
  for (const char c : host) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    std::string_view("-._~!$&'()*+,;=%:[]").find(c) != std::string_view::npos;
    if (!ok) return "the Host header is not a host and port (RFC 9112 3.2)";
  }
  if (coding_fields == 0) return std::nullopt;
  if (version < 11) {
    return "Transfer-Encoding in an HTTP/1.0 request, which cannot have one (RFC 9112 6.1); send "
           "the body with Content-Length";
  }
  std::string_view v = coding;
  while (!v.empty() && IsOws(v.front())) v.remove_prefix(1);
  while (!v.empty() && IsOws(v.back())) v.remove_suffix(1);
  bool chunked = v.size() == 7;
  for (size_t i = 0; chunked && i < 7; ++i) chunked = AsciiLower(v[i]) == "chunked"[i];
  if (coding_fields == 1 && chunked) return std::nullopt;
  std::string shown(coding.substr(0, 64));
  for (char& c : shown) {
    if (static_cast<unsigned char>(c) < 0x20 || c == '"' || c == '\\') c = '?';
  }
  return Cat("Transfer-Encoding \"", shown, coding.size() > 64 ? "...\"" : "\"",
             coding_fields > 1 ? " (in more than one field)" : "",
             ": only \"chunked\" alone is accepted (RFC 9112 6.3); send the body with "
             "Content-Length or chunked");
}

namespace {

// A path segment that is "." or ".." once %2E is read as '.', and whatever follows a ';' (a
// path parameter: Tomcat and Spring read "..;x" as "..") is set aside: 1 or 2, else 0.
int DotSegment(std::string_view seg) {
  seg = seg.substr(0, seg.find(';'));
  int dots = 0;
  for (size_t i = 0; i < seg.size();) {
    if (seg[i] == '.') {
      ++i;
    } else if (seg.size() - i >= 3 && seg[i] == '%' && seg[i + 1] == '2' &&
               (seg[i + 2] == 'e' || seg[i + 2] == 'E')) {
      i += 3;
    } else {
      return 0;
    }
    if (++dots > 2) return 0;
  }
  return dots;
}

// Whether `path` has a backslash, raw or as %5C: some servers read it as a '/'.
bool HasBackslash(std::string_view path) {
  for (size_t i = 0; i < path.size(); ++i) {
    if (path[i] == '\\') return true;
    if (path[i] == '%' && i + 2 < path.size() && path[i + 1] == '5' &&
        (path[i + 2] == 'c' || path[i + 2] == 'C')) {
      return true;
    }
  }
  return false;
}

}  // namespace

absl::StatusOr<std::optional<std::string>> NormalizeTarget(std::string_view target) {
  if (target.size() > kMaxTargetBytes) {
    return absl::InvalidArgumentError(
        Cat("the request target is ", target.size(), " bytes; at most ", kMaxTargetBytes));
  }
  // The absolute form ("http://host/path"), which a server must accept (RFC 9112 3.2.2): its
  // path and query are the target; the authority is the Host's business.
  bool absolute = false;
  for (const std::string_view scheme : {"http://", "https://"}) {
    if (target.size() >= scheme.size() &&
        EqualsIgnoreCase(target.substr(0, scheme.size()), scheme)) {
      const size_t end = target.find_first_of("/?#", scheme.size());
      target = end == std::string_view::npos ? std::string_view() : target.substr(end);
      absolute = true;
      break;
    }
  }
  if (absolute && (target.empty() || target.front() != '/')) {
    // "http://host" or "http://host?q": the root.
    std::string out = Cat("/", target);
    absl::StatusOr<std::optional<std::string>> rest = NormalizeTarget(out);
    if (!rest.ok()) return rest.status();
    return rest->has_value() ? std::move(*rest) : std::optional<std::string>(std::move(out));
  }
  if (target.empty() || target.front() != '/') {
    return absl::InvalidArgumentError(
        Cat("the request target must be a path starting with '/' (origin form), got \"",
            target.substr(0, 64), target.size() > 64 ? "...\"" : "\""));
  }
  const size_t q = target.find('?');
  const std::string_view path = target.substr(0, q);
  // Whether anything needs doing: an empty, "." or ".." segment anywhere but the end's "/".
  bool normal = true;
  for (size_t at = 1; normal && at <= path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string_view seg = path.substr(at, slash - at);
    if ((seg.empty() && slash < path.size()) || DotSegment(seg) != 0) normal = false;
    at = slash + 1;
  }
  if (HasBackslash(path)) {
    return absl::InvalidArgumentError(
        "the request path has a backslash (raw or %5C), which some servers read as '/'; escape "
        "it differently or leave it out");
  }
  if (normal) {
    return absolute ? std::optional<std::string>(std::string(target))
                    : std::optional<std::string>();
  }

  std::vector<std::string_view> kept;
  bool trailing_slash = false;
  for (size_t at = 1; at <= path.size();) {
    const size_t slash = std::min(path.find('/', at), path.size());
    const std::string_view seg = path.substr(at, slash - at);
    const bool last = slash == path.size();
    const int dots = DotSegment(seg);
    if (dots == 2) {
      if (kept.empty()) {
        return absl::InvalidArgumentError(
            "the request path climbs above the root with \"..\"; paths are resolved before "
            "routing (RFC 3986 5.2.4)");
      }
      kept.pop_back();
    } else if (dots == 0 && !seg.empty()) {
      kept.push_back(seg);
    }
    // "/a/", "/a/." and "/a/b/.." all name a directory: the result ends with '/'.
    trailing_slash = last && (seg.empty() || dots != 0);
    at = slash + 1;
  }
  std::string out;
  out.reserve(target.size());
  for (const std::string_view seg : kept) out.append("/").append(seg);
  if (kept.empty() || trailing_slash) out.push_back('/');
  if (q != std::string_view::npos) out.append(target.substr(q));
  return std::optional<std::string>(std::move(out));
}

RequestLabelCheck CheckRequestLabel(std::string_view value) {
  if (value.empty()) return RequestLabelCheck::kEmpty;
  if (value.size() > kMaxRequestLabelBytes) return RequestLabelCheck::kTooLong;
  for (const char c : value) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                    c == '.' || c == '_' || c == ':' || c == '/' || c == '@' || c == '+' ||
                    c == '-';
    if (!ok) return RequestLabelCheck::kCharacters;
  }
  return RequestLabelCheck::kOk;
}

std::string SanitizeStageName(std::string_view name) {
  std::string out;
  bool separate = false;  // a run of other bytes is pending between two kept characters
  for (char c : name) {
    if (out.size() >= kMaxStageNameLength) break;
    c = AsciiLower(c);
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'))) {
      separate = !out.empty();
      continue;
    }
    if (separate) {
      out += '_';
      separate = false;
      if (out.size() >= kMaxStageNameLength) break;
    }
    out += c;
  }
  while (!out.empty() && out.back() == '_') out.pop_back();
  return out;
}

// ---------------------------------------------------------------------------------------------
// Trace context

std::string TraceContext::TraceIdHex() const { return HexEncode(trace_id); }
std::string TraceContext::SpanIdHex() const { return HexEncode(span_id); }

std::optional<TraceContext> ParseTraceparent(std::string_view value) {
  while (!value.empty() && IsOws(value.front())) value.remove_prefix(1);
  while (!value.empty() && IsOws(value.back())) value.remove_suffix(1);
  // version(2) - trace-id(32) - parent-id(16) - flags(2)
  constexpr size_t kLength = 55;
  if (value.size() < kLength) return std::nullopt;
  uint8_t version = 0;
  if (!DecodeLowerHex(value.substr(0, 2), std::span(&version, 1)) || version == 0xff) {
    return std::nullopt;
  }
  if (version == 0 && value.size() != kLength) return std::nullopt;
  if (value.size() > kLength && value[kLength] != '-') return std::nullopt;
  if (value[2] != '-' || value[35] != '-' || value[52] != '-') return std::nullopt;
  TraceContext c;
  if (!DecodeLowerHex(value.substr(3, 32), c.trace_id) ||
      !DecodeLowerHex(value.substr(36, 16), c.span_id) ||
      !DecodeLowerHex(value.substr(53, 2), std::span(&c.flags, 1))) {
    return std::nullopt;
  }
  if (AllZero(c.trace_id) || AllZero(c.span_id)) return std::nullopt;
  return c;
}

std::string FormatTraceparent(const TraceContext& context) {
  // Written in place: this runs for every proxied request.
  std::string out(55, '-');
  out[0] = '0';
  out[1] = '0';
  HexEncodeTo(context.trace_id, out.data() + 3);
  HexEncodeTo(context.span_id, out.data() + 36);
  HexEncodeTo(std::span(&context.flags, 1), out.data() + 53);
  return out;
}

std::array<uint8_t, 16> NewTraceId() {
  std::array<uint8_t, 16> id;
  uint64_t hi = 0;
  uint64_t lo = 0;
  while (hi == 0 && lo == 0) {
    hi = NextRandom();
    lo = NextRandom();
  }
  StoreBigEndian(hi, id.data());
  StoreBigEndian(lo, id.data() + 8);
  return id;
}

std::array<uint8_t, 8> NewSpanId() {
  std::array<uint8_t, 8> id;
  uint64_t v = 0;
  while (v == 0) v = NextRandom();
  StoreBigEndian(v, id.data());
  return id;
}

std::optional<std::string> PercentDecode(std::string_view text, bool plus_as_space) {
  auto hex = [](char c) {
    if (c >= '0' && c <= '9') return c - '0';
    c = AsciiLower(c);
    return (c >= 'a' && c <= 'f') ? c - 'a' + 10 : -1;
  };
  std::string out;
  out.reserve(text.size());
  for (size_t i = 0; i < text.size(); ++i) {
    char c = text[i];
    if (c == '%') {
      if (i + 2 >= text.size()) return std::nullopt;
      const int hi = hex(text[i + 1]);
      const int lo = hex(text[i + 2]);
      if (hi < 0 || lo < 0) return std::nullopt;
      c = static_cast<char>(hi << 4 | lo);
      i += 2;
    } else if (c == '+' && plus_as_space) {
      c = ' ';
    }
    out += c;
  }
  return out;
}

char* HexEncodeTo(std::span<const uint8_t> bytes, char* out) {
  for (const uint8_t b : bytes) {
    *out++ = kHexDigits[b >> 4];
    *out++ = kHexDigits[b & 0xf];
  }
  return out;
}

std::string HexEncode(std::span<const uint8_t> bytes) {
  std::string out(2 * bytes.size(), '0');
  HexEncodeTo(bytes, out.data());
  return out;
}

// ---------------------------------------------------------------------------------------------
// KServe

std::optional<KServeTarget> ParseKServePath(std::string_view path) {
  if (const size_t q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  constexpr std::string_view kPrefix = "/v2/models/";
  if (!path.starts_with(kPrefix)) return std::nullopt;
  path.remove_prefix(kPrefix.size());
  // At most four segments: name [versions v] [verb]. An empty segment fails in PathSegment().
  std::string_view segments[4];
  size_t n = 0;
  for (;;) {
    if (n == 4) return std::nullopt;
    const size_t slash = path.find('/');
    segments[n++] = path.substr(0, slash);
    if (slash == std::string_view::npos) break;
    path.remove_prefix(slash + 1);
  }
  auto verb = [](std::string_view s) -> std::optional<std::string_view> {
    if (s == "infer") return "infer";
    if (s == "ready") return "ready";
    return std::nullopt;
  };
  // Triton's statistics of every model, not a model named "stats" (whose own paths have more
  // segments: /v2/models/stats/infer).
  if (n == 1 && segments[0] == "stats") return std::nullopt;
  KServeTarget target;
  std::optional<std::string> model = PathSegment(segments[0]);
  if (!model) return std::nullopt;
  target.model = std::move(*model);
  target.verb = "";
  size_t next = 1;
  if (n >= 3 && segments[1] == "versions") {
    std::optional<std::string> version = PathSegment(segments[2]);
    if (!version) return std::nullopt;
    target.version = std::move(*version);
    next = 3;
  }
  if (next < n) {
    if (next + 1 != n) return std::nullopt;
    const std::optional<std::string_view> v = verb(segments[next]);
    if (!v) return std::nullopt;
    target.verb = *v;
  }
  return target;
}

absl::StatusOr<uint64_t> KServeInputSize(std::string_view body,
                                         std::optional<size_t> json_header_length) {
  if (json_header_length.has_value()) {
    if (*json_header_length > body.size()) {
      return absl::InvalidArgumentError(Cat("Inference-Header-Content-Length ", *json_header_length,
                                            " is beyond the body's ", body.size(), " bytes"));
    }
    body = body.substr(0, *json_header_length);
  }
  KServeSax sax;
  if (absl::Status s = sax.Run(body); !s.ok()) return s;
  return sax.total();
}

absl::StatusOr<OpenAIRequest> InspectOpenAIRequest(std::string_view body, bool chat) {
  OpenAISax sax(chat);
  if (absl::Status s = sax.Run(body); !s.ok()) return s;
  return std::move(sax.request());
}

// ---------------------------------------------------------------------------------------------
// Server-sent events

size_t SseScanner::Feed(std::string_view chunk) {
  static constexpr unsigned char kBom[] = {0xEF, 0xBB, 0xBF};
  static constexpr std::string_view kData = "data";
  static constexpr std::string_view kDone = "[DONE]";
  size_t completed = 0;
  for (size_t i = 0; i < chunk.size(); ++i) {
    // The bulk of a stream is data values and comments: skip to the end of their line.
    if ((line_ == Line::kData || line_ == Line::kIgnore) && !after_cr_) {
      while (i < chunk.size() && chunk[i] != '\n' && chunk[i] != '\r') ++i;
      if (i == chunk.size()) break;
    }
    const unsigned char c = static_cast<unsigned char>(chunk[i]);
    if (!bom_decided_) {
      if (c == kBom[bom_matched_]) {
        if (++bom_matched_ == sizeof(kBom)) bom_decided_ = true;
        continue;
      }
      bom_decided_ = true;
      // A partial byte order mark is the start of a field name that is not "data".
      if (bom_matched_ > 0) line_ = Line::kIgnore;
    }
    if (after_cr_) {
      after_cr_ = false;
      if (c == '\n') continue;  // the second half of a CRLF
    }
    if (c == '\r' || c == '\n') {
      after_cr_ = c == '\r';
      completed += EndLine();
      continue;
    }
    switch (line_) {
      case Line::kStart:
        if (c == kData[0]) {
          line_ = Line::kName;
          name_matched_ = 1;
        } else {
          line_ = Line::kIgnore;  // a comment (':') or another field
        }
        break;
      case Line::kName:
        if (name_matched_ == kData.size()) {
          line_ = c == ':' ? Line::kValueStart : Line::kIgnore;
        } else if (c == static_cast<unsigned char>(kData[name_matched_])) {
          ++name_matched_;
        } else {
          line_ = Line::kIgnore;
        }
        break;
      case Line::kValueStart:
        line_ = Line::kValue;
        value_matched_ = 0;
        if (c == ' ') break;  // the one space after the colon is not part of the value
        [[fallthrough]];
      case Line::kValue:
        if (value_matched_ < kDone.size() &&
            c == static_cast<unsigned char>(kDone[value_matched_])) {
          ++value_matched_;
        } else {
          line_ = Line::kData;
        }
        break;
      case Line::kData:
      case Line::kIgnore:
        break;
    }
  }
  return completed;
}

bool SseScanner::EndLine() {
  const Line line = line_;
  line_ = Line::kStart;
  bool data = false;
  bool is_done = false;
  switch (line) {
    case Line::kStart:
      return Dispatch();  // a blank line
    case Line::kName:
      data = name_matched_ == 4;  // "data" alone is a data field with an empty value
      break;
    case Line::kValueStart:
    case Line::kData:
      data = true;
      break;
    case Line::kValue:
      data = true;
      is_done = value_matched_ == 6;
      break;
    case Line::kIgnore:
      break;
  }
  if (data) {
    if (data_lines_ == 0) first_data_is_done_ = is_done;
    if (data_lines_ < 2) ++data_lines_;
  }
  return false;
}

bool SseScanner::Dispatch() {
  const uint8_t lines = data_lines_;
  const bool done = first_data_is_done_;
  data_lines_ = 0;
  first_data_is_done_ = false;
  if (lines == 0) return false;
  if (lines == 1 && done) {
    done_ = true;
    return false;
  }
  ++events_;
  return true;
}

}  // namespace tailguard::server
