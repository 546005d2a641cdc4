#include "services/coordinator/leader_forwarder.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/auth.h"
#include "common/logging.h"

namespace kagent {
namespace {

// The caller's value of `header`, or empty.
std::string Header(const grpc::ServerContext& context, absl::string_view header) {
  const auto& metadata = context.client_metadata();
  auto it = metadata.find(grpc::string_ref(header.data(), header.size()));
  if (it == metadata.end()) return "";
  return std::string(it->second.data(), it->second.size());
}

}  // namespace

absl::StatusOr<v1::JobService::Stub*> LeaderForwarder::StubFor(const std::string& address) {
  absl::MutexLock lock(&mu_);
  auto it = stubs_.find(address);
  if (it != stubs_.end()) return it->second.get();
  absl::StatusOr<std::shared_ptr<grpc::Channel>> channel = MakeChannel(address, channel_);
  if (!channel.ok()) return channel.status();
  auto stub = v1::JobService::NewStub(*channel);
  v1::JobService::Stub* raw = stub.get();
  stubs_.emplace(address, std::move(stub));
  return raw;
}

template <typename Request, typename Response>
grpc::Status LeaderForwarder::Forward(
    grpc::ServerContext* context, const Request& request, Response* response,
    grpc::Status (v1::JobService::Stub::*method)(grpc::ClientContext*, const Request&,
                                                Response*)) {
  if (!Header(*context, kForwardedHeader).empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "the coordinator leader is changing (a forwarded write reached a "
                        "replica that does not lead); retry in a few seconds");
  }
  const std::string address = role_->LeaderAddress();
  if (address.empty()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        "no coordinator replica leads right now (an election is under way); "
                        "retry in a few seconds");
  }
  absl::StatusOr<v1::JobService::Stub*> stub = StubFor(address);
  if (!stub.ok()) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("forwarding to the leader at ", address, ": ",
                                     stub.status().message()));
  }
  grpc::ClientContext call;
  absl::Time deadline = absl::Now() + timeout_;
  const absl::Time parent = absl::FromChrono(context->deadline());
  if (parent < deadline) deadline = parent;
  call.set_deadline(absl::ToChronoTime(deadline));
  for (absl::string_view header : {"authorization", kTenantHeader, kRequestIdHeader}) {
    std::string value = Header(*context, header);
    if (!value.empty()) call.AddMetadata(std::string(header), value);
  }
  call.AddMetadata(kForwardedHeader, "1");
  grpc::Status status = ((*stub)->*method)(&call, request, response);
  if (status.error_code() == grpc::StatusCode::UNAVAILABLE) {
    return grpc::Status(grpc::StatusCode::UNAVAILABLE,
                        absl::StrCat("forwarding to the leader at ", address, ": ",
                                     status.error_message()));
  }
  return status;
}

grpc::Status LeaderForwarder::SubmitJob(grpc::ServerContext* context,
                                        const v1::SubmitJobRequest& request,
                                        v1::SubmitJobResponse* response) {
  return Forward(context, request, response, &v1::JobService::Stub::SubmitJob);
}

grpc::Status LeaderForwarder::CancelJob(grpc::ServerContext* context,
                                        const v1::CancelJobRequest& request,
                                        v1::CancelJobResponse* response) {
  return Forward(context, request, response, &v1::JobService::Stub::CancelJob);
}

grpc::Status LeaderForwarder::RegisterWorker(grpc::ServerContext* context,
                                             const v1::RegisterWorkerRequest& request,
                                             v1::RegisterWorkerResponse* response) {
  return Forward(context, request, response, &v1::JobService::Stub::RegisterWorker);
}

}  // namespace kagent
