// kagent-profiler: a profiling-only GPU worker (Nsight Compute, or the CUPTI tracer where
// ncu is absent). GPU workers normally serve profiles from kagent-benchmark, which shares
// one GPU slot between measuring and profiling; this binary serves nodes that only profile.
#include "common/install_paths.h"
#include "common/service_main.h"
#include "kagent/v1/profiler_service.grpc.pb.h"
#include "services/profiler/profiler_service.h"
#include "common/status.h"
#include "common/harness/sandbox_flags.h"

int main(int argc, char** argv) {
  kagent::ProfilerServiceOptions po;
  kagent::SandboxFlags sandbox;
  const kagent::OptionSet* flags = nullptr;
  std::string python, harness_dir, backend = "auto";
  return kagent::ServiceMain(
      argc, argv, "kagent-profiler",
      [&](kagent::OptionSet& o) {
        o.AddString("python", &python, "Python with torch and triton (default .venv/bin/python)");
        o.AddString("harness-dir", &harness_dir, "folder holding the kagent_harness package");
        o.AddString("ncu", &po.ncu_path, "Nsight Compute CLI");
        o.AddString("profiler-backend", &backend,
                    kagent::kProfilerBackendHelp);
        o.AddString("cupti-lib", &po.cupti_library, "libkagent_cupti.so for the CUPTI backend");
        o.AddInt("gpu", &po.gpu_index, "CUDA device index (CUDA_VISIBLE_DEVICES)");
        sandbox.Register(o);
        flags = &o;
      },
      [&](kagent::ServiceContext& ctx) -> absl::Status {
        po.python = python.empty() ? kagent::DefaultPython() : python;
        if (harness_dir.empty()) {
          std::string pkg = kagent::FindInstallFile("python/kagent_harness/__init__.py");
          if (!pkg.empty()) harness_dir = pkg.substr(0, pkg.size() - std::string("/kagent_harness/__init__.py").size());
        }
        po.harness_pythonpath = harness_dir;
        KAGENT_ASSIGN_OR_RETURN(po.backend, kagent::ParseProfilerBackend(backend));
        po.sandbox = sandbox.mode;
        po.sandbox_hide = kagent::SandboxHidePaths(
            sandbox, kagent::SecretFiles(*ctx.server_options, flags->config_path()));
        KAGENT_ASSIGN_OR_RETURN(po.ncu_user, kagent::NcuUserForSandbox());
        auto* svc = ctx.Keep(std::make_unique<kagent::ProfilerServiceImpl>(po, ctx.auth));
        ctx.host->AddService(svc, kagent::v1::ProfilerService::service_full_name());
        return absl::OkStatus();
      });
}
