// The JSON the profiler exchanges with the Python harness (python/kagent_harness; its
// docs/harness.md is the reference): the request written for `profile` and `gpuinfo`
// modes, and the parts of the result the profiler reads.
//
// Thread-safe (pure functions).
#ifndef KAGENT_SERVICES_PROFILER_HARNESS_REQUEST_H_
#define KAGENT_SERVICES_PROFILER_HARNESS_REQUEST_H_

#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kagent/v1/profiler_service.pb.h"

namespace kagent {

struct HarnessProfileParams {
  int profile_iters = 1;          // forwards inside the NVTX range
  int profile_warmup_iters = 3;   // before it (compilation, autotuning)
  absl::Duration timeout = absl::Seconds(300);
  std::string cuda_visible_devices;
  // Off under ncu: ncu talks to the profiled process over loopback TCP, which a new
  // network namespace cuts.
  bool network_isolation = false;
  // The candidate sandbox: "sandbox" (required | best-effort) and "sandbox_hide" (paths);
  // empty mode: neither is sent.
  std::string sandbox;
  std::vector<std::string> sandbox_hide;
};

// {"mode":"profile","problem_source":...,"kernel_source":...,"language":...,...}
std::string BuildHarnessProfileRequest(const kagent::v1::ProfileRequest& request,
                                       const HarnessProfileParams& params);

// What the profiler reads from the harness's result JSON.
struct HarnessProfileResult {
  bool ok = false;
  std::string verdict;   // e.g. "CRASH", when !ok
  std::string reason;
  std::string log;
  std::vector<std::string> kernels_launched;
  // The CUPTI tracer's records the harness returns ("cupti_records": the trace's JSON
  // objects, kernels and markers), re-serialized one per line; empty when absent.
  std::string cupti_trace_jsonl;
  bool has_op_signature = false;
  kagent::v1::OpSignature op_signature;
};

// INVALID_ARGUMENT when `json` is not a JSON object.
absl::StatusOr<HarnessProfileResult> ParseHarnessProfileResult(absl::string_view json);

// Reads an OpSignature from the harness's JSON form
// {"ops":[{"op":..,"inputs":[{"shape":[..],"strides":[..],"dtype":..}],"outputs":[..]}],
//  "flops":..,"min_bytes":..,"op_class":..}; missing fields stay default.
kagent::v1::OpSignature OpSignatureFromJson(absl::string_view json);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_HARNESS_REQUEST_H_
