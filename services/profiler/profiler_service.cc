#include "services/profiler/profiler_service.h"

#include <cmath>
#include <filesystem>
#include <optional>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/cancel.h"
#include "common/file_io.h"
#include "common/grpc_status.h"
#include "common/harness/protocol.h"
#include "common/logging.h"
#include "common/status.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/hardware_metrics.h"
#include "kernel_model/ncu_metrics.h"
#include "services/profiler/cupti_backend.h"
#include "services/profiler/ncu_backend.h"

namespace kagent {

absl::StatusOr<ProfilerServiceOptions::Backend> ParseProfilerBackend(absl::string_view text) {
  if (text == "auto") return ProfilerServiceOptions::Backend::kAuto;
  if (text == "ncu") return ProfilerServiceOptions::Backend::kNcu;
  if (text == "cupti") return ProfilerServiceOptions::Backend::kCupti;
  return absl::InvalidArgumentError(
      absl::StrCat("--profiler-backend must be auto, ncu or cupti, not '", text, "'"));
}
namespace {

constexpr int kDefaultComputeCapability = 90;

// The op signature of a profile: the one the harness recorded, else the request's (the
// harness skips recording when the request brings one). Kept in the response; returns it
// for the roofline, or nullptr when neither has one.
const kagent::v1::OpSignature* KeepSignature(const HarnessProfileResult& harness,
                                             const kagent::v1::ProfileRequest& request,
                                             kagent::v1::ProfileResponse* response) {
  if (harness.has_op_signature) {
    *response->mutable_op_signature() = harness.op_signature;
  } else if (request.op_signature().ops_size() > 0) {
    *response->mutable_op_signature() = request.op_signature();
  } else {
    return nullptr;
  }
  return &response->op_signature();
}

}  // namespace

ProfilerServiceImpl::ProfilerServiceImpl(ProfilerServiceOptions options,
                                         const Authenticator* auth, CommandRunner* runner)
    : options_(std::move(options)), auth_(auth), runner_(runner) {}

absl::Status ProfilerServiceImpl::ValidateRequest(const kagent::v1::ProfileRequest& request) const {
  const size_t limit = options_.max_source_bytes;
  if (request.problem().source().empty()) {
    return absl::InvalidArgumentError(
        "problem.source is empty: send the reference Python source (class Model, "
        "get_inputs, get_init_inputs)");
  }
  if (request.problem().source().size() > limit) {
    return absl::InvalidArgumentError(absl::StrCat("problem.source is ",
                                                   request.problem().source().size(),
                                                   " bytes; the limit is ", limit));
  }
  if (!request.has_kernel() || request.kernel().source().empty()) {
    return absl::InvalidArgumentError(
        "kernel.source is empty: send the candidate's Python source defining ModelNew");
  }
  if (request.kernel().source().size() > limit) {
    return absl::InvalidArgumentError(absl::StrCat("kernel.source is ",
                                                   request.kernel().source().size(),
                                                   " bytes; the limit is ", limit));
  }
  if (!std::isfinite(request.timeout_seconds()) || request.timeout_seconds() < 0) {
    return absl::InvalidArgumentError(
        "timeout_seconds must be a finite number >= 0 (0 means the worker default)");
  }
  return absl::OkStatus();
}

std::optional<kagent::v1::GpuSpec> ProfilerServiceImpl::GpuSpec() {
  absl::MutexLock lock(&spec_mu_);
  if (spec_detected_) return spec_;
  spec_detected_ = true;
  absl::StatusOr<std::unique_ptr<ScopedTempDir>> dir =
      ScopedTempDir::Create("kagent-gpuinfo-", options_.temp_dir_parent);
  if (!dir.ok()) {
    KLOG(WARNING) << "gpuinfo: " << dir.status().ToString();
    return std::nullopt;
  }
  HarnessCommand harness{options_.python, options_.harness_pythonpath,
                         std::to_string(options_.gpu_index), {}, 0};
  ProfileRun run{(*dir)->path(), "", options_.gpuinfo_timeout, nullptr};
  const std::string out_path = (*dir)->path() + "/gpuinfo.json";
  SubprocessOptions subprocess = HarnessSubprocessOptions(
      harness, run,
      HarnessArgv(options_.python, "gpuinfo", {kMeasureCeilingsFlag, "--out", out_path}));
  subprocess.stdin_data = "{}";
  absl::StatusOr<SubprocessResult> result = runner_->Run(subprocess);
  if (!result.ok() || !result->ok()) {
    KLOG(WARNING) << "gpuinfo failed: "
                  << (result.ok() ? result->Describe() + " " + result->stderr_data
                                  : result.status().ToString());
    return std::nullopt;
  }
  absl::StatusOr<std::string> text = ReadFileBounded(out_path, size_t{1} << 20);
  absl::StatusOr<GpuInfo> info =
      text.ok() ? ParseGpuInfoJson(*text) : absl::StatusOr<GpuInfo>(text.status());
  if (!info.ok()) {
    KLOG(WARNING) << "gpuinfo: " << info.status().ToString();
    return std::nullopt;
  }
  detected_cc_ = info->major * 10 + info->minor;
  absl::StatusOr<kagent::v1::GpuSpec> spec = GpuSpecFor(*info);
  if (!spec.ok()) {
    KLOG(WARNING) << "gpu spec: " << spec.status().ToString();
    return std::nullopt;
  }
  KLOG(INFO) << "GPU " << spec->name() << " (" << spec->arch() << ")"
             << (spec->measured() ? ", measured ceilings" : ", datasheet ceilings");
  spec_ = *std::move(spec);
  return spec_;
}

bool ProfilerServiceImpl::SpecDetected() {
  absl::MutexLock lock(&spec_mu_);
  return spec_detected_;
}

int ProfilerServiceImpl::ComputeCapability() {
  if (options_.compute_capability > 0) return options_.compute_capability;
  GpuSpec();
  absl::MutexLock lock(&spec_mu_);
  if (detected_cc_ > 0) return detected_cc_;
  if (spec_.has_value()) {
    int cc = ParseComputeCapability(spec_->arch());
    if (cc > 0) return cc;
  }
  return kDefaultComputeCapability;
}

absl::StatusOr<kagent::v1::ProfileResponse> ProfilerServiceImpl::RunProfile(
    const kagent::v1::ProfileRequest& request, const CancelToken* cancel,
    absl::Duration deadline_left, ProfileGpuGate* gate, GatedRunInfo* gate_info) {
  KAGENT_RETURN_IF_ERROR(ValidateRequest(request));
  absl::Duration timeout = request.timeout_seconds() > 0
                               ? absl::Seconds(request.timeout_seconds())
                               : options_.default_timeout;
  timeout = std::min({timeout, options_.max_timeout, deadline_left});

  // Pick the backend before taking the GPU.
  bool use_ncu = options_.backend == ProfilerServiceOptions::Backend::kNcu;
  if (options_.backend == ProfilerServiceOptions::Backend::kAuto) {
    std::error_code ec;
    use_ncu = options_.cupti_library.empty() ||
              !std::filesystem::exists(options_.cupti_library, ec);
    if (use_ncu && !runner_->CanRun(options_.ncu_path)) {
      return absl::FailedPreconditionError(kNcuMissingMessage);
    }
  }

  // One GPU task at a time on this GPU: the gate's job when there is one.
  std::optional<absl::MutexLock> gpu_lock;
  if (gate == nullptr) gpu_lock.emplace(&gpu_mu_);
  if (gate != nullptr && !SpecDetected()) {
    // gpuinfo measures the GPU's copy bandwidth and FLOP/s: it needs the GPU to itself,
    // like the profiled forwards, so it runs under the gate too (once per service).
    KAGENT_RETURN_IF_ERROR(gate->Acquire(cancel));
    GpuSpec();
    gate->Release();
  }
  const std::optional<kagent::v1::GpuSpec> spec = GpuSpec();
  const int cc = ComputeCapability();

  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<ScopedTempDir> dir,
                          ScopedTempDir::Create("kagent-profile-", options_.temp_dir_parent));
  HarnessProfileParams params;
  params.profile_warmup_iters = options_.profile_warmup_iters;
  params.timeout = timeout;
  params.cuda_visible_devices = std::to_string(options_.gpu_index);
  params.network_isolation = !use_ncu;  // ncu reaches its target over loopback TCP
  params.sandbox = options_.sandbox;
  params.sandbox_hide = options_.sandbox_hide;
  // The CUPTI backend collects the hardware counters in the candidate's process.
  if (!use_ncu) params.cupti_counters = CuptiCounterMetrics(cc);
  const std::string request_path = dir->path() + "/request.json";
  KAGENT_RETURN_IF_ERROR(WriteFileAtomically(request_path, BuildHarnessProfileRequest(request, params)));

  HarnessCommand harness{options_.python, options_.harness_pythonpath,
                         std::to_string(options_.gpu_index), {}, 0};
  ProfileRun run{dir->path(), request_path, timeout, cancel, gate, gate_info};
  kagent::v1::ProfileResponse response;
  const kagent::v1::OpSignature* signature = nullptr;

  if (use_ncu) {
    NcuBackendOptions ncu{options_.ncu_path, NcuMetricsForArch(cc), options_.ncu_user};
    KAGENT_ASSIGN_OR_RETURN(NcuProfile profile, RunNcuProfile(runner_, ncu, harness, run));
    signature = KeepSignature(profile.harness, request, &response);
    response.mutable_phases_ms()->insert(profile.harness.phases_ms.begin(),
                                         profile.harness.phases_ms.end());
    KAGENT_ASSIGN_OR_RETURN(
        *response.mutable_metrics(),
        BuildHardwareMetrics(std::move(profile.report.kernels), "ncu", signature,
                             spec.has_value() ? &*spec : nullptr));
    if (profile.raw_csv.size() > options_.max_raw_csv_bytes) {
      profile.raw_csv.resize(options_.max_raw_csv_bytes);
    }
    response.mutable_metrics()->set_raw_csv(std::move(profile.raw_csv));
  } else {
    CuptiBackendOptions cupti{options_.cupti_library, cc, options_.ncu_user, spec};
    KAGENT_ASSIGN_OR_RETURN(CuptiProfile profile, RunCuptiProfile(runner_, cupti, harness, run));
    signature = KeepSignature(profile.harness, request, &response);
    response.mutable_phases_ms()->insert(profile.harness.phases_ms.begin(),
                                         profile.harness.phases_ms.end());
    std::string audit = CuptiAuditHeader(profile) + profile.raw_trace;
    KAGENT_ASSIGN_OR_RETURN(*response.mutable_metrics(),
                            BuildHardwareMetrics(std::move(profile.kernels), "cupti", signature,
                                                 spec.has_value() ? &*spec : nullptr));
    // The audit field says how the counters came (or why not) and what is missing, then
    // holds the trace.
    if (audit.size() > options_.max_raw_csv_bytes) audit.resize(options_.max_raw_csv_bytes);
    response.mutable_metrics()->set_raw_csv(std::move(audit));
  }
  if (spec.has_value()) *response.mutable_gpu() = *spec;
  return response;
}

grpc::Status ProfilerServiceImpl::Profile(grpc::ServerContext* context,
                                          const kagent::v1::ProfileRequest* request,
                                          kagent::v1::ProfileResponse* response) {
  KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
  LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id,
                  .tenant = caller.tenant});
  absl::Duration deadline_left = absl::InfiniteDuration();
  const auto deadline = context->deadline();
  if (deadline != std::chrono::system_clock::time_point::max()) {
    deadline_left = absl::FromChrono(deadline) - absl::Now();
    if (deadline_left <= absl::ZeroDuration()) {
      return ToGrpcStatus(absl::DeadlineExceededError("the call's deadline has passed"));
    }
  }
  // Client cancellation reaches the child process through the token.
  absl::StatusOr<kagent::v1::ProfileResponse> result;
  {
    ServerCallCancel cancel(context);
    result = RunProfile(*request, cancel.token(), deadline_left);
  }
  if (!result.ok()) {
    KLOG(WARNING) << "profile failed: " << result.status().ToString();
    return ToGrpcStatus(result.status());
  }
  *response = *std::move(result);
  return grpc::Status::OK;
}

}  // namespace kagent
