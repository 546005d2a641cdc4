// An ablation arm end to end (docs/benchmarks.md, "Does the guidance pay?"): the real
// kagentd with its CPU worker (Triton's interpreter) and the real heuristic brain run a
// one-problem suite as the blind-sweep arm through `kagent bench`, and `kagent bench
// --compare` reads the result back.
#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"
#include "nlohmann/json.hpp"
#include "tests/integration/daemon.h"
#include "tests/integration/process.h"

namespace kagent::testing {
namespace {

namespace fs = std::filesystem;

TEST_CASE("kagentd: a blind-sweep bench arm end to end on the CPU worker, then --compare",
          "[integration][slow]") {
  const std::string dir = TempDir();
  fs::create_directories(dir + "/suite");
  fs::copy_file(Fixture("problem_relu_add.py"), dir + "/suite/relu_add.py");
  fs::copy_file(Fixture("cand_relu_add_good.py"), dir + "/suite/relu_add_start.py");
  Daemon d(dir);
  std::string out, err;
  int rc = d.Cli({"bench", dir + "/suite", "--out", dir + "/blind", "--run-id", "e2e",
                  "--ablation", "blind-sweep", "--sweep-seed", "3", "--rounds", "1",
                  "--beam-width", "1", "--fixes-per-kernel", "1", "--poll-seconds", "0.5"},
                 &out, &err);
  INFO(out << err << d.proc->Log().substr(0, 20000));
  CHECK(rc == 0);
  const nlohmann::json results =
      nlohmann::json::parse(ReadFile(dir + "/blind/results.json"), nullptr, false);
  REQUIRE(results.is_object());
  CHECK(results["settings"]["ablation"] == "blind-sweep");
  CHECK(results["settings"]["sweep_seed"] == 3);
  const nlohmann::json& row = results["problems"][0];
  CHECK(row["state"] == "DONE");
  CHECK(row["gpu_trajectory"].size() == 1);
  CHECK(absl::StrContains(ReadFile(dir + "/blind/results.md"), "Arm: **blind-sweep**"));
  CHECK(absl::StrContains(ReadFile(dir + "/blind/results.md"), "## Stop rules"));
  CHECK(fs::exists(dir + "/blind/gpu_curve.svg"));

  // The job says what it ran; its round was a blind move of the brain, not a diagnosis.
  const std::string job = row["job_id"].get<std::string>();
  REQUIRE(d.Cli({"get", job}, &out) == 0);
  CHECK(absl::StrContains(out, "ablation   BLIND_SWEEP  (sweep seed 3)"));
  REQUIRE(d.Cli({"watch", job}, &out) == 0);
  CHECK(absl::StrContains(out, "round 1: blind sweep, 1 random move(s) of the brain (sweep seed 3)"));
  CHECK(absl::StrContains(out, "blind-sweep"));
  CHECK_FALSE(absl::StrContains(out, "no profile of"));  // nothing was diagnosed

  REQUIRE(d.Cli({"bench", "--compare", "--out", dir + "/cmp", dir + "/blind/results.json"}, &out,
                &err) == 0);
  CHECK(absl::StrContains(out, "1. blind-sweep (e2e): 1 problems"));
  CHECK(absl::StrContains(ReadFile(dir + "/cmp/compare.md"), "| relu_add |"));

  // One job of an arm through `kagent submit`: the server stores it and get names it.
  REQUIRE(d.Cli({"submit", dir + "/suite/relu_add.py", "--kernel", dir + "/suite/relu_add_start.py",
                 "--ablation", "no-reflexion", "--rounds", "1"},
                &out, &err) == 0);
  INFO(out << err);
  // "submitted job-... (relu_add)"
  REQUIRE(absl::StartsWith(out, "submitted job-"));
  const std::string submitted = out.substr(10, out.find(' ', 10) - 10);
  REQUIRE(d.Cli({"get", submitted}, &out) == 0);
  CHECK(absl::StrContains(out, "ablation   NO_REFLEXION"));
}

}  // namespace
}  // namespace kagent::testing
