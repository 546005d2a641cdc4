#include "common/auth.h"

#include <fstream>
#include <random>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/strings/strip.h"

namespace kagent {
namespace {

std::string MetadataValue(const grpc::ServerContext& context, const std::string& key) {
  const auto& md = context.client_metadata();
  auto it = md.find(key);
  if (it == md.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

std::string NewRequestId() {
  thread_local std::mt19937_64 rng(std::random_device{}());
  return absl::StrFormat("%016x", rng());
}

bool ValidTenant(absl::string_view t) {
  if (t.empty() || t.size() > 64) return false;
  for (char c : t) {
    if (!absl::ascii_isalnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

}  // namespace

Authenticator::Authenticator(std::map<std::string, std::string> tokens,
                             std::string internal_token)
    : tokens_(std::move(tokens)), internal_token_(std::move(internal_token)) {}

absl::StatusOr<Authenticator> Authenticator::FromFile(const std::string& path,
                                                      std::string internal_token) {
  std::ifstream in(path);
  if (!in) return absl::InvalidArgumentError(absl::StrCat("cannot read tokens file ", path));
  std::map<std::string, std::string> tokens;
  std::string line;
  int n = 0;
  while (std::getline(in, line)) {
    ++n;
    absl::string_view l = absl::StripAsciiWhitespace(line);
    if (l.empty() || l[0] == '#') continue;
    std::vector<std::string> parts = absl::StrSplit(l, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (parts.size() != 2 || !ValidTenant(parts[1])) {
      return absl::InvalidArgumentError(absl::StrCat(
          path, ":", n, ": expected `TOKEN TENANT` (tenant: 1-64 of [A-Za-z0-9._-])"));
    }
    if (parts[0].size() < 16) {
      return absl::InvalidArgumentError(
          absl::StrCat(path, ":", n, ": token too short (at least 16 characters)"));
    }
    tokens[parts[0]] = parts[1];
  }
  return Authenticator(std::move(tokens), std::move(internal_token));
}

absl::StatusOr<Caller> Authenticator::AuthenticateHeader(absl::string_view authorization,
                                                         absl::string_view tenant_header) const {
  Caller caller;
  if (!enabled()) {
    caller.tenant = kDefaultTenant;
    if (!tenant_header.empty() && ValidTenant(tenant_header)) {
      caller.tenant = std::string(tenant_header);
    }
    caller.internal = true;
    return caller;
  }
  if (authorization.empty() && tokens_.empty()) {
    // Only the cluster's internal token is configured: users need no token and act as
    // the default tenant; only the internal token makes a caller internal.
    caller.tenant = kDefaultTenant;
    return caller;
  }
  if (authorization.empty()) {
    return absl::UnauthenticatedError(
        "missing credentials: send `authorization: Bearer <token>` (kagent --token or "
        "KAGENT_TOKEN)");
  }
  absl::string_view token = authorization;
  if (!absl::ConsumePrefix(&token, "Bearer ") && !absl::ConsumePrefix(&token, "bearer ")) {
    return absl::UnauthenticatedError("authorization header must be `Bearer <token>`");
  }
  token = absl::StripAsciiWhitespace(token);
  if (!internal_token_.empty() && token == internal_token_) {
    caller.internal = true;
    caller.tenant = kDefaultTenant;
    if (!tenant_header.empty()) {
      if (!ValidTenant(tenant_header)) {
        return absl::UnauthenticatedError("x-kagent-tenant is not a valid tenant name");
      }
      caller.tenant = std::string(tenant_header);
    }
    return caller;
  }
  auto it = tokens_.find(std::string(token));
  if (it == tokens_.end()) return absl::UnauthenticatedError("invalid token");
  caller.tenant = it->second;
  return caller;
}

absl::StatusOr<Caller> Authenticator::Authenticate(const grpc::ServerContext& context) const {
  absl::StatusOr<Caller> caller = AuthenticateHeader(MetadataValue(context, "authorization"),
                                                     MetadataValue(context, kTenantHeader));
  if (!caller.ok()) return caller;
  caller->request_id = MetadataValue(context, kRequestIdHeader);
  if (caller->request_id.empty() || caller->request_id.size() > 128) {
    caller->request_id = NewRequestId();
  }
  return caller;
}

absl::StatusOr<Caller> AuthenticateCall(const Authenticator* auth,
                                        const grpc::ServerContext& context) {
  static const Authenticator kOff;
  return (auth != nullptr ? *auth : kOff).Authenticate(context);
}

absl::Status RequireInternal(const Authenticator* auth, const Caller& caller, bool had_token,
                             absl::string_view rpc) {
  if (caller.internal) return absl::OkStatus();
  if (auth == nullptr || !auth->enabled()) return absl::OkStatus();  // cannot happen: off is internal
  if (!had_token) {
    return absl::UnauthenticatedError(absl::StrCat(
        "missing credentials: ", rpc,
        " is internal to the cluster and needs the cluster's internal token "
        "(`authorization: Bearer <--internal-token>`)"));
  }
  return absl::PermissionDeniedError(absl::StrCat(
      rpc, " is internal to the cluster: it needs the cluster's internal token, not a "
           "tenant token"));
}

absl::StatusOr<Caller> AuthenticateInternalCall(const Authenticator* auth,
                                                const grpc::ServerContext& context,
                                                absl::string_view rpc) {
  absl::StatusOr<Caller> caller = AuthenticateCall(auth, context);
  if (!caller.ok()) return caller;
  absl::Status s =
      RequireInternal(auth, *caller, !MetadataValue(context, "authorization").empty(), rpc);
  if (!s.ok()) return s;
  return caller;
}

}  // namespace kagent
