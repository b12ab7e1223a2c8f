#include "common/http_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <limits>
#include <memory>
#include <mutex>

#include "common/strings.h"
#include "tailguard/version.h"

namespace tailguard {
namespace {

constexpr size_t kMaxErrorBytes = 200;

// `s` on one line (control characters as spaces), at most `max_bytes`, cut on a UTF-8
// character boundary.
std::string OneLine(std::string_view s, size_t max_bytes) {
  std::string out(s.substr(0, std::min(s.size(), max_bytes)));
  if (out.size() < s.size()) {
    size_t cut = out.size();
    while (cut > 0 && (static_cast<unsigned char>(s[cut]) & 0xc0) == 0x80) --cut;
    out.resize(cut);
  }
  for (char& c : out) {
    if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f) c = ' ';
  }
  return out;
}

// libcurl's global state is initialised once per process, before the first handle.
CURLcode GlobalInit() {
  static std::once_flag once;
  static CURLcode result = CURLE_OK;
  std::call_once(once, [] { result = curl_global_init(CURL_GLOBAL_DEFAULT); });
  return result;
}

// True for configuration, TLS-trust and local faults; the rest (refused, reset, timed out,
// name resolution, empty answer) are worth retrying.
bool IsPermanentCurlError(CURLcode code) {
  switch (code) {
    case CURLE_UNSUPPORTED_PROTOCOL:
    case CURLE_FAILED_INIT:
    case CURLE_URL_MALFORMAT:
    case CURLE_NOT_BUILT_IN:
    case CURLE_OUT_OF_MEMORY:
    case CURLE_PEER_FAILED_VERIFICATION:
    case CURLE_SSL_CERTPROBLEM:
    case CURLE_SSL_CIPHER:
    case CURLE_SSL_CACERT_BADFILE:
    case CURLE_SSL_ENGINE_NOTFOUND:
    case CURLE_SSL_ENGINE_SETFAILED:
    case CURLE_SSL_ENGINE_INITFAILED:
    case CURLE_SSL_CRL_BADFILE:
    case CURLE_SSL_ISSUER_ERROR:
    case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
    case CURLE_SSL_INVALIDCERTSTATUS:
    case CURLE_SSL_CLIENTCERT:
      return true;
    default:
      return false;
  }
}

// RFC 9110 token characters, for header names.
bool IsToken(std::string_view s) {
  if (s.empty()) return false;
  return std::all_of(s.begin(), s.end(), [](unsigned char c) {
    return std::isalnum(c) ||
           std::string_view("!#$%&'*+-.^_`|~").find(static_cast<char>(c)) != std::string_view::npos;
  });
}

// Why `call` cannot be sent at all; "" when it can. Never quotes the URL or header values.
std::string Malformed(const HttpCall& call) {
  if (call.method != "POST" && call.method != "PUT" && call.method != "GET") {
    return Cat("method: expected POST, PUT or GET, got \"", OneLine(call.method, 16), "\"");
  }
  if (call.url.empty()) return "url: empty";
  for (unsigned char c : call.url) {
    if (c <= 0x20 || c == 0x7f) return "url: contains a space or control character";
  }
  if (call.headers == nullptr) return "";
  for (size_t i = 0; i < call.headers->size(); ++i) {
    const auto& [name, value] = (*call.headers)[i];
    if (!IsToken(name)) return Cat("headers[", i, "]: name is not an HTTP token");
    if (value.find_first_of(std::string_view("\r\n\0", 3)) != std::string::npos) {
      return Cat("headers[", i, "] (", name, "): value contains CR, LF or NUL");
    }
  }
  return "";
}

struct SlistDeleter {
  void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};
using Slist = std::unique_ptr<curl_slist, SlistDeleter>;

}  // namespace

struct HttpClientCallbacks {
  // Called about once a second, and whenever data moves; non-zero aborts.
  static int OnProgress(void* self, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
    auto* c = static_cast<HttpClient*>(self);
    if (c->cancelled_.load(std::memory_order_acquire)) return 1;
    return c->abort_check_ && c->abort_check_() ? 1 : 0;
  }
  static size_t OnBody(char* data, size_t size, size_t n, void* self) {
    auto* c = static_cast<HttpClient*>(self);
    const size_t bytes = size * n;
    const size_t room = c->max_body_ - std::min(c->max_body_, c->body_.size());
    c->body_.append(data, std::min(bytes, room));
    return bytes;  // the rest is read and dropped
  }
  static size_t OnHeader(char* data, size_t size, size_t n, void* self) {
    auto* c = static_cast<HttpClient*>(self);
    const std::string_view line(data, size * n);
    if (line.starts_with("HTTP/")) c->retry_after_.reset();  // a new response begins
    if (std::optional<Duration> d = ParseRetryAfter(line, c->max_retry_after_)) {
      c->retry_after_ = d;
    }
    return size * n;
  }
};

HttpClient::HttpClient() : curl_(GlobalInit() == CURLE_OK ? curl_easy_init() : nullptr) {}

HttpClient::~HttpClient() {
  if (curl_ != nullptr) curl_easy_cleanup(static_cast<CURL*>(curl_));
}

HttpReply HttpClient::Send(const HttpCall& call) {
  const auto start = std::chrono::steady_clock::now();
  HttpReply r;
  const auto done = [&r, start] {
    r.elapsed = std::chrono::steady_clock::now() - start;
    return std::move(r);
  };
  CURL* const curl = static_cast<CURL*>(curl_);
  if (curl == nullptr) {
    r.error = "libcurl initialisation failed";
    r.permanent = true;
    return done();
  }
  if (cancelled_.load(std::memory_order_acquire)) {
    r.error = "cancelled: tailguard is stopping";
    r.aborted = true;
    return done();
  }
  if (std::string why = Malformed(call); !why.empty()) {
    r.error = std::move(why);
    r.permanent = true;
    return done();
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
  if (call.headers != nullptr) {
    for (const auto& [name, value] : *call.headers) {
      // "Name;" is curl's way to send a header with an empty value.
      ok = ok && append(value.empty() ? Cat(name, ";") : Cat(name, ": ", value));
    }
  }
  if (!ok) {
    r.error = "out of memory building the request headers";
    return done();
  }

  body_.clear();
  max_body_ = call.max_body_bytes;
  max_retry_after_ = call.max_retry_after;
  retry_after_.reset();
  char errbuf[CURL_ERROR_SIZE] = {};
  const std::string url(call.url);
  curl_easy_reset(curl);  // keeps the open connections
  const long timeout_ms = static_cast<long>(std::clamp<int64_t>(
      std::chrono::duration_cast<std::chrono::milliseconds>(call.timeout).count(), 1,
      std::numeric_limits<int32_t>::max()));
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);  // timeouts without SIGALRM: we are threaded
  curl_easy_setopt(curl, CURLOPT_FOLLOWLOCATION, 0L);
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_CONNECTTIMEOUT_MS, timeout_ms);
  curl_easy_setopt(curl, CURLOPT_USERAGENT, "tailguard/" TAILGUARD_VERSION_STRING);
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, errbuf);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, &HttpClientCallbacks::OnBody);
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, this);
  curl_easy_setopt(curl, CURLOPT_HEADERFUNCTION, &HttpClientCallbacks::OnHeader);
  curl_easy_setopt(curl, CURLOPT_HEADERDATA, this);
  curl_easy_setopt(curl, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(curl, CURLOPT_XFERINFOFUNCTION, &HttpClientCallbacks::OnProgress);
  curl_easy_setopt(curl, CURLOPT_XFERINFODATA, this);
  if (call.method == "GET") {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    curl_easy_setopt(curl, CURLOPT_POST, 1L);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, call.body.data());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(call.body.size()));
    if (call.method == "PUT") curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, "PUT");
  }
  const CURLcode code = curl_easy_perform(curl);
  // The buffers are ours only for the call: no option may point at them afterwards.
  curl_easy_setopt(curl, CURLOPT_HTTPHEADER, nullptr);
  curl_easy_setopt(curl, CURLOPT_ERRORBUFFER, nullptr);
  curl_easy_setopt(curl, CURLOPT_POSTFIELDS, nullptr);

  if (code == CURLE_ABORTED_BY_CALLBACK) {
    r.error = "cancelled: tailguard is stopping";
    r.aborted = true;
    return done();
  }
  if (code != CURLE_OK) {
    // libcurl's messages name the host at most, never the path or the query.
    const std::string_view message = errbuf[0] != '\0' ? errbuf : curl_easy_strerror(code);
    r.error = OneLine(Cat("transport: ", message), kMaxErrorBytes);
    r.permanent = IsPermanentCurlError(code);
    return done();
  }
  curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &r.status);
  r.body = std::move(body_);
  body_.clear();
  r.retry_after = retry_after_;
  return done();
}

absl::Status CheckHttpUrl(std::string_view field, const std::string& endpoint, bool* https) {
  const absl::Status bad =
      absl::InvalidArgumentError(Cat(field, ": must be an http:// or https:// URL with a host"));
  CURLU* url = curl_url();
  if (url == nullptr) return absl::InternalError(Cat(field, ": out of memory"));
  char* scheme = nullptr;
  char* host = nullptr;
  const bool parsed = curl_url_set(url, CURLUPART_URL, endpoint.c_str(), 0) == CURLUE_OK &&
                      curl_url_get(url, CURLUPART_SCHEME, &scheme, 0) == CURLUE_OK &&
                      curl_url_get(url, CURLUPART_HOST, &host, 0) == CURLUE_OK;
  const std::string scheme_str = scheme != nullptr ? scheme : "";
  const bool has_host = host != nullptr && host[0] != '\0';
  curl_free(scheme);
  curl_free(host);
  curl_url_cleanup(url);
  if (!parsed || !has_host || (scheme_str != "http" && scheme_str != "https")) return bad;
  // libcurl is lenient: it takes "http:///x" as host "x", and some characters that would let the
  // URL smuggle a header or a second line.
  const size_t authority = scheme_str.size() + 3;
  if (endpoint.size() <= authority || endpoint.compare(scheme_str.size(), 3, "://") != 0 ||
      endpoint[authority] == '/') {
    return bad;
  }
  for (unsigned char c : endpoint) {
    if (c <= 0x20 || c == 0x7f) return bad;
  }
  *https = scheme_str == "https";
  return absl::OkStatus();
}

bool HttpClientReady() { return GlobalInit() == CURLE_OK; }

bool HttpClientHasTls() {
  return (curl_version_info(CURLVERSION_NOW)->features & CURL_VERSION_SSL) != 0;
}

std::optional<Duration> ParseRetryAfter(std::string_view line, Duration max) {
  constexpr std::string_view kName = "retry-after:";
  if (line.size() <= kName.size() || !EqualsIgnoreCase(line.substr(0, kName.size()), kName)) {
    return std::nullopt;
  }
  line.remove_prefix(kName.size());
  while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
  while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back()))) {
    line.remove_suffix(1);
  }
  int64_t seconds = 0;
  const auto [end, ec] = std::from_chars(line.data(), line.data() + line.size(), seconds);
  if (ec != std::errc() || end != line.data() + line.size() || seconds < 0) return std::nullopt;
  return std::min<Duration>(max, std::chrono::seconds(std::min<int64_t>(seconds, 1'000'000)));
}

}  // namespace tailguard
