// libkagent_cupti.so: a CUPTI Activity-API kernel tracer injected into a CUDA process.
//
// Loaded by the CUDA driver when the process sets CUDA_INJECTION64_PATH to this library:
// the driver calls InitializeInjection() at CUDA initialization. From then on every
// kernel (CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, which does not serialize kernels) is
// appended as one JSON line to the file named by $KAGENT_CUPTI_OUT; the format is in
// trace_record.h. Without $KAGENT_CUPTI_OUT the library does nothing.
//
// Exported C API (callable through ctypes from the harness, which may also dlopen the
// library itself instead of relying on injection):
//   int InitializeInjection(void)          1 on success (the driver's convention)
//   int kagent_cupti_mark(const char* n)   writes a marker line at cuptiGetTimestamp();
//                                          0 on success
//   int kagent_cupti_flush(void)           cuptiActivityFlushAll, writes what it got;
//                                          0 on success
//   long long kagent_cupti_kernels_seen(void)
//                                          kernel records delivered so far (after a
//                                          flush: every kernel completed before it);
//                                          -1 when tracing is off
// Records are buffered by CUPTI and reach the file at a flush, when a buffer fills, and
// at process exit (atexit). Thread-safe: CUPTI may deliver buffers on its own thread;
// writes are whole lines under a mutex.
#include <cupti.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>

#include "services/profiler/cupti/trace_record.h"

#define KAGENT_CUPTI_EXPORT extern "C" __attribute__((visibility("default")))

namespace {

constexpr size_t kBufferBytes = 8u << 20;
constexpr size_t kBufferAlign = 8;

// Process-lifetime state; intentionally leaked (used from atexit and CUPTI threads).
struct TracerState {
  std::once_flag init_once;
  std::atomic<bool> enabled{false};
  std::atomic<long long> kernels_seen{0};
  std::unique_ptr<kagent::cupti::TraceWriter> writer;
};

TracerState& State() {
  static TracerState* state = new TracerState();
  return *state;
}

void LogCuptiError(const char* what, CUptiResult result) {
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  std::fprintf(stderr, "kagent_cupti: %s failed: %s\n", what, text != nullptr ? text : "?");
}

void CUPTIAPI BufferRequested(uint8_t** buffer, size_t* size, size_t* max_num_records) {
  void* memory = std::aligned_alloc(kBufferAlign, kBufferBytes);
  *buffer = static_cast<uint8_t*>(memory);
  *size = memory != nullptr ? kBufferBytes : 0;
  *max_num_records = 0;  // as many as fit
}

void CUPTIAPI BufferCompleted(CUcontext context, uint32_t stream_id, uint8_t* buffer,
                              size_t size, size_t valid_size) {
  std::string lines;
  CUpti_Activity* record = nullptr;
  for (;;) {
    CUptiResult status = cuptiActivityGetNextRecord(buffer, valid_size, &record);
    if (status == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    if (status != CUPTI_SUCCESS) {
      LogCuptiError("cuptiActivityGetNextRecord", status);
      break;
    }
    if (record->kind != CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL &&
        record->kind != CUPTI_ACTIVITY_KIND_KERNEL) {
      continue;
    }
    const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
    kagent::cupti::KernelRecord out;
    out.name = kagent::cupti::DemangleKernelName(kernel->name);
    out.start_ns = kernel->start;
    out.end_ns = kernel->end;
    out.stream = kernel->streamId;
    out.device = kernel->deviceId;
    out.grid[0] = kernel->gridX;
    out.grid[1] = kernel->gridY;
    out.grid[2] = kernel->gridZ;
    out.block[0] = kernel->blockX;
    out.block[1] = kernel->blockY;
    out.block[2] = kernel->blockZ;
    out.correlation = kernel->correlationId;
    out.registers = kernel->registersPerThread;
    out.static_smem = kernel->staticSharedMemory;
    out.dynamic_smem = kernel->dynamicSharedMemory;
    lines += kagent::cupti::FormatKernelRecord(out);
    State().kernels_seen.fetch_add(1, std::memory_order_relaxed);
  }
  size_t dropped = 0;
  if (cuptiActivityGetNumDroppedRecords(context, stream_id, &dropped) == CUPTI_SUCCESS &&
      dropped > 0) {
    std::fprintf(stderr, "kagent_cupti: %zu activity records dropped\n", dropped);
  }
  TracerState& state = State();
  if (state.writer != nullptr && !state.writer->Write(lines)) {
    std::fprintf(stderr, "kagent_cupti: cannot write %s\n", state.writer->path().c_str());
  }
  std::free(buffer);
}

void FlushAtExit() {
  if (State().enabled.load()) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
}

// Returns true when tracing is on (idempotent; safe from any thread).
bool EnsureStarted() {
  TracerState& state = State();
  std::call_once(state.init_once, [&state] {
    const char* path = std::getenv("KAGENT_CUPTI_OUT");
    if (path == nullptr || *path == '\0') return;
    state.writer = std::make_unique<kagent::cupti::TraceWriter>(path);
    CUptiResult status = cuptiActivityRegisterCallbacks(BufferRequested, BufferCompleted);
    if (status != CUPTI_SUCCESS) {
      LogCuptiError("cuptiActivityRegisterCallbacks", status);
      return;
    }
    status = cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    if (status != CUPTI_SUCCESS) {
      LogCuptiError("cuptiActivityEnable(CONCURRENT_KERNEL)", status);
      return;
    }
    state.enabled.store(true);
    std::atexit(FlushAtExit);
  });
  return state.enabled.load();
}

}  // namespace

KAGENT_CUPTI_EXPORT int InitializeInjection(void) {
  EnsureStarted();
  return 1;  // the driver treats 0 as a failed injection
}

KAGENT_CUPTI_EXPORT int kagent_cupti_mark(const char* name) {
  if (!EnsureStarted()) return -1;
  uint64_t timestamp = 0;
  CUptiResult status = cuptiGetTimestamp(&timestamp);
  if (status != CUPTI_SUCCESS) {
    LogCuptiError("cuptiGetTimestamp", status);
    return -1;
  }
  std::string line = kagent::cupti::FormatMarkerRecord(name != nullptr ? name : "", timestamp);
  return State().writer->Write(line) ? 0 : -1;
}

KAGENT_CUPTI_EXPORT int kagent_cupti_flush(void) {
  if (!EnsureStarted()) return -1;
  // Forced: also hands over buffers that still have room, so every kernel completed so
  // far reaches the file before this returns.
  CUptiResult status = cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  if (status != CUPTI_SUCCESS) {
    LogCuptiError("cuptiActivityFlushAll", status);
    return -1;
  }
  return 0;
}

KAGENT_CUPTI_EXPORT long long kagent_cupti_kernels_seen(void) {
  if (!EnsureStarted()) return -1;
  return State().kernels_seen.load(std::memory_order_relaxed);
}
