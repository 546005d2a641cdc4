#include "services/profiler/cupti_backend.h"

#include <sys/stat.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>

#include "absl/strings/match.h"

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

// A hand-written trace, not a recorded one: two profiled forwards of a two-kernel
// candidate, then the range profiler's lines of its passes (one forward: two ranges).
constexpr char kTraceWithCounters[] =
    R"({"type":"marker","name":"profile_begin","ts_ns":100})"
    "\n"
    R"({"type":"kernel","name":"a","start_ns":110,"end_ns":120,"stream":7,"device":0,"grid":[4,1,1],"block":[128,1,1],"correlation":1,"registers":32,"static_smem":0,"dynamic_smem":8192})"
    "\n"
    R"({"type":"kernel","name":"b","start_ns":130,"end_ns":160,"stream":7,"device":0,"grid":[1,1,1],"block":[256,1,1],"correlation":2,"registers":40,"static_smem":1024,"dynamic_smem":0})"
    "\n"
    R"({"type":"kernel","name":"a","start_ns":170,"end_ns":180,"stream":7,"device":0,"grid":[4,1,1],"block":[128,1,1],"correlation":3,"registers":32,"static_smem":0,"dynamic_smem":8192})"
    "\n"
    R"({"type":"kernel","name":"b","start_ns":190,"end_ns":220,"stream":7,"device":0,"grid":[1,1,1],"block":[256,1,1],"correlation":4,"registers":40,"static_smem":1024,"dynamic_smem":0})"
    "\n"
    R"({"type":"marker","name":"profile_end","ts_ns":300})"
    "\n"
    R"({"type":"counters","range":1,"name":"b","values":{"sm__throughput.avg.pct_of_peak_sustained_elapsed":20.0,"dram__bytes_read.sum":4096,"gpu__time_duration.sum":999,"lts__t_sector_hit_rate.pct":null}})"
    "\n"
    R"({"type":"counters","range":0,"name":"a","values":{"sm__throughput.avg.pct_of_peak_sustained_elapsed":80.0,"dram__bytes_read.sum":1048576,"lts__t_sector_hit_rate.pct":50.5}})"
    "\n"
    R"({"type":"counters_meta","passes":12,"ranges":2,"dropped":0,"missing":["sm__maximum_warps_per_active_cycle_pct"],"chip":"GH100"})"
    "\n";

TEST_CASE("Counters lines are parsed in range order with nulls left out", "[cupti_backend]") {
  CuptiTrace trace = ParseCuptiTrace(kTraceWithCounters);
  CHECK(trace.malformed_lines == 0);
  REQUIRE(trace.counters_meta.has_value());
  CHECK(trace.counters_meta->passes == 12);
  CHECK(trace.counters_meta->chip == "GH100");
  CHECK(trace.counters_meta->missing ==
        std::vector<std::string>{"sm__maximum_warps_per_active_cycle_pct"});
  REQUIRE(trace.counters.size() == 2);
  CHECK(trace.counters[0].name == "a");
  CHECK(trace.counters[0].values.at("lts__t_sector_hit_rate.pct") == 50.5);
  CHECK_FALSE(trace.counters[1].values.contains("lts__t_sector_hit_rate.pct"));
  REQUIRE(trace.kernels.size() == 4);
  CHECK(trace.kernels[1].registers == 40);
  CHECK(trace.kernels[1].static_smem == 1024);
}

TEST_CASE("Range i goes to the i-th kernel of every profiled forward", "[cupti_backend]") {
  CuptiTrace trace = ParseCuptiTrace(kTraceWithCounters);
  std::vector<kagent::v1::KernelMetrics> kernels = *CuptiKernelsInWindows(trace);
  REQUIRE(kernels.size() == 4);
  CHECK(kernels[0].values().at("launch__registers_per_thread") == 32);
  CHECK(kernels[0].values().at("launch__shared_mem_per_block_dynamic") == 8192);
  CHECK(kernels[1].values().at("launch__shared_mem_per_block_static") == 1024);
  REQUIRE(MergeCuptiCounters(trace, &kernels).ok());
  for (size_t k : {0, 2}) {
    CHECK(kernels[k].values().at("sm__throughput.avg.pct_of_peak_sustained_elapsed") == 80.0);
    CHECK(kernels[k].values().at("dram__bytes_read.sum") == 1048576);
  }
  for (size_t k : {1, 3}) {
    CHECK(kernels[k].values().at("dram__bytes_read.sum") == 4096);
    CHECK_FALSE(kernels[k].values().contains("lts__t_sector_hit_rate.pct"));
    // The trace's exact duration is kept over the profiled one.
    CHECK(kernels[k].values().at("gpu__time_duration.sum") == 30);
  }
  // Missing: what no kernel has, never what one of them has.
  std::vector<std::string> missing = CuptiMissingMetrics(90, kernels);
  auto listed = [&](const char* name) {
    return std::find(missing.begin(), missing.end(), name) != missing.end();
  };
  CHECK_FALSE(listed("dram__bytes_read.sum"));
  CHECK_FALSE(listed("lts__t_sector_hit_rate.pct"));
  CHECK_FALSE(listed("launch__registers_per_thread"));
  CHECK(listed("dram__bytes_write.sum"));
  CHECK(listed("launch__waves_per_multiprocessor"));
}

TEST_CASE("Counters that do not fit the forwards are left out with the reason", "[cupti_backend]") {
  CuptiTrace trace = ParseCuptiTrace(kTraceWithCounters);
  std::vector<kagent::v1::KernelMetrics> kernels = *CuptiKernelsInWindows(trace);
  kernels.pop_back();  // three kernels, two ranges per forward
  absl::Status status = MergeCuptiCounters(trace, &kernels);
  CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(status.message(), "2 kernels per pass"));
  CHECK_FALSE(kernels[0].values().contains("dram__bytes_read.sum"));

  CuptiTrace dropped = trace;
  dropped.counters_meta->dropped = 3;
  kernels = *CuptiKernelsInWindows(trace);
  CHECK(absl::StrContains(MergeCuptiCounters(dropped, &kernels).message(), "dropped 3"));
  CuptiTrace none = ParseCuptiTrace("");
  CHECK(MergeCuptiCounters(none, &kernels).code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("The range profiler is asked for the set minus launch figures and duration",
          "[cupti_backend]") {
  std::vector<std::string> asked = CuptiCounterMetrics(90);
  CHECK(asked.size() > 20);
  for (const std::string& name : asked) {
    CHECK_FALSE(absl::StartsWith(name, "launch__"));
    CHECK_FALSE(absl::StartsWith(name, "smsp__sass_"));
    CHECK(name != "gpu__time_duration.sum");
  }
  CHECK(std::find(asked.begin(), asked.end(), "dram__bytes_read.sum") != asked.end());
  // A trace without counters misses everything but what the trace gives.
  CuptiTrace trace = ParseCuptiTrace(kTraceWithCounters);
  std::vector<std::string> missing = CuptiMissingMetrics(90, *CuptiKernelsInWindows(trace));
  CHECK(missing.size() == NcuMetricsForArch(90).size() - 6);
}

TEST_CASE("Runs the harness with the tracer injected", "[cupti_backend]") {
  auto dir = *ScopedTempDir::Create("kagent-cupti-test-");
  FakeRunner runner;
  runner.cupti_trace = ::kagent::testing::kOneKernelCuptiTrace;
  const std::string library = std::string(KAGENT_FIXTURE_DIR) + "/README.md";  // any file
  HarnessCommand harness{"python3", "", "0", {}, 0};
  ProfileRun run{dir->path(), dir->path() + "/request.json", absl::Seconds(30), nullptr};
  absl::StatusOr<CuptiProfile> profile =
      RunCuptiProfile(&runner, CuptiBackendOptions{library}, harness, run);
  REQUIRE(profile.ok());
  REQUIRE(profile->kernels.size() == 1);
  CHECK(profile->kernels[0].duration_ns() == 8);
  CHECK(profile->counter_passes == 0);
  CHECK(CuptiAuditHeader(*profile).rfind(
            "# backend cupti: trace only (no counters asked for); missing: ", 0) == 0);
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

TEST_CASE("As the sandbox's user: the harness under setpriv, its files in that user's directory",
          "[cupti_backend]") {
  absl::StatusOr<NcuUser> nobody = LookUpUser("nobody");
  REQUIRE(nobody.ok());
  auto dir = *ScopedTempDir::Create("kagent-cupti-test-");
  {
    std::ofstream(dir->path() + "/request.json") << "{\"mode\": \"profile\"}";
  }
  FakeRunner runner;
  runner.cupti_trace = ::kagent::testing::kOneKernelCuptiTrace;
  std::string seen_dir;
  bool owned = false;
  runner.on_run = [&](const SubprocessOptions& o) {
    seen_dir = o.working_dir;
    struct stat st;
    owned = ::stat(o.working_dir.c_str(), &st) == 0 && st.st_uid == nobody->uid &&
            std::filesystem::exists(o.working_dir + "/request.json");
  };
  const std::string library = std::string(KAGENT_FIXTURE_DIR) + "/README.md";  // any file
  HarnessCommand harness{"python3", "", "0", {}, 0};
  ProfileRun run{dir->path(), dir->path() + "/request.json", absl::Seconds(30), nullptr};
  CuptiBackendOptions options{library, 90, *nobody};
  absl::StatusOr<CuptiProfile> profile = RunCuptiProfile(&runner, options, harness, run);
  INFO(profile.status().ToString());
  REQUIRE(profile.ok());
  CHECK(profile->kernels.size() == 1);
  const SubprocessOptions call = runner.calls().at(0);
  CHECK(call.argv.at(0) == "setpriv");
  CHECK(absl::StartsWith(seen_dir, std::string(kNcuTempDir) + "/kagent-ncu-"));
  CHECK(owned);
  CHECK(call.env.at("KAGENT_CUPTI_OUT") == seen_dir + "/cupti.jsonl");
  CHECK(call.env.at("HOME") == seen_dir);
  CHECK(call.env.at("TMPDIR") == kNcuTempDir);  // the candidate's workdir where ncu's goes
  CHECK_FALSE(std::filesystem::exists(seen_dir));  // removed at the end

  runner.missing_programs.insert("setpriv");
  CHECK(RunCuptiProfile(&runner, options, harness, run).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Counters are merged when collected and the trace stands alone when not",
          "[cupti_backend]") {
  const std::string library = std::string(KAGENT_FIXTURE_DIR) + "/README.md";  // any file
  // One profile whose harness returned `result`, over kTraceWithCounters.
  auto profile_with = [&library](const char* result) {
    auto dir = *ScopedTempDir::Create("kagent-cupti-test-");
    FakeRunner runner;
    runner.cupti_trace = kTraceWithCounters;
    runner.harness_result = result;
    ProfileRun run{dir->path(), dir->path() + "/request.json", absl::Seconds(30), nullptr};
    return RunCuptiProfile(&runner, CuptiBackendOptions{library}, {"python3", "", "0", {}, 0},
                           run);
  };
  absl::StatusOr<CuptiProfile> counted =
      profile_with(R"({"ok":true,"cupti_counters":{"ok":true,"passes":12}})");
  REQUIRE(counted.ok());
  CHECK(counted->counter_passes == 12);
  CHECK(counted->kernels.at(3).values().at("dram__bytes_read.sum") == 4096);
  CHECK(CuptiAuditHeader(*counted)
            .rfind("# backend cupti: counters via the range profiler (12 passes", 0) == 0);
  absl::StatusOr<CuptiProfile> failed = profile_with(
      R"({"ok":true,"cupti_counters":{"ok":false,"passes":0,"error":"begin: no context"}})");
  REQUIRE(failed.ok());
  CHECK(failed->kernels.size() == 4);
  CHECK_FALSE(failed->kernels[0].values().contains("dram__bytes_read.sum"));
  CHECK(failed->counters_note == "counters not collected: begin: no context");
  CHECK(CuptiAuditHeader(*failed).rfind(
            "# backend cupti: trace only (counters not collected: begin: no context)", 0) == 0);
}

}  // namespace
}  // namespace kagent
