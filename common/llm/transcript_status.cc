#include "common/llm/transcript_status.h"

#include <string>
#include <utility>

#include "absl/strings/cord.h"
#include "nlohmann/json.hpp"

namespace kagent::llm {

void AttachLlmTranscript(const LlmTranscript& transcript, absl::Status* status) {
  if (status == nullptr || status->ok()) return;
  if (transcript.prompt.empty() && transcript.reply.empty()) return;
  nlohmann::json body = {{"prompt", transcript.prompt}, {"reply", transcript.reply}};
  // Replies are model text: invalid UTF-8 is replaced rather than refused.
  status->SetPayload(kLlmTranscriptPayloadUrl,
                     absl::Cord(body.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace)));
}

std::optional<LlmTranscript> LlmTranscriptOf(const absl::Status& status) {
  auto payload = status.GetPayload(kLlmTranscriptPayloadUrl);
  if (!payload.has_value()) return std::nullopt;
  nlohmann::json body = nlohmann::json::parse(std::string(*payload), nullptr, false);
  if (body.is_discarded() || !body.is_object() || !body.value("prompt", nlohmann::json()).is_string() ||
      !body.value("reply", nlohmann::json()).is_string()) {
    return std::nullopt;
  }
  return LlmTranscript{body["prompt"].get<std::string>(), body["reply"].get<std::string>()};
}

void RecordAgentFallback(const absl::Status& failure, v1::AgentExchange* exchange) {
  exchange->set_fallback(std::string(failure.message()));
  if (std::optional<LlmTranscript> t = LlmTranscriptOf(failure)) {
    exchange->set_prompt(std::move(t->prompt));
    exchange->set_reply(std::move(t->reply));
  }
}

}  // namespace kagent::llm
