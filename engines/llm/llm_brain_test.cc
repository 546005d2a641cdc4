// LlmKernelBrain against the real loopback FakeLlmServer (both wire formats), through
// the whole stack of common/llm (accounting, budgets, cassettes), and through the
// optimization manager's DoGenerate and BrainRouter.
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
#include <grpcpp/grpcpp.h>

#include "common/llm/factory.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/template_library.h"
#include "nlohmann/json.hpp"
#include "services/optimization_manager/optimization_manager_service.h"
#include "services/coordinator/loop_services.h"
#include "services/optimization_manager/optimization_manager_setup.h"

namespace kagent {
namespace {

namespace fs = std::filesystem;
using llm::testing::AnthropicReply;
using llm::testing::FakeLlmServer;
using llm::testing::OpenAiReply;
using llm::testing::ReceivedRequest;
using llm::testing::ScriptedResponse;
using llm::testing::WireFormat;

constexpr char kProblem[] = R"py(import torch
import torch.nn as nn

class Model(nn.Module):
    def forward(self, x, y):
        return x + y

def get_inputs():
    return [torch.randn(4096, device="cuda"), torch.randn(4096, device="cuda")]

def get_init_inputs():
    return []
)py";

// A candidate in the shape the brain accepts; `tag` makes distinct sources.
std::string Kernel(const std::string& tag, bool with_model_new = true) {
  std::string s = absl::StrCat(R"py(import torch
import torch.nn as nn
import triton
import triton.language as tl

@triton.jit
def add_kernel(x_ptr, y_ptr, out_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(out_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask), mask=mask)

KERNEL_TAG = )py", "\"", tag, "\"\n");
  if (with_model_new) {
    absl::StrAppend(&s, R"py(class ModelNew(nn.Module):
    def forward(self, x, y):
        out = torch.empty_like(x)
        n = x.numel()
        add_kernel[(triton.cdiv(n, 1024),)](x, y, out, n, BLOCK=1024)
        return out
)py");
  }
  return s;
}

std::string Answer(const std::string& code, const std::string& explanation = "one program per 1024 elements") {
  return nlohmann::json{{"explanation", explanation}, {"code", code}}.dump();
}

ScriptedResponse Reply(WireFormat f, const std::string& content, int64_t in = 12, int64_t out = 7,
                       const std::string& stop = "") {
  if (f == WireFormat::kOpenAi) return OpenAiReply(content, in, out, "test-model", stop.empty() ? "stop" : stop);
  return AnthropicReply(content, in, out, "test-model", stop.empty() ? "end_turn" : stop);
}

llm::LlmConfig Config(WireFormat f, const std::string& base_url) {
  llm::LlmConfig c;
  c.provider = f == WireFormat::kOpenAi ? "openai" : "anthropic";
  c.model = "test-model";
  c.base_url = base_url;
  c.retry.max_attempts = 1;
  return c;
}

struct Rig {
  std::unique_ptr<FakeLlmServer> server;
  llm::LlmStack stack;
  std::unique_ptr<LlmKernelBrain> brain;
};

Rig MakeRig(WireFormat f, const std::function<void(llm::LlmConfig&)>& tweak = nullptr) {
  Rig rig;
  rig.server = FakeLlmServer::Start(f).value();
  llm::LlmConfig c = Config(f, rig.server->base_url());
  if (tweak) tweak(c);
  rig.stack = llm::MakeLlmStack(c).value();
  rig.brain = std::make_unique<LlmKernelBrain>(rig.stack.client, rig.stack.prompts, LlmBrainOptions{});
  return rig;
}

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

struct ProblemInputs {
  v1::Problem problem;
  v1::OpSignature signature;
  v1::GpuSpec gpu;
  ProblemInputs() {
    problem.set_name("add");
    problem.set_source(kProblem);
    signature.set_op_class("elementwise");
    auto* op = signature.add_ops();
    op->set_op("aten::add");
    op->add_inputs()->add_shape(4096);
    op->mutable_inputs(0)->set_dtype("float32");
    gpu.set_name("NVIDIA H200");
    gpu.set_arch("sm_90");
    gpu.set_sm_count(132);
  }
};

#define ANY_FORMAT() GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic)
const char* FormatName(WireFormat f) { return f == WireFormat::kOpenAi ? "openai" : "anthropic"; }

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
  auto r = rig.brain->ApplyFix(fr);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("v2"));  // the fences around the code are removed
  CHECK(r->expected_effect == "4x fewer programs; DRAM throughput 41% -> 80% (expected speedup 1.5x)");
  REQUIRE(r->moves.size() == 1);
  CHECK(r->moves[0] == "llm rewrite: Wider loads per program (variant 2)");

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

  // Malformed requests never reach the network.
  FixRequest bad;
  CHECK(absl::IsInvalidArgument(rig.brain->ApplyFix(bad).status()));
  CHECK(absl::IsInvalidArgument(rig.brain->FirstKernel({}).status()));
  CHECK(rig.server->request_count() == 1);
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

v1::GenerateRequest RoundRequest(const std::string& job, const std::string& brain, int workers) {
  ProblemInputs in;
  v1::GenerateRequest g;
  g.set_job_id(job);
  g.set_brain(brain);
  *g.mutable_problem() = in.problem;
  *g.mutable_op_signature() = in.signature;
  *g.mutable_gpu() = in.gpu;
  (*g.mutable_parents())["c0"].set_source(Kernel("parent"));
  g.mutable_plan()->set_round(1);
  for (int w = 0; w < workers; ++w) {
    auto* a = g.mutable_plan()->add_assignments();
    a->set_parent_kernel_id("c0");
    a->set_worker_index(w);
    a->mutable_prescription()->set_pattern_id(absl::StrCat("p", w));
    a->mutable_prescription()->set_title(absl::StrCat("fix ", w));
  }
  return g;
}

TEST_CASE("LLM brain: a spent budget is the optimization manager's RPC status", "[llm_brain][budget]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  // 19 tokens a call: the first call crosses 15 (a call is admitted while the job is
  // under budget), the next is refused before it is sent.
  Rig rig = MakeRig(f, [](llm::LlmConfig& c) { c.job_budget = {.max_tokens = 15}; });
  rig.server->SetDefault(Reply(f, Answer(Kernel("budget"))));
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = 1;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);

  v1::GenerateResponse first;
  REQUIRE(svc.DoGenerate(RoundRequest("job-b", "llm", 1), &first).ok());
  REQUIRE(first.kernels_size() == 1);
  CHECK(first.kernels(0).kernel().source() == Kernel("budget"));
  CHECK_THAT(first.kernels(0).prompt(), Catch::Contains("The fix to apply: fix 0"));
  CHECK(first.kernels(0).reply() == Answer(Kernel("budget")));
  CHECK(rig.stack.accountant->JobUsage("job-b").tokens() == 19);

  v1::GenerateResponse second;
  absl::Status s = svc.DoGenerate(RoundRequest("job-b", "llm", 3), &second);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("job-b"));
  CHECK(second.kernels_size() == 0);
  CHECK(rig.server->request_count() == 1);  // the refused call stops the round: nothing sent
  CHECK(rig.stack.accountant->JobUsage("job-b").refused == 1);
  // Another job still has its budget.
  v1::GenerateResponse other;
  CHECK(svc.DoGenerate(RoundRequest("job-c", "llm", 1), &other).ok());
  CHECK(other.kernels(0).has_kernel());
}

llm::LlmConfig& WithPrices(llm::LlmConfig& c) {
  c.prices = {.input_usd_per_mtok = 1000, .output_usd_per_mtok = 2000};
  return c;
}
// One default reply: 12 input and 7 output tokens, $0.026 at WithPrices.
constexpr int64_t kCallTokens = 19;
constexpr double kCallCost = (12 * 1000.0 + 7 * 2000.0) / 1e6;

TEST_CASE("LLM brain: the request's LLM budget bounds its calls, the reply counts them",
          "[llm_brain][budget]") {
  const WireFormat f = ANY_FORMAT();
  INFO(FormatName(f));
  Rig rig = MakeRig(f, [](llm::LlmConfig& c) { WithPrices(c); });  // no configured budget
  rig.server->SetDefault(Reply(f, Answer(Kernel("metered"))));
  OptimizationManagerOptions mo;
  mo.max_parallel_workers = 1;
  OptimizationManagerServiceImpl svc(mo, rig.brain.get(), nullptr, nullptr);

  // No limit in the request: three calls, all reported.
  v1::GenerateResponse open;
  REQUIRE(svc.DoGenerate(RoundRequest("job-m", "llm", 3), &open).ok());
  CHECK(open.llm_usage().calls() == 3);
  CHECK(open.llm_usage().input_tokens() == 3 * 12);
  CHECK(open.llm_usage().output_tokens() == 3 * 7);
  CHECK(open.llm_usage().cost_usd() == Approx(3 * kCallCost));
  CHECK(rig.server->request_count() == 3);

  // 30 tokens left: the 2nd call crosses the line, the 3rd is refused and never sent.
  v1::GenerateRequest tokens = RoundRequest("job-m", "llm", 3);
  tokens.set_llm_tokens_left(30);
  v1::GenerateResponse partial;
  absl::Status s = svc.DoGenerate(tokens, &partial);
  REQUIRE(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("job job-m"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("38 of 30 tokens"));
  CHECK(rig.server->request_count() == 5);
  std::optional<v1::LlmUsage> spent = llm::LlmUsageOf(s);
  REQUIRE(spent.has_value());
  CHECK(spent->calls() == 2);
  CHECK(spent->input_tokens() + spent->output_tokens() == 2 * kCallTokens);
  CHECK(spent->cost_usd() == Approx(2 * kCallCost));
  CHECK(partial.llm_usage().calls() == 2);
  // The Accountant saw every call; the per-request limit is not a job budget.
  CHECK(rig.stack.accountant->JobUsage("job-m").calls == 5);

  // Nothing left: refused before anything is sent; no usage to report.
  v1::GenerateRequest none = RoundRequest("job-m", "llm", 2);
  none.set_llm_tokens_left(0);
  v1::GenerateResponse nothing;
  s = svc.DoGenerate(none, &nothing);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_FALSE(llm::LlmUsageOf(s).has_value());
  CHECK(rig.server->request_count() == 5);

  // A cost limit: $0.03 admits two calls of $0.026.
  v1::GenerateRequest cost = RoundRequest("job-m", "llm", 3);
  cost.set_llm_cost_usd_left(0.03);
  v1::GenerateResponse costly;
  s = svc.DoGenerate(cost, &costly);
  CHECK(absl::IsResourceExhausted(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("LLM cost budget"));
  REQUIRE(llm::LlmUsageOf(s).has_value());
  CHECK(llm::LlmUsageOf(s)->calls() == 2);
  CHECK(rig.server->request_count() == 7);

  // Enough left: OK, and the usage is in the reply.
  v1::GenerateRequest plenty = RoundRequest("job-m", "llm", 2);
  plenty.set_llm_tokens_left(1000);
  plenty.set_llm_cost_usd_left(1.0);
  v1::GenerateResponse fine;
  REQUIRE(svc.DoGenerate(plenty, &fine).ok());
  CHECK(fine.llm_usage().calls() == 2);
  CHECK(fine.kernels(0).has_kernel());
}

TEST_CASE("LLM brain over gRPC: a refused Generate's usage reaches the coordinator's client",
          "[llm_brain][budget]") {
  Rig rig = MakeRig(WireFormat::kOpenAi, [](llm::LlmConfig& c) { WithPrices(c); });
  rig.server->SetDefault(OpenAiReply(Answer(Kernel("over-grpc"))));
  HeuristicBrain heuristic(TemplateLibrary::Embedded().value());
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  mo.max_parallel_workers = 1;
  BrainRouter router("heuristic", nullptr);
  router.Add("heuristic",
             std::make_unique<OptimizationManagerServiceImpl>(mo, &heuristic, nullptr, nullptr));
  router.Add("llm",
             std::make_unique<OptimizationManagerServiceImpl>(mo, rig.brain.get(), nullptr, nullptr));
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&router);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  const std::string address = absl::StrCat("127.0.0.1:", port);
  // The coordinator's client for the loop services (all four pointed at the manager).
  auto loop = GrpcLoopServices::Create({address, address, address, address}, ChannelOptions{},
                                       "", absl::Seconds(30), absl::Seconds(30));
  REQUIRE(loop.ok());

  v1::GenerateRequest ok_request = RoundRequest("job-g", "llm", 2);
  ok_request.set_llm_tokens_left(1000);
  absl::StatusOr<v1::GenerateResponse> ok = (*loop)->Generate(ok_request, nullptr);
  REQUIRE(ok.ok());
  CHECK(ok->llm_usage().calls() == 2);
  CHECK(ok->llm_usage().cost_usd() == Approx(2 * kCallCost));

  v1::GenerateRequest spent_request = RoundRequest("job-g", "llm", 3);
  spent_request.set_llm_tokens_left(kCallTokens);  // one call, then refused
  absl::StatusOr<v1::GenerateResponse> spent = (*loop)->Generate(spent_request, nullptr);
  REQUIRE(absl::IsResourceExhausted(spent.status()));
  CHECK_THAT(std::string(spent.status().message()), Catch::Contains("optimization manager"));
  std::optional<v1::LlmUsage> usage = llm::LlmUsageOf(spent.status());
  REQUIRE(usage.has_value());
  CHECK(usage->calls() == 1);
  CHECK(usage->input_tokens() == 12);
  CHECK(usage->output_tokens() == 7);
  CHECK(usage->cost_usd() == Approx(kCallCost));
  CHECK(rig.server->request_count() == 3);

  // The heuristic brain makes no LLM call: a spent LLM budget does not stop it.
  v1::GenerateRequest heuristic_request = RoundRequest("job-g", "heuristic", 1);
  heuristic_request.set_llm_tokens_left(0);
  absl::StatusOr<v1::GenerateResponse> h = (*loop)->Generate(heuristic_request, nullptr);
  REQUIRE(h.ok());
  CHECK(h->llm_usage().calls() == 0);
  CHECK(rig.server->request_count() == 3);
  server->Shutdown();
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

TEST_CASE("BrainRouter: brains by name, aliases, unknown names", "[llm_brain][router]") {
  Rig rig = MakeRig(WireFormat::kOpenAi);
  rig.server->SetDefault(OpenAiReply(Answer(Kernel("routed"))));
  HeuristicBrain heuristic(TemplateLibrary::Embedded().value());
  OptimizationManagerOptions mo;
  mo.check_sources = false;
  BrainRouter router("heuristic", nullptr);
  router.Add("heuristic", std::make_unique<OptimizationManagerServiceImpl>(mo, &heuristic, nullptr, nullptr));
  router.Add("llm", std::make_unique<OptimizationManagerServiceImpl>(mo, rig.brain.get(), nullptr, nullptr),
             {"openai"});
  CHECK(router.Names() == std::vector<std::string>{"heuristic", "llm", "openai"});

  for (const char* name : {"llm", "openai"}) {
    v1::GenerateResponse out;
    REQUIRE(router.DoGenerate(RoundRequest("job-r", name, 1), &out).ok());
    REQUIRE(out.kernels_size() == 1);
    INFO(out.kernels(0).error());
    CHECK(out.kernels(0).kernel().origin() == "brain:llm");
  }
  CHECK(rig.server->request_count() == 2);

  v1::GenerateResponse out;
  absl::Status s = router.DoGenerate(RoundRequest("job-r", "gpt-9", 1), &out);
  CHECK(absl::IsInvalidArgument(s));
  CHECK_THAT(std::string(s.message()), Catch::Contains("unknown brain 'gpt-9'"));
  CHECK_THAT(std::string(s.message()), Catch::Contains("heuristic, llm, openai"));
  CHECK(rig.server->request_count() == 2);
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
