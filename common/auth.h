// Bearer-token authentication per call.
//
// Clients send `authorization: Bearer <token>`. An Authenticator maps tokens to tenants.
// With neither user tokens nor an internal token, auth is off: every call is accepted as
// tenant "default" and trusted as internal. With only an internal token, users need no
// token (tenant "default", not internal) and only the internal token is internal. With
// user tokens, every call needs a valid token.
// Tokens marked internal identify a service of the cluster calling another; an internal
// caller may act for any tenant by sending `x-kagent-tenant`.
//
// Every RPC handler of the public API (JobService) begins with
//   KAGENT_AUTHENTICATE(caller, auth_, context);   // auth_ may be null: auth off
// which declares `const kagent::Caller caller` or returns UNAUTHENTICATED.
// Every RPC of a cluster-internal service (BenchmarkService, ProfilerService, JudgeService,
// AnalyzerService, OrchestratorService, OptimizationManagerService, and any RPC only the
// cluster calls, such as RegisterWorker) begins instead with
//   KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
// which also requires the caller to be internal: with auth off every caller is (as above);
// with auth on, a call without a token or with an unknown one is UNAUTHENTICATED (also
// in the "only an internal token" mode, where users need no token for the public API) and
// a tenant's token is PERMISSION_DENIED.
//
// Thread-safe after construction (read-only).
#ifndef KAGENT_COMMON_AUTH_H_
#define KAGENT_COMMON_AUTH_H_

#include <map>
#include <string>

#include <grpcpp/server_context.h>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/grpc_status.h"

namespace kagent {

inline constexpr char kDefaultTenant[] = "default";
inline constexpr char kTenantHeader[] = "x-kagent-tenant";
inline constexpr char kRequestIdHeader[] = "x-request-id";

struct Caller {
  std::string tenant;
  bool internal = false;     // a cluster service, not a user
  std::string request_id;    // from x-request-id, or generated
};

class Authenticator {
 public:
  Authenticator() = default;  // auth off
  // `tokens` maps token -> tenant; `internal_token` (may be empty) is the service token.
  Authenticator(std::map<std::string, std::string> tokens, std::string internal_token);

  // Parses a tokens file: one `TOKEN TENANT` pair per line; '#' starts a comment.
  static absl::StatusOr<Authenticator> FromFile(const std::string& path,
                                                std::string internal_token);

  bool enabled() const { return !tokens_.empty() || !internal_token_.empty(); }

  // Returns the caller, or UNAUTHENTICATED with a message saying what is wrong.
  absl::StatusOr<Caller> Authenticate(const grpc::ServerContext& context) const;
  // The same over a raw header value (testing and non-gRPC use).
  absl::StatusOr<Caller> AuthenticateHeader(absl::string_view authorization,
                                            absl::string_view tenant_header) const;

 private:
  std::map<std::string, std::string> tokens_;
  std::string internal_token_;
};

// Authenticates with `auth` (null means auth off).
absl::StatusOr<Caller> AuthenticateCall(const Authenticator* auth,
                                        const grpc::ServerContext& context);

// As AuthenticateCall, and the caller must be internal (see the top of this file):
// UNAUTHENTICATED without a valid token, PERMISSION_DENIED for a tenant's token; the
// messages name `rpc` (the macro passes the handler's name, e.g. "DescribeWorker").
absl::StatusOr<Caller> AuthenticateInternalCall(const Authenticator* auth,
                                                const grpc::ServerContext& context,
                                                absl::string_view rpc);
// The check on an authenticated caller: `had_token` says whether the call sent an
// authorization header.
absl::Status RequireInternal(const Authenticator* auth, const Caller& caller, bool had_token,
                             absl::string_view rpc);

}  // namespace kagent

#define KAGENT_AUTHENTICATE(caller, auth, context)                                   \
  ::absl::StatusOr<::kagent::Caller> caller##_or_ =                                  \
      ::kagent::AuthenticateCall((auth), *(context));                                \
  if (!caller##_or_.ok()) return ::kagent::ToGrpcStatus(caller##_or_.status());      \
  const ::kagent::Caller caller = *std::move(caller##_or_)

#define KAGENT_AUTHENTICATE_INTERNAL(caller, auth, context)                          \
  ::absl::StatusOr<::kagent::Caller> caller##_or_ =                                  \
      ::kagent::AuthenticateInternalCall((auth), *(context), __func__);              \
  if (!caller##_or_.ok()) return ::kagent::ToGrpcStatus(caller##_or_.status());      \
  const ::kagent::Caller caller = *std::move(caller##_or_)

#endif  // KAGENT_COMMON_AUTH_H_
