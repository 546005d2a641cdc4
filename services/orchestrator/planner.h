// The round planner: which beam kernel gets which fix.
//
// Deterministic. For each beam kernel (best first) it takes up to M of its prescriptions
// in rank order, skipping
//   - patterns on the job's avoid-list and those the reflexion memory says to avoid,
//   - a pattern already tried on the same parent kernel (a dead end recorded in memory,
//     or a fix that already produced a kernel: repeating it gives the same kernel),
//   - a pattern already given to another worker for the same parent this round,
// and ranks patterns the memory says to try ahead of the rest. Workers of one round
// therefore get different fixes, never copies of one.
//
// Where avoided patterns are filtered: the job's avoid-list (JobConfig.avoid_patterns) by
// the analyzer alone, to which the coordinator gives it (PrescribeRequest.avoid_patterns:
// exact ids and "prefix*", dropped before its limit and contradiction filter, so a
// pattern that conflicts with an avoided one can still be prescribed); the reflexion
// memory's avoid patterns here alone. The coordinator leaves PlanRoundRequest.avoid_patterns
// empty (services/coordinator/job_run.h); ids a caller puts there are skipped here too.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_PLANNER_H_
#define KAGENT_SERVICES_ORCHESTRATOR_PLANNER_H_

#include <vector>

#include "absl/status/statusor.h"
#include "engines/round_plan_writer.h"
#include "kagent/v1/orchestrator_service.pb.h"

namespace kagent {

// INVALID_ARGUMENT for an empty beam, a beam kernel without an id, or M outside [1, 16].
absl::StatusOr<v1::RoundPlan> PlanRound(const v1::PlanRoundRequest& request);

// Every (beam kernel, prescription) pair of `request`, kernel by kernel in beam order,
// each kernel's ranked as above (patterns the memory says to try first), with the rules'
// exclusion reason on those skipped ("on the avoid-list", "already tried on this kernel",
// "listed twice for this kernel"). PlanRound takes the first M offered of each kernel.
// Errors as PlanRound's.
absl::StatusOr<std::vector<PlanOption>> PlanOptions(const v1::PlanRoundRequest& request);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_PLANNER_H_
