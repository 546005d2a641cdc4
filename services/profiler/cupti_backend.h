// The CUPTI backend, for machines without Nsight Compute: runs the harness's profile mode
// with libkagent_cupti.so injected (CUDA_INJECTION64_PATH and KAGENT_CUPTI_LIB) and its
// trace written to <work>/cupti.jsonl, then keeps the kernels that started inside the
// profiled window and turns each into a KernelMetrics with what a trace can give:
// gpu__time_duration.sum (exact device duration), launch__grid_size, launch__block_size,
// grid and block. Every other metric of the set is missing (listed by
// CuptiMissingMetrics); the HardwareMetrics has backend "cupti" and zero SOL figures.
//
// The trace comes from $KAGENT_CUPTI_OUT when the tracer wrote there, else from the
// harness result's "cupti_records" (the harness points the tracer at its own work dir).
//
// The window: kernels whose start lies between a "profile_begin" marker and the next
// "profile_end" marker (every such pair counts), markers the harness writes through
// kagent_cupti_mark() around the profiled forwards. A trace without them is an error:
// the trace also holds warm-up and reference kernels, which must not be counted.
//
// Thread-safe: no state.
#ifndef KAGENT_SERVICES_PROFILER_CUPTI_BACKEND_H_
#define KAGENT_SERVICES_PROFILER_CUPTI_BACKEND_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"
#include "services/profiler/command_runner.h"
#include "services/profiler/ncu_backend.h"

namespace kagent {

inline constexpr char kCuptiBeginMarker[] = "profile_begin";
inline constexpr char kCuptiEndMarker[] = "profile_end";

struct CuptiTrace {
  struct Kernel {
    std::string name;
    uint64_t start_ns = 0;
    uint64_t end_ns = 0;
    int64_t stream = 0;
    int64_t device = 0;
    std::vector<int64_t> grid;
    std::vector<int64_t> block;
    int64_t correlation = 0;
  };
  struct Marker {
    std::string name;
    uint64_t ts_ns = 0;
  };
  std::vector<Kernel> kernels;   // in file order
  std::vector<Marker> markers;
  int malformed_lines = 0;       // lines that were not a known JSON record
};

// Parses the tracer's JSON-lines output (format in cupti/trace_record.h).
CuptiTrace ParseCuptiTrace(absl::string_view text);

// The kernels inside the [begin, end] marker windows, sorted by start time, as
// KernelMetrics. FAILED_PRECONDITION when there are no such windows.
absl::StatusOr<std::vector<kagent::v1::KernelMetrics>> CuptiKernelsInWindows(
    const CuptiTrace& trace, absl::string_view begin_marker = kCuptiBeginMarker,
    absl::string_view end_marker = kCuptiEndMarker);

// The metric names (for compute capability `cc`) a CUPTI trace does not provide.
std::vector<std::string> CuptiMissingMetrics(int cc);

struct CuptiBackendOptions {
  std::string library_path;  // libkagent_cupti.so
};

struct CuptiProfile {
  std::vector<kagent::v1::KernelMetrics> kernels;
  std::string raw_trace;     // the trace lines inside the windows
  HarnessProfileResult harness;
};

absl::StatusOr<CuptiProfile> RunCuptiProfile(CommandRunner* runner,
                                             const CuptiBackendOptions& options,
                                             const HarnessCommand& harness,
                                             const ProfileRun& run);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_CUPTI_BACKEND_H_
