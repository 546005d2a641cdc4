// Hardware counters through CUPTI's Range Profiler (CUDA 12.6+), part of
// libkagent_cupti.so: auto range (every kernel launched while a pass runs is one range)
// and user replay (the caller runs the same work once per pass; nothing is saved or
// restored between passes, so a forward that is not idempotent gives wrong counters).
//
// Exported C API (ctypes; each call returns an int, -1 on error with the reason in
// kagent_cupti_counters_error()):
//   int kagent_cupti_counters_begin(const char* metrics_csv, int max_ranges)
//       On the calling thread's current CUDA context: sets the profiler up for the
//       comma-separated metric names (those the chip does not have are left out and
//       listed in the meta line) and at most `max_ranges` kernels per pass. Returns the
//       number of passes (> 0). One collection at a time per process.
//   int kagent_cupti_counters_prepare(const char* metrics_csv)
//       The host half of begin ahead of time: profiler initialization and the config
//       image for the metrics and the context's counter availability (the first one in
//       a process also loads and initializes the NVIDIA perf libraries: 0.5-1 s of CPU
//       that the GPU would otherwise be held for). A begin with the same metrics_csv on
//       the same context then only enables the profiler; one with others configures
//       anew. Returns the number of passes (> 0), or -1 (and nothing kept). A prepare
//       replaces an earlier one; refused while a collection runs. Its counter
//       availability query waits out CUPTI_ERROR_HARDWARE_BUSY for up to
//       kPrepareBusyWaitMs (30 s): before the GPU is held, another process may be
//       profiling under it; a begin that must configure waits up to kFirstPassBusyWaitMs
//       (2 of 44 profiles of the H100 suite's second half, session 26, failed so: their
//       prepare had not configured and begin found the previous profile's profiler busy).
//   int kagent_cupti_counters_begin_replay(const char* metrics_csv, int max_ranges,
//                                          int kernel_replay)
//       begin, with kernel replay when `kernel_replay` != 0: CUPTI replays each kernel
//       once per pass itself (saving and restoring the memory it may write), so one
//       pass_begin / forward / pass_end collects everything (pass_end returns 1).
//       For measuring the two modes' costs (tests/gpu/cupti_pass_cost.py).
//   int kagent_cupti_counters_pass_begin(void)   0, or -1. The first pass's start is
//       tried again while CUPTI answers CUPTI_ERROR_HARDWARE_BUSY, for up to
//       kFirstPassBusyWaitMs: the profiler of the process that held the GPU just before
//       (killed as it gave the slot back) can hold the hardware for a moment (2 of 63
//       profiles of the H100 suite, session 25, each right after another profile).
//   int kagent_cupti_counters_pass_end(void)     1 when every pass was submitted, 0 when
//                                                another pass is needed, -1 on error
//   int kagent_cupti_counters_end(const char* out_path)
//       Decodes the passes, evaluates every range and appends one "counters" line per
//       range and one "counters_meta" line (formats in trace_record.h) to `out_path`;
//       turns the profiler off. 0, or -1. After an error anywhere, the collection is
//       torn down and a new begin may follow (a begin while one runs is refused and
//       leaves that one running).
//   int kagent_cupti_counters_end_unless_dropped(const char* out_path)
//       end, except that when a pass launched more kernels than `max_ranges` (CUPTI
//       dropped ranges) it writes nothing and returns 2: the caller may collect again
//       with a larger `max_ranges`. The counter data image, its setup and every pass
//       cost in proportion to `max_ranges` (on an H100, 12 passes of a 1-kernel forward:
//       0.6 s in all with 4 ranges, 2.7 s with 1024), so a small first guess pays.
//   const char* kagent_cupti_counters_error(void)
//       The last error's text ("" when none); valid until the next call of this API.
//
// Thread-safety: the calls are serialized by one mutex, but pass_begin/pass_end bracket
// the caller's kernels on the context given to begin, so one thread should drive a
// collection. Needs only the process's CUDA context. Meant to run beside the Activity-API
// tracer of kagent_cupti.cc (the profile takes kernel names and durations from the
// trace); that the two coexist is checked on a GPU only (tests/gpu/cupti_vs_ncu.sh: on
// an H200 and an H100 in December 2026, docs/metrics-ncu.md).
#ifndef KAGENT_SERVICES_PROFILER_CUPTI_RANGE_COUNTERS_H_
#define KAGENT_SERVICES_PROFILER_CUPTI_RANGE_COUNTERS_H_

extern "C" {
int kagent_cupti_counters_begin(const char* metrics_csv, int max_ranges);
int kagent_cupti_counters_prepare(const char* metrics_csv);
int kagent_cupti_counters_begin_replay(const char* metrics_csv, int max_ranges,
                                       int kernel_replay);
int kagent_cupti_counters_pass_begin(void);
int kagent_cupti_counters_pass_end(void);
int kagent_cupti_counters_end(const char* out_path);
int kagent_cupti_counters_end_unless_dropped(const char* out_path);
const char* kagent_cupti_counters_error(void);
}

#endif  // KAGENT_SERVICES_PROFILER_CUPTI_RANGE_COUNTERS_H_
