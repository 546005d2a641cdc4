// The prompt and the replies of an LLM call that failed, carried beside its error.
//
// A brain whose model answered only with unusable replies returns an error, not a
// result, yet the job's record must keep what was asked and answered. So they ride on
// the absl::Status as a payload inside the process (the optimization manager copies them
// into GeneratedKernel.prompt / .reply, which the coordinator stores as artifacts).
//
// RecordAgentFallback puts a failed agent call's message and exchange on the
// AgentExchange that the job's record keeps (the prescribe, reflect, plan and narrate
// agents fall back to their heuristic the same way).
//
// Pure functions; thread-safe.
#ifndef KAGENT_COMMON_LLM_TRANSCRIPT_STATUS_H_
#define KAGENT_COMMON_LLM_TRANSCRIPT_STATUS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"
#include "kagent/v1/agent_exchange.pb.h"

namespace kagent::llm {

// The absl::Status payload's type URL.
inline constexpr char kLlmTranscriptPayloadUrl[] = "kagent.dev/llm-transcript";

struct LlmTranscript {
  std::string prompt;  // the conversation sent, with role headers
  std::string reply;   // every reply received, in order
};

// Attaches `transcript` to a non-OK `status` (replacing an earlier one). Nothing for an
// OK status or an empty transcript.
void AttachLlmTranscript(const LlmTranscript& transcript, absl::Status* status);

// The transcript attached to `status`, if any (and if it parses).
std::optional<LlmTranscript> LlmTranscriptOf(const absl::Status& status);

// Records on `exchange` that the agent's model answer was not used: `failure`'s message
// as its fallback and, when `failure` carries a transcript, the prompt and the replies.
// `exchange` must not be null; `failure` is an error.
void RecordAgentFallback(const absl::Status& failure, v1::AgentExchange* exchange);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_TRANSCRIPT_STATUS_H_
