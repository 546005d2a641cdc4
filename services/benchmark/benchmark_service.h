// BenchmarkServiceImpl: a GPU worker's measurement endpoint. One worker drives one GPU;
// measurements and screens (and profiles, which share the GpuSlot) hold the GPU one at a
// time, granted fairly across jobs.
//
// A measurement first prepares its candidate on the worker's CPU cores (the harness
// server's `prepare`: the candidate's process, import, construction, Triton compilation)
// without the GPU: a candidate that fails there is answered with its verdict and never
// takes the GPU. Only then does it wait for the slot and measure (with the prepared
// process). gpu_seconds is the time the slot was held, gpu_busy_seconds the part of it the
// GPU ran kernels (GpuBusyMeter), prepare_seconds the time before.
//
// Measure and Screen are idempotent per task_id (TaskResults). Thread-safe.
#ifndef KAGENT_SERVICES_BENCHMARK_BENCHMARK_SERVICE_H_
#define KAGENT_SERVICES_BENCHMARK_BENCHMARK_SERVICE_H_

#include <functional>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/status/statusor.h"
#include "common/auth.h"
#include "common/harness/harness.h"
#include "kagent/v1/benchmark_service.grpc.pb.h"
#include "services/benchmark/gpu_busy_meter.h"
#include "services/benchmark/gpu_slot.h"
#include "services/benchmark/task_results.h"
#include "services/benchmark/validation.h"

namespace kagent {

struct BenchmarkServiceOptions {
  std::string worker_id = "worker-0";
  int gpu_index = 0;
  size_t result_cache_entries = 1024;
  int64_t max_source_bytes = 1 << 20;
};

class BenchmarkServiceImpl final : public v1::BenchmarkService::Service {
 public:
  // Borrowed pointers must outlive the service; `meter`, `auth` and `registry` may be
  // null (no busy time, auth off, no metrics).
  BenchmarkServiceImpl(BenchmarkServiceOptions options, Harness* harness, GpuSlot* slot,
                       GpuBusyMeter* meter, v1::GpuSpec gpu, const Authenticator* auth,
                       prometheus::Registry* registry);

  grpc::Status Measure(grpc::ServerContext* context, const v1::MeasureRequest* request,
                       v1::MeasureResponse* response) override;
  grpc::Status Screen(grpc::ServerContext* context, const v1::ScreenRequest* request,
                      v1::ScreenResponse* response) override;
  grpc::Status ReleaseJob(grpc::ServerContext* context, const v1::ReleaseJobRequest* request,
                          v1::ReleaseJobResponse* response) override;
  grpc::Status DescribeWorker(grpc::ServerContext* context,
                              const v1::DescribeWorkerRequest* request,
                              v1::DescribeWorkerResponse* response) override;

 private:
  struct GpuTime {
    double wait_seconds = 0;  // for the slot, before it was granted
    double held_seconds = 0;
    double busy_seconds = 0;
  };
  // Runs `work` holding the GPU slot (granted fairly across jobs, within the call's
  // deadline) and returns how long it waited for the slot, how long it held it and, of
  // that, how long the GPU was busy.
  // Errors: the slot's (DEADLINE_EXCEEDED, CANCELLED while waiting).
  absl::StatusOr<GpuTime> RunOnGpu(grpc::ServerContext* context, const std::string& job_id,
                                   const std::function<void()>& work);
  grpc::Status RunMeasure(grpc::ServerContext* context, const v1::MeasureRequest& request,
                          v1::Measurement* out);
  grpc::Status RunScreen(grpc::ServerContext* context, const v1::ScreenRequest& request,
                         v1::ScreenResponse* out);

  const BenchmarkServiceOptions options_;
  Harness* harness_;
  GpuSlot* slot_;
  GpuBusyMeter* meter_;
  const v1::GpuSpec gpu_;
  const Authenticator* auth_;

  TaskResults<v1::MeasureResponse> measures_;
  TaskResults<v1::ScreenResponse> screens_;

  // Null without a registry.
  prometheus::Family<prometheus::Counter>* measurements_ = nullptr;
  prometheus::Histogram* measure_seconds_ = nullptr;
  prometheus::Gauge* queue_ = nullptr;
  prometheus::Counter* held_seconds_ = nullptr;
  prometheus::Counter* busy_seconds_ = nullptr;
  prometheus::Counter* candidates_ = nullptr;
  prometheus::Counter* variants_ = nullptr;
  prometheus::Histogram* prepare_seconds_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_BENCHMARK_SERVICE_H_
