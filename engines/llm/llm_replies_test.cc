// LlmKernelBrain against replies as models really write them, from loopback servers in
// the shapes of vLLM, SGLang and Anthropic (testing/llm_test_rig.h): a kernel in a
// ```python block instead of JSON, <think> blocks in the content, vLLM's
// `reasoning_content`, Anthropic's `thinking` blocks, and several JSON objects in one reply.
#include <catch2/catch.hpp>

#include <string>

#include "absl/strings/str_cat.h"
#include "engines/llm/llm_brain.h"
#include "engines/llm/prompt_values.h"
#include "engines/llm/testing/llm_test_rig.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

using llm::testing::WireFormat;
using llm_testing::AnthropicThinkingReply;
using llm_testing::Answer;
using llm_testing::Kernel;
using llm_testing::MakeRig;
using llm_testing::MarkdownAnswer;
using llm_testing::ProblemInputs;
using llm_testing::Rig;
using llm_testing::SglangReply;
using llm_testing::VllmReply;

absl::StatusOr<BrainResult> FirstKernel(Rig& rig) {
  ProblemInputs in;
  return rig.brain->FirstKernel({&in.problem, &in.signature, &in.gpu});
}

TEST_CASE("FindFencedKernel: the block that defines ModelNew, and the prose around it",
          "[llm_replies]") {
  auto k = llm_engine::FindFencedKernel(MarkdownAnswer(Kernel("md")));
  REQUIRE(k.has_value());
  CHECK(k->code == Kernel("md"));
  CHECK(k->explanation ==
        "Here is the kernel with one program per 1024 elements.\n\nIt masks the tail, so any "
        "n works.");
  // A block without ModelNew (a usage example) is passed over for a later one.
  auto second = llm_engine::FindFencedKernel(
      absl::StrCat("Usage:\n```python\nm = ModelNew()\n```\nThe file:\n```py\n", Kernel("two"),
                   "```\n"));
  REQUIRE(second.has_value());
  CHECK(second->code == Kernel("two"));
  // An unclosed block (cut off) runs to the end.
  auto open = llm_engine::FindFencedKernel(absl::StrCat("```python\n", Kernel("open")));
  REQUIRE(open.has_value());
  CHECK(open->code == Kernel("open"));
  CHECK_FALSE(llm_engine::FindFencedKernel("```python\nclass Model(nn.Module): pass\n```").has_value());
  CHECK_FALSE(llm_engine::FindFencedKernel(Kernel("bare")).has_value());  // no fence
}

TEST_CASE("LLM brain: a kernel in a ```python block is a valid rewrite", "[llm_replies]") {
  const WireFormat f = GENERATE(WireFormat::kOpenAi, WireFormat::kAnthropic);
  Rig rig = MakeRig(f);
  rig.server->Enqueue(llm_testing::Reply(f, MarkdownAnswer(Kernel("markdown"))));
  auto r = FirstKernel(rig);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("markdown"));
  CHECK(r->expected_effect ==
        "Here is the kernel with one program per 1024 elements.\n\nIt masks the tail, so any "
        "n works.");
  CHECK(r->reply == MarkdownAnswer(Kernel("markdown")));
  CHECK(rig.server->request_count() == 1);  // no re-ask
}

TEST_CASE("LLM brain: a JSON object with the keys wins over a fenced block and other objects",
          "[llm_replies]") {
  Rig rig = MakeRig(WireFormat::kOpenAi);
  const std::string reply =
      absl::StrCat("The current config is {\"BLOCK\": 1024}.\n```python\n", Kernel("fenced"),
                   "```\nAs asked:\n", Answer(Kernel("json")));
  rig.server->Enqueue(SglangReply(reply));
  auto r = FirstKernel(rig);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("json"));
  CHECK(rig.server->request_count() == 1);
}

TEST_CASE("LLM brain: <think> blocks in the content are not the answer", "[llm_replies]") {
  Rig rig = MakeRig(WireFormat::kOpenAi);
  // The reasoning holds a draft object with the keys; the answer comes after it.
  const std::string content =
      absl::StrCat("<think>Draft: ", Answer(Kernel("draft")), " -- no, mask the tail.</think>\n",
                   Answer(Kernel("final")));
  rig.server->Enqueue(VllmReply(content));
  auto r = FirstKernel(rig);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("final"));
  CHECK(rig.server->request_count() == 1);  // no re-ask
}

TEST_CASE("LLM brain: vLLM's reasoning_content is read apart and never parsed", "[llm_replies]") {
  Rig rig = MakeRig(WireFormat::kOpenAi);
  rig.server->Enqueue(VllmReply(Answer(Kernel("answer")),
                                absl::StrCat("Maybe this: ", Answer(Kernel("reasoned")))));
  llm::ChatRequest ask;
  ask.messages.push_back({llm::Role::kUser, "a kernel"});
  auto direct = rig.stack.client->Chat(ask);
  REQUIRE(direct.ok());
  CHECK(direct->content == Answer(Kernel("answer")));
  CHECK(direct->reasoning == absl::StrCat("Maybe this: ", Answer(Kernel("reasoned"))));

  // Through the brain: the answer is the content's kernel, even when the content is empty
  // of JSON and only the reasoning has an object (then it is asked again).
  rig.server->Enqueue(VllmReply("", Answer(Kernel("reasoned"))));
  rig.server->Enqueue(VllmReply(Answer(Kernel("second"))));
  auto r = FirstKernel(rig);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("second"));
  CHECK(rig.server->request_count() == 3);
}

TEST_CASE("LLM brain: Anthropic's thinking blocks are reasoning, not the answer",
          "[llm_replies]") {
  Rig rig = MakeRig(WireFormat::kAnthropic);
  rig.server->Enqueue(AnthropicThinkingReply(absl::StrCat("Try ", Answer(Kernel("thought"))),
                                             MarkdownAnswer(Kernel("said"))));
  llm::ChatRequest ask;
  ask.messages.push_back({llm::Role::kUser, "a kernel"});
  auto direct = rig.stack.client->Chat(ask);
  REQUIRE(direct.ok());
  CHECK(direct->content == MarkdownAnswer(Kernel("said")));
  CHECK(direct->reasoning == absl::StrCat("Try ", Answer(Kernel("thought"))));

  rig.server->Enqueue(AnthropicThinkingReply(absl::StrCat("Try ", Answer(Kernel("thought"))),
                                             MarkdownAnswer(Kernel("said"))));
  auto r = FirstKernel(rig);
  REQUIRE(r.ok());
  CHECK(r->kernel.source() == Kernel("said"));
}

}  // namespace
}  // namespace kagent
