// Harness: what a GPU worker's BenchmarkService asks of the Python harness, as an
// interface. HarnessClient (harness_client.h) is the implementation; the service's tests
// (services/benchmark) put a scripted one in its place to check the order of prepare,
// GPU slot and measure.
//
// Implementations are thread-safe: the service calls them from many RPC threads at once
// (a Prepare runs while another request's Measure holds the GPU).
#ifndef KAGENT_COMMON_HARNESS_HARNESS_H_
#define KAGENT_COMMON_HARNESS_HARNESS_H_

#include <optional>
#include <string>

#include "absl/status/statusor.h"
#include "common/subprocess/subprocess.h"
#include "kagent/v1/benchmark_service.pb.h"

namespace kagent {

// What preparing a candidate (before it takes the GPU) gave.
struct PrepareResult {
  // A prepared candidate process for Measure; empty when none (Measure does the work).
  std::string handle;
  // The candidate's final verdict, reached without the GPU (a COMPILE_ERROR, or a CRASH,
  // TIMEOUT or OOM while it prepared): the answer, and no GPU is taken.
  std::optional<v1::Measurement> final;
  // Wall time of the prepare step; 0 when there was none.
  double seconds = 0;
  // Why there is no handle or no prepare step at all (for the log).
  std::string reason;
};

class Harness {
 public:
  virtual ~Harness() = default;

  // Prepares `request`'s candidate on the worker's CPU cores. Never fails: without a
  // prepare step (no kernel, no job id, a one-shot harness) or when it fails, the result
  // has no handle and no final verdict, and Measure does everything. `cancel` may be null.
  virtual PrepareResult Prepare(const v1::MeasureRequest& request, const CancelToken* cancel) = 0;

  // Gate and timing, using `prepared_handle` when not empty. Never fails for a candidate's
  // fault (those are verdicts); a harness failure is VERDICT_INFRA_ERROR (VERDICT_TIMEOUT
  // when the harness did not answer in time) with the reason.
  virtual v1::Measurement Measure(const v1::MeasureRequest& request,
                                  const std::string& prepared_handle,
                                  const CancelToken* cancel) = 0;

  // Prepares `request`'s screen on the worker's CPU cores: the variants' process, their
  // import and a compile dry run of each. Never fails, like Prepare; the result never has
  // a final verdict (a variant's compile error is its screen result).
  virtual PrepareResult PrepareScreen(const v1::ScreenRequest& request,
                                      const CancelToken* cancel) = 0;

  // The short screen of a kernel's variants, in `prepared_handle`'s process when not
  // empty. Errors: the harness could not run it (UNAVAILABLE, DEADLINE_EXCEEDED,
  // CANCELLED, FAILED_PRECONDITION without a server, INTERNAL when it refused the
  // request); worker_id and the GPU times are left to the caller.
  virtual absl::StatusOr<v1::ScreenResponse> Screen(const v1::ScreenRequest& request,
                                                    const std::string& prepared_handle,
                                                    const CancelToken* cancel) = 0;

  // Drops what the harness keeps for `job_id`; true when it held something.
  virtual absl::StatusOr<bool> ReleaseJob(const std::string& job_id) = 0;

  // Drops a prepared candidate (or screen) whose measurement will not run (the GPU slot was not
  // granted in time, or the caller went away), so it does not hold one of the harness's
  // places for prepared candidates until it expires. Best effort: failures are logged.
  virtual void ReleasePrepared(const std::string& handle) = 0;
};

}  // namespace kagent

#endif  // KAGENT_COMMON_HARNESS_HARNESS_H_
