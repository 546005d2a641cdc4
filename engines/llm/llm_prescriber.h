// LlmPrescriber: the analyzer's prescribe agent over a language model
// (engines/prescription_ranker.h).
//
// Renders the "prescribe" prompt template (docs/llm.md) with the GPU, the op class, the
// judge's diagnosis, the kernel's source, the database's candidates (each with its fix,
// expected speedup, knob changes and the prescriber's rationale) and the job's
// avoid-list, and asks through llm::ChatForJson for
//   {"prescriptions": [{"pattern_id", "rationale", "expected_effect", "knob_changes"}]}
// Every entry is checked against the candidates: a pattern id that is not one of them,
// a knob the pattern does not change, a knob value that is neither a number nor a
// string, an entry without a pattern id, or no entry at all refuses the whole reply
// (INTERNAL, with the exchange attached), and the analyzer returns the prescriber's
// ranking for that call. A repeated pattern keeps its first entry; at most max_results
// are returned, in the model's order.
//
// Accounting keys are the calling thread's LogContext (the analyzer sets the job and
// tenant). Thread-safe: immutable after construction; the client is thread-safe.
#ifndef KAGENT_ENGINES_LLM_LLM_PRESCRIBER_H_
#define KAGENT_ENGINES_LLM_LLM_PRESCRIBER_H_

#include <memory>
#include <string>
#include <vector>

#include "common/llm/llm_client.h"
#include "common/llm/prompt_templates.h"
#include "engines/llm/agent_call.h"
#include "engines/prescription_ranker.h"

namespace kagent {

class LlmPrescriber : public PrescriptionRanker {
 public:
  // `client` and `prompts` must not be null.
  LlmPrescriber(std::shared_ptr<llm::LlmClient> client,
                std::shared_ptr<const llm::PromptLibrary> prompts, llm_engine::AgentOptions options);

  absl::StatusOr<RankedPrescriptions> Rank(const kagent::v1::PrescribeRequest& request,
                                           const std::vector<kagent::v1::Prescription>& candidates,
                                           int max_results) override;
  std::string Name() const override { return options_.name; }

 private:
  const std::shared_ptr<llm::LlmClient> client_;
  const std::shared_ptr<const llm::PromptLibrary> prompts_;
  const llm_engine::AgentOptions options_;
};

// {{candidate_patterns}}: one line per candidate, "id: title - fix; expected 1.3x; knob
// changes BLOCK_M=64, num_warps=8; template switch T; why the database matched it".
std::string DescribeCandidatePatterns(const std::vector<kagent::v1::Prescription>& candidates);

}  // namespace kagent

#endif  // KAGENT_ENGINES_LLM_LLM_PRESCRIBER_H_
