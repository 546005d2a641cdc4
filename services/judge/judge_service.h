// JudgeServiceImpl: the gRPC face of the Judge (kagent.v1.JudgeService).
//
// Authenticates every call as internal (KAGENT_AUTHENTICATE_INTERNAL) and converts absl::Status to
// grpc::Status at this edge only. Counts diagnoses in
// kagent_judge_diagnoses_total{primary} (the category name, "unspecified" for a diagnosis
// without hardware counters, or "error").
// DiagnoseRequest.llm_tokens_left / llm_cost_usd_left, when set, bound the narrator's LLM
// calls for that request (an llm::UsageMeter made current around the diagnosis: a spent
// budget makes the narrative the heuristic one, never fails the call), and
// DiagnoseResponse.llm_usage reports the calls made.
// Thread-safe: the Judge is immutable; the narrator, when set, must be thread-safe.
#ifndef KAGENT_SERVICES_JUDGE_JUDGE_SERVICE_H_
#define KAGENT_SERVICES_JUDGE_JUDGE_SERVICE_H_

#include <map>
#include <string>

#include <grpcpp/grpcpp.h>
#include <prometheus/counter.h>
#include <prometheus/registry.h>

#include "common/auth.h"
#include "kagent/v1/judge_service.grpc.pb.h"
#include "services/judge/judge.h"

namespace kagent {

class JudgeServiceImpl final : public kagent::v1::JudgeService::Service {
 public:
  // Borrowed pointers must outlive the service. `narrator` may be null (heuristic
  // narrative); `auth` may be null (auth off); `registry` may be null (no metrics).
  explicit JudgeServiceImpl(JudgeOptions options = {}, JudgeNarrator* narrator = nullptr,
                            const Authenticator* auth = nullptr,
                            prometheus::Registry* registry = nullptr);

  grpc::Status Diagnose(grpc::ServerContext* context, const kagent::v1::DiagnoseRequest* request,
                        kagent::v1::DiagnoseResponse* response) override;

  const Judge& judge() const { return judge_; }

 private:
  void Count(const std::string& label);

  Judge judge_;
  const Authenticator* auth_;
  // Counters per label, created up front (the label set is fixed), read-only afterwards.
  std::map<std::string, prometheus::Counter*> diagnoses_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_JUDGE_SERVICE_H_
