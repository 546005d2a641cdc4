// The services a job's rounds call, other than the GPU workers: judge, analyzer,
// orchestrator and optimization manager. LoopServices is the seam: the real
// implementation calls them over gRPC (in one process or many, the same code); unit
// tests of the loop use a scripted implementation.
#ifndef KAGENT_SERVICES_COORDINATOR_LOOP_SERVICES_H_
#define KAGENT_SERVICES_COORDINATOR_LOOP_SERVICES_H_

#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cancel.h"
#include "common/client.h"
#include "kagent/v1/analyzer_service.grpc.pb.h"
#include "kagent/v1/judge_service.grpc.pb.h"
#include "kagent/v1/optimization_manager_service.grpc.pb.h"
#include "kagent/v1/orchestrator_service.grpc.pb.h"
#include "services/coordinator/gpu_worker.h"

namespace kagent {

class LoopServices {
 public:
  virtual ~LoopServices() = default;
  virtual absl::StatusOr<v1::DiagnoseResponse> Diagnose(const v1::DiagnoseRequest& r,
                                                        CancelToken* cancel) = 0;
  virtual absl::StatusOr<v1::PrescribeResponse> Prescribe(const v1::PrescribeRequest& r,
                                                          CancelToken* cancel) = 0;
  virtual absl::StatusOr<v1::PlanRoundResponse> PlanRound(const v1::PlanRoundRequest& r,
                                                          CancelToken* cancel) = 0;
  virtual absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& r,
                                                      CancelToken* cancel) = 0;
  virtual absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& r,
                                                        CancelToken* cancel) = 0;
};

struct LoopServiceAddresses {
  std::string judge;
  std::string analyzer;
  std::string orchestrator;
  std::string optimization_manager;
};

// gRPC clients for the four services. Each call carries the internal token and the
// job's tenant, and a deadline (`timeout`, or `generate_timeout` for Generate).
class GrpcLoopServices : public LoopServices {
 public:
  static absl::StatusOr<std::unique_ptr<GrpcLoopServices>> Create(
      const LoopServiceAddresses& addresses, const ChannelOptions& channel_options,
      std::string internal_token, absl::Duration timeout, absl::Duration generate_timeout);

  absl::StatusOr<v1::DiagnoseResponse> Diagnose(const v1::DiagnoseRequest& r,
                                                CancelToken* cancel) override;
  absl::StatusOr<v1::PrescribeResponse> Prescribe(const v1::PrescribeRequest& r,
                                                  CancelToken* cancel) override;
  absl::StatusOr<v1::PlanRoundResponse> PlanRound(const v1::PlanRoundRequest& r,
                                                  CancelToken* cancel) override;
  absl::StatusOr<v1::ReflectResponse> Reflect(const v1::ReflectRequest& r,
                                              CancelToken* cancel) override;
  absl::StatusOr<v1::GenerateResponse> Generate(const v1::GenerateRequest& r,
                                                CancelToken* cancel) override;

 private:
  GrpcLoopServices() = default;
  template <typename F>
  absl::Status Call(const char* what, absl::Duration timeout, CancelToken* cancel, F rpc);

  std::unique_ptr<v1::JudgeService::Stub> judge_;
  std::unique_ptr<v1::AnalyzerService::Stub> analyzer_;
  std::unique_ptr<v1::OrchestratorService::Stub> orchestrator_;
  std::unique_ptr<v1::OptimizationManagerService::Stub> manager_;
  std::string token_;
  absl::Duration timeout_;
  absl::Duration generate_timeout_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_LOOP_SERVICES_H_
