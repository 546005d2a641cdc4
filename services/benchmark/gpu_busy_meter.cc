#include "services/benchmark/gpu_busy_meter.h"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace kagent {

double IntegrateBusySeconds(const std::deque<UtilizationSample>& samples, absl::Time from,
                            absl::Time to, absl::Duration max_period) {
  if (samples.empty() || to <= from) return 0;
  auto overlap = [&](absl::Time a, absl::Time b) {
    absl::Time lo = std::max(a, from), hi = std::min(b, to);
    return hi > lo ? absl::ToDoubleSeconds(hi - lo) : 0.0;
  };
  double busy = 0;
  for (size_t i = 0; i < samples.size(); ++i) {
    absl::Time end = samples[i].time;
    absl::Duration period = max_period;
    if (i > 0) {
      period = std::min(end - samples[i - 1].time, max_period);
    } else if (samples.size() > 1) {
      period = std::min(samples[1].time - end, max_period);
    }
    busy += samples[i].percent / 100 * overlap(end - period, end);
  }
  const UtilizationSample& newest = samples.back();
  busy += newest.percent / 100 * overlap(newest.time, newest.time + max_period);
  return busy;
}

SampledGpuBusyMeter::SampledGpuBusyMeter(std::unique_ptr<UtilizationSampleSource> source,
                                         Options options)
    : options_(options), source_(std::move(source)) {
  poller_ = std::thread([this] {
    absl::MutexLock lock(&mu_);
    while (!stop_) {
      PollLocked();
      mu_.AwaitWithTimeout(absl::Condition(&stop_), options_.poll_interval);
    }
  });
}

SampledGpuBusyMeter::~SampledGpuBusyMeter() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
  }
  poller_.join();
}

void SampledGpuBusyMeter::PollLocked() {
  absl::Time after = samples_.empty() ? absl::InfinitePast() : samples_.back().time;
  absl::StatusOr<std::vector<UtilizationSample>> got = source_->SamplesAfter(after);
  if (!got.ok()) {
    if (!warned_) {
      KLOG(WARNING) << "reading the GPU's utilization samples failed (busy time may read low): "
                    << got.status();
      warned_ = true;
    }
    return;
  }
  for (const UtilizationSample& s : *got) {
    if (samples_.empty() || s.time > samples_.back().time) samples_.push_back(s);
  }
  absl::Time oldest = absl::Now() - options_.keep;
  while (!samples_.empty() && samples_.front().time < oldest) samples_.pop_front();
}

double SampledGpuBusyMeter::BusySeconds(absl::Time from, absl::Time to) {
  absl::MutexLock lock(&mu_);
  PollLocked();
  return IntegrateBusySeconds(samples_, from, to, options_.max_period);
}

namespace {

// The few NVML declarations used here (NVIDIA's nvml.h, public API).
using nvmlReturn_t = int;
using nvmlDevice_t = struct nvmlDevice_st*;
constexpr nvmlReturn_t NVML_SUCCESS = 0;
constexpr nvmlReturn_t NVML_ERROR_NOT_SUPPORTED = 3;
constexpr nvmlReturn_t NVML_ERROR_NOT_FOUND = 6;
constexpr int NVML_GPU_UTILIZATION_SAMPLES = 1;  // nvmlSamplingType_t
enum NvmlValueType {                             // nvmlValueType_t
  NVML_VALUE_TYPE_DOUBLE = 0,
  NVML_VALUE_TYPE_UNSIGNED_INT = 1,
  NVML_VALUE_TYPE_UNSIGNED_LONG = 2,
  NVML_VALUE_TYPE_UNSIGNED_LONG_LONG = 3,
  NVML_VALUE_TYPE_SIGNED_LONG_LONG = 4,
  NVML_VALUE_TYPE_SIGNED_INT = 5,
  NVML_VALUE_TYPE_UNSIGNED_SHORT = 6,
};
union nvmlValue_t {
  double dVal;
  int siVal;
  unsigned int uiVal;
  unsigned long ulVal;  // NOLINT(runtime/int): NVML's type
  unsigned long long ullVal;  // NOLINT(runtime/int)
  signed long long sllVal;    // NOLINT(runtime/int)
  unsigned short usVal;       // NOLINT(runtime/int)
};
struct nvmlSample_t {
  unsigned long long timeStamp;  // NOLINT(runtime/int): CPU time, microseconds since the epoch
  nvmlValue_t sampleValue;
};

using InitFn = nvmlReturn_t (*)();
using ShutdownFn = nvmlReturn_t (*)();
using ErrorStringFn = const char* (*)(nvmlReturn_t);
using ByIndexFn = nvmlReturn_t (*)(unsigned int, nvmlDevice_t*);
using ByPciFn = nvmlReturn_t (*)(const char*, nvmlDevice_t*);
using SamplesFn = nvmlReturn_t (*)(nvmlDevice_t, int, unsigned long long,  // NOLINT(runtime/int)
                                   int*, unsigned int*, nvmlSample_t*);

double ValueOf(int type, const nvmlValue_t& v) {
  switch (type) {
    case NVML_VALUE_TYPE_DOUBLE: return v.dVal;
    case NVML_VALUE_TYPE_UNSIGNED_INT: return v.uiVal;
    case NVML_VALUE_TYPE_UNSIGNED_LONG: return static_cast<double>(v.ulVal);
    case NVML_VALUE_TYPE_UNSIGNED_LONG_LONG: return static_cast<double>(v.ullVal);
    case NVML_VALUE_TYPE_SIGNED_LONG_LONG: return static_cast<double>(v.sllVal);
    case NVML_VALUE_TYPE_SIGNED_INT: return v.siVal;
    case NVML_VALUE_TYPE_UNSIGNED_SHORT: return v.usVal;
    default: return v.uiVal;
  }
}

class NvmlSampleSource final : public UtilizationSampleSource {
 public:
  static absl::StatusOr<std::unique_ptr<UtilizationSampleSource>> Open(const std::string& pci_bus_id,
                                                                       int index) {
    void* lib = dlopen("libnvidia-ml.so.1", RTLD_NOW | RTLD_LOCAL);
    if (lib == nullptr) {
      const char* e = dlerror();
      return absl::UnavailableError(absl::StrCat("cannot load libnvidia-ml.so.1: ", e ? e : "?"));
    }
    std::unique_ptr<NvmlSampleSource> s(new NvmlSampleSource(lib));
    s->init_ = reinterpret_cast<InitFn>(dlsym(lib, "nvmlInit_v2"));
    s->shutdown_ = reinterpret_cast<ShutdownFn>(dlsym(lib, "nvmlShutdown"));
    s->error_string_ = reinterpret_cast<ErrorStringFn>(dlsym(lib, "nvmlErrorString"));
    auto by_index = reinterpret_cast<ByIndexFn>(dlsym(lib, "nvmlDeviceGetHandleByIndex_v2"));
    auto by_pci = reinterpret_cast<ByPciFn>(dlsym(lib, "nvmlDeviceGetHandleByPciBusId_v2"));
    s->samples_ = reinterpret_cast<SamplesFn>(dlsym(lib, "nvmlDeviceGetSamples"));
    if (!s->init_ || !s->shutdown_ || !by_index || !by_pci || !s->samples_) {
      return absl::UnavailableError("libnvidia-ml.so.1 lacks an NVML function this meter needs");
    }
    nvmlReturn_t r = s->init_();
    if (r != NVML_SUCCESS) return absl::UnavailableError(absl::StrCat("nvmlInit: ", s->Error(r)));
    s->initialized_ = true;
    r = pci_bus_id.empty() ? by_index(static_cast<unsigned int>(index), &s->device_)
                           : by_pci(pci_bus_id.c_str(), &s->device_);
    if (r != NVML_SUCCESS) {
      return absl::UnavailableError(absl::StrCat(
          "NVML finds no device ",
          pci_bus_id.empty() ? absl::StrCat("at index ", index) : "with PCI bus id " + pci_bus_id,
          ": ", s->Error(r)));
    }
    int type = 0;
    unsigned int count = 0;
    r = s->samples_(s->device_, NVML_GPU_UTILIZATION_SAMPLES, 0, &type, &count, nullptr);
    if (r == NVML_ERROR_NOT_SUPPORTED) {
      return absl::FailedPreconditionError("the device keeps no GPU utilization samples");
    }
    return std::unique_ptr<UtilizationSampleSource>(std::move(s));
  }

  ~NvmlSampleSource() override {
    if (initialized_) shutdown_();
    dlclose(lib_);
  }

  absl::StatusOr<std::vector<UtilizationSample>> SamplesAfter(absl::Time after) override {
    unsigned long long last_seen =  // NOLINT(runtime/int)
        after <= absl::UnixEpoch() ? 0 : static_cast<unsigned long long>(absl::ToUnixMicros(after));  // NOLINT(runtime/int)
    int type = 0;
    unsigned int count = 0;
    nvmlReturn_t r = samples_(device_, NVML_GPU_UTILIZATION_SAMPLES, last_seen, &type, &count, nullptr);
    if (r == NVML_ERROR_NOT_FOUND) return std::vector<UtilizationSample>();
    if (r != NVML_SUCCESS) return absl::UnavailableError(absl::StrCat("nvmlDeviceGetSamples: ", Error(r)));
    std::vector<nvmlSample_t> raw(count);
    r = samples_(device_, NVML_GPU_UTILIZATION_SAMPLES, last_seen, &type, &count, raw.data());
    if (r == NVML_ERROR_NOT_FOUND) return std::vector<UtilizationSample>();
    if (r != NVML_SUCCESS) return absl::UnavailableError(absl::StrCat("nvmlDeviceGetSamples: ", Error(r)));
    raw.resize(std::min<size_t>(count, raw.size()));
    std::vector<UtilizationSample> out;
    out.reserve(raw.size());
    for (const nvmlSample_t& s : raw) {
      if (s.timeStamp <= last_seen) continue;
      out.push_back({absl::FromUnixMicros(static_cast<int64_t>(s.timeStamp)),
                     std::clamp(ValueOf(type, s.sampleValue), 0.0, 100.0)});
    }
    std::sort(out.begin(), out.end(),
              [](const UtilizationSample& a, const UtilizationSample& b) { return a.time < b.time; });
    return out;
  }

 private:
  explicit NvmlSampleSource(void* lib) : lib_(lib) {}
  std::string Error(nvmlReturn_t r) const {
    const char* s = error_string_ ? error_string_(r) : nullptr;
    return s ? absl::StrCat(s, " (", r, ")") : absl::StrCat("NVML error ", r);
  }

  void* lib_;
  bool initialized_ = false;
  InitFn init_ = nullptr;
  ShutdownFn shutdown_ = nullptr;
  ErrorStringFn error_string_ = nullptr;
  SamplesFn samples_ = nullptr;
  nvmlDevice_t device_ = nullptr;
};

}  // namespace

absl::StatusOr<std::unique_ptr<UtilizationSampleSource>> OpenNvmlSampleSource(
    const std::string& pci_bus_id, int nvml_index) {
  return NvmlSampleSource::Open(pci_bus_id, nvml_index);
}

std::unique_ptr<GpuBusyMeter> MakeGpuBusyMeter(const std::string& pci_bus_id, int nvml_index) {
  absl::StatusOr<std::unique_ptr<UtilizationSampleSource>> source =
      OpenNvmlSampleSource(pci_bus_id, nvml_index);
  if (!source.ok()) {
    static std::atomic<bool> logged{false};
    if (!logged.exchange(true)) {
      KLOG(WARNING) << "no GPU busy time (gpu_busy_seconds reads 0): " << source.status();
    }
    return std::make_unique<NullGpuBusyMeter>();
  }
  KLOG(INFO) << "GPU busy time from NVML's utilization samples of "
             << (pci_bus_id.empty() ? absl::StrCat("device index ", nvml_index)
                                    : "PCI bus id " + pci_bus_id);
  return std::make_unique<SampledGpuBusyMeter>(*std::move(source), SampledGpuBusyMeter::Options());
}

}  // namespace kagent
