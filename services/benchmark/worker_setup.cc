#include "services/benchmark/worker_setup.h"

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <thread>

#include "absl/strings/str_cat.h"
#include "common/client.h"
#include "common/grpc_status.h"
#include "common/install_paths.h"
#include "common/logging.h"
#include "common/status.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "services/benchmark/benchmark_service.h"
#include "services/benchmark/call_cancel.h"
#include "services/benchmark/gpu_slot.h"
#include "services/profiler/gpu_spec.h"
#include "services/profiler/profiler_service.h"

namespace kagent {
namespace {

namespace fs = std::filesystem;

// ProfilerService on a worker: the same GPU slot as measurements, so the GPU runs one
// task at a time whichever service it came through.
class SlottedProfilerService final : public v1::ProfilerService::Service {
 public:
  SlottedProfilerService(ProfilerServiceImpl* inner, GpuSlot* slot, const Authenticator* auth)
      : inner_(inner), slot_(slot), auth_(auth) {}

  grpc::Status Profile(grpc::ServerContext* context, const v1::ProfileRequest* request,
                       v1::ProfileResponse* response) override {
    KAGENT_AUTHENTICATE(caller, auth_, context);
    LogScope scope({.job_id = request->job_id(), .request_id = caller.request_id});
    absl::Status valid = inner_->ValidateRequest(*request);
    if (!valid.ok()) return ToGrpcStatus(valid);
    absl::Time deadline = absl::FromChrono(context->deadline());
    absl::Status got = slot_->Acquire(request->job_id(), deadline,
                                      [context] { return context->IsCancelled(); });
    if (!got.ok()) return ToGrpcStatus(got);
    GpuSlotLease lease(slot_);
    absl::StatusOr<v1::ProfileResponse> r = absl::UnknownError("not run");
    {
      ServerCallCancel cancel(context);
      r = inner_->RunProfile(*request, cancel.token(), deadline - absl::Now());
    }
    if (!r.ok()) return ToGrpcStatus(r.status());
    *response = *std::move(r);
    return grpc::Status::OK;
  }

 private:
  ProfilerServiceImpl* inner_;
  GpuSlot* slot_;
  const Authenticator* auth_;
};

}  // namespace

void WorkerOptions::Register(OptionSet& o) {
  o.AddString("worker-id", &worker_id, "this worker's id (default worker-<gpu>)");
  o.AddInt("gpu", &gpu, "CUDA device index this worker owns (CUDA_VISIBLE_DEVICES)");
  o.AddString("device", &device, "cuda, or cpu to run candidates under Triton's interpreter");
  o.AddString("python", &python, "Python with torch and triton (default .venv/bin/python)");
  o.AddString("harness-dir", &harness_dir, "folder holding the kagent_harness package");
  o.AddString("cupti-lib", &cupti_lib, "libkagent_cupti.so for kernel tracing; empty: none");
  o.AddString("ncu", &ncu, "Nsight Compute CLI");
  o.AddString("coordinator", &coordinator, "coordinator to register with (host:port)");
  o.AddString("advertise", &advertise, "address the coordinator dials (default: --listen)");
  o.AddDouble("lease-renew-seconds", &lease_renew_seconds, "how often to renew the registration");
  o.AddValidator([this] { return Validate(); });
}

double RenewIntervalSeconds(double configured, int64_t lease_seconds) {
  if (lease_seconds <= 0) return configured;
  return std::min(configured, static_cast<double>(lease_seconds) / 3);
}

absl::Status WorkerOptions::Validate() const {
  if (device != "cuda" && device != "cpu") return absl::InvalidArgumentError("--device must be cuda or cpu");
  if (gpu < 0 || gpu > 63) return absl::InvalidArgumentError("--gpu must be in [0, 63]");
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

absl::StatusOr<v1::GpuSpec> DetectGpu(const HarnessClient& harness) {
  if (harness.options().device == "cpu") {
    v1::GpuSpec s;
    s.set_name("cpu (triton interpreter)");
    s.set_arch("cpu");
    return s;
  }
  KAGENT_ASSIGN_OR_RETURN(nlohmann::json info, harness.GpuInfo(/*measure_ceilings=*/false));
  if (info.value("ok", true) == false || !info.contains("name")) {
    return absl::FailedPreconditionError(absl::StrCat(
        "no CUDA GPU visible to the harness (CUDA_VISIBLE_DEVICES=",
        harness.options().cuda_visible_devices, "): ", info.value("reason", info.dump())));
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
  const HarnessClient* harness = ctx.Keep(std::make_unique<HarnessClient>(ho));
  KAGENT_ASSIGN_OR_RETURN(v1::GpuSpec gpu, DetectGpu(*harness));
  KLOG(INFO).With("worker", o.worker_id) << "worker drives " << gpu.name() << " (device "
                                         << o.device << " " << o.gpu << ")";
  GpuSlot* slot = ctx.Keep(std::make_unique<GpuSlot>());
  BenchmarkServiceOptions bo;
  bo.worker_id = o.worker_id;
  bo.gpu_index = o.gpu;
  auto* bench = ctx.Keep(std::make_unique<BenchmarkServiceImpl>(bo, harness, slot, gpu, ctx.auth,
                                                                &ctx.metrics->registry()));
  ctx.host->AddService(bench, v1::BenchmarkService::service_full_name());

  ProfilerServiceOptions po;
  po.python = o.python;
  po.harness_pythonpath = o.harness_dir;
  po.ncu_path = o.ncu;
  po.cupti_library = o.cupti_lib;
  po.gpu_index = o.gpu;
  auto* prof = ctx.Keep(std::make_unique<ProfilerServiceImpl>(po, ctx.auth));
  auto* slotted = ctx.Keep(std::make_unique<SlottedProfilerService>(prof, slot, ctx.auth));
  ctx.host->AddService(slotted, v1::ProfilerService::service_full_name());

  if (!o.coordinator.empty()) {
    // Register after the server is up, then renew the lease until stop.
    auto stop = std::make_shared<std::atomic<bool>>(false);
    auto thread = std::make_shared<std::thread>();
    ServiceHost* host = ctx.host;
    std::string token = ctx.server_options->internal_token;
    std::string listen = ctx.server_options->listen;
    ctx.OnStarted([=]() -> absl::Status {
      std::string advertise = o.advertise;
      if (advertise.empty()) {
        std::string h = listen.substr(0, listen.rfind(':'));
        if (h == "0.0.0.0" || h == "[::]" || h.empty()) {
          char name[256] = {0};
          gethostname(name, sizeof(name) - 1);
          h = name;
        }
        advertise = absl::StrCat(h, ":", host->port());
      }
      KAGENT_ASSIGN_OR_RETURN(auto channel, MakeChannel(o.coordinator, ChannelOptions()));
      auto stub = std::shared_ptr<v1::JobService::Stub>(v1::JobService::NewStub(channel));
      v1::RegisterWorkerRequest req;
      req.set_worker_id(o.worker_id);
      req.set_address(advertise);
      *req.add_gpus() = gpu;
      *thread = std::thread([=] {
        double interval = o.lease_renew_seconds;
        while (!stop->load()) {
          CallOptions co;
          co.timeout = absl::Seconds(5);
          co.token = token;
          auto c = MakeClientContext(co);
          v1::RegisterWorkerResponse resp;
          grpc::Status s = stub->RegisterWorker(c.get(), req, &resp);
          if (!s.ok()) {
            KLOG(WARNING) << "registration with " << o.coordinator << " failed: " << s.error_message();
          } else {
            double next = RenewIntervalSeconds(o.lease_renew_seconds, resp.lease_seconds());
            if (next != interval) {
              KLOG(INFO) << "registered with " << o.coordinator << " for " << resp.lease_seconds()
                         << " s; renewing every " << next << " s";
            }
            interval = next;
          }
          for (int i = 0; i < interval * 10 && !stop->load(); ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(100));
          }
        }
      });
      return absl::OkStatus();
    });
    ctx.OnStop([stop, thread] {
      stop->store(true);
      if (thread->joinable()) thread->join();
    });
  }
  return absl::OkStatus();
}

}  // namespace kagent
