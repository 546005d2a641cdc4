// LlmReflexionWriter: the orchestrator's reflect agent over a language model
// (engines/reflexion_writer.h).
//
// Renders the "reflect" prompt template (docs/llm.md) with the parent's diagnosis, the
// fix asked for and its expected effect, the measured result (the verdict and the gate's
// reason or the harness's log tail, the medians, the speedup against the noise, the
// ratios to eager and torch.compile, the rewrite's fallback when it did not make the
// prescribed change, the heuristic reflexion's reading), the attempt's source, the
// database's next candidates and the job's earlier lessons, and asks through
// llm::ChatForJson for
//   {"fix_worked", "diagnosis_correct", "expected_vs_actual", "blame", "lessons",
//    "avoid", "try_next"}
// ("fix_worked", "blame" and "expected_vs_actual" required). The reply is refused
// (INTERNAL, with the exchange attached; the orchestrator keeps the heuristic reflexion)
// when "fix_worked" contradicts the measurement, "blame" is not "pattern", "rewrite" or
// "none", "try_next" names a pattern that is not among the candidates, or a field has the
// wrong type.
//
// Accounting keys are the calling thread's LogContext (the orchestrator sets the job and
// tenant). Thread-safe: immutable after construction; the client is thread-safe.
#ifndef KAGENT_ENGINES_LLM_LLM_REFLECTOR_H_
#define KAGENT_ENGINES_LLM_LLM_REFLECTOR_H_

#include <memory>
#include <string>

#include "common/llm/llm_client.h"
#include "common/llm/prompt_templates.h"
#include "engines/llm/agent_call.h"
#include "engines/reflexion_writer.h"

namespace kagent {

class LlmReflexionWriter : public ReflexionWriter {
 public:
  // `client` and `prompts` must not be null.
  LlmReflexionWriter(std::shared_ptr<llm::LlmClient> client,
                     std::shared_ptr<const llm::PromptLibrary> prompts,
                     llm_engine::AgentOptions options);

  // INVALID_ARGUMENT without an attempt, a parent or the facts; otherwise as above.
  absl::StatusOr<ReflexionDraft> Write(const ReflexionInput& input) override;
  std::string Name() const override { return options_.name; }

 private:
  const std::shared_ptr<llm::LlmClient> client_;
  const std::shared_ptr<const llm::PromptLibrary> prompts_;
  const llm_engine::AgentOptions options_;
};

// {{result}} of the reflect prompt: what was measured of `attempt` against `parent`, and
// the heuristic reflexion's reading (`facts`).
std::string DescribeAttemptResult(const kagent::v1::Candidate& parent,
                                  const kagent::v1::Candidate& attempt,
                                  const kagent::v1::Reflexion& facts);

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_LLM_REFLECTOR_H_
