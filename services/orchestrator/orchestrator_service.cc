#include "services/orchestrator/orchestrator_service.h"

#include <memory>

#include "common/grpc_status.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"

namespace kagent {

grpc::Status OrchestratorServiceImpl::PlanRound(grpc::ServerContext* context,
                                                const v1::PlanRoundRequest* request,
                                                v1::PlanRoundResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id, .tenant = caller.tenant});
  // What is left of the job's LLM budget bounds the agent's calls (a spent budget keeps
  // the heuristic plan); the meter also counts them for the reply.
  std::unique_ptr<llm::UsageMeter> meter = llm::RequestMeter(*request, "round plan");
  absl::StatusOr<v1::PlanRoundResponse> planned;
  {
    llm::ScopedUsageMeter metered(meter.get());
    planned = planner_.Plan(*request);
  }
  if (!planned.ok()) return ToGrpcStatus(planned.status());
  KLOG(INFO) << "round " << request->round() << " planned: " << planned->plan().assignments_size()
             << " assignment(s): " << planned->plan().rationale();
  *response = *std::move(planned);
  *response->mutable_llm_usage() = llm::ToLlmUsage(meter->Totals());
  return grpc::Status::OK;
}

grpc::Status OrchestratorServiceImpl::Reflect(grpc::ServerContext* context,
                                              const v1::ReflectRequest* request,
                                              v1::ReflectResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id, .tenant = caller.tenant});
  if (!request->has_attempt() || request->attempt().id().empty()) {
    return ToGrpcStatus(absl::InvalidArgumentError("attempt with an id is required"));
  }
  if (request->attempt().measurement().verdict() == v1::VERDICT_UNSPECIFIED) {
    return ToGrpcStatus(absl::InvalidArgumentError(
        "attempt.measurement.verdict is required: reflect only on measured attempts"));
  }
  // What is left of the job's LLM budget bounds the agent's calls (a spent budget keeps
  // the heuristic reflexion); the meter also counts them for the reply.
  std::unique_ptr<llm::UsageMeter> meter = llm::RequestMeter(*request, "reflexion");
  absl::StatusOr<v1::ReflectResponse> r;
  {
    llm::ScopedUsageMeter metered(meter.get());
    r = reflector_->Reflect(*request);
  }
  if (!r.ok()) return ToGrpcStatus(r.status());
  *response = *std::move(r);
  *response->mutable_llm_usage() = llm::ToLlmUsage(meter->Totals());
  return grpc::Status::OK;
}

}  // namespace kagent
