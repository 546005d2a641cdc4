// LlmKernelBrain against the real loopback FakeLlmServer (both wire formats), through
// the whole stack of common/llm (accounting, budgets, cassettes). The optimization
// manager running this brain is tested in services/optimization_manager
// (llm_generate_test.cc), the coordinator's client of it in services/coordinator
// (loop_services_test.cc); the helpers they share are in testing/llm_test_rig.h.
#include "engines/llm/llm_brain.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <functional>
#include <memory>
#include <string>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "common/llm/factory.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

namespace fs = std::filesystem;
using llm::testing::AnthropicReply;
using llm::testing::FakeLlmServer;
using llm::testing::OpenAiReply;
using llm::testing::ReceivedRequest;
using llm::testing::ScriptedResponse;
using llm::testing::WireFormat;
using llm_testing::Answer;
using llm_testing::Config;
using llm_testing::FormatName;
using llm_testing::Kernel;
using llm_testing::kProblem;
using llm_testing::MakeRig;
using llm_testing::ProblemInputs;
using llm_testing::Reply;
using llm_testing::Rig;

// The messages of a received request, without the system message (OpenAI's first).
nlohmann::json Conversation(WireFormat f, const ReceivedRequest& r) {
  nlohmann::json messages = r.Json()["messages"];
  if (f == WireFormat::kOpenAi) {
    REQUIRE(messages[0]["role"] == "system");
    messages.erase(messages.begin());
  }
  return messages;
}

std::string SystemPrompt(WireFormat f, const ReceivedRequest& r) {
  nlohmann::json body = r.Json();
  if (f == WireFormat::kOpenAi) return body["messages"][0]["content"].get<std::string>();
  return body["system"].get<std::string>();
}

#define ANY_FORMAT() GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic)

TEST_CASE("LLM brain: a first kernel over loopback", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  rig.server->Enqueue(Reply(f, Answer(Kernel("v1"))));
  ProblemInputs in;
  LogScope scope({.job_id = "job-first", .request_id = "", .tenant = "acme"});
  auto r = rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("v1"));
  CHECK(r->kernel.origin() == "brain:llm");
  CHECK(r->kernel.language() == v1::KERNEL_LANGUAGE_TRITON);
  CHECK(r->expected_effect == "one program per 1024 elements");
  REQUIRE(r->moves.size() == 1);
  // The prompt and the reply travel with the kernel.
  CHECK_THAT(r->prompt, Catch::StartsWith("[system]\n"));
  CHECK_THAT(r->prompt, Catch::Contains("[user]\nWrite a first, correct kernel"));
  CHECK_THAT(r->prompt, Catch::Contains("class Model(nn.Module)"));
  CHECK(r->reply == Answer(Kernel("v1")));

  auto received = rig.server->requests();
  REQUIRE(received.size() == 1);
  CHECK(received[0].path == rig.server->api_path());
  CHECK_THAT(SystemPrompt(f, received[0]), Catch::Contains("expert GPU performance engineer"));
  nlohmann::json messages = Conversation(f, received[0]);
  REQUIRE(messages.size() == 1);
  const std::string user = messages[0]["content"];
  CHECK_THAT(user, Catch::Contains("NVIDIA H200 (sm_90, 132 SMs)"));
  CHECK_THAT(user, Catch::Contains("aten::add: inputs [4096] float32"));
  CHECK_THAT(user, Catch::Contains("return x + y"));
  // Charged to the job and tenant of the calling thread's log context.
  CHECK(rig.stack.accountant->JobUsage("job-first").calls == 1);
  CHECK(rig.stack.accountant->TenantUsage("acme").tokens() == 19);
}

TEST_CASE("LLM brain: a fix over loopback", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  nlohmann::json answer = {{"explanation", "BLOCK 1024 -> 4096"},
                           {"expected_effect", "4x fewer programs; DRAM throughput 41% -> 80%"},
                           {"expected_speedup", 1.5},
                           {"code", absl::StrCat("```python\n", Kernel("v2"), "```")}};
  rig.server->Enqueue(Reply(f, answer.dump()));
  ProblemInputs in;
  v1::KernelSource parent;
  parent.set_source(Kernel("parent"));
  v1::Prescription p;
  p.set_pattern_id("vector_width");
  p.set_title("Wider loads per program");
  p.set_rationale("DRAM throughput is 41% of peak");
  (*p.mutable_knob_changes())["BLOCK"] = "4096";
  p.add_risks("register pressure");
  v1::BottleneckReport report;
  report.set_primary(v1::BOTTLENECK_MEMORY_BOUND);
  report.set_efficiency_pct(41);
  std::vector<v1::Reflexion> memory(1);
  memory[0].set_round(1);
  memory[0].set_pattern_id("num_stages");
  memory[0].set_lesson("num_stages 4 did nothing for a streaming kernel");
  FixRequest fr;
  fr.parent = &parent;
  fr.prescription = &p;
  fr.problem = &in.problem;
  fr.signature = &in.signature;
  fr.gpu = &in.gpu;
  fr.report = &report;
  fr.memory = &memory;
  fr.alternative = 1;
  v1::Measurement measured;
  measured.mutable_candidate()->set_median_ms(0.04);
  measured.mutable_eager()->set_median_ms(0.05);
  measured.mutable_compiled()->set_median_ms(0.03);
  fr.measurement = &measured;
  v1::HardwareMetrics metrics;
  metrics.set_memory_sol_pct(41);
  metrics.set_arithmetic_intensity(0.083);
  metrics.set_roofline_bound_pct(40);
  fr.metrics = &metrics;
  auto r = rig.brain->ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("v2"));  // the fences around the code are removed
  CHECK(r->expected_effect == "4x fewer programs; DRAM throughput 41% -> 80% (expected speedup 1.5x)");
  REQUIRE(r->moves.size() == 1);
  CHECK(r->moves[0] == "llm rewrite: Wider loads per program (variant 2)");
  // The reply launches with BLOCK=1024 as the parent did: the fix was not applied, and
  // the result says so (a fallback), so the reflexion does not blame the pattern.
  CHECK(r->fallback == "the rewrite left BLOCK = 1024 as the parent had it: the model did "
                       "not apply the prescribed knob change");

  nlohmann::json messages = Conversation(f, rig.server->requests().at(0));
  const std::string user = messages.at(0)["content"];
  CHECK_THAT(user, Catch::Contains("Apply one optimization"));
  CHECK_THAT(user, Catch::Contains("KERNEL_TAG = \"parent\""));
  CHECK_THAT(user, Catch::Contains("The fix to apply: Wider loads per program"));
  CHECK_THAT(user, Catch::Contains("knob changes: BLOCK = 4096"));
  CHECK_THAT(user, Catch::Contains("known risk: register pressure"));
  CHECK_THAT(user, Catch::Contains("variant 2"));
  CHECK_THAT(user, Catch::Contains("category: memory-bound"));
  CHECK_THAT(user, Catch::Contains("num_stages 4 did nothing"));
  CHECK_THAT(user, Catch::Contains("Measured (medians of the same run):\n"
                                   "current kernel: 0.04 ms median\n"
                                   "eager PyTorch: 0.05 ms median (the current kernel is 1.25x "
                                   "faster than eager PyTorch)"));
  CHECK_THAT(user, Catch::Contains("1.33x slower than torch.compile"));
  // The profile's roofline figures follow the judge's report.
  CHECK_THAT(user, Catch::Contains("speed of light: compute 0.0%, memory 41.0% of peak\n"
                                   "arithmetic intensity: 0.083 FLOP/byte"));
  CHECK_THAT(user, Catch::Contains("of the roofline at this intensity: 40.0%"));
  // The parent's knobs, read from its source; BLOCK is one, so no "has no" note.
  CHECK_THAT(user, Catch::Contains("launch meta-parameters):\nBLOCK\n"));
  CHECK_THAT(user, !Catch::Contains("has no BLOCK"));

  // Malformed requests never reach the network.
  FixRequest bad;
  CHECK(absl::IsInvalidArgument(rig.brain->ApplyFix(bad).status()));
  CHECK(absl::IsInvalidArgument(rig.brain->FirstKernel({}).status()));
  CHECK(rig.server->request_count() == 1);
}

TEST_CASE("LLM brain: a reply that changes the named knob applied the fix, unless it lacks the "
          "construct the fix names", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  const std::string wider = absl::StrReplaceAll(Kernel("v2"), {{"BLOCK=1024", "BLOCK=4096"}});
  rig.server->Enqueue(Reply(f, Answer(wider)));
  ProblemInputs in;
  v1::KernelSource parent;
  parent.set_source(Kernel("parent"));
  v1::Prescription p;
  p.set_pattern_id("vector_width");
  (*p.mutable_knob_changes())["BLOCK"] = "4096";
  FixRequest fr;
  fr.parent = &parent;
  fr.prescription = &p;
  auto r = rig.brain->ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == wider);
  CHECK(r->fallback.empty());

  // The fix also names a construct (the pattern's code markers) that the parent and this
  // reply both lack: the model did not apply the fix, whatever the knob did.
  p.add_code_markers("tl.multiple_of");
  rig.server->Enqueue(Reply(f, Answer(wider)));
  r = rig.brain->ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->fallback == "the rewrite still lacks tl.multiple_of, which the fix names and the "
                       "parent lacked: the model did not apply the prescribed change");
  const std::string hinted =
      absl::StrReplaceAll(wider, {{"    mask = offs < n", "    offs = tl.multiple_of(offs, 16)\n    mask = offs < n"}});
  rig.server->Enqueue(Reply(f, Answer(hinted)));
  r = rig.brain->ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->fallback.empty());
}

TEST_CASE("LLM brain: several models spread a round's rewrites, each recorded", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  LlmKernelBrain brain(rig.stack.client, rig.stack.prompts,
                       {.name = "llm", .models = {"model-a", "model-b"}});
  v1::KernelSource parent;
  parent.set_source(Kernel("parent"));
  v1::Prescription p;
  p.set_title("wider blocks");
  std::vector<std::string> origins, moves;
  for (int worker = 0; worker < 3; ++worker) {
    rig.server->Enqueue(Reply(f, Answer(Kernel("w" + std::to_string(worker)))));
    FixRequest fr;
    fr.parent = &parent;
    fr.prescription = &p;
    fr.worker_index = worker;
    auto r = brain.ApplyFix(fr);
    REQUIRE(r.ok());
    origins.push_back(r->kernel.origin());
    REQUIRE(r->moves.size() == 1);
    moves.push_back(r->moves[0]);
  }
  std::vector<std::string> asked;
  for (const ReceivedRequest& r : rig.server->requests()) asked.push_back(r.Json()["model"].get<std::string>());
  CHECK(asked == std::vector<std::string>{"model-a", "model-b", "model-a"});
  CHECK(origins == std::vector<std::string>{"brain:llm/model-a", "brain:llm/model-b", "brain:llm/model-a"});
  CHECK(moves[1] == "llm rewrite: wider blocks (model model-b)");
  // One model: the configuration's name is kept out of the record, as before.
  rig.server->Enqueue(Reply(f, Answer(Kernel("one"))));
  LlmKernelBrain single(rig.stack.client, rig.stack.prompts, {.name = "llm", .models = {"model-c"}});
  FixRequest fr;
  fr.parent = &parent;
  fr.prescription = &p;
  auto r = single.ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->kernel.origin() == "brain:llm");
  CHECK(rig.server->requests().back().Json()["model"] == "model-c");
}

TEST_CASE("LLM brain: a repair turn sends the failed kernel with its verdict and error",
          "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  const std::string repaired = Kernel("repaired");
  rig.server->Enqueue(Reply(f, Answer(repaired, "the tail was not masked")));
  ProblemInputs in;
  v1::KernelSource failed;
  failed.set_source(Kernel("failed-without-mask"));
  v1::Prescription p;
  p.set_title("wider blocks");
  (*p.mutable_knob_changes())["BLOCK"] = "4096";
  RepairRequest repair{.verdict = "VERDICT_INCORRECT",
                       .error = "max abs error 3.2 at [4095] (atol 1e-4)",
                       .attempt = 1};
  FixRequest fr;
  fr.parent = &failed;
  fr.prescription = &p;
  fr.problem = &in.problem;
  fr.gpu = &in.gpu;
  fr.repair = &repair;
  auto r = rig.brain->ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == repaired);
  CHECK(r->moves == std::vector<std::string>{"llm repair 1: wider blocks"});
  CHECK(r->fallback.empty());  // the repair is judged by the gate, not by the knob check
  REQUIRE(rig.server->request_count() == 1);
  const std::string sent = Conversation(f, rig.server->requests()[0])[0]["content"].get<std::string>();
  CHECK_THAT(sent, Catch::Contains("failed kagent's correctness gate (repair 1)"));
  CHECK_THAT(sent, Catch::Contains("The gate's verdict: VERDICT_INCORRECT"));
  CHECK_THAT(sent, Catch::Contains("max abs error 3.2 at [4095] (atol 1e-4)"));
  CHECK_THAT(sent, Catch::Contains(Kernel("failed-without-mask")));
  CHECK_THAT(sent, Catch::Contains("The kernel was written to apply this fix: wider blocks"));
  CHECK_THAT(sent, Catch::Contains(kProblem));
  CHECK_THAT(r->prompt, Catch::Contains("[user]"));
}

TEST_CASE("LLM brain: a knob the kernel lacks is named as missing", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  rig.server->Enqueue(Reply(f, Answer(Kernel("v2"))));
  ProblemInputs in;
  v1::KernelSource parent;
  parent.set_source(Kernel("parent"));  // one knob: BLOCK
  v1::Prescription p;
  p.set_pattern_id("k_tiling");
  (*p.mutable_knob_changes())["BLOCK_K"] = "x2";
  FixRequest fr;
  fr.parent = &parent;
  fr.prescription = &p;
  fr.problem = &in.problem;
  fr.gpu = &in.gpu;
  REQUIRE(rig.brain->ApplyFix(fr).ok());
  const std::string user = Conversation(f, rig.server->requests().at(0)).at(0)["content"];
  CHECK_THAT(user, Catch::Contains("knob changes: BLOCK_K = x2"));
  CHECK_THAT(user, Catch::Contains("the current kernel has no BLOCK_K: make the change's "
                                   "intent with the knobs it has (BLOCK)"));
}

TEST_CASE("LLM brain: on a CPU worker the prompt names Triton's interpreter", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  rig.server->Enqueue(Reply(f, Answer(Kernel("v1"))));
  ProblemInputs in;
  in.gpu.Clear();  // what a --device=cpu worker reports
  in.gpu.set_name("cpu (triton interpreter)");
  in.gpu.set_arch("cpu");
  REQUIRE(rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu}).ok());
  const std::string user = Conversation(f, rig.server->requests().at(0)).at(0)["content"];
  CHECK_THAT(user, Catch::Contains("timings given come from the interpreter"));
  CHECK_THAT(user, Catch::Contains("Triton's CPU interpreter"));
  CHECK_THAT(user, !Catch::Contains("details not given"));
}

TEST_CASE("LLM brain: broken JSON, then a good reply", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  // Cut off inside "code": the truncated object lacks the key and is asked again.
  rig.server->Enqueue(Reply(f, "Sure:\n```json\n{\"explanation\": \"tiles\", \"code\": \"import tri",
                            50, 4096, f == WireFormat::kOpenAi ? "length" : "max_tokens"));
  rig.server->Enqueue(Reply(f, absl::StrCat("```json\n", Answer(Kernel("v3")), "\n```")));
  ProblemInputs in;
  auto r = rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("v3"));
  auto received = rig.server->requests();
  REQUIRE(received.size() == 2);
  nlohmann::json messages = Conversation(f, received[1]);
  REQUIRE(messages.size() == 3);
  CHECK(messages[1]["role"] == "assistant");
  CHECK_THAT(messages[2]["content"].get<std::string>(), Catch::Contains("lacks required keys: code"));

  // Never usable: INTERNAL after max_json_attempts replies.
  rig.server->Enqueue(Reply(f, "no json here"));
  rig.server->Enqueue(Reply(f, "still none"));
  auto bad = rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
  CHECK(absl::IsInternal(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("llm brain (first_kernel)"));
  CHECK(rig.server->request_count() == 4);
}

TEST_CASE("LLM brain: code without ModelNew is asked again once", "[llm_brain]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f);
  rig.server->Enqueue(Reply(f, Answer(Kernel("no-model", /*with_model_new=*/false))));
  rig.server->Enqueue(Reply(f, Answer(Kernel("v4"))));
  ProblemInputs in;
  auto r = rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("v4"));
  auto received = rig.server->requests();
  REQUIRE(received.size() == 2);
  nlohmann::json messages = Conversation(f, received[1]);
  REQUIRE(messages.size() == 3);
  CHECK(messages[1]["content"] == Answer(Kernel("no-model", false)));
  const std::string reask = messages[2]["content"];
  CHECK_THAT(reask, Catch::Contains("Your code cannot be used"));
  CHECK_THAT(reask, Catch::Contains("class ModelNew(nn.Module)"));
  // The stored prompt is the whole conversation of the last question.
  CHECK_THAT(r->prompt, Catch::Contains("[assistant]\n"));
  CHECK_THAT(r->prompt, Catch::Contains("Your code cannot be used"));

  // Still wrong after the re-ask: FAILED_PRECONDITION naming the problem.
  rig.server->Enqueue(Reply(f, Answer(Kernel("a", false))));
  rig.server->Enqueue(Reply(f, Answer(Kernel("b", false))));
  auto bad = rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
  CHECK(absl::IsFailedPrecondition(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("ModelNew"));
  CHECK(rig.server->request_count() == 4);
}

TEST_CASE("LLM brain: a recorded cassette replays with the server stopped", "[llm_brain][cassette]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  const fs::path path = fs::temp_directory_path() /
                        absl::StrCat("kagent_llm_brain_", FormatName(f), "_", ::getpid(), ".jsonl");
  fs::remove(path);
  ProblemInputs in;
  std::string recorded;
  {
    Rig rig = MakeRig(f, [&](llm::LlmConfig& c) {
      c.cassette_mode = llm::CassetteMode::kRecord;
      c.cassette_path = path.string();
    });
    rig.server->Enqueue(Reply(f, Answer(Kernel("no-model", false))));  // re-asked
    rig.server->Enqueue(Reply(f, Answer(Kernel("recorded"))));
    auto r = rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
    REQUIRE(r.ok());
    recorded = r->kernel.source();
    rig.server->Stop();
  }
  llm::LlmConfig c = Config(f, "");
  c.cassette_mode = llm::CassetteMode::kReplay;
  c.cassette_path = path.string();
  auto stack = llm::MakeLlmStack(c).value();
  LlmKernelBrain brain(stack.client, stack.prompts, {});
  LogScope scope({.job_id = "job-replay", .request_id = "", .tenant = ""});
  auto r = brain.FirstKernel({&in.problem, &in.signature, &in.gpu});
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == recorded);
  CHECK(recorded == Kernel("recorded"));
  // Both replies were replayed and charged, as in the recorded run.
  CHECK(stack.accountant->JobUsage("job-replay").calls == 2);
  // A request never recorded is NOT_FOUND, not a network error.
  v1::Problem other = in.problem;
  other.set_source(absl::StrCat(kProblem, "# changed\n"));
  CHECK(absl::IsNotFound(brain.FirstKernel({&other, &in.signature, &in.gpu}).status()));
  fs::remove(path);
}

TEST_CASE("LoadLlmConfigFile reads the JSON of docs/llm.md", "[llm_brain]") {
  const fs::path path = fs::temp_directory_path() / absl::StrCat("kagent_llm_cfg_", ::getpid(), ".json");
  CHECK(absl::IsNotFound(LoadLlmConfigFile(path.string()).status()));
  {
    std::ofstream(path) << R"({"provider": "openai", "base_url": "http://127.0.0.1:1", "model": "m"})";
  }
  auto c = LoadLlmConfigFile(path.string());
  REQUIRE(c.ok());
  CHECK(c->provider == "openai");
  {
    std::ofstream(path) << R"({"provider": "openai", "model": "m", "colour": "blue"})";
  }
  auto bad = LoadLlmConfigFile(path.string());
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains(path.string()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("colour"));
  fs::remove(path);
}

}  // namespace
}  // namespace kagent
