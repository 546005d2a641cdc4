// LeaderForwarder over real gRPC servers on loopback: a "follower" front whose JobService
// forwards through it, and a "leader" that records what reached it. The leader's role is
// a test double (the election itself is tested in leader_election_test.cc and, end to
// end, in deploy/tests/ha_failover.py).
#include "services/coordinator/leader_forwarder.h"

#include <catch2/catch.hpp>

#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/synchronization/mutex.h"

namespace kagent {
namespace {

class FakeRole final : public LeaderRole {
 public:
  bool IsLeader() const override { return false; }
  std::string LeaderAddress() const override {
    absl::MutexLock lock(&mu_);
    return address_;
  }
  void Set(std::string address) {
    absl::MutexLock lock(&mu_);
    address_ = std::move(address);
  }

 private:
  mutable absl::Mutex mu_;
  std::string address_;
};

// The leader: answers SubmitJob with a job id, or INVALID_ARGUMENT for an empty problem,
// and keeps the headers of the last call.
class Leader final : public v1::JobService::Service {
 public:
  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override {
    absl::MutexLock lock(&mu);
    headers.clear();
    for (const auto& [k, v] : context->client_metadata()) {
      headers[std::string(k.data(), k.size())] = std::string(v.data(), v.size());
    }
    if (request->problem().source().empty()) {
      return grpc::Status(grpc::StatusCode::INVALID_ARGUMENT, "problem.source is empty");
    }
    response->mutable_job()->set_id("job-from-the-leader");
    return grpc::Status::OK;
  }
  absl::Mutex mu;
  std::map<std::string, std::string> headers;
};

class Front final : public v1::JobService::Service {
 public:
  explicit Front(LeaderForwarder* f) : forwarder_(f) {}
  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override {
    REQUIRE(forwarder_->ShouldForward());
    return forwarder_->SubmitJob(context, *request, response);
  }

 private:
  LeaderForwarder* forwarder_;
};

std::unique_ptr<grpc::Server> Serve(grpc::Service* service, int* port) {
  grpc::ServerBuilder builder;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), port);
  builder.RegisterService(service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  return server;
}

TEST_CASE("leader forwarder: writes reach the leader with the caller's headers and get a "
          "clear UNAVAILABLE without one",
          "[leader]") {
  Leader leader;
  int leader_port = 0;
  std::unique_ptr<grpc::Server> leader_server = Serve(&leader, &leader_port);
  FakeRole role;
  LeaderForwarder forwarder(&role, ChannelOptions(), absl::Seconds(5));
  Front front(&forwarder);
  int front_port = 0;
  std::unique_ptr<grpc::Server> front_server = Serve(&front, &front_port);
  auto stub = v1::JobService::NewStub(grpc::CreateChannel(
      absl::StrCat("127.0.0.1:", front_port), grpc::InsecureChannelCredentials()));
  v1::SubmitJobRequest request;
  request.mutable_problem()->set_source("class Model: ...");
  auto call = [&](bool forwarded_header, v1::SubmitJobResponse* response) {
    grpc::ClientContext c;
    c.set_deadline(std::chrono::system_clock::now() + std::chrono::seconds(10));
    c.AddMetadata("authorization", "Bearer tenant-token-0123456789");
    c.AddMetadata("x-request-id", "req-42");
    if (forwarded_header) c.AddMetadata(kForwardedHeader, "1");
    return stub->SubmitJob(&c, request, response);
  };

  // No replica holds the lease: a clear, retryable answer.
  v1::SubmitJobResponse response;
  grpc::Status s = call(false, &response);
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(absl::StrContains(s.error_message(), "no coordinator replica leads right now"));

  // The leader is known: the call reaches it with the caller's token and request id, marked
  // as forwarded, and its answer comes back unchanged.
  role.Set(absl::StrCat("127.0.0.1:", leader_port));
  s = call(false, &response);
  REQUIRE(s.ok());
  CHECK(response.job().id() == "job-from-the-leader");
  {
    absl::MutexLock lock(&leader.mu);
    CHECK(leader.headers["authorization"] == "Bearer tenant-token-0123456789");
    CHECK(leader.headers["x-request-id"] == "req-42");
    CHECK(leader.headers[kForwardedHeader] == "1");
  }
  request.mutable_problem()->clear_source();
  s = call(false, &response);
  CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  CHECK(s.error_message() == "problem.source is empty");
  request.mutable_problem()->set_source("class Model: ...");

  // A forwarded call that reaches a replica which does not lead is not forwarded again.
  s = call(true, &response);
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(absl::StrContains(s.error_message(), "leader is changing"));

  // The lease names a leader that cannot be reached: UNAVAILABLE naming it.
  leader_server->Shutdown();
  role.Set("127.0.0.1:1");
  s = call(false, &response);
  CHECK(s.error_code() == grpc::StatusCode::UNAVAILABLE);
  CHECK(absl::StrContains(s.error_message(), "forwarding to the leader at 127.0.0.1:1"));
  front_server->Shutdown();
}

}  // namespace
}  // namespace kagent
