// The CUPTI backend, for profiles without Nsight Compute: runs the harness's profile mode
// with libkagent_cupti.so injected (CUDA_INJECTION64_PATH and KAGENT_CUPTI_LIB) and its
// trace written to <work>/cupti.jsonl, then keeps the kernels that started inside the
// profiled window and turns each into a KernelMetrics: from the trace,
// gpu__time_duration.sum (exact device duration), launch__grid_size, launch__block_size,
// launch__registers_per_thread, launch__shared_mem_per_block_static/dynamic, grid and
// block; from the range profiler's "counters" lines (when the request asked for
// cupti_counters and the collection worked), the hardware counters under their ncu names,
// so HardwareMetrics' SOL figures, aggregate and roofline inputs come out of the same
// BuildHardwareMetrics as under ncu. What neither gives is listed by CuptiMissingMetrics.
//
// The trace comes from $KAGENT_CUPTI_OUT when the tracer wrote there, else from the
// harness result's "cupti_records" (the harness points the tracer at its own work dir).
//
// The window: kernels whose start lies between a "profile_begin" marker and the next
// "profile_end" marker (every such pair counts), markers the harness writes through
// kagent_cupti_mark() around the profiled forwards. A trace without them is an error:
// the trace also holds warm-up and reference kernels, which must not be counted.
//
// The counters: user replay, auto range, one forward per pass, so range i of the pass is
// the i-th kernel of a forward. The profiled forwards repeat that forward, so the window's
// kernel k gets range k mod R (R ranges); a window whose kernel count is not a multiple of
// R (a forward that launches different kernels each time), or dropped ranges, leave the
// counters out with the reason (CuptiProfile::counters_note).
//
// Thread-safe: no state.
#ifndef KAGENT_SERVICES_PROFILER_CUPTI_BACKEND_H_
#define KAGENT_SERVICES_PROFILER_CUPTI_BACKEND_H_

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
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
    // Launch resources; -1 when the record has none (a tracer built before them).
    int64_t registers = -1;
    int64_t static_smem = -1;
    int64_t dynamic_smem = -1;
  };
  // One range of the range profiler: its metrics (non-finite values are absent).
  struct Counters {
    int64_t range = 0;
    std::string name;
    std::map<std::string, double> values;
  };
  struct CountersMeta {
    int passes = 0;
    int64_t ranges = 0;
    int64_t dropped = 0;
    std::vector<std::string> missing;  // requested, not on this chip
    std::string chip;
  };
  struct Marker {
    std::string name;
    uint64_t ts_ns = 0;
  };
  std::vector<Kernel> kernels;   // in file order
  std::vector<Marker> markers;
  // The last collection: the counters lines before its meta line, in range order.
  std::vector<Counters> counters;
  std::optional<CountersMeta> counters_meta;
  int malformed_lines = 0;       // lines that were not a known JSON record
};

// Parses the tracer's JSON-lines output (format in cupti/trace_record.h).
CuptiTrace ParseCuptiTrace(absl::string_view text);

// The kernels inside the [begin, end] marker windows, sorted by start time, as
// KernelMetrics. FAILED_PRECONDITION when there are no such windows.
absl::StatusOr<std::vector<kagent::v1::KernelMetrics>> CuptiKernelsInWindows(
    const CuptiTrace& trace, absl::string_view begin_marker = kCuptiBeginMarker,
    absl::string_view end_marker = kCuptiEndMarker);

// Adds the trace's counters to `kernels` (from CuptiKernelsInWindows): kernel k gets range
// k mod R's values, never overwriting a value the trace gave. FAILED_PRECONDITION, with
// `kernels` unchanged, when there is no collection, ranges were dropped, or the kernel
// count is not a multiple of the ranges.
absl::Status MergeCuptiCounters(const CuptiTrace& trace,
                                std::vector<kagent::v1::KernelMetrics>* kernels);

// The metric set for compute capability `cc` that the range profiler is asked for: the
// set minus launch__* (launch configuration, not counters), gpu__time_duration.sum
// (the trace measures it without counters running) and smsp__sass_* (instruction counts
// the range profiler reads as 0: ncu instruments the code for them).
std::vector<std::string> CuptiCounterMetrics(int cc);

// The names of the set for `cc` that no kernel of `kernels` has.
std::vector<std::string> CuptiMissingMetrics(int cc,
                                             const std::vector<kagent::v1::KernelMetrics>& kernels);

struct CuptiBackendOptions {
  std::string library_path;  // libkagent_cupti.so
  int compute_capability = 90;
  // When set (a root worker: NcuUserForSandbox), the harness runs as this user, with the
  // run's files (the request, the result, the trace) in a directory of its own under
  // kNcuTempDir, as under ncu (UserRunDir): the sandboxed candidate, dropped to that
  // user, writes the trace there, and bwrap, set up as that user, can reach every path
  // it is given. setpriv (util-linux) must be on PATH.
  std::optional<NcuUser> run_as;
  // The GPU's limits: when set, each kernel's launch__occupancy_limit_* values and
  // launch__waves_per_multiprocessor are computed from its launch configuration
  // (kernel_model/launch_limits.h); the activity records do not carry them.
  std::optional<kagent::v1::GpuSpec> gpu;
};

struct CuptiProfile {
  std::vector<kagent::v1::KernelMetrics> kernels;
  std::string raw_trace;     // the trace lines inside the windows
  HarnessProfileResult harness;
  int counter_passes = 0;    // > 0 when the counters are in `kernels`
  std::string counters_note; // why there are no counters (empty when there are)
  std::vector<std::string> missing_metrics;
  bool launch_limits_computed = false;  // options.gpu filled some kernel's launch limits
};

// The first line of raw_csv: "# backend cupti: counters via the range profiler (N
// passes, user replay)[; launch limits and waves computed from each launch's
// configuration]; missing: ..." or "# backend cupti: trace only (<note>)[...]; missing:
// ...", newline included.
std::string CuptiAuditHeader(const CuptiProfile& profile);

absl::StatusOr<CuptiProfile> RunCuptiProfile(CommandRunner* runner,
                                             const CuptiBackendOptions& options,
                                             const HarnessCommand& harness,
                                             const ProfileRun& run);

}  // namespace kagent

#endif  // KAGENT_SERVICES_PROFILER_CUPTI_BACKEND_H_
