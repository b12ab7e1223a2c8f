#include "server/http_status.h"

#include <gtest/gtest.h>

namespace tailguard::server {
namespace {

// Every absl code has one answer, and the classes are what a client acts on: 4xx fix the
// request, 503 try again, 500 report.
TEST(HttpStatusTest, EveryCodeMapsToOneAnswer) {
  struct Want {
    absl::StatusCode code;
    int status;
    std::string_view name;
  };
  const Want table[] = {
      {absl::StatusCode::kInvalidArgument, 400, "bad_request"},
      {absl::StatusCode::kOutOfRange, 400, "bad_request"},
      {absl::StatusCode::kUnauthenticated, 401, "unauthorized"},
      {absl::StatusCode::kPermissionDenied, 403, "forbidden"},
      {absl::StatusCode::kNotFound, 404, "not_found"},
      {absl::StatusCode::kFailedPrecondition, 409, "conflict"},
      {absl::StatusCode::kAlreadyExists, 409, "conflict"},
      {absl::StatusCode::kUnavailable, 503, "unavailable"},
      {absl::StatusCode::kDeadlineExceeded, 503, "unavailable"},
      {absl::StatusCode::kResourceExhausted, 503, "unavailable"},
      {absl::StatusCode::kAborted, 503, "unavailable"},
      {absl::StatusCode::kInternal, 500, "internal"},
      {absl::StatusCode::kDataLoss, 500, "internal"},
      {absl::StatusCode::kUnknown, 500, "internal"},
      {absl::StatusCode::kUnimplemented, 500, "internal"},
      {absl::StatusCode::kCancelled, 500, "internal"},
  };
  for (const Want& w : table) {
    const HttpError e = HttpErrorFor(w.code);
    EXPECT_EQ(e.status, w.status) << absl::StatusCodeToString(w.code);
    EXPECT_EQ(e.code, w.name) << absl::StatusCodeToString(w.code);
  }
  // A code absl may add later is a 500, never a 2xx.
  EXPECT_EQ(HttpErrorFor(static_cast<absl::StatusCode>(99)).status, 500);
}

}  // namespace
}  // namespace tailguard::server
