// RoundPlanWriter: the interface through which the orchestrator asks an agent to plan a
// round: which (beam kernel, prescription) pairs to try, in which order.
//
// The orchestrator (services/orchestrator/plan_agent.h) first applies the planner's
// deterministic rules (services/orchestrator/planner.h) to every pair of the request:
// a pattern on the avoid-list or the memory's, one already tried on the same kernel, or
// one listed twice for a kernel is excluded, with the reason. A writer only chooses and
// orders among the pairs left (the options), within the budget (the heuristic plan's
// number of assignments) and at most fixes_per_kernel per kernel; what it names outside
// them is dropped, and a plan with nothing left is not used (the heuristic plan is). The
// LLM implementation is engines/llm/llm_planner.h.
//
// Thread-safety: implementations must be thread-safe (one instance serves concurrent
// calls). Arguments are borrowed for the duration of the call only.
#ifndef KAGENT_ENGINES_ROUND_PLAN_WRITER_H_
#define KAGENT_ENGINES_ROUND_PLAN_WRITER_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/orchestrator_service.pb.h"

namespace kagent {

// One (beam kernel, prescription) pair of the request.
struct PlanOption {
  std::string parent_kernel_id;
  kagent::v1::Prescription prescription;
  // Empty when the rules offer the pair; otherwise why they exclude it ("on the
  // avoid-list", "already tried on this kernel", ...).
  std::string excluded;
};

struct RoundPlanInput {
  const kagent::v1::PlanRoundRequest* request = nullptr;  // required, with a beam
  // Every pair of the request, kernel by kernel in beam order (best first), each kernel's
  // in the heuristic's rank order.
  std::vector<PlanOption> options;
  int budget = 0;  // at most this many assignments in all (>= 1)
};

struct RoundPlanDraft {
  // Only offered pairs, each once, at most `budget` in all and fixes_per_kernel per
  // kernel, worker_index 0..n-1 in the chosen order; at least one assignment. The
  // rationale holds each assignment's reason.
  kagent::v1::RoundPlan plan;
  std::vector<std::string> dropped;  // why each entry of the reply left out was dropped
  std::string model;   // the model asked (empty: the configuration's default)
  std::string prompt;  // the conversation sent, with role headers
  std::string reply;   // the reply used
};

class RoundPlanWriter {
 public:
  virtual ~RoundPlanWriter() = default;
  // A plan for `input`. An error makes the orchestrator use the heuristic plan; a failed
  // call should carry its prompt and replies (llm::AttachLlmTranscript).
  virtual absl::StatusOr<RoundPlanDraft> Plan(const RoundPlanInput& input) = 0;
  // For logs and the plan's rationale ("llm:openai", ...).
  virtual std::string Name() const = 0;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_ROUND_PLAN_WRITER_H_
