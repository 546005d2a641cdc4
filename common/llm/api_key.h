// Loading provider API keys from an environment variable or a file. Keys are secrets:
// callers keep them out of logs, status messages and cassettes (RedactSecret helps).
#ifndef KAGENT_COMMON_LLM_API_KEY_H_
#define KAGENT_COMMON_LLM_API_KEY_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kagent::llm {

struct ApiKeySource {
  // Name of an environment variable holding the key (e.g. "OPENAI_API_KEY").
  std::string env{};
  // Path of a file holding the key (surrounding whitespace is stripped).
  std::string file{};
};

// Returns the key: from `env` when it names a set, non-empty variable, else from `file`
// when given. Both empty: "" (no authentication; fine for local vLLM/llama.cpp servers).
// FAILED_PRECONDITION when a named source is missing or empty; the message names the
// variable or path, never a value.
absl::StatusOr<std::string> LoadApiKey(const ApiKeySource& source);

// `text` with every occurrence of `secret` replaced by "[redacted]" (no-op for secrets
// shorter than 4 characters, which cannot be told apart from ordinary text).
std::string RedactSecret(absl::string_view text, absl::string_view secret);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_API_KEY_H_
