// Outbound gRPC: channels and per-call contexts.
//
// Every outbound call gets a deadline: the smaller of its own timeout and the deadline of
// the server call it is made for (propagated, with cancellation, when `parent` is given).
// Calls carry the bearer token, the tenant they act for and the request id.
#ifndef KAGENT_COMMON_CLIENT_H_
#define KAGENT_COMMON_CLIENT_H_

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"

namespace kagent {

struct ChannelOptions {
  std::string tls_ca;          // PEM file; when set, the channel uses TLS
  std::string tls_cert;        // client certificate for mutual TLS (optional)
  std::string tls_key;
  std::string tls_server_name; // override for the certificate's name check
  int64_t max_message_bytes = 16 << 20;
  double keepalive_seconds = 30;
};

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ChannelOptions& options);

struct CallOptions {
  absl::Duration timeout = absl::Seconds(30);
  std::string token;           // bearer token; empty: none sent
  std::string tenant;          // sent as x-kagent-tenant when set
  std::string request_id;      // sent as x-request-id when set
  const grpc::ServerContext* parent = nullptr;  // propagate deadline and cancellation
  bool wait_for_ready = false;
};

std::unique_ptr<grpc::ClientContext> MakeClientContext(const CallOptions& options);

// Blocks until the channel is connected or `timeout` passes.
absl::Status WaitForChannel(grpc::Channel* channel, absl::Duration timeout);

}  // namespace kagent

#endif  // KAGENT_COMMON_CLIENT_H_
