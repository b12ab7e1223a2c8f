// Sends one rendered HttpRequest and classifies the answer: delivered, retryable or permanent.
// The interface lets the dispatcher's tests use a fake; NewCurlSender() is the real one.
#ifndef TAILGUARD_ALERT_NOTIFY_HTTP_SENDER_H_
#define TAILGUARD_ALERT_NOTIFY_HTTP_SENDER_H_

#include <memory>
#include <optional>
#include <string>

#include "alert/notify/render.h"
#include "tailguard/clock.h"

namespace tailguard::notify {

// The outcome of one attempt.
//   delivered: 2xx (and, for Check::kWeComErrcode, errcode 0). error is empty.
//   retryable: transport errors (refused, reset, timed out, no answer), 408, 425, 429, 5xx,
//              WeCom errcode 45009 (rate limit) and -1 (system busy).
//   permanent: everything else: other 4xx, 3xx (redirects are not followed), other WeCom
//              errcodes, a WeCom answer without an errcode, a request that is malformed (bad
//              URL, a header with CR or LF). Another attempt would fail the same way.
struct SendResult {
  int http_status = 0;  // 0: no response
  // Empty when delivered. Otherwise the transport error, or "HTTP 400: " / "wecom errcode
  // 93000: " and a short excerpt (at most 200 bytes, valid UTF-8, one line) of the response
  // body. Never contains the URL or header values.
  std::string error;
  bool delivered = false;
  bool retryable = false;  // only when not delivered
  Duration elapsed{};      // wall time the attempt took
  // The answer's Retry-After in seconds, when it had one (429 and 503 often do).
  std::optional<Duration> retry_after;
  // The attempt was cut short by SetCancelled(true): nothing is known of its outcome.
  bool cancelled = false;
};

// Sends requests over HTTP.
class HttpSender {
 public:
  virtual ~HttpSender() = default;
  // Sends `request`, giving up after `timeout` (connection included). Never throws.
  virtual SendResult Send(const HttpRequest& request, Duration timeout) = 0;
  // While on, the attempt in flight ends within about a second and later ones at once, with
  // SendResult::cancelled set: for a shutdown that must not wait out a receiver's timeout.
  // Thread-safe (the one call that is). The default does nothing.
  virtual void SetCancelled(bool on) {}
};

// A libcurl sender with one easy handle, reused so that connections stay open between requests.
// http:// and https:// only; follows no redirects; honours the usual proxy environment
// variables. Never logs (so never leaks headers or URL query strings).
// Not thread-safe: one sender per delivery thread.
std::unique_ptr<HttpSender> NewCurlSender();

}  // namespace tailguard::notify

#endif  // TAILGUARD_ALERT_NOTIFY_HTTP_SENDER_H_
