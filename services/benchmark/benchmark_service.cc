#include "services/benchmark/benchmark_service.h"

#include <algorithm>

#include "absl/strings/str_cat.h"
#include "common/cancel.h"
#include "common/grpc_status.h"
#include "common/harness/protocol.h"
#include "common/logging.h"
#include "common/metrics.h"

namespace kagent {
namespace {

grpc::Status CancelledByCaller(const char* what) {
  return grpc::Status(grpc::StatusCode::CANCELLED, absl::StrCat(what, " cancelled by the caller"));
}

}  // namespace

BenchmarkServiceImpl::BenchmarkServiceImpl(BenchmarkServiceOptions options, Harness* harness,
                                           GpuSlot* slot, GpuBusyMeter* meter, v1::GpuSpec gpu,
                                           const Authenticator* auth,
                                           prometheus::Registry* registry)
    : options_(std::move(options)), harness_(harness), slot_(slot), meter_(meter),
      gpu_(std::move(gpu)), auth_(auth), measures_(options_.result_cache_entries),
      screens_(options_.result_cache_entries) {
  if (registry == nullptr) return;
  measurements_ = &prometheus::BuildCounter()
                       .Name("kagent_benchmark_measurements_total")
                       .Help("Measurements finished on this worker, by verdict.")
                       .Register(*registry);
  // Every verdict's series exists from the start, so a scrape shows 0, not "No data".
  for (int v = v1::Verdict_MIN + 1; v <= v1::Verdict_MAX; ++v) {
    if (v1::Verdict_IsValid(v)) {
      measurements_->Add({{"verdict", v1::Verdict_Name(static_cast<v1::Verdict>(v))}});
    }
  }
  auto* seconds = &prometheus::BuildHistogram()
                       .Name("kagent_benchmark_measure_seconds")
                       .Help("Wall time of one measurement holding the GPU.")
                       .Register(*registry);
  measure_seconds_ = &seconds->Add({}, Metrics::LatencyBuckets());
  auto* queue = &prometheus::BuildGauge()
                     .Name("kagent_benchmark_gpu_queue_depth")
                     .Help("Tasks waiting for this worker's GPU.")
                     .Register(*registry);
  queue_ = &queue->Add({});
  auto* held = &prometheus::BuildCounter()
                    .Name("kagent_benchmark_gpu_held_seconds_total")
                    .Help("Time measurements and screens held this worker's GPU slot.")
                    .Register(*registry);
  held_seconds_ = &held->Add({{"worker", options_.worker_id}});
  auto* busy = &prometheus::BuildCounter()
                    .Name("kagent_benchmark_gpu_busy_seconds_total")
                    .Help("Of the held time, the time the GPU ran kernels (NVML samples).")
                    .Register(*registry);
  busy_seconds_ = &busy->Add({{"worker", options_.worker_id}});
  auto* candidates = &prometheus::BuildCounter()
                          .Name("kagent_benchmark_candidates_measured_total")
                          .Help("Measurements of a kernel that ran on the GPU, any verdict.")
                          .Register(*registry);
  candidates_ = &candidates->Add({{"worker", options_.worker_id}});
  auto* variants = &prometheus::BuildCounter()
                        .Name("kagent_benchmark_variants_screened_total")
                        .Help("Kernel variants screened on the GPU.")
                        .Register(*registry);
  variants_ = &variants->Add({{"worker", options_.worker_id}});
  auto* prepare = &prometheus::BuildHistogram()
                       .Name("kagent_benchmark_prepare_seconds")
                       .Help("Wall time of preparing a candidate before it takes the GPU.")
                       .Register(*registry);
  prepare_seconds_ = &prepare->Add({{"worker", options_.worker_id}}, Metrics::LatencyBuckets());
}

absl::StatusOr<BenchmarkServiceImpl::GpuTime> BenchmarkServiceImpl::RunOnGpu(
    grpc::ServerContext* context, const std::string& job_id, const std::function<void()>& work) {
  absl::Time deadline = absl::FromChrono(context->deadline());
  const absl::Time asked = absl::Now();
  if (queue_ != nullptr) queue_->Set(slot_->queue_depth() + 1);
  absl::Status got = slot_->Acquire(job_id, deadline, [context] { return context->IsCancelled(); });
  if (queue_ != nullptr) queue_->Set(slot_->queue_depth());
  if (!got.ok()) return got;
  absl::Time from, to;
  {
    GpuSlotLease lease(slot_);
    from = absl::Now();
    work();
    to = absl::Now();
  }
  GpuTime t;
  t.wait_seconds = absl::ToDoubleSeconds(from - asked);
  t.held_seconds = absl::ToDoubleSeconds(to - from);
  if (meter_ != nullptr) t.busy_seconds = std::clamp(meter_->BusySeconds(from, to), 0.0, t.held_seconds);
  if (held_seconds_ != nullptr) {
    held_seconds_->Increment(t.held_seconds);
    busy_seconds_->Increment(t.busy_seconds);
  }
  return t;
}

grpc::Status BenchmarkServiceImpl::Measure(grpc::ServerContext* context,
                                           const v1::MeasureRequest* request,
                                           v1::MeasureResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id});
  absl::Status valid = ValidateMeasureRequest(*request, options_.max_source_bytes);
  if (!valid.ok()) return ToGrpcStatus(valid);
  return measures_.Run(
      request->task_id(), [context] { return context->IsCancelled(); }, response,
      [&](v1::MeasureResponse* out) {
        return RunMeasure(context, *request, out->mutable_measurement());
      });
}

grpc::Status BenchmarkServiceImpl::RunMeasure(grpc::ServerContext* context,
                                              const v1::MeasureRequest& request,
                                              v1::Measurement* out) {
  ServerCallCancel cancel(context);
  // On the CPU cores first: a candidate that fails to build never costs GPU time.
  PrepareResult prepared = harness_->Prepare(request, cancel.token());
  if (cancel.cancelled()) {
    harness_->ReleasePrepared(prepared.handle);
    return CancelledByCaller("measurement");
  }
  if (prepared.seconds > 0 && prepare_seconds_ != nullptr) prepare_seconds_->Observe(prepared.seconds);
  v1::Measurement m;
  GpuTime gpu;
  if (prepared.final) {
    m = *std::move(prepared.final);
  } else {
    absl::StatusOr<GpuTime> t = RunOnGpu(context, request.job_id(), [&] {
      m = harness_->Measure(request, prepared.handle, cancel.token());
    });
    if (!t.ok()) {  // the slot was not granted: the prepared candidate will not run
      harness_->ReleasePrepared(prepared.handle);
      return ToGrpcStatus(t.status());
    }
    if (cancel.cancelled()) return CancelledByCaller("measurement");
    gpu = *t;
    if (measure_seconds_ != nullptr) {
      measure_seconds_->Observe(gpu.held_seconds);
      if (!request.kernel().source().empty()) candidates_->Increment();
    }
  }
  m.set_gpu_seconds(gpu.held_seconds);
  m.set_gpu_busy_seconds(gpu.busy_seconds);
  m.set_prepare_seconds(prepared.seconds);
  m.set_worker_id(options_.worker_id);
  m.set_gpu_index(options_.gpu_index);
  if (m.gpu_name().empty()) m.set_gpu_name(gpu_.name());
  KLOG(INFO).With("task", request.task_id()).With("gpu_seconds", gpu.held_seconds)
          .With("gpu_busy_seconds", gpu.busy_seconds).With("prepare_seconds", prepared.seconds)
          .With("slot_wait_seconds", gpu.wait_seconds)
          .With("phases", LargestPhases(m.phases_ms(), kLoggedPhases))
      << "measured: " << v1::Verdict_Name(m.verdict()) << " " << m.candidate().median_ms() << " ms"
      << (prepared.final ? " (at prepare, without the GPU)"
                         : prepared.handle.empty() ? absl::StrCat(" (not prepared: ", prepared.reason, ")")
                                                   : std::string(" (prepared)"));
  if (measurements_ != nullptr) {
    measurements_->Add({{"verdict", v1::Verdict_Name(m.verdict())}}).Increment();
  }
  *out = std::move(m);
  return grpc::Status::OK;
}

grpc::Status BenchmarkServiceImpl::Screen(grpc::ServerContext* context,
                                          const v1::ScreenRequest* request,
                                          v1::ScreenResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id});
  absl::Status valid = ValidateScreenRequest(*request, options_.max_source_bytes);
  if (!valid.ok()) return ToGrpcStatus(valid);
  return screens_.Run(
      request->task_id(), [context] { return context->IsCancelled(); }, response,
      [&](v1::ScreenResponse* out) { return RunScreen(context, *request, out); });
}

grpc::Status BenchmarkServiceImpl::RunScreen(grpc::ServerContext* context,
                                             const v1::ScreenRequest& request,
                                             v1::ScreenResponse* out) {
  ServerCallCancel cancel(context);
  // The variants' process, imports and compilation on the CPU cores first, as a
  // measurement's prepare: the slot is held only to call and time them.
  PrepareResult prepared = harness_->PrepareScreen(request, cancel.token());
  if (cancel.cancelled()) {
    harness_->ReleasePrepared(prepared.handle);
    return CancelledByCaller("screen");
  }
  if (prepared.seconds > 0 && prepare_seconds_ != nullptr) prepare_seconds_->Observe(prepared.seconds);
  absl::StatusOr<v1::ScreenResponse> r = absl::UnknownError("not run");
  absl::StatusOr<GpuTime> t = RunOnGpu(context, request.job_id(), [&] {
    r = harness_->Screen(request, prepared.handle, cancel.token());
  });
  if (!t.ok()) {  // the slot was not granted: the prepared screen will not run
    harness_->ReleasePrepared(prepared.handle);
    return ToGrpcStatus(t.status());
  }
  if (cancel.cancelled()) return CancelledByCaller("screen");
  if (!r.ok()) return ToGrpcStatus(r.status());
  if (variants_ != nullptr) variants_->Increment(request.kernels_size());
  *out = *std::move(r);
  out->set_gpu_seconds(t->held_seconds);
  out->set_gpu_busy_seconds(t->busy_seconds);
  out->set_worker_id(options_.worker_id);
  int ok = 0;
  for (const v1::ScreenResult& x : out->results()) ok += x.ok() ? 1 : 0;
  KLOG(INFO).With("task", request.task_id()).With("gpu_seconds", t->held_seconds)
          .With("gpu_busy_seconds", t->busy_seconds).With("prepare_seconds", prepared.seconds)
          .With("slot_wait_seconds", t->wait_seconds)
          .With("phases", LargestPhases(out->phases_ms(), kLoggedPhases))
      << "screened " << request.kernels_size() << " variants, " << ok << " ok"
      << (prepared.handle.empty() ? absl::StrCat(" (not prepared: ", prepared.reason, ")")
                                  : std::string(" (prepared)"));
  return grpc::Status::OK;
}

grpc::Status BenchmarkServiceImpl::ReleaseJob(grpc::ServerContext* context,
                                              const v1::ReleaseJobRequest* request,
                                              v1::ReleaseJobResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  if (request->job_id().empty()) return ToGrpcStatus(absl::InvalidArgumentError("job_id is required"));
  absl::StatusOr<bool> released = harness_->ReleaseJob(request->job_id());
  if (!released.ok()) return ToGrpcStatus(released.status());
  response->set_released(*released);
  return grpc::Status::OK;
}

grpc::Status BenchmarkServiceImpl::DescribeWorker(grpc::ServerContext* context,
                                                  const v1::DescribeWorkerRequest* request,
                                                  v1::DescribeWorkerResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  response->set_worker_id(options_.worker_id);
  *response->add_gpus() = gpu_;
  response->set_queue_depth(slot_->queue_depth());
  response->set_busy(slot_->busy());
  return grpc::Status::OK;
}

}  // namespace kagent
