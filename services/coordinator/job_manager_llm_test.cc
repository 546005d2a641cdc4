// The loop with LLM agents and an LLM brain on the CPU (testing/loop.h's rig and
// engines/llm's loopback rig): exchanges stored as artifacts, usage charged and bounded,
// repair turns, an endpoint that fails or comes back.
#include <catch2/catch.hpp>

#include "services/coordinator/testing/loop.h"

namespace kagent::testing {
namespace {

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

// A Loop whose Generate goes through the real optimization manager serving the LLM
// brain, over a loopback server that answers every request with `reply`. Members are
// destroyed in reverse order: the loop's jobs end before the manager and the rig go.
struct LlmLoop {
  explicit LlmLoop(llm::testing::ScriptedResponse reply)
      : rig(llm_testing::MakeRig(llm::testing::WireFormat::kOpenAi)),
        manager(Options(), rig.brain.get(), nullptr, nullptr) {
    rig.server->SetDefault(std::move(reply));
    loop.services.generate_with =
        [this](const v1::GenerateRequest& r) -> absl::StatusOr<v1::GenerateResponse> {
      v1::GenerateRequest llm = r;
      llm.set_brain("llm");  // the brain this manager serves
      v1::GenerateResponse out;
      KAGENT_RETURN_IF_ERROR(manager.DoGenerate(llm, &out));
      return out;
    };
  }
  static OptimizationManagerOptions Options() {
    OptimizationManagerOptions mo;
    mo.check_sources = false;
    return mo;
  }

  llm_testing::Rig rig;
  OptimizationManagerServiceImpl manager;
  Loop loop;
};

TEST_CASE("loop: a wrong model (vLLM's 404) fails the job as the LLM endpoint's fault, "
          "burning no pattern") {
  // The real optimization manager and LLM brain against a loopback vLLM that does not
  // serve the configured model.
  LlmLoop llm(llm_testing::VllmModelNotFound("test-model"));
  llm_testing::Rig& rig = llm.rig;
  Loop& loop = llm.loop;
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
  const std::string answer = llm_testing::Answer(llm_testing::Kernel("first"));
  LlmLoop llm(llm_testing::Reply(llm::testing::WireFormat::kOpenAi, answer));
  Loop& loop = llm.loop;
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
  LlmLoop llm(llm_testing::Reply(llm::testing::WireFormat::kOpenAi, "I would rather not."));
  Loop& loop = llm.loop;
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

}  // namespace
}  // namespace kagent::testing
