// The prompt and the replies of an LLM call that failed, carried beside its error.
//
// A brain whose model answered only with unusable replies returns an error, not a
// result, yet the job's record must keep what was asked and answered. So they ride on
// the absl::Status as a payload inside the process (the optimization manager copies them
// into GeneratedKernel.prompt / .reply, which the coordinator stores as artifacts).
//
// Pure functions; thread-safe.
#ifndef KAGENT_COMMON_LLM_TRANSCRIPT_STATUS_H_
#define KAGENT_COMMON_LLM_TRANSCRIPT_STATUS_H_

#include <optional>
#include <string>

#include "absl/status/status.h"

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

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_TRANSCRIPT_STATUS_H_
