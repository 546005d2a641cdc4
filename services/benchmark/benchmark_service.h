// BenchmarkServiceImpl: a GPU worker's measurement endpoint. One worker drives one GPU;
// measurements (and profiles, which share the GpuSlot) run one at a time, granted fairly
// across jobs. Results are idempotent per task_id: a repeated task (a retry after a lost
// reply) returns the first result, and a duplicate arriving while the first runs waits
// for it instead of measuring again. Thread-safe.
#ifndef KAGENT_SERVICES_BENCHMARK_BENCHMARK_SERVICE_H_
#define KAGENT_SERVICES_BENCHMARK_BENCHMARK_SERVICE_H_

#include <deque>
#include <map>
#include <memory>
#include <string>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>
#include <prometheus/registry.h>

#include "absl/synchronization/mutex.h"
#include "common/auth.h"
#include "kagent/v1/benchmark_service.grpc.pb.h"
#include "services/benchmark/gpu_slot.h"
#include "services/benchmark/harness_client.h"

namespace kagent {

struct BenchmarkServiceOptions {
  std::string worker_id = "worker-0";
  int gpu_index = 0;
  size_t result_cache_entries = 1024;
  int64_t max_source_bytes = 1 << 20;
};

// Validates a MeasureRequest (INVALID_ARGUMENT / RESOURCE_EXHAUSTED naming the field).
absl::Status ValidateMeasureRequest(const v1::MeasureRequest& r, int64_t max_source_bytes);

class BenchmarkServiceImpl final : public v1::BenchmarkService::Service {
 public:
  // Borrowed pointers must outlive the service; `auth` and `registry` may be null.
  BenchmarkServiceImpl(BenchmarkServiceOptions options, const HarnessClient* harness,
                       GpuSlot* slot, v1::GpuSpec gpu, const Authenticator* auth,
                       prometheus::Registry* registry);

  grpc::Status Measure(grpc::ServerContext* context, const v1::MeasureRequest* request,
                       v1::MeasureResponse* response) override;
  grpc::Status DescribeWorker(grpc::ServerContext* context,
                              const v1::DescribeWorkerRequest* request,
                              v1::DescribeWorkerResponse* response) override;

 private:
  struct Entry {
    bool done = false;
    grpc::Status status;  // of the first request, shared with its duplicates
    v1::MeasureResponse response;
  };

  const BenchmarkServiceOptions options_;
  const HarnessClient* harness_;
  GpuSlot* slot_;
  const v1::GpuSpec gpu_;
  const Authenticator* auth_;

  absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> results_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);

  prometheus::Family<prometheus::Counter>* measurements_ = nullptr;
  prometheus::Family<prometheus::Histogram>* seconds_ = nullptr;
  prometheus::Family<prometheus::Gauge>* queue_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_BENCHMARK_SERVICE_H_
