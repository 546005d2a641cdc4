// The analyzer's prescribe agent: the prescriber's ranking (kernel_model/prescriber.h),
// or a PrescriptionRanker's (engines/prescription_ranker.h: an LLM) over the
// prescriber's candidates, with the prescriber's ranking as the fallback per call.
//
// The prescriber alone decides what may be prescribed: it validates the request, matches
// the patterns' preconditions, drops the job's avoid-list and contradictory patterns. The
// ranker sees the top `candidate_limit` of what is left and orders them; its answer names
// only those candidates (LlmPrescriber refuses any other), so it is contradiction-free
// and avoids the avoid-list too. Thread-safe when the ranker is.
#ifndef KAGENT_SERVICES_ANALYZER_PRESCRIBE_AGENT_H_
#define KAGENT_SERVICES_ANALYZER_PRESCRIBE_AGENT_H_

#include "absl/status/statusor.h"
#include "engines/prescription_ranker.h"
#include "kagent/v1/analyzer_service.pb.h"
#include "kernel_model/prescriber.h"

namespace kagent {

// Candidates offered to a ranker at most, whatever the request's max_results.
inline constexpr int kRankerCandidateLimit = 16;

// The prescriber's errors (INVALID_ARGUMENT for a bad request) are returned as they are.
// Without a ranker, or when the prescriber finds nothing, the prescriber's answer.
// Otherwise the ranker's prescriptions (at most the request's max_results, or as many as
// the prescriber returns when it leaves that at 0) with `exchange` holding its prompt and
// reply; when the ranker fails, the prescriber's answer with `exchange.fallback` saying
// why (and the failed call's prompt and replies when they came back on its status).
absl::StatusOr<kagent::v1::PrescribeResponse> PrescribeWithAgent(
    const Prescriber& prescriber, PrescriptionRanker* ranker,
    const kagent::v1::PrescribeRequest& request);

}  // namespace kagent

#endif  // KAGENT_SERVICES_ANALYZER_PRESCRIBE_AGENT_H_
