#include "services/profiler/cupti_backend.h"

#include <catch2/catch.hpp>

#include "kernel_model/ncu_metrics.h"
#include "services/profiler/testing/fake_runner.h"

namespace kagent {
namespace {

using ::kagent::testing::FakeRunner;
using ::kagent::testing::ReadFixture;

TEST_CASE("Parses the tracer's JSON lines recorded on the H200", "[cupti_backend]") {
  CuptiTrace trace = ParseCuptiTrace(ReadFixture("h200_cupti_multi.jsonl"));
  CHECK(trace.malformed_lines == 0);
  CHECK(trace.markers.size() == 2);
  REQUIRE(trace.kernels.size() == 14);
  // The recorded harness-less run marks its window candidate_begin / candidate_end.
  absl::StatusOr<std::vector<kagent::v1::KernelMetrics>> kernels =
      CuptiKernelsInWindows(trace, "candidate_begin", "candidate_end");
  REQUIRE(kernels.ok());
  REQUIRE(kernels->size() == 3);
  CHECK((*kernels)[0].kernel_name() == "_add_kernel");
  CHECK((*kernels)[0].duration_ns() == 1795965287427396318ULL - 1795965287427383198ULL);
  CHECK((*kernels)[0].values().at("gpu__time_duration.sum") == (*kernels)[0].duration_ns());
  CHECK((*kernels)[0].values().at("launch__grid_size") == 4096);
  CHECK((*kernels)[0].values().at("launch__block_size") == 128);
  CHECK((*kernels)[2].kernel_name().find("reduce_kernel") != std::string::npos);
  CHECK((*kernels)[2].grid(1) == 512);
  CHECK((*kernels)[1].invocation() == 1);
}

TEST_CASE("Kernels outside every marker window are left out", "[cupti_backend]") {
  CuptiTrace trace = ParseCuptiTrace(
      R"({"type":"kernel","name":"warmup","start_ns":5,"end_ns":9,"stream":7,"device":0,"grid":[1,1,1],"block":[32,1,1],"correlation":1})"
      "\n"
      R"({"type":"marker","name":"profile_begin","ts_ns":10})"
      "\n"
      R"({"type":"kernel","name":"k","start_ns":12,"end_ns":20,"stream":7,"device":0,"grid":[2,1,1],"block":[64,1,1],"correlation":2})"
      "\n"
      R"({"type":"marker","name":"profile_end","ts_ns":30})"
      "\n"
      R"({"type":"kernel","name":"after","start_ns":40,"end_ns":50,"stream":7,"device":0,"grid":[1,1,1],"block":[1,1,1],"correlation":3})"
      "\n"
      R"({"type":"marker","name":"profile_begin","ts_ns":60})"
      "\n"
      R"({"type":"kernel","name":"k","start_ns":61,"end_ns":65,"stream":7,"device":0,"grid":[2,1,1],"block":[64,1,1],"correlation":4})"
      "\n"
      R"({"type":"marker","name":"profile_end","ts_ns":70})"
      "\nnot json\n");
  CHECK(trace.malformed_lines == 1);
  absl::StatusOr<std::vector<kagent::v1::KernelMetrics>> kernels = CuptiKernelsInWindows(trace);
  REQUIRE(kernels.ok());
  REQUIRE(kernels->size() == 2);
  CHECK((*kernels)[0].duration_ns() == 8);
  CHECK((*kernels)[1].duration_ns() == 4);

  CuptiTrace unmarked = ParseCuptiTrace(
      R"({"type":"kernel","name":"k","start_ns":1,"end_ns":2,"stream":7,"device":0,"grid":[1,1,1],"block":[1,1,1],"correlation":1})");
  CHECK(CuptiKernelsInWindows(unmarked).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("The CUPTI backend lists what it cannot measure", "[cupti_backend]") {
  std::vector<std::string> missing = CuptiMissingMetrics(90);
  CHECK(missing.size() == NcuMetricsForArch(90).size() - 3);
  CHECK(std::find(missing.begin(), missing.end(), "gpu__time_duration.sum") == missing.end());
  CHECK(std::find(missing.begin(), missing.end(), "dram__bytes_read.sum") != missing.end());
}

TEST_CASE("Runs the harness with the tracer injected", "[cupti_backend]") {
  auto dir = *ScopedTempDir::Create("kagent-cupti-test-");
  FakeRunner runner;
  runner.cupti_trace =
      R"({"type":"marker","name":"profile_begin","ts_ns":10})"
      "\n"
      R"({"type":"kernel","name":"k","start_ns":12,"end_ns":20,"stream":7,"device":0,"grid":[2,1,1],"block":[64,1,1],"correlation":2})"
      "\n"
      R"({"type":"marker","name":"profile_end","ts_ns":30})"
      "\n";
  const std::string library = std::string(KAGENT_FIXTURE_DIR) + "/README.md";  // any file
  HarnessCommand harness{"python3", "", "0", {}, 0};
  ProfileRun run{dir->path(), dir->path() + "/request.json", absl::Seconds(30), nullptr};
  absl::StatusOr<CuptiProfile> profile =
      RunCuptiProfile(&runner, CuptiBackendOptions{library}, harness, run);
  REQUIRE(profile.ok());
  REQUIRE(profile->kernels.size() == 1);
  CHECK(profile->kernels[0].duration_ns() == 8);
  const SubprocessOptions call = runner.calls().at(0);
  CHECK(call.env.at("CUDA_INJECTION64_PATH") == library);
  CHECK(call.env.at("KAGENT_CUPTI_LIB") == library);
  CHECK(call.env.at("KAGENT_CUPTI_OUT") == dir->path() + "/cupti.jsonl");
  CHECK(call.argv.at(3) == "profile");

  // The harness may return the records in its result instead.
  FakeRunner returning;
  returning.harness_result =
      R"({"ok":true,"cupti_records":[{"type":"marker","name":"profile_begin","ts_ns":1},)"
      R"({"type":"kernel","name":"k","start_ns":2,"end_ns":7,"stream":7,"device":0,)"
      R"("grid":[1,1,1],"block":[32,1,1],"correlation":1},)"
      R"({"type":"marker","name":"profile_end","ts_ns":9}]})";
  auto fresh = *ScopedTempDir::Create("kagent-cupti-test-");
  ProfileRun fresh_run{fresh->path(), fresh->path() + "/request.json", absl::Seconds(30),
                       nullptr};
  absl::StatusOr<CuptiProfile> from_result =
      RunCuptiProfile(&returning, CuptiBackendOptions{library}, harness, fresh_run);
  REQUIRE(from_result.ok());
  REQUIRE(from_result->kernels.size() == 1);
  CHECK(from_result->kernels[0].duration_ns() == 5);

  CHECK(RunCuptiProfile(&runner, CuptiBackendOptions{"/nonexistent.so"}, harness, run)
            .status()
            .code() == absl::StatusCode::kFailedPrecondition);
}

}  // namespace
}  // namespace kagent
