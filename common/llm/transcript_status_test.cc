// The prompt and replies of a failed LLM call, carried on its status.
#include "common/llm/transcript_status.h"

#include <catch2/catch.hpp>

#include "common/llm/endpoint_failure.h"

namespace kagent::llm {
namespace {

TEST_CASE("an LLM transcript rides on an error status", "[transcript]") {
  absl::Status failed = absl::FailedPreconditionError("the model's code is unusable");
  CHECK(!LlmTranscriptOf(failed).has_value());
  AttachLlmTranscript({"[user]\nwrite a kernel", "no\n\xff"}, &failed);
  // Prefixing the message keeps it.
  std::optional<LlmTranscript> t = LlmTranscriptOf(PrefixMessage("llm brain: ", failed));
  REQUIRE(t.has_value());
  CHECK(t->prompt == "[user]\nwrite a kernel");
  CHECK(t->reply == "no\n\xef\xbf\xbd");  // invalid UTF-8 replaced, not refused

  // Nothing on an OK status or for an empty transcript; a payload that does not parse
  // is no transcript.
  absl::Status ok;
  AttachLlmTranscript({"p", "r"}, &ok);
  CHECK(ok.ok());
  absl::Status other = absl::InternalError("x");
  AttachLlmTranscript({}, &other);
  CHECK(!LlmTranscriptOf(other).has_value());
  other.SetPayload(kLlmTranscriptPayloadUrl, absl::Cord("{not json"));
  CHECK(!LlmTranscriptOf(other).has_value());
}

TEST_CASE("a failed agent call records its fallback and its exchange", "[transcript]") {
  absl::Status failed = absl::InternalError("llm prescribe: the reply was refused");
  v1::AgentExchange bare;
  RecordAgentFallback(failed, &bare);
  CHECK(bare.fallback() == "llm prescribe: the reply was refused");
  CHECK(bare.prompt().empty());
  CHECK(bare.reply().empty());

  AttachLlmTranscript({"[user] rank these", "[reply 1] {}\n[reply 2] nope"}, &failed);
  v1::AgentExchange full;
  full.set_agent("prescribe");
  RecordAgentFallback(failed, &full);
  CHECK(full.agent() == "prescribe");
  CHECK(full.fallback() == "llm prescribe: the reply was refused");
  CHECK(full.prompt() == "[user] rank these");
  CHECK(full.reply() == "[reply 1] {}\n[reply 2] nope");
}

}  // namespace
}  // namespace kagent::llm
