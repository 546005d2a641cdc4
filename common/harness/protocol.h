// The harness protocol on the C++ side: how a harness process is started, and the JSON
// of every mode and server op (python/kagent_harness/protocol.py is the Python side;
// docs/harness.md the reference). Request builders turn the service protocol's messages
// into the harness's JSON; result parsers turn its answers back. Nothing here runs a
// process or decides policy (which GPU, ncu or CUPTI, when to prepare): the benchmark and
// profiler services do, through HarnessClient (harness_client.h) or their own command
// lines built on HarnessArgv.
//
// Thread-safe (pure functions).
#ifndef KAGENT_COMMON_HARNESS_PROTOCOL_H_
#define KAGENT_COMMON_HARNESS_PROTOCOL_H_

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kagent/v1/benchmark_service.pb.h"
#include "kagent/v1/profiler_service.pb.h"
#include "nlohmann/json.hpp"

namespace kagent {

// ---- Starting a harness process ----

// `python -m kagent_harness MODE ARGS...` (MODE: measure, profile, gpuinfo, serve, ...).
std::vector<std::string> HarnessArgv(const std::string& python, const std::string& mode,
                                     std::vector<std::string> args);

// The environment a harness process (one-shot or the server) runs with, on top of the
// worker's: PYTHONPATH (the folder holding kagent_harness, when given, then the worker's
// own PYTHONPATH), unbuffered
// output, Triton's interpreter on the CPU, the worker's GPU pinned with
// CUDA_VISIBLE_DEVICES, and the CUPTI tracer's library (each when given).
std::map<std::string, std::string> HarnessEnvironment(const std::string& harness_dir,
                                                      const std::string& device,
                                                      const std::string& cuda_visible_devices,
                                                      const std::string& cupti_lib);

// The candidate sandbox of a one-shot request: "sandbox" (required | best-effort) and
// "sandbox_hide" (paths), set on `request` when `mode` is not empty.
void SetSandboxFields(const std::string& mode, const std::vector<std::string>& hide,
                      nlohmann::json* request);

// ---- measure and prepare ----

// MeasureRequest -> the harness's measure (and prepare) request JSON, without mode, op,
// device, timeout_s or job_id. INVALID_ARGUMENT when its shape_set is not in
// problem.extra_shapes.
absl::StatusOr<nlohmann::json> HarnessRequestFor(const v1::MeasureRequest& request);
// The harness answer (JSON) -> Measurement. INTERNAL when it is not one.
absl::StatusOr<v1::Measurement> MeasurementFromHarnessJson(const nlohmann::json& answer);
// As MeasurementFromHarnessJson, but a server's {ok: false, error} answer (a request it
// could not parse: no verdict) is INTERNAL "the harness refused the request: ...".
absl::StatusOr<v1::Measurement> MeasurementFromAnswer(const nlohmann::json& answer);
// The `n` longest of a harness's phases_ms (a Measurement's or a ProfileResponse's),
// longest first, as "name 612 ms; name 401 ms" (for a worker's log line); "" when empty.
std::string LargestPhases(const google::protobuf::Map<std::string, double>& phases_ms, int n);
// How many phases a worker's task line carries: all a harness run names (about 30), so
// that a run's log accounts for the held seconds (tests/gpu/slot_timeline.py --phases).
inline constexpr int kLoggedPhases = 64;
// Bounds on the harness's checks and warnings a Measurement keeps (Measurement.checks,
// .warnings): entries, and characters per entry (longer ones are cut at a character
// boundary and end in "...").
inline constexpr int kMaxHarnessNotes = 32;
inline constexpr int kMaxHarnessNoteChars = 600;

// What a prepare or prepare_screen answer says.
struct PrepareAnswer {
  std::string handle;  // "prepared": the prepared process; empty when none
  // "result" (prepare): the candidate's final verdict, reached while it prepared, or why
  // that result is unusable; unset when the answer has none.
  std::optional<absl::StatusOr<v1::Measurement>> final;
  // Why there is no handle: the answer's "reason", or why there is no usable answer.
  std::string reason;
};
// Parses the answer of prepare-style server op `op` (named in messages). Returns false
// when there is no usable answer (`answer` is an error, or {ok: false}); `out->reason`
// then says why ("OP failed: ..." or "OP refused: ...").
bool ParsePrepareAnswer(const absl::StatusOr<nlohmann::json>& answer, const char* op,
                        PrepareAnswer* out);

// ---- screen and prepare_screen ----

// ScreenRequest -> the server's screen request JSON (without op, device, timeout_s).
nlohmann::json ScreenRequestFor(const v1::ScreenRequest& request);
// The server's screen answer -> ScreenResponse (one result per kernel, in request order;
// a kernel the answer leaves out is not ok). INTERNAL when the answer is not a screen's.
absl::StatusOr<v1::ScreenResponse> ScreenResponseFromJson(const nlohmann::json& answer,
                                                          int kernels);

// ---- release_job and release_prepared ----

nlohmann::json ReleaseJobRequest(const std::string& job_id);
// The answer's "released" (whether the server held the job); INTERNAL when it refused.
absl::StatusOr<bool> ReleaseJobAnswer(const nlohmann::json& answer);
nlohmann::json ReleasePreparedRequest(const std::string& handle);
// OK, or why the server did not release it (for the log).
absl::Status ReleasePreparedAnswer(const absl::StatusOr<nlohmann::json>& answer);

// ---- gpuinfo ----

// The one-shot gpuinfo request: {"measure_ceilings": ...}.
nlohmann::json GpuInfoRequest(bool measure_ceilings);
// The flag that asks gpuinfo to measure the ceilings on its command line.
inline constexpr char kMeasureCeilingsFlag[] = "--measure-ceilings";

// ---- profile ----

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
  // The CUPTI backend's hardware counters ("cupti_counters": metric names the candidate's
  // process collects with the range profiler after its warm-up); empty: not sent, no
  // counters.
  std::vector<std::string> cupti_counters;
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
  // The counter collection ("cupti_counters": {"ok":..,"passes":..,"error":..}); absent
  // when none was asked for. A failed one leaves the trace usable.
  bool cupti_counters_ran = false;
  bool cupti_counters_ok = false;
  int cupti_counter_passes = 0;
  std::string cupti_counters_error;
  bool has_op_signature = false;
  kagent::v1::OpSignature op_signature;
  std::map<std::string, double> phases_ms;  // "phases_ms": where the run's wall time went
};

// INVALID_ARGUMENT when `json` is not a JSON object.
absl::StatusOr<HarnessProfileResult> ParseHarnessProfileResult(absl::string_view json);

// Reads an OpSignature from the harness's JSON form
// {"ops":[{"op":..,"inputs":[{"shape":[..],"strides":[..],"dtype":..}],"outputs":[..]}],
//  "flops":..,"min_bytes":..,"op_class":..}; missing fields stay default.
kagent::v1::OpSignature OpSignatureFromJson(absl::string_view json);

}  // namespace kagent

#endif  // KAGENT_COMMON_HARNESS_PROTOCOL_H_
