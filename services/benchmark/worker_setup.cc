#include "services/benchmark/worker_setup.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/ascii.h"
#include "common/advertise.h"
#include "common/cancel.h"
#include "common/client.h"
#include "common/grpc_status.h"
#include "common/harness/protocol.h"
#include "common/install_paths.h"
#include "common/logging.h"
#include "common/status.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "services/benchmark/benchmark_service.h"
#include "services/benchmark/gpu_busy_meter.h"
#include "services/benchmark/gpu_slot.h"
#include "kernel_model/gpu_spec.h"
#include "services/profiler/profile_gate.h"
#include "services/profiler/profiler_service.h"

namespace kagent {
namespace {

namespace fs = std::filesystem;

// A profile's GPU gate on a worker: its GPU slot, taken when the harness has prepared
// (its processes started, the candidate built and compiled) and given back when the
// profiled forwards are done.
class SlotProfileGate final : public ProfileGpuGate {
 public:
  SlotProfileGate(GpuSlot* slot, GpuBusyMeter* meter, HarnessClient* harness, std::string job_id,
                  absl::Time deadline, grpc::ServerContext* context)
      : slot_(slot), meter_(meter), harness_(harness), job_id_(std::move(job_id)),
        deadline_(deadline), context_(context) {}

  absl::Status Acquire(const CancelToken* cancel) override {
    const absl::Time asked = absl::Now();
    absl::Status got = slot_->Acquire(job_id_, deadline_, [this, cancel] {
      return context_->IsCancelled() || (cancel != nullptr && cancel->cancelled());
    });
    held_from_ = absl::Now();
    wait_seconds_ += absl::ToDoubleSeconds(held_from_ - asked);
    // The harness server's preparing processes stop while the profile holds the slot, as
    // they do while a measurement is timed (HeldStopped).
    if (got.ok() && harness_ != nullptr) {
      held_ = harness_->HoldCandidatesStopped(
          std::max(absl::Seconds(1), std::min(deadline_ - held_from_, absl::Minutes(10))));
    }
    return got;
  }
  void Release() override {
    held_.reset();  // before the slot goes: the next task may time at once
    slot_->Release();
    const absl::Time to = absl::Now();
    const double held = absl::ToDoubleSeconds(to - held_from_);
    held_seconds_ += held;
    if (meter_ != nullptr) busy_seconds_ += std::clamp(meter_->BusySeconds(held_from_, to), 0.0, held);
  }
  // The time the slot was held, over every Acquire/Release pair, and of it the time the
  // GPU ran kernels (NVML; 0 when unknown); the time spent waiting for it.
  double held_seconds() const { return held_seconds_; }
  double busy_seconds() const { return busy_seconds_; }
  double wait_seconds() const { return wait_seconds_; }

 private:
  GpuSlot* slot_;
  GpuBusyMeter* meter_;
  HarnessClient* harness_;  // may be null: nothing to hold
  std::unique_ptr<HeldStopped> held_;
  const std::string job_id_;
  const absl::Time deadline_;
  grpc::ServerContext* context_;
  absl::Time held_from_;
  double held_seconds_ = 0;
  double busy_seconds_ = 0;
  double wait_seconds_ = 0;
};

// ProfilerService on a worker: the same GPU slot as measurements, so the GPU runs one
// task at a time whichever service it came through; the slot is held only for the
// profile's GPU part (SlotProfileGate), and the response's gpu_seconds is that time.
class SlottedProfilerService final : public v1::ProfilerService::Service {
 public:
  SlottedProfilerService(ProfilerServiceImpl* inner, GpuSlot* slot, GpuBusyMeter* meter,
                         HarnessClient* harness, const Authenticator* auth)
      : inner_(inner), slot_(slot), meter_(meter), harness_(harness), auth_(auth) {}

  grpc::Status Profile(grpc::ServerContext* context, const v1::ProfileRequest* request,
                       v1::ProfileResponse* response) override {
    KAGENT_AUTHENTICATE_INTERNAL(caller, auth_, context);
    LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id});
    absl::Status valid = inner_->ValidateRequest(*request);
    if (!valid.ok()) return ToGrpcStatus(valid);
    const absl::Time deadline = absl::FromChrono(context->deadline());
    SlotProfileGate gate(slot_, meter_, harness_, request->job_id(), deadline, context);
    GatedRunInfo info;
    absl::StatusOr<v1::ProfileResponse> r = absl::UnknownError("not run");
    {
      ServerCallCancel cancel(context);
      r = inner_->RunProfile(*request, cancel.token(), deadline - absl::Now(), &gate, &info);
    }
    KLOG(INFO).With("gpu_seconds", gate.held_seconds()).With("gpu_busy_seconds", gate.busy_seconds())
        .With("prepare_seconds", info.prepare_seconds).With("slot_wait_seconds", gate.wait_seconds())
        .With("grant_to_go_seconds", info.grant_to_go_seconds)
        .With("gpu_part_seconds", info.gpu_part_seconds)
        .With("slot_release_seconds", info.release_seconds)
        .With("phases", r.ok() ? LargestPhases(r->phases_ms(), kLoggedPhases) : std::string())
        << "profiled: " << (r.ok() ? "ok" : r.status().ToString())
        << (info.granted ? "" : " (the GPU was not taken)");
    if (!r.ok()) return ToGrpcStatus(r.status());
    *response = *std::move(r);
    response->set_gpu_seconds(gate.held_seconds());
    response->set_gpu_busy_seconds(gate.busy_seconds());
    return grpc::Status::OK;
  }

 private:
  ProfilerServiceImpl* inner_;
  GpuSlot* slot_;
  GpuBusyMeter* meter_;
  HarnessClient* harness_;  // its server's processes are held stopped during a profile
  const Authenticator* auth_;
};

}  // namespace

void HarnessServerFlags::Register(OptionSet& o) {
  o.AddBool("harness-server", &enabled,
            "measure through one long-lived harness server per GPU (false: a harness process "
            "per measurement)");
  o.AddInt("harness-pool", &pool, "warm candidate processes the harness server keeps (0..16)");
  o.AddInt("trial-cache-mb", &trial_cache_mb,
           "GPU memory the harness server's job trial cache may hold, MiB (0: its default, a "
           "quarter of the GPU's memory)");
  o.AddInt("prepared-max", &prepared_max,
           "candidates the harness server keeps prepared at once, 0..64 (0: candidates are "
           "not prepared before they take the GPU)");
  o.AddValidator([this] { return Validate(); });
}

absl::Status HarnessServerFlags::Validate() const {
  if (pool < 0 || pool > 16) {
    return absl::InvalidArgumentError(absl::StrCat("--harness-pool must be in [0, 16], not ", pool));
  }
  if (trial_cache_mb < 0 || trial_cache_mb > (int64_t{1} << 20)) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--trial-cache-mb must be in [0, 1048576] (0: the server's default), not ", trial_cache_mb));
  }
  if (prepared_max < 0 || prepared_max > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("--prepared-max must be in [0, 64], not ", prepared_max));
  }
  return absl::OkStatus();
}

void WorkerOptions::Register(OptionSet& o) {
  o.AddString("worker-id", &worker_id, "this worker's id (default worker-<gpu>)");
  o.AddInt("gpu", &gpu, "CUDA device index this worker owns (CUDA_VISIBLE_DEVICES)");
  o.AddString("device", &device, "cuda, or cpu to run candidates under Triton's interpreter");
  o.AddString("python", &python, "Python with torch and triton (default .venv/bin/python)");
  o.AddString("harness-dir", &harness_dir, "folder holding the kagent_harness package");
  o.AddString("cupti-lib", &cupti_lib, "libkagent_cupti.so for kernel tracing; empty: none");
  o.AddString("ncu", &ncu, "Nsight Compute CLI");
  o.AddString("profiler-backend", &profiler_backend,
              kProfilerBackendHelp);
  o.AddString("coordinator", &coordinator,
              "coordinator to register with (host:port); comma-separated for several "
              "replicas (--leader-election): the worker registers with each");
  o.AddString("advertise", &advertise, "address the coordinator dials (default: --listen)");
  o.AddDouble("lease-renew-seconds", &lease_renew_seconds, "how often to renew the registration");
  harness_server.Register(o);
  sandbox.Register(o);
  o.AddValidator([this] { return Validate(); });
}

double RenewIntervalSeconds(double configured, int64_t lease_seconds) {
  if (lease_seconds <= 0) return configured;
  return std::min(configured, static_cast<double>(lease_seconds) / 3);
}

absl::Status WorkerOptions::Validate() const {
  if (device != "cuda" && device != "cpu") return absl::InvalidArgumentError("--device must be cuda or cpu");
  if (gpu < 0 || gpu > 63) return absl::InvalidArgumentError("--gpu must be in [0, 63]");
  KAGENT_RETURN_IF_ERROR(ParseProfilerBackend(profiler_backend).status());
  if (lease_renew_seconds < 1 || lease_renew_seconds > 60) {
    return absl::InvalidArgumentError("--lease-renew-seconds must be in [1, 60]");
  }
  return absl::OkStatus();
}

void ResolveWorkerPaths(WorkerOptions& o) {
  if (o.harness_dir.empty()) {
    std::string pkg = FindInstallFile("python/kagent_harness/__init__.py");
    if (!pkg.empty()) o.harness_dir = fs::path(pkg).parent_path().parent_path().string();
  }
  if (o.python.empty()) o.python = DefaultPython();
  if (o.cupti_lib.empty() && o.device == "cuda") {
    // Next to the binary (an install) or in the build tree.
    for (const char* rel : {"libkagent_cupti.so", "services/profiler/libkagent_cupti.so",
                            "build/services/profiler/libkagent_cupti.so"}) {
      std::string p = FindInstallFile(rel);
      if (!p.empty()) {
        o.cupti_lib = p;
        break;
      }
    }
  }
  if (o.worker_id.empty()) o.worker_id = absl::StrCat("worker-", o.device == "cpu" ? "cpu" : "", o.gpu);
}

absl::StatusOr<v1::GpuSpec> DetectGpu(const HarnessClient& harness, std::string* pci_bus_id) {
  if (harness.options().device == "cpu") {
    v1::GpuSpec s;
    s.set_name("cpu (triton interpreter)");
    s.set_arch("cpu");
    return s;
  }
  KAGENT_ASSIGN_OR_RETURN(nlohmann::json info, harness.GpuInfo(/*measure_ceilings=*/false));
  bool failed = info.contains("ok") && info["ok"].is_boolean() && !info["ok"].get<bool>();
  if (failed || !info.contains("name")) {
    std::string reason = info.contains("reason") && info["reason"].is_string()
                             ? info["reason"].get<std::string>()
                             : info.dump();
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA GPU visible to the harness (CUDA_VISIBLE_DEVICES=",
        harness.options().cuda_visible_devices, "): ", reason));
  }
  if (pci_bus_id != nullptr && info.contains("pci_bus_id") && info["pci_bus_id"].is_string()) {
    *pci_bus_id = info["pci_bus_id"].get<std::string>();
  }
  KAGENT_ASSIGN_OR_RETURN(GpuInfo parsed, ParseGpuInfoJson(info.dump()));
  absl::StatusOr<v1::GpuSpec> spec = GpuSpecFor(parsed);
  if (spec.ok()) return spec;
  // An unknown GPU: measure its ceilings once.
  KLOG(WARNING) << "GPU '" << parsed.name << "' is not in the spec table; measuring ceilings";
  KAGENT_ASSIGN_OR_RETURN(nlohmann::json measured, harness.GpuInfo(/*measure_ceilings=*/true));
  KAGENT_ASSIGN_OR_RETURN(GpuInfo with_ceilings, ParseGpuInfoJson(measured.dump()));
  return GpuSpecFor(with_ceilings);
}

absl::Status SetUpWorker(const WorkerOptions& o, ServiceContext& ctx) {
  HarnessOptions ho;
  ho.python = o.python;
  ho.harness_dir = o.harness_dir;
  ho.device = o.device;
  ho.cuda_visible_devices = std::to_string(o.gpu);
  ho.cupti_lib = o.cupti_lib;
  ho.worker_id = o.worker_id;
  ho.use_server = o.harness_server.enabled;
  ho.pool = o.harness_server.pool;
  ho.trial_cache_mb = o.harness_server.trial_cache_mb;
  ho.prepared_max = o.harness_server.prepared_max;
  ho.sandbox = o.sandbox.mode;
  ho.sandbox_hide = SandboxHidePaths(o.sandbox, o.secret_files);
  HarnessClient* harness =
      ctx.Keep(std::make_unique<HarnessClient>(ho, &ctx.metrics->registry()));
  std::string pci_bus_id;
  KAGENT_ASSIGN_OR_RETURN(v1::GpuSpec gpu, DetectGpu(*harness, &pci_bus_id));
  KLOG(INFO).With("worker", o.worker_id)
      << "worker drives " << gpu.name() << " (device " << o.device << " " << o.gpu
      << (pci_bus_id.empty() ? "" : ", PCI " + pci_bus_id) << "), harness "
      << (ho.use_server ? "server" : "one-shot");
  KLOG(INFO).With("worker", o.worker_id)
      << "candidate sandbox " << ho.sandbox << ", hiding "
      << (ho.sandbox_hide.empty() ? "nothing more" : absl::StrJoin(ho.sandbox_hide, " "));
  // The server imports torch (and warms its pool) while the worker starts serving.
  KAGENT_RETURN_IF_ERROR(harness->StartServer());
  ctx.OnStop([harness] { harness->Shutdown(); });
  // Before registering: a server whose first start fails (e.g. --sandbox=required on a host
  // that cannot sandbox: it exits saying why) fails the worker, with its message, rather
  // than being started again and again behind a worker that takes tasks.
  ctx.OnStarted([harness] { return harness->AwaitServerStart(); });
  // NVML numbers devices in PCI order: the bus id names this worker's GPU for sure; the
  // CUDA index is a fallback (the same only under CUDA_DEVICE_ORDER=PCI_BUS_ID).
  GpuBusyMeter* meter = ctx.Keep(o.device == "cuda" ? MakeGpuBusyMeter(pci_bus_id, o.gpu)
                                                     : std::make_unique<NullGpuBusyMeter>());
  GpuSlot* slot = ctx.Keep(std::make_unique<GpuSlot>());
  BenchmarkServiceOptions bo;
  bo.worker_id = o.worker_id;
  bo.gpu_index = o.gpu;
  auto* bench = ctx.Keep(std::make_unique<BenchmarkServiceImpl>(
      bo, harness, slot, meter, gpu, ctx.auth, &ctx.metrics->registry()));
  ctx.host->AddService(bench, v1::BenchmarkService::service_full_name());

  ProfilerServiceOptions po;
  po.python = o.python;
  po.harness_pythonpath = o.harness_dir;
  po.ncu_path = o.ncu;
  KAGENT_ASSIGN_OR_RETURN(po.backend, ParseProfilerBackend(o.profiler_backend));
  po.cupti_library = o.cupti_lib;
  po.gpu_index = o.gpu;
  po.sandbox = ho.sandbox;
  po.sandbox_hide = ho.sandbox_hide;
  KAGENT_ASSIGN_OR_RETURN(po.ncu_user, NcuUserForSandbox());
  auto* prof = ctx.Keep(std::make_unique<ProfilerServiceImpl>(po, ctx.auth));
  auto* slotted = ctx.Keep(std::make_unique<SlottedProfilerService>(prof, slot, meter, harness,
                                                                  ctx.auth));
  ctx.host->AddService(slotted, v1::ProfilerService::service_full_name());

  if (!o.coordinator.empty()) {
    // Register after the server is up, then renew the lease until stop: with each
    // coordinator replica listed, each on its own thread (a replica that is down does
    // not delay the others).
    auto stop = std::make_shared<std::atomic<bool>>(false);
    auto threads = std::make_shared<std::vector<std::thread>>();
    ServiceHost* host = ctx.host;
    std::string token = ctx.server_options->internal_token;
    std::string listen = ctx.server_options->listen;
    ctx.OnStarted([=]() -> absl::Status {
      const std::string advertise =
          o.advertise.empty() ? DefaultAdvertiseAddress(listen, host->port()) : o.advertise;
      v1::RegisterWorkerRequest req;
      req.set_worker_id(o.worker_id);
      req.set_address(advertise);
      *req.add_gpus() = gpu;
      for (absl::string_view entry : absl::StrSplit(o.coordinator, ',', absl::SkipEmpty())) {
        const std::string coordinator(absl::StripAsciiWhitespace(entry));
        KAGENT_ASSIGN_OR_RETURN(auto channel, MakeChannel(coordinator, ChannelOptions()));
        auto stub = std::shared_ptr<v1::JobService::Stub>(v1::JobService::NewStub(channel));
        threads->emplace_back([=] {
          double interval = o.lease_renew_seconds;
          bool failing = false;
          while (!stop->load()) {
            CallOptions co;
            co.timeout = absl::Seconds(5);
            co.token = token;
            auto c = MakeClientContext(co);
            v1::RegisterWorkerResponse resp;
            grpc::Status s = stub->RegisterWorker(c.get(), req, &resp);
            if (!s.ok()) {
              KLOG(WARNING) << "registration with " << coordinator
                            << " failed: " << s.error_message();
              failing = true;
            } else {
              double next = RenewIntervalSeconds(o.lease_renew_seconds, resp.lease_seconds());
              if (next != interval || failing) {
                KLOG(INFO) << "registered with " << coordinator << " for "
                           << resp.lease_seconds() << " s; renewing every " << next << " s";
              }
              interval = next;
              failing = false;
            }
            for (int i = 0; i < interval * 10 && !stop->load(); ++i) {
              std::this_thread::sleep_for(std::chrono::milliseconds(100));
            }
          }
        });
      }
      return absl::OkStatus();
    });
    ctx.OnStop([stop, threads] {
      stop->store(true);
      for (std::thread& thread : *threads) {
        if (thread.joinable()) thread.join();
      }
    });
  }
  return absl::OkStatus();
}

}  // namespace kagent
