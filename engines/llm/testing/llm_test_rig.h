// Test helpers for the LLM brain over the loopback FakeLlmServer
// (common/llm/testing/fake_llm_server.h): an elementwise-add problem, candidate sources
// in the shape the brain accepts, scripted replies in both wire formats, and a rig that
// holds a server, the LLM stack and an LlmKernelBrain. Used by the brain's own tests and
// by the tests of the services that run it (the optimization manager, the coordinator's
// loop client). Test-only; not thread-safe beyond what FakeLlmServer is.
#ifndef KAGENT_ENGINES_LLM_TESTING_LLM_TEST_RIG_H_
#define KAGENT_ENGINES_LLM_TESTING_LLM_TEST_RIG_H_

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "common/llm/factory.h"
#include "common/llm/testing/fake_llm_server.h"
#include "engines/llm/llm_brain.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/optimization_manager_service.pb.h"

namespace kagent::llm_testing {

using llm::testing::FakeLlmServer;
using llm::testing::ScriptedResponse;
using llm::testing::WireFormat;

// The problem: out = x + y over 4096 floats.
extern const char kProblem[];

// A candidate defining add_kernel (and ModelNew unless `with_model_new` is false);
// `tag` makes distinct sources.
std::string Kernel(const std::string& tag, bool with_model_new = true);

// The brain's JSON answer {"explanation", "code"}.
std::string Answer(const std::string& code,
                   const std::string& explanation = "one program per 1024 elements");

// A scripted reply of `content` in wire format `f` with the given token counts.
ScriptedResponse Reply(WireFormat f, const std::string& content, int64_t in = 12,
                       int64_t out = 7, const std::string& stop = "");

// Bodies as the servers platform teams run write them (loopback imitations):
//  - vLLM's /v1/chat/completions reply, with `reasoning_content` beside `content` when
//    `reasoning` is not empty (vLLM's reasoning parsers);
//  - vLLM's error bodies: 404 for a model it does not serve
//    ({"object":"error","message":"The model `x` does not exist.","type":"NotFoundError",
//    "param":null,"code":404}) and 400 (BadRequestError, e.g. a prompt over the context);
//  - SGLang's reply (its extra fields: matched_stop, reasoning_content null);
//  - Anthropic's /v1/messages reply with a `thinking` block before the text.
ScriptedResponse VllmReply(const std::string& content, const std::string& reasoning = "");
ScriptedResponse VllmModelNotFound(const std::string& model);
ScriptedResponse VllmBadRequest(const std::string& message);
ScriptedResponse SglangReply(const std::string& content);
ScriptedResponse AnthropicThinkingReply(const std::string& thinking, const std::string& text);

// A kernel answered as models often do: prose, then the file in a ```python block.
std::string MarkdownAnswer(const std::string& code);

// An LLM configuration for wire format `f` at `base_url` (one attempt, model "test-model").
llm::LlmConfig Config(WireFormat f, const std::string& base_url);

// Prices of 1000 / 2000 USD per million input / output tokens.
llm::LlmConfig& WithPrices(llm::LlmConfig& c);
// One default reply: 12 input and 7 output tokens, $0.026 at WithPrices.
inline constexpr int64_t kCallTokens = 19;
inline constexpr double kCallCost = (12 * 1000.0 + 7 * 2000.0) / 1e6;

// A started FakeLlmServer, the LLM stack pointed at it and a brain over that stack.
struct Rig {
  std::unique_ptr<FakeLlmServer> server;
  llm::LlmStack stack;
  std::unique_ptr<LlmKernelBrain> brain;
};
// `tweak` may change the configuration before the stack is made.
Rig MakeRig(WireFormat f, const std::function<void(llm::LlmConfig&)>& tweak = nullptr);

// The add problem with its op signature on an H200.
struct ProblemInputs {
  v1::Problem problem;
  v1::OpSignature signature;
  v1::GpuSpec gpu;
  ProblemInputs();
};

// A round of `workers` assignments on parent "c0" for `brain`, job `job`.
v1::GenerateRequest RoundRequest(const std::string& job, const std::string& brain, int workers);

const char* FormatName(WireFormat f);

}  // namespace kagent::llm_testing

#endif  // KAGENT_ENGINES_LLM_TESTING_LLM_TEST_RIG_H_
