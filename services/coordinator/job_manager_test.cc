// The whole loop on the CPU (testing/loop.h's rig): rounds, the beam, stop rules, the
// baseline and the library seed, screening, worker failures, cancel and resume.
#include <catch2/catch.hpp>

#include "services/coordinator/testing/loop.h"

namespace kagent::testing {
namespace {

TEST_CASE("loop: improves over rounds, keeps a beam, records every attempt") {
  Loop loop;
  v1::Job job = loop.WaitDone(loop.Submit(3).id());
  INFO(job.DebugString());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const v1::JobResult& r = job.result();
  // good-1 then good-2 stack: 0.8 * 0.8 = 0.64 of the start at least.
  CHECK(r.speedup_vs_start() >= 1.0 / 0.64 - 1e-6);
  CHECK(r.speedup_vs_eager() > 0);
  CHECK(r.speedup_vs_compile() > 0);
  CHECK(r.trajectory_size() >= 2);
  CHECK(r.lineage_size() >= 2);
  CHECK(r.lineage(0) == job.id() + "-c0");
  CHECK(r.best_measurement().reference_kernel().median_ms() == 1.0);  // start timed in the same run
  auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  std::map<v1::Verdict, int> verdicts;
  for (auto& c : cands) verdicts[c.measurement().verdict()]++;
  CHECK(verdicts[v1::VERDICT_CRASH] >= 1);  // the crash was measured, recorded, survived
  CHECK(verdicts[v1::VERDICT_CORRECT] >= 3);
  // A reflexion for every attempt, failed ones included, labelled by round/worker/parent.
  auto refl = *loop.storage->ListReflexions(job.id());
  CHECK(refl.size() == cands.size() - 1);
  for (auto& x : refl) {
    CHECK(x.round() >= 1);
    CHECK_FALSE(x.parent_id().empty());
  }
  // Events: sequence numbers 1..n without gaps; the last one finishes the job.
  auto ev = loop.Events(job.id());
  for (size_t i = 0; i < ev.size(); ++i) CHECK(ev[i].sequence() == static_cast<int64_t>(i + 1));
  CHECK(ev.back().type() == v1::JOB_EVENT_JOB_FINISHED);
  // Both GPUs worked, never more tasks at once on one than the scheduler's depth.
  CHECK(loop.gpu_a.max_in_flight <= SchedulerOptions().tasks_per_worker);
  CHECK(loop.gpu_b.max_in_flight <= SchedulerOptions().tasks_per_worker);
  CHECK(loop.gpu_a.calls + loop.gpu_b.calls > 0);
}

TEST_CASE("loop: the op signature is recorded once, by the baseline, and kept on every candidate") {
  JobDefaults defaults;
  defaults.timing_budget_ms = 250;  // kagentd --timing-budget-ms, sent on every measurement
  Loop loop(":memory:", absl::Milliseconds(2), defaults);
  const v1::OpSignature sig = ReluSignature();
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = sig;
  v1::Job j;
  j.set_id("job-sig");
  j.set_tenant("t");
  j.mutable_problem()->set_name("p");
  j.mutable_problem()->set_source(kProblem);
  auto* shape = j.mutable_problem()->add_extra_shapes();
  shape->set_name("big");
  shape->set_get_inputs_source("def get_inputs(): pass\n");
  j.mutable_start_kernel()->set_source(kStart);
  j.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  j.mutable_config()->mutable_budget()->set_max_rounds(2);
  j.mutable_config()->set_plateau_rounds(2);
  REQUIRE(loop.manager->Submit(j, "").ok());
  v1::Job job = loop.WaitDone("job-sig");
  INFO(job.DebugString());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);

  std::map<std::string, bool> skipped;  // task id -> skip_op_signature
  for (const auto& r : loop.MeasureRequests()) {
    skipped[r.task_id()] = r.skip_op_signature();
    CHECK(r.timing_budget_ms() == 250);
  }
  REQUIRE(skipped.count("job-sig/baseline") == 1);
  CHECK_FALSE(skipped["job-sig/baseline"]);  // the first measurement records it
  int rounds = 0, finals = 0;
  for (const auto& [task, skip] : skipped) {
    INFO(task);
    if (absl::StrContains(task, "/r")) {
      ++rounds;
      CHECK(skip);
    }
    if (absl::StrContains(task, "/final/")) {
      ++finals;
      CHECK(skip);
    }
    // Another shape set's signature is not the one the job keeps: recorded again.
    if (absl::StrContains(task, "/shape/")) CHECK_FALSE(skip);
  }
  CHECK(rounds >= 2);
  CHECK(finals >= 1);
  {
    // Every parent was profiled and diagnosed: the brain gets each one's report.
    absl::MutexLock lock(&loop.services.mu);
    REQUIRE_FALSE(loop.services.parents_with_report.empty());
    for (bool with : loop.services.parents_with_report) CHECK(with);
  }
  CHECK(skipped.count("job-sig/shape/big") == 1);
  // Profiles come after the baseline: each is handed the signature instead of recording it.
  int profiles = 0;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    for (const auto& r : g->profile_requests) {
      ++profiles;
      REQUIRE(r.op_signature().ops_size() == 1);
      CHECK(r.op_signature().ops(0).op() == "aten::relu");
    }
  }
  CHECK(profiles >= 1);

  // Every stored candidate measurement carries the signature all the same.
  auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  REQUIRE(cands.size() >= 3);
  for (const auto& c : cands) {
    INFO(c.id());
    REQUIRE(c.measurement().op_signature().ops_size() == 1);
    CHECK(c.measurement().op_signature().ops(0).op() == "aten::relu");
    CHECK(c.measurement().op_signature().min_bytes() == 8192);
  }
  CHECK(job.result().best_measurement().op_signature().ops_size() == 1);
}

TEST_CASE("loop: the starting kernel's final figures are its baseline run's (no second run)") {
  Loop loop;
  loop.services.fixes = {"bad-1", "bad-2", "bad-3", "bad-4"};
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  REQUIRE(job.result().best_candidate_id() == job.id() + "-c0");
  std::set<std::string> tasks;
  for (const auto& r : loop.MeasureRequests()) tasks.insert(r.task_id());
  CHECK(tasks.count(job.id() + "/final/" + job.id() + "-c0") == 0);
  CHECK(job.result().speedup_vs_start() == 1.0);
  CHECK(job.result().best_measurement().eager().median_ms() == job.baseline().eager().median_ms());
  CHECK(job.result().best_measurement().candidate().median_ms() ==
        job.baseline().candidate().median_ms());
}

TEST_CASE("loop: stops on a plateau") {
  Loop loop;
  loop.services.fixes = {"bad-1", "bad-2", "bad-3", "bad-4", "bad-5", "bad-6"};
  v1::Job job = loop.WaitDone(loop.Submit(10, kStart, /*plateau=*/2).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(absl::StrContains(job.result().stop_reason(), "plateau"));
  CHECK(job.current_round() == 2);
  CHECK(job.result().best_candidate_id() == job.id() + "-c0");  // nothing beat the start
}

// The profile of every kernel: SOL and the arithmetic-intensity roofline.
void SetRoofline(Loop& loop, double sol_pct, double bound_pct) {
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->roofline_efficiency_pct = sol_pct;
    g->roofline_bound_pct = bound_pct;
  }
}

TEST_CASE("loop: the roofline target is judged by the arithmetic-intensity roofline, not SOL") {
  Loop loop;
  // The H200 maxpool2d: 99% memory SOL from cache re-reads, 46% of its roofline.
  SetRoofline(loop, 99, 46);
  // Nothing beats the start, so the result's best is the profiled starting kernel.
  loop.services.fixes = {"bad-1", "bad-2", "bad-3", "bad-4", "bad-5", "bad-6"};
  v1::Job job = loop.WaitDone(loop.Submit(2, kStart, /*plateau=*/5).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(absl::StrContains(job.result().stop_reason(), "round budget"));
  CHECK(job.result().trajectory_size() == 2);  // both rounds ran
  CHECK(job.result().best_candidate_id() == job.id() + "-c0");
  CHECK(job.result().roofline_efficiency_pct() == 99);
  CHECK(job.result().roofline_bound_pct() == 46);
}

// A one-op fp32 signature of 1e6 FLOPs over `min_bytes`: memory-bound on any GPU.
v1::OpSignature MemoryBoundSignature(const std::string& aten_op, double min_bytes) {
  v1::OpSignature sig;
  auto* op = sig.add_ops();
  op->set_op(aten_op);
  op->add_inputs()->set_dtype("float32");
  sig.set_flops(1e6);
  sig.set_min_bytes(min_bytes);
  return sig;
}

TEST_CASE("loop: the result's arithmetic-intensity roofline is taken at the final run's median") {
  // The best kernel of the last round is measured, not profiled: the result's roofline
  // comes from the op's own bytes over the final run's median, not from a profile.
  Loop loop;
  const v1::OpSignature sig = MemoryBoundSignature("aten::max_pool2d", 2.7e9);
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->op_signature = sig;
    g->peak_dram_bytes_per_second = 4.8e12;
    g->peak_fp32_flops = 67e12;
    g->roofline_bound_pct = 46;  // the profile's figure, for the profiled kernels
  }
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const double med = job.result().best_measurement().candidate().median_ms();
  REQUIRE(med > 0);
  CHECK(job.result().roofline_bound_pct() == Approx(100.0 * 2.7e9 / (med * 1e-3) / 4.8e12));
}

TEST_CASE("loop: stops at the roofline target, saying which figure reached it") {
  SECTION("the arithmetic-intensity roofline") {
    Loop loop;
    SetRoofline(loop, 60, 95);  // SOL below the target does not matter when the roofline is known
    v1::Job job = loop.WaitDone(loop.Submit(5).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);
    CHECK(job.result().stop_reason() ==
          "at the roofline target: 95.0% of the arithmetic-intensity roofline >= 90.0%");
    CHECK(job.current_round() == 1);
    CHECK(job.result().roofline_bound_pct() == 95);
  }
  SECTION("speed of light, when the signature gives no FLOPs and bytes") {
    Loop loop;
    SetRoofline(loop, 93, 0);
    v1::Job job = loop.WaitDone(loop.Submit(5).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);
    CHECK(absl::StrContains(job.result().stop_reason(),
                            "at the roofline target: 93.0% of the speed of light"));
    CHECK(job.result().roofline_bound_pct() == 0);
  }
}

TEST_CASE("loop: a kernel whose measured time reaches the roofline stops without a profile") {
  // 4.5 GB of the op's own bytes in the starting kernel's 1.0 ms, on an H200 (4.8 TB/s, the
  // spec table's entry for the GPU the baseline ran on): 93.75 % of the roofline from the
  // measured median alone, so no profile is spent to learn it.
  Loop loop;
  v1::OpSignature sig = MemoryBoundSignature("aten::relu", 4.5e9);
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->op_signature = sig;
    g->gpu_name = "NVIDIA H200";
  }
  v1::Job job = loop.WaitDone(loop.Submit(5).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(job.result().stop_reason() ==
        "at the roofline target: 93.8% of the arithmetic-intensity roofline at the measured "
        "median (no profile needed) >= 90.0%");
  CHECK(job.current_round() == 1);
  CHECK(loop.ProfileCount() == 0);
  SECTION("below the target, the profile still runs") {
    Loop slow;
    sig.set_min_bytes(2.7e9);  // 56 %
    for (FakeGpu* g : {&slow.gpu_a, &slow.gpu_b}) {
      g->op_signature = sig;
      g->gpu_name = "NVIDIA H200";
    }
    v1::Job j2 = slow.WaitDone(slow.Submit(1).id());
    REQUIRE(j2.state() == v1::JOB_STATE_DONE);
    CHECK(slow.ProfileCount() >= 1);
  }
}

TEST_CASE("loop: stops when the round budget is spent") {
  Loop loop;
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(absl::StrContains(job.result().stop_reason(), "round budget"));
  CHECK(job.result().trajectory_size() == 1);
}

TEST_CASE("loop: a spent LLM budget ends the job cleanly with the best kernel so far") {
  Loop loop;
  loop.services.budget_after_calls = 1;  // round 1 generates, round 2 is refused
  v1::Job job = loop.WaitDone(loop.Submit(5).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(absl::StrContains(job.result().stop_reason(), "budget spent"));
  CHECK(job.result().speedup_vs_start() > 1.0);  // round 1's gain is kept
}

TEST_CASE("loop: LLM usage the services report is added up in the job and stored") {
  Loop loop;
  loop.services.fixes = ScriptedServices::ManyGoodFixes();
  loop.services.tokens_per_generate = 1000;
  loop.services.cost_per_generate = 0.125;
  loop.services.tokens_per_diagnose = 40;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  v1::Job job = loop.WaitDone(loop.Submit(2, "").id());  // the brain writes the first kernel
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const int generates = loop.services.generate_calls;
  const int diagnoses = loop.services.diagnose_calls;
  REQUIRE(generates == 3);  // the first kernel and two rounds
  REQUIRE(diagnoses >= 2);
  CHECK(job.llm_tokens_used() == generates * 1000 + diagnoses * 40);
  CHECK(job.llm_cost_usd() == Approx(generates * 0.125));
  // No LLM budget in the job: the requests carry no limit.
  absl::MutexLock lock(&loop.services.mu);
  for (int64_t left : loop.services.generate_tokens_left) CHECK(left == -1);
  for (double left : loop.services.generate_cost_left) CHECK(left == -1);
  for (int64_t left : loop.services.diagnose_tokens_left) CHECK(left == -1);
}

TEST_CASE("loop: each request carries what is left of the LLM token budget") {
  Loop loop;
  loop.services.fixes = ScriptedServices::ManyGoodFixes();
  loop.services.tokens_per_generate = 1000;
  loop.services.tokens_per_diagnose = 10;
  v1::Budget budget;
  budget.set_max_llm_tokens(2500);
  v1::Job job = loop.WaitDone(loop.Submit(10, kStart, /*plateau=*/10, budget).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  // Round r diagnoses its beam, then generates; the round that crosses 2500 is the last.
  CHECK_THAT(job.result().stop_reason(), Catch::Contains("LLM token budget spent"));
  CHECK(job.llm_tokens_used() >= 2500);
  CHECK(job.llm_tokens_used() ==
        loop.services.generate_calls * 1000 + loop.services.diagnose_calls * 10);
  absl::MutexLock lock(&loop.services.mu);
  const std::vector<int64_t>& left = loop.services.generate_tokens_left;
  REQUIRE(left.size() == 3);
  // Round 1: 2500 less the baseline's diagnosis (10); then 1000 and the next diagnoses less.
  CHECK(left[0] == 2500 - 10);
  CHECK(left[1] < left[0] - 1000);
  CHECK(left[1] > 0);
  CHECK(left[2] > 0);
  CHECK(left[2] < 1000);
  for (int64_t d : loop.services.diagnose_tokens_left) CHECK(d >= 0);
  CHECK(loop.services.diagnose_tokens_left.front() == 2500);
  CHECK_THAT(job.result().stop_reason(),
             Catch::Contains(absl::StrCat(job.llm_tokens_used(), " of 2500 tokens")));
}

TEST_CASE("loop: a spent LLM cost budget stops the job") {
  Loop loop;
  loop.services.fixes = ScriptedServices::ManyGoodFixes();
  loop.services.tokens_per_generate = 100;
  loop.services.cost_per_generate = 0.01;
  v1::Budget budget;
  budget.set_max_llm_cost_usd(0.025);
  v1::Job job = loop.WaitDone(loop.Submit(10, kStart, /*plateau=*/10, budget).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK_THAT(job.result().stop_reason(), Catch::Contains("LLM cost budget spent"));
  CHECK(job.llm_cost_usd() == Approx(0.03));
  absl::MutexLock lock(&loop.services.mu);
  const std::vector<double>& left = loop.services.generate_cost_left;
  REQUIRE(left.size() == 3);
  CHECK(left[0] == Approx(0.025));
  CHECK(left[1] == Approx(0.015));
  CHECK(left[2] == Approx(0.005));
}

TEST_CASE("loop: the usage of a Generate refused for its budget is charged too") {
  Loop loop;
  loop.services.tokens_per_generate = 1000;
  loop.services.budget_after_calls = 1;  // round 2 is refused after spending 700 tokens
  loop.services.refused_usage = ScriptedServices::Usage(700, 0.5);
  v1::Job job = loop.WaitDone(loop.Submit(5).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK_THAT(job.result().stop_reason(), Catch::Contains("budget spent"));
  CHECK(job.llm_tokens_used() == 1000 + 700);
  CHECK(job.llm_cost_usd() == Approx(0.5));
}

TEST_CASE("loop: a starting kernel that fails the gate fails the job with the reason") {
  Loop loop;
  v1::Job job = loop.WaitDone(loop.Submit(3, "class ModelNew: pass  # WRONG\n").id());
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error(), "INCORRECT"));
  CHECK(absl::StrContains(job.error(), "max abs error"));
}

TEST_CASE("loop: without a starting kernel the brain writes the first one") {
  Loop loop;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  INFO(job.error());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(job.start_kernel().source() == kStart);
  // First a run of the reference alone (eager, torch.compile, the op signature), then the
  // brain's kernel for that signature, then the baseline of that kernel.
  std::map<std::string, v1::MeasureRequest> by_task;
  for (const auto& r : loop.MeasureRequests()) by_task[r.task_id()] = r;
  REQUIRE(by_task.count(job.id() + "/reference") == 1);
  const v1::MeasureRequest& ref = by_task[job.id() + "/reference"];
  CHECK(ref.kernel().source().empty());
  CHECK(ref.measure_baselines());
  CHECK_FALSE(ref.skip_op_signature());
  REQUIRE(by_task.count(job.id() + "/baseline") == 1);
  CHECK(by_task[job.id() + "/baseline"].kernel().source() == kStart);
  CHECK(by_task[job.id() + "/baseline"].skip_op_signature());
  {
    absl::MutexLock lock(&loop.services.mu);
    // One first-kernel request (no library seed: the start is the brain's already).
    REQUIRE(loop.services.first_kernel_requests.size() == 1);
    const v1::GenerateRequest& g = loop.services.first_kernel_requests[0];
    REQUIRE(g.op_signature().ops_size() == 1);
    CHECK(g.op_signature().ops(0).op() == "aten::relu");
  }
  const auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  for (const auto& c : cands) CHECK(c.prescription().pattern_id() != kLibrarySeedPattern);
}

// The GPU named by the one first-kernel request of a job without a starting kernel, run
// to DONE on `loop`.
v1::GpuSpec FirstKernelGpu(Loop& loop) {
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  INFO(job.error());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  absl::MutexLock lock(&loop.services.mu);
  REQUIRE(loop.services.first_kernel_requests.size() == 1);
  return loop.services.first_kernel_requests[0].gpu();
}

TEST_CASE("loop: the first kernel's request on a CPU worker describes the CPU worker") {
  Loop loop;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  loop.gpu_a.measure = loop.gpu_b.measure = [](const std::string& source) {
    v1::Measurement m = Time(source);
    m.set_gpu_name(kCpuWorkerGpuName);
    return m;
  };
  // Not "an NVIDIA GPU (details not given)" in an LLM brain's prompt: the interpreter.
  const v1::GpuSpec gpu = FirstKernelGpu(loop);
  CHECK(gpu.name() == kCpuWorkerGpuName);
  CHECK(gpu.arch() == "cpu");
}

TEST_CASE("loop: without a starting kernel the first kernel is written for the reference's GPU") {
  // kagentd's workers report no GPU when they register: before the job has a baseline, the
  // GPU the reference run ran on is the one the brain's first kernel is for (its template
  // and sizes depend on the arch and SM count), not an unknown GPU.
  Loop loop;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->op_signature = ReluSignature();
    g->gpu_name = "NVIDIA H200";
  }
  const v1::GpuSpec gpu = FirstKernelGpu(loop);
  CHECK(gpu.name() == "NVIDIA H200");
  CHECK(gpu.arch() == "sm_90");
  CHECK(gpu.sm_count() == 132);
}

TEST_CASE("loop: without a starting kernel and no op signature the job fails, saying why") {
  Loop loop;  // the fake harness records no signature
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error(), "no op signature"));
}

TEST_CASE("loop: without a starting kernel, a brain with no kernel for the op fails the job") {
  Loop loop;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  loop.services.first_kernel = "";
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error(), "could not write a first kernel"));
  CHECK(absl::StrContains(job.error(), "no template family"));
}

TEST_CASE("loop: round 1 also measures the brain's own kernel for the op (the library seed)") {
  Loop loop;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  loop.services.fixes = {"bad-1", "bad-2", "bad-3", "bad-4"};
  // The library's kernel (other code than the start's) is about twice as fast as the
  // user's start: it carries three good fixes' worth, 0.512 ms.
  loop.services.first_kernel = "class ModelNew(object): pass\n# fix:good-a\n# fix:good-b\n# fix:good-c\n";
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  INFO(job.error());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  int seeds = 0;
  for (const auto& c : cands) {
    if (c.prescription().pattern_id() != kLibrarySeedPattern) continue;
    ++seeds;
    INFO(c.DebugString());
    CHECK(c.round() == 1);
    CHECK(c.parent_id() == job.id() + "-c0");
    CHECK(c.kernel().origin() == "template:fake");
    CHECK(c.measurement().verdict() == v1::VERDICT_CORRECT);
    // Its own worker index: the round's fixes keep theirs, its task id is its own.
    CHECK(c.id() == absl::StrCat(job.id(), "-r1-w", c.worker_index()));
    CHECK(c.worker_index() >= 1);
  }
  CHECK(seeds == 1);  // round 1 only
  // The seed won round 1 and round 2 tuned it (bad fixes only: no gain): it is the best.
  CHECK(job.result().speedup_vs_start() == Approx(1.0 / 0.512).epsilon(0.01));
  {
    absl::MutexLock lock(&loop.services.mu);
    REQUIRE(loop.services.first_kernel_requests.size() == 1);
    CHECK(loop.services.first_kernel_requests[0].op_signature().ops_size() == 1);
  }
}

TEST_CASE("loop: no library seed and no profile on a CPU worker (Triton's interpreter)") {
  Loop loop;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  loop.gpu_a.measure = loop.gpu_b.measure = [](const std::string& source) {
    v1::Measurement m = Time(source);
    m.set_gpu_name("cpu");
    return m;
  };
  loop.services.first_kernel = "class ModelNew(object): pass\n";
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  for (const auto& c : cands) CHECK(c.prescription().pattern_id() != kLibrarySeedPattern);
  bool said = false;
  for (const auto& e : loop.Events(job.id())) {
    said |= absl::StrContains(e.message(), "no profile of") &&
            absl::StrContains(e.message(), "CPU worker");
  }
  CHECK(said);
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    CHECK(g->profile_requests.empty());
  }
  absl::MutexLock lock(&loop.services.mu);
  CHECK(loop.services.first_kernel_requests.empty());
  // The judge was still asked, without counters: the reason and the measured times, which
  // its narrator narrates from; the report it wrote is the beam kernel's.
  REQUIRE_FALSE(loop.services.unprofiled_diagnoses.empty());
  const v1::DiagnoseRequest& d = loop.services.unprofiled_diagnoses.front();
  CHECK(d.no_profile_reason() ==
        "it ran on a CPU worker (Triton's interpreter has no hardware counters)");
  CHECK(d.measurement().candidate().median_ms() > 0);
  CHECK(d.measurement().eager().median_ms() > 0);
  CHECK(d.op_signature().op_class() == "elementwise");  // recognized from the reference
  CHECK(d.job_id() == job.id());
  const v1::Candidate* start = nullptr;
  for (const auto& c : cands) {
    if (c.round() == 0) start = &c;
  }
  REQUIRE(start != nullptr);
  CHECK_THAT(start->report().summary(), Catch::StartsWith("no hardware counters (it ran on a CPU worker"));
  CHECK(start->report().primary() == v1::BOTTLENECK_CATEGORY_UNSPECIFIED);
}

TEST_CASE("loop: a failed profile is diagnosed without counters, saying why") {
  Loop loop;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->profile_error = absl::FailedPreconditionError("no kernels captured");
  }
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  absl::MutexLock lock(&loop.services.mu);
  REQUIRE_FALSE(loop.services.unprofiled_diagnoses.empty());
  CHECK_THAT(loop.services.unprofiled_diagnoses.front().no_profile_reason(),
             Catch::StartsWith("its profile failed: ") && Catch::Contains("no kernels captured"));
}

TEST_CASE("loop: no library seed when the brain has no kernel for the op or it is the start") {
  for (const std::string& first : {std::string(""), std::string(kStart)}) {
    INFO("first kernel: " << first);
    Loop loop;
    loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
    loop.services.first_kernel = first;
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);  // the job goes on without it
    const auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
    for (const auto& c : cands) CHECK(c.prescription().pattern_id() != kLibrarySeedPattern);
    absl::MutexLock lock(&loop.services.mu);
    CHECK(loop.services.first_kernel_requests.size() == 1);
  }
}

v1::Measurement InfraError(const std::string&) {
  v1::Measurement m;
  m.set_verdict(v1::VERDICT_INFRA_ERROR);
  m.mutable_correctness()->set_reason("harness failed (signal 9) without an answer");
  return m;
}

TEST_CASE("loop: a starting kernel's INFRA_ERROR runs again on the other worker and the job goes on") {
  Loop loop;
  loop.gpu_a.measure = InfraError;  // every measurement on wa fails on its harness
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  INFO(job.error());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(loop.gpu_a.calls > 0);
  const auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  CHECK_FALSE(cands.empty());
  for (const auto& c : cands) {
    CHECK(c.measurement().verdict() != v1::VERDICT_INFRA_ERROR);
  }
}

TEST_CASE("loop: a baseline INFRA_ERROR on every attempt fails the job, saying so") {
  Loop loop;
  loop.gpu_a.measure = loop.gpu_b.measure = InfraError;
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  INFO(job.error());
  CHECK(absl::StartsWith(job.error(), "the starting kernel could not be measured: "
                                      "infrastructure failure on all 3 attempts (workers "));
  CHECK(absl::StrContains(job.error(), "harness failed (signal 9)"));
  CHECK_FALSE(absl::StrContains(job.error(), "correctness gate"));
  CHECK(loop.gpu_a.calls + loop.gpu_b.calls == 3);
  const auto events = loop.Events(job.id());
  REQUIRE_FALSE(events.empty());
  CHECK(events.back().type() == v1::JOB_EVENT_JOB_FINISHED);
  CHECK(events.back().message() == job.error());
}

TEST_CASE("loop: a candidate's INFRA_ERROR after its retries is recorded on it and the job goes on") {
  Loop loop;
  auto measure = [](const std::string& source) {
    return absl::StrContains(source, "# fix:good-2") ? InfraError(source) : Time(source);
  };
  loop.gpu_a.measure = loop.gpu_b.measure = measure;
  v1::Job job = loop.WaitDone(loop.Submit(3).id());
  INFO(job.error());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  int infra = 0;
  const auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  for (const auto& c : cands) {
    if (c.measurement().verdict() != v1::VERDICT_INFRA_ERROR) continue;
    ++infra;
    CHECK(absl::StrContains(c.kernel().source(), "# fix:good-2"));
    CHECK(absl::StartsWith(c.measurement().correctness().reason(),
                           "infrastructure failure on all 3 attempts"));
  }
  CHECK(infra >= 1);
}

TEST_CASE("loop: a job whose GPU work cannot run fails with a clear reason") {
  Loop loop;
  loop.scheduler->RemoveWorker("wa");
  loop.scheduler->RemoveWorker("wb");
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error(), "no GPU worker"));
}

TEST_CASE("loop: brain services cut off for a while: calls are made again, the job finishes") {
  Loop loop;
  JobDefaults d;
  d.service_retry_backoff_seconds = 0.01;
  loop.manager = std::make_unique<JobManager>(d, loop.storage.get(), loop.scheduler.get(),
                                              &loop.services, nullptr);
  loop.services.transport_failures = 5;  // Prescribe, then PlanRound, then Generate fail
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  INFO(job.DebugString());
  CHECK(job.state() == v1::JOB_STATE_DONE);
  CHECK(loop.services.failed_calls == 5);
  CHECK(job.result().trajectory_size() == 2);
  int retried = 0;
  for (const auto& e : loop.Events(job.id())) {
    retried += absl::StrContains(e.message(), "call failed (attempt") ? 1 : 0;
  }
  CHECK(retried == 5);
}

TEST_CASE("loop: brain services unreachable for longer than the retry window fail the job") {
  Loop loop;
  JobDefaults d;
  d.service_retry_seconds = 0.3;
  d.service_retry_backoff_seconds = 0.05;
  loop.manager = std::make_unique<JobManager>(d, loop.storage.get(), loop.scheduler.get(),
                                              &loop.services, nullptr);
  loop.services.transport_failures = 1 << 20;
  absl::Time start = absl::Now();
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  CHECK(job.state() == v1::JOB_STATE_FAILED);
  CHECK((absl::StrContains(job.error(), "No route to host") ||
         absl::StrContains(job.error(), "Deadline Exceeded")));
  CHECK(loop.services.failed_calls >= 2);
  CHECK(absl::Now() - start < absl::Seconds(10));
}

TEST_CASE("loop: cancel in mid-round stops the job") {
  Loop loop(":memory:", absl::Milliseconds(300));
  v1::Job job = loop.Submit(5);
  // Wait until round 1 measures.
  for (int i = 0; i < 500; ++i) {
    auto j = loop.storage->GetJob(job.id());
    if (j->job.current_round() >= 1) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  absl::SleepFor(absl::Milliseconds(100));
  auto c = loop.manager->Cancel(job.id(), "user asked");
  REQUIRE(c.ok());
  CHECK(c->state() == v1::JOB_STATE_CANCELLED);
  v1::Job done = loop.WaitDone(job.id());
  CHECK(done.state() == v1::JOB_STATE_CANCELLED);
  CHECK(absl::StrContains(done.result().stop_reason(), "user asked"));
  for (int i = 0; i < 300 && loop.manager->running_jobs() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
  CHECK(loop.manager->running_jobs() == 0);
  // Cancelling again is idempotent; the final event says CANCELLED.
  CHECK(loop.manager->Cancel(job.id(), "").ok());
  CHECK(loop.Events(job.id()).back().state() == v1::JOB_STATE_CANCELLED);
  // The job's thread released it on both workers when it stopped (once each).
  CHECK(Releases(loop, job.id(), 1) == std::vector<int>{1, 1});
}

TEST_CASE("loop: a kernel with variants is screened and the fastest that passed is measured") {
  Loop loop;
  loop.services.variants_for = ThreeVariants;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  // The library seed comes with variants too: one faster, one that is the start again.
  loop.services.first_kernel = "class ModelNew(object): pass\n# fix:good-a\n";
  loop.services.first_kernel_variants = {"class ModelNew(object): pass\nS = 1\n# fix:good-a\n# fix:good-s\n",
                                         kStart};
  // The screen's figures are not the measurement's: its short loop reads half.
  loop.gpu_a.screen_time_factor = loop.gpu_b.screen_time_factor = 0.5;
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  INFO(job.DebugString());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);

  const std::vector<v1::ScreenRequest> screens = ScreenRequests(loop);
  std::map<std::string, v1::ScreenRequest> screen_of;  // by "/rR/wI" in the task id
  int kernels_screened = 0;
  for (const auto& r : screens) {
    INFO(r.task_id());
    CHECK(absl::StartsWith(r.task_id(), job.id() + "/r1/w"));
    CHECK(absl::StrContains(r.task_id(), "/screen/"));
    CHECK(r.job_id() == job.id());
    CHECK(r.problem().source() == kProblem);
    kernels_screened += r.kernels_size();
    std::string w = r.task_id().substr(job.id().size(), r.task_id().find("/screen/") - job.id().size());
    CHECK(screen_of.emplace(w, r).second);  // one screen per candidate
  }
  std::map<std::string, v1::MeasureRequest> measured;
  for (const auto& r : loop.MeasureRequests()) measured[r.task_id()] = r;
  const auto events = loop.Events(job.id());
  auto logged = [&](const std::string& text) {
    for (const auto& e : events) {
      if (e.type() == v1::JOB_EVENT_LOG && absl::StrContains(e.message(), text)) return true;
    }
    return false;
  };
  auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  int screened = 0, seeds = 0;
  for (const auto& c : cands) {
    if (c.round() != 1) continue;
    INFO(c.id() << ": " << c.kernel().source());
    const std::string w = absl::StrCat("/r1/w", c.worker_index());
    REQUIRE(screen_of.count(w) == 1);
    const v1::ScreenRequest& sr = screen_of[w];
    ++screened;
    // The kernel as generated comes first, then its variants.
    REQUIRE(sr.kernels_size() >= 3);
    const std::string label = absl::StrCat("r1-w", c.worker_index());
    if (c.prescription().pattern_id() == kLibrarySeedPattern) {
      ++seeds;
      REQUIRE(sr.kernels_size() == 3);
      CHECK(sr.kernels(0).source() == loop.services.first_kernel);
      // The faster variant won; the copy of the start was not a candidate at all.
      CHECK(c.kernel().source() == sr.kernels(1).source());
      CHECK(logged(label + ": screened 3 variants: #1 fastest 0.320 ms (screen, not a measurement)"));
    } else if (absl::StrContains(sr.kernels(0).source(), "crash")) {
      // Every variant of a crashing kernel crashes: nothing passed, measured as generated.
      CHECK(c.kernel().source() == sr.kernels(0).source());
      CHECK(c.measurement().verdict() == v1::VERDICT_CRASH);
      CHECK(logged(label + ": screened 4 variants, none passed"));
      CHECK(logged("measuring the kernel as generated"));
    } else {
      REQUIRE(sr.kernels_size() == 4);
      CHECK(c.kernel().source() == sr.kernels(1).source());  // the faster variant
      CHECK(logged(label + ": screened 4 variants: #1 fastest"));
    }
    // What was measured is the screen's choice, and its measurement is the Measure's own
    // (the screen read half of it).
    REQUIRE(measured.count(job.id() + w) == 1);
    CHECK(measured[job.id() + w].kernel().source() == c.kernel().source());
    if (c.measurement().verdict() == v1::VERDICT_CORRECT) {
      CHECK(c.measurement().candidate().median_ms() == Approx(Time(c.kernel().source()).candidate().median_ms()));
      CHECK(c.measurement().candidate().count() == 100);
    }
    auto artifact = loop.storage->GetArtifact(job.id(), absl::StrCat("round-1/", c.id(), "/screen.json"));
    REQUIRE(artifact.ok());
    CHECK(absl::StrContains(artifact->content(), "not a measurement"));
    auto kernel_py = loop.storage->GetArtifact(job.id(), absl::StrCat("round-1/", c.id(), "/kernel.py"));
    REQUIRE(kernel_py.ok());
    CHECK(kernel_py->content() == c.kernel().source());
  }
  CHECK(seeds == 1);
  CHECK(screened == static_cast<int>(screens.size()));
  CHECK(job.variants_screened() == kernels_screened);
  // The best kernel is a screened variant, measured in full.
  CHECK(absl::StrContains(job.result().best_kernel().source(), "# fix:good-"));
  CHECK(job.result().best_measurement().candidate().count() == 100);
}

TEST_CASE("loop: a failed screen measures the kernel as generated, saying why") {
  Loop loop;
  loop.services.variants_for = ThreeVariants;
  loop.gpu_a.screen_error = loop.gpu_b.screen_error =
      absl::UnimplementedError("unknown method Screen for service kagent.v1.BenchmarkService");
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  REQUIRE_FALSE(ScreenRequests(loop).empty());
  auto cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
  std::map<std::string, v1::MeasureRequest> measured;
  for (const auto& r : loop.MeasureRequests()) measured[r.task_id()] = r;
  int round_kernels = 0;
  for (const auto& c : cands) {
    if (c.round() != 1) continue;
    ++round_kernels;
    INFO(c.id());
    // As generated: the parent plus the fix's line, no variant's.
    CHECK_FALSE(absl::StrContains(c.kernel().source(), "V = "));
    CHECK(measured[absl::StrCat(job.id(), "/r1/w", c.worker_index())].kernel().source() ==
          c.kernel().source());
  }
  CHECK(round_kernels >= 2);
  int said = 0;
  for (const auto& e : loop.Events(job.id())) {
    said += absl::StrContains(e.message(), "the screen of 4 variants failed (UNIMPLEMENTED") &&
                    absl::StrContains(e.message(), "measuring the kernel as generated")
                ? 1
                : 0;
  }
  CHECK(said == round_kernels);
  CHECK(job.variants_screened() == 0);  // nothing was screened
}

TEST_CASE("loop: the job counts its measurements, GPU busy time and screened variants") {
  Loop loop;
  loop.services.variants_for = ThreeVariants;
  loop.gpu_a.gpu_busy_seconds = loop.gpu_b.gpu_busy_seconds = 0.06;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  loop.services.first_kernel = "class ModelNew(object): pass\n";
  v1::Job j;
  j.set_id("job-count");
  j.set_tenant("t");
  j.mutable_problem()->set_name("p");
  j.mutable_problem()->set_source(kProblem);
  auto* shape = j.mutable_problem()->add_extra_shapes();
  shape->set_name("big");
  shape->set_get_inputs_source("def get_inputs(): pass\n");
  j.mutable_config()->mutable_budget()->set_max_rounds(2);
  j.mutable_config()->set_plateau_rounds(5);
  REQUIRE(loop.manager->Submit(j, "").ok());  // no start: a reference run first
  v1::Job job = loop.WaitDone("job-count");
  INFO(job.DebugString());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  int with_kernel = 0, reference_only = 0, finals = 0, shapes = 0;
  for (const auto& r : loop.MeasureRequests()) {
    (r.kernel().source().empty() ? reference_only : with_kernel)++;
    finals += absl::StrContains(r.task_id(), "/final/") ? 1 : 0;
    shapes += absl::StrContains(r.task_id(), "/shape/") ? 1 : 0;
  }
  const std::vector<v1::ScreenRequest> screens = ScreenRequests(loop);
  int variants = 0;
  for (const auto& s : screens) variants += s.kernels_size();
  REQUIRE(reference_only == 1);
  REQUIRE(shapes == 1);
  REQUIRE_FALSE(screens.empty());
  // Baseline, round candidates, final and shape runs; not the reference-only run, nor screens.
  CHECK(job.candidates_measured() == with_kernel);
  CHECK(job.candidates_measured() >= 1 + 2 + shapes);
  CHECK(job.variants_screened() == variants);
  // Busy time: each measurement's (the reference run's included) and each screen's.
  CHECK(job.gpu_busy_seconds_used() ==
        Approx(0.06 * (with_kernel + reference_only) + 0.04 * screens.size()));
  // Held time: the measurements' and screens' own figures, plus the profiles' wall time.
  CHECK(job.gpu_seconds_used() >= 0.1 * (with_kernel + reference_only) + 0.05 * screens.size() - 1e-9);
  CHECK(job.gpu_busy_seconds_used() < job.gpu_seconds_used());
}

TEST_CASE("loop: a verdict reached before the GPU was taken is charged no GPU time") {
  // On the H100 a starting kernel's compile dry run did not answer twice (242 s of
  // preparing, no GPU held) and the job was charged the call's wall time as GPU time.
  Loop loop;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->delay = absl::Milliseconds(150);
    g->measure = [](const std::string&) {
      v1::Measurement m;
      m.set_verdict(v1::VERDICT_TIMEOUT);
      m.mutable_correctness()->set_reason(
          "no answer from the candidate within 120.0s during the compile dry run");
      m.set_prepare_seconds(242.1);
      return m;
    };
  }
  v1::Job j;
  j.set_id("job-at-prepare");
  j.set_tenant("t");
  j.mutable_problem()->set_name("p");
  j.mutable_problem()->set_source(kProblem);
  j.mutable_start_kernel()->set_source(kStart);
  REQUIRE(loop.manager->Submit(j, "").ok());
  v1::Job job = loop.WaitDone("job-at-prepare");
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  CHECK(absl::StrContains(job.error(), "compile dry run"));
  REQUIRE(loop.MeasureRequests().size() == 1);
  CHECK(job.gpu_seconds_used() == 0);
}

TEST_CASE("loop: a profile is charged the time it held the GPU, not its wait") {
  // A worker runs several tasks at once; a profile's call then includes waiting behind
  // the others, and the job is charged only the held time the worker reports.
  Loop loop;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->delay = absl::Milliseconds(150);
    g->profile_gpu_seconds = 0.002;
    g->profile_gpu_busy_seconds = 0.0015;
    g->op_signature = ReluSignature();
  }
  v1::Job j;
  j.set_id("job-profile-held");
  j.set_tenant("t");
  j.mutable_problem()->set_name("p");
  j.mutable_problem()->set_source(kProblem);
  j.mutable_start_kernel()->set_source(kStart);
  j.mutable_config()->mutable_budget()->set_max_rounds(1);
  REQUIRE(loop.manager->Submit(j, "").ok());
  v1::Job job = loop.WaitDone("job-profile-held");
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const size_t profiles = loop.ProfileCount();
  REQUIRE(profiles >= 1);
  const double measured = 0.1 * static_cast<double>(loop.MeasureRequests().size()) +
                          0.05 * static_cast<double>(ScreenRequests(loop).size());
  CHECK(job.gpu_seconds_used() == Approx(measured + 0.002 * static_cast<double>(profiles)));
  // The busy time: the measurements' (FakeGpu's default 0 and the screens' 0.04) and the
  // profiles' own NVML figure.
  const double screens_busy = 0.04 * static_cast<double>(ScreenRequests(loop).size());
  CHECK(job.gpu_busy_seconds_used() ==
        Approx(screens_busy + 0.0015 * static_cast<double>(profiles)));
}

TEST_CASE("loop: a job that ends is released on every worker, a shutdown is not") {
  SECTION("done") {
    Loop loop;
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);
    CHECK(Releases(loop, job.id(), 1) == std::vector<int>{1, 1});
  }
  SECTION("failed") {
    Loop loop;
    v1::Job job = loop.WaitDone(loop.Submit(3, "class ModelNew: pass  # WRONG\n").id());
    REQUIRE(job.state() == v1::JOB_STATE_FAILED);
    CHECK(Releases(loop, job.id(), 1) == std::vector<int>{1, 1});
  }
  SECTION("a worker failing the release does not fail the job") {
    Loop loop;
    loop.gpu_a.release_error = absl::UnavailableError("connection reset");
    loop.gpu_b.release_error = absl::UnimplementedError("an older worker");
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    CHECK(job.state() == v1::JOB_STATE_DONE);
    CHECK(Releases(loop, job.id(), 1) == std::vector<int>{1, 1});
    CHECK(loop.storage->GetJob(job.id())->job.state() == v1::JOB_STATE_DONE);
  }
  SECTION("cancelled, while queued and while running") {
    Loop loop(":memory:", absl::Milliseconds(300));
    JobDefaults d;
    d.max_concurrent_jobs = 1;
    loop.manager = std::make_unique<JobManager>(d, loop.storage.get(), loop.scheduler.get(),
                                                &loop.services, nullptr);
    v1::Job running = loop.Submit(1);
    v1::Job queued = loop.Submit(1);  // waits for the one run slot
    REQUIRE(loop.manager->Cancel(queued.id(), "").ok());
    // Never started here, but it may have run before a restart: released at once.
    CHECK(Releases(loop, queued.id(), 1) == std::vector<int>{1, 1});
    REQUIRE(loop.manager->Cancel(running.id(), "").ok());
    CHECK(loop.WaitDone(running.id()).state() == v1::JOB_STATE_CANCELLED);
    CHECK(Releases(loop, running.id(), 1) == std::vector<int>{1, 1});
  }
}

TEST_CASE("loop: a coordinator stopped in mid-round resumes, nothing screened or measured twice") {
  std::string path = std::filesystem::temp_directory_path() /
                     absl::StrCat("kagent-resume-screen-", getpid(), ".db");
  std::filesystem::remove(path);
  std::string id;
  std::vector<std::string> done_before;
  int screens_before = 0;
  {
    Loop loop(path, absl::Milliseconds(150));
    loop.services.variants_for = ThreeVariants;
    id = loop.Submit(3).id();
    for (int i = 0; i < 1000; ++i) {
      auto j = loop.storage->GetJob(id);
      if (j->job.current_round() >= 2) break;
      absl::SleepFor(absl::Milliseconds(10));
    }
    absl::SleepFor(absl::Milliseconds(200));  // in the middle of round 2's screens and measurements
    loop.manager->Shutdown();
    REQUIRE(IsUnfinishedJobState(loop.storage->GetJob(id)->job.state()));
    for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
      absl::MutexLock lock(&g->mu);
      done_before.insert(done_before.end(), g->completed.begin(), g->completed.end());
    }
    screens_before = static_cast<int>(ScreenRequests(loop).size());
    REQUIRE(screens_before >= 2);  // round 1's at least
    loop.scheduler.reset();  // sends what was queued: a shutdown releases nothing
    for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
      absl::MutexLock lock(&g->mu);
      CHECK(g->released_jobs.empty());
    }
  }
  Loop again(path);
  again.services.variants_for = ThreeVariants;
  REQUIRE(again.manager->ResumeUnfinished().ok());
  v1::Job job = again.WaitDone(id);
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  std::set<std::string> before(done_before.begin(), done_before.end());
  for (FakeGpu* g : {&again.gpu_a, &again.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    for (const auto& t : g->completed) CHECK(before.count(t) == 0);  // screens included
  }
  // Every round candidate that passed was measured as its screen's choice.
  const auto cands = *again.storage->ListCandidates(id, std::nullopt);
  for (const auto& c : cands) {
    if (c.round() == 0 || c.measurement().verdict() != v1::VERDICT_CORRECT) continue;
    INFO(c.id());
    CHECK(absl::StrContains(c.kernel().source(), "# fix:good-v"));
  }
  CHECK(job.result().trajectory_size() == 3);
  CHECK(Releases(again, id, 1) == std::vector<int>{1, 1});
  std::filesystem::remove(path);
}

TEST_CASE("loop: a coordinator stopped in mid-round resumes, nothing measured twice") {
  std::string path = std::filesystem::temp_directory_path() / absl::StrCat("kagent-resume-", getpid(), ".db");
  std::filesystem::remove(path);
  std::string id;
  std::vector<std::string> done_before;
  {
    Loop loop(path, absl::Milliseconds(150));
    id = loop.Submit(3).id();
    for (int i = 0; i < 1000; ++i) {
      auto j = loop.storage->GetJob(id);
      if (j->job.current_round() >= 2) break;
      absl::SleepFor(absl::Milliseconds(10));
    }
    absl::SleepFor(absl::Milliseconds(200));  // in the middle of round 2's measurements
    loop.manager->Shutdown();                  // the "kill": state stays as it was
    auto j = loop.storage->GetJob(id);
    REQUIRE(IsUnfinishedJobState(j->job.state()));
    for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
      absl::MutexLock lock(&g->mu);
      done_before.insert(done_before.end(), g->completed.begin(), g->completed.end());
    }
    REQUIRE(done_before.size() >= 3);  // the baseline and round 1 were measured
  }
  Loop again(path);
  REQUIRE(again.manager->ResumeUnfinished().ok());
  v1::Job job = again.WaitDone(id);
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  // Every measured task id is stored once; tasks finished before the stop are not re-run:
  // the measurements after the restart are only those not yet done.
  auto cands = *again.storage->ListCandidates(id, std::nullopt);
  std::set<std::string> ids;
  for (auto& c : cands) CHECK(ids.insert(c.id()).second);
  // No measurement finished before the stop was run again after it.
  std::set<std::string> before(done_before.begin(), done_before.end());
  for (FakeGpu* g : {&again.gpu_a, &again.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    for (const auto& t : g->completed) CHECK(before.count(t) == 0);
  }
  CHECK(job.result().trajectory_size() == 3);
  std::filesystem::remove(path);
}

// --- A full disk (common/storage/testing/full_disk.h) ---------------------------------


TEST_CASE("loop: a best kernel slower than the start in its final run leaves the start the result") {
  for (double factor : {1.0, 2.0}) {
    INFO("final run factor " << factor);
    Loop loop;
    for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) g->final_time_factor = factor;
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);
    const v1::JobResult& r = job.result();
    if (factor == 1.0) {
      // The round's faster kernel (0.8 ms against the start's 1.0 ms) stays faster.
      CHECK(r.best_kernel().source() != kStart);
      CHECK(r.speedup_vs_start() > 1.0);
    } else {
      // Timed at 1.6 ms beside the start's 1.0 ms in its final run: the start is the result,
      // with its own baseline run's figures.
      CHECK(r.best_kernel().source() == kStart);
      CHECK(r.best_measurement().candidate().median_ms() == Approx(1.0));
      CHECK(r.speedup_vs_start() == Approx(1.0));
      CHECK(r.speedup_vs_eager() == Approx(2.0));
      bool logged = false;
      for (const v1::JobEvent& e : loop.Events(job.id())) {
        logged = logged || absl::StrContains(e.message(), "the result is the starting kernel");
      }
      CHECK(logged);
    }
  }
}

TEST_CASE("loop: the beam's final runs stop at the first kernel, fastest first, that passes") {
  for (int failing : {0, 1}) {
    INFO("final runs that fail first: " << failing);
    Loop loop;
    loop.services.fixes = ScriptedServices::ManyGoodFixes();
    loop.services.fixes_change_code = true;
    auto seen = std::make_shared<std::atomic<int>>(0);
    for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
      g->final_fails = [seen, failing](const std::string&) { return (*seen)++ < failing; };
    }
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);
    std::vector<std::string> finals;
    for (const auto& r : loop.MeasureRequests()) {
      if (absl::StrContains(r.task_id(), "/final/")) finals.push_back(r.kernel().source());
    }
    // The beam: the two fastest correct kernels of the round (the start among them).
    std::vector<v1::Candidate> cands = *loop.storage->ListCandidates(job.id(), std::nullopt);
    std::vector<v1::Candidate> correct;
    for (const auto& c : cands) {
      if (c.measurement().verdict() == v1::VERDICT_CORRECT && !absl::StrContains(c.id(), "/")) {
        correct.push_back(c);
      }
    }
    std::sort(correct.begin(), correct.end(), [](const v1::Candidate& a, const v1::Candidate& b) {
      return a.measurement().candidate().median_ms() < b.measurement().candidate().median_ms();
    });
    REQUIRE(correct.size() >= 3);
    const v1::Candidate& first = correct[0];
    const v1::Candidate& second = correct[1];
    REQUIRE(first.kernel().source() != kStart);
    REQUIRE(second.kernel().source() != kStart);
    // The beam's fastest is run first; it passes, or, failing, the next one is run.
    REQUIRE(finals.size() == static_cast<size_t>(1 + failing));
    CHECK(finals[0] == first.kernel().source());
    CHECK(job.result().best_candidate_id() == (failing ? second.id() : first.id()));
  }
}

TEST_CASE("loop: no kernel beats torch.compile: DONE, and the result says to keep it") {
  // Every kernel three times slower than the loop's usual: the start 3.0 ms, the fixes
  // 2.4 ms and less, all slower than torch.compile's 1.5 ms (eager: 2.0 ms).
  Loop loop;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->measure = [](const std::string& source) {
      v1::Measurement m = Time(source);
      m.mutable_candidate()->set_median_ms(3 * m.candidate().median_ms());
      return m;
    };
    g->op_signature = ReluSignature();
  }
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  INFO(job.DebugString());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const v1::JobResult& r = job.result();
  const double best_ms = r.best_measurement().candidate().median_ms();
  REQUIRE(best_ms > 1.5);
  CHECK(r.recommendation().deploy() == v1::DEPLOY_TORCH_COMPILE);
  CHECK(r.recommendation().runner_up() == v1::DEPLOY_KERNEL);
  CHECK(r.recommendation().margin_pct() == Approx((best_ms / 1.5 - 1) * 100));
  CHECK(absl::StartsWith(r.recommendation().summary(),
                         "keep PyTorch's torch.compile: fastest by "));
  CHECK_FALSE(r.op_class().empty());
  // The finish event says slower as slower, and what to deploy.
  const v1::JobEvent finished = loop.Events(job.id()).back();
  REQUIRE(finished.type() == v1::JOB_EVENT_JOB_FINISHED);
  CHECK(absl::StrContains(finished.message(), "slower than torch.compile"));
  CHECK(absl::StrContains(finished.message(), " than eager, "));  // faster or slower: said
  CHECK(absl::StrContains(finished.message(), "; keep PyTorch's torch.compile: fastest by "));
  CHECK_FALSE(absl::StrContains(finished.message(), "x torch.compile"));
}

TEST_CASE("loop: a kernel faster than both PyTorch paths is the one to deploy") {
  Loop loop;
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const v1::JobResult& r = job.result();
  // The fixes take the 1.0 ms start to 0.8 ms and less; torch.compile takes 1.5 ms.
  const double best_ms = r.best_measurement().candidate().median_ms();
  CHECK(r.recommendation().deploy() == v1::DEPLOY_KERNEL);
  CHECK(r.recommendation().runner_up() == v1::DEPLOY_TORCH_COMPILE);
  CHECK(r.recommendation().margin_pct() == Approx((1.5 / best_ms - 1) * 100));
  CHECK(absl::StrContains(loop.Events(job.id()).back().message(),
                          "faster than torch.compile; deploy the kernel: fastest by "));
}

TEST_CASE("loop: without a profile the result's roofline uses the spec table's GPU") {
  // kagentd's workers report no GPU at registration; a profile that failed (ncu's "no
  // kernels captured") gives none either: the GPU the baseline ran on names the spec.
  Loop loop;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    g->profile_error = absl::FailedPreconditionError("no kernels captured");
    g->gpu_name = "NVIDIA H200";
    g->op_signature = ReluSignature();
    g->op_signature.set_flops(1024);  // the roofline needs FLOPs and bytes
  }
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(job.result().roofline_bound_pct() > 0);
}

}  // namespace
}  // namespace kagent::testing
