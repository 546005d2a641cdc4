// The coordinator's view of a GPU worker: one process pinned to one GPU that serves
// BenchmarkService and ProfilerService. GpuWorker is the seam between the scheduler and
// the network: the real implementation calls the worker over gRPC; unit tests use fakes.
//
// Thread-safety: a GpuWorker is called from several threads at once (the scheduler may
// have up to SchedulerOptions::tasks_per_worker tasks in flight on one worker, and
// ReleaseJob runs beside them); implementations must be thread-safe. The real one is: a
// gRPC stub is.
#ifndef KAGENT_SERVICES_COORDINATOR_GPU_WORKER_H_
#define KAGENT_SERVICES_COORDINATOR_GPU_WORKER_H_

#include <memory>
#include <string>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/cancel.h"
#include "common/client.h"
#include "kagent/v1/benchmark_service.grpc.pb.h"
#include "kagent/v1/profiler_service.grpc.pb.h"

namespace kagent {

class GpuWorker {
 public:
  virtual ~GpuWorker() = default;
  // Every call carries the cluster's internal token and the caller's request id, has
  // `timeout` as its deadline, and maps the gRPC status onto absl (FromGrpcStatus).
  // A transport failure (the worker is gone or unreachable) is UNAVAILABLE or
  // DEADLINE_EXCEEDED; a candidate's own failure is an OK status with its verdict.
  // `cancel` (may be null; the job's token) cancels the call when it fires; CANCELLED
  // then.
  virtual absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& request,
                                                      absl::Duration timeout,
                                                      CancelToken* cancel) = 0;
  virtual absl::StatusOr<v1::ProfileResponse> Profile(const v1::ProfileRequest& request,
                                                      absl::Duration timeout,
                                                      CancelToken* cancel) = 0;
  // BenchmarkService.Screen: several variants of one trusted kernel timed in one run. A
  // variant's failure is its ScreenResult (ok false, reason), not an error status. A
  // worker that predates the RPC answers UNIMPLEMENTED.
  virtual absl::StatusOr<v1::ScreenResponse> Screen(const v1::ScreenRequest& request,
                                                    absl::Duration timeout,
                                                    CancelToken* cancel) = 0;
  // BenchmarkService.ReleaseJob: the worker drops what it keeps for the job. Not
  // cancellable (it is short and idempotent).
  virtual absl::StatusOr<v1::ReleaseJobResponse> ReleaseJob(const v1::ReleaseJobRequest& request,
                                                            absl::Duration timeout) = 0;
  virtual absl::StatusOr<v1::DescribeWorkerResponse> Describe(absl::Duration timeout) = 0;
};

// Makes a GpuWorker for an address. The scheduler owns what it returns.
class GpuWorkerFactory {
 public:
  virtual ~GpuWorkerFactory() = default;
  virtual absl::StatusOr<std::unique_ptr<GpuWorker>> Connect(const std::string& address) = 0;
};

// The real factory: gRPC channels with the cluster's internal token.
class GrpcGpuWorkerFactory : public GpuWorkerFactory {
 public:
  GrpcGpuWorkerFactory(ChannelOptions channel_options, std::string internal_token)
      : channel_options_(std::move(channel_options)), token_(std::move(internal_token)) {}
  absl::StatusOr<std::unique_ptr<GpuWorker>> Connect(const std::string& address) override;

 private:
  ChannelOptions channel_options_;
  std::string token_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_GPU_WORKER_H_
