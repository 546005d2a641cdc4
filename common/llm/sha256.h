// SHA-256 (FIPS 180-4), for stable content hashes such as cassette request keys. Not for
// secrets handling; no dependency beyond the standard library.
#ifndef KAGENT_COMMON_LLM_SHA256_H_
#define KAGENT_COMMON_LLM_SHA256_H_

#include <string>

#include "absl/strings/string_view.h"

namespace kagent::llm {

// Lower-case hex digest (64 characters) of `data`.
std::string Sha256Hex(absl::string_view data);

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_SHA256_H_
