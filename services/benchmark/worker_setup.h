// Builds a GPU worker (BenchmarkService, and ProfilerService sharing its GPU slot) on a
// ServiceContext, and keeps it registered with a coordinator under a lease. Shared by the
// kagent-benchmark binary and kagentd (which starts one worker per local GPU).
#ifndef KAGENT_SERVICES_BENCHMARK_WORKER_SETUP_H_
#define KAGENT_SERVICES_BENCHMARK_WORKER_SETUP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "common/harness/harness_client.h"
#include "common/options.h"
#include "common/server.h"
#include "common/service_main.h"
#include "kagent/v1/common.pb.h"
#include "common/harness/sandbox_flags.h"

namespace kagent {

// The worker's harness server (docs/harness.md "The harness server"): flags shared by
// kagent-benchmark and kagentd.
struct HarnessServerFlags {
  bool enabled = true;         // --harness-server; false: one-shot harness runs
  int pool = 2;                // --harness-pool: warm candidate processes, 0..16
  int64_t trial_cache_mb = 0;  // --trial-cache-mb: GPU memory of the job trial cache; 0: default
  int prepared_max = 4;        // --prepared-max: prepared candidates held at once, 0..64
                               // (0: no prepare step; measure does everything)

  void Register(OptionSet& o);
  absl::Status Validate() const;
};

struct WorkerOptions {
  std::string worker_id;             // default: worker-<gpu>
  int gpu = 0;                       // CUDA device index this worker owns
  std::string device = "cuda";       // "cuda", or "cpu" (Triton interpreter, no timing)
  std::string python;                // default: <root>/.venv/bin/python, else python3
  std::string harness_dir;           // default: <root>/python
  std::string cupti_lib;             // libkagent_cupti.so; default: next to the binary
  std::string ncu = "ncu";
  std::string profiler_backend = "auto";  // --profiler-backend: auto | ncu | cupti
  std::string coordinator;           // register with this coordinator (host:port)
  std::string advertise;             // address the coordinator dials; default from --listen
  double lease_renew_seconds = 10;
  HarnessServerFlags harness_server;
  SandboxFlags sandbox;
  // Files holding secrets this process knows of (SecretFiles, DatabaseFiles), hidden from
  // candidates beside --sandbox-hide. Not flags: the binary fills them in before
  // SetUpWorker.
  std::vector<std::string> secret_files;

  void Register(OptionSet& o);
  absl::Status Validate() const;
};

// How often a registered worker renews its registration: `configured`
// (--lease-renew-seconds), shortened to a third of the lease the coordinator granted
// (RegisterWorkerResponse.lease_seconds), so that two renewals in a row may fail before
// the lease lapses; `configured` when no lease is known (0: not yet registered).
double RenewIntervalSeconds(double configured, int64_t lease_seconds);

// Fills defaults that depend on the install (python, harness dir, cupti lib).
void ResolveWorkerPaths(WorkerOptions& o);

// Asks the harness which GPU this is (gpuinfo) and returns its spec; on device "cpu", a
// spec named "cpu (triton interpreter)". FAILED_PRECONDITION when no GPU is visible.
// `pci_bus_id` (may be null) gets the device's PCI bus id when gpuinfo reports one.
absl::StatusOr<v1::GpuSpec> DetectGpu(const HarnessClient& harness,
                                      std::string* pci_bus_id = nullptr);

absl::Status SetUpWorker(const WorkerOptions& options, ServiceContext& ctx);

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_WORKER_SETUP_H_
