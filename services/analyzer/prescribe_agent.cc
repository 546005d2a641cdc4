#include "services/analyzer/prescribe_agent.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "common/llm/transcript_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {

absl::StatusOr<v1::PrescribeResponse> PrescribeWithAgent(const Prescriber& prescriber,
                                                         PrescriptionRanker* ranker,
                                                         const v1::PrescribeRequest& request) {
  KAGENT_ASSIGN_OR_RETURN(v1::PrescribeResponse heuristic, prescriber.Prescribe(request));
  if (ranker == nullptr || heuristic.prescriptions().empty()) return heuristic;
  const int max_results =
      request.max_results() > 0 ? request.max_results() : heuristic.prescriptions_size();
  v1::PrescribeRequest wider = request;
  wider.set_max_results(std::max(max_results, kRankerCandidateLimit));
  KAGENT_ASSIGN_OR_RETURN(v1::PrescribeResponse offered, prescriber.Prescribe(wider));
  std::vector<v1::Prescription> candidates(offered.prescriptions().begin(),
                                           offered.prescriptions().end());
  v1::AgentExchange exchange;
  exchange.set_agent("prescribe");
  exchange.set_brain(ranker->Name());
  absl::StatusOr<RankedPrescriptions> ranked = ranker->Rank(request, candidates, max_results);
  if (!ranked.ok()) {
    KLOG(WARNING).With("agent", ranker->Name())
        << "prescribe agent failed, using the database's ranking: " << absl::StatusCodeToString(ranked.status().code()) << ": " << ranked.status().message();
    llm::RecordAgentFallback(ranked.status(), &exchange);
    *heuristic.mutable_exchange() = std::move(exchange);
    return heuristic;
  }
  v1::PrescribeResponse response;
  response.set_database_version(heuristic.database_version());
  for (v1::Prescription& p : ranked->prescriptions) *response.add_prescriptions() = std::move(p);
  exchange.set_model(ranked->model);
  exchange.set_prompt(std::move(ranked->prompt));
  exchange.set_reply(std::move(ranked->reply));
  *response.mutable_exchange() = std::move(exchange);
  return response;
}

}  // namespace kagent
