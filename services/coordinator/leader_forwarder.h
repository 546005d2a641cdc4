// LeaderForwarder: a follower coordinator replica hands the job API's writes to the
// leader (services/coordinator/leader_election.h).
//
// SubmitJob, CancelJob and RegisterWorker change state only the leader may change. A
// follower forwards each, as a new call to the leader at the address its lease names,
// with the caller's own `authorization`, `x-kagent-tenant` and `x-request-id` headers
// (the leader authenticates the caller again) and the caller's deadline (at most
// `timeout`), and returns the leader's answer unchanged. A forwarded call carries
// `x-kagent-forwarded`; a replica that receives one while it does not lead answers
// UNAVAILABLE instead of forwarding again (leadership is moving).
//
// Errors: UNAVAILABLE "no coordinator replica leads right now ..." when no replica holds
// the lease (an election is under way: retry in a few seconds); UNAVAILABLE "forwarding
// to the leader at ADDR: ..." when the leader cannot be reached.
//
// Thread-safe. Channels are made once per leader address and kept.
#ifndef KAGENT_SERVICES_COORDINATOR_LEADER_FORWARDER_H_
#define KAGENT_SERVICES_COORDINATOR_LEADER_FORWARDER_H_

#include <map>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/client.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "services/coordinator/leader_election.h"

namespace kagent {

inline constexpr char kForwardedHeader[] = "x-kagent-forwarded";

class LeaderForwarder {
 public:
  // `role` is borrowed and must outlive this object.
  LeaderForwarder(const LeaderRole* role, ChannelOptions channel, absl::Duration timeout)
      : role_(role), channel_(std::move(channel)), timeout_(timeout) {}

  // Whether this replica must forward writes (it does not lead).
  bool ShouldForward() const { return !role_->IsLeader(); }

  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest& request,
                         v1::SubmitJobResponse* response);
  grpc::Status CancelJob(grpc::ServerContext* context, const v1::CancelJobRequest& request,
                         v1::CancelJobResponse* response);
  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest& request,
                              v1::RegisterWorkerResponse* response);

 private:
  template <typename Request, typename Response>
  grpc::Status Forward(grpc::ServerContext* context, const Request& request, Response* response,
                       grpc::Status (v1::JobService::Stub::*method)(grpc::ClientContext*,
                                                                   const Request&, Response*));

  // The stub for the leader at `address` (made on first use).
  absl::StatusOr<v1::JobService::Stub*> StubFor(const std::string& address);

  const LeaderRole* const role_;
  const ChannelOptions channel_;
  const absl::Duration timeout_;
  absl::Mutex mu_;
  std::map<std::string, std::unique_ptr<v1::JobService::Stub>> stubs_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_LEADER_FORWARDER_H_
