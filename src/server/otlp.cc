// OTLP/HTTP JSON trace export: the encoder (nlohmann ordered_json, so fields come out in the
// proto's order) and the exporter's sender thread (the one HTTP client, common/http_client.h).
#include "server/otlp.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cmath>
#include <limits>
#include <nlohmann/json.hpp>
#include <optional>

#include "absl/status/status.h"
#include "common/http_client.h"
#include "common/strings.h"
#include "tailguard/version.h"

namespace tailguard::server {
namespace {

using Json = nlohmann::ordered_json;

// Upper bound on one wait between retries, from the backoff or from Retry-After.
constexpr Duration kMaxRetryWait = std::chrono::seconds(30);

template <size_t N>
std::string Hex(const std::array<uint8_t, N>& bytes) {
  static constexpr char kDigits[] = "0123456789abcdef";
  std::string out(2 * N, '0');
  for (size_t i = 0; i < N; ++i) {
    out[2 * i] = kDigits[bytes[i] >> 4];
    out[2 * i + 1] = kDigits[bytes[i] & 0xf];
  }
  return out;
}

template <size_t N>
bool IsZero(const std::array<uint8_t, N>& bytes) {
  return std::all_of(bytes.begin(), bytes.end(), [](uint8_t b) { return b == 0; });
}

// fixed64 nanosecond timestamps are decimal strings in OTLP JSON; a negative time has no encoding.
std::string UnixNano(int64_t ns) { return std::to_string(std::max<int64_t>(ns, 0)); }

Json AnyValue(const SpanAttribute& a) {
  Json v = Json::object();
  std::visit(
      [&v](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          v["stringValue"] = x;
        } else if constexpr (std::is_same_v<T, int64_t>) {
          v["intValue"] = std::to_string(x);  // int64 is a decimal string in proto3 JSON
        } else if constexpr (std::is_same_v<T, double>) {
          // JSON has no NaN or infinities; proto3 JSON spells them as strings.
          if (std::isnan(x)) {
            v["doubleValue"] = "NaN";
          } else if (std::isinf(x)) {
            v["doubleValue"] = x > 0 ? "Infinity" : "-Infinity";
          } else {
            v["doubleValue"] = x;
          }
        } else {
          v["boolValue"] = x;
        }
      },
      a.value);
  return v;
}

Json KeyValue(const SpanAttribute& a) {
  Json kv = Json::object();
  kv["key"] = a.key;
  kv["value"] = AnyValue(a);
  return kv;
}

Json EncodeSpan(const Span& s) {
  Json j = Json::object();
  j["traceId"] = Hex(s.trace_id);
  j["spanId"] = Hex(s.span_id);
  if (!IsZero(s.parent_span_id)) j["parentSpanId"] = Hex(s.parent_span_id);
  j["name"] = s.name;
  j["kind"] = static_cast<int>(s.kind);
  j["startTimeUnixNano"] = UnixNano(s.start_unix_nano);
  j["endTimeUnixNano"] = UnixNano(s.end_unix_nano);
  Json attributes = Json::array();
  for (const SpanAttribute& a : s.attributes) attributes.push_back(KeyValue(a));
  j["attributes"] = std::move(attributes);
  if (s.error) {
    Json status = Json::object();
    status["code"] = 2;  // STATUS_CODE_ERROR
    if (!s.status_message.empty()) status["message"] = s.status_message;
    j["status"] = std::move(status);
  }
  return j;
}

// RFC 9110 token characters, for header names.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

int64_t SteadyNowNs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

// now + d, saturating instead of overflowing for huge durations.
MonoTime After(Duration d) {
  const MonoTime now = std::chrono::steady_clock::now();
  if (d > MonoTime::max() - now) return MonoTime::max();
  return now + std::chrono::duration_cast<MonoTime::duration>(d);
}

absl::Status ValidateOptions(const OtlpOptions& o, bool* https) {
  if (absl::Status s = CheckHttpUrl("endpoint", o.endpoint, https); !s.ok()) return s;
  if (o.service_name.empty()) return absl::InvalidArgumentError("service_name: must not be empty");
  if (o.queue_capacity == 0) return absl::InvalidArgumentError("queue_capacity: must be > 0");
  if (o.max_batch == 0) return absl::InvalidArgumentError("max_batch: must be > 0");
  if (o.flush_interval <= Duration::zero()) {
    return absl::InvalidArgumentError("flush_interval: must be > 0");
  }
  if (o.timeout <= Duration::zero()) return absl::InvalidArgumentError("timeout: must be > 0");
  if (o.max_retries < 0) return absl::InvalidArgumentError("max_retries: must be >= 0");
  if (o.initial_backoff < Duration::zero()) {
    return absl::InvalidArgumentError("initial_backoff: must be >= 0");
  }
  for (size_t i = 0; i < o.headers.size(); ++i) {
    // Errors give the header's index, never its value (it may be a secret).
    const auto& [name, value] = o.headers[i];
    if (!IsToken(name)) {
      return absl::InvalidArgumentError(Cat("headers[", i, "]: name is not an HTTP token"));
    }
    if (EqualsIgnoreCase(name, "Content-Type") || EqualsIgnoreCase(name, "Content-Length")) {
      return absl::InvalidArgumentError(Cat("headers[", i, "]: ", name, " is set by the exporter"));
    }
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return absl::InvalidArgumentError(Cat("headers[", i, "]: value contains CR, LF or NUL"));
    }
  }
  return absl::OkStatus();
}

// Retryable per the OTLP/HTTP specification: throttling and transient gateway answers.
bool IsRetryableStatus(long status) {
  return status == 429 || status == 502 || status == 503 || status == 504;
}

}  // namespace

std::string EncodeOtlpJson(std::span<const Span> spans, std::string_view service_name,
                           std::span<const SpanAttribute> resource_attributes) {
  Json resource_attrs = Json::array();
  resource_attrs.push_back(KeyValue({"service.name", std::string(service_name)}));
  for (const SpanAttribute& a : resource_attributes) {
    if (a.key != "service.name") resource_attrs.push_back(KeyValue(a));
  }
  Json encoded_spans = Json::array();
  for (const Span& s : spans) encoded_spans.push_back(EncodeSpan(s));

  Json scope = Json::object();
  scope["name"] = "tailguard";
  scope["version"] = TAILGUARD_VERSION_STRING;
  Json scope_spans = Json::object();
  scope_spans["scope"] = std::move(scope);
  scope_spans["spans"] = std::move(encoded_spans);
  Json resource = Json::object();
  resource["attributes"] = std::move(resource_attrs);
  Json resource_spans = Json::object();
  resource_spans["resource"] = std::move(resource);
  resource_spans["scopeSpans"] = Json::array({std::move(scope_spans)});
  Json request = Json::object();
  request["resourceSpans"] = Json::array({std::move(resource_spans)});
  // `replace` turns invalid UTF-8 into U+FFFD instead of throwing.
  return request.dump(-1, ' ', false, Json::error_handler_t::replace);
}

// The sender thread's HTTP client (common/http_client.h), reused for every request so the
// connection stays open. Not thread-safe; lives on the sender thread only.
class OtlpExporter::Sender {
 public:
  Sender(const OtlpOptions& options, const std::atomic<int64_t>& abort_at_ns)
      : endpoint_(options.endpoint) {
    headers_.emplace_back("Content-Type", "application/json");
    for (const auto& [name, value] : options.headers) headers_.emplace_back(name, value);
    // Aborts a request that outlives Shutdown()'s deadline.
    client_.SetAbortCheck(
        [&abort_at_ns] { return SteadyNowNs() >= abort_at_ns.load(std::memory_order_relaxed); });
  }

  // POSTs `body`, giving up after `timeout` or once the shutdown deadline passes.
  HttpReply Post(const std::string& body, Duration timeout) {
    HttpCall call;
    call.method = "POST";
    call.url = endpoint_;
    call.headers = &headers_;
    call.body = body;
    call.timeout = timeout;
    call.max_body_bytes = 0;  // the collector's answer is not read
    call.max_retry_after = kMaxRetryWait;
    return client_.Send(call);
  }

 private:
  const std::string endpoint_;
  std::vector<std::pair<std::string, std::string>> headers_;
  HttpClient client_;
};

absl::StatusOr<std::unique_ptr<OtlpExporter>> OtlpExporter::Create(OtlpOptions options) {
  if (!HttpClientReady()) return absl::InternalError("libcurl initialisation failed");
  bool https = false;
  if (absl::Status s = ValidateOptions(options, &https); !s.ok()) return s;
  if (https && !HttpClientHasTls()) {
    return absl::FailedPreconditionError("endpoint: https:// but libcurl has no TLS support");
  }
  std::unique_ptr<OtlpExporter> exporter(new OtlpExporter(std::move(options)));
  try {
    exporter->thread_ = std::thread(&OtlpExporter::Run, exporter.get());
  } catch (const std::system_error& e) {
    return absl::ResourceExhaustedError(Cat("cannot start the OTLP sender thread: ", e.what()));
  }
  return exporter;
}

OtlpExporter::OtlpExporter(OtlpOptions options)
    : options_(std::move(options)),
      batch_size_(std::min(options_.max_batch, options_.queue_capacity)),
      jitter_(std::random_device{}()) {
  queue_.reserve(std::min<size_t>(batch_size_, 1024));
}

OtlpExporter::~OtlpExporter() { Shutdown(options_.timeout); }

bool OtlpExporter::Export(Span span) {
  bool wake = false;
  {
    MutexLock lock(&mu_);
    if (stopping_ || held_ >= options_.queue_capacity) {
      dropped_queue_full_.fetch_add(1, std::memory_order_relaxed);
      return false;
    }
    queue_.push_back(std::move(span));
    ++held_;
    queued_.fetch_add(1, std::memory_order_relaxed);
    wake = queue_.size() == batch_size_;  // once per batch, not on every span after it
  }
  if (wake) cv_.Signal();
  return true;
}

void OtlpExporter::Shutdown(Duration deadline) {
  MutexLock shutdown_lock(&shutdown_mu_);
  if (!thread_.joinable()) return;
  const int64_t now = SteadyNowNs();
  const int64_t d = std::max<int64_t>(deadline.count(), 0);
  // Stored before stopping_ is set under mu_, so the sender sees it once it sees stopping_.
  abort_at_ns_.store(d >= std::numeric_limits<int64_t>::max() - now
                         ? std::numeric_limits<int64_t>::max()
                         : now + d,
                     std::memory_order_relaxed);
  {
    MutexLock lock(&mu_);
    stopping_ = true;
  }
  cv_.SignalAll();
  thread_.join();
}

OtlpStats OtlpExporter::stats() const {
  OtlpStats s;
  s.queued = queued_.load(std::memory_order_relaxed);
  s.exported = exported_.load(std::memory_order_relaxed);
  s.dropped_queue_full = dropped_queue_full_.load(std::memory_order_relaxed);
  s.dropped_failed = dropped_failed_.load(std::memory_order_relaxed);
  s.batches_sent = batches_sent_.load(std::memory_order_relaxed);
  s.batches_failed = batches_failed_.load(std::memory_order_relaxed);
  s.retries = retries_.load(std::memory_order_relaxed);
  return s;
}

void OtlpExporter::Run() {
  Sender sender(options_, abort_at_ns_);
  std::vector<Span> batch;
  MonoTime next_flush = After(options_.flush_interval);
  while (true) {
    {
      MutexLock lock(&mu_);
      while (!stopping_ && queue_.size() < batch_size_ &&
             std::chrono::steady_clock::now() < next_flush) {
        cv_.WaitUntil(&mu_, next_flush);
      }
      if (queue_.empty()) {
        if (stopping_) return;
        next_flush = After(options_.flush_interval);
        continue;
      }
      // O(1) under the lock: Export() keeps appending to the emptied vector.
      batch.swap(queue_);
    }
    for (size_t i = 0; i < batch.size(); i += batch_size_) {
      const std::span<const Span> chunk =
          std::span<const Span>(batch).subspan(i, std::min(batch_size_, batch.size() - i));
      SendBatch(sender, chunk);
      MutexLock lock(&mu_);
      held_ -= chunk.size();
    }
    batch.clear();
    next_flush = After(options_.flush_interval);
  }
}

void OtlpExporter::SendBatch(Sender& sender, std::span<const Span> batch) {
  const std::string body = EncodeOtlpJson(batch, options_.service_name);
  for (int attempt = 0; !PastShutdownDeadline(); ++attempt) {
    // A request never outlives the shutdown deadline (the progress callback enforces it too).
    Duration timeout = options_.timeout;
    const int64_t abort_at = abort_at_ns_.load(std::memory_order_relaxed);
    if (abort_at != std::numeric_limits<int64_t>::max()) {
      timeout = std::min(timeout, Duration(abort_at - SteadyNowNs()));
    }
    const HttpReply r = sender.Post(body, timeout);
    if (r.answered() && r.status >= 200 && r.status < 300) {
      batches_sent_.fetch_add(1, std::memory_order_relaxed);
      exported_.fetch_add(batch.size(), std::memory_order_relaxed);
      return;
    }
    const bool retryable = r.answered() ? IsRetryableStatus(r.status) : !r.aborted && !r.permanent;
    if (!retryable || attempt >= options_.max_retries) break;
    const Duration wait = r.retry_after.has_value() ? *r.retry_after : Backoff(attempt);
    if (!WaitUntil(After(wait))) break;
    retries_.fetch_add(1, std::memory_order_relaxed);
  }
  batches_failed_.fetch_add(1, std::memory_order_relaxed);
  dropped_failed_.fetch_add(batch.size(), std::memory_order_relaxed);
}

Duration OtlpExporter::Backoff(int retry) {
  Duration d = options_.initial_backoff;
  for (int i = 0; i < retry && d < kMaxRetryWait; ++i) d *= 2;
  d = std::min(d, kMaxRetryWait);
  // Jitter spreads the retries of many gateways that lost the same collector at once.
  std::uniform_int_distribution<int64_t> jitter(0, d.count() / 2);
  return d + Duration(jitter(jitter_));
}

bool OtlpExporter::WaitUntil(MonoTime until) {
  MutexLock lock(&mu_);
  while (true) {
    if (PastShutdownDeadline()) return false;
    if (std::chrono::steady_clock::now() >= until) return true;
    // Shutdown() notifies under a changed stopping_, so the deadline is picked up at once.
    MonoTime wake = until;
    if (stopping_) {
      wake = std::min(wake, MonoTime(Duration(abort_at_ns_.load(std::memory_order_relaxed))));
    }
    cv_.WaitUntil(&mu_, wake);
  }
}

bool OtlpExporter::PastShutdownDeadline() const {
  return SteadyNowNs() >= abort_at_ns_.load(std::memory_order_relaxed);
}

}  // namespace tailguard::server
