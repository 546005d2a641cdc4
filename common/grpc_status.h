// The one place where absl::Status and grpc::Status are converted into each other.
#ifndef KAGENT_COMMON_GRPC_STATUS_H_
#define KAGENT_COMMON_GRPC_STATUS_H_

#include <grpcpp/support/status.h>

#include "absl/status/status.h"

namespace kagent {

// Maps the code one to one (the two enums share their numbering) and keeps the message,
// except for a status with a client message (common/client_message.h: e.g. a storage
// failure, whose message names the database file or server): the client gets that
// message, and the full one is logged here (WARNING), so that no server path, URI or
// credential leaves in a reply.
grpc::Status ToGrpcStatus(const absl::Status& status);

// The inverse, for statuses returned by outbound calls.
absl::Status FromGrpcStatus(const grpc::Status& status);

// The canonical upper-case name of a gRPC status code (a grpc::StatusCode converts), e.g.
// "NOT_FOUND"; "UNKNOWN" for a number outside the enum.
const char* GrpcCodeName(int code);

}  // namespace kagent

#endif  // KAGENT_COMMON_GRPC_STATUS_H_
