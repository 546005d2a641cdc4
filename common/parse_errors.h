// Requests that do not parse, and libprotobuf's own log lines.
//
// gRPC C++ 1.51's sync server deserializes a unary or server-streaming request before the
// handler runs; when the bytes do not parse as the method's message (truncated or random
// bytes, invalid UTF-8 in a proto3 string field) it answers INTERNAL with an empty
// message and the handler never sees the call. The interceptor made here turns that into
// INVALID_ARGUMENT with a message naming the request type. It recognizes the failure by
// the POST_RECV_MESSAGE hook carrying no message (what the sync server does when
// deserialization failed); streaming reads are left alone (there a null message also
// means end of stream). ServiceHost installs it before the metrics interceptor, so the
// metrics count the rewritten code.
//
// InstallProtobufLogHandler() sends what libprotobuf logs (e.g. "String field ... contains
// invalid UTF-8 data") through the JSON logger (common/logging.h) instead of plain text
// on stderr. It is idempotent and thread-safe; ServiceHost calls it.
#ifndef KAGENT_COMMON_PARSE_ERRORS_H_
#define KAGENT_COMMON_PARSE_ERRORS_H_

#include <memory>
#include <string>

#include <grpcpp/support/server_interceptor.h>

namespace kagent {

// The message INVALID_ARGUMENT carries for a request of `full_method` (e.g.
// "/kagent.v1.JobService/SubmitJob") that did not parse.
std::string UnparseableRequestMessage(const std::string& full_method);

// A new factory for grpc::ServerBuilder::experimental().SetInterceptorCreators.
std::unique_ptr<grpc::experimental::ServerInterceptorFactoryInterface>
NewParseErrorInterceptorFactory();

void InstallProtobufLogHandler();

}  // namespace kagent

#endif  // KAGENT_COMMON_PARSE_ERRORS_H_
