#include "engines/llm/llm_agents.h"

#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_split.h"

namespace kagent {

std::string LlmAgents::Model(const std::string& agent) const {
  auto it = models.find(agent);
  return it == models.end() ? "" : it->second;
}

absl::StatusOr<LlmAgents> ParseLlmAgents(absl::string_view spec) {
  LlmAgents out;
  if (absl::StripAsciiWhitespace(spec).empty()) return out;
  for (absl::string_view raw : absl::StrSplit(spec, ',')) {
    absl::string_view entry = absl::StripAsciiWhitespace(raw);
    if (entry.empty()) {
      return absl::InvalidArgumentError(absl::StrCat("--llm-agents '", spec, "' has an empty entry"));
    }
    std::pair<std::string, std::string> kv = absl::StrSplit(entry, absl::MaxSplits('=', 1));
    std::string agent(absl::StripAsciiWhitespace(kv.first));
    std::string model(absl::StripAsciiWhitespace(kv.second));
    if (absl::Status known = CheckLlmAgentName(agent, "--llm-agents"); !known.ok()) return known;
    if (entry.find('=') != absl::string_view::npos && model.empty()) {
      return absl::InvalidArgumentError(
          absl::StrCat("--llm-agents: '", entry, "' names no model after '='"));
    }
    if (model.find('|') != std::string::npos) {
      if (agent != "rewrite") {
        return absl::InvalidArgumentError(
            absl::StrCat("--llm-agents: '", entry, "': only the rewrite takes several models"));
      }
      for (absl::string_view m : absl::StrSplit(model, '|')) {
        if (absl::StripAsciiWhitespace(m).empty()) {
          return absl::InvalidArgumentError(
              absl::StrCat("--llm-agents: '", entry, "' has an empty model between '|'"));
        }
      }
    }
    if (!out.models.emplace(agent, model).second) {
      return absl::InvalidArgumentError(absl::StrCat("--llm-agents: agent '", agent, "' is listed twice"));
    }
  }
  return out;
}

}  // namespace kagent
