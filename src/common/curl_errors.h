// libcurl transport errors that another attempt cannot fix, shared by the senders that retry
// (OTLP export, notification delivery). Header-only: include it only where libcurl is used.
#ifndef TAILGUARD_COMMON_CURL_ERRORS_H_
#define TAILGUARD_COMMON_CURL_ERRORS_H_

#include <curl/curl.h>

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

}  // namespace tailguard

#endif  // TAILGUARD_COMMON_CURL_ERRORS_H_
