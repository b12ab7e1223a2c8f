// The notification sender: the one HTTP client (common/http_client.h), and the delivered /
// retryable / permanent classification of its answers.
#include "alert/notify/http_sender.h"

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/http_client.h"
#include "common/strings.h"

namespace tailguard::notify {
namespace {

// How much of a response body is kept: enough for any WeCom answer and for an excerpt.
constexpr size_t kMaxResponseBytes = 16 * 1024;
// The longest excerpt of a response body in SendResult::error.
constexpr size_t kMaxExcerptBytes = 200;
// Upper bound on a reported Retry-After.
constexpr Duration kMaxRetryAfter = std::chrono::hours(1);

// WeCom robot errcodes worth another attempt: 45009 "api freq out of limit" (20 messages a
// minute per robot), -1 "system busy".
constexpr int64_t kWeComRateLimited = 45009;
constexpr int64_t kWeComBusy = -1;

// Retryable HTTP statuses: timeouts, "too early", throttling and server-side failures.
bool IsRetryableStatus(long status) {
  return status == 408 || status == 425 || status == 429 || (status >= 500 && status <= 599);
}

// The sender over the one HTTP client (common/http_client.h): the call as the receiver's
// request says, and the answer classified as delivered, retryable or permanent.
class CurlSender final : public HttpSender {
 public:
  // HttpSender
  SendResult Send(const HttpRequest& request, Duration timeout) override {
    HttpCall call;
    call.method = request.method;
    call.url = request.url;
    call.headers = &request.headers;
    call.body = request.body;
    call.timeout = timeout;
    call.max_body_bytes = kMaxResponseBytes;
    call.max_retry_after = kMaxRetryAfter;
    HttpReply reply = client_.Send(call);
    SendResult r;
    r.elapsed = reply.elapsed;
    if (!reply.answered()) {
      r.error = OneLine(reply.error, kMaxExcerptBytes);
      r.cancelled = reply.aborted;
      r.retryable = !reply.permanent;
      return r;
    }
    r.http_status = static_cast<int>(reply.status);
    r.retry_after = reply.retry_after;
    if (reply.status < 200 || reply.status > 299) {
      r.retryable = IsRetryableStatus(reply.status);
      r.error = OneLine(Cat("HTTP ", reply.status, reply.body.empty() ? "" : ": ", reply.body),
                        kMaxExcerptBytes);
      return r;
    }
    if (request.check == HttpRequest::Check::kWeComErrcode) {
      ClassifyWeCom(reply.body, r);
      return r;
    }
    r.delivered = true;
    return r;
  }
  void SetCancelled(bool on) override { client_.SetCancelled(on); }

 private:
  // WeCom answers HTTP 200 with {"errcode":N,"errmsg":"..."}.
  static void ClassifyWeCom(const std::string& body_, SendResult& r) {
    const nlohmann::json answer = nlohmann::json::parse(body_, nullptr, /*allow_exceptions=*/false);
    const bool has_code =
        answer.is_object() && answer.contains("errcode") && answer["errcode"].is_number_integer();
    if (!has_code) {
      r.error = OneLine(Cat("wecom answer without errcode: ", body_), kMaxExcerptBytes);
      return;
    }
    const int64_t errcode = answer["errcode"].get<int64_t>();
    if (errcode == 0) {
      r.delivered = true;
      return;
    }
    std::string errmsg;
    if (answer.contains("errmsg") && answer["errmsg"].is_string()) {
      errmsg = answer["errmsg"].get<std::string>();
    }
    r.error = OneLine(Cat("wecom errcode ", errcode, ": ", errmsg), kMaxExcerptBytes);
    r.retryable = errcode == kWeComRateLimited || errcode == kWeComBusy;
  }

  HttpClient client_;
};

}  // namespace

std::unique_ptr<HttpSender> NewCurlSender() { return std::make_unique<CurlSender>(); }

}  // namespace tailguard::notify
