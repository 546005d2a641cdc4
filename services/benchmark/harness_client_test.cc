// HarnessClient's server path against the scripted fake server
// (testdata/fake_harness): the request fields, the prepare/measure/screen/release_job
// mapping, server failures as verdicts, and one-shot mode.
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "absl/strings/match.h"
#include "services/benchmark/harness_client.h"

namespace kagent {
namespace {

std::string SourceDir() {
  const char* d = std::getenv("KAGENT_SOURCE_DIR");
  return d ? d : ".";
}

std::string Python() {
  std::string venv = SourceDir() + "/.venv/bin/python";
  return std::filesystem::exists(venv) ? venv : "python3";
}

HarnessOptions FakeClientOptions() {
  HarnessOptions o;
  o.python = Python();
  o.harness_dir = SourceDir() + "/services/benchmark/testdata/fake_harness";
  o.device = "cpu";
  o.use_server = true;
  return o;
}

v1::MeasureRequest Request(const std::string& kernel) {
  v1::MeasureRequest r;
  r.set_task_id("t");
  r.set_job_id("job-1");
  r.mutable_problem()->set_source("class Model: pass");
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source(kernel);
  r.set_timeout_seconds(30);
  return r;
}

TEST_CASE("harness client: prepare, then measure with the handle, over the server",
          "[harness_client]") {
  HarnessClient harness(FakeClientOptions());
  REQUIRE(harness.StartServer().ok());
  PrepareResult p = harness.Prepare(Request("class ModelNew: pass"), nullptr);
  INFO(p.reason);
  CHECK_FALSE(p.final.has_value());
  CHECK(p.handle == "h1");
  CHECK(p.seconds > 0);
  v1::Measurement m = harness.Measure(Request("class ModelNew: pass"), p.handle, nullptr);
  INFO(m.DebugString());
  CHECK(m.verdict() == v1::VERDICT_CORRECT);
  CHECK(m.candidate().median_ms() == 1.25);
  nlohmann::json sent = nlohmann::json::parse(m.log());
  CHECK(sent["op"] == "measure");
  CHECK(sent["job_id"] == "job-1");
  CHECK(sent["prepared"] == "h1");
  CHECK(sent["device"] == "cpu");
  CHECK(sent["timeout_s"] == 30);
  CHECK(sent["language"] == "triton");
  // Without a handle, `prepared` is not sent.
  m = harness.Measure(Request("class ModelNew: pass"), "", nullptr);
  CHECK_FALSE(nlohmann::json::parse(m.log()).contains("prepared"));
}

TEST_CASE("harness client: what prepare answers without a handle", "[harness_client]") {
  HarnessClient harness(FakeClientOptions());
  PrepareResult p = harness.Prepare(Request("FAKE_COMPILE_ERROR"), nullptr);
  REQUIRE(p.final.has_value());
  CHECK(p.final->verdict() == v1::VERDICT_COMPILE_ERROR);
  CHECK(p.final->correctness().reason() == "SyntaxError at line 3");
  CHECK(p.handle.empty());
  CHECK(nlohmann::json::parse(p.final->log())["op"] == "prepare");

  p = harness.Prepare(Request("FAKE_NO_HANDLE"), nullptr);
  CHECK_FALSE(p.final.has_value());
  CHECK(p.handle.empty());
  CHECK(p.reason == "too many prepared candidates held");

  // Nothing to prepare: no job id (the server keeps nothing for it), or no kernel.
  v1::MeasureRequest r = Request("class ModelNew: pass");
  r.clear_job_id();
  p = harness.Prepare(r, nullptr);
  CHECK(p.handle.empty());
  CHECK(p.seconds == 0);
  CHECK_FALSE(p.reason.empty());

  // A server failure is not a verdict here: Measure does the work.
  p = harness.Prepare(Request("FAKE_GARBAGE"), nullptr);
  CHECK_FALSE(p.final.has_value());
  CHECK(absl::StrContains(p.reason, "prepare failed"));

  // A request the harness cannot take fails the same in Measure: final, without the GPU.
  r = Request("class ModelNew: pass");
  r.set_shape_set("nope");
  p = harness.Prepare(r, nullptr);
  REQUIRE(p.final.has_value());
  CHECK(p.final->verdict() == v1::VERDICT_INFRA_ERROR);
}

TEST_CASE("harness client: server failures become TIMEOUT and INFRA_ERROR verdicts",
          "[harness_client]") {
  HarnessOptions o = FakeClientOptions();
  o.margin_seconds = 0.5;
  HarnessClient harness(o);
  v1::MeasureRequest r = Request("FAKE_HANG");
  r.set_timeout_seconds(1);
  v1::Measurement m = harness.Measure(r, "", nullptr);
  CHECK(m.verdict() == v1::VERDICT_TIMEOUT);
  CHECK(absl::StrContains(m.correctness().reason(), "did not answer"));
  m = harness.Measure(Request("FAKE_DIE"), "", nullptr);
  CHECK(m.verdict() == v1::VERDICT_INFRA_ERROR);
  CHECK(absl::StrContains(m.correctness().reason(), "exit 3"));
  // The restarted server measures again.
  m = harness.Measure(Request("class ModelNew: pass"), "", nullptr);
  CHECK(m.verdict() == v1::VERDICT_CORRECT);
  CHECK(harness.server()->restarts() == 1);
}

TEST_CASE("harness client: screen and release_job over the server", "[harness_client]") {
  HarnessClient harness(FakeClientOptions());
  v1::ScreenRequest s;
  s.set_task_id("s1");
  s.set_job_id("job-9");
  s.mutable_problem()->set_source("class Model: pass");
  s.mutable_problem()->set_atol(0.01);
  for (const char* src : {"variant a", "variant FAKE_BAD", "variant c"}) {
    v1::KernelSource* k = s.add_kernels();
    k->set_language(v1::KERNEL_LANGUAGE_TRITON);
    k->set_source(src);
  }
  s.set_timing_reps(7);
  absl::StatusOr<v1::ScreenResponse> r = harness.Screen(s, nullptr);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  REQUIRE(r->results_size() == 3);
  CHECK(r->results(0).ok());
  CHECK(r->results(0).median_ms() == 1.0);
  CHECK_FALSE(r->results(1).ok());
  CHECK(r->results(1).reason() == "output differs");
  CHECK(r->results(1).median_ms() == 0);
  CHECK(r->results(2).index() == 2);
  CHECK(r->results(2).median_ms() == 3.0);
  CHECK(absl::StrContains(r->log(), "screened 3"));
  CHECK(absl::StrContains(r->log(), "\"op\": \"screen\""));
  CHECK(absl::StrContains(r->log(), "\"job_id\": \"job-9\""));

  // The fake holds the jobs it saw.
  absl::StatusOr<bool> released = harness.ReleaseJob("job-9");
  REQUIRE(released.ok());
  CHECK(*released);
  released = harness.ReleaseJob("job-9");
  REQUIRE(released.ok());
  CHECK_FALSE(*released);
}

TEST_CASE("harness client: screen answers are checked", "[harness_client]") {
  auto j = nlohmann::json::parse(R"({"ok": true, "results": [{"index": 1, "ok": true, "median_ms": 2}]})");
  absl::StatusOr<v1::ScreenResponse> r = ScreenResponseFromJson(j, 2);
  REQUIRE(r.ok());
  CHECK_FALSE(r->results(0).ok());  // left out by the harness
  CHECK(r->results(0).reason() == "the harness gave no result for this kernel");
  CHECK(r->results(1).median_ms() == 2);
  CHECK_FALSE(ScreenResponseFromJson(nlohmann::json::parse(R"({"ok": true, "results": [{"index": 2}]})"), 2).ok());
  CHECK_FALSE(ScreenResponseFromJson(nlohmann::json::parse(R"({"ok": false, "error": "x"})"), 2).ok());
  CHECK_FALSE(ScreenResponseFromJson(nlohmann::json::parse(R"({"ok": true})"), 2).ok());
}

TEST_CASE("harness client: one-shot mode has no prepare, no screen, nothing to release",
          "[harness_client]") {
  HarnessOptions o = FakeClientOptions();
  o.use_server = false;
  HarnessClient harness(o);
  CHECK(harness.server() == nullptr);
  PrepareResult p = harness.Prepare(Request("class ModelNew: pass"), nullptr);
  CHECK(p.handle.empty());
  CHECK_FALSE(p.final.has_value());
  v1::ScreenRequest s;
  s.add_kernels()->set_source("x");
  CHECK(harness.Screen(s, nullptr).status().code() == absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<bool> released = harness.ReleaseJob("job-1");
  REQUIRE(released.ok());
  CHECK_FALSE(*released);
}

}  // namespace
}  // namespace kagent
