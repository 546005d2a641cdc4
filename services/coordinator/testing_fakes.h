// Test doubles for the coordinator's non-deterministic seams: GPU workers and the loop
// services. For unit tests only; the real implementations are gpu_worker.cc and
// loop_services.cc (exercised by the integration tests).
#ifndef KAGENT_SERVICES_COORDINATOR_TESTING_FAKES_H_
#define KAGENT_SERVICES_COORDINATOR_TESTING_FAKES_H_

#include <atomic>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/synchronization/mutex.h"
#include "services/coordinator/gpu_worker.h"
#include "absl/strings/match.h"
#include "services/coordinator/loop_services.h"

namespace kagent::testing {

// A fake GPU: measures a kernel by looking its median up in a function of the source.
// Screens time each variant with the same function (ok when it is CORRECT).
struct FakeGpu {
  // Returns the measurement for a kernel source (verdict and median).
  std::function<v1::Measurement(const std::string& source)> measure;
  absl::Duration delay = absl::Milliseconds(5);
  std::atomic<int> in_flight{0};
  std::atomic<int> max_in_flight{0};
  std::atomic<int> calls{0};
  std::atomic<bool> dead{false};  // calls fail UNAVAILABLE
  // Each measurement's gpu_busy_seconds (of its gpu_seconds, 0.1); 0: no NVML.
  double gpu_busy_seconds = 0;
  // What Screen answers with instead of screening, when not OK (e.g. UNIMPLEMENTED, as an
  // older worker; INTERNAL, as a failed harness run).
  absl::Status screen_error;
  // The screen's gpu_seconds and gpu_busy_seconds.
  double screen_gpu_seconds = 0.05;
  // A screen's median is this times the measured median: the screen's short loop is not
  // the measurement's protocol, so tests can tell the two figures apart.
  double screen_time_factor = 1.0;
  double screen_gpu_busy_seconds = 0.04;
  // A final run's candidate median is this times the measured median (the starting kernel
  // timed beside it is not scaled): a kernel that measured fast in its round and slower
  // than the start in its final run.
  double final_time_factor = 1.0;
  // When set and true for a final run's task id, that run answers INCORRECT.
  std::function<bool(const std::string& task_id)> final_fails;
  // What Profile answers with instead of profiling, when not OK (e.g. ncu's "no kernels
  // captured" as FAILED_PRECONDITION).
  absl::Status profile_error;
  // The GPU name each measurement reports ("" leaves it unset).
  std::string gpu_name;
  std::atomic<int> screen_calls{0};
  // What ReleaseJob answers with instead of OK, when not OK.
  absl::Status release_error;
  // The reference's op signature the fake harness records in each measurement, unless the
  // request sets skip_op_signature. Empty: none recorded.
  v1::OpSignature op_signature;
  // What Profile reports for every kernel: SOL (memory SOL = roofline_efficiency_pct) and
  // the arithmetic-intensity roofline (0: the signature gave no FLOPs/bytes).
  double roofline_efficiency_pct = 40;
  double roofline_bound_pct = 0;
  // The GPU spec Profile reports: peak DRAM bandwidth and fp32 FLOP/s (0: not given).
  double peak_dram_bytes_per_second = 0;
  double peak_fp32_flops = 0;
  // The time a profile reports it held the GPU (ProfileResponse.gpu_seconds); 0: none
  // reported, as from an older worker.
  double profile_gpu_seconds = 0;
  double profile_gpu_busy_seconds = 0;  // ProfileResponse.gpu_busy_seconds
  absl::Mutex mu;
  std::vector<std::string> completed ABSL_GUARDED_BY(mu);  // task ids answered OK
  std::vector<v1::MeasureRequest> measure_requests ABSL_GUARDED_BY(mu);  // every one received
  std::vector<v1::ProfileRequest> profile_requests ABSL_GUARDED_BY(mu);  // every one received
  std::vector<v1::ScreenRequest> screen_requests ABSL_GUARDED_BY(mu);    // every one received
  std::vector<std::string> released_jobs ABSL_GUARDED_BY(mu);  // ReleaseJob's job ids, in order
};

class FakeWorker : public GpuWorker {
 public:
  explicit FakeWorker(FakeGpu* gpu) : gpu_(gpu) {}
  absl::StatusOr<v1::MeasureResponse> Measure(const v1::MeasureRequest& r, absl::Duration,
                                              CancelToken* cancel) override {
    auto guard = Enter();
    {
      absl::MutexLock lock(&gpu_->mu);
      gpu_->measure_requests.push_back(r);
    }
    if (gpu_->dead) return absl::UnavailableError("worker gone");
    absl::SleepFor(gpu_->delay);
    if (cancel && cancel->cancelled()) return absl::CancelledError("cancelled");
    if (gpu_->dead) return absl::UnavailableError("worker died mid-task");
    v1::MeasureResponse out;
    *out.mutable_measurement() = gpu_->measure(r.kernel().source());
    if (absl::StrContains(r.task_id(), "/final/")) {
      v1::TimingStats* t = out.mutable_measurement()->mutable_candidate();
      t->set_median_ms(t->median_ms() * gpu_->final_time_factor);
      if (gpu_->final_fails && gpu_->final_fails(r.task_id())) {
        out.mutable_measurement()->set_verdict(v1::VERDICT_INCORRECT);
        out.mutable_measurement()->mutable_correctness()->set_reason("final run: wrong");
      }
    }
    if (r.measure_baselines()) {
      out.mutable_measurement()->mutable_eager()->set_median_ms(2.0);
      out.mutable_measurement()->mutable_compiled()->set_median_ms(1.5);
    }
    if (!r.reference_kernel().source().empty()) {
      *out.mutable_measurement()->mutable_reference_kernel() =
          gpu_->measure(r.reference_kernel().source()).candidate();
    }
    if (gpu_->op_signature.ops_size() > 0 && !r.skip_op_signature()) {
      *out.mutable_measurement()->mutable_op_signature() = gpu_->op_signature;
    }
    if (!gpu_->gpu_name.empty()) out.mutable_measurement()->set_gpu_name(gpu_->gpu_name);
    // A measurement that says it ended at its preparation (prepare_seconds, no
    // gpu_seconds) held no GPU, as the real worker reports it.
    if (out.measurement().prepare_seconds() == 0) {
      out.mutable_measurement()->set_gpu_seconds(0.1);
      out.mutable_measurement()->set_gpu_busy_seconds(gpu_->gpu_busy_seconds);
    }
    absl::MutexLock lock(&gpu_->mu);
    gpu_->completed.push_back(r.task_id());
    return out;
  }
  absl::StatusOr<v1::ScreenResponse> Screen(const v1::ScreenRequest& r, absl::Duration,
                                            CancelToken* cancel) override {
    auto guard = Enter();
    gpu_->screen_calls++;
    {
      absl::MutexLock lock(&gpu_->mu);
      gpu_->screen_requests.push_back(r);
    }
    if (gpu_->dead) return absl::UnavailableError("worker gone");
    absl::SleepFor(gpu_->delay);
    if (cancel && cancel->cancelled()) return absl::CancelledError("cancelled");
    if (!gpu_->screen_error.ok()) return gpu_->screen_error;
    v1::ScreenResponse out;
    for (int i = 0; i < r.kernels_size(); ++i) {
      v1::Measurement m = gpu_->measure(r.kernels(i).source());
      v1::ScreenResult* x = out.add_results();
      x->set_index(i);
      x->set_ok(m.verdict() == v1::VERDICT_CORRECT);
      if (x->ok()) {
        x->set_median_ms(m.candidate().median_ms() * gpu_->screen_time_factor);
      } else {
        x->set_reason(m.correctness().reason().empty() ? v1::Verdict_Name(m.verdict())
                                                       : m.correctness().reason());
      }
    }
    out.set_gpu_seconds(gpu_->screen_gpu_seconds);
    out.set_gpu_busy_seconds(gpu_->screen_gpu_busy_seconds);
    out.set_log("fake screen");
    absl::MutexLock lock(&gpu_->mu);
    gpu_->completed.push_back(r.task_id());
    return out;
  }
  absl::StatusOr<v1::ReleaseJobResponse> ReleaseJob(const v1::ReleaseJobRequest& r,
                                                    absl::Duration) override {
    {
      absl::MutexLock lock(&gpu_->mu);
      gpu_->released_jobs.push_back(r.job_id());
    }
    if (gpu_->dead) return absl::UnavailableError("worker gone");
    if (!gpu_->release_error.ok()) return gpu_->release_error;
    v1::ReleaseJobResponse out;
    out.set_released(true);
    return out;
  }
  absl::StatusOr<v1::ProfileResponse> Profile(const v1::ProfileRequest& r, absl::Duration,
                                              CancelToken* cancel) override {
    auto guard = Enter();
    {
      absl::MutexLock lock(&gpu_->mu);
      gpu_->profile_requests.push_back(r);
    }
    if (gpu_->dead) return absl::UnavailableError("worker gone");
    absl::SleepFor(gpu_->delay);
    if (!gpu_->profile_error.ok()) return gpu_->profile_error;
    v1::ProfileResponse out;
    auto* k = out.mutable_metrics()->add_kernels();
    k->set_kernel_name("kernel");
    k->set_duration_ns(1000);
    out.mutable_metrics()->set_memory_sol_pct(gpu_->roofline_efficiency_pct);
    out.mutable_metrics()->set_compute_sol_pct(10);
    out.mutable_metrics()->set_roofline_efficiency_pct(gpu_->roofline_efficiency_pct);
    out.mutable_metrics()->set_roofline_bound_pct(gpu_->roofline_bound_pct);
    out.mutable_gpu()->set_name("Fake H200");
    out.mutable_gpu()->set_arch("sm_90");
    out.mutable_gpu()->set_peak_dram_bytes_per_second(gpu_->peak_dram_bytes_per_second);
    if (gpu_->peak_fp32_flops > 0) (*out.mutable_gpu()->mutable_peak_flops())["fp32"] = gpu_->peak_fp32_flops;
    if (gpu_->profile_gpu_seconds > 0) out.set_gpu_seconds(gpu_->profile_gpu_seconds);
    out.set_gpu_busy_seconds(gpu_->profile_gpu_busy_seconds);
    return out;
  }
  absl::StatusOr<v1::DescribeWorkerResponse> Describe(absl::Duration) override {
    return v1::DescribeWorkerResponse();
  }

 private:
  struct Guard {
    FakeGpu* g;
    ~Guard() { g->in_flight--; }
  };
  Guard Enter() {
    gpu_->calls++;
    int now = ++gpu_->in_flight;
    int prev = gpu_->max_in_flight.load();
    while (now > prev && !gpu_->max_in_flight.compare_exchange_weak(prev, now)) {
    }
    return Guard{gpu_};
  }
  FakeGpu* gpu_;
};

// Maps addresses to fake GPUs.
class FakeWorkerFactory : public GpuWorkerFactory {
 public:
  std::map<std::string, FakeGpu*> gpus;
  absl::StatusOr<std::unique_ptr<GpuWorker>> Connect(const std::string& address) override {
    auto it = gpus.find(address);
    if (it == gpus.end()) return absl::UnavailableError("no such fake worker");
    return std::unique_ptr<GpuWorker>(new FakeWorker(it->second));
  }
};

}  // namespace kagent::testing

#endif  // KAGENT_SERVICES_COORDINATOR_TESTING_FAKES_H_
