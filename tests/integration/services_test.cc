// Integration test: the seven services as separate processes on loopback, wired by
// address exactly as on a cluster; a GPU worker (CPU device) registers itself.
#include <catch2/catch.hpp>

#include <signal.h>

#include <map>
#include <memory>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/client.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "tests/integration/health.grpc.pb.h"
#include "tests/integration/process.h"

namespace kagent::testing {
namespace {

struct Svc {
  std::string name;
  std::unique_ptr<Process> proc;
  int port = 0, metrics_port = 0;
  std::string addr() const { return absl::StrCat("127.0.0.1:", port); }
};

Svc Start(const std::string& dir, const std::string& binary, std::vector<std::string> flags) {
  Svc s;
  s.name = binary;
  std::vector<std::string> argv = {BinaryDir() + "/services/" + binary, "--listen=127.0.0.1:0",
                                   "--metrics-listen=127.0.0.1:0", "--drain-seconds=1",
                                   "--internal-token=cluster-internal-token"};
  argv.insert(argv.end(), flags.begin(), flags.end());
  std::string exe_name = binary.substr(binary.find('/') + 1);
  s.proc = std::make_unique<Process>(argv, std::map<std::string, std::string>{},
                                     dir + "/" + exe_name + ".log");
  auto ready = s.proc->ReadyLine(absl::Seconds(120));
  INFO(binary << ": " << s.proc->Log());
  REQUIRE(ready.is_object());
  s.port = ready["port"];
  s.metrics_port = ready["metrics_port"];
  return s;
}

TEST_CASE("seven services as separate processes", "[integration][slow]") {
  std::string dir = TempDir();
  std::vector<Svc> svcs;
  svcs.push_back(Start(dir, "judge/kagent-judge", {}));
  svcs.push_back(Start(dir, "analyzer/kagent-analyzer", {}));
  svcs.push_back(Start(dir, "orchestrator/kagent-orchestrator", {}));
  svcs.push_back(Start(dir, "optimization_manager/kagent-optimization-manager", {}));
  svcs.push_back(Start(dir, "profiler/kagent-profiler", {}));
  svcs.push_back(Start(dir, "coordinator/kagent-coordinator",
                       {"--db=" + dir + "/kagent.db", "--judge=" + svcs[0].addr(),
                        "--analyzer=" + svcs[1].addr(), "--orchestrator=" + svcs[2].addr(),
                        "--optimization-manager=" + svcs[3].addr(), "--no-worker-timeout-seconds=60",
                        "--worker-lease-seconds=6"}));
  const Svc& coord = svcs.back();
  // Its own renewal period (10 s) is longer than the coordinator's lease: it renews every
  // 2 s, a third of the lease the coordinator grants, so the lease never lapses mid-job.
  svcs.push_back(Start(dir, "benchmark/kagent-benchmark",
                       {"--device=cpu", "--coordinator=" + coord.addr(), "--lease-renew-seconds=10"}));

  // Every service answers health and serves /metrics.
  for (const Svc& s : svcs) {
    INFO(s.name);
    auto ch = *MakeChannel(s.addr(), ChannelOptions());
    auto health = grpc::health::v1::Health::NewStub(ch);
    grpc::health::v1::HealthCheckRequest req;
    grpc::health::v1::HealthCheckResponse resp;
    CallOptions o;
    o.timeout = absl::Seconds(10);
    auto ctx = MakeClientContext(o);
    REQUIRE(health->Check(ctx.get(), req, &resp).ok());
    CHECK(resp.status() == grpc::health::v1::HealthCheckResponse::SERVING);
    CHECK(absl::StrContains(HttpGet(s.metrics_port, "/metrics"), "kagent_build_info"));
  }

  // A job crosses every process: coordinator -> worker (registered by itself) ->
  // judge/analyzer/orchestrator/optimization manager.
  std::string out, err;
  std::vector<std::string> argv = {BinaryDir() + "/tools/kagent", "--server", coord.addr(), "submit",
                                   SourceDir() + "/python/tests/fixtures/problem_relu_add.py", "--kernel",
                                   SourceDir() + "/python/tests/fixtures/cand_relu_add_good.py",
                                   "--rounds", "1", "--beam", "1", "--workers", "1", "--watch"};
  int rc = RunCommand(argv, &out, &err);
  INFO(out << err);
  for (const Svc& s : svcs) INFO(s.name << " log: " << s.proc->Log().substr(0, 6000));
  CHECK(rc == 0);
  CHECK(absl::StrContains(out, "DONE"));
  CHECK(absl::StrContains(svcs.back().proc->Log(), "for 6 s; renewing every 2 s"));

  // SIGTERM stops each cleanly.
  for (auto it = svcs.rbegin(); it != svcs.rend(); ++it) {
    INFO(it->name);
    it->proc->Signal(SIGTERM);
    CHECK(it->proc->Wait(absl::Seconds(30)) == 0);
  }
}

// A worker whose harness server cannot give the required sandbox (the fake harness told
// so) does not start: it exits saying why, instead of serving with a server that restarts
// forever. In best-effort mode it starts; a bad --sandbox value is a usage error.
TEST_CASE("a worker that cannot sandbox candidates does not start, saying why", "[integration]") {
  std::string dir = TempDir();
  std::string python = SourceDir() + "/.venv/bin/python";
  std::vector<std::string> base = {BinaryDir() + "/services/benchmark/kagent-benchmark",
                                   "--listen=127.0.0.1:0", "--metrics-listen=127.0.0.1:0",
                                   "--device=cpu", "--python=" + python,
                                   "--harness-dir=" + SourceDir() +
                                       "/common/harness/testdata/fake_harness"};
  std::map<std::string, std::string> no_sandbox = {{"FAKE_HARNESS_NO_SANDBOX", "1"}};
  {
    Process p(base, no_sandbox, dir + "/required.log");
    int rc = p.Wait(absl::Seconds(60));
    INFO(p.Log());
    CHECK(rc == 1);
    CHECK(absl::StrContains(p.Log(), "the harness server did not start"));
    CHECK(absl::StrContains(p.Log(), "the sandbox is required but this host cannot give it"));
  }
  {
    std::vector<std::string> argv = base;
    argv.push_back("--sandbox=best-effort");
    argv.push_back("--sandbox-hide=/etc/kagent-test-secret");
    Process p(argv, no_sandbox, dir + "/best-effort.log");
    nlohmann::json ready = p.ReadyLine(absl::Seconds(60));
    INFO(p.Log());
    REQUIRE(ready.is_object());
    // Serving, with the flag's path and no restarts of its harness server.
    for (int i = 0; i < 50 && !absl::StrContains(p.Log(), "harness server ready"); ++i) {
      absl::SleepFor(absl::Milliseconds(100));
    }
    CHECK(absl::StrContains(p.Log(), "harness server ready"));
    CHECK(absl::StrContains(p.Log(), "/etc/kagent-test-secret"));
    CHECK(p.running());
    p.Signal(SIGTERM);
    CHECK(p.Wait(absl::Seconds(30)) == 0);
  }
  {
    std::vector<std::string> argv = base;
    argv.push_back("--sandbox=sometimes");
    std::string out, err;
    CHECK(RunCommand(argv, &out, &err) == 2);
    CHECK(absl::StrContains(err, "--sandbox must be required or best-effort, not 'sometimes'"));
  }
}

}  // namespace
}  // namespace kagent::testing
