// What the libcurl senders that retry (OTLP export, notification delivery) share: which transport
// errors another attempt cannot fix, and the Retry-After header. Header-only: include it only
// where libcurl is used.
#ifndef TAILGUARD_COMMON_CURL_UTIL_H_
#define TAILGUARD_COMMON_CURL_UTIL_H_

#include <curl/curl.h>

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string_view>

#include "common/strings.h"
#include "tailguard/clock.h"

namespace tailguard {

// True for configuration, TLS-trust and local faults; the rest (refused, reset, timed out,
// name resolution, empty answer) are worth retrying.
inline bool IsPermanentCurlError(CURLcode code) {
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

// The delay of a "Retry-After: <seconds>" response header line (as libcurl's header callback
// gives it, CRLF included), at most `max`; nullopt for any other line. An HTTP-date is not
// understood (nullopt): the caller's own backoff applies.
inline std::optional<Duration> ParseRetryAfter(std::string_view line, Duration max) {
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

#endif  // TAILGUARD_COMMON_CURL_UTIL_H_
