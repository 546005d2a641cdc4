// The loop's CPU test rig (job_manager_test.cc, job_manager_llm_test.cc,
// job_service_test.cc): the real JobManager, Scheduler, SQLite storage and round planner,
// with fake GPU workers (testing_fakes.h) and scripted judge/analyzer/reflector/brain.
//
// A kernel's source carries the fixes applied to it as comment lines "# fix:<id>"; the
// fake GPU times it from them (Time): "good" fixes take 20% off, "bad" ones add 30%,
// "crash" makes it crash, "WRONG" anywhere makes it INCORRECT. ScriptedServices'
// analyzer prescribes the fixes listed in `fixes`. Test-only; uses Catch2's REQUIRE.
#ifndef KAGENT_SERVICES_COORDINATOR_TESTING_LOOP_H_
#define KAGENT_SERVICES_COORDINATOR_TESTING_LOOP_H_

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


namespace kagent::testing {

inline constexpr char kProblem[] = "class Model: pass\ndef get_inputs(): pass\ndef get_init_inputs(): pass\n";
inline constexpr char kStart[] = "class ModelNew: pass  # start\n";

inline v1::Measurement Time(const std::string& source) {
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

  // What an agent's request carried: the LLM tokens left (-1: none set) into
  // `tokens_left`, and its choice of LLM agents under `agent`.
  template <typename Request>
  void RecordCarried(const Request& r, const std::string& agent,
                     std::vector<int64_t>* tokens_left) ABSL_LOCKS_EXCLUDED(mu) {
    absl::MutexLock lock(&mu);
    tokens_left->push_back(r.has_llm_tokens_left() ? r.llm_tokens_left() : -1);
    llm_agents_carried[agent].insert(absl::StrJoin(r.llm_agents(), ","));
  }

  absl::StatusOr<v1::DiagnoseResponse> Diagnose(const v1::DiagnoseRequest& r, CancelToken*) override {
    ++diagnose_calls;
    RecordCarried(r, "Diagnose", &diagnose_tokens_left);
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
    RecordCarried(r, "Prescribe", &prescribe_tokens_left);
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
    RecordCarried(r, "PlanRound", &plan_tokens_left);
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
    RecordCarried(r, "Reflect", &reflect_tokens_left);
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
inline v1::OpSignature ReluSignature() {
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
  // Profiles the two workers were asked for.
  size_t ProfileCount() {
    size_t n = 0;
    for (FakeGpu* g : {&gpu_a, &gpu_b}) {
      absl::MutexLock lock(&g->mu);
      n += g->profile_requests.size();
    }
    return n;
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
inline std::vector<std::string> ThreeVariants(const std::string& k) {
  return {absl::StrCat(k, "V = 1\n# fix:good-v\n"), absl::StrCat(k, "V = 2\n# fix:bad-v\n"),
          absl::StrCat(k, "V = 3  # WRONG\n")};
}

inline std::vector<v1::ScreenRequest> ScreenRequests(Loop& loop) {
  std::vector<v1::ScreenRequest> out;
  for (FakeGpu* g : {&loop.gpu_a, &loop.gpu_b}) {
    absl::MutexLock lock(&g->mu);
    out.insert(out.end(), g->screen_requests.begin(), g->screen_requests.end());
  }
  return out;
}

// How many times each worker was asked to release `job` (after waiting up to 5 s for the
// scheduler's release thread to send the calls).
inline std::vector<int> Releases(Loop& loop, const std::string& job, int expect) {
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


}  // namespace kagent::testing

#endif  // KAGENT_SERVICES_COORDINATOR_TESTING_LOOP_H_
