// The libcurl sender: one easy handle, reset and reconfigured for every request (curl keeps
// the connection cache across resets), and the delivered / retryable / permanent classification.
#include "alert/notify/http_sender.h"

#include <curl/curl.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <charconv>
#include <limits>
#include <mutex>
#include <nlohmann/json.hpp>

#include "common/curl_util.h"
#include "common/strings.h"

#ifndef TAILGUARD_VERSION
#define TAILGUARD_VERSION "0.1.0"
#endif

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

// libcurl's global state is initialised once per process, before the first handle.
CURLcode GlobalInit() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return result;
}

// RFC 9110 token characters, for header names.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// Retryable HTTP statuses: timeouts, "too early", throttling and server-side failures.
bool IsRetryableStatus(long status) {
  return status == 408 || status == 425 || status == 429 || (status >= 500 && status <= 599);
}

// Why `request` cannot be sent at all; "" when it can. Never quotes the URL or header values.
std::string Malformed(const HttpRequest& request) {
  if (request.method != "POST" && request.method != "PUT" && request.method != "GET") {
    return Cat("method: expected POST, PUT or GET, got \"", OneLine(request.method, 16), "\"");
  }
  if (request.url.empty()) return "url: empty";
  for (unsigned char c : request.url) {
    if (c <= 0x20 || c == 0x7f) return "url: contains a space or control character";
  }
  for (size_t i = 0; i < request.headers.size(); ++i) {
    const auto& [name, value] = request.headers[i];
    if (!IsToken(name)) return Cat("headers[", i, "]: name is not an HTTP token");
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Cat("headers[", i, "] (", name, "): value contains CR, LF or NUL");
    }
  }
  return "";
}

// curl_slist as an owned list.
struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

class CurlSender final : public HttpSender {
 public:
  CurlSender() : curl_(GlobalInit() == CURLE_OK ? curl_easy_init() : nullptr) {}
  ~CurlSender() override {
    if (curl_ != nullptr) curl_easy_cleanup(curl_);
  }
  CurlSender(const CurlSender&) = delete;
  CurlSender& operator=(const CurlSender&) = delete;

  // HttpSender
  SendResult Send(const HttpRequest& request, Duration timeout) override {
    const MonoTime start = std::chrono::steady_clock::now();
    if (cancelled_.load(std::memory_order_acquire)) {
      SendResult r;
      r.error = "cancelled: tailguard is stopping";
      r.retryable = true;
      r.cancelled = true;
      return r;
    }
    SendResult r = Attempt(request, timeout);
    r.elapsed = std::chrono::steady_clock::now() - start;
    if (r.delivered) {
      r.error.clear();
      r.retryable = false;
    }
    return r;
  }
  void SetCancelled(bool on) override { cancelled_.store(on, std::memory_order_release); }

 private:
  // libcurl calls this about once a second, and whenever data moves; non-zero aborts.
  static int OnProgress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    return static_cast<CurlSender*>(self)->cancelled_.load(std::memory_order_acquire) ? 1 : 0;
  }

  SendResult Attempt(const HttpRequest& request, Duration timeout) {
    SendResult r;
    if (curl_ == nullptr) {
      r.error = "libcurl initialisation failed";
      return r;
    }
    if (std::string why = Malformed(request); !why.empty()) {
      r.error = std::move(why);
      return r;
    }
    Slist headers;
    const auto append = [&headers](const std::string& line) {
      curl_slist* next = curl_slist_append(headers.get(), line.c_str());
      if (next == nullptr) return false;
      headers.release();
      headers.reset(next);
      return true;
    };
    bool ok = append("Expect:");  // no 100-continue round trip
    for (const auto& [name, value] : request.headers) {
      // "Name;" is curl's way to send a header with an empty value.
      ok = ok && append(value.empty() ? Cat(name, ";") : Cat(name, ": ", value));
    }
    if (!ok) {
      r.error = "out of memory building the request headers";
      r.retryable = true;
      return r;
    }

    body_.clear();
    retry_after_.reset();
    errbuf_[0] = '\0';
    curl_easy_reset(curl_);  // keeps the open connections
    const long timeout_ms = static_cast<long>(
        std::clamp<int64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(timeout).count(),
                            1, std::numeric_limits<int32_t>::max()));
    curl_easy_setopt(curl_, CURLOPT_URL, request.url.c_str());
    curl_easy_setopt(curl_, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl_, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we are threaded
    curl_easy_setopt(curl_, CURLOPT_FOLLOWLOCATION, 0L);
    curl_easy_setopt(curl_, CURLOPT_TIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl_, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
    curl_easy_setopt(curl_, CURLOPT_USERAGENT, "tailguard/" TAILGUARD_VERSION);
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, errbuf_);
    curl_easy_setopt(curl_, CURLOPT_WRITEFUNCTION, &CurlSender::OnBody);
    curl_easy_setopt(curl_, CURLOPT_WRITEDATA, this);
    curl_easy_setopt(curl_, CURLOPT_HEADERFUNCTION, &CurlSender::OnHeader);
    curl_easy_setopt(curl_, CURLOPT_HEADERDATA, this);
    curl_easy_setopt(curl_, CURLOPT_NOPROGRESS, 0L);
    curl_easy_setopt(curl_, CURLOPT_XFERINFOFUNCTION, &CurlSender::OnProgress);
    curl_easy_setopt(curl_, CURLOPT_XFERINFODATA, this);
    if (request.method == "GET") {
      curl_easy_setopt(curl_, CURLOPT_HTTPGET, 1L);
    } else {
      curl_easy_setopt(curl_, CURLOPT_POST, 1L);
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDS, request.body.data());
      curl_easy_setopt(curl_, CURLOPT_POSTFIELDSIZE_LARGE,
                       static_cast<curl_off_t>(request.body.size()));
      if (request.method == "PUT") curl_easy_setopt(curl_, CURLOPT_CUSTOMREQUEST, "PUT");
    }
    const CURLcode code = curl_easy_perform(curl_);
    // The buffers are ours only for the call: no option may point at them afterwards.
    curl_easy_setopt(curl_, CURLOPT_HTTPHEADER, nullptr);
    curl_easy_setopt(curl_, CURLOPT_ERRORBUFFER, nullptr);

    if (code == CURLE_ABORTED_BY_CALLBACK) {
      r.error = "cancelled: tailguard is stopping";
      r.retryable = true;
      r.cancelled = true;
      return r;
    }
    if (code != CURLE_OK) {
      // libcurl's messages name the host at most, never the path or the query.
      const std::string_view message = errbuf_[0] != '\0' ? errbuf_ : curl_easy_strerror(code);
      r.error = OneLine(Cat("transport: ", message), kMaxExcerptBytes);
      r.retryable = !IsPermanentCurlError(code);
      return r;
    }
    long status = 0;
    curl_easy_getinfo(curl_, CURLINFO_RESPONSE_CODE, &status);
    r.http_status = static_cast<int>(status);
    r.retry_after = retry_after_;
    if (status < 200 || status > 299) {
      r.retryable = IsRetryableStatus(status);
      r.error = OneLine(Cat("HTTP ", status, body_.empty() ? "" : ": ", body_), kMaxExcerptBytes);
      return r;
    }
    if (request.check == HttpRequest::Check::kWeComErrcode) {
      ClassifyWeCom(r);
      return r;
    }
    r.delivered = true;
    return r;
  }

  // WeCom answers HTTP 200 with {"errcode":N,"errmsg":"..."}.
  void ClassifyWeCom(SendResult& r) const {
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

  static size_t OnBody(char* data, size_t size, size_t n, void* self) {
    auto* sender = static_cast<CurlSender*>(self);
    const size_t bytes = size * n;
    const size_t room = kMaxResponseBytes - std::min(kMaxResponseBytes, sender->body_.size());
    sender->body_.append(data, std::min(bytes, room));
    return bytes;  // the rest is read and discarded
  }

  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    auto* sender = static_cast<CurlSender*>(self);
    std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) sender->retry_after_.reset();  // a new response begins
    if (std::optional<Duration> d = ParseRetryAfter(line, kMaxRetryAfter)) sender->retry_after_ = d;
    return size * n;
  }

  CURL* const curl_;
  // Set by another thread (SetCancelled), read by curl's progress callback: release/acquire, a
  // flag that orders nothing else.
  std::atomic<bool> cancelled_{false};
  // Per request.
  std::string body_;  // the first kMaxResponseBytes of the response body
  std::optional<Duration> retry_after_;
  char errbuf_[CURL_ERROR_SIZE] = {};
};

}  // namespace

std::unique_ptr<HttpSender> NewCurlSender() { return std::make_unique<CurlSender>(); }

}  // namespace tailguard::notify
