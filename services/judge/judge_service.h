// JudgeServiceImpl: the gRPC face of the Judge (kagent.v1.JudgeService).
//
// Converts absl::Status to grpc::Status at this edge only. Thread-safe: the Judge is
// immutable and the narrator, when set, must be thread-safe.
#ifndef KAGENT_SERVICES_JUDGE_JUDGE_SERVICE_H_
#define KAGENT_SERVICES_JUDGE_JUDGE_SERVICE_H_

#include <grpcpp/grpcpp.h>

#include "kagent/v1/judge_service.grpc.pb.h"
#include "services/judge/judge.h"

namespace kagent {

class JudgeServiceImpl final : public kagent::v1::JudgeService::Service {
 public:
  // `narrator` may be null (heuristic narrative); when set it is not owned and must
  // outlive the service.
  explicit JudgeServiceImpl(JudgeOptions options = {}, JudgeNarrator* narrator = nullptr);

  grpc::Status Diagnose(grpc::ServerContext* context, const kagent::v1::DiagnoseRequest* request,
                        kagent::v1::DiagnoseResponse* response) override;

  const Judge& judge() const { return judge_; }

 private:
  Judge judge_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_JUDGE_SERVICE_H_
