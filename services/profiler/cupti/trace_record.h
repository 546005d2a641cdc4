// The CUPTI tracer's output format: one JSON object per line, appended to the file named
// by $KAGENT_CUPTI_OUT. The Python harness parses exactly this; do not change it.
//
//   {"type":"kernel","name":str,"start_ns":int,"end_ns":int,"stream":int,"device":int,
//    "grid":[x,y,z],"block":[x,y,z],"correlation":int,"registers":int,
//    "static_smem":int,"dynamic_smem":int}
//   {"type":"marker","name":str,"ts_ns":int}
//   {"type":"counters","range":int,"name":str,"values":{metric:number|null,...}}
//   {"type":"counters_meta","passes":int,"ranges":int,"dropped":int,"missing":[str,...],
//    "chip":str}
//
// "counters" lines come from the range profiler (range_counters.h): one per range (one
// kernel launch, in launch order), values as CUPTI evaluates them, null when not finite;
// "counters_meta" follows them once per collection.
//
// Timestamps are CUPTI's (cuptiGetTimestamp), in nanoseconds; markers and kernels share
// that clock. Split from the tracer so it is tested on machines without a GPU: this file
// depends on the C++ standard library only (the tracer is loaded into Python processes
// and must not drag other libraries in).
#ifndef KAGENT_SERVICES_PROFILER_CUPTI_TRACE_RECORD_H_
#define KAGENT_SERVICES_PROFILER_CUPTI_TRACE_RECORD_H_

#include <cstdint>
#include <mutex>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace kagent::cupti {

struct KernelRecord {
  std::string name;
  uint64_t start_ns = 0;
  uint64_t end_ns = 0;
  uint32_t stream = 0;
  uint32_t device = 0;
  int32_t grid[3] = {0, 0, 0};
  int32_t block[3] = {0, 0, 0};
  uint32_t correlation = 0;
  uint32_t registers = 0;       // registers per thread
  int32_t static_smem = 0;      // static shared memory per block, bytes
  int32_t dynamic_smem = 0;     // dynamic shared memory per block, bytes
};

// One range's evaluated metrics, in the order they were requested.
struct CountersRecord {
  size_t range = 0;
  std::string name;
  std::vector<std::pair<std::string, double>> values;
};

// What a counter collection did: its passes and ranges, ranges CUPTI dropped, the
// requested metrics the chip does not have, and the chip's name.
struct CountersMeta {
  int passes = 0;
  size_t ranges = 0;
  size_t dropped = 0;
  std::vector<std::string> missing;
  std::string chip;
};

// Appends `text` as a JSON string literal (quoted, escaped) to `out`.
void AppendJsonString(std::string_view text, std::string* out);

// One line each, newline included.
std::string FormatKernelRecord(const KernelRecord& record);
std::string FormatMarkerRecord(std::string_view name, uint64_t ts_ns);
std::string FormatCountersRecord(const CountersRecord& record);
std::string FormatCountersMeta(const CountersMeta& meta);

// Splits a comma-separated metric list, trimming spaces and dropping empty and repeated
// names; order kept. A null `csv` is an empty list.
std::vector<std::string> SplitMetricList(const char* csv);

// Demangles a C++ symbol ("_Z..."); returns `name` unchanged when it is not one.
std::string DemangleKernelName(const char* name);

// Appends lines to one file. Each Write() is a single write(2) of whole lines on an
// O_APPEND descriptor, so lines from several threads (or processes) never interleave.
// Thread-safe. The file is opened lazily on the first write and kept open.
class TraceWriter {
 public:
  explicit TraceWriter(std::string path) : path_(std::move(path)) {}
  ~TraceWriter();
  TraceWriter(const TraceWriter&) = delete;
  TraceWriter& operator=(const TraceWriter&) = delete;

  // Returns false when the file cannot be opened or written.
  bool Write(std::string_view lines);
  const std::string& path() const { return path_; }

 private:
  std::mutex mutex_;
  std::string path_;
  int fd_ = -1;  // guarded by mutex_
};

}  // namespace kagent::cupti

#endif  // KAGENT_SERVICES_PROFILER_CUPTI_TRACE_RECORD_H_
