#include "services/judge/judge_service.h"

#include <memory>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/llm/accounting.h"
#include "common/llm/usage_status.h"
#include "common/logging.h"
#include "kernel_model/categories.h"

namespace kagent {

JudgeServiceImpl::JudgeServiceImpl(JudgeOptions options, JudgeNarrator* narrator,
                                   const Authenticator* auth, prometheus::Registry* registry)
    : judge_(options, narrator), auth_(auth) {
  if (registry == nullptr) return;
  auto& family = prometheus::BuildCounter()
                     .Name("kagent_judge_diagnoses_total")
                     .Help("Diagnoses by primary bottleneck category (\"error\" for failed requests)")
                     .Register(*registry);
  for (int c = 1; c <= 7; ++c) {
    std::string name = CategoryName(static_cast<kagent::v1::BottleneckCategory>(c));
    diagnoses_[name] = &family.Add({{"primary", name}});
  }
  // A diagnosis without hardware counters classifies nothing.
  diagnoses_["unspecified"] = &family.Add({{"primary", "unspecified"}});
  diagnoses_["error"] = &family.Add({{"primary", "error"}});
}

void JudgeServiceImpl::Count(const std::string& label) {
  auto it = diagnoses_.find(label);
  if (it != diagnoses_.end()) it->second->Increment();
}

grpc::Status JudgeServiceImpl::Diagnose(grpc::ServerContext* context,
                                        const kagent::v1::DiagnoseRequest* request,
                                        kagent::v1::DiagnoseResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id, .tenant = caller.tenant});
  // What is left of the job's LLM budget bounds the narrator's calls (a spent budget
  // makes the narrative the heuristic one); the meter also counts them for the reply.
  std::unique_ptr<llm::UsageMeter> meter = llm::RequestMeter(*request, "diagnosis");
  absl::StatusOr<kagent::v1::BottleneckReport> report;
  {
    llm::ScopedUsageMeter metered(meter.get());
    report = judge_.Diagnose(*request, response->mutable_exchange());
  }
  if (response->exchange().agent().empty()) response->clear_exchange();  // no LLM narrator asked
  const llm::UsageTotals used = meter->Totals();
  *response->mutable_llm_usage() = llm::ToLlmUsage(used);
  if (!report.ok()) {
    Count("error");
    KLOG(WARNING) << "diagnose failed: " << report.status().ToString();
    return ToGrpcStatus(report.status());
  }
  Count(CategoryName(report->primary()));
  KLOG(INFO).With("primary", CategoryName(report->primary()))
          .With("secondary", CategoryName(report->secondary()))
          .With("efficiency_pct", report->efficiency_pct())
      << "diagnosed " << report->dominant_kernel();
  *response->mutable_report() = *std::move(report);
  return grpc::Status::OK;
}

}  // namespace kagent
