// Screening, the step between generating a round's kernel and measuring it.
//
// A generated kernel that comes with variants (GeneratedKernel.variants: the heuristic
// brain's renders of its template at neighbouring knob values) is screened before it is
// measured: one BenchmarkService.Screen call (GPU task kind kScreen) times the kernel and
// its variants, each checked once against the reference and timed with a short loop, in
// one sandboxed process. The fastest variant that passed becomes the candidate's kernel,
// which then goes through the full correctness gate and timing (Measure) like any other.
// A screen's figure is never a measurement: it ranks variants of one kernel against each
// other and is reported as "screen, not a measurement"; only Measure's result is stored
// as the candidate's Measurement.
//
// This file holds the policy (the task id, the request, which variant wins, what is
// logged and stored); JobRun (job_run.cc) runs the task through the Scheduler and
// charges it to the job. Everything here is a pure function: thread-safe, no I/O.
#ifndef KAGENT_SERVICES_COORDINATOR_SCREENING_H_
#define KAGENT_SERVICES_COORDINATOR_SCREENING_H_

#include <string>
#include <vector>

#include "absl/status/status.h"
#include "kagent/v1/benchmark_service.pb.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// The most kernels one ScreenRequest may carry (benchmark_service.proto: 1..32). A
// generated kernel with more variants is screened with the first kMaxScreenKernels - 1.
inline constexpr int kMaxScreenKernels = 32;

// The kernels a candidate's screen times: the kernel as generated first (index 0), then
// its variants in order, at most kMaxScreenKernels in all.
std::vector<v1::KernelSource> ScreenKernels(
    const v1::KernelSource& generated,
    const google::protobuf::RepeatedPtrField<v1::KernelSource>& variants);

// The screen's GPU task id, "JOB/rR/wI/screen/HASH": deterministic in the job, round,
// worker index and the kernels screened (HASH is FNV-1a 64 of their languages and
// sources), so a resumed job is answered from the stored result of the same screen, and
// a different set of kernels never gets another set's answer.
std::string ScreenTaskId(const std::string& job_id, int round, int worker_index,
                         const std::vector<v1::KernelSource>& kernels);

// The ScreenRequest for `kernels` (timing_reps and timeout left to the worker's defaults).
v1::ScreenRequest MakeScreenRequest(const std::string& task_id, const std::string& job_id,
                                    const v1::Problem& problem,
                                    const std::vector<v1::KernelSource>& kernels);

// What the screen decided for one candidate.
struct ScreenChoice {
  int index = -1;        // into the kernels screened; -1: none, measure the kernel as generated
  double median_ms = 0;  // the screen's (short-loop) median of the chosen kernel
  std::string message;   // the JOB_EVENT_LOG line, starting with `label`
};

// The fastest result that is ok with a positive median and whose kernel is not the
// parent's (normalized source; `parent_source` empty: not checked, since measuring the
// parent again would tell nothing). Results with an index out of range or repeated are
// ignored. `label` names the candidate in the message ("r1-w0"), e.g.
//   "r1-w0: screened 7 variants: #3 fastest 0.912 ms (screen, not a measurement); measuring it"
// or, when nothing qualifies, "...: none passed (#0: REASON; ...); measuring the kernel as
// generated".
ScreenChoice ChooseScreened(const std::string& label, const std::vector<v1::KernelSource>& kernels,
                            const v1::ScreenResponse& response, const std::string& parent_source);

// The JOB_EVENT_LOG line for a screen call that failed (`status` not OK).
std::string ScreenFailedMessage(const std::string& label, int kernels, const absl::Status& status);

// round-R/CANDIDATE/screen.json: the task id, each kernel screened (index, origin,
// language, its result), the choice, the screen's GPU-seconds (held and busy), worker
// and log tail; or the error when the call failed. Sources are not repeated (the
// candidate's kernel.py is the chosen one). `note` says this is no measurement.
std::string ScreenArtifactJson(const std::string& task_id,
                               const std::vector<v1::KernelSource>& kernels,
                               const v1::ScreenResponse* response, const absl::Status& status,
                               const ScreenChoice& choice);

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_SCREENING_H_
