// Test helpers for the kagentd integration tests: a running kagentd (CPU worker, its own
// database in a test directory, ports chosen by the kernel), call contexts, the fixture
// problem, raw gRPC calls and Prometheus samples.
#ifndef KAGENT_TESTS_INTEGRATION_DAEMON_H_
#define KAGENT_TESTS_INTEGRATION_DAEMON_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "kagent/v1/job_service.grpc.pb.h"
#include "nlohmann/json.hpp"
#include "tests/integration/process.h"

namespace kagent::testing {

std::string ReadFile(const std::string& path);  // "" when unreadable

// kagentd --gpus=cpu --drain-seconds=1 ... plus `extra`, started and ready (REQUIREs its
// start line); SIGKILLed when destroyed if still running.
struct Daemon {
  explicit Daemon(std::string dir, std::vector<std::string> extra = {});
  std::string addr() const;
  // Runs the kagent CLI against this daemon; returns its exit code.
  int Cli(std::vector<std::string> args, std::string* out, std::string* err = nullptr);

  std::string dir;
  std::unique_ptr<Process> proc;
  nlohmann::json ready;  // the start line
  int port = 0, metrics_port = 0;
  std::shared_ptr<grpc::Channel> channel;
  std::unique_ptr<v1::JobService::Stub> jobs;
};

// A client context with a 20 s deadline and, when given, `authorization: Bearer token`.
std::unique_ptr<grpc::ClientContext> Ctx(const std::string& token = "");

// A file of python/tests/fixtures.
std::string Fixture(const std::string& name);

// The value of the first sample of `family` in a Prometheus text scrape; -1 when absent.
double Sample(const std::string& scrape, const std::string& family);

// The relu_add fixture problem with its good starting kernel, `rounds` rounds.
v1::SubmitJobRequest ReluAddJob(int rounds);

// A unary call of `method` ("/pkg.Service/Method") with `request` as the raw request
// bytes, over `channel`, with `token` as the bearer token when not empty; the response's
// bytes go to `response` when not null.
grpc::Status RawUnaryCall(const std::shared_ptr<grpc::Channel>& channel, const std::string& method,
                          const std::string& request, const std::string& token = "",
                          std::string* response = nullptr);

}  // namespace kagent::testing

#endif  // KAGENT_TESTS_INTEGRATION_DAEMON_H_
