#include "services/benchmark/benchmark_service.h"

#include "absl/strings/str_cat.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "services/benchmark/call_cancel.h"

namespace kagent {

absl::Status ValidateMeasureRequest(const v1::MeasureRequest& r, int64_t max_source_bytes) {
  if (r.task_id().empty() || r.task_id().size() > 256) {
    return absl::InvalidArgumentError("task_id is required (1-256 characters)");
  }
  if (r.problem().source().empty()) return absl::InvalidArgumentError("problem.source is empty");
  if (static_cast<int64_t>(r.problem().source().size()) > max_source_bytes) {
    return absl::ResourceExhaustedError(absl::StrCat("problem.source exceeds ", max_source_bytes, " bytes"));
  }
  for (const v1::KernelSource* k : {&r.kernel(), &r.reference_kernel()}) {
    if (k->source().empty()) continue;
    if (k->language() != v1::KERNEL_LANGUAGE_TRITON && k->language() != v1::KERNEL_LANGUAGE_CUDA) {
      return absl::InvalidArgumentError("kernel.language must be TRITON or CUDA");
    }
    if (static_cast<int64_t>(k->source().size()) > max_source_bytes) {
      return absl::ResourceExhaustedError(absl::StrCat("kernel.source exceeds ", max_source_bytes, " bytes"));
    }
  }
  if (r.kernel().source().empty() && !r.measure_baselines()) {
    return absl::InvalidArgumentError("nothing to measure: give kernel or set measure_baselines");
  }
  if (r.trials() < 0 || r.trials() > 100) return absl::InvalidArgumentError("trials must be in [0, 100]");
  if (r.timing_reps() < 0 || r.timing_reps() > 100000) {
    return absl::InvalidArgumentError("timing_reps must be in [0, 100000]");
  }
  if (r.timeout_seconds() < 0 || r.timeout_seconds() > 3600) {
    return absl::InvalidArgumentError("timeout_seconds must be in [0, 3600]");
  }
  return absl::OkStatus();
}

BenchmarkServiceImpl::BenchmarkServiceImpl(BenchmarkServiceOptions options,
                                           const HarnessClient* harness, GpuSlot* slot,
                                           v1::GpuSpec gpu, const Authenticator* auth,
                                           prometheus::Registry* registry)
    : options_(std::move(options)), harness_(harness), slot_(slot), gpu_(std::move(gpu)),
      auth_(auth) {
  if (registry != nullptr) {
    measurements_ = &prometheus::BuildCounter()
                         .Name("kagent_benchmark_measurements_total")
                         .Help("Measurements finished on this worker, by verdict.")
                         .Register(*registry);
    seconds_ = &prometheus::BuildHistogram()
                    .Name("kagent_benchmark_measure_seconds")
                    .Help("Wall time of one measurement holding the GPU.")
                    .Register(*registry);
    queue_ = &prometheus::BuildGauge()
                  .Name("kagent_benchmark_gpu_queue_depth")
                  .Help("Tasks waiting for this worker's GPU.")
                  .Register(*registry);
    queue_->Add({}).Set(0);
  }
}

grpc::Status BenchmarkServiceImpl::Measure(grpc::ServerContext* context,
                                           const v1::MeasureRequest* request,
                                           v1::MeasureResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id});
  absl::Status valid = ValidateMeasureRequest(*request, options_.max_source_bytes);
  if (!valid.ok()) return ToGrpcStatus(valid);

  // Idempotence: the first request of a task id measures; the others wait for it.
  std::shared_ptr<Entry> entry;
  bool owner = false;
  {
    absl::MutexLock lock(&mu_);
    auto it = results_.find(request->task_id());
    if (it != results_.end()) {
      entry = it->second;
    } else {
      entry = std::make_shared<Entry>();
      results_[request->task_id()] = entry;
      order_.push_back(request->task_id());
      owner = true;
      while (order_.size() > options_.result_cache_entries) {
        results_.erase(order_.front());
        order_.pop_front();
      }
    }
    if (!owner) {
      while (!entry->done && !context->IsCancelled()) {
        mu_.AwaitWithTimeout(absl::Condition(&entry->done), absl::Milliseconds(200));
      }
      if (!entry->done) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
      if (!entry->status.ok()) return entry->status;
      *response = entry->response;
      return grpc::Status::OK;
    }
  }
  // A failed first request is not remembered; its waiting duplicates get its status.
  auto forget = [&](const grpc::Status& status) {
    absl::MutexLock lock(&mu_);
    results_.erase(request->task_id());
    entry->status = status;
    entry->done = true;
    return status;
  };

  // The GPU, fairly across jobs, within the call's deadline.
  absl::Time deadline = absl::FromChrono(context->deadline());
  if (queue_ != nullptr) queue_->Add({}).Set(slot_->queue_depth() + 1);
  absl::Status got = slot_->Acquire(request->job_id(), deadline, [context] { return context->IsCancelled(); });
  if (queue_ != nullptr) queue_->Add({}).Set(slot_->queue_depth());
  if (!got.ok()) return forget(ToGrpcStatus(got));
  GpuSlotLease lease(slot_);

  absl::Time start = absl::Now();
  v1::Measurement m;
  bool cancelled = false;
  {
    ServerCallCancel cancel(context);
    m = harness_->Measure(*request, cancel.token());
    cancelled = cancel.cancelled();
  }
  double seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (cancelled) {
    return forget(grpc::Status(grpc::StatusCode::CANCELLED, "measurement cancelled by the caller"));
  }
  m.set_gpu_seconds(seconds);
  m.set_worker_id(options_.worker_id);
  m.set_gpu_index(options_.gpu_index);
  if (m.gpu_name().empty()) m.set_gpu_name(gpu_.name());
  KLOG(INFO).With("task", request->task_id()).With("seconds", seconds)
      << "measured: " << v1::Verdict_Name(m.verdict()) << " " << m.candidate().median_ms() << " ms";
  if (measurements_ != nullptr) {
    measurements_->Add({{"verdict", v1::Verdict_Name(m.verdict())}}).Increment();
    seconds_->Add({}, Metrics::LatencyBuckets()).Observe(seconds);
  }
  *response->mutable_measurement() = m;
  {
    absl::MutexLock lock(&mu_);
    entry->response = *response;
    entry->done = true;
  }
  return grpc::Status::OK;
}

grpc::Status BenchmarkServiceImpl::DescribeWorker(grpc::ServerContext* context,
                                                  const v1::DescribeWorkerRequest* request,
                                                  v1::DescribeWorkerResponse* response) {
  KAGENT_AUTHENTICATE(caller, auth_, context);
  response->set_worker_id(options_.worker_id);
  *response->add_gpus() = gpu_;
  response->set_queue_depth(slot_->queue_depth());
  response->set_busy(slot_->busy());
  return grpc::Status::OK;
}

}  // namespace kagent
