// Which of kagent's agents ask the LLM, and with which model: the value of kagentd's
// --llm-agents, e.g. "rewrite,prescribe=qwen-small,reflect,plan,narrate".
//
// The agents: "rewrite" (the optimization manager's LLM brain: first kernels and
// rewrites), "prescribe" (the analyzer ranks the database's candidates), "reflect" (the
// orchestrator's reflexions), "plan" (the orchestrator's round plan: which beam kernel
// gets which offered fix) and "narrate" (the judge's narrative). An agent left out
// keeps its heuristic brain. "agent=model" gives the agent its own model instead of the
// configuration's `model`; the rewrite may name several, "rewrite=model-a|model-b", over
// which a round's candidates are spread (LlmBrainOptions.models).
//
// A job may choose among these per job (JobConfig.llm_agents; engines/llm_agent_choice.h).
//
// Pure; thread-safe.
#ifndef KAGENT_ENGINES_LLM_LLM_AGENTS_H_
#define KAGENT_ENGINES_LLM_LLM_AGENTS_H_

#include <map>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"

namespace kagent {

// Every agent, the default of --llm-agents.
inline constexpr char kAllLlmAgents[] = "rewrite,prescribe,reflect,plan,narrate";

struct LlmAgents {
  // The agents that ask the LLM, each with its model ("" for the configuration's).
  std::map<std::string, std::string> models;

  bool Uses(const std::string& agent) const { return models.count(agent) > 0; }
  // The agent's model; "" when it uses the configuration's or is not listed.
  std::string Model(const std::string& agent) const;
};

// OK when `agent` is one of kAllLlmAgents; else INVALID_ARGUMENT "<flag>: unknown agent
// 'x'; the agents are rewrite,...": the one check of every list of agents (this server's
// --llm-agents, a coordinator's --offered-llm-agents, a job's kagent submit --llm-agents).
// Inline: the coordinator and the CLI check names without linking the LLM brain.
inline absl::Status CheckLlmAgentName(absl::string_view agent, absl::string_view flag) {
  for (absl::string_view known : absl::StrSplit(kAllLlmAgents, ',')) {
    if (agent == known) return absl::OkStatus();
  }
  return absl::InvalidArgumentError(
      absl::StrCat(flag, ": unknown agent '", agent, "'; the agents are ", kAllLlmAgents));
}

// INVALID_ARGUMENT naming the entry for an unknown agent (listing the known ones), an
// agent listed twice, an empty entry, an empty model after "=" or between '|', or several
// models for an agent other than the rewrite. An empty `spec` lists no agent.
absl::StatusOr<LlmAgents> ParseLlmAgents(absl::string_view spec);

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_LLM_AGENTS_H_
