// The harness protocol's JSON: measure requests and answers.
#include "common/harness/protocol.h"

#include <catch2/catch.hpp>

#include "kagent/v1/profiler_service.pb.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

// A measure request of a Triton kernel, with nothing optional set.
v1::MeasureRequest TritonMeasureRequest() {
  v1::MeasureRequest r;
  r.set_task_id("t");
  r.mutable_problem()->set_source("class Model: pass\ndef get_inputs(): pass");
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source("x");
  return r;
}

TEST_CASE("harness JSON maps onto Measurement") {
  auto j = nlohmann::json::parse(R"({
    "verdict": "INCORRECT", "reason": "max error 0.5 at [3]",
    "correctness": {"trials": 5, "trials_passed": 2, "max_abs_error": 0.5, "worst_index": "[3]"},
    "candidate": {"median_ms": 1.5, "mean_ms": 1.6, "p10_ms": 1.4, "p90_ms": 1.9, "count": 100},
    "eager": {"median_ms": 2.0, "count": 100},
    "op_signature": {"ops": [{"op": "aten::mm", "inputs": [{"shape": [4, 8], "strides": [8, 1], "dtype": "float32"}]}],
                     "flops": 512, "min_bytes": 100},
    "kernels_launched": ["k1"], "gpu_name": "NVIDIA H200", "unknown_field": 3})");
  auto m = MeasurementFromHarnessJson(j);
  REQUIRE(m.ok());
  CHECK(m->verdict() == v1::VERDICT_INCORRECT);
  CHECK(m->correctness().trials_passed() == 2);
  CHECK(m->correctness().reason() == "max error 0.5 at [3]");
  CHECK(m->candidate().count() == 100);
  CHECK(m->eager().median_ms() == 2.0);
  CHECK(m->op_signature().ops(0).inputs(0).shape(1) == 8);
  CHECK(m->kernels_launched(0) == "k1");
  CHECK(m->phases_ms().empty());  // an answer without harness.phases_ms
  CHECK_FALSE(MeasurementFromHarnessJson(nlohmann::json::parse("{}")).ok());
  CHECK_FALSE(MeasurementFromHarnessJson(nlohmann::json::parse(R"({"verdict": "BOGUS"})")).ok());
}

TEST_CASE("harness JSON: the phases' milliseconds come through, other entries do not") {
  auto j = nlohmann::json::parse(R"({
    "verdict": "CORRECT",
    "harness": {"phases_ms": {"candidate gate": 612.5, "candidate timing": 401.0,
                              "bogus": "x", "nested": {"a": 1}},
                "warnings": []}})");
  auto m = MeasurementFromHarnessJson(j);
  REQUIRE(m.ok());
  REQUIRE(m->phases_ms().size() == 2);
  CHECK(m->phases_ms().at("candidate gate") == 612.5);
  CHECK(m->phases_ms().at("candidate timing") == 401.0);
  CHECK(LargestPhases(m->phases_ms(), 1) == "candidate gate 612 ms");
  CHECK(LargestPhases(m->phases_ms(), 5) == "candidate gate 612 ms; candidate timing 401 ms");
  CHECK(LargestPhases(v1::Measurement().phases_ms(), 3).empty());
  j["harness"]["phases_ms"] = "not an object";
  m = MeasurementFromHarnessJson(j);
  REQUIRE(m.ok());
  CHECK(m->phases_ms().empty());
}

TEST_CASE("harness JSON: checks and warnings come through, bounded, strings only") {
  nlohmann::json j = {{"verdict", "CORRECT"}};
  nlohmann::json checks = nlohmann::json::array({"gate: 11 trials passed", 3});
  for (int i = 0; i < kMaxHarnessNotes + 5; ++i) checks.push_back("check " + std::to_string(i));
  // A long warning whose cut point falls inside a two-byte character (U+00E9).
  std::string long_warning(kMaxHarnessNoteChars - 1, 'w');
  long_warning += "\xc3\xa9 and more";
  j["harness"] = {{"checks", checks},
                  {"warnings", {"trial scale10 (wide): within it of the float64 reference",
                                long_warning}}};
  auto m = MeasurementFromHarnessJson(j);
  REQUIRE(m.ok());
  REQUIRE(m->checks_size() == kMaxHarnessNotes);
  CHECK(m->checks(0) == "gate: 11 trials passed");
  CHECK(m->checks(1) == "check 0");  // the number was not a note
  REQUIRE(m->warnings_size() == 2);
  CHECK(m->warnings(0) == "trial scale10 (wide): within it of the float64 reference");
  CHECK(m->warnings(1) == std::string(kMaxHarnessNoteChars - 1, 'w') + "...");
  j["harness"]["warnings"] = "not a list";
  m = MeasurementFromHarnessJson(j);
  REQUIRE(m.ok());
  CHECK(m->warnings().empty());
}

TEST_CASE("harness request: the op signature is skipped only when asked") {
  v1::MeasureRequest r = TritonMeasureRequest();
  auto j = HarnessRequestFor(r);
  REQUIRE(j.ok());
  CHECK_FALSE(j->contains("signature"));  // the harness's default: record it
  r.set_skip_op_signature(true);
  j = HarnessRequestFor(r);
  REQUIRE(j.ok());
  REQUIRE(j->contains("signature"));
  CHECK((*j)["signature"].is_boolean());
  CHECK((*j)["signature"] == false);
}

TEST_CASE("harness request: the timing budget is the harness's default unless set") {
  v1::MeasureRequest r = TritonMeasureRequest();
  auto j = HarnessRequestFor(r);
  REQUIRE(j.ok());
  CHECK_FALSE(j->contains("timing_budget_ms"));  // 0: the harness's own (1000 ms)
  r.set_timing_budget_ms(250);
  j = HarnessRequestFor(r);
  REQUIRE(j.ok());
  CHECK((*j)["timing_budget_ms"] == 250.0);
  r.set_timing_budget_ms(-1);  // none: every timed rep
  j = HarnessRequestFor(r);
  REQUIRE(j.ok());
  CHECK((*j)["timing_budget_ms"] == 0.0);
}

TEST_CASE("profile request: cupti_counters only when asked and the collection result parsed") {
  kagent::v1::ProfileRequest request;
  request.mutable_problem()->set_source("class Model: ...");
  request.mutable_kernel()->set_source("class ModelNew: ...");
  HarnessProfileParams params;
  nlohmann::json plain = nlohmann::json::parse(BuildHarnessProfileRequest(request, params));
  CHECK_FALSE(plain.contains("cupti_counters"));
  params.cupti_counters = {"dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"};
  nlohmann::json asked = nlohmann::json::parse(BuildHarnessProfileRequest(request, params));
  CHECK(asked["cupti_counters"] ==
        nlohmann::json::array({"dram__bytes_read.sum", "lts__t_sector_hit_rate.pct"}));

  absl::StatusOr<HarnessProfileResult> none = ParseHarnessProfileResult(R"({"ok":true})");
  REQUIRE(none.ok());
  CHECK_FALSE(none->cupti_counters_ran);
  absl::StatusOr<HarnessProfileResult> failed = ParseHarnessProfileResult(
      R"({"ok":true,"cupti_counters":{"ok":false,"passes":0,"error":"CUPTI_ERROR_INSUFFICIENT_PRIVILEGES"}})");
  REQUIRE(failed.ok());
  CHECK(failed->cupti_counters_ran);
  CHECK_FALSE(failed->cupti_counters_ok);
  CHECK(failed->cupti_counters_error == "CUPTI_ERROR_INSUFFICIENT_PRIVILEGES");
  absl::StatusOr<HarnessProfileResult> ran =
      ParseHarnessProfileResult(R"({"ok":true,"cupti_counters":{"ok":true,"passes":14}})");
  REQUIRE(ran.ok());
  CHECK(ran->cupti_counters_ok);
  CHECK(ran->cupti_counter_passes == 14);
}

}  // namespace
}  // namespace kagent

TEST_CASE("harness environment: the harness's folder, then the worker's PYTHONPATH") {
  const char* saved = std::getenv("PYTHONPATH");
  const std::string restore = saved != nullptr ? saved : "";
  setenv("PYTHONPATH", "/opt/site:/opt/more", 1);
  auto env = kagent::HarnessEnvironment("/opt/kagent/python", "cuda", "2", "/opt/libcupti.so");
  CHECK(env["PYTHONPATH"] == "/opt/kagent/python:/opt/site:/opt/more");
  CHECK(env["CUDA_VISIBLE_DEVICES"] == "2");
  CHECK(env.count("TRITON_INTERPRET") == 0);
  unsetenv("PYTHONPATH");
  CHECK(kagent::HarnessEnvironment("/opt/kagent/python", "cpu", "", "")["PYTHONPATH"] ==
        "/opt/kagent/python");
  CHECK(kagent::HarnessEnvironment("", "cpu", "", "").count("PYTHONPATH") == 0);
  if (saved != nullptr) setenv("PYTHONPATH", restore.c_str(), 1);
}
