#include "services/profiler/ncu_backend.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <catch2/catch.hpp>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

#include "kernel_model/ncu_metrics.h"
#include "services/profiler/testing/fake_runner.h"

namespace kagent {
namespace {

using ::kagent::testing::FakeRunner;
using ::kagent::testing::ReadFixture;

struct Fixture {
  std::unique_ptr<ScopedTempDir> dir = *ScopedTempDir::Create("kagent-ncu-test-");
  HarnessCommand harness{"python3", "/opt/kagent/python", "3", {}, 0};
  // The host's ncu lock in the test's own folder: tests do not wait on a real ncu run.
  NcuBackendOptions options{"ncu", NcuMetricsForArch(90), std::nullopt, dir->path() + "/ncu.lock"};
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

TEST_CASE("ncu waits for the host's other ncu run, within its time", "[ncu_backend]") {
  Fixture f;
  FakeRunner runner;
  runner.ncu_csv = ReadFixture("h200_multi.csv");
  NcuHostLock other(f.options.lock_path);  // another profile's ncu run on this host
  REQUIRE(other.Acquire(absl::Seconds(1), nullptr).ok());
  ProfileRun run = f.Run();
  run.timeout = absl::Milliseconds(300);
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, run);
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(runner.calls().empty());  // ncu never started beside the other run

  // Released while this one waits: it runs, with what is left of its time.
  std::thread release([&other] {
    absl::SleepFor(absl::Milliseconds(300));
    other.Release();
  });
  run.timeout = absl::Seconds(30);
  profile = RunNcuProfile(&runner, f.options, f.harness, run);
  release.join();
  REQUIRE(profile.ok());
  REQUIRE(runner.calls().size() == 1);
  CHECK(runner.calls()[0].timeout <= absl::Seconds(30) - absl::Milliseconds(250));
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

namespace kagent {
namespace {

TEST_CASE("As the sandbox's user: ncu under setpriv, the run's files in a directory of that user's",
          "[ncu_backend]") {
  Fixture f;
  absl::StatusOr<NcuUser> nobody = LookUpUser("nobody");
  REQUIRE(nobody.ok());
  f.options.run_as = *nobody;
  ProfileRun run = f.Run();
  {
    std::ofstream(run.request_path) << "{\"mode\": \"profile\"}";
  }
  FakeRunner runner;
  runner.ncu_csv = ReadFixture("h200_multi.csv");
  std::string seen_dir;
  bool owned = false;
  bool request_there = false;
  runner.on_run = [&](const SubprocessOptions& o) {
    seen_dir = o.working_dir;
    struct stat st;
    owned = ::stat(o.working_dir.c_str(), &st) == 0 && st.st_uid == nobody->uid &&
            (st.st_mode & 0777) == 0700;
    request_there = std::filesystem::exists(o.working_dir + "/request.json");
  };
  absl::StatusOr<NcuProfile> profile = RunNcuProfile(&runner, f.options, f.harness, run);
  INFO(profile.status().ToString());
  REQUIRE(profile.ok());
  CHECK(profile->report.kernels.size() == 3);
  REQUIRE(runner.calls().size() == 1);
  const std::vector<std::string> argv = runner.calls()[0].argv;
  REQUIRE(argv.size() > 6);
  CHECK(std::vector<std::string>(argv.begin(), argv.begin() + 6) ==
        std::vector<std::string>{"setpriv", absl::StrCat("--reuid=", nobody->uid),
                                 absl::StrCat("--regid=", nobody->gid), "--clear-groups", "--",
                                 "ncu"});
  // Not the caller's private dir (the user could not enter it), and gone afterwards.
  CHECK(absl::StartsWith(seen_dir, std::string(kNcuTempDir) + "/kagent-ncu-"));
  CHECK(owned);
  CHECK(request_there);
  CHECK(std::find(argv.begin(), argv.end(), seen_dir + "/request.json") != argv.end());
  CHECK(runner.calls()[0].env.at("HOME") == seen_dir);
  CHECK_FALSE(std::filesystem::exists(seen_dir));

  // Without setpriv, a clear error before anything runs.
  runner.missing_programs.insert("setpriv");
  profile = RunNcuProfile(&runner, f.options, f.harness, run);
  REQUIRE_FALSE(profile.ok());
  CHECK(profile.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(profile.status().message(), "setpriv"));
  CHECK(runner.calls().size() == 1);
}

TEST_CASE("ncu's user: looked up by name or uid, refused when unknown", "[ncu_backend]") {
  absl::StatusOr<NcuUser> nobody = LookUpUser("nobody");
  REQUIRE(nobody.ok());
  CHECK(nobody->name == "nobody");
  absl::StatusOr<NcuUser> by_uid = LookUpUser(std::to_string(nobody->uid));
  REQUIRE(by_uid.ok());
  CHECK(by_uid->name == "nobody");
  CHECK(LookUpUser("kagent-no-such-user").status().code() == absl::StatusCode::kNotFound);
  CHECK(RunAsUser(*nobody, {"ncu", "-x"}).back() == "-x");
  // As root: the sandbox's user (nobody unless KAGENT_CHILD_USER names another); as
  // anyone else: none (ncu runs as this process, as its candidates do).
  absl::StatusOr<std::optional<NcuUser>> user = NcuUserForSandbox();
  REQUIRE(user.ok());
  if (geteuid() == 0 && std::getenv("KAGENT_CHILD_USER") == nullptr) {
    REQUIRE(user->has_value());
    CHECK((*user)->name == "nobody");
  } else if (geteuid() != 0) {
    CHECK_FALSE(user->has_value());
  }
}

}  // namespace
}  // namespace kagent
