// The Range Profiler collection behind range_counters.h. The call order is CUPTI's
// (cupti_range_profiler.h, cupti_profiler_host.h): profiler initialization, the config
// image from the metrics for the chip's counter availability (counter_config.h), enable on the
// context, the counter data image, SetConfig (auto range, user replay), then per pass
// Start / the caller's kernels / Stop, and at the end DecodeData and one
// EvaluateToGpuValues per range.
#include "services/profiler/cupti/range_counters.h"

#include <cuda.h>
#include <cupti.h>
#include <cupti_profiler_host.h>
#include <cupti_profiler_target.h>
#include <cupti_range_profiler.h>
#include <cupti_target.h>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "services/profiler/cupti/counter_config.h"
#include "services/profiler/cupti/trace_record.h"

#define KAGENT_CUPTI_EXPORT extern "C" __attribute__((visibility("default")))

namespace kagent::cupti {
namespace {

// One collection, from begin to end (or to the first error).
struct Collection {
  CUcontext context = nullptr;
  std::string chip;
  bool profiler_initialized = false;
  CounterConfig config;
  CUpti_RangeProfiler_Object* profiler = nullptr;
  std::vector<uint8_t> counter_data;
  bool in_pass = false;
  bool all_submitted = false;
  int passes_started = 0;
};

// How long the first pass's start and a configuration in begin (both with the GPU held)
// wait out CUPTI_ERROR_HARDWARE_BUSY, how long prepare's configuration does (before the
// GPU is held, while another process may be profiling under it), and how often each asks
// again meanwhile (range_counters.h).
constexpr int kFirstPassBusyWaitMs = 2000;
constexpr int kPrepareBusyWaitMs = 30000;
constexpr int kBusyRetryMs = 20;

// Calls `call` (returning a CUptiResult) again every kBusyRetryMs while it answers
// CUPTI_ERROR_HARDWARE_BUSY, for up to `wait_ms`; returns its last answer.
template <typename Call>
CUptiResult RetryWhileBusy(int wait_ms, Call call) {
  CUptiResult result = call();
  for (int waited = 0; result == CUPTI_ERROR_HARDWARE_BUSY && waited < wait_ms;
       waited += kBusyRetryMs) {
    std::this_thread::sleep_for(std::chrono::milliseconds(kBusyRetryMs));
    result = call();
  }
  return result;
}

struct Api {
  std::mutex mutex;
  Collection* active = nullptr;    // guarded by mutex
  Collection* prepared = nullptr;  // configured by prepare, not yet begun; guarded by mutex
  std::string prepared_metrics;    // the metrics_csv it was configured for
  std::string error;               // guarded by mutex
};

Api& State() {
  static Api* api = new Api();  // process lifetime, like the tracer's state
  return *api;
}

// Turns off whatever `c` set up; errors here are ignored (nothing left to report to).
void TearDown(Collection* c) {
  if (c->profiler != nullptr) {
    CUpti_RangeProfiler_Disable_Params p = {CUpti_RangeProfiler_Disable_Params_STRUCT_SIZE};
    p.pRangeProfilerObject = c->profiler;
    cuptiRangeProfilerDisable(&p);
  }
  const bool profiler_initialized = c->profiler_initialized;
  delete c;  // its CounterConfig releases the host object
  if (profiler_initialized) {
    CUpti_Profiler_DeInitialize_Params p = {CUpti_Profiler_DeInitialize_Params_STRUCT_SIZE};
    cuptiProfilerDeInitialize(&p);
  }
}

// Initializes the profiler and builds the configuration for the context's chip and
// counter availability; the availability query waits out a busy profiler (another
// process's collection ending) for up to `busy_wait_ms`.
std::string Configure(Collection* c, const std::vector<std::string>& requested,
                      int busy_wait_ms) {
  CUpti_Profiler_Initialize_Params init = {CUpti_Profiler_Initialize_Params_STRUCT_SIZE};
  if (std::string e = CuptiFailure("cuptiProfilerInitialize", cuptiProfilerInitialize(&init));
      !e.empty()) {
    return e;
  }
  c->profiler_initialized = true;
  CUdevice device = 0;
  if (cuCtxGetDevice(&device) != CUDA_SUCCESS) return "cuCtxGetDevice failed";
  CUpti_Device_GetChipName_Params chip = {CUpti_Device_GetChipName_Params_STRUCT_SIZE};
  chip.deviceIndex = static_cast<size_t>(device);
  if (std::string e = CuptiFailure("cuptiDeviceGetChipName", cuptiDeviceGetChipName(&chip));
      !e.empty()) {
    return e;
  }
  c->chip = chip.pChipName != nullptr ? chip.pChipName : "";
  CUpti_Profiler_GetCounterAvailability_Params availability = {
      CUpti_Profiler_GetCounterAvailability_Params_STRUCT_SIZE};
  availability.ctx = c->context;
  auto query = [&availability] { return cuptiProfilerGetCounterAvailability(&availability); };
  if (std::string e = CuptiFailure("cuptiProfilerGetCounterAvailability (size)",
                                   RetryWhileBusy(busy_wait_ms, query));
      !e.empty()) {
    return e;
  }
  std::vector<uint8_t> image(availability.counterAvailabilityImageSize);
  availability.pCounterAvailabilityImage = image.data();
  if (std::string e = CuptiFailure("cuptiProfilerGetCounterAvailability",
                                   RetryWhileBusy(busy_wait_ms, query));
      !e.empty()) {
    return e;
  }
  return c->config.Build(c->chip, std::move(image), requested);
}

// The calling thread's current CUDA context, or null.
CUcontext CurrentContext() {
  CUcontext context = nullptr;
  return cuCtxGetCurrent(&context) == CUDA_SUCCESS ? context : nullptr;
}

// A new collection on `context`, configured for `requested` (Configure); null, with
// `*error` set and nothing left initialized, when that failed.
Collection* NewConfigured(CUcontext context, const std::vector<std::string>& requested,
                          int busy_wait_ms, std::string* error) {
  auto* c = new Collection();
  c->context = context;
  *error = Configure(c, requested, busy_wait_ms);
  if (error->empty()) return c;
  TearDown(c);
  return nullptr;
}

// Enables the range profiler on the context, sizes and initializes the counter data
// image for `max_ranges` ranges and sets the config (auto range; user replay, or kernel
// replay when `kernel_replay`).
std::string EnableProfiler(Collection* c, int max_ranges, bool kernel_replay) {
  CUpti_RangeProfiler_Enable_Params enable = {CUpti_RangeProfiler_Enable_Params_STRUCT_SIZE};
  enable.ctx = c->context;
  if (std::string e = CuptiFailure("cuptiRangeProfilerEnable", cuptiRangeProfilerEnable(&enable));
      !e.empty()) {
    return e;
  }
  c->profiler = enable.pRangeProfilerObject;
  CUpti_RangeProfiler_GetCounterDataSize_Params size = {
      CUpti_RangeProfiler_GetCounterDataSize_Params_STRUCT_SIZE};
  size.pRangeProfilerObject = c->profiler;
  size.pMetricNames = const_cast<const char**>(c->config.metric_names().data());
  size.numMetrics = c->config.metric_names().size();
  size.maxNumOfRanges = static_cast<size_t>(max_ranges);
  size.maxNumRangeTreeNodes = static_cast<uint32_t>(max_ranges);
  if (std::string e = CuptiFailure("cuptiRangeProfilerGetCounterDataSize",
                             cuptiRangeProfilerGetCounterDataSize(&size));
      !e.empty()) {
    return e;
  }
  c->counter_data.resize(size.counterDataSize);
  CUpti_RangeProfiler_CounterDataImage_Initialize_Params init = {
      CUpti_RangeProfiler_CounterDataImage_Initialize_Params_STRUCT_SIZE};
  init.pRangeProfilerObject = c->profiler;
  init.counterDataSize = c->counter_data.size();
  init.pCounterData = c->counter_data.data();
  if (std::string e = CuptiFailure("cuptiRangeProfilerCounterDataImageInitialize",
                             cuptiRangeProfilerCounterDataImageInitialize(&init));
      !e.empty()) {
    return e;
  }
  CUpti_RangeProfiler_SetConfig_Params config = {
      CUpti_RangeProfiler_SetConfig_Params_STRUCT_SIZE};
  config.pRangeProfilerObject = c->profiler;
  config.configSize = c->config.image().size();
  config.pConfig = c->config.image().data();
  config.counterDataImageSize = c->counter_data.size();
  config.pCounterDataImage = c->counter_data.data();
  config.range = CUPTI_AutoRange;
  config.replayMode = kernel_replay ? CUPTI_KernelReplay : CUPTI_UserReplay;
  config.maxRangesPerPass = static_cast<size_t>(max_ranges);
  config.numNestingLevels = 1;  // auto range: one level
  config.minNestingLevel = 1;
  config.passIndex = 0;
  config.targetNestingLevel = 1;
  return CuptiFailure("cuptiRangeProfilerSetConfig", cuptiRangeProfilerSetConfig(&config));
}

// Decodes the passes and writes one line per range plus the meta line to `out_path`;
// when ranges were dropped and `write_if_dropped` is false, writes nothing and sets
// `*dropped` instead.
std::string DecodeAndWrite(Collection* c, const char* out_path, bool write_if_dropped,
                           bool* dropped) {
  CUpti_RangeProfiler_DecodeData_Params decode = {
      CUpti_RangeProfiler_DecodeData_Params_STRUCT_SIZE};
  decode.pRangeProfilerObject = c->profiler;
  if (std::string e = CuptiFailure("cuptiRangeProfilerDecodeData", cuptiRangeProfilerDecodeData(&decode));
      !e.empty()) {
    return e;
  }
  *dropped = decode.numOfRangeDropped > 0;
  if (*dropped && !write_if_dropped) return "";
  CUpti_RangeProfiler_GetCounterDataInfo_Params info = {
      CUpti_RangeProfiler_GetCounterDataInfo_Params_STRUCT_SIZE};
  info.pCounterDataImage = c->counter_data.data();
  info.counterDataImageSize = c->counter_data.size();
  if (std::string e = CuptiFailure("cuptiRangeProfilerGetCounterDataInfo",
                             cuptiRangeProfilerGetCounterDataInfo(&info));
      !e.empty()) {
    return e;
  }
  std::string lines;
  const CounterConfig& cfg = c->config;
  std::vector<double> values(cfg.metric_names().size());
  for (size_t range = 0; range < info.numTotalRanges; ++range) {
    CountersRecord record;
    record.range = range;
    CUpti_Profiler_Host_GetRangeName_Params name = {
        CUpti_Profiler_Host_GetRangeName_Params_STRUCT_SIZE};
    name.pCounterDataImage = c->counter_data.data();
    name.counterDataImageSize = c->counter_data.size();
    name.rangeIndex = range;
    name.delimiter = "/";
    if (cuptiProfilerHostGetRangeName(&name) == CUPTI_SUCCESS && name.pRangeName != nullptr) {
      record.name = name.pRangeName;
    }
    CUpti_Profiler_Host_EvaluateToGpuValues_Params eval = {
        CUpti_Profiler_Host_EvaluateToGpuValues_Params_STRUCT_SIZE};
    eval.pHostObject = cfg.host();
    eval.pCounterDataImage = c->counter_data.data();
    eval.counterDataImageSize = c->counter_data.size();
    eval.rangeIndex = range;
    eval.ppMetricNames = const_cast<const char**>(cfg.metric_names().data());
    eval.numMetrics = cfg.metric_names().size();
    eval.pMetricValues = values.data();
    if (std::string e = CuptiFailure("cuptiProfilerHostEvaluateToGpuValues",
                               cuptiProfilerHostEvaluateToGpuValues(&eval));
        !e.empty()) {
      return e + " (range " + std::to_string(range) + ")";
    }
    for (size_t i = 0; i < cfg.metrics().size(); ++i) {
      record.values.emplace_back(cfg.metrics()[i], values[i]);
    }
    lines += FormatCountersRecord(record);
  }
  lines += FormatCountersMeta(
      {cfg.passes(), info.numTotalRanges, decode.numOfRangeDropped, cfg.missing(), c->chip});
  TraceWriter writer(out_path);
  if (!writer.Write(lines)) return std::string("cannot write ") + out_path;
  return "";
}

// Records `error` (if any) and ends the active collection; returns -1 or `ok_value`.
int Finish(Api& api, const std::string& error, int ok_value) {
  if (error.empty()) return ok_value;
  api.error = error;
  if (api.active != nullptr) TearDown(api.active);
  api.active = nullptr;
  return -1;
}

}  // namespace
}  // namespace kagent::cupti

using kagent::cupti::Api;
using kagent::cupti::Collection;
using kagent::cupti::CuptiFailure;
using kagent::cupti::Finish;

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_begin(const char* metrics_csv, int max_ranges) {
  return kagent_cupti_counters_begin_replay(metrics_csv, max_ranges, 0);
}

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_prepare(const char* metrics_csv) {
  Api& api = kagent::cupti::State();
  std::lock_guard<std::mutex> lock(api.mutex);
  api.error.clear();
  if (api.active != nullptr) {
    api.error = "a counter collection is running";
    return -1;
  }
  if (api.prepared != nullptr) {  // one prepared configuration at a time
    kagent::cupti::TearDown(api.prepared);
    api.prepared = nullptr;
  }
  const std::vector<std::string> requested = kagent::cupti::SplitMetricList(metrics_csv);
  if (requested.empty()) {
    api.error = "no metric names given";
    return -1;
  }
  const CUcontext context = kagent::cupti::CurrentContext();
  if (context == nullptr) {
    api.error = "no current CUDA context on this thread";
    return -1;
  }
  Collection* c = kagent::cupti::NewConfigured(context, requested,
                                               kagent::cupti::kPrepareBusyWaitMs, &api.error);
  if (c == nullptr) return -1;
  api.prepared = c;
  api.prepared_metrics = metrics_csv;
  return c->config.passes();
}

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_begin_replay(const char* metrics_csv,
                                                           int max_ranges, int kernel_replay) {
  Api& api = kagent::cupti::State();
  std::lock_guard<std::mutex> lock(api.mutex);
  api.error.clear();
  if (api.active != nullptr) {
    api.error = "a counter collection is already running";  // and keeps running
    return -1;
  }
  const std::vector<std::string> requested = kagent::cupti::SplitMetricList(metrics_csv);
  if (requested.empty()) {
    api.error = "no metric names given";
    return -1;
  }
  if (max_ranges < 1) {
    api.error = "max_ranges must be >= 1";
    return -1;
  }
  const CUcontext context = kagent::cupti::CurrentContext();
  if (context == nullptr) {
    api.error = "no current CUDA context on this thread";
    return -1;
  }
  std::string error;
  if (api.prepared != nullptr && api.prepared->context == context &&
      api.prepared_metrics == metrics_csv) {
    // Configured by prepare, before the GPU was held: only the enable is left.
    api.active = api.prepared;
    api.prepared = nullptr;
  } else {
    if (api.prepared != nullptr) {  // for other metrics or another context
      kagent::cupti::TearDown(api.prepared);
      api.prepared = nullptr;
    }
    api.active = kagent::cupti::NewConfigured(context, requested,
                                              kagent::cupti::kFirstPassBusyWaitMs, &error);
  }
  if (error.empty()) {
    error = kagent::cupti::EnableProfiler(api.active, max_ranges, kernel_replay != 0);
  }
  return Finish(api, error, error.empty() ? api.active->config.passes() : 0);
}

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_pass_begin(void) {
  Api& api = kagent::cupti::State();
  std::lock_guard<std::mutex> lock(api.mutex);
  api.error.clear();
  Collection* c = api.active;
  if (c == nullptr) return Finish(api, "pass_begin without a collection (call begin)", 0);
  if (c->in_pass) return Finish(api, "pass_begin twice without pass_end", 0);
  if (c->all_submitted) return Finish(api, "every pass was already submitted", 0);
  CUpti_RangeProfiler_Start_Params start = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
  start.pRangeProfilerObject = c->profiler;
  const CUptiResult result = kagent::cupti::RetryWhileBusy(
      c->passes_started == 0 ? kagent::cupti::kFirstPassBusyWaitMs : 0, [&start, c] {
        start = {CUpti_RangeProfiler_Start_Params_STRUCT_SIZE};
        start.pRangeProfilerObject = c->profiler;
        return cuptiRangeProfilerStart(&start);
      });
  std::string error = CuptiFailure("cuptiRangeProfilerStart", result);
  if (result == CUPTI_ERROR_HARDWARE_BUSY && c->passes_started == 0) {
    error += " (still busy after " + std::to_string(kagent::cupti::kFirstPassBusyWaitMs) + " ms)";
  }
  c->in_pass = error.empty();
  if (c->in_pass) ++c->passes_started;
  return Finish(api, error, 0);
}

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_pass_end(void) {
  Api& api = kagent::cupti::State();
  std::lock_guard<std::mutex> lock(api.mutex);
  api.error.clear();
  Collection* c = api.active;
  if (c == nullptr || !c->in_pass) return Finish(api, "pass_end without pass_begin", 0);
  CUpti_RangeProfiler_Stop_Params stop = {CUpti_RangeProfiler_Stop_Params_STRUCT_SIZE};
  stop.pRangeProfilerObject = c->profiler;
  const std::string error = CuptiFailure("cuptiRangeProfilerStop", cuptiRangeProfilerStop(&stop));
  c->in_pass = false;
  c->all_submitted = error.empty() && stop.isAllPassSubmitted != 0;
  return Finish(api, error, c->all_submitted ? 1 : 0);
}

namespace {

int End(const char* out_path, bool write_if_dropped) {
  Api& api = kagent::cupti::State();
  std::lock_guard<std::mutex> lock(api.mutex);
  api.error.clear();
  Collection* c = api.active;
  if (c == nullptr) return Finish(api, "end without a collection (call begin)", 0);
  std::string error;
  if (out_path == nullptr || *out_path == '\0') error = "end needs an output path";
  if (error.empty() && !c->all_submitted) {
    error = "end before every pass was submitted (pass_end returned 0)";
  }
  bool dropped = false;
  if (error.empty()) error = kagent::cupti::DecodeAndWrite(c, out_path, write_if_dropped, &dropped);
  if (!error.empty()) return Finish(api, error, 0);
  kagent::cupti::TearDown(c);
  api.active = nullptr;
  return dropped && !write_if_dropped ? 2 : 0;
}

}  // namespace

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_end(const char* out_path) {
  return End(out_path, /*write_if_dropped=*/true);
}

KAGENT_CUPTI_EXPORT int kagent_cupti_counters_end_unless_dropped(const char* out_path) {
  return End(out_path, /*write_if_dropped=*/false);
}

KAGENT_CUPTI_EXPORT const char* kagent_cupti_counters_error(void) {
  Api& api = kagent::cupti::State();
  std::lock_guard<std::mutex> lock(api.mutex);
  return api.error.c_str();
}
