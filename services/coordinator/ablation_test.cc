// The ablations (JobConfig.ablation, docs/loop.md "Ablations") on the CPU: the real
// JobManager, Scheduler, SQLite storage and round planner, fake GPU workers, and loop
// services that record every request, to check what each arm sends and leaves out. Also
// the job service's checks of the ablation, the GPU-time budget's stop, and the memory a
// plan reads across jobs (share_memory_across_jobs).
#include <catch2/catch.hpp>

#include <algorithm>
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/status.h"
#include "common/storage/sqlite_storage.h"
#include "services/coordinator/blind_sweep.h"
#include "services/coordinator/job_manager.h"
#include "services/coordinator/job_service.h"
#include "services/coordinator/testing_fakes.h"
#include "services/orchestrator/planner.h"

namespace kagent {
namespace {

constexpr char kSource[] = "class Model: pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n";
constexpr char kFirst[] = "class ModelNew: pass  # first\n";

// A kernel's time: 1 ms, 15% less for each "# good" line, 10% more for each "# slow" line.
v1::Measurement TimeOf(const std::string& source) {
  double ms = 1.0;
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    if (absl::StartsWith(line, "# good")) ms *= 0.85;
    if (absl::StartsWith(line, "# slow")) ms *= 1.1;
  }
  v1::Measurement m;
  m.set_verdict(v1::VERDICT_CORRECT);
  m.mutable_candidate()->set_median_ms(ms);
  m.mutable_candidate()->set_count(100);
  return m;
}

// Loop services that keep every request and answer simply: the analyzer prescribes
// good-1..good-8, the real planner plans, the brain appends "# good <pattern>" to the
// parent (a blind move: "# good" or "# slow" by its seed's parity).
class RecordingServices : public LoopServices {
 public:
  absl::Mutex mu;
  std::vector<v1::DiagnoseRequest> diagnoses ABSL_GUARDED_BY(mu);
  std::vector<v1::PrescribeRequest> prescribes ABSL_GUARDED_BY(mu);
  std::vector<v1::PlanRoundRequest> plans ABSL_GUARDED_BY(mu);
  std::vector<v1::ReflectRequest> reflects ABSL_GUARDED_BY(mu);
  std::vector<v1::GenerateRequest> generates ABSL_GUARDED_BY(mu);  // round kernels only
  std::atomic<int> serial{0};

  absl::StatusOr<v1::DiagnoseResponse> Diagnose(const v1::DiagnoseRequest& r, CancelToken*) override {
    absl::MutexLock lock(&mu);
    diagnoses.push_back(r);
    v1::DiagnoseResponse out;
    if (r.metrics().kernels_size() > 0) {
      out.mutable_report()->set_primary(v1::BOTTLENECK_MEMORY_BOUND);
      out.mutable_report()->set_efficiency_pct(r.metrics().roofline_efficiency_pct());
    } else {
      out.mutable_report()->set_summary(absl::StrCat("no counters: ", r.no_profile_reason()));
    }
    return out;
  }
  absl::StatusOr<v1::PrescribeResponse> Prescribe(const v1::PrescribeRequest& r, CancelToken*) override {
    absl::MutexLock lock(&mu);
    prescribes.push_back(r);
    v1::PrescribeResponse out;
    for (int i = 1; i <= 8; ++i) {
      v1::Prescription* p = out.add_prescriptions();
      p->set_pattern_id(absl::StrCat("good-", i));
      p->set_expected_speedup(1.2);
    }
    return out;
  }
  absl::StatusOr<v1::PlanRoundResponse> PlanRound(const v1::PlanRoundRequest& r, CancelToken*) override {
    {
      absl::MutexLock lock(&mu);
      plans.push_back(r);
    }
    KAGENT_ASSIGN_OR_RETURN(v1::RoundPlan plan, kagent::PlanRound(r));
    v1::PlanRoundResponse out;
    *out.mutable_plan() = plan;
    return out;
  }
  absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& r, CancelToken*) override {
    absl::MutexLock lock(&mu);
    reflects.push_back(r);
    v1::ReflectResponse out;
    out.mutable_reflexion()->set_lesson("noted");
    out.mutable_reflexion()->set_fix_effective(true);
    return out;
  }
  absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& r, CancelToken*) override {
    v1::GenerateResponse out;
    if (r.plan().assignments_size() == 0 && r.parents().empty()) {  // the first kernel
      v1::GeneratedKernel* g = out.add_kernels();
      g->mutable_kernel()->set_source(kFirst);
      g->mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
      return out;
    }
    {
      absl::MutexLock lock(&mu);
      generates.push_back(r);
    }
    for (const v1::Assignment& a : r.plan().assignments()) {
      v1::GeneratedKernel* g = out.add_kernels();
      *g->mutable_assignment() = a;
      const v1::Prescription& p = a.prescription();
      std::string line = p.has_blind_seed()
                             ? absl::StrCat(p.blind_seed() % 2 ? "# slow " : "# good ", p.blind_seed())
                             : absl::StrCat("# good ", p.pattern_id());
      g->mutable_kernel()->set_source(absl::StrCat(r.parents().at(a.parent_kernel_id()).source(),
                                                   "X", serial++, " = 1\n", line, "\n"));
      g->mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
    }
    return out;
  }
};

// The coordinator with two fake GPUs and the recording services.
struct Rig {
  Rig() {
    storage = *SqliteStorage::Open({.path = ":memory:"});
    gpu_a.measure = gpu_b.measure = TimeOf;
    gpu_a.delay = gpu_b.delay = absl::Milliseconds(1);
    factory.gpus = {{"a:1", &gpu_a}, {"b:1", &gpu_b}};
    SchedulerOptions so;
    so.no_worker_timeout = absl::Seconds(2);
    scheduler = std::make_unique<Scheduler>(so, storage.get(), &factory, nullptr);
    REQUIRE(scheduler->RegisterWorker("wa", "a:1", {}, true).ok());
    REQUIRE(scheduler->RegisterWorker("wb", "b:1", {}, true).ok());
    manager = std::make_unique<JobManager>(JobDefaults(), storage.get(), scheduler.get(),
                                           &services, nullptr);
  }

  // Runs a job with `config` (the rounds budget 3 and plateau 3 unless it sets them) to
  // its end and returns it as stored.
  v1::Job Run(v1::JobConfig config, bool with_start = true) {
    v1::Job j;
    j.set_id(absl::StrCat("job-", ++jobs));
    j.set_tenant("t");
    j.mutable_problem()->set_name("p");
    j.mutable_problem()->set_source(kSource);
    if (with_start) {
      j.mutable_start_kernel()->set_source("class ModelNew: pass  # start\n");
      j.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
    }
    if (!config.budget().has_max_rounds()) config.mutable_budget()->set_max_rounds(3);
    if (!config.has_plateau_rounds()) config.set_plateau_rounds(3);
    *j.mutable_config() = config;
    absl::StatusOr<v1::Job> submitted = manager->Submit(j, "");
    REQUIRE(submitted.ok());
    for (absl::Time end = absl::Now() + absl::Seconds(60); absl::Now() < end;) {
      absl::StatusOr<StoredJob> s = storage->GetJob(j.id());
      REQUIRE(s.ok());
      if (!IsUnfinishedJobState(s->job.state()) && manager->running_jobs() == 0) return s->job;
      absl::SleepFor(absl::Milliseconds(10));
    }
    FAIL("job " << j.id() << " did not finish");
    return {};
  }

  size_t Profiles() {
    size_t n = 0;
    for (testing::FakeGpu* g : {&gpu_a, &gpu_b}) {
      absl::MutexLock lock(&g->mu);
      n += g->profile_requests.size();
    }
    return n;
  }

  int jobs = 0;
  std::unique_ptr<SqliteStorage> storage;
  testing::FakeGpu gpu_a, gpu_b;
  testing::FakeWorkerFactory factory;
  RecordingServices services;
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<JobManager> manager;
};

v1::JobConfig WithAblation(v1::Ablation a) {
  v1::JobConfig c;
  c.set_ablation(a);
  return c;
}

TEST_CASE("ablation none: profiles, diagnoses from counters, plans with the memory") {
  Rig rig;
  v1::Job job = rig.Run(v1::JobConfig());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(job.config().ablation() == v1::ABLATION_NONE);
  CHECK(rig.Profiles() > 0);
  absl::MutexLock lock(&rig.services.mu);
  REQUIRE(rig.services.plans.size() == 3);
  CHECK(rig.services.plans[0].memory_size() == 0);
  CHECK(rig.services.plans[1].memory_size() > 0);  // round 1's reflexions
  CHECK(rig.services.diagnoses.front().metrics().kernels_size() > 0);
  // Each round's summary says how many GPU-seconds the job had used when it closed.
  REQUIRE(job.result().trajectory_size() == 3);
  double before = 0;
  for (const v1::RoundSummary& t : job.result().trajectory()) {
    CHECK(t.gpu_seconds_used() > before);
    before = t.gpu_seconds_used();
  }
  CHECK(before <= job.gpu_seconds_used());
}

TEST_CASE("ablation no-counters: no profile, and nothing from counters to the judge, analyzer "
          "or brain") {
  Rig rig;
  v1::Job job = rig.Run(WithAblation(v1::ABLATION_NO_COUNTERS));
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(job.config().ablation() == v1::ABLATION_NO_COUNTERS);
  CHECK(rig.Profiles() == 0);
  absl::MutexLock lock(&rig.services.mu);
  REQUIRE_FALSE(rig.services.diagnoses.empty());
  for (const v1::DiagnoseRequest& d : rig.services.diagnoses) {
    CHECK_FALSE(d.has_metrics());
    CHECK(absl::StrContains(d.no_profile_reason(), "ablation NO_COUNTERS"));
  }
  REQUIRE_FALSE(rig.services.prescribes.empty());
  for (const v1::PrescribeRequest& p : rig.services.prescribes) {
    CHECK(p.report().primary() == v1::BOTTLENECK_CATEGORY_UNSPECIFIED);
  }
  for (const v1::GenerateRequest& g : rig.services.generates) CHECK(g.parent_metrics().empty());
  // The rest of the loop as in the full one: planned with the memory, measured, improved.
  REQUIRE(rig.services.plans.size() == 3);
  CHECK(rig.services.plans[1].memory_size() > 0);
  CHECK(job.result().speedup_vs_start() > 1.0);
}

TEST_CASE("ablation no-reflexion: no memory to the planner, brain or reflector, reflexions "
          "still stored") {
  Rig rig;
  v1::Job job = rig.Run(WithAblation(v1::ABLATION_NO_REFLEXION));
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(rig.Profiles() > 0);  // counters as in the full loop
  absl::MutexLock lock(&rig.services.mu);
  REQUIRE(rig.services.plans.size() == 3);
  for (const v1::PlanRoundRequest& p : rig.services.plans) CHECK(p.memory_size() == 0);
  REQUIRE_FALSE(rig.services.generates.empty());
  for (const v1::GenerateRequest& g : rig.services.generates) CHECK(g.memory_size() == 0);
  REQUIRE(rig.services.reflects.size() > 2);
  for (const v1::ReflectRequest& r : rig.services.reflects) CHECK(r.memory_size() == 0);
  absl::StatusOr<std::vector<v1::Reflexion>> stored = rig.storage->ListReflexions(job.id());
  REQUIRE(stored.ok());
  CHECK(stored->size() == rig.services.reflects.size());
}

TEST_CASE("ablation blind sweep: seeded random moves, no profile, diagnosis, prescription or "
          "plan") {
  Rig rig;
  v1::JobConfig c = WithAblation(v1::ABLATION_BLIND_SWEEP);
  c.set_sweep_seed(7);
  v1::Job job = rig.Run(c);
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(job.config().sweep_seed() == 7);
  CHECK(rig.Profiles() == 0);
  std::vector<uint64_t> seeds;
  {
    absl::MutexLock lock(&rig.services.mu);
    CHECK(rig.services.diagnoses.empty());
    CHECK(rig.services.prescribes.empty());
    CHECK(rig.services.plans.empty());
    REQUIRE(rig.services.generates.size() == 3);
    for (const v1::GenerateRequest& g : rig.services.generates) {
      CHECK(g.memory_size() == 0);
      CHECK(g.parent_reports().empty());
      // K x M = 2 x 2 from round 2 on (the beam has one kernel in round 1).
      for (const v1::Assignment& a : g.plan().assignments()) {
        CHECK(a.prescription().pattern_id() == kBlindSweepPattern);
        REQUIRE(a.prescription().has_blind_seed());
        CHECK(a.prescription().blind_seed() ==
              BlindMoveSeed(7, g.plan().round(), a.worker_index()));
        seeds.push_back(a.prescription().blind_seed());
      }
    }
    CHECK(rig.services.generates[0].plan().assignments_size() == 2);
    CHECK(rig.services.generates[1].plan().assignments_size() == 4);
  }
  // The round's plan is stored as in the other arms.
  CHECK(rig.storage->GetArtifact(job.id(), "round-1/plan.json").ok());

  // The same seed draws the same moves; another seed others.
  Rig again;
  v1::Job same = again.Run(c);
  c.set_sweep_seed(8);
  Rig other;
  v1::Job different = other.Run(c);
  auto seeds_of = [](Rig& r) {
    std::vector<uint64_t> out;
    absl::MutexLock lock(&r.services.mu);
    for (const v1::GenerateRequest& g : r.services.generates) {
      for (const v1::Assignment& a : g.plan().assignments()) out.push_back(a.prescription().blind_seed());
    }
    return out;
  };
  CHECK(seeds_of(again) == seeds);
  CHECK(seeds_of(other) != seeds);
  CHECK(same.result().best_measurement().candidate().median_ms() ==
        job.result().best_measurement().candidate().median_ms());
}

TEST_CASE("budget: a job stops cleanly when its GPU-seconds are spent, with the best so far") {
  Rig rig;
  v1::JobConfig c;
  c.mutable_budget()->set_max_rounds(50);
  c.mutable_budget()->set_max_gpu_seconds(0.75);  // a measurement charges 0.1
  c.set_plateau_rounds(50);
  v1::Job job = rig.Run(c);
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(absl::StartsWith(job.result().stop_reason(), "GPU-time budget spent"));
  CHECK(job.current_round() < 50);
  REQUIRE(job.result().trajectory_size() >= 1);
  // Checked before each round: the last round began under the budget.
  const int n = job.result().trajectory_size();
  if (n >= 2) CHECK(job.result().trajectory(n - 2).gpu_seconds_used() < 0.75);
  CHECK(job.result().trajectory(n - 1).gpu_seconds_used() >= 0.75);
  CHECK(job.result().speedup_vs_start() > 1.0);
}

TEST_CASE("job service: the ablation must be known, its seed only with a blind sweep, and a "
          "blind sweep needs the heuristic brain") {
  v1::SubmitJobRequest r;
  r.mutable_problem()->set_name("p");
  r.mutable_problem()->set_source(kSource);
  JobServiceLimits limits;
  limits.brains = {"heuristic", "llm"};
  for (v1::Ablation a : {v1::ABLATION_NONE, v1::ABLATION_NO_COUNTERS, v1::ABLATION_NO_REFLEXION,
                         v1::ABLATION_BLIND_SWEEP}) {
    v1::SubmitJobRequest x = r;
    x.mutable_config()->set_ablation(a);
    CHECK(ValidateSubmit(x, limits).ok());
  }
  v1::SubmitJobRequest unknown = r;
  unknown.mutable_config()->set_ablation(static_cast<v1::Ablation>(9));
  absl::Status s = ValidateSubmit(unknown, limits);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() ==
        "config.ablation 9 is not an ablation; known: NONE (the full loop), NO_COUNTERS, "
        "NO_REFLEXION, BLIND_SWEEP");

  v1::SubmitJobRequest seeded = r;
  seeded.mutable_config()->set_sweep_seed(3);
  s = ValidateSubmit(seeded, limits);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StrContains(s.message(), "config.sweep_seed seeds a blind sweep's random moves"));
  seeded.mutable_config()->set_ablation(v1::ABLATION_BLIND_SWEEP);
  CHECK(ValidateSubmit(seeded, limits).ok());

  v1::SubmitJobRequest llm = seeded;
  llm.mutable_config()->set_brain("llm");
  llm.mutable_config()->add_llm_agents("rewrite");
  limits.llm_agents = {"rewrite"};
  s = ValidateSubmit(llm, limits);
  CHECK(absl::IsInvalidArgument(s));
  CHECK(absl::StrContains(s.message(), "config.ablation BLIND_SWEEP draws random moves"));
}

}  // namespace
TEST_CASE("share_memory_across_jobs: a later job's plans read an earlier job's reflexions") {
  Rig rig;
  // The kernels' op, so that the shared memory has its key (op class, GPU architecture).
  rig.gpu_a.measure = rig.gpu_b.measure = [](const std::string& source) {
    v1::Measurement m = TimeOf(source);
    m.mutable_op_signature()->add_ops()->set_op("aten::relu");
    m.mutable_op_signature()->set_op_class("elementwise");
    return m;
  };
  v1::JobConfig sharing;
  sharing.set_share_memory_across_jobs(true);
  v1::Job first = rig.Run(sharing);
  REQUIRE(first.state() == v1::JOB_STATE_DONE);
  absl::StatusOr<std::vector<v1::Reflexion>> shared =
      rig.storage->ListSharedReflexions({"t", "elementwise", "sm_90"}, kSharedMemoryRead);
  REQUIRE(shared.ok());
  REQUIRE_FALSE(shared->empty());
  size_t before = 0;
  {
    absl::MutexLock lock(&rig.services.mu);
    before = rig.services.plans.size();
    // The first job read no one else's: its first plan had no memory.
    CHECK(rig.services.plans[0].memory_size() == 0);
  }

  v1::Job second = rig.Run(sharing);
  REQUIRE(second.state() == v1::JOB_STATE_DONE);
  {
    absl::MutexLock lock(&rig.services.mu);
    REQUIRE(rig.services.plans.size() > before);
    const v1::PlanRoundRequest& plan = rig.services.plans[before];
    // Round 1: the first job's most recent reflexions, oldest first, and none of its own yet.
    REQUIRE(static_cast<size_t>(plan.memory_size()) == shared->size());
    for (int i = 0; i < plan.memory_size(); ++i) {
      CHECK(plan.memory(i).candidate_id() == (*shared)[static_cast<size_t>(i)].candidate_id());
    }
    before = rig.services.plans.size();
  }
  absl::StatusOr<std::vector<v1::JobEvent>> events = rig.storage->ListEvents(second.id(), 0, 1000);
  REQUIRE(events.ok());
  bool logged = false;
  for (const v1::JobEvent& e : *events) {
    logged = logged || absl::StrContains(e.message(), "reflexion(s) of earlier jobs on elementwise");
  }
  CHECK(logged);

  // A job without the flag reads only its own memory.
  v1::Job alone = rig.Run(v1::JobConfig());
  REQUIRE(alone.state() == v1::JOB_STATE_DONE);
  absl::MutexLock lock(&rig.services.mu);
  REQUIRE(rig.services.plans.size() > before);
  CHECK(rig.services.plans[before].memory_size() == 0);
}

}  // namespace kagent
