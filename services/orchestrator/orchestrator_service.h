// OrchestratorServiceImpl: plans rounds (plan_agent.h: the heuristic plan, or an LLM's
// choice among what the rules offer when one is configured) and writes one reflexion per
// measured attempt through a Reflector (reflect_agent.h: the heuristic reflexion, with an
// LLM's judgement merged in when one is configured). Thread-safe.
#ifndef KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_
#define KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_

#include "absl/status/statusor.h"
#include "common/auth.h"
#include "services/orchestrator/plan_agent.h"
#include "kagent/v1/orchestrator_service.grpc.pb.h"

namespace kagent {

class Reflector {
 public:
  virtual ~Reflector() = default;
  // The reflexion on `request.attempt` (and the agent's exchange, when one was asked).
  // `request.parent` may be empty (a first kernel has none); `request.gpu` may be empty
  // (unknown). Must handle every verdict.
  virtual absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& request) = 0;
};

class OrchestratorServiceImpl final : public v1::OrchestratorService::Service {
 public:
  // `reflector` and `plan_writer` must outlive the service; `auth` may be null (auth
  // off); `plan_writer` may be null (the heuristic plan alone).
  OrchestratorServiceImpl(Reflector* reflector, const Authenticator* auth,
                          RoundPlanWriter* plan_writer = nullptr)
      : reflector_(reflector), auth_(auth), planner_(plan_writer) {}

  grpc::Status PlanRound(grpc::ServerContext* context, const v1::PlanRoundRequest* request,
                         v1::PlanRoundResponse* response) override;
  grpc::Status Reflect(grpc::ServerContext* context, const v1::ReflectRequest* request,
                       v1::ReflectResponse* response) override;

 private:
  Reflector* reflector_;
  const Authenticator* auth_;
  const PlanAgent planner_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_ORCHESTRATOR_ORCHESTRATOR_SERVICE_H_
