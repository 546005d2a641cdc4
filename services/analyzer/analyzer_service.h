// AnalyzerServiceImpl: the gRPC face (kagent.v1.AnalyzerService) of the prescriber
// (kernel_model/prescriber.h), through the prescribe agent (prescribe_agent.h): with a
// PrescriptionRanker (an LLM) the ranker orders the prescriber's candidates, falling back
// to the prescriber's ranking per call; a request whose job chose its LLM agents without
// "prescribe" (PrescribeRequest.llm_agents) gets the prescriber's ranking.
//
// Authenticates every call as internal (KAGENT_AUTHENTICATE_INTERNAL) and converts absl::Status to
// grpc::Status at this edge only. Counts requests in
// kagent_analyzer_requests_total{outcome="ok"|"invalid"} and prescriptions returned in
// kagent_analyzer_prescriptions_total. Thread-safe (the prescriber is immutable).
#ifndef KAGENT_SERVICES_ANALYZER_ANALYZER_SERVICE_H_
#define KAGENT_SERVICES_ANALYZER_ANALYZER_SERVICE_H_

#include <memory>

#include <grpcpp/grpcpp.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "common/auth.h"
#include "engines/prescription_ranker.h"
#include "kagent/v1/analyzer_service.grpc.pb.h"
#include "kernel_model/prescriber.h"

namespace kagent {

class AnalyzerServiceImpl final : public kagent::v1::AnalyzerService::Service {
 public:
  // `prescriber` must not be null. Borrowed pointers must outlive the service; `auth` may
  // be null (auth off), `registry` may be null (no metrics), `ranker` may be null (the
  // prescriber's ranking).
  explicit AnalyzerServiceImpl(std::shared_ptr<const Prescriber> prescriber,
                               const Authenticator* auth = nullptr,
                               prometheus::Registry* registry = nullptr,
                               PrescriptionRanker* ranker = nullptr);

  grpc::Status Prescribe(grpc::ServerContext* context, const kagent::v1::PrescribeRequest* request,
                         kagent::v1::PrescribeResponse* response) override;

  const Prescriber& prescriber() const { return *prescriber_; }

 private:
  std::shared_ptr<const Prescriber> prescriber_;
  const Authenticator* auth_;
  PrescriptionRanker* ranker_;
  prometheus::Counter* ok_ = nullptr;
  prometheus::Counter* invalid_ = nullptr;
  prometheus::Counter* prescriptions_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_ANALYZER_ANALYZER_SERVICE_H_
