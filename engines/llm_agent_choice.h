// A job's own choice of LLM agents (JobConfig.llm_agents, which the coordinator copies
// into the requests it sends the judge, the analyzer and the orchestrator): a service
// whose agent is on the LLM asks the LLM for a job's call only when the job chose that
// agent or chose none. The agents' names are those of engines/llm/llm_agents.h
// ("prescribe", "reflect", "plan", "narrate", "rewrite").
//
// Pure; thread-safe.
#ifndef KAGENT_ENGINES_LLM_AGENT_CHOICE_H_
#define KAGENT_ENGINES_LLM_AGENT_CHOICE_H_

#include <algorithm>

#include "absl/strings/string_view.h"

namespace kagent {

// Whether a job whose choice of agents is `job_agents` (a range of strings, e.g. a
// request's `llm_agents`) wants `agent` on the LLM: true when the choice is empty (the
// server's configured set) or lists `agent`.
template <typename Names>
bool JobWantsLlmAgent(const Names& job_agents, absl::string_view agent) {
  return job_agents.empty() ||
         std::find(job_agents.begin(), job_agents.end(), agent) != job_agents.end();
}

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_AGENT_CHOICE_H_
