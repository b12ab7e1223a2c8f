// What the gateway reads from the traffic it proxies: the upstream's Server-Timing header, W3C
// trace context, KServe v2 paths, the size of an inference request, and the token events of a
// streamed (server-sent events) response. Pure functions and small state machines: no I/O, no
// HTTP library types, no exceptions out.
#ifndef TAILGUARD_SERVER_PROTOCOL_H_
#define TAILGUARD_SERVER_PROTOCOL_H_

#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "absl/status/statusor.h"
#include "tailguard/sampler.h"

namespace tailguard::server {

// ---------------------------------------------------------------------------------------------
// Server-Timing (https://www.w3.org/TR/server-timing/)

// One metric of a Server-Timing header: `name;dur=12.3;desc="feature store"`.
struct ServerTimingMetric {
  std::string name;  // the metric-name token, as sent (case kept)
  // Milliseconds; NaN when the metric has no usable `dur` (absent, empty, not a number,
  // negative, infinite or NaN).
  double duration_ms = std::numeric_limits<double>::quiet_NaN();
  std::string description;  // `desc`, unquoted and unescaped; "" when absent

  bool has_duration() const { return !std::isnan(duration_ms); }
};

// Most metrics ParseServerTiming() returns from one header value; the rest are ignored.
inline constexpr size_t kMaxServerTimingMetrics = 64;

// Parses one Server-Timing field value (several header lines may be joined with ", " first).
//
// Grammar (RFC 9110 tokens and quoted-strings): a comma-separated list of
//   metric-name *( OWS ";" OWS param-name [ OWS "=" OWS ( token / quoted-string ) ] )
// Empty list elements and whitespace around delimiters are allowed. Parameter names are
// case-insensitive, may come in any order, and the first of duplicates wins; `dur` and `desc`
// are read, others are ignored. `dur` must be a decimal number such as 12, 0.5 or 1e3 (token or
// quoted); anything else, or a negative or infinite value, leaves the duration absent without
// making the metric malformed (the W3C processing model would say 0; absent is more honest).
//
// A metric that breaks the grammar (a name that is not a token, stray characters, an
// unterminated quoted-string, a control character) is skipped up to the next top-level comma
// and counted. Metrics after the first kMaxServerTimingMetrics are ignored, not counted.
// Never fails; `malformed`, when given, is set to the number of skipped metrics. Linear time.
std::vector<ServerTimingMetric> ParseServerTiming(std::string_view header_value,
                                                  int* malformed = nullptr);

// The SDK stage a well-known Server-Timing metric name stands for, case-insensitively ('-'
// counts as '_'):
//   feature, features, feature_fetch, featurestore, fetch    -> kFeatureFetch
//   pre, preprocess, preprocessing                           -> kPreprocess
//   infer, inference, model, compute                         -> kInference
//   post, postprocess, postprocessing                        -> kPostprocess
//   queue, queue_wait, queueing, queuing                     -> kQueue
// nullopt for any other name.
std::optional<Stage> StageForServerTiming(std::string_view name);

// Most characters SanitizeStageName() returns.
inline constexpr size_t kMaxStageNameLength = 32;

// A name that is safe as a Prometheus label value and as part of a metric name: ASCII letters
// lower-cased, digits kept, every run of other bytes (punctuation, spaces, non-ASCII) turned into
// one '_', no leading or trailing '_', then cut to kMaxStageNameLength. "" when nothing usable
// is left. Idempotent. Note that the result may start with a digit.
std::string SanitizeStageName(std::string_view name);

// ---------------------------------------------------------------------------------------------
// Request framing and targets (RFC 9112)

// Why a request's header cannot be passed on safely, as the message of a 400 (after which the
// connection is closed); nullopt when it can. Checks, of a parsed header with `host_fields`
// Host fields (the last one's value `host`) and `coding_fields` Transfer-Encoding fields (the
// last one's value `coding`):
// - an HTTP/1.1 request has exactly one Host, and its value has only the characters of a host
//   and port (RFC 9112 3.2); an HTTP/1.0 one at most one;
// - a Transfer-Encoding is exactly "chunked", in one field, on HTTP/1.1: any other coding, or
//   chunked not last, leaves the body's end unknown to the gateway, and what follows could be
//   read as a second request (request smuggling; RFC 9112 6.1 and 6.3).
std::optional<std::string> RequestFramingProblem(unsigned version, size_t host_fields,
                                                 std::string_view host, size_t coding_fields,
                                                 std::string_view coding);

// The longest request target NormalizeTarget() takes (the header limit bounds it anyway).
inline constexpr size_t kMaxTargetBytes = 64 * 1024;

// A request target (path and optional "?query") with its path normalised as nginx does before
// routing: repeated slashes merged, "." and ".." segments resolved (also when written %2E, and
// with a ";parameter" after them, which Tomcat and Spring read as the same), the query kept as it
// is. An absolute-form target ("http://host/path", RFC 9112 3.2.2) becomes its path and query.
// nullopt when the target is already normal (the usual case: nothing is allocated).
// InvalidArgument, with a message for a 400, for a target that is neither a path nor absolute
// (`*`), is over kMaxTargetBytes, has a backslash in its path (raw or %5C, which some servers
// read as '/'), or whose ".." would climb above the root ("/../etc/passwd").
absl::StatusOr<std::optional<std::string>> NormalizeTarget(std::string_view target);

// The longest model name or version a request may give that becomes a label as it is.
inline constexpr size_t kMaxRequestLabelBytes = 128;

// Whether a value a request gives (a model name from a KServe path or an OpenAI body, a version
// from a path) may become a label value as it is.
enum class RequestLabelCheck : uint8_t {
  kOk,          // 1 to kMaxRequestLabelBytes bytes of [A-Za-z0-9._:/@+-]
  kEmpty,       // ""
  kTooLong,     // over kMaxRequestLabelBytes
  kCharacters,  // any other byte: spaces, quotes, control characters, non-ASCII
};
// Model names in the wild fit the set: "resnet50", "bert-base-uncased@2",
// "meta-llama/Llama-3.1-8B-Instruct", "gpt-4o:2024-05-13". Does not allocate.
RequestLabelCheck CheckRequestLabel(std::string_view value);

// ---------------------------------------------------------------------------------------------
// W3C Trace Context, level 1 (https://www.w3.org/TR/trace-context/)

struct TraceContext {
  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};  // the parent-id field of a traceparent
  uint8_t flags = 0;                 // trace-flags; bit 0 is `sampled`

  bool sampled() const { return (flags & 0x01) != 0; }
  std::string TraceIdHex() const;  // 32 lowercase hex digits
  std::string SpanIdHex() const;   // 16 lowercase hex digits

  friend bool operator==(const TraceContext&, const TraceContext&) = default;
};

// Parses a traceparent field value, as a W3C level 1 receiver must:
//   version "-" trace-id "-" parent-id "-" trace-flags, all lowercase hex (2, 32, 16, 2 digits).
// Rejects (nullopt): uppercase or non-hex digits, version "ff", a trace-id or parent-id of all
// zeros, and for version 00 any length other than 55. A later version (01..fe) is accepted when
// its first 55 characters parse as version 00 does and are followed by the end or a '-'; what
// comes after is ignored. Leading and trailing spaces and tabs (HTTP OWS) are ignored. The flags
// byte is kept whole (the unknown bits too), so a version 00 value formats back unchanged.
std::optional<TraceContext> ParseTraceparent(std::string_view value);

// Formats `context` as a version 00 traceparent (55 characters). Does not check for zero ids.
std::string FormatTraceparent(const TraceContext& context);

// Random, never all-zero ids for new traces and spans. Thread-safe and lock-free: each thread
// has its own generator (splitmix64) seeded once from std::random_device and a process-wide
// counter, so threads never share a sequence. A few nanoseconds a call. Not cryptographic,
// and a fork()ed child continues its parent's sequence in the forking thread.
std::array<uint8_t, 16> NewTraceId();
std::array<uint8_t, 8> NewSpanId();

// Lowercase hex of `bytes`, two digits a byte.
std::string HexEncode(std::span<const uint8_t> bytes);
// The same into `out` (2 * bytes.size() chars, no terminator); returns the end.
char* HexEncodeTo(std::span<const uint8_t> bytes, char* out);

// Decodes %XX escapes (hex digits in either case); with `plus_as_space`, '+' is a space as in
// query strings. nullopt when a '%' is not followed by two hex digits.
std::optional<std::string> PercentDecode(std::string_view text, bool plus_as_space = false);

// ---------------------------------------------------------------------------------------------
// KServe v2 / Triton inference protocol

// What a /v2/models/... request is about.
struct KServeTarget {
  std::string model;    // percent-decoded model name; never empty
  std::string version;  // percent-decoded version; "" when the path has none
  // "infer", "ready", or "" for the model metadata (GET /v2/models/{name}[/versions/{v}]).
  // Points at a string literal, never into the parsed path.
  std::string_view verb;
};

// Parses a request target of the form
//   /v2/models/{name}[/versions/{version}][/infer | /ready][?query]
// The query is ignored. Name and version are percent-decoded; nullopt when either is empty,
// ".", "..", has a bad %-escape, or decodes to a '/' or a control character (< 0x20, 0x7f).
// nullopt for every other path, including other suffixes (/stats, /config, /generate), empty
// segments and a trailing '/'.
std::optional<KServeTarget> ParseKServePath(std::string_view path);

// Deepest JSON nesting (objects and arrays) the body inspectors accept; deeper bodies are
// rejected before they are looked at further.
inline constexpr int kMaxJsonDepth = 64;

// The input size of a KServe v2 infer request: the sum over `inputs[*]` of the product of the
// input's `shape` (elements, not bytes; a shape of [] is a scalar, one element).
//
// With the binary tensor data extension the JSON is only the first `json_header_length` bytes
// of the body (the request's Inference-Header-Content-Length); without it the whole body is
// JSON. The JSON is read in one streaming pass (nlohmann SAX) without building a document, so
// large `data` arrays cost no memory. Other fields are not checked.
// Errors (InvalidArgument, with a message naming the field, e.g. "inputs[1].shape[0] is
// negative: -3", or "malformed JSON at byte 17: ..." with a 1-based offset; messages are short
// printable ASCII): json_header_length beyond the body, malformed JSON (a NUL byte included),
// nesting deeper than
// kMaxJsonDepth, a body that is not an object, no `inputs` or a duplicate one, `inputs` not an
// array, an input that is not an object or has no (or a duplicate) `shape`, a shape that is not
// an array of non-negative integers, and a product or sum above 2^64 - 1.
absl::StatusOr<uint64_t> KServeInputSize(std::string_view body,
                                         std::optional<size_t> json_header_length = std::nullopt);

// What the gateway wants from an OpenAI-compatible (vLLM) completion request.
struct OpenAIRequest {
  bool stream = false;  // `stream`; null or absent is false
  // The prompt's size: Unicode code points of its text, plus one per token id where the prompt
  // is given as token ids.
  uint64_t prompt_chars = 0;
  std::string model;  // `model`; "" when absent
};

// Inspects an OpenAI-compatible request body: /v1/chat/completions when `chat`, /v1/completions
// otherwise. Streaming pass as in KServeInputSize().
//   completions: `prompt` is a string, an array of strings, an array of token ids (integers), or
//     an array of such arrays (a batch); strings count their code points, token ids count 1.
//   chat: the sum over `messages[*].content`, where content is a string, null (0), or an array
//     of parts whose `text` strings count (parts without text, such as images, count 0).
// Errors (InvalidArgument, naming the field): malformed JSON, nesting deeper than kMaxJsonDepth,
// a body that is not an object, a missing `prompt` (completions) or `messages` (chat), any of
// the fields above with another type, and `stream` other than a boolean or null, `model` other
// than a string.
absl::StatusOr<OpenAIRequest> InspectOpenAIRequest(std::string_view body, bool chat);

// ---------------------------------------------------------------------------------------------
// Server-sent events (https://html.spec.whatwg.org/multipage/server-sent-events.html)

// Counts the events of a text/event-stream response as its bytes pass through, for first-token
// and inter-token timing.
//
// Follows the HTML parsing rules: lines end in CRLF, LF or CR (also when the pair is split
// between chunks), a leading byte order mark is skipped, lines starting with ':' are comments,
// and an event is dispatched at a blank line. Only events with at least one `data` field count;
// an event whose data is exactly `[DONE]` (OpenAI's end marker) sets done() and does not count.
// An unfinished event at the end of the stream never counts.
//
// Memory is constant whatever the input: the scanner keeps only the line state and what it has
// learnt about the current event, never the data. Not thread-safe; one per response.
class SseScanner {
 public:
  // Feeds the next bytes of the stream. Returns the number of events completed inside `chunk`.
  size_t Feed(std::string_view chunk);

  // Whether a `data: [DONE]` event has been seen.
  bool done() const { return done_; }
  // Events counted so far (the sum of Feed()'s results).
  uint64_t events() const { return events_; }

 private:
  enum class Line : uint8_t {
    kStart,       // nothing on this line yet
    kName,        // inside a field name that matches "data" so far (name_matched_ bytes)
    kValueStart,  // just after "data:"; one space may follow
    kValue,       // inside a data value that matches "[DONE]" so far (value_matched_ bytes)
    kData,        // inside a data value that is not "[DONE]"
    kIgnore,      // inside a comment or another field
  };

  // Ends the current line; true when that completed a counted event.
  bool EndLine();
  bool Dispatch();

  Line line_ = Line::kStart;
  uint8_t bom_matched_ = 0;   // bytes of a leading byte order mark seen so far
  bool bom_decided_ = false;  // past the point where a byte order mark could be
  bool after_cr_ = false;     // the last byte was CR: a following LF belongs to it
  uint8_t name_matched_ = 0;
  uint8_t value_matched_ = 0;
  uint8_t data_lines_ = 0;  // data fields in the current event, saturating at 2
  bool first_data_is_done_ = false;
  bool done_ = false;
  uint64_t events_ = 0;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_PROTOCOL_H_
