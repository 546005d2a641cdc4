// Benchmark worker tests: the GPU slot, worker registration and request validation.
#include <catch2/catch.hpp>

#include <cmath>
#include <future>
#include <vector>

#include "absl/strings/match.h"
#include "common/harness/protocol.h"
#include "services/benchmark/benchmark_service.h"
#include "services/benchmark/gpu_slot.h"
#include "services/benchmark/worker_setup.h"

namespace kagent {
namespace {

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
  r.set_timing_budget_ms(1e7);
  CHECK(absl::StrContains(ValidateMeasureRequest(r, 1 << 20).message(), "timing_budget_ms"));
  r.set_timing_budget_ms(std::nan(""));
  CHECK(ValidateMeasureRequest(r, 1 << 20).code() == absl::StatusCode::kInvalidArgument);
  r.set_timing_budget_ms(-1);  // no budget
  CHECK(ValidateMeasureRequest(r, 1 << 20).ok());
  r.set_timing_budget_ms(0);
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

}  // namespace
}  // namespace kagent
