#include "common/llm/api_key.h"

#include <cstdlib>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"

namespace kagent::llm {

absl::StatusOr<std::string> LoadApiKey(const ApiKeySource& source) {
  if (source.env.empty() && source.file.empty()) return std::string();
  if (!source.env.empty()) {
    const char* value = std::getenv(source.env.c_str());
    if (value != nullptr) {
      std::string key(absl::StripAsciiWhitespace(value));
      if (!key.empty()) return key;
    }
    if (source.file.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "API key environment variable ", source.env, " is not set or is empty"));
    }
  }
  std::ifstream in(source.file, std::ios::binary);
  if (!in) {
    return absl::FailedPreconditionError(
        absl::StrCat("cannot read API key file ", source.file));
  }
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string key(absl::StripAsciiWhitespace(buffer.str()));
  if (key.empty()) {
    return absl::FailedPreconditionError(absl::StrCat("API key file ", source.file, " is empty"));
  }
  if (key.find_first_of("\r\n") != std::string::npos) {
    return absl::FailedPreconditionError(
        absl::StrCat("API key file ", source.file, " holds more than one line"));
  }
  return key;
}

std::string RedactSecret(absl::string_view text, absl::string_view secret) {
  if (secret.size() < 4) return std::string(text);
  return absl::StrReplaceAll(text, {{secret, "[redacted]"}});
}

}  // namespace kagent::llm
