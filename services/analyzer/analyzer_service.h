// AnalyzerServiceImpl: the gRPC face of the Analyzer (kagent.v1.AnalyzerService).
//
// Converts absl::Status to grpc::Status at this edge only. Thread-safe (the analyzer is
// immutable).
#ifndef KAGENT_SERVICES_ANALYZER_ANALYZER_SERVICE_H_
#define KAGENT_SERVICES_ANALYZER_ANALYZER_SERVICE_H_

#include <memory>

#include <grpcpp/grpcpp.h>

#include "kagent/v1/analyzer_service.grpc.pb.h"
#include "services/analyzer/analyzer.h"

namespace kagent {

// Where the database is looked up when no path is configured (relative to the working
// directory: the repository root in development, the image's data folder in deployment).
inline constexpr char kDefaultOptimizationDbPath[] = "data/optimization_db.json";

class AnalyzerServiceImpl final : public kagent::v1::AnalyzerService::Service {
 public:
  // `analyzer` must not be null.
  explicit AnalyzerServiceImpl(std::shared_ptr<const Analyzer> analyzer);

  grpc::Status Prescribe(grpc::ServerContext* context, const kagent::v1::PrescribeRequest* request,
                         kagent::v1::PrescribeResponse* response) override;

  const Analyzer& analyzer() const { return *analyzer_; }

 private:
  std::shared_ptr<const Analyzer> analyzer_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_ANALYZER_ANALYZER_SERVICE_H_
