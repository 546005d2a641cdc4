// Integration tests: the real kagentd and kagent binaries on loopback (ports chosen by
// the kernel), with a CPU worker that runs candidates under Triton's interpreter.
#include <catch2/catch.hpp>

#include <signal.h>

#include <fstream>
#include <memory>
#include <sstream>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/client.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "tests/integration/daemon.h"
#include "tests/integration/health.grpc.pb.h"
#include "tests/integration/process.h"

namespace kagent::testing {
namespace {

TEST_CASE("kagentd: health, reflection-ready server, and /metrics", "[integration]") {
  Daemon d(TempDir());
  auto health = grpc::health::v1::Health::NewStub(d.channel);
  for (const char* svc : {"", "kagent.liveness", "kagent.v1.JobService"}) {
    grpc::health::v1::HealthCheckRequest req;
    req.set_service(svc);
    grpc::health::v1::HealthCheckResponse resp;
    auto ctx = Ctx();
    REQUIRE(health->Check(ctx.get(), req, &resp).ok());
    CHECK(resp.status() == grpc::health::v1::HealthCheckResponse::SERVING);
  }
  // One call so the gRPC counters have a sample.
  v1::ListJobsRequest lr;
  v1::ListJobsResponse lresp;
  auto ctx = Ctx();
  REQUIRE(d.jobs->ListJobs(ctx.get(), lr, &lresp).ok());
  std::string metrics = HttpGet(d.metrics_port, "/metrics");
  for (const char* name : {"kagent_grpc_server_started_total", "kagent_grpc_server_handled_total",
                           "kagent_grpc_server_handling_seconds_bucket", "kagent_jobs",
                           "kagent_gpu_queue_depth", "kagent_gpu_workers", "kagent_build_info",
                           "kagent_benchmark_gpu_queue_depth"}) {
    INFO(name);
    CHECK(absl::StrContains(metrics, name));
  }
  CHECK(absl::StrContains(metrics, "method=\"ListJobs\""));
  // SIGTERM: drains and exits 0.
  d.proc->Signal(SIGTERM);
  CHECK(d.proc->Wait(absl::Seconds(30)) == 0);
}

TEST_CASE("kagentd: every bad input gets a precise status and stores nothing", "[integration]") {
  Daemon d(TempDir());
  auto submit = [&](v1::SubmitJobRequest r) {
    v1::SubmitJobResponse resp;
    auto ctx = Ctx();
    return d.jobs->SubmitJob(ctx.get(), r, &resp);
  };
  v1::SubmitJobRequest good = ReluAddJob(1);
  {
    v1::SubmitJobRequest r;
    CHECK(submit(r).error_code() == grpc::StatusCode::INVALID_ARGUMENT);  // missing problem
  }
  {
    auto r = good;
    r.mutable_problem()->set_source("");
    auto s = submit(r);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), "problem.source"));
  }
  {
    auto r = good;
    r.mutable_problem()->set_source(std::string(2 << 20, '#') + "class Model def get_inputs");
    CHECK(submit(r).error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  }
  {
    auto r = good;
    r.mutable_config()->mutable_budget()->set_max_rounds(-3);
    auto s = submit(r);
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), "max_rounds"));
  }
  {
    auto r = good;
    r.mutable_config()->mutable_budget()->set_max_wall_seconds(1e12);
    CHECK(submit(r).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    auto r = good;
    r.mutable_config()->set_strategy(static_cast<v1::SearchStrategy>(42));
    CHECK(submit(r).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    auto r = good;
    r.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_UNSPECIFIED);
    CHECK(submit(r).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  {
    auto r = good;
    r.mutable_config()->set_brain("gpt-99");
    CHECK(submit(r).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  // Unknown job, bad page size, bad state filter, negative resume point.
  v1::GetJobRequest g;
  g.set_job_id("job-doesnotexist");
  v1::GetJobResponse gr;
  auto c1 = Ctx();
  CHECK(d.jobs->GetJob(c1.get(), g, &gr).error_code() == grpc::StatusCode::NOT_FOUND);
  v1::ListJobsRequest l;
  l.set_page_size(100000);
  v1::ListJobsResponse lr;
  auto c2 = Ctx();
  CHECK(d.jobs->ListJobs(c2.get(), l, &lr).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  l.set_page_size(10);
  l.set_state(static_cast<v1::JobState>(99));
  auto c3 = Ctx();
  CHECK(d.jobs->ListJobs(c3.get(), l, &lr).error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  v1::CancelJobRequest cr;
  cr.set_job_id("job-doesnotexist");
  v1::CancelJobResponse cresp;
  auto c4 = Ctx();
  CHECK(d.jobs->CancelJob(c4.get(), cr, &cresp).error_code() == grpc::StatusCode::NOT_FOUND);
  // Nothing was stored by any of it.
  l.set_state(v1::JOB_STATE_UNSPECIFIED);
  auto c5 = Ctx();
  REQUIRE(d.jobs->ListJobs(c5.get(), l, &lr).ok());
  CHECK(lr.jobs_size() == 0);
  // Users cannot register workers.
  v1::RegisterWorkerRequest rw;
  rw.set_worker_id("w");
  rw.set_address("127.0.0.1:1");
  v1::RegisterWorkerResponse rwr;
  auto c6 = Ctx();
  // Auth is off here: every caller is trusted, so the call is judged on its content.
  CHECK(d.jobs->RegisterWorker(c6.get(), rw, &rwr).ok());
}

TEST_CASE("kagentd: auth on — tokens, tenants, and another tenant's job", "[integration]") {
  std::string dir = TempDir();
  std::ofstream(dir + "/tokens") << "alice-token-0123456789 alice\nbob-token-0123456789ab bob\n";
  Daemon d(dir, {"--tokens-file=" + dir + "/tokens"});
  v1::SubmitJobResponse resp;
  auto c0 = Ctx();
  CHECK(d.jobs->SubmitJob(c0.get(), ReluAddJob(1), &resp).error_code() ==
        grpc::StatusCode::UNAUTHENTICATED);
  auto c1 = Ctx("wrong-token");
  CHECK(d.jobs->SubmitJob(c1.get(), ReluAddJob(1), &resp).error_code() ==
        grpc::StatusCode::UNAUTHENTICATED);
  auto c2 = Ctx("alice-token-0123456789");
  REQUIRE(d.jobs->SubmitJob(c2.get(), ReluAddJob(1), &resp).ok());
  std::string job = resp.job().id();
  CHECK(resp.job().tenant() == "alice");
  // Bob can neither see nor cancel nor list Alice's job.
  v1::GetJobRequest g;
  g.set_job_id(job);
  v1::GetJobResponse gr;
  auto c3 = Ctx("bob-token-0123456789ab");
  CHECK(d.jobs->GetJob(c3.get(), g, &gr).error_code() == grpc::StatusCode::NOT_FOUND);
  v1::CancelJobRequest cr;
  cr.set_job_id(job);
  v1::CancelJobResponse cresp;
  auto c4 = Ctx("bob-token-0123456789ab");
  CHECK(d.jobs->CancelJob(c4.get(), cr, &cresp).error_code() == grpc::StatusCode::NOT_FOUND);
  v1::ListJobsRequest l;
  v1::ListJobsResponse lr;
  auto c5 = Ctx("bob-token-0123456789ab");
  REQUIRE(d.jobs->ListJobs(c5.get(), l, &lr).ok());
  CHECK(lr.jobs_size() == 0);
  auto c6 = Ctx("alice-token-0123456789");
  REQUIRE(d.jobs->ListJobs(c6.get(), l, &lr).ok());
  CHECK(lr.jobs_size() == 1);
  // A tenant token cannot register GPU workers.
  v1::RegisterWorkerRequest rw;
  rw.set_worker_id("w");
  rw.set_address("127.0.0.1:1");
  v1::RegisterWorkerResponse rwr;
  auto c7 = Ctx("alice-token-0123456789");
  CHECK(d.jobs->RegisterWorker(c7.get(), rw, &rwr).error_code() == grpc::StatusCode::PERMISSION_DENIED);
  // Alice cancels her job through the CLI (token from the environment).
  std::string out, err;
  std::vector<std::string> argv = {BinaryDir() + "/tools/kagent", "--server", d.addr(), "cancel", job};
  CHECK(RunCommand(argv, &out, &err, {{"KAGENT_TOKEN", "alice-token-0123456789"}}) == 0);
  CHECK(absl::StrContains(out, "CANCELLED"));
  CHECK(RunCommand(argv, &out, &err) == 1);  // no token
  CHECK(absl::StrContains(err, "UNAUTHENTICATED"));
}

TEST_CASE("kagentd: a real job end to end on the CPU worker, survives a restart", "[integration][slow]") {
  std::string dir = TempDir();
  std::string job;
  {
    Daemon d(dir);
    std::string out, err;
    int rc = d.Cli({"submit", Fixture("problem_relu_add.py"), "--kernel", Fixture("cand_relu_add_good.py"),
                    "--rounds", "1", "--beam", "1", "--workers", "1", "--watch"},
                   &out, &err);
    INFO(out << err << d.proc->Log().substr(0, 20000));
    CHECK(rc == 0);
    REQUIRE(absl::StrContains(out, "submitted job-"));
    job = out.substr(out.find("job-"), 16);
    CHECK(absl::StrContains(out, "DONE"));
    REQUIRE(d.Cli({"get", job}, &out) == 0);
    CHECK(absl::StrContains(out, "best kernel"));
    CHECK(absl::StrContains(out, "torch.compile"));
    // Under Triton's interpreter the kernel is far slower than PyTorch on the CPU: the job
    // is DONE and says to keep PyTorch, in worker-seconds, not GPU time.
    CHECK(absl::StrContains(out, "\ndeploy     keep PyTorch's "));
    CHECK(absl::StrContains(out, "worker-seconds"));
    CHECK_FALSE(absl::StrContains(out, "GPU-s"));
    REQUIRE(d.Cli({"list"}, &out) == 0);
    CHECK(absl::StrContains(out, job));
    REQUIRE(d.Cli({"export", job, dir + "/export"}, &out) == 0);
    CHECK(absl::StrContains(ReadFile(dir + "/export/report.html"), "Best speedup by round"));
    CHECK(!ReadFile(dir + "/export/best_kernel.py").empty());
    CHECK(absl::StrContains(ReadFile(dir + "/export/job.json"), "\"speedup_vs_eager\""));
    // The best kernel as a package (tools/package_test.cc runs a recorded job's pytest).
    REQUIRE(d.Cli({"export", job, dir + "/pkg", "--package"}, &out) == 0);
    CHECK(absl::StrContains(out, "wrote package kagent_problem_relu_add"));
    CHECK(ReadFile(dir + "/pkg/kagent_problem_relu_add/kernel.py") ==
          ReadFile(dir + "/export/best_kernel.py"));
    CHECK(absl::StrContains(ReadFile(dir + "/pkg/kagent_problem_relu_add/__init__.py"),
                            "torch.library.custom_op"));
    // examples/python_client.py (stubs from grpcio-tools) runs a second job whose starting
    // kernel is the package's kernel.py: the harness is warm, a few seconds.
    std::string py_out, py_err;
    int py_rc = RunCommand({SourceDir() + "/.venv/bin/python", SourceDir() + "/examples/python_client.py",
                            "--server", d.addr(), "--problem", Fixture("problem_relu_add.py"),
                            "--kernel", dir + "/pkg/kagent_problem_relu_add/kernel.py", "--name",
                            "relu_add_from_package"},
                           &py_out, &py_err, {}, absl::Minutes(3));
    INFO(py_out << py_err);
    CHECK(py_rc == 0);
    CHECK(absl::StrContains(py_out, "submitted job-"));
    CHECK(absl::StrContains(py_out, "config: beam_width 1 (set: True), fixes_per_kernel 1, max_rounds 1"));
    CHECK(absl::StrContains(py_out, "CANDIDATE_MEASURED: starting kernel: VERDICT_CORRECT"));
    CHECK(absl::StrContains(py_out, "JOB_FINISHED: done"));
    CHECK(absl::StrContains(py_out, " DONE\n"));
    CHECK(absl::StrContains(py_out, "(VERDICT_CORRECT): "));
    // Watching a finished job replays its events and ends.
    REQUIRE(d.Cli({"watch", job}, &out) == 0);
    CHECK(absl::StrContains(out, "job " + job + " DONE: keep PyTorch's "));
    // The CPU worker measured through its long-lived harness server, and took the GPU
    // slot for it; the server never had to be started again.
    std::string scrape = HttpGet(d.metrics_port, "/metrics");
    INFO(scrape);
    CHECK(absl::StrContains(d.proc->Log(), "harness server ready in"));
    CHECK_FALSE(absl::StrContains(d.proc->Log(), "one-shot measurements"));
    CHECK(Sample(scrape, "kagent_benchmark_candidates_measured_total") >= 1);
    CHECK(Sample(scrape, "kagent_benchmark_gpu_held_seconds_total") > 0);
    CHECK(Sample(scrape, "kagent_benchmark_gpu_busy_seconds_total") == 0);  // no NVML on the CPU
    CHECK(Sample(scrape, "kagent_harness_server_restarts_total") == 0);
    d.proc->Signal(SIGTERM);
    REQUIRE(d.proc->Wait(absl::Seconds(30)) == 0);
    CHECK(absl::StrContains(d.proc->Log(), "harness server stopped"));
  }
  Daemon again(dir);
  std::string out;
  REQUIRE(again.Cli({"get", job}, &out) == 0);
  CHECK(absl::StrContains(out, "DONE"));
  REQUIRE(again.Cli({"list"}, &out) == 0);
  CHECK(absl::StrContains(out, job));
}

}  // namespace
}  // namespace kagent::testing
