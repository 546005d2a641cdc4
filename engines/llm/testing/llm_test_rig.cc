#include "engines/llm/testing/llm_test_rig.h"

#include "absl/strings/str_cat.h"
#include "nlohmann/json.hpp"

namespace kagent::llm_testing {

using llm::testing::AnthropicReply;
using llm::testing::OpenAiReply;

const char kProblem[] = R"py(import torch
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
std::string Kernel(const std::string& tag, bool with_model_new) {
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

std::string Answer(const std::string& code, const std::string& explanation) {
  return nlohmann::json{{"explanation", explanation}, {"code", code}}.dump();
}

ScriptedResponse Reply(WireFormat f, const std::string& content, int64_t in, int64_t out,
                       const std::string& stop) {
  if (f == WireFormat::kOpenAi) return OpenAiReply(content, in, out, "test-model", stop.empty() ? "stop" : stop);
  return AnthropicReply(content, in, out, "test-model", stop.empty() ? "end_turn" : stop);
}

namespace {

ScriptedResponse JsonResponse(int status, const nlohmann::json& body) {
  ScriptedResponse r;
  r.status = status;
  r.body = body.dump();
  r.headers.emplace_back("Content-Type", "application/json");
  return r;
}

nlohmann::json OpenAiShaped(const std::string& content, const nlohmann::json& reasoning) {
  return {{"id", "chatcmpl-7f3a"},
          {"object", "chat.completion"},
          {"created", 1764900000},
          {"model", "test-model"},
          {"choices", nlohmann::json::array({{{"index", 0},
                                               {"message",
                                                {{"role", "assistant"},
                                                 {"content", content},
                                                 {"reasoning_content", reasoning},
                                                 {"tool_calls", nlohmann::json::array()}}},
                                               {"logprobs", nullptr},
                                               {"finish_reason", "stop"},
                                               {"stop_reason", nullptr}}})},
          {"usage", {{"prompt_tokens", 12}, {"total_tokens", 19}, {"completion_tokens", 7},
                     {"prompt_tokens_details", nullptr}}},
          {"prompt_logprobs", nullptr}};
}

}  // namespace

ScriptedResponse VllmReply(const std::string& content, const std::string& reasoning) {
  return JsonResponse(200, OpenAiShaped(content, reasoning.empty() ? nlohmann::json(nullptr)
                                                                   : nlohmann::json(reasoning)));
}

ScriptedResponse VllmModelNotFound(const std::string& model) {
  return JsonResponse(404, {{"object", "error"},
                            {"message", absl::StrCat("The model `", model, "` does not exist.")},
                            {"type", "NotFoundError"},
                            {"param", nullptr},
                            {"code", 404}});
}

ScriptedResponse VllmBadRequest(const std::string& message) {
  return JsonResponse(400, {{"object", "error"},
                            {"message", message},
                            {"type", "BadRequestError"},
                            {"param", nullptr},
                            {"code", 400}});
}

ScriptedResponse SglangReply(const std::string& content) {
  nlohmann::json body = OpenAiShaped(content, nullptr);
  body.erase("prompt_logprobs");
  body["choices"][0].erase("stop_reason");
  body["choices"][0]["matched_stop"] = 151645;
  return JsonResponse(200, body);
}

ScriptedResponse AnthropicThinkingReply(const std::string& thinking, const std::string& text) {
  return JsonResponse(
      200, {{"id", "msg_01"},
            {"type", "message"},
            {"role", "assistant"},
            {"model", "test-model"},
            {"content", nlohmann::json::array(
                            {{{"type", "thinking"}, {"thinking", thinking}, {"signature", "EqQBCgIYAh"}},
                             {{"type", "text"}, {"text", text}}})},
            {"stop_reason", "end_turn"},
            {"stop_sequence", nullptr},
            {"usage", {{"input_tokens", 12}, {"output_tokens", 7}}}});
}

std::string MarkdownAnswer(const std::string& code) {
  return absl::StrCat("Here is the kernel with one program per 1024 elements.\n\n```python\n",
                      code, "```\n\nIt masks the tail, so any n works.\n");
}

llm::LlmConfig Config(WireFormat f, const std::string& base_url) {
  llm::LlmConfig c;
  c.provider = f == WireFormat::kOpenAi ? "openai" : "anthropic";
  c.model = "test-model";
  c.base_url = base_url;
  c.retry.max_attempts = 1;
  return c;
}

llm::LlmConfig& WithPrices(llm::LlmConfig& c) {
  c.prices = {.input_usd_per_mtok = 1000, .output_usd_per_mtok = 2000};
  return c;
}
Rig MakeRig(WireFormat f, const std::function<void(llm::LlmConfig&)>& tweak) {
  Rig rig;
  rig.server = FakeLlmServer::Start(f).value();
  llm::LlmConfig c = Config(f, rig.server->base_url());
  if (tweak) tweak(c);
  rig.stack = llm::MakeLlmStack(c).value();
  rig.brain = std::make_unique<LlmKernelBrain>(rig.stack.client, rig.stack.prompts, LlmBrainOptions{});
  return rig;
}

ProblemInputs::ProblemInputs() {
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

const char* FormatName(WireFormat f) { return f == WireFormat::kOpenAi ? "openai" : "anthropic"; }

}  // namespace kagent::llm_testing
