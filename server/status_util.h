// The one conversion of absl::Status to gRPC status and HTTP status codes.
#ifndef ATTNSERVE_SERVER_STATUS_UTIL_H_
#define ATTNSERVE_SERVER_STATUS_UTIL_H_

#include "absl/status/status.h"
#include "grpcpp/support/status.h"

namespace attnserve {

grpc::Status ToGrpcStatus(const absl::Status& status);

// HTTP status for an absl::Status: 400 INVALID_ARGUMENT/OUT_OF_RANGE/FAILED_PRECONDITION,
// 401 UNAUTHENTICATED, 403 PERMISSION_DENIED, 404 NOT_FOUND, 429 RESOURCE_EXHAUSTED, 499 CANCELLED, 503 UNAVAILABLE,
// 504 DEADLINE_EXCEEDED, 501 UNIMPLEMENTED, else 500.
int ToHttpStatus(absl::StatusCode code);

// Lower-case canonical name, e.g. "invalid_argument", for labels and JSON.
const char* StatusCodeName(absl::StatusCode code);

}  // namespace attnserve

#endif  // ATTNSERVE_SERVER_STATUS_UTIL_H_
