// Benchmark worker tests: the GPU slot, the harness JSON mapping, request validation,
// and the real harness run end to end on the CPU (Triton's interpreter).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <future>
#include <sstream>
#include <vector>

#include "services/benchmark/benchmark_service.h"
#include "services/benchmark/gpu_slot.h"
#include "services/benchmark/harness_client.h"
#include "services/benchmark/worker_setup.h"

namespace kagent {
namespace {

std::string SourceDir() {
  const char* d = std::getenv("KAGENT_SOURCE_DIR");
  return d ? d : ".";
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("gpu slot: one holder at a time, round-robin across jobs") {
  GpuSlot slot;
  REQUIRE(slot.Acquire("a", absl::InfiniteFuture(), nullptr).ok());
  std::vector<std::string> order;
  absl::Mutex mu;
  std::vector<std::future<void>> fs;
  auto take = [&](std::string job) {
    REQUIRE(slot.Acquire(job, absl::InfiniteFuture(), nullptr).ok());
    {
      absl::MutexLock l(&mu);
      order.push_back(job);
    }
    slot.Release();
  };
  // Three of job a queue before one of job b.
  for (int i = 0; i < 3; ++i) {
    fs.push_back(std::async(std::launch::async, take, "a"));
    absl::SleepFor(absl::Milliseconds(20));
  }
  fs.push_back(std::async(std::launch::async, take, "b"));
  absl::SleepFor(absl::Milliseconds(50));
  CHECK(slot.queue_depth() == 4);
  slot.Release();
  for (auto& f : fs) f.get();
  REQUIRE(order.size() == 4);
  // b is served no later than second: a's queue cannot starve it.
  auto pos = std::find(order.begin(), order.end(), "b") - order.begin();
  CHECK(pos <= 1);
}

TEST_CASE("gpu slot: deadline and cancel leave the queue") {
  GpuSlot slot;
  REQUIRE(slot.Acquire("a", absl::InfiniteFuture(), nullptr).ok());
  CHECK(slot.Acquire("b", absl::Now() + absl::Milliseconds(50), nullptr).code() ==
        absl::StatusCode::kDeadlineExceeded);
  CHECK(slot.Acquire("b", absl::InfiniteFuture(), [] { return true; }).code() ==
        absl::StatusCode::kCancelled);
  CHECK(slot.queue_depth() == 0);
  slot.Release();
  CHECK_FALSE(slot.busy());
}

TEST_CASE("worker registration renews within a third of the coordinator's lease") {
  CHECK(RenewIntervalSeconds(10, 30) == 10);  // the defaults: 10 s renewals, 30 s lease
  CHECK(RenewIntervalSeconds(10, 6) == 2);
  CHECK(RenewIntervalSeconds(10, 0) == 10);   // no lease known yet
  CHECK(RenewIntervalSeconds(1, 3600) == 1);
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
  CHECK_FALSE(MeasurementFromHarnessJson(nlohmann::json::parse("{}")).ok());
  CHECK_FALSE(MeasurementFromHarnessJson(nlohmann::json::parse(R"({"verdict": "BOGUS"})")).ok());
}

TEST_CASE("measure requests are validated") {
  v1::MeasureRequest r;
  CHECK(ValidateMeasureRequest(r, 1 << 20).code() == absl::StatusCode::kInvalidArgument);
  r.set_task_id("t");
  r.mutable_problem()->set_source("class Model: pass\ndef get_inputs(): pass");
  CHECK(ValidateMeasureRequest(r, 1 << 20).code() == absl::StatusCode::kInvalidArgument);  // nothing to measure
  r.mutable_kernel()->set_source("x");
  CHECK(ValidateMeasureRequest(r, 1 << 20).code() == absl::StatusCode::kInvalidArgument);  // language
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  CHECK(ValidateMeasureRequest(r, 1 << 20).ok());
  r.set_trials(-1);
  CHECK(ValidateMeasureRequest(r, 1 << 20).code() == absl::StatusCode::kInvalidArgument);
  r.set_trials(5);
  CHECK(ValidateMeasureRequest(r, 4).code() == absl::StatusCode::kResourceExhausted);
  r.set_shape_set("nope");
  absl::Status unknown_set = ValidateMeasureRequest(r, 1 << 20);
  CHECK(unknown_set.code() == absl::StatusCode::kInvalidArgument);
  CHECK(unknown_set.message() == "shape_set 'nope' is not in problem.extra_shapes");
  CHECK(HarnessRequestFor(r).status().code() == absl::StatusCode::kInvalidArgument);
  v1::ShapeSet* set = r.mutable_problem()->add_extra_shapes();
  set->set_name("nope");
  set->set_get_inputs_source("def get_inputs(): return []");
  CHECK(ValidateMeasureRequest(r, 4 << 10).ok());
}

TEST_CASE("harness request: the op signature is skipped only when asked") {
  v1::MeasureRequest r;
  r.set_task_id("t");
  r.mutable_problem()->set_source("class Model: pass\ndef get_inputs(): pass");
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source("x");
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

// The real path: the Python harness runs a real Triton candidate under the interpreter.
TEST_CASE("one-shot harness on the CPU: a correct and a wrong candidate get their verdicts",
          "[harness]") {
  std::string root = SourceDir();
  std::string python = root + "/.venv/bin/python";
  if (!std::filesystem::exists(python)) {
    FAIL("no .venv at " << root << ": run scripts/setup.sh first");
  }
  HarnessOptions o;
  o.python = python;
  o.harness_dir = root + "/python";
  o.device = "cpu";
  o.use_server = false;  // `python -m kagent_harness measure` per call
  HarnessClient harness(o);
  v1::MeasureRequest r;
  r.set_task_id("t1");
  r.mutable_problem()->set_source(ReadFile(root + "/python/tests/fixtures/problem_relu_add.py"));
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source(ReadFile(root + "/python/tests/fixtures/cand_relu_add_good.py"));
  r.set_timing_reps(3);
  r.set_timeout_seconds(240);
  v1::Measurement good = harness.Measure(r, "", nullptr);
  INFO(good.DebugString());
  CHECK(good.verdict() == v1::VERDICT_CORRECT);
  CHECK(good.candidate().count() >= 1);
  CHECK(good.op_signature().ops_size() > 0);  // recorded by default

  // skip_op_signature: the same verdicts, no signature recorded.
  r.set_skip_op_signature(true);
  r.mutable_kernel()->set_source(ReadFile(root + "/python/tests/fixtures/cand_relu_add_wrong.py"));
  v1::Measurement bad = harness.Measure(r, "", nullptr);
  INFO(bad.DebugString());
  CHECK(bad.verdict() == v1::VERDICT_INCORRECT);
  CHECK_FALSE(bad.correctness().reason().empty());
  CHECK(bad.op_signature().ops_size() == 0);
}

}  // namespace
}  // namespace kagent
