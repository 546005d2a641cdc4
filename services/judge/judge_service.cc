#include "services/judge/judge_service.h"

#include <utility>

#include "common/grpc_status.h"
#include "common/logging.h"
#include "services/judge/categories.h"

namespace kagent {

JudgeServiceImpl::JudgeServiceImpl(JudgeOptions options, JudgeNarrator* narrator)
    : judge_(options, narrator) {}

grpc::Status JudgeServiceImpl::Diagnose(grpc::ServerContext* context,
                                        const kagent::v1::DiagnoseRequest* request,
                                        kagent::v1::DiagnoseResponse* response) {
  LogScope scope({.job_id = request->job_id(), .request_id = "", .tenant = ""});
  absl::StatusOr<kagent::v1::BottleneckReport> report = judge_.Diagnose(*request);
  if (!report.ok()) {
    KLOG(WARNING) << "diagnose failed: " << report.status().ToString();
    return ToGrpcStatus(report.status());
  }
  KLOG(INFO).With("primary", CategoryName(report->primary()))
          .With("secondary", CategoryName(report->secondary()))
          .With("efficiency_pct", report->efficiency_pct())
      << "diagnosed " << report->dominant_kernel();
  *response->mutable_report() = *std::move(report);
  return grpc::Status::OK;
}

}  // namespace kagent
