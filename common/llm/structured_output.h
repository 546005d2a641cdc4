// Structured (JSON) output from LLM replies.
//
// Models asked for JSON often wrap it in ```json fences, add prose around it, leave
// trailing commas or // comments, put raw newlines inside strings, or stop mid-object at
// the token limit. ExtractJsonObject tolerates all of these; ChatForJson asks again, with
// a follow-up message saying what was wrong, when a reply still cannot be used.
//
// Truncated replies are cut back to the last complete member and closed; a partial
// string or number is never kept, so a truncated reply either lacks keys (and is asked
// again) or holds only values the model finished.
#ifndef KAGENT_COMMON_LLM_STRUCTURED_OUTPUT_H_
#define KAGENT_COMMON_LLM_STRUCTURED_OUTPUT_H_

#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/llm/llm_client.h"
#include "nlohmann/json.hpp"

namespace kagent::llm {

struct JsonExtraction {
  nlohmann::json value;  // always an object
  // Comments, trailing commas or raw control characters in strings were fixed up.
  bool repaired = false;
  // The object was unterminated and was cut back to its last complete member.
  bool truncated = false;
};

// Finds the first JSON object in `text` (fenced blocks first, then the raw text), after
// StripThinking. INVALID_ARGUMENT with the reason when there is none that can be parsed.
absl::StatusOr<JsonExtraction> ExtractJsonObject(absl::string_view text);

// The same, but the first object that has every key of `required` wins over objects
// before it (an example or a sketch the model wrote first); when none has them all, the
// first object (the caller's ValidateRequiredKeys names what it lacks). The members of an
// object are not tried as objects of their own.
absl::StatusOr<JsonExtraction> ExtractJsonObject(absl::string_view text,
                                                 const std::vector<std::string>& required);

// `text` without reasoning models' <think>...</think> blocks: every closed block is
// removed; an unclosed one runs to the end (the reply was cut off while thinking); a
// "</think>" before any "<think>" (the chat template opened the block in the prompt)
// drops everything up to it.
std::string StripThinking(absl::string_view text);

// INVALID_ARGUMENT naming every key of `required` missing from the object `value`.
absl::Status ValidateRequiredKeys(const nlohmann::json& value,
                                  const std::vector<std::string>& required);

struct StructuredChatOptions {
  std::vector<std::string> required_keys;
  // Replies requested in all (the first included). Must be >= 1.
  int max_attempts = 3;
  // When set, a reply with no JSON object holding the required keys is given to it
  // (without its <think> blocks); a value it returns that has the required keys is the
  // answer. For replies the caller accepts in another shape (a fenced code block).
  std::function<std::optional<nlohmann::json>(absl::string_view reply)> fallback;
  // When set, the content of every reply received is appended, in order, also when the
  // call fails for want of a usable one (so the caller can keep the record).
  std::vector<std::string>* replies = nullptr;
};

struct StructuredChatResult {
  nlohmann::json value;
  // The reply the value came from.
  ChatResponse response;
  // Replies requested (1 when the first was usable).
  int attempts = 0;
  // Usage summed over every reply requested.
  Usage usage;
  bool repaired = false;
  bool truncated = false;
};

// Sends `request`, extracts a JSON object with the required keys from the reply; when
// that fails, appends the reply and a user message explaining what was wrong and asks
// again, up to options.max_attempts replies. Errors from the client are returned as they
// are (no re-ask). INTERNAL when no reply was usable, with the last reason.
// `client` must outlive the call; thread-safety is the client's.
absl::StatusOr<StructuredChatResult> ChatForJson(LlmClient& client, const ChatRequest& request,
                                                 const StructuredChatOptions& options);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_STRUCTURED_OUTPUT_H_
