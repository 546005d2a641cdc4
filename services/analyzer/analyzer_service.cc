#include "services/analyzer/analyzer_service.h"

#include <memory>
#include <utility>

#include "common/grpc_status.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "common/status.h"
#include "engines/llm_agent_choice.h"
#include "services/analyzer/prescribe_agent.h"

namespace kagent {

AnalyzerServiceImpl::AnalyzerServiceImpl(std::shared_ptr<const Prescriber> prescriber,
                                         const Authenticator* auth, prometheus::Registry* registry,
                                         PrescriptionRanker* ranker)
    : prescriber_(std::move(prescriber)), auth_(auth), ranker_(ranker) {
  KAGENT_CHECK(prescriber_ != nullptr) << "AnalyzerServiceImpl needs a prescriber";
  if (registry == nullptr) return;
  auto& requests = prometheus::BuildCounter()
                       .Name("kagent_analyzer_requests_total")
                       .Help("Prescribe requests by outcome")
                       .Register(*registry);
  ok_ = &requests.Add({{"outcome", "ok"}});
  invalid_ = &requests.Add({{"outcome", "invalid"}});
  prescriptions_ = &prometheus::BuildCounter()
                        .Name("kagent_analyzer_prescriptions_total")
                        .Help("Prescriptions returned")
                        .Register(*registry)
                        .Add({});
}

grpc::Status AnalyzerServiceImpl::Prescribe(grpc::ServerContext* context,
                                            const kagent::v1::PrescribeRequest* request,
                                            kagent::v1::PrescribeResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id, .tenant = caller.tenant});
  // What is left of the job's LLM budget bounds the agent's calls (a spent budget makes
  // the answer the database's ranking); the meter also counts them for the reply.
  std::unique_ptr<llm::UsageMeter> meter = llm::RequestMeter(*request, "prescription");
  absl::StatusOr<kagent::v1::PrescribeResponse> result;
  {
    llm::ScopedUsageMeter metered(meter.get());
    // A job that chose its agents without "prescribe" gets the database's ranking.
    PrescriptionRanker* ranker = JobWantsLlmAgent(request->llm_agents(), "prescribe") ? ranker_ : nullptr;
    result = PrescribeWithAgent(*prescriber_, ranker, *request);
  }
  if (!result.ok()) {
    if (invalid_ != nullptr) invalid_->Increment();
    KLOG(WARNING) << "prescribe failed: " << result.status().ToString();
    return ToGrpcStatus(result.status());
  }
  if (ok_ != nullptr) ok_->Increment();
  if (prescriptions_ != nullptr) prescriptions_->Increment(result->prescriptions_size());
  KLOG(INFO).With("prescriptions", static_cast<double>(result->prescriptions_size()))
      << "prescribed for " << request->report().dominant_kernel();
  *response = *std::move(result);
  *response->mutable_llm_usage() = llm::ToLlmUsage(meter->Totals());
  return grpc::Status::OK;
}

}  // namespace kagent
