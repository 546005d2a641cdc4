// HarnessClient: runs the Python harness (python/kagent_harness) as a child process,
// JSON in and JSON out, under the sandboxed subprocess runner, and maps its answer onto
// the protocol's messages. The harness itself isolates the candidate in a further child;
// this layer adds the outer wall-clock limit (process group killed), a private temp dir,
// CUDA_VISIBLE_DEVICES pinning, and turns any harness failure into an INFRA_ERROR
// verdict with the reason, so a worker always answers.
//
// Thread-safe (each call owns its child).
#ifndef KAGENT_SERVICES_BENCHMARK_HARNESS_CLIENT_H_
#define KAGENT_SERVICES_BENCHMARK_HARNESS_CLIENT_H_

#include <string>

#include "absl/status/statusor.h"
#include "absl/time/time.h"
#include "common/subprocess/subprocess.h"
#include "kagent/v1/benchmark_service.pb.h"
#include "nlohmann/json.hpp"

namespace kagent {

struct HarnessOptions {
  std::string python = "python3";      // interpreter with torch and triton
  std::string harness_dir;             // folder holding the kagent_harness package
  std::string device = "cuda";         // "cuda" or "cpu" (Triton interpreter; timing is plumbing)
  std::string cuda_visible_devices;    // the GPU this worker owns, e.g. "0"
  std::string cupti_lib;               // libkagent_cupti.so, when built; empty: none
  double default_timeout_seconds = 600;
  double margin_seconds = 60;          // outer limit = request timeout + margin
};

class HarnessClient {
 public:
  explicit HarnessClient(HarnessOptions options) : options_(std::move(options)) {}

  const HarnessOptions& options() const { return options_; }

  // Runs `mode` with `request` (a JSON object; mode, device and timeout are filled in).
  // Returns the harness's JSON answer; UNAVAILABLE/INTERNAL when the harness itself could
  // not run or answered garbage (the message says why, with its stderr tail).
  absl::StatusOr<nlohmann::json> Run(const std::string& mode, nlohmann::json request,
                                     double timeout_seconds, const CancelToken* cancel) const;

  // MeasureRequest -> harness "measure" -> Measurement. Never fails for a candidate's
  // fault: those are verdicts. A harness failure becomes VERDICT_INFRA_ERROR.
  v1::Measurement Measure(const v1::MeasureRequest& request, const CancelToken* cancel) const;

  // The GPU this worker drives ("gpuinfo" mode).
  absl::StatusOr<nlohmann::json> GpuInfo(bool measure_ceilings) const;

 private:
  HarnessOptions options_;
};

// The harness answer (JSON) -> Measurement. Exposed for tests.
absl::StatusOr<v1::Measurement> MeasurementFromHarnessJson(const nlohmann::json& answer);
// MeasureRequest -> the harness's request JSON. Exposed for tests.
absl::StatusOr<nlohmann::json> HarnessRequestFor(const v1::MeasureRequest& request);

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_HARNESS_CLIENT_H_
