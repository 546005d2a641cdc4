#include "common/grpc_status.h"

#include <string>

#include "common/client_message.h"
#include "common/logging.h"

namespace kagent {

grpc::Status ToGrpcStatus(const absl::Status& status) {
  if (status.ok()) return grpc::Status::OK;
  if (HasClientMessage(status)) {
    KLOG(WARNING).With("code", GrpcCodeName(static_cast<int>(status.code())))
        << "answering with a client message for: " << status.message();
    return grpc::Status(static_cast<grpc::StatusCode>(status.code()), ClientMessage(status));
  }
  return grpc::Status(static_cast<grpc::StatusCode>(status.code()),
                      std::string(status.message()));
}

absl::Status FromGrpcStatus(const grpc::Status& status) {
  if (status.ok()) return absl::OkStatus();
  return absl::Status(static_cast<absl::StatusCode>(status.error_code()),
                      status.error_message());
}

const char* GrpcCodeName(int code) {
  static const char* kNames[] = {"OK",
                                 "CANCELLED",
                                 "UNKNOWN",
                                 "INVALID_ARGUMENT",
                                 "DEADLINE_EXCEEDED",
                                 "NOT_FOUND",
                                 "ALREADY_EXISTS",
                                 "PERMISSION_DENIED",
                                 "RESOURCE_EXHAUSTED",
                                 "FAILED_PRECONDITION",
                                 "ABORTED",
                                 "OUT_OF_RANGE",
                                 "UNIMPLEMENTED",
                                 "INTERNAL",
                                 "UNAVAILABLE",
                                 "DATA_LOSS",
                                 "UNAUTHENTICATED"};
  if (code < 0 || code > 16) return "UNKNOWN";
  return kNames[code];
}

}  // namespace kagent
