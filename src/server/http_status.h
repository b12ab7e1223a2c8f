// The one table from absl::Status to HTTP, at the edge: every API handler answers a failed call
// through it, so that the same error reads the same whichever handler met it.
#ifndef TAILGUARD_SERVER_HTTP_STATUS_H_
#define TAILGUARD_SERVER_HTTP_STATUS_H_

#include <string_view>

#include "absl/status/status.h"

namespace tailguard::server {

// The HTTP status and the API's error code ("error": {"code": ...}) for a failed call.
struct HttpError {
  int status;
  std::string_view code;
};

// The caller's mistakes are 4xx: a bad argument 400, nothing there 404, a state that forbids it
// (already acknowledged, already expired, already exists) 409. Trouble that may pass (a store
// that is busy, locked or unreachable, a deadline, a full queue) is 503: the request was fine,
// try again. Everything else (data loss, an internal error, a code not listed) is 500.
constexpr HttpError HttpErrorFor(absl::StatusCode code) {
  switch (code) {
    case absl::StatusCode::kInvalidArgument:
    case absl::StatusCode::kOutOfRange:
      return {400, "bad_request"};
    case absl::StatusCode::kUnauthenticated:
      return {401, "unauthorized"};
    case absl::StatusCode::kPermissionDenied:
      return {403, "forbidden"};
    case absl::StatusCode::kNotFound:
      return {404, "not_found"};
    case absl::StatusCode::kFailedPrecondition:
    case absl::StatusCode::kAlreadyExists:
      return {409, "conflict"};
    case absl::StatusCode::kUnavailable:
    case absl::StatusCode::kDeadlineExceeded:
    case absl::StatusCode::kResourceExhausted:
    case absl::StatusCode::kAborted:
      return {503, "unavailable"};
    default:
      return {500, "internal"};
  }
}

}  // namespace tailguard::server

#endif  // TAILGUARD_SERVER_HTTP_STATUS_H_
