// OTLP trace export: the span the gateway builds, its OTLP/HTTP JSON encoding, and an exporter
// that batches spans on a background thread and POSTs them to a collector, so the data path never
// waits for the collector.
#ifndef TAILGUARD_SERVER_OTLP_H_
#define TAILGUARD_SERVER_OTLP_H_

#include <array>
#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <random>
#include <span>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <variant>
#include <vector>

#include "absl/status/statusor.h"
#include "common/mutex.h"
#include "tailguard/clock.h"

namespace tailguard::server {

// One key-value attribute of a span or of the resource. The alternative held decides the OTLP
// value type: stringValue, intValue, doubleValue or boolValue.
struct SpanAttribute {
  std::string key;
  std::variant<std::string, int64_t, double, bool> value;
};

// A finished span. Plain data; the caller fills it and hands it to OtlpExporter::Export().
struct Span {
  enum class Kind : uint8_t { kInternal = 1, kServer = 2, kClient = 3 };  // OTLP SpanKind values

  std::array<uint8_t, 16> trace_id{};
  std::array<uint8_t, 8> span_id{};
  std::array<uint8_t, 8> parent_span_id{};  // all zero: a root span
  std::string name;
  Kind kind = Kind::kInternal;
  int64_t start_unix_nano = 0;  // wall clock, nanoseconds since 1970-01-01T00:00:00Z
  int64_t end_unix_nano = 0;
  std::vector<SpanAttribute> attributes;
  // true: OTLP status code 2 (error) with status_message as its message. false: status unset
  // (code 0), as OpenTelemetry recommends for successful server spans; status_message is ignored.
  bool error = false;
  std::string status_message;
};

// Encodes `spans` as one OTLP/HTTP JSON ExportTraceServiceRequest (the body POSTed to
// /v1/traces): one resourceSpans entry whose resource carries service.name = `service_name`
// followed by `resource_attributes` (an entry whose key is "service.name" is skipped), and one
// scopeSpans entry with scope {"name": "tailguard", "version": <tailguard version>} holding the
// spans in order. The encoding follows the OTLP JSON mapping:
//   - field names are lowerCamelCase; enums (kind, status code) are integers;
//   - traceId, spanId and parentSpanId are lowercase hex (32, 16 and 16 digits), not base64;
//     parentSpanId is omitted for a root span;
//   - startTimeUnixNano, endTimeUnixNano and intValue are decimal strings (a negative time is
//     written as "0");
//   - doubleValue is a JSON number, or the string "NaN", "Infinity" or "-Infinity";
//   - status is omitted unless Span::error, then {"code": 2, "message": ...} (no message when
//     status_message is empty).
// Strings are escaped for JSON; invalid UTF-8 is replaced by U+FFFD. Throws only std::bad_alloc.
std::string EncodeOtlpJson(std::span<const Span> spans, std::string_view service_name,
                           std::span<const SpanAttribute> resource_attributes = {});

struct OtlpOptions {
  // The collector's full URL, with the signal path: e.g. http://127.0.0.1:4318/v1/traces.
  // Must be an http:// or https:// URL with a host. Required; no default. Proxies follow
  // libcurl's environment variables (https_proxy, http_proxy, no_proxy).
  std::string endpoint;
  // The resource's service.name. Must not be empty. Default "tailguard".
  std::string service_name = "tailguard";
  // Extra HTTP headers sent with every request, e.g. {"Authorization", "Bearer ..."}. Names must
  // be non-empty tokens other than Content-Type and Content-Length (the exporter sets those);
  // values must not contain CR, LF or NUL. Never logged, never quoted in errors. Default none.
  std::vector<std::pair<std::string, std::string>> headers;
  // Most spans the exporter holds at once, waiting or being sent. Export() refuses a span beyond
  // it. Must be > 0. Default 4096.
  size_t queue_capacity = 4096;
  // Most spans in one request. Must be > 0; values above queue_capacity act as queue_capacity.
  // Default 512.
  size_t max_batch = 512;
  // How long the sender waits for a full batch before it sends what it has: while the collector
  // keeps up, no span waits much longer than this. Must be > 0. Default 1 s.
  Duration flush_interval = std::chrono::seconds(1);
  // Limit on one HTTP request, connection included. Must be > 0. Default 5 s.
  Duration timeout = std::chrono::seconds(5);
  // Retries of a batch after a retryable failure (HTTP 429, 502, 503, 504, or a transport error
  // such as a refused connection or a timeout) before the batch is dropped. Must be >= 0.
  // Default 3.
  int max_retries = 3;
  // Wait before the first retry; it doubles for each further retry (at most 30 s) and gets up to
  // half as much again of random jitter. A Retry-After header in seconds replaces it (capped at
  // 30 s). Must be >= 0. Default 200 ms.
  Duration initial_backoff = std::chrono::milliseconds(200);
};

// Cumulative counters since Create(). Each is read on its own, so one stats() call is not an
// atomic snapshot; once Shutdown() has returned, queued == exported + dropped_failed and the
// batches are batches_sent + batches_failed.
struct OtlpStats {
  uint64_t queued = 0;              // spans accepted by Export()
  uint64_t exported = 0;            // spans in batches the collector acknowledged (2xx)
  uint64_t dropped_queue_full = 0;  // spans Export() refused: queue full or exporter shut down
  uint64_t dropped_failed = 0;      // accepted spans given up: failed, retries spent, or deadline
  uint64_t batches_sent = 0;        // requests acknowledged with 2xx
  uint64_t batches_failed = 0;      // batches given up (their spans are in dropped_failed)
  uint64_t retries = 0;             // repeated attempts of a batch
};

// Sends spans to an OTLP/HTTP collector as JSON (Content-Type: application/json).
//
// Thread-safe. Export() is for the data path: it takes a mutex that the sender only ever holds
// for O(1) (it swaps the whole queue out), never waits for I/O, and drops the span when the
// exporter already holds queue_capacity spans.
//
// Sending: one background thread, owned by the exporter, takes the queue when max_batch spans
// are waiting (Export() wakes it) or flush_interval after its previous send, whichever comes
// first, and POSTs it in requests of at most max_batch spans, one at a time over a reused
// connection, without holding the queue mutex. A 2xx answer is success. HTTP 429, 502, 503, 504
// and transport errors are retried with exponential backoff and jitter (or after Retry-After
// seconds) up to max_retries times; any other answer, or running out of retries, drops the batch
// and counts it. Spans count against queue_capacity until their request is over, so a slow or
// absent collector turns into counted drops at Export(), never into memory growth or waiting.
class OtlpExporter {
 public:
  // Validates `options` and starts the sender thread.
  // Errors: InvalidArgument for an endpoint that is not an http:// or https:// URL with a host,
  // a zero queue_capacity or max_batch, a non-positive flush_interval or timeout, a negative
  // max_retries or initial_backoff, an empty service_name, or a malformed header;
  // FailedPrecondition for an https:// endpoint when libcurl has no TLS support; Internal when
  // libcurl cannot be initialised.
  static absl::StatusOr<std::unique_ptr<OtlpExporter>> Create(OtlpOptions options);

  // Calls Shutdown(options().timeout). REQUIRES: no Export() call is running or follows.
  ~OtlpExporter();

  OtlpExporter(const OtlpExporter&) = delete;
  OtlpExporter& operator=(const OtlpExporter&) = delete;

  // Queues a finished span for sending. Returns false, and counts it in dropped_queue_full, when
  // the exporter already holds queue_capacity spans or has been shut down. Never blocks on I/O.
  bool Export(Span span);

  // Stops accepting spans, sends what is queued (with retries) until `deadline` from now has
  // passed, drops and counts whatever is left then, and joins the sender thread. An HTTP request
  // in flight at the deadline is aborted within about a second. Export() calls that race with it
  // are either sent or refused. Idempotent: a later call returns once the first has finished.
  void Shutdown(Duration deadline);

  OtlpStats stats() const;

  const OtlpOptions& options() const { return options_; }

 private:
  explicit OtlpExporter(OtlpOptions options);

  class Sender;  // the sender thread's libcurl state, defined in otlp.cc

  void Run();
  // Sends one request's worth of spans with retries; counts the outcome.
  void SendBatch(Sender& sender, std::span<const Span> batch);
  // Waits until `until`. Returns false, early, once Shutdown()'s deadline has passed.
  // REQUIRES: called on the sender thread, mu_ not held.
  bool WaitUntil(MonoTime until);
  // True once Shutdown()'s deadline has passed.
  bool PastShutdownDeadline() const;
  // The delay before retry number `retry` (0 for the first), with jitter.
  Duration Backoff(int retry);

  // Constant after construction.
  const OtlpOptions options_;
  const size_t batch_size_;  // min(max_batch, queue_capacity)

  mutable Mutex mu_;
  CondVar cv_;  // wakes the sender: full batch, shutdown
  std::vector<Span> queue_ ABSL_GUARDED_BY(mu_);
  size_t held_ ABSL_GUARDED_BY(mu_) = 0;  // spans queued or being sent
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  // The shutdown deadline (steady-clock nanoseconds), or INT64_MAX before Shutdown(). Atomic
  // because libcurl's progress callback polls it during a request without taking mu_; relaxed is
  // enough as it is a self-contained number and a late read only delays the abort by one poll.
  std::atomic<int64_t> abort_at_ns_{INT64_MAX};

  // Counters, written by Export() and the sender and read by stats(); relaxed because each is an
  // independent count, only ever summed or displayed.
  std::atomic<uint64_t> queued_{0};
  std::atomic<uint64_t> exported_{0};
  std::atomic<uint64_t> dropped_queue_full_{0};
  std::atomic<uint64_t> dropped_failed_{0};
  std::atomic<uint64_t> batches_sent_{0};
  std::atomic<uint64_t> batches_failed_{0};
  std::atomic<uint64_t> retries_{0};

  std::mt19937_64 jitter_;  // used by the sender thread only

  Mutex shutdown_mu_;  // serialises Shutdown(), which joins thread_
  std::thread thread_;
};

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_OTLP_H_
