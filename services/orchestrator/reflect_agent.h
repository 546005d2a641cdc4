// ReflectAgent: the orchestrator's Reflector with a ReflexionWriter (an LLM,
// engines/reflexion_writer.h) over the heuristic reflexion, which is the fallback per
// call.
//
// Every attempt first gets the heuristic reflexion (HeuristicReflector): its measured
// facts are final. With a writer, a request whose job chose "reflect" or chose no agents
// (ReflectRequest.llm_agents), a correct parent to compare with, and an attempt that
// is neither a duplicate nor an infrastructure error, the writer gets
// those facts, the job's memory and the database's next candidates (the prescriber's
// matches for the parent's report, at most kNextCandidates) and drafts the judgement;
// the draft is merged into the facts (MergeDraft). A failing writer (the endpoint, a
// spent budget, a refused reply) leaves the heuristic reflexion, with the reason in the
// response's exchange.
//
// Thread-safe when the writer is; the prescriber and writer are borrowed and must
// outlive the agent.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_REFLECT_AGENT_H_
#define KAGENT_SERVICES_ORCHESTRATOR_REFLECT_AGENT_H_

#include <memory>
#include <vector>

#include "engines/reflexion_writer.h"
#include "kernel_model/prescriber.h"
#include "services/orchestrator/heuristic_reflector.h"
#include "services/orchestrator/orchestrator_service.h"

namespace kagent {

inline constexpr int kNextCandidates = 8;

class ReflectAgent : public Reflector {
 public:
  // `prescriber` may be null (no target metrics, no candidates); `writer` may be null
  // (the heuristic reflexion alone).
  ReflectAgent(std::shared_ptr<const Prescriber> prescriber, ReflexionWriter* writer)
      : heuristic_(prescriber), prescriber_(std::move(prescriber)), writer_(writer) {}

  absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& request) override;

 private:
  HeuristicReflector heuristic_;
  std::shared_ptr<const Prescriber> prescriber_;
  ReflexionWriter* writer_;
};

// The draft merged into `facts` for an attempt of `pattern_id`: the lesson becomes the
// draft's expected-vs-actual, lessons and avoid notes followed by the facts' lesson
// ("measured: ..."); try_patterns become the draft's try_next when it names any; the
// verdict fields (fix_effective, speedups, diagnosis_correct) and the avoid-list stay the
// facts', except that a draft blaming the rewrite takes the pattern off avoid_patterns
// (and says so in the lesson). Nothing is ever added to avoid_patterns.
v1::Reflexion MergeDraft(const v1::Reflexion& facts, const ReflexionDraft& draft,
                         const std::string& pattern_id);

// The prescriber's matches for the parent's report (op class from the attempt's or the
// parent's op signature), best first, contradiction-free, at most `limit`. Empty when the
// prescriber is null or the report cannot be matched.
std::vector<v1::Prescription> NextCandidates(const Prescriber* prescriber,
                                             const v1::ReflectRequest& request, int limit);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_REFLECT_AGENT_H_
