// The whole loop on the CPU: the real JobManager, Scheduler, SQLite storage and round
// planner, with fake GPU workers and scripted judge/analyzer/reflector/brain.
//
// A kernel's source carries the fixes applied to it as comment lines "# fix:<id>"; the
// fake GPU times it from them: "good" fixes take 20% off, "bad" ones add 30%, "crash"
// makes it crash. The scripted analyzer prescribes the fixes listed in `fixes`.
#include <catch2/catch.hpp>
#include <grpcpp/create_channel.h>
#include <grpcpp/server.h>
#include <grpcpp/server_builder.h>
#include <grpcpp/server_context.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/str_split.h"
#include "common/llm/usage_status.h"
#include "common/status.h"
#include "common/storage/sqlite_storage.h"
#include "common/storage/testing/full_disk.h"
#include "kernel_model/gpu_spec.h"
#include "services/coordinator/coordinator_setup.h"
#include "services/coordinator/job_manager.h"
#include "services/coordinator/job_service.h"
#include "services/coordinator/testing_fakes.h"
#include "services/optimization_manager/optimization_manager_service.h"
#include "engines/llm/llm_agents.h"
#include "engines/llm/prompt_values.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "services/orchestrator/planner.h"

namespace kagent {
namespace {

using testing::FakeGpu;
using testing::FullDisk;
using testing::FakeWorkerFactory;

constexpr char kProblem[] = "class Model: pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n";
constexpr char kStart[] = "class ModelNew: pass  # start\n";

v1::Measurement Time(const std::string& source) {
  v1::Measurement m;
  double ms = 1.0;
  bool crash = false;
  for (absl::string_view line : absl::StrSplit(source, '\n')) {
    if (!absl::StartsWith(line, "# fix:")) continue;
    if (absl::StrContains(line, "good")) ms *= 0.8;
    if (absl::StrContains(line, "bad")) ms *= 1.3;
    if (absl::StrContains(line, "crash")) crash = true;
  }
  if (absl::StrContains(source, "WRONG")) {
    m.set_verdict(v1::VERDICT_INCORRECT);
    m.mutable_correctness()->set_reason("max abs error 3.0 at [0]");
    return m;
  }
  if (crash) {
    m.set_verdict(v1::VERDICT_CRASH);
    m.mutable_correctness()->set_reason("signal 11");
    return m;
  }
  m.set_verdict(v1::VERDICT_CORRECT);
  m.mutable_candidate()->set_median_ms(ms);
  m.mutable_candidate()->set_count(100);
  return m;
}

class ScriptedServices : public LoopServices {
 public:
  std::vector<std::string> fixes = {"good-1", "crash-1", "good-2", "bad-1"};
  // Enough distinct effective fixes that every round has work.
  static std::vector<std::string> ManyGoodFixes() {
    std::vector<std::string> out;
    for (int i = 1; i <= 16; ++i) out.push_back(absl::StrCat("good-", i));
    return out;
  }
  std::atomic<int> generate_calls{0};
  // Each fix also adds a line of code of its own (else a fix differs from its parent only
  // in a comment, and the beam keeps one of such twins).
  bool fixes_change_code = false;
  std::atomic<int> generated{0};
  std::atomic<int> diagnose_calls{0};
  // Prescribe, PlanRound and Generate answer as a cut-off host would (UNAVAILABLE, then
  // DEADLINE_EXCEEDED, alternating) while this is above 0, counting it down.
  std::atomic<int> transport_failures{0};
  std::atomic<int> failed_calls{0};
  absl::Status TransportFailure() {
    if (transport_failures.fetch_sub(1) <= 0) {
      ++transport_failures;
      return absl::OkStatus();
    }
    return ++failed_calls % 2 ? absl::UnavailableError("connect: No route to host")
                              : absl::DeadlineExceededError("Deadline Exceeded");
  }
  int budget_after_calls = 1 << 30;  // Generate answers RESOURCE_EXHAUSTED from then on
  // The brain's first kernel for the op (an empty plan asks for it); empty: the brain has
  // none (the kernel comes back with an error, as from a brain without a template).
  std::string first_kernel = kStart;
  // Variants the brain returns with a round's kernel (GeneratedKernel.variants), as a
  // function of the kernel's source; unset: none. `first_kernel_variants` go with the
  // first kernel (the library seed).
  std::function<std::vector<std::string>(const std::string&)> variants_for;
  std::vector<std::string> first_kernel_variants;
  // LLM usage each reply reports (a quarter of the tokens as output), like an LLM brain
  // and narrator would; `refused_usage` rides on the RESOURCE_EXHAUSTED status.
  int64_t tokens_per_generate = 0;
  double cost_per_generate = 0;
  int64_t tokens_per_diagnose = 0;
  v1::LlmUsage refused_usage;

  // Assignments of these patterns come back as the optimization manager reports a
  // duplicate kernel (no kernel, duplicate set).
  std::set<std::string> duplicate_patterns;
  // Assignments of these patterns come back as the optimization manager reports the
  // brain's LLM endpoint failing (no kernel, a transient endpoint_failure).
  std::set<std::string> endpoint_failure_patterns;
  // While above 0, every assignment of a round's Generate comes back so (counted down per
  // call), with this Retry-After.
  std::atomic<int> endpoint_down_calls{0};
  double endpoint_retry_after_seconds = 0;
  // When set, answers Generate in place of the script (after the request is recorded):
  // e.g. a real optimization manager over a loopback LLM server.
  std::function<absl::StatusOr<v1::GenerateResponse>(const v1::GenerateRequest&)> generate_with;

  // When set, Diagnose, Prescribe, PlanRound and Reflect answer as LLM agents would: with
  // an exchange whose prompt holds what the request carried (the profile's efficiency;
  // the kernel's source; the best beam kernel's median; the memory's size), and the
  // plan's and the reflexion's a fallback.
  bool agent_exchanges = false;
  int64_t tokens_per_prescribe = 0;  // the usage Prescribe, PlanRound and Reflect report
  int64_t tokens_per_plan = 0;
  int64_t tokens_per_reflect = 0;
  std::atomic<int> prescribe_calls{0};
  std::atomic<int> plan_calls{0};
  std::atomic<int> reflect_calls{0};
  // When set, round kernels come from an LLM brain (origin "brain:llm"), and a repair
  // turn answers with the failed kernel's "crash" replaced by "fixed" unless
  // `repairs_fail` (then the repair crashes again).
  bool llm_origin = false;
  bool repairs_fail = false;

  // The LLM budget each request carried: -1 when absent.
  absl::Mutex mu;
  std::vector<int64_t> generate_tokens_left ABSL_GUARDED_BY(mu);
  std::vector<double> generate_cost_left ABSL_GUARDED_BY(mu);
  std::vector<int64_t> diagnose_tokens_left ABSL_GUARDED_BY(mu);
  std::vector<int64_t> prescribe_tokens_left ABSL_GUARDED_BY(mu);
  std::vector<int64_t> reflect_tokens_left ABSL_GUARDED_BY(mu);
  std::vector<int64_t> plan_tokens_left ABSL_GUARDED_BY(mu);
  // The Diagnose requests without a profile (no kernels).
  std::vector<v1::DiagnoseRequest> unprofiled_diagnoses ABSL_GUARDED_BY(mu);
  // The job's LLM agents (llm_agents, comma-joined) each Diagnose, Prescribe, PlanRound
  // and Reflect request carried, by the RPC's name.
  std::map<std::string, std::set<std::string>> llm_agents_carried ABSL_GUARDED_BY(mu);
  std::vector<v1::GenerateRequest> first_kernel_requests ABSL_GUARDED_BY(mu);
  std::vector<v1::GenerateRequest> repair_requests ABSL_GUARDED_BY(mu);
  // Per parent of each round's Generate: whether its judge's report came along.
  std::vector<bool> parents_with_report ABSL_GUARDED_BY(mu);

  static v1::LlmUsage Usage(int64_t tokens, double cost) {
    v1::LlmUsage u;
    if (tokens == 0 && cost == 0) return u;
    u.set_calls(1);
    u.set_input_tokens(tokens - tokens / 4);
    u.set_output_tokens(tokens / 4);
    u.set_cost_usd(cost);
    return u;
  }

  absl::StatusOr<v1::DiagnoseResponse> Diagnose(const v1::DiagnoseRequest& r, CancelToken*) override {
    ++diagnose_calls;
    {
      absl::MutexLock lock(&mu);
      diagnose_tokens_left.push_back(r.has_llm_tokens_left() ? r.llm_tokens_left() : -1);
      llm_agents_carried["Diagnose"].insert(absl::StrJoin(r.llm_agents(), ","));
    }
    v1::DiagnoseResponse out;
    *out.mutable_llm_usage() = Usage(tokens_per_diagnose, 0);
    if (r.metrics().kernels_size() == 0) {
      // As the judge answers without counters: no category, a summary saying why.
      absl::MutexLock lock(&mu);
      unprofiled_diagnoses.push_back(r);
      out.mutable_report()->set_summary(absl::StrCat("no hardware counters (", r.no_profile_reason(), ")"));
      return out;
    }
    out.mutable_report()->set_primary(v1::BOTTLENECK_MEMORY_BOUND);
    out.mutable_report()->set_efficiency_pct(r.metrics().roofline_efficiency_pct());
    if (agent_exchanges) {
      v1::AgentExchange* e = out.mutable_exchange();
      e->set_agent("narrate");
      e->set_brain("llm:test");
      e->set_prompt(absl::StrCat("narrate: efficiency ", r.metrics().roofline_efficiency_pct()));
      e->set_reply("{\"narrative\": \"memory-bound\"}");
    }
    return out;
  }
  absl::StatusOr<v1::PrescribeResponse> Prescribe(const v1::PrescribeRequest& r, CancelToken*) override {
    if (absl::Status s = TransportFailure(); !s.ok()) return s;
    v1::PrescribeResponse out;
    ++prescribe_calls;
    *out.mutable_llm_usage() = Usage(tokens_per_prescribe, 0);
    {
      absl::MutexLock lock(&mu);
      prescribe_tokens_left.push_back(r.has_llm_tokens_left() ? r.llm_tokens_left() : -1);
      llm_agents_carried["Prescribe"].insert(absl::StrJoin(r.llm_agents(), ","));
    }
    if (agent_exchanges) {
      out.mutable_exchange()->set_agent("prescribe");
      out.mutable_exchange()->set_prompt(absl::StrCat("rank for:\n", r.kernel_source()));
      out.mutable_exchange()->set_reply("{\"prescriptions\": []}");
    }
    for (const auto& f : fixes) {
      auto* p = out.add_prescriptions();
      p->set_pattern_id(f);
      p->set_expected_speedup(1.2);
    }
    return out;
  }
  absl::StatusOr<v1::PlanRoundResponse> PlanRound(const v1::PlanRoundRequest& r, CancelToken*) override {
    if (absl::Status s = TransportFailure(); !s.ok()) return s;
    auto plan = kagent::PlanRound(r);  // the real planner
    if (!plan.ok()) return plan.status();
    v1::PlanRoundResponse out;
    *out.mutable_plan() = *plan;
    ++plan_calls;
    *out.mutable_llm_usage() = Usage(tokens_per_plan, 0);
    {
      absl::MutexLock lock(&mu);
      plan_tokens_left.push_back(r.has_llm_tokens_left() ? r.llm_tokens_left() : -1);
      llm_agents_carried["PlanRound"].insert(absl::StrJoin(r.llm_agents(), ","));
    }
    if (agent_exchanges) {
      v1::AgentExchange* e = out.mutable_exchange();
      e->set_agent("plan");
      e->set_brain("llm:test");
      e->set_prompt(absl::StrCat("plan round ", r.round(), ": ", r.beam(0).kernel_id(), " at ",
                                 r.beam(0).measurement().candidate().median_ms(), " ms"));
      e->set_reply("{\"plan\": []}");
      e->set_fallback("no entry of the plan is usable");
    }
    return out;
  }
  absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& r, CancelToken*) override {
    v1::ReflectResponse out;
    ++reflect_calls;
    *out.mutable_llm_usage() = Usage(tokens_per_reflect, 0);
    {
      absl::MutexLock lock(&mu);
      reflect_tokens_left.push_back(r.has_llm_tokens_left() ? r.llm_tokens_left() : -1);
      llm_agents_carried["Reflect"].insert(absl::StrJoin(r.llm_agents(), ","));
    }
    auto* x = out.mutable_reflexion();
    bool ok = r.attempt().measurement().verdict() == v1::VERDICT_CORRECT;
    double a = r.attempt().measurement().candidate().median_ms();
    double p = r.parent().measurement().candidate().median_ms();
    x->set_fix_effective(ok && a < p);
    x->set_actual_speedup(ok && a > 0 ? p / a : 0);
    x->set_lesson(ok ? "measured" : "failed");
    if (!x->fix_effective()) x->add_avoid_patterns(r.attempt().prescription().pattern_id());
    if (agent_exchanges) {
      v1::AgentExchange* e = out.mutable_exchange();
      e->set_agent("reflect");
      e->set_brain("llm:test");
      e->set_prompt(absl::StrCat("reflect on ", r.attempt().id(), " with ", r.memory_size(),
                                 " earlier reflexion(s)"));
      e->set_reply("{\"fix_worked\": true}");
      e->set_fallback("the reply was refused");
    }
    return out;
  }
  absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& r, CancelToken*) override {
    {
      absl::MutexLock lock(&mu);
      generate_tokens_left.push_back(r.has_llm_tokens_left() ? r.llm_tokens_left() : -1);
      generate_cost_left.push_back(r.has_llm_cost_usd_left() ? r.llm_cost_usd_left() : -1);
    }
    if (generate_with) {
      ++generate_calls;
      return generate_with(r);
    }
    if (absl::Status s = TransportFailure(); !s.ok()) return s;
    if (++generate_calls > budget_after_calls) {
      absl::Status spent =
          absl::ResourceExhaustedError("job job-1 spent its LLM token budget (1000 tokens)");
      llm::AttachLlmUsage(refused_usage, &spent);
      return spent;
    }
    // As the optimization manager does: a spent budget refuses the first LLM call.
    if ((r.has_llm_tokens_left() && r.llm_tokens_left() <= 0) ||
        (r.has_llm_cost_usd_left() && r.llm_cost_usd_left() <= 0)) {
      return absl::ResourceExhaustedError("nothing left of the job's LLM budget");
    }
    v1::GenerateResponse out;
    *out.mutable_llm_usage() = Usage(tokens_per_generate, cost_per_generate);
    const bool endpoint_down = r.plan().assignments_size() > 0 && endpoint_down_calls-- > 0;
    if (r.plan().assignments_size() == 0 && r.parents().empty()) {
      {
        absl::MutexLock lock(&mu);
        first_kernel_requests.push_back(r);
      }
      auto* g = out.add_kernels();
      if (first_kernel.empty()) {
        g->set_error("no template family for aten::weird");
        return out;
      }
      g->mutable_kernel()->set_source(first_kernel);
      g->mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
      g->mutable_kernel()->set_origin("template:fake");
      for (const auto& v : first_kernel_variants) {
        auto* k = g->add_variants();
        k->set_source(v);
        k->set_language(v1::KERNEL_LANGUAGE_TRITON);
      }
      return out;
    }
    {
      absl::MutexLock lock(&mu);
      for (const auto& [id, kernel] : r.parents()) {
        parents_with_report.push_back(r.parent_reports().count(id) > 0);
      }
      if (!r.repairs().empty()) repair_requests.push_back(r);
    }
    if (!r.repairs().empty()) {
      for (const auto& a : r.plan().assignments()) {
        auto* g = out.add_kernels();
        *g->mutable_assignment() = a;
        std::string source = r.parents().at(a.parent_kernel_id()).source();
        g->mutable_kernel()->set_source(
            repairs_fail ? absl::StrCat(source, "# still crash\n")
                         : absl::StrReplaceAll(source, {{"crash", "fixed"}}));
        g->mutable_kernel()->set_origin("brain:llm");
        g->set_prompt(absl::StrCat("repair ", r.repairs().at(a.parent_kernel_id()).attempt()));
      }
      return out;
    }
    for (const auto& a : r.plan().assignments()) {
      auto* g = out.add_kernels();
      *g->mutable_assignment() = a;
      if (duplicate_patterns.count(a.prescription().pattern_id())) {
        g->set_duplicate(true);
        g->set_error("duplicate: the fix left the parent kernel unchanged");
        continue;
      }
      if (endpoint_down || endpoint_failure_patterns.count(a.prescription().pattern_id())) {
        g->set_error("generation failed: UNAVAILABLE: llm brain (rewrite_kernel): overloaded");
        g->mutable_endpoint_failure()->set_message(
            "UNAVAILABLE: llm brain (rewrite_kernel): overloaded (HTTP 503)");
        g->mutable_endpoint_failure()->set_retry_after_seconds(endpoint_retry_after_seconds);
        continue;
      }
      g->mutable_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
      g->mutable_kernel()->set_source(absl::StrCat(
          r.parents().at(a.parent_kernel_id()).source(),
          fixes_change_code ? absl::StrCat("F_", generated++, " = 1\n")
                            : "",
          "# fix:", a.prescription().pattern_id(), "\n"));
      if (llm_origin) g->mutable_kernel()->set_origin("brain:llm");
      if (variants_for) {
        for (const auto& v : variants_for(g->kernel().source())) {
          auto* k = g->add_variants();
          k->set_source(v);
          k->set_language(v1::KERNEL_LANGUAGE_TRITON);
          k->set_origin("template:fake variant");
        }
      }
    }
    return out;
  }
};

// A one-op signature, as the harness records for the reference.
v1::OpSignature ReluSignature() {
  v1::OpSignature sig;
  auto* op = sig.add_ops();
  op->set_op("aten::relu");
  auto* in = op->add_inputs();
  in->add_shape(1024);
  in->set_dtype("float32");
  sig.set_min_bytes(8192);
  return sig;
}

struct Loop {
  explicit Loop(std::string db_path = ":memory:", absl::Duration gpu_delay = absl::Milliseconds(2),
                JobDefaults defaults = JobDefaults()) {
    storage = *SqliteStorage::Open({.path = db_path});
    gpu_a.measure = gpu_b.measure = Time;
    gpu_a.delay = gpu_b.delay = gpu_delay;
    factory.gpus = {{"a:1", &gpu_a}, {"b:1", &gpu_b}};
    SchedulerOptions so;
    so.no_worker_timeout = absl::Seconds(2);
    scheduler = std::make_unique<Scheduler>(so, storage.get(), &factory, nullptr);
    REQUIRE(scheduler->RegisterWorker("wa", "a:1", {}, true).ok());
    REQUIRE(scheduler->RegisterWorker("wb", "b:1", {}, true).ok());
    this->defaults = defaults;
    manager = std::make_unique<JobManager>(defaults, storage.get(), scheduler.get(), &services,
                                           &registry);
  }
  // A new JobManager on the same storage, as after a restart (the old one shut down).
  void RestartManager() {
    manager.reset();
    manager = std::make_unique<JobManager>(defaults, storage.get(), scheduler.get(), &services,
                                           &registry);
  }
  // The value of counter `name` with label `key`=`value` in the managers' registry.
  double Counter(const std::string& name, const std::string& key, const std::string& value) {
    for (const prometheus::MetricFamily& f : registry.Collect()) {
      if (f.name != name) continue;
      for (const prometheus::ClientMetric& m : f.metric) {
        for (const prometheus::ClientMetric::Label& l : m.label) {
          if (l.name == key && l.value == value) return m.counter.value;
        }
      }
    }
    return -1;
  }
  v1::Job Submit(int rounds, const std::string& start = kStart, int plateau = 2,
                 const v1::Budget& budget = v1::Budget(),
                 const std::vector<std::string>& llm_agents = {}) {
    v1::Job j;
    j.set_id(absl::StrCat("job-", ++n));
    j.set_tenant("t");
    j.mutable_problem()->set_name("p");
    j.mutable_problem()->set_source(kProblem);
    if (!start.empty()) {
      j.mutable_start_kernel()->set_source(start);
      j.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
    }
    *j.mutable_config()->mutable_budget() = budget;
    j.mutable_config()->mutable_budget()->set_max_rounds(rounds);
    j.mutable_config()->set_plateau_rounds(plateau);
    for (const std::string& a : llm_agents) j.mutable_config()->add_llm_agents(a);
    auto s = manager->Submit(j, "");
    REQUIRE(s.ok());
    return *s;
  }
  // Every measure request both fake GPUs received.
  std::vector<v1::MeasureRequest> MeasureRequests() {
    std::vector<v1::MeasureRequest> out;
    for (FakeGpu* g : {&gpu_a, &gpu_b}) {
      absl::MutexLock lock(&g->mu);
      out.insert(out.end(), g->measure_requests.begin(), g->measure_requests.end());
    }
    return out;
  }
  v1::Job WaitDone(const std::string& id, absl::Duration limit = absl::Seconds(60)) {
    absl::Time end = absl::Now() + limit;
    while (absl::Now() < end) {
      auto j = storage->GetJob(id);
      REQUIRE(j.ok());
      if (!IsUnfinishedJobState(j->job.state())) {
        // Let the job thread finish its last writes.
        for (int i = 0; i < 100 && manager->running_jobs() > 0; ++i) absl::SleepFor(absl::Milliseconds(10));
        return storage->GetJob(id)->job;
      }
      absl::SleepFor(absl::Milliseconds(10));
    }
    FAIL("job " << id << " did not finish");
    return {};
  }
  std::vector<v1::JobEvent> Events(const std::string& id) { return *storage->ListEvents(id, 0, 10000); }

  int n = 0;
  JobDefaults defaults;
  std::unique_ptr<SqliteStorage> storage;
  FakeGpu gpu_a, gpu_b;
  FakeWorkerFactory factory;
  ScriptedServices services;
  prometheus::Registry registry;  // the managers' metrics
  std::unique_ptr<Scheduler> scheduler;
  std::unique_ptr<JobManager> manager;
};

// The brain's variants for each round kernel K: one faster (a good fix more), one
// slower, one incorrect; each differs from K in code, not only in comments.
std::vector<std::string> ThreeVariants(const std::string& k) {
  return {absl::StrCat(k, "V = 1\n# fix:good-v\n"), absl::StrCat(k, "V = 2\n# fix:bad-v\n"),
          absl::StrCat(k, "V = 3  # WRONG\n")};
}

std::vector<v1::ScreenRequest> ScreenRequests(Loop& loop) {
  std::vector<v1::ScreenRequest> out;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    out.insert(out.end(), g->screen_requests.begin(), g->screen_requests.end());
  }
  return out;
}

// How many times each worker was asked to release `job` (after waiting up to 5 s for the
// scheduler's release thread to send the calls).
std::vector<int> Releases(Loop& loop, const std::string& job, int expect) {
  std::vector<int> out;
  for (int i = 0; i < 500; ++i) {
    out.clear();
    for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
      absl::MutexLock lock(&g->mu);
      out.push_back(static_cast<int>(std::count(g->released_jobs.begin(), g->released_jobs.end(), job)));
    }
    if (out[0] >= expect && out[1] >= expect) break;
    absl::SleepFor(absl::Milliseconds(10));
  }
  return out;
}

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

TEST_CASE("loop: the judge's, analyzer's and orchestrator's LLM exchanges are stored as artifacts") {
  Loop loop;
  loop.services.agent_exchanges = true;
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const std::string c0 = job.id() + "-c0";
  auto prescribe = loop.storage->GetArtifact(job.id(), absl::StrCat("round-1/prescribe/", c0, "/prompt.txt"));
  REQUIRE(prescribe.ok());
  CHECK(prescribe->content() == absl::StrCat("rank for:\n", kStart));  // the kernel's source went along
  CHECK(prescribe->content_type() == "text/plain");
  CHECK(loop.storage->GetArtifact(job.id(), absl::StrCat("round-1/prescribe/", c0, "/reply.txt")).ok());
  // The narrate agent's, beside the judge's report of the kernel it diagnosed.
  auto narrate = loop.storage->GetArtifact(job.id(), absl::StrCat("round-0/", c0, "/narrate-prompt.txt"));
  REQUIRE(narrate.ok());
  CHECK_THAT(narrate->content(), Catch::StartsWith("narrate: efficiency "));
  CHECK(loop.storage->GetArtifact(job.id(), absl::StrCat("round-0/", c0, "/narrate-reply.txt")).ok());
  CHECK(loop.storage->GetArtifact(job.id(), absl::StrCat("round-0/", c0, "/report.json")).ok());
  auto refl = *loop.storage->ListReflexions(job.id());
  REQUIRE(refl.size() >= 2);
  int with_memory = 0;
  for (const v1::Reflexion& r : refl) {
    auto prompt = loop.storage->GetArtifact(
        job.id(), absl::StrCat("round-", r.round(), "/", r.candidate_id(), "/reflect-prompt.txt"));
    REQUIRE(prompt.ok());
    with_memory += absl::StrContains(prompt->content(), " with 0 ") ? 0 : 1;
    CHECK(loop.storage->GetArtifact(job.id(), absl::StrCat("round-", r.round(), "/", r.candidate_id(),
                                                           "/reflect-reply.txt")).ok());
  }
  CHECK(with_memory == static_cast<int>(refl.size()) - 1);  // each later one saw the earlier ones
  int fallbacks = 0;
  for (const v1::JobEvent& e : loop.Events(job.id())) {
    fallbacks += absl::StrContains(e.message(), "the reflect agent (llm:test) fell back to the heuristic "
                                                "for the reflexion on ") ? 1 : 0;
  }
  CHECK(fallbacks == static_cast<int>(refl.size()));
  // The plan agent's exchange: the coordinator sent the beam kernel's median along.
  auto plan_prompt = loop.storage->GetArtifact(job.id(), "round-1/plan-prompt.txt");
  REQUIRE(plan_prompt.ok());
  CHECK_THAT(plan_prompt->content(), Catch::StartsWith(absl::StrCat("plan round 1: ", c0, " at ")));
  CHECK_THAT(plan_prompt->content(), !Catch::Contains(" at 0 ms"));
  CHECK(loop.storage->GetArtifact(job.id(), "round-1/plan-reply.txt").ok());
  int plan_fallbacks = 0;
  for (const v1::JobEvent& e : loop.Events(job.id())) {
    plan_fallbacks += absl::StrContains(e.message(), "the plan agent (llm:test) fell back to the heuristic "
                                                     "for the plan of round 1: no entry") ? 1 : 0;
  }
  CHECK(plan_fallbacks == 1);
}

TEST_CASE("loop: the prescribe, plan and reflect agents' LLM usage is charged and bounded by the "
          "job's budget") {
  Loop loop;
  loop.services.tokens_per_prescribe = 30;
  loop.services.tokens_per_plan = 11;
  loop.services.tokens_per_reflect = 7;
  v1::Budget budget;
  budget.set_max_llm_tokens(100000);
  v1::Job job = loop.WaitDone(loop.Submit(2, kStart, 2, budget).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  const int prescribes = loop.services.prescribe_calls, reflects = loop.services.reflect_calls;
  const int plans = loop.services.plan_calls;
  REQUIRE(prescribes >= 2);
  REQUIRE(plans >= 2);
  REQUIRE(reflects >= 2);
  CHECK(job.llm_tokens_used() == prescribes * 30 + plans * 11 + reflects * 7);
  // Each request carried what was left, less what the earlier ones had used.
  absl::MutexLock lock(&loop.services.mu);
  REQUIRE(loop.services.prescribe_tokens_left.size() == static_cast<size_t>(prescribes));
  CHECK(loop.services.prescribe_tokens_left.front() == 100000);
  CHECK(loop.services.prescribe_tokens_left.back() < 100000);
  // Round 1's plan comes after round 1's prescription, its reflexions after the plan.
  REQUIRE(loop.services.plan_tokens_left.size() == static_cast<size_t>(plans));
  CHECK(loop.services.plan_tokens_left.front() == 100000 - 30);
  CHECK(loop.services.plan_tokens_left.back() < loop.services.plan_tokens_left.front());
  REQUIRE(loop.services.reflect_tokens_left.size() == static_cast<size_t>(reflects));
  CHECK(loop.services.reflect_tokens_left.front() == 100000 - 30 - 11);
  CHECK(loop.services.reflect_tokens_left.back() < loop.services.reflect_tokens_left.front());
  // A job that chose no agents sends none: each service does as it is configured.
  for (const char* rpc : {"Prescribe", "PlanRound", "Reflect"}) {
    INFO(rpc);
    CHECK(loop.services.llm_agents_carried[rpc] == std::set<std::string>{""});
  }
}

TEST_CASE("loop: the job's choice of LLM agents goes with each request to the agents' services") {
  Loop loop;
  v1::Job job = loop.WaitDone(loop.Submit(1, kStart, 2, v1::Budget(), {"reflect", "plan"}).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(std::vector<std::string>(job.config().llm_agents().begin(), job.config().llm_agents().end()) ==
        std::vector<std::string>{"reflect", "plan"});  // stored with the job
  absl::MutexLock lock(&loop.services.mu);
  for (const char* rpc : {"Diagnose", "Prescribe", "PlanRound", "Reflect"}) {
    INFO(rpc);
    CHECK(loop.services.llm_agents_carried[rpc] == std::set<std::string>{"reflect,plan"});
  }
}

TEST_CASE("loop: a candidate an LLM wrote that fails the gate gets a repair turn in its round") {
  JobDefaults defaults;
  SECTION("one repair, which passes") {}
  SECTION("repairs that keep failing stop at llm_repairs") { defaults.llm_repairs = 2; }
  SECTION("no repairs") { defaults.llm_repairs = 0; }
  Loop loop(":memory:", absl::Milliseconds(2), defaults);
  loop.services.llm_origin = true;
  loop.services.repairs_fail = defaults.llm_repairs == 2;
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  auto cands = *loop.storage->ListCandidates(job.id(), 1);
  std::map<std::string, v1::Candidate> by_id;
  const v1::Candidate* crashed = nullptr;
  for (const auto& c : cands) by_id[c.id()] = c;
  for (const auto& [id, c] : by_id) {
    if (c.prescription().pattern_id() == "crash-1" && !absl::StrContains(id, "-fix")) crashed = &c;
  }
  REQUIRE(crashed != nullptr);
  CHECK(crashed->measurement().verdict() == v1::VERDICT_CRASH);
  const std::string fix1 = crashed->id() + "-fix1", fix2 = fix1 + "-fix2";
  std::vector<v1::GenerateRequest> repairs;
  {
    absl::MutexLock lock(&loop.services.mu);
    repairs = loop.services.repair_requests;
  }
  auto refl = *loop.storage->ListReflexions(job.id());
  if (defaults.llm_repairs == 0) {
    CHECK(repairs.empty());
    CHECK(by_id.count(fix1) == 0);
    return;
  }
  // The first repair: the crashed kernel sent back with its verdict, as a new candidate
  // of the same parent and fix, measured, reflected on, its record kept.
  REQUIRE(by_id.count(fix1) == 1);
  const v1::Candidate& r1 = by_id[fix1];
  CHECK(r1.parent_id() == crashed->parent_id());
  CHECK(r1.prescription().pattern_id() == "crash-1");
  CHECK(r1.round() == 1);
  REQUIRE(repairs.size() == static_cast<size_t>(defaults.llm_repairs));
  REQUIRE(repairs[0].repairs().count(crashed->id()) == 1);
  CHECK(repairs[0].repairs().at(crashed->id()).verdict() == "VERDICT_CRASH");
  CHECK(repairs[0].repairs().at(crashed->id()).attempt() == 1);
  CHECK(repairs[0].parents().at(crashed->id()).source() == crashed->kernel().source());
  CHECK(loop.storage->GetArtifact(job.id(), absl::StrCat("round-1/", fix1, "/prompt.txt"))->content() ==
        "repair 1");
  CHECK(std::count_if(refl.begin(), refl.end(), [&](const v1::Reflexion& x) {
          return x.candidate_id() == fix1;
        }) == 1);
  if (defaults.llm_repairs == 1) {
    CHECK(r1.measurement().verdict() == v1::VERDICT_CORRECT);
    CHECK(by_id.count(fix2) == 0);
  } else {
    CHECK(r1.measurement().verdict() == v1::VERDICT_CRASH);
    REQUIRE(by_id.count(fix2) == 1);
    CHECK(by_id[fix2].measurement().verdict() == v1::VERDICT_CRASH);
    CHECK(repairs[1].repairs().at(fix1).attempt() == 2);
    CHECK(by_id.count(fix2 + "-fix3") == 0);
  }
}

TEST_CASE("loop: a duplicate kernel is its own verdict, never measured") {
  Loop loop;
  loop.services.duplicate_patterns = {loop.services.fixes.front()};
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  int duplicates = 0;
  auto cands = loop.storage->ListCandidates(job.id(), std::nullopt);
  REQUIRE(cands.ok());
  for (const auto& c : *cands) {
    if (c.prescription().pattern_id() != loop.services.fixes.front()) continue;
    ++duplicates;
    CHECK(c.measurement().verdict() == v1::VERDICT_DUPLICATE);
    CHECK_THAT(c.measurement().correctness().reason(), Catch::Contains("duplicate: the fix left"));
  }
  CHECK(duplicates >= 1);
  for (const auto& m : loop.MeasureRequests()) {
    CHECK_THAT(m.kernel().source(), !Catch::Contains("# fix:" + loop.services.fixes.front()));
  }
}

// No reflexion of `job` puts a pattern on the avoid-list.
void CheckNoAvoidList(Loop& loop, const std::string& job) {
  auto reflexions = loop.storage->ListReflexions(job);
  REQUIRE(reflexions.ok());
  for (const auto& r : *reflexions) {
    INFO(r.candidate_id() << ": " << r.lesson());
    CHECK(r.avoid_patterns().empty());
  }
}

// Routes the loop's Generate through `manager` (the real optimization manager serving
// the LLM brain), which must outlive the loop's jobs.
void GenerateWith(Loop& loop, OptimizationManagerServiceImpl& manager) {
  loop.services.generate_with =
      [&manager](const v1::GenerateRequest& r) -> absl::StatusOr<v1::GenerateResponse> {
    v1::GenerateRequest llm = r;
    llm.set_brain("llm");  // the brain this manager serves
    v1::GenerateResponse out;
    KAGENT_RETURN_IF_ERROR(manager.DoGenerate(llm, &out));
    return out;
  };
}

TEST_CASE("loop: a wrong model (vLLM's 404) fails the job as the LLM endpoint's fault, "
          "burning no pattern") {
  // The real optimization manager and LLM brain against a loopback vLLM that does not
  // serve the configured model.
  llm_testing::Rig rig = llm_testing::MakeRig(llm::testing::WireFormat::kOpenAi);
  rig.server->SetDefault(llm_testing::VllmModelNotFound("test-model"));
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  OptimizationManagerServiceImpl manager(mo, rig.brain.get(), nullptr, nullptr);
  Loop loop;
  GenerateWith(loop, manager);
  v1::Job job = loop.WaitDone(loop.Submit(3).id());
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  INFO(job.error());
  CHECK_THAT(job.error(), Catch::StartsWith("the LLM endpoint cannot serve this job"));
  CHECK_THAT(job.error(), Catch::Contains("The model `test-model` does not exist."));
  CHECK_THAT(job.error(), Catch::Contains("no kernel was at fault"));
  CHECK(loop.services.generate_calls == 1);  // not asked again: a wrong model stays wrong
  CHECK(rig.server->request_count() >= 1);
  CheckNoAvoidList(loop, job.id());
  auto reflexions = loop.storage->ListReflexions(job.id());
  REQUIRE(reflexions.ok());
  CHECK(reflexions->empty());
  // Only the starting kernel was recorded and measured: no candidate blames a fix.
  auto cands = loop.storage->ListCandidates(job.id(), std::nullopt);
  REQUIRE(cands.ok());
  REQUIRE(cands->size() == 1);
  CHECK(cands->front().round() == 0);
  CHECK(loop.MeasureRequests().size() == 1);
}

TEST_CASE("loop: the LLM brain's first kernel keeps its prompt and reply as artifacts") {
  // The real optimization manager and LLM brain over a loopback vLLM; no starting kernel,
  // so the brain writes the first one.
  llm_testing::Rig rig = llm_testing::MakeRig(llm::testing::WireFormat::kOpenAi);
  const std::string answer = llm_testing::Answer(llm_testing::Kernel("first"));
  rig.server->SetDefault(llm_testing::Reply(llm::testing::WireFormat::kOpenAi, answer));
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  OptimizationManagerServiceImpl manager(mo, rig.brain.get(), nullptr, nullptr);
  Loop loop;
  GenerateWith(loop, manager);
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  INFO(job.error());
  const std::string dir = absl::StrCat("round-0/", job.id(), "-c0/");
  auto prompt = loop.storage->GetArtifact(job.id(), dir + "prompt.txt");
  REQUIRE(prompt.ok());
  CHECK_THAT(prompt->content(), Catch::Contains("Write a first, correct kernel"));
  CHECK(prompt->content_type() == "text/plain");
  auto reply = loop.storage->GetArtifact(job.id(), dir + "reply.txt");
  REQUIRE(reply.ok());
  CHECK(reply->content() == answer);
  auto kernel = loop.storage->GetArtifact(job.id(), dir + "kernel.py");
  REQUIRE(kernel.ok());
  CHECK(kernel->content() == llm_testing::Kernel("first"));
  // Round 1's rewrite was told the starting kernel's measured median and the baselines'.
  auto cands = loop.storage->ListCandidates(job.id(), 1);
  REQUIRE(cands.ok());
  REQUIRE(!cands->empty());
  auto start = loop.storage->GetCandidate(absl::StrCat(job.id(), "-c0"));
  REQUIRE(start.ok());
  auto round1 = loop.storage->GetArtifact(
      job.id(), absl::StrCat("round-1/", cands->front().id(), "/prompt.txt"));
  REQUIRE(round1.ok());
  CHECK_THAT(round1->content(),
             Catch::Contains(absl::StrCat("current kernel: ",
                                          llm_engine::FormatNumber(
                                              start->measurement().candidate().median_ms()),
                                          " ms median")));
  CHECK_THAT(round1->content(), Catch::Contains("eager PyTorch: "));
  // And its profile's roofline figures.
  REQUIRE(start->has_metrics());
  CHECK_THAT(round1->content(),
             Catch::Contains(absl::StrFormat("memory %.1f%% of peak",
                                             start->metrics().memory_sol_pct())));
}

TEST_CASE("loop: a job that failed on unusable replies keeps them as artifacts") {
  llm_testing::Rig rig = llm_testing::MakeRig(llm::testing::WireFormat::kOpenAi);
  rig.server->SetDefault(
      llm_testing::Reply(llm::testing::WireFormat::kOpenAi, "I would rather not."));
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  OptimizationManagerServiceImpl manager(mo, rig.brain.get(), nullptr, nullptr);
  Loop loop;
  GenerateWith(loop, manager);
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  CHECK_THAT(job.error(), Catch::Contains("could not write a first kernel"));
  const std::string dir = absl::StrCat("round-0/", job.id(), "-c0/");
  auto reply = loop.storage->GetArtifact(job.id(), dir + "reply.txt");
  REQUIRE(reply.ok());
  CHECK(reply->content() == "[reply 1]\nI would rather not.\n\n[reply 2]\nI would rather not.");
  auto prompt = loop.storage->GetArtifact(job.id(), dir + "prompt.txt");
  REQUIRE(prompt.ok());
  CHECK_THAT(prompt->content(), Catch::Contains("Write a first, correct kernel"));
}

TEST_CASE("loop: an LLM endpoint down for a while pauses generation, then the job goes on") {
  JobDefaults d;
  d.llm_retry_backoff_seconds = 0.02;
  Loop loop(":memory:", absl::Milliseconds(2), d);
  loop.services.endpoint_down_calls = 2;
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  CHECK(loop.services.generate_calls == 3);
  int paused = 0;
  for (const auto& e : loop.Events(job.id())) {
    if (absl::StrContains(e.message(), "generation paused")) ++paused;
  }
  CHECK(paused == 2);
  // The failed replies were not kept: every candidate is a measured kernel.
  auto cands = loop.storage->ListCandidates(job.id(), std::nullopt);
  REQUIRE(cands.ok());
  for (const auto& c : *cands) CHECK(c.measurement().verdict() != v1::VERDICT_GENERATION_FAILED);
}

TEST_CASE("loop: an LLM endpoint that stays down fails the job saying so") {
  JobDefaults d;
  d.llm_retry_backoff_seconds = 0.02;
  d.llm_outage_seconds = 0.2;
  Loop loop(":memory:", absl::Milliseconds(2), d);
  loop.services.endpoint_down_calls = 1 << 20;
  v1::Job job = loop.WaitDone(loop.Submit(2).id());
  REQUIRE(job.state() == v1::JOB_STATE_FAILED);
  INFO(job.error());
  CHECK_THAT(job.error(), Catch::StartsWith("the LLM endpoint stayed unavailable for"));
  CHECK_THAT(job.error(), Catch::Contains("overloaded (HTTP 503)"));
  CHECK(loop.services.generate_calls >= 2);  // asked again before giving up
  CheckNoAvoidList(loop, job.id());
}

TEST_CASE("loop: a long Retry-After is waited for at the job level, within the wall budget") {
  JobDefaults d;
  d.llm_retry_backoff_seconds = 0.01;
  d.llm_outage_seconds = 0.05;  // shorter than the Retry-After: it is waited for anyway
  SECTION("within the budget: waited for, then the job goes on") {
    Loop loop(":memory:", absl::Milliseconds(2), d);
    loop.services.endpoint_down_calls = 1;
    loop.services.endpoint_retry_after_seconds = 0.3;
    const absl::Time start = absl::Now();
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    REQUIRE(job.state() == v1::JOB_STATE_DONE);
    CHECK(absl::Now() - start >= absl::Milliseconds(300));
    bool said = false;
    for (const auto& e : loop.Events(job.id())) {
      said = said || absl::StrContains(e.message(), "(the provider's Retry-After)");
    }
    CHECK(said);
  }
  SECTION("past the wall budget: the job fails at once, saying why") {
    Loop loop(":memory:", absl::Milliseconds(2), d);
    loop.services.endpoint_down_calls = 1;
    loop.services.endpoint_retry_after_seconds = 86400;
    v1::Job job = loop.WaitDone(loop.Submit(1).id());
    REQUIRE(job.state() == v1::JOB_STATE_FAILED);
    INFO(job.error());
    CHECK_THAT(job.error(), Catch::Contains("the LLM endpoint is unavailable and waiting 86400 s"));
    CHECK_THAT(job.error(), Catch::Contains("wall-time budget"));
  }
}

TEST_CASE("loop: an assignment the LLM endpoint failed is GENERATION_FAILED, not a verdict "
          "on its pattern") {
  Loop loop;
  const std::string failed = loop.services.fixes.front();
  loop.services.endpoint_failure_patterns = {failed};
  v1::Job job = loop.WaitDone(loop.Submit(1).id());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  auto cands = loop.storage->ListCandidates(job.id(), std::nullopt);
  REQUIRE(cands.ok());
  std::set<std::string> generation_failed;
  for (const auto& c : *cands) {
    if (c.prescription().pattern_id() != failed) continue;
    CHECK(c.measurement().verdict() == v1::VERDICT_GENERATION_FAILED);
    CHECK_THAT(c.measurement().correctness().reason(),
               Catch::StartsWith("no candidate: the LLM endpoint failed: UNAVAILABLE"));
    generation_failed.insert(c.id());
  }
  CHECK(generation_failed.size() >= 1);
  // No reflexion for them (so nothing on the avoid-list); the other candidates have theirs.
  auto reflexions = loop.storage->ListReflexions(job.id());
  REQUIRE(reflexions.ok());
  CHECK_FALSE(reflexions->empty());
  for (const auto& r : *reflexions) {
    CHECK(generation_failed.count(r.candidate_id()) == 0);
    for (const auto& p : r.avoid_patterns()) CHECK(p != failed);
  }
  for (const auto& m : loop.MeasureRequests()) {
    CHECK_THAT(m.kernel().source(), !Catch::Contains("# fix:" + failed));
  }
}

TEST_CASE("loop: the op signature is recorded once, by the baseline, and kept on every candidate") {
  Loop loop;
  v1::OpSignature sig;
  auto* op = sig.add_ops();
  op->set_op("aten::relu");
  auto* in = op->add_inputs();
  in->add_shape(1024);
  in->set_dtype("float32");
  sig.set_min_bytes(8192);
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
  for (const auto& r : loop.MeasureRequests()) skipped[r.task_id()] = r.skip_op_signature();
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

TEST_CASE("loop: the result's arithmetic-intensity roofline is taken at the final run's median") {
  // The best kernel of the last round is measured, not profiled: the result's roofline
  // comes from the op's own bytes over the final run's median, not from a profile.
  Loop loop;
  v1::OpSignature sig;
  auto* op = sig.add_ops();
  op->set_op("aten::max_pool2d");
  op->add_inputs()->set_dtype("float32");
  sig.set_flops(1e6);
  sig.set_min_bytes(2.7e9);
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

TEST_CASE("loop: the first kernel's request on a CPU worker describes the CPU worker") {
  Loop loop;
  loop.gpu_a.op_signature = loop.gpu_b.op_signature = ReluSignature();
  loop.gpu_a.measure = loop.gpu_b.measure = [](const std::string& source) {
    v1::Measurement m = Time(source);
    m.set_gpu_name(kCpuWorkerGpuName);
    return m;
  };
  v1::Job job = loop.WaitDone(loop.Submit(1, "").id());
  INFO(job.error());
  REQUIRE(job.state() == v1::JOB_STATE_DONE);
  absl::MutexLock lock(&loop.services.mu);
  REQUIRE(loop.services.first_kernel_requests.size() == 1);
  // Not "an NVIDIA GPU (details not given)" in an LLM brain's prompt: the interpreter.
  const v1::GenerateRequest& g = loop.services.first_kernel_requests[0];
  CHECK(g.gpu().name() == kCpuWorkerGpuName);
  CHECK(g.gpu().arch() == "cpu");
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
  size_t profiles = 0;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    profiles += g->profile_requests.size();
  }
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

void SayHowTheDiskIsFull(const FullDisk& disk) {
  if (!disk.mounted()) {
    WARN("cannot mount a tmpfs here (" << disk.mount_error()
                                       << "): the database is made full with SQLite's "
                                          "PRAGMA max_page_count instead");
  }
}

std::vector<std::string> UnfinishedIds(Loop& loop, const std::string& tenant) {
  std::vector<std::string> out;
  absl::StatusOr<std::vector<StoredJob>> jobs = loop.storage->ListUnfinishedJobs();
  REQUIRE(jobs.ok());
  for (const StoredJob& s : *jobs) {
    if (s.job.tenant() == tenant) out.push_back(s.job.id());
  }
  return out;
}

v1::Job FullDiskJob() {
  v1::Job j;
  j.set_tenant("t");
  j.mutable_problem()->set_name("p");
  j.mutable_problem()->set_source(kProblem);
  j.mutable_start_kernel()->set_source(kStart);
  j.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  j.mutable_config()->mutable_budget()->set_max_rounds(1);
  return j;
}

// Fills the disk (once) when the first kernel is measured: in the job's baseline.
struct FillOnFirstMeasure {
  FillOnFirstMeasure(Loop& loop, FullDisk& disk) {
    loop.gpu_a.measure = loop.gpu_b.measure = [this, &disk](const std::string& source) {
      if (!started.exchange(true)) {
        absl::Status s = disk.Fill();
        absl::MutexLock lock(&mu);
        fill_status = s;
        filled = true;
      }
      return Time(source);
    };
  }
  // Waits until the disk was filled (the fill itself done).
  void WaitFilled() {
    absl::MutexLock lock(&mu);
    mu.AwaitWithTimeout(absl::Condition(&filled), absl::Seconds(30));
    REQUIRE(filled);
    REQUIRE(fill_status.ok());
  }
  std::atomic<bool> started{false};
  absl::Mutex mu;
  bool filled ABSL_GUARDED_BY(mu) = false;
  absl::Status fill_status ABSL_GUARDED_BY(mu);
};

// A one-round job on a disk that fills at its first measurement, with storage retries for
// `retry_seconds` (backoff from 50 ms): the job is submitted and the disk full when the
// constructor returns.
struct DiskFillsMidRun {
  explicit DiskFillsMidRun(double retry_seconds) {
    SayHowTheDiskIsFull(disk);
    JobDefaults d;
    d.storage_retry_seconds = retry_seconds;
    d.storage_retry_backoff_seconds = 0.05;
    loop = std::make_unique<Loop>(disk.path(), absl::Milliseconds(2), d);
    disk.Attach(loop->storage.get());
    fill = std::make_unique<FillOnFirstMeasure>(*loop, disk);
    job = loop->Submit(1);
    fill->WaitFilled();
  }
  FullDisk disk;
  std::unique_ptr<Loop> loop;
  std::unique_ptr<FillOnFirstMeasure> fill;
  v1::Job job;
};

TEST_CASE("loop: a SubmitJob that fails on a full disk stores nothing, at every free space") {
  FullDisk disk;
  SayHowTheDiskIsFull(disk);
  Loop loop(disk.path());
  disk.Attach(loop.storage.get());
  // From no space at all upwards, a page more each time: somewhere the job fits and its
  // first event does not. Each failed Submit must leave nothing behind.
  absl::StatusOr<v1::Job> submitted = absl::UnknownError("never tried");
  int failures = 0;
  for (int pages = 0; pages < 256; ++pages) {
    REQUIRE(disk.FillLeaving(int64_t{pages} * 4096).ok());
    v1::Job j = FullDiskJob();
    j.set_id(absl::StrCat("job-full-", pages));
    submitted = loop.manager->Submit(j, "");
    if (submitted.ok()) break;
    ++failures;
    INFO("free pages: " << pages << ": " << submitted.status());
    REQUIRE(submitted.status().code() == absl::StatusCode::kResourceExhausted);
    ListJobsQuery q;
    q.tenant = "t";
    REQUIRE(loop.storage->ListJobs(q)->jobs.empty());
    REQUIRE(UnfinishedIds(loop, "t").empty());
  }
  REQUIRE(failures > 0);
  REQUIRE(submitted.ok());
  // Each failed Submit is counted, so a full disk can page someone (KagentStorageFailing).
  CHECK(loop.Counter("kagent_storage_failures_total", "operation", "submit") == failures);
  REQUIRE(disk.Free().ok());
  // The retries made one job, not one per attempt, and it has its first event.
  ListJobsQuery q;
  q.tenant = "t";
  auto listed = loop.storage->ListJobs(q)->jobs;
  REQUIRE(listed.size() == 1);
  REQUIRE(listed[0].job.id() == submitted->id());
  auto events = loop.Events(submitted->id());
  REQUIRE(!events.empty());
  CHECK(events[0].state() == v1::JOB_STATE_QUEUED);
  // A restarted coordinator runs that job and nothing else.
  loop.RestartManager();
  REQUIRE(loop.manager->ResumeUnfinished().ok());
  CHECK(UnfinishedIds(loop, "t") == std::vector<std::string>{submitted->id()});
  CHECK(loop.WaitDone(submitted->id(), absl::Seconds(30)).state() == v1::JOB_STATE_DONE);
}

TEST_CASE("loop: a disk that fills mid-run and is freed within the retry window: the job goes on") {
  DiskFillsMidRun run(/*retry_seconds=*/60);
  FullDisk& disk = run.disk;
  Loop& loop = *run.loop;
  const v1::Job& job = run.job;
  absl::SleepFor(absl::Milliseconds(500));  // the baseline's writes fail meanwhile
  CHECK(IsUnfinishedJobState(loop.storage->GetJob(job.id())->job.state()));
  REQUIRE(disk.Free().ok());
  v1::Job done = loop.WaitDone(job.id(), absl::Seconds(20));
  REQUIRE(done.state() == v1::JOB_STATE_DONE);
  CHECK(done.error().empty());
  CHECK(done.result().best_candidate_id() != "");
  CHECK(loop.Counter("kagent_storage_failures_total", "operation", "step") >= 1);
  // The job's log says what happened, without the database's path.
  bool said = false;
  for (const auto& e : loop.Events(job.id())) {
    if (e.type() != v1::JOB_EVENT_LOG || !absl::StrContains(e.message(), "storage error")) continue;
    said = true;
    CHECK(absl::StrContains(e.message(), "database or disk is full"));
    CHECK_FALSE(absl::StrContains(e.message(), disk.path()));
  }
  CHECK(said);
}

TEST_CASE("loop: a disk that stays full past the retry window: the job fails, and its "
          "failure is stored once space returns") {
  DiskFillsMidRun run(/*retry_seconds=*/0.3);
  FullDisk& disk = run.disk;
  Loop& loop = *run.loop;
  const v1::Job& job = run.job;
  absl::SleepFor(absl::Milliseconds(1500));  // past the window: storing FAILED is retried
  if (disk.mounted()) {
    // Nothing changes while the disk is full: what GetJob shows is what is stored.
    CHECK(loop.storage->GetJob(job.id())->job.state() == v1::JOB_STATE_BASELINE);
  }
  REQUIRE(disk.Free().ok());
  v1::Job failed = loop.WaitDone(job.id(), absl::Seconds(20));
  REQUIRE(failed.state() == v1::JOB_STATE_FAILED);
  INFO(failed.error());
  CHECK(absl::StartsWith(failed.error(), "storage error: sqlite: database or disk is full"));
  CHECK_FALSE(absl::StrContains(failed.error(), "budget"));
  CHECK_FALSE(absl::StrContains(failed.error(), disk.path()));
  auto events = loop.Events(job.id());
  REQUIRE(!events.empty());
  CHECK(events.back().type() == v1::JOB_EVENT_JOB_FINISHED);
  CHECK(events.back().state() == v1::JOB_STATE_FAILED);
  CHECK(events.back().message() == failed.error());
  // A restarted coordinator does not run it again.
  loop.RestartManager();
  REQUIRE(loop.manager->ResumeUnfinished().ok());
  CHECK(UnfinishedIds(loop, "t").empty());
  CHECK(loop.manager->running_jobs() == 0);
}

TEST_CASE("job service: a storage error reaches the client without the database's path") {
  FullDisk disk;
  SayHowTheDiskIsFull(disk);
  Loop loop(disk.path());
  disk.Attach(loop.storage.get());
  REQUIRE(disk.Fill().ok());
  JobServiceImpl service(JobServiceLimits(), loop.storage.get(), loop.manager.get(),
                         loop.scheduler.get(), nullptr);
  grpc::ServerContext context;
  v1::SubmitJobRequest request;
  request.mutable_problem()->set_name("p");
  request.mutable_problem()->set_source(kProblem);
  v1::SubmitJobResponse response;
  grpc::Status status = service.SubmitJob(&context, &request, &response);
  INFO(status.error_message());
  REQUIRE(status.error_code() == grpc::StatusCode::RESOURCE_EXHAUSTED);
  CHECK(absl::StrContains(status.error_message(), "database or disk is full"));
  CHECK_FALSE(absl::StrContains(status.error_message(), disk.path()));
  CHECK_FALSE(absl::StrContains(status.error_message(), ".db"));
  // The server keeps the full detail for its log.
  v1::Job j = FullDiskJob();
  j.set_id("job-direct");
  j.set_state(v1::JOB_STATE_QUEUED);
  absl::StatusOr<CreateJobResult> direct = loop.storage->CreateJob(j, "");
  REQUIRE(direct.status().code() == absl::StatusCode::kResourceExhausted);
  CHECK(absl::StrContains(direct.status().message(), disk.path()));
}

// The loop persists a finished job's state a moment before it appends JOB_FINISHED (two
// writes); a watch that sees the job finished in between waits for the event instead of
// ending the stream without it (seen once in the end-to-end CPU job: a client read every
// event but the last).
TEST_CASE("job service: a watch of a job just seen finished still gets its JOB_FINISHED") {
  Loop loop;
  JobServiceImpl service(JobServiceLimits(), loop.storage.get(), loop.manager.get(),
                         loop.scheduler.get(), nullptr);
  grpc::ServerBuilder builder;
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  std::unique_ptr<v1::JobService::Stub> stub =
      v1::JobService::NewStub(server->InProcessChannel(grpc::ChannelArguments()));
  v1::Job j = FullDiskJob();
  j.set_id("job-finishing");
  j.set_tenant(kDefaultTenant);
  j.set_state(v1::JOB_STATE_DONE);
  REQUIRE(loop.storage->CreateJob(j, "").ok());
  v1::JobEvent log;
  log.set_type(v1::JOB_EVENT_LOG);
  log.set_message("final run");
  REQUIRE(loop.manager->Emit(j.id(), log).ok());
  std::thread finisher([&] {
    absl::SleepFor(absl::Milliseconds(1500));  // the watch has seen DONE and no event by now
    v1::JobEvent finished;
    finished.set_type(v1::JOB_EVENT_JOB_FINISHED);
    finished.set_state(v1::JOB_STATE_DONE);
    CHECK(loop.manager->Emit(j.id(), finished).ok());
  });
  grpc::ClientContext context;
  v1::WatchJobRequest request;
  request.set_job_id(j.id());
  request.set_from_sequence(1);
  std::unique_ptr<grpc::ClientReader<v1::JobEvent>> reader = stub->WatchJob(&context, request);
  std::vector<v1::JobEvent> got;
  for (v1::JobEvent e; reader->Read(&e);) got.push_back(e);
  grpc::Status status = reader->Finish();
  finisher.join();
  CHECK(status.ok());
  REQUIRE(got.size() == 2);
  CHECK(got.back().type() == v1::JOB_EVENT_JOB_FINISHED);
  server->Shutdown();
}

TEST_CASE("job service: config.llm_agents must be agents the server offers, agreeing with the brain") {
  v1::SubmitJobRequest r;
  r.mutable_problem()->set_name("p");
  r.mutable_problem()->set_source(kProblem);
  JobServiceLimits limits;
  limits.brains = {"heuristic", "llm"};
  limits.llm_agents = {"plan", "reflect", "rewrite"};
  auto with = [&](std::vector<std::string> agents, const std::string& brain) {
    v1::SubmitJobRequest x = r;
    for (const std::string& a : agents) x.mutable_config()->add_llm_agents(a);
    x.mutable_config()->set_brain(brain);
    return ValidateSubmit(x, limits);
  };
  CHECK(with({}, "").ok());  // no choice: the server's set
  CHECK(with({}, "llm").ok());
  CHECK(with({"reflect", "plan"}, "").ok());
  CHECK(with({"plan"}, "heuristic").ok());
  CHECK(with({"rewrite", "reflect"}, "llm").ok());
  absl::Status s = with({"reflect", "narrate"}, "");
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() == "config.llm_agents: 'narrate' is not an LLM agent of this server; it "
                       "offers: plan, reflect, rewrite");
  s = with({"plan", "plan"}, "");
  CHECK(absl::IsInvalidArgument(s));
  CHECK(s.message() == "config.llm_agents lists 'plan' twice");
  s = with({"rewrite"}, "");
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith("config.llm_agents lists rewrite, but config.brain is heuristic"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("known: heuristic, llm"));
  s = with({"reflect"}, "llm");
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith("config.brain 'llm' is an LLM brain, but config.llm_agents leaves "
                               "out rewrite"));
  // A server without LLM agents offers none.
  limits.llm_agents.clear();
  s = with({"plan"}, "");
  CHECK(s.message() == "config.llm_agents: 'plan' is not an LLM agent of this server; it offers: "
                       "none (no agent asks an LLM here)");
}

TEST_CASE("coordinator options: --offered-llm-agents names known agents once") {
  CHECK(*ParseOfferedLlmAgents("") == std::set<std::string>{});
  CHECK(*ParseOfferedLlmAgents(" reflect, plan ") == std::set<std::string>{"plan", "reflect"});
  CHECK(*ParseOfferedLlmAgents(kAllLlmAgents) ==
        std::set<std::string>{"narrate", "plan", "prescribe", "reflect", "rewrite"});
  absl::StatusOr<std::set<std::string>> bad = ParseOfferedLlmAgents("plan,dream");
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("unknown agent 'dream'"));
  CHECK(absl::IsInvalidArgument(ParseOfferedLlmAgents("plan,plan").status()));
}

TEST_CASE("job service: contradictory or empty settings are refused, and nothing is stored") {
  Loop loop;
  JobServiceImpl service(JobServiceLimits(), loop.storage.get(), loop.manager.get(),
                         loop.scheduler.get(), nullptr);
  v1::SubmitJobRequest good;
  good.mutable_problem()->set_name("p");
  good.mutable_problem()->set_source(kProblem);
  good.mutable_start_kernel()->set_source(kStart);
  good.mutable_start_kernel()->set_language(v1::KERNEL_LANGUAGE_TRITON);
  auto refused = [&](const v1::SubmitJobRequest& request) {
    grpc::ServerContext context;
    v1::SubmitJobResponse response;
    grpc::Status status = service.SubmitJob(&context, &request, &response);
    ListJobsQuery q;
    q.tenant = kDefaultTenant;
    CHECK(loop.storage->ListJobs(q)->jobs.empty());
    CHECK(response.job().id().empty());
    return status;
  };
  {
    v1::SubmitJobRequest r = good;
    r.mutable_config()->set_strategy(v1::SEARCH_STRATEGY_GREEDY);
    r.mutable_config()->set_beam_width(4);
    grpc::Status s = refused(r);
    INFO(s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), "config.strategy GREEDY"));
    CHECK(absl::StrContains(s.error_message(), "config.beam_width is 4"));
  }
  for (const char* source : {"", " \n\t \n"}) {
    v1::SubmitJobRequest r = good;
    r.mutable_start_kernel()->set_source(source);
    grpc::Status s = refused(r);
    INFO(s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(s.error_message() ==
          "start_kernel.source is empty: give the kernel's source, or leave start_kernel out to "
          "let the brain write the first kernel");
  }
  // GREEDY with beam width 1 given, or none, is accepted: the job keeps one kernel a round.
  JobServiceLimits limits;
  for (bool explicit_width : {true, false}) {
    v1::SubmitJobRequest r = good;
    r.mutable_config()->set_strategy(v1::SEARCH_STRATEGY_GREEDY);
    if (explicit_width) r.mutable_config()->set_beam_width(1);
    CHECK(ValidateSubmit(r, limits).ok());
    CHECK(loop.manager->EffectiveConfig(r.config()).beam_width() == 1);
  }
  // BEAM with any width in range stays as given.
  v1::SubmitJobRequest beam = good;
  beam.mutable_config()->set_strategy(v1::SEARCH_STRATEGY_BEAM);
  beam.mutable_config()->set_beam_width(4);
  CHECK(ValidateSubmit(beam, limits).ok());
  CHECK(loop.manager->EffectiveConfig(beam.config()).beam_width() == 4);
}

}  // namespace
}  // namespace kagent

namespace kagent {
namespace {

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
}  // namespace kagent
