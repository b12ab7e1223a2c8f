// The one HTTP client of tailguard (libcurl), for everything it sends out: OTLP spans, alert
// notifications, and the Prometheus queries of `tailguard watch`. One easy handle, reset for each
// call and reused, so that connections stay open between calls. http:// and https:// only; no
// redirect is followed; the usual proxy environment variables apply. It never logs, and its
// errors never quote a URL or a header value (they can carry tokens).
//
// Not thread-safe: one client per thread. SetCancelled() is the one call another thread may make.
// Its own library (tailguard_http_client), so that the SDK does not link libcurl.
#ifndef TAILGUARD_COMMON_HTTP_CLIENT_H_
#define TAILGUARD_COMMON_HTTP_CLIENT_H_

#include <atomic>
#include <cstddef>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "tailguard/clock.h"

namespace tailguard {

struct HttpCall {
  std::string_view method = "POST";  // GET, POST or PUT
  std::string_view url;
  const std::vector<std::pair<std::string, std::string>>* headers = nullptr;  // may be null
  std::string_view body;                        // sent with POST and PUT
  Duration timeout = std::chrono::seconds(10);  // the whole call, connecting included
  // What is kept of the answer's body; the rest is read and dropped.
  size_t max_body_bytes = 64 * 1024;
  // Upper bound on a reported Retry-After.
  Duration max_retry_after = std::chrono::hours(1);
};

struct HttpReply {
  // Empty when an answer came (whatever its status). Otherwise why not: the call was refused
  // before it went out (a bad method, URL or header), or the transport failed (refused, reset,
  // timed out, TLS). Never quotes the URL or a header value.
  std::string error;
  // With `error`: another attempt would fail the same way (a malformed call; configuration,
  // TLS-trust and local faults). Refused, reset, timed out and name resolution are not.
  bool permanent = false;
  // With `error`: cut short by SetCancelled() or the abort check; nothing is known of the
  // outcome.
  bool aborted = false;
  long status = 0;   // the HTTP status; 0 without an answer
  std::string body;  // the first HttpCall::max_body_bytes of it
  // The answer's "Retry-After: <seconds>", when it had one (an HTTP-date is not read).
  std::optional<Duration> retry_after;
  Duration elapsed{};  // how long the call took (steady clock)

  bool answered() const { return error.empty(); }
};

class HttpClient {
 public:
  HttpClient();
  ~HttpClient();
  HttpClient(const HttpClient&) = delete;
  HttpClient& operator=(const HttpClient&) = delete;

  // Sends `call` and waits for its answer (at most call.timeout). Never throws.
  HttpReply Send(const HttpCall& call);

  // While on, the call in flight ends within about a second and later ones at once, aborted:
  // for a shutdown that must not wait out a receiver's timeout. Thread-safe.
  void SetCancelled(bool on) { cancelled_.store(on, std::memory_order_release); }
  // Another reason to abort, looked at about once a second and whenever data moves (the OTLP
  // exporter's shutdown deadline). Called on the sending thread.
  void SetAbortCheck(std::function<bool()> check) { abort_check_ = std::move(check); }

 private:
  friend struct HttpClientCallbacks;  // libcurl's callbacks (http_client.cc)

  void* curl_ = nullptr;  // CURL*; null when libcurl could not be initialised
  std::atomic<bool> cancelled_{false};
  std::function<bool()> abort_check_;
  // Per call.
  size_t max_body_ = 0;
  Duration max_retry_after_{};
  std::string body_;
  std::optional<Duration> retry_after_;
};

// Whether `url` is an http:// or https:// URL with a host, and nothing that could smuggle a
// header or a second line (spaces, control characters, "http:///x"); sets `*https`.
// InvalidArgument "<field>: must be an http:// or https:// URL with a host" otherwise: the URL
// is never quoted, as it may carry credentials.
absl::Status CheckHttpUrl(std::string_view field, const std::string& url, bool* https);
// Whether libcurl initialised (once per process), and whether it speaks TLS.
bool HttpClientReady();
bool HttpClientHasTls();

// The delay of a "Retry-After: <seconds>" header line (as libcurl's header callback gives it,
// CRLF included), at most `max`; nullopt for any other line or an HTTP-date.
std::optional<Duration> ParseRetryAfter(std::string_view line, Duration max);

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_HTTP_CLIENT_H_
