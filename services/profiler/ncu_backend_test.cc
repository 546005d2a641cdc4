#include "services/profiler/ncu_backend.h"

#include <algorithm>
#include <catch2/catch.hpp>

#include "services/profiler/ncu_metrics.h"
#include "services/profiler/testing/fake_runner.h"

namespace kagent {
namespace {

using ::kagent::testing::FakeRunner;
using ::kagent::testing::ReadFixture;

struct Fixture {
  std::unique_ptr<ScopedTempDir> dir = *ScopedTempDir::Create("kagent-ncu-test-");
  HarnessCommand harness{"python3", "/opt/kagent/python", "3", {}, 0};
  NcuBackendOptions options{"ncu", NcuMetricsForArch(90)};
  ProfileRun Run() { return ProfileRun{dir->path(), dir->path() + "/request.json",
                                       absl::Seconds(60), nullptr}; }
};

TEST_CASE("Builds the documented ncu command line", "[ncu_backend]") {
  Fixture f;
  std::vector<std::string> argv =
      BuildNcuArgv(f.options, f.harness, "/w/request.json", "/w/result.json", "/w/ncu.csv");
  const std::vector<std::string> head = {
      "ncu",           "--csv",  "--page",          "raw",  "--print-units",
      "base",          "--clock-control", "none",   "--nvtx", "--nvtx-include",
      "kagent_candidate/", "--metrics"};
  REQUIRE(argv.size() > head.size());
  CHECK(std::vector<std::string>(argv.begin(), argv.begin() + head.size()) == head);
  CHECK(argv[head.size()].find("gpu__time_duration.sum,") == 0);
  const std::vector<std::string> tail = {"--target-processes", "all", "--log-file",
                                         "/w/ncu.csv", "python3", "-m", "kagent_harness",
                                         "profile", "--request", "/w/request.json", "--out",
                                         "/w/result.json"};
  CHECK(std::vector<std::string>(argv.end() - tail.size(), argv.end()) == tail);
}

TEST_CASE("Runs ncu through the runner and parses its CSV", "[ncu_backend]") {
  Fixture f;
  FakeRunner runner;
  runner.ncu_csv = ReadFixture("h200_multi.csv");
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, f.Run());
  REQUIRE(profile.ok());
  CHECK(profile->report.kernels.size() == 3);
  CHECK(profile->raw_csv == runner.ncu_csv);
  // Requested metrics that came back are not missing.
  for (const char* name : {"gpu__time_duration.sum", "dram__bytes_read.sum",
                           "sm__throughput.avg.pct_of_peak_sustained_elapsed"}) {
    CHECK(std::find(profile->missing_metrics.begin(), profile->missing_metrics.end(), name) ==
          profile->missing_metrics.end());
  }
  REQUIRE(runner.calls().size() == 1);
  const SubprocessOptions call = runner.calls()[0];
  CHECK(call.env.at("CUDA_VISIBLE_DEVICES") == "3");
  CHECK(call.env.at("PYTHONPATH").rfind("/opt/kagent/python", 0) == 0);
  // Not the private work dir: ncu's injection in the sandboxed candidate must reach it.
  CHECK(call.env.at("TMPDIR") == kNcuTempDir);
  CHECK(call.working_dir == f.dir->path());
  CHECK(call.timeout == absl::Seconds(60));
  CHECK_FALSE(call.isolate_network);
}

TEST_CASE("Reports requested metrics ncu did not return", "[ncu_backend]") {
  Fixture f;
  f.options.metrics = {"gpu__time_duration.sum", "launch__grid_size"};
  f.options.metrics.push_back("sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active");
  FakeRunner runner;
  runner.ncu_csv = ReadFixture("h200_triton_add.csv");
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, f.Run());
  REQUIRE(profile.ok());
  CHECK(profile->missing_metrics ==
        std::vector<std::string>{
            "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active"});
}

TEST_CASE("ncu missing is FAILED_PRECONDITION with the fix", "[ncu_backend]") {
  Fixture f;
  FakeRunner runner;
  runner.ncu_available = false;
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, f.Run());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(profile.status().message() ==
        "ncu not found on PATH; install Nsight Compute or use the cupti backend");

  // Also through the real runner, with a path that does not exist.
  f.options.ncu_path = "/nonexistent/ncu";
  profile = RunNcuProfile(DefaultCommandRunner(), f.options, f.harness, f.Run());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Counter permission errors say how to fix them", "[ncu_backend]") {
  Fixture f;
  FakeRunner runner;
  runner.ncu_csv =
      "==PROF== Connected to process 7 (/usr/bin/python3)\n"
      "==ERROR== ERR_NVGPUCTRPERM - The user does not have permission to access NVIDIA GPU "
      "Performance Counters on the target device 0.\n";
  runner.result.exit_code = 1;
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, f.Run());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kPermissionDenied);
  CHECK(profile.status().message().find("NVreg_RestrictProfilingToAdminUsers=0") !=
        absl::string_view::npos);
  CHECK(profile.status().message().find("root") != absl::string_view::npos);
}

TEST_CASE("An empty range says the candidate launched nothing", "[ncu_backend]") {
  Fixture f;
  FakeRunner runner;
  runner.ncu_csv = ReadFixture("h200_empty.csv");
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, f.Run());
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(profile.status().message().find("no kernels captured") != absl::string_view::npos);
}

TEST_CASE("Timeouts, cancellation, crashes and candidate failures", "[ncu_backend]") {
  Fixture f;
  FakeRunner runner;
  runner.ncu_csv = ReadFixture("h200_multi.csv");
  runner.result.exited = false;
  runner.result.term_signal = 15;
  runner.result.timed_out = true;
  CHECK(RunNcuProfile(&runner, f.options, f.harness, f.Run()).status().code() ==
        absl::StatusCode::kDeadlineExceeded);
  runner.result.timed_out = false;
  runner.result.cancelled = true;
  CHECK(RunNcuProfile(&runner, f.options, f.harness, f.Run()).status().code() ==
        absl::StatusCode::kCancelled);
  runner.result.cancelled = false;
  runner.result.term_signal = 11;
  CHECK(RunNcuProfile(&runner, f.options, f.harness, f.Run()).status().code() ==
        absl::StatusCode::kInternal);

  FakeRunner failing;
  failing.ncu_csv = ReadFixture("h200_empty.csv");
  failing.harness_result = R"({"ok":false,"verdict":"CRASH","reason":"signal 11"})";
  absl::Status status = RunNcuProfile(&failing, f.options, f.harness, f.Run()).status();
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(status.message().find("CRASH: signal 11") != absl::string_view::npos);
}

}  // namespace
}  // namespace kagent
