#include "services/analyzer/analyzer_service.h"

#include <utility>

#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {

AnalyzerServiceImpl::AnalyzerServiceImpl(std::shared_ptr<const Analyzer> analyzer)
    : analyzer_(std::move(analyzer)) {
  KAGENT_CHECK(analyzer_ != nullptr) << "AnalyzerServiceImpl needs an analyzer";
}

grpc::Status AnalyzerServiceImpl::Prescribe(grpc::ServerContext* context,
                                            const kagent::v1::PrescribeRequest* request,
                                            kagent::v1::PrescribeResponse* response) {
  LogScope scope({.job_id = request->job_id(), .request_id = "", .tenant = ""});
  absl::StatusOr<kagent::v1::PrescribeResponse> result = analyzer_->Prescribe(*request);
  if (!result.ok()) {
    KLOG(WARNING) << "prescribe failed: " << result.status().ToString();
    return ToGrpcStatus(result.status());
  }
  KLOG(INFO).With("prescriptions", static_cast<double>(result->prescriptions_size()))
      << "prescribed for " << request->report().dominant_kernel();
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace kagent
