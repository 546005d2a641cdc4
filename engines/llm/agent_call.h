// One question to a language model on behalf of an agent (the prescribe and reflect
// agents; the kernel brain shares the transcript format): the "system" template and the
// agent's own template rendered, asked through llm::ChatForJson for one JSON object with
// the agent's required keys, answered with the object and the record of the exchange.
//
// Every failure carries the exchange on its status (llm::AttachLlmTranscript): the
// prompt, and every reply received, so a caller that falls back to its heuristic still
// keeps what was asked and answered. The endpoint's failures are marked
// (llm::MarkEndpointFailure) and every message starts with "<name> <agent>: ".
//
// Pure functions over a thread-safe client and prompt library; thread-safe.
#ifndef KAGENT_ENGINES_LLM_AGENT_CALL_H_
#define KAGENT_ENGINES_LLM_AGENT_CALL_H_

#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/llm/llm_client.h"
#include "common/llm/prompt_templates.h"

namespace kagent::llm_engine {

// The options every LLM agent has.
struct AgentOptions {
  // For logs, error messages and AgentExchange.brain ("llm:openai", ...).
  std::string name = "llm";
  // Empty / 0 / unset: the client's configured model, max_tokens and temperature.
  std::string model{};
  int max_tokens = 0;
  std::optional<double> temperature{};
  // Replies ChatForJson may request (>= 1).
  int max_json_attempts = 2;
};

struct AgentAnswer {
  nlohmann::json value;  // the object with the required keys
  std::string prompt;    // Transcript() of the question
  std::string reply;     // the reply the object came from
};

// Asks `template_name` rendered with `values` under "system". The request's job and
// tenant are the calling thread's LogContext (accounting). Errors: the template's
// (INVALID_ARGUMENT for a missing value), the client's (with their codes), INTERNAL when
// no reply held a usable object; each with the exchange attached.
absl::StatusOr<AgentAnswer> AskAgent(llm::LlmClient& client, const llm::PromptLibrary& prompts,
                                     absl::string_view agent, absl::string_view template_name,
                                     const llm::PromptValues& values,
                                     const std::vector<std::string>& required_keys,
                                     const AgentOptions& options);

// The refusal of a usable-looking reply that the agent's checks reject: INTERNAL
// "<name> <agent>: the reply was refused: <why>", with `answer`'s exchange attached.
absl::Status RefuseReply(const AgentAnswer& answer, absl::string_view agent,
                         const AgentOptions& options, absl::string_view why);

// The conversation of `request` with [system] / [user] / [assistant] headers.
std::string Transcript(const llm::ChatRequest& request);

// Replies joined for the record: one as it is, several headed "[reply N]".
std::string JoinReplies(const std::vector<std::string>& replies);

}  // namespace kagent::llm_engine

#endif  // KAGENT_ENGINES_LLM_AGENT_CALL_H_
