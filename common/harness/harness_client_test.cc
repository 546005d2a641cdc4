// HarnessClient's server path against the scripted fake server
// (testdata/fake_harness): the request fields, the prepare/measure/screen/release_job
// mapping, server failures as verdicts, and one-shot mode; and the real harness, one-shot
// and as a server, on the CPU (Triton's interpreter).
#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>

#include "absl/strings/match.h"
#include "common/harness/harness_client.h"
#include "common/install_paths.h"
#include "common/testing/fixtures.h"

namespace kagent {
namespace {

using testing::SourceDir;

HarnessOptions FakeClientOptions() {
  HarnessOptions o;
  o.python = DefaultPython();
  o.harness_dir = SourceDir() + "/common/harness/testdata/fake_harness";
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

  // Preparing turned off: no call at all.
  HarnessOptions off = FakeClientOptions();
  off.prepared_max = 0;
  HarnessClient unprepared(off);
  p = unprepared.Prepare(Request("FAKE_COMPILE_ERROR"), nullptr);
  CHECK_FALSE(p.final.has_value());
  CHECK(p.seconds == 0);
  CHECK(absl::StrContains(p.reason, "--prepared-max 0"));

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
  // Prepared first: the handle goes with the screen.
  PrepareResult p = harness.PrepareScreen(s, nullptr);
  INFO(p.reason);
  CHECK(p.handle == "s1");
  CHECK(p.seconds > 0);
  CHECK_FALSE(p.final.has_value());
  absl::StatusOr<v1::ScreenResponse> r = harness.Screen(s, p.handle, nullptr);
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
  CHECK(absl::StrContains(r->log(), "\"prepared\": \"s1\""));
  // Nothing prepared when the server holds too many, or without a job id: no handle, a reason.
  v1::ScreenRequest full = s;
  full.mutable_kernels(1)->set_source("variant FAKE_NO_HANDLE");
  p = harness.PrepareScreen(full, nullptr);
  CHECK(p.handle.empty());
  CHECK(p.reason == "too many prepared candidates held");
  v1::ScreenRequest no_job = s;
  no_job.clear_job_id();
  p = harness.PrepareScreen(no_job, nullptr);
  CHECK(p.handle.empty());
  CHECK(absl::StrContains(p.reason, "no job id"));

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
  CHECK(r->phases_ms().empty());
  auto with_phases = nlohmann::json::parse(
      R"({"ok": true, "results": [], "phases_ms": {"screen: timing": 12.5, "bad": "x"}})");
  r = ScreenResponseFromJson(with_phases, 1);
  REQUIRE(r.ok());
  CHECK(r->phases_ms().size() == 1);  // only numbers
  CHECK(r->phases_ms().at("screen: timing") == 12.5);
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
  CHECK(harness.PrepareScreen(s, nullptr).handle.empty());
  CHECK(harness.Screen(s, "", nullptr).status().code() == absl::StatusCode::kFailedPrecondition);
  absl::StatusOr<bool> released = harness.ReleaseJob("job-1");
  REQUIRE(released.ok());
  CHECK_FALSE(*released);
}

TEST_CASE("harness client: one-shot requests carry the sandbox mode and hidden paths",
          "[harness_client]") {
  HarnessOptions o = FakeClientOptions();
  o.use_server = false;
  o.sandbox = "required";
  o.sandbox_hide = {"/etc/kagent/tokens"};
  HarnessClient harness(o);
  CHECK(harness.AwaitServerStart().ok());  // no server: nothing to wait for
  v1::Measurement m = harness.Measure(Request("class ModelNew: pass"), "", nullptr);
  INFO(m.DebugString());
  REQUIRE(m.verdict() == v1::VERDICT_CORRECT);
  nlohmann::json sent = nlohmann::json::parse(m.log());
  CHECK(sent["mode"] == "measure");
  CHECK(sent["sandbox"] == "required");
  CHECK(sent["sandbox_hide"] == nlohmann::json::array({"/etc/kagent/tokens"}));
  // No mode: neither field (the harness's own default).
  HarnessOptions plain_options = FakeClientOptions();
  plain_options.use_server = false;
  HarnessClient plain(plain_options);
  m = plain.Measure(Request("class ModelNew: pass"), "", nullptr);
  REQUIRE(m.verdict() == v1::VERDICT_CORRECT);
  sent = nlohmann::json::parse(m.log());
  CHECK_FALSE(sent.contains("sandbox"));
  CHECK_FALSE(sent.contains("sandbox_hide"));
}

// The real server (python/kagent_harness, `serve`) on the CPU under Triton's interpreter.
std::string Fixture(const std::string& name) {
  std::ifstream in(SourceDir() + "/python/tests/fixtures/" + name);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

TEST_CASE("harness client: the real harness server on the CPU measures, prepares, screens, releases",
          "[harness]") {
  std::string python = SourceDir() + "/.venv/bin/python";
  if (!std::filesystem::exists(python)) FAIL("no .venv at " << SourceDir() << ": run scripts/setup.sh");
  HarnessOptions o;
  o.python = python;
  o.harness_dir = SourceDir() + "/python";
  o.device = "cpu";
  o.use_server = true;
  o.pool = 1;
  o.trial_cache_mb = 256;
  HarnessClient harness(o);
  REQUIRE(harness.StartServer().ok());
  v1::MeasureRequest r;
  r.set_task_id("t1");
  r.set_job_id("job-real");
  r.mutable_problem()->set_source(Fixture("problem_relu_add.py"));
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source(Fixture("cand_relu_add_good.py"));
  r.set_timing_reps(3);
  r.set_timeout_seconds(240);
  // The job's first candidate: nothing to prepare it against yet (no trial set), so the
  // measure builds the trial set itself.
  PrepareResult first = harness.Prepare(r, nullptr);
  INFO("prepare: " << first.reason);
  CHECK_FALSE(first.final.has_value());
  v1::Measurement m = harness.Measure(r, first.handle, nullptr);
  INFO(m.DebugString());
  REQUIRE(m.verdict() == v1::VERDICT_CORRECT);
  CHECK(m.candidate().count() >= 1);
  CHECK(harness.server()->ready());

  // The next one is prepared (on the job's kept trials), then measured with the handle.
  r.set_task_id("t2");
  r.set_skip_op_signature(true);
  PrepareResult p = harness.Prepare(r, nullptr);
  INFO("prepare: " << p.reason);
  REQUIRE_FALSE(p.final.has_value());
  REQUIRE_FALSE(p.handle.empty());
  CHECK(p.seconds > 0);

  // While a profile holds the GPU, the prepared process is held stopped, and continued
  // when the hold goes (the measure below uses it).
  auto held_now = [&] {
    absl::StatusOr<nlohmann::json> ping =
        harness.server()->Call({{"op", "ping"}}, absl::Seconds(30), nullptr);
    REQUIRE(ping.ok());
    return ping->value("held_stopped", -1);
  };
  auto wait_for = [&](auto done) {
    const absl::Time end = absl::Now() + absl::Seconds(20);
    while (!done(held_now()) && absl::Now() < end) absl::SleepFor(absl::Milliseconds(50));
    return held_now();
  };
  {
    std::unique_ptr<HeldStopped> held = harness.HoldCandidatesStopped(absl::Seconds(60));
    REQUIRE(held != nullptr);
    CHECK(wait_for([](int n) { return n >= 1; }) >= 1);
  }
  CHECK(wait_for([](int n) { return n == 0; }) == 0);

  m = harness.Measure(r, p.handle, nullptr);
  INFO(m.DebugString());
  CHECK(m.verdict() == v1::VERDICT_CORRECT);

  // A candidate that cannot be imported gets its verdict at prepare: no GPU needed.
  r.set_task_id("t3");
  r.mutable_kernel()->set_source(Fixture("cand_relu_add_import_error.py"));
  PrepareResult bad = harness.Prepare(r, nullptr);
  INFO("prepare: " << bad.reason);
  REQUIRE(bad.final.has_value());
  CHECK(bad.final->verdict() == v1::VERDICT_COMPILE_ERROR);
  CHECK_FALSE(bad.final->correctness().reason().empty());

  // A screen of a correct and a wrong variant.
  v1::ScreenRequest s;
  s.set_task_id("s1");
  s.set_job_id("job-real");
  *s.mutable_problem() = r.problem();
  for (const char* f : {"cand_relu_add_good.py", "cand_relu_add_wrong.py"}) {
    v1::KernelSource* k = s.add_kernels();
    k->set_language(v1::KERNEL_LANGUAGE_TRITON);
    k->set_source(Fixture(f));
  }
  s.set_timing_reps(2);
  s.set_timeout_seconds(240);
  PrepareResult ps = harness.PrepareScreen(s, nullptr);
  INFO("prepare_screen: " << ps.reason);
  REQUIRE_FALSE(ps.handle.empty());
  absl::StatusOr<v1::ScreenResponse> screened = harness.Screen(s, ps.handle, nullptr);
  INFO(screened.status().ToString());
  REQUIRE(screened.ok());
  REQUIRE(screened->results_size() == 2);
  CHECK(screened->results(0).ok());
  CHECK(screened->results(0).median_ms() > 0);
  CHECK_FALSE(screened->results(1).ok());
  CHECK(absl::StrContains(screened->results(1).reason(), "INCORRECT"));

  absl::StatusOr<bool> released = harness.ReleaseJob("job-real");
  REQUIRE(released.ok());
  CHECK(*released);
  CHECK(harness.server()->restarts() == 0);
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
  r.mutable_problem()->set_source(Fixture("problem_relu_add.py"));
  r.mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  r.mutable_kernel()->set_source(Fixture("cand_relu_add_good.py"));
  r.set_timing_reps(3);
  r.set_timeout_seconds(240);
  v1::Measurement good = harness.Measure(r, "", nullptr);
  INFO(good.DebugString());
  CHECK(good.verdict() == v1::VERDICT_CORRECT);
  CHECK(good.candidate().count() >= 1);
  CHECK(good.op_signature().ops_size() > 0);  // recorded by default

  // skip_op_signature: the same verdicts, no signature recorded.
  r.set_skip_op_signature(true);
  r.mutable_kernel()->set_source(Fixture("cand_relu_add_wrong.py"));
  v1::Measurement bad = harness.Measure(r, "", nullptr);
  INFO(bad.DebugString());
  CHECK(bad.verdict() == v1::VERDICT_INCORRECT);
  CHECK_FALSE(bad.correctness().reason().empty());
  CHECK(bad.op_signature().ops_size() == 0);
}

}  // namespace
}  // namespace kagent
