#include "common/client.h"

#include "common/auth.h"
#include "common/file_io.h"
#include "common/status.h"

namespace kagent {

absl::StatusOr<std::shared_ptr<grpc::Channel>> MakeChannel(const std::string& target,
                                                           const ChannelOptions& options) {
  if (target.empty()) return absl::InvalidArgumentError("empty server address");
  grpc::ChannelArguments args;
  args.SetMaxReceiveMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetMaxSendMessageSize(static_cast<int>(options.max_message_bytes));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIME_MS, static_cast<int>(options.keepalive_seconds * 1000));
  args.SetInt(GRPC_ARG_KEEPALIVE_TIMEOUT_MS, 10000);
  args.SetInt(GRPC_ARG_KEEPALIVE_PERMIT_WITHOUT_CALLS, 1);
  std::shared_ptr<grpc::ChannelCredentials> creds = grpc::InsecureChannelCredentials();
  if (!options.tls_ca.empty()) {
    grpc::SslCredentialsOptions ssl;
    KAGENT_ASSIGN_OR_RETURN(ssl.pem_root_certs, ReadFile(options.tls_ca));
    if (!options.tls_cert.empty()) {
      KAGENT_ASSIGN_OR_RETURN(ssl.pem_cert_chain, ReadFile(options.tls_cert));
      KAGENT_ASSIGN_OR_RETURN(ssl.pem_private_key, ReadFile(options.tls_key));
    }
    creds = grpc::SslCredentials(ssl);
    if (!options.tls_server_name.empty()) {
      args.SetSslTargetNameOverride(options.tls_server_name);
    }
  }
  return grpc::CreateCustomChannel(target, creds, args);
}

std::unique_ptr<grpc::ClientContext> MakeClientContext(const CallOptions& options) {
  std::unique_ptr<grpc::ClientContext> ctx;
  auto own_deadline = std::chrono::system_clock::now() +
                      std::chrono::microseconds(absl::ToInt64Microseconds(options.timeout));
  if (options.parent != nullptr) {
    ctx = grpc::ClientContext::FromServerContext(*options.parent);
    // FromServerContext propagates the parent's deadline; keep the earlier of the two.
    if (own_deadline < ctx->deadline()) ctx->set_deadline(own_deadline);
  } else {
    ctx = std::make_unique<grpc::ClientContext>();
    ctx->set_deadline(own_deadline);
  }
  if (!options.token.empty()) ctx->AddMetadata("authorization", "Bearer " + options.token);
  if (!options.tenant.empty()) ctx->AddMetadata(kTenantHeader, options.tenant);
  if (!options.request_id.empty()) ctx->AddMetadata(kRequestIdHeader, options.request_id);
  ctx->set_wait_for_ready(options.wait_for_ready);
  return ctx;
}

absl::Status WaitForChannel(grpc::Channel* channel, absl::Duration timeout) {
  auto deadline = std::chrono::system_clock::now() +
                  std::chrono::microseconds(absl::ToInt64Microseconds(timeout));
  if (!channel->WaitForConnected(deadline)) {
    return absl::UnavailableError("could not connect to the server in time");
  }
  return absl::OkStatus();
}

}  // namespace kagent
