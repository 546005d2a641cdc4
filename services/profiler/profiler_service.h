// ProfilerService: a GPU worker that profiles one candidate at a time on its GPU.
//
// Profile() validates the request, writes the harness request into a private temp dir,
// runs the harness's profile mode under ncu (or, where ncu is absent and the CUPTI
// tracer is available, under the CUPTI backend) with CUDA_VISIBLE_DEVICES pinned to the
// worker's GPU and the request's timeout, and returns HardwareMetrics (per kernel, the
// duration-weighted aggregate, SOL figures, the roofline), the GPU's spec and the op
// signature when the harness reports one.
//
// Ownership: the service does not own `auth` or `runner`; both must outlive it.
// Thread-safety: Profile may be called concurrently; GPU runs are serialized (one task at
// a time per GPU) by an internal mutex; the GPU spec is detected once and cached.
#ifndef KAGENT_SERVICES_PROFILER_PROFILER_SERVICE_H_
#define KAGENT_SERVICES_PROFILER_PROFILER_SERVICE_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/auth.h"
#include "common/subprocess/subprocess.h"
#include "kagent/v1/profiler_service.grpc.pb.h"
#include "services/profiler/command_runner.h"
#include "services/profiler/ncu_user.h"
#include "services/profiler/profile_gate.h"

namespace kagent {

struct ProfilerServiceOptions {
  enum class Backend { kAuto, kNcu, kCupti };

  std::string python = "python3";      // the harness's interpreter
  std::string harness_pythonpath;      // folder holding the kagent_harness package
  std::string ncu_path = "ncu";        // name on PATH or a path
  // The user profiles run as, under ncu and CUPTI alike (ncu_user.h; the mains set it from
  // NcuUserForSandbox()); unset: as this process.
  std::optional<NcuUser> ncu_user;
  std::string cupti_library;           // libkagent_cupti.so; empty: no CUPTI backend
  // kAuto: the CUPTI library when there is one, else ncu. On the H200 its counters agree
  // with ncu's (docs/metrics-ncu.md) and its profiles prepare side by side, where ncu runs
  // one at a time per host (ncu_host_lock.h); ncu alone has the SASS instruction counts.
  Backend backend = Backend::kAuto;
  int gpu_index = 0;                   // CUDA_VISIBLE_DEVICES for every run
  // The candidate sandbox, as the request's "sandbox" and "sandbox_hide" (SandboxFlags in
  // services/benchmark/worker_setup.h); empty mode: not sent.
  std::string sandbox;
  std::vector<std::string> sandbox_hide;
  absl::Duration default_timeout = absl::Seconds(300);  // request timeout 0
  absl::Duration max_timeout = absl::Minutes(30);       // requests are clamped to this
  absl::Duration gpuinfo_timeout = absl::Seconds(120);
  int profile_warmup_iters = 3;
  std::string temp_dir_parent;         // empty: $TMPDIR or /tmp
  // Compute capability (e.g. 90) choosing the metric list; 0: from the detected GPU,
  // else 90.
  int compute_capability = 0;
  size_t max_source_bytes = size_t{1} << 20;
  size_t max_raw_csv_bytes = size_t{4} << 20;
};

// "auto", "ncu" or "cupti" (a --profiler-backend flag); INVALID_ARGUMENT otherwise.
absl::StatusOr<ProfilerServiceOptions::Backend> ParseProfilerBackend(absl::string_view text);

// The --profiler-backend flag's help text, for every binary that has the flag.
inline constexpr char kProfilerBackendHelp[] =
    "auto (the CUPTI library when there is one, else ncu), ncu (Nsight Compute: adds the "
    "SASS instruction counts; one run at a time per host), or cupti (the CUPTI library's "
    "trace and range-profiler counters in the candidate's process)";

class ProfilerServiceImpl final : public kagent::v1::ProfilerService::Service {
 public:
  ProfilerServiceImpl(ProfilerServiceOptions options, const Authenticator* auth,
                      CommandRunner* runner = DefaultCommandRunner());

  grpc::Status Profile(grpc::ServerContext* context, const kagent::v1::ProfileRequest* request,
                       kagent::v1::ProfileResponse* response) override;

  // The logic behind Profile, without gRPC: validation, GPU detection, the run.
  // `cancel` may be null. Without `gate` the whole run holds this service's GPU lock;
  // with one (a worker's GPU slot), the harness prepares without the GPU and the gate
  // decides when the profiled part runs (profile_gate.h); runs then overlap in their
  // preparation. The first gated run also takes the gate for the GPU's detection
  // (GpuSpec measures the GPU), so a gate may be acquired twice. `gate_info` (may be
  // null) gets what the gated harness run did.
  absl::StatusOr<kagent::v1::ProfileResponse> RunProfile(const kagent::v1::ProfileRequest& request,
                                                         const CancelToken* cancel,
                                                         absl::Duration deadline_left =
                                                             absl::InfiniteDuration(),
                                                         ProfileGpuGate* gate = nullptr,
                                                         GatedRunInfo* gate_info = nullptr);

  // INVALID_ARGUMENT naming the field to fix, or OK.
  absl::Status ValidateRequest(const kagent::v1::ProfileRequest& request) const;

  // The worker's GPU spec (detected once through the harness's gpuinfo mode, then
  // cached); nullopt when detection failed or the GPU is unknown without measurements.
  std::optional<kagent::v1::GpuSpec> GpuSpec();

 private:
  // Whether GpuSpec() ran its detection already.
  bool SpecDetected();
  int ComputeCapability();

  const ProfilerServiceOptions options_;
  const Authenticator* const auth_;
  CommandRunner* const runner_;

  absl::Mutex gpu_mu_;  // held for the whole of each ungated GPU run
  absl::Mutex spec_mu_ ABSL_ACQUIRED_AFTER(gpu_mu_);
  bool spec_detected_ ABSL_GUARDED_BY(spec_mu_) = false;
  std::optional<kagent::v1::GpuSpec> spec_ ABSL_GUARDED_BY(spec_mu_);
  int detected_cc_ ABSL_GUARDED_BY(spec_mu_) = 0;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_PROFILER_SERVICE_H_
