// GpuBusyMeter: how long a GPU was executing kernels within a window of wall time, so a
// worker can report, for the time a task held the GPU (gpu_seconds), how much of it the
// GPU was actually busy (gpu_busy_seconds).
//
// The NVML meter reads the driver's GPU-utilization samples (NVML_GPU_UTILIZATION_SAMPLES:
// each sample is the percent of its sample period during which one or more kernels ran)
// through libnvidia-ml.so.1, loaded with dlopen() at run time: nothing links against the
// driver, so the CPU build and machines without one work, with a meter that answers 0.
// A poller thread keeps the samples of the last two hours (the driver keeps only a short
// buffer), and BusySeconds integrates them over the window.
//
// Thread-safety: every implementation here is thread-safe.
#ifndef KAGENT_SERVICES_BENCHMARK_GPU_BUSY_METER_H_
#define KAGENT_SERVICES_BENCHMARK_GPU_BUSY_METER_H_

#include <deque>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kagent {

class GpuBusyMeter {
 public:
  virtual ~GpuBusyMeter() = default;
  // Seconds of [from, to] during which the GPU ran kernels; 0 when unknown.
  virtual double BusySeconds(absl::Time from, absl::Time to) = 0;
};

// Answers 0: no GPU, or no NVML.
class NullGpuBusyMeter final : public GpuBusyMeter {
 public:
  double BusySeconds(absl::Time, absl::Time) override { return 0; }
};

// One utilization sample: `percent` (0..100) of the sample period that ended at `time`.
struct UtilizationSample {
  absl::Time time;
  double percent = 0;
};

// Where samples come from (NVML on a GPU machine; scripted in tests).
class UtilizationSampleSource {
 public:
  virtual ~UtilizationSampleSource() = default;
  // The samples newer than `after` (InfinitePast: all the source still has), oldest first.
  virtual absl::StatusOr<std::vector<UtilizationSample>> SamplesAfter(absl::Time after) = 0;
};

// The integral of `samples` (oldest first) over [from, to], in busy seconds. Sample i
// covers the period from the previous sample's time to its own, and at most
// `max_period` (a longer gap is samples missed: that time counts as not busy); the first
// sample's period is taken as the next interval (or `max_period` when it is alone). The
// part of the window after the newest sample counts at the newest sample's percent, for at
// most `max_period` (the driver publishes a sample only once its period ends).
double IntegrateBusySeconds(const std::deque<UtilizationSample>& samples, absl::Time from,
                            absl::Time to, absl::Duration max_period);

// A meter over a sample source: a poller thread reads new samples every `poll_interval`
// and keeps those of the last `keep`; BusySeconds reads the newest first.
class SampledGpuBusyMeter final : public GpuBusyMeter {
 public:
  struct Options {
    absl::Duration poll_interval = absl::Seconds(1);
    absl::Duration keep = absl::Hours(2);
    absl::Duration max_period = absl::Seconds(2);
  };
  SampledGpuBusyMeter(std::unique_ptr<UtilizationSampleSource> source, Options options);
  ~SampledGpuBusyMeter() override;
  SampledGpuBusyMeter(const SampledGpuBusyMeter&) = delete;
  SampledGpuBusyMeter& operator=(const SampledGpuBusyMeter&) = delete;

  double BusySeconds(absl::Time from, absl::Time to) override;

 private:
  void PollLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  const Options options_;
  absl::Mutex mu_;
  std::unique_ptr<UtilizationSampleSource> source_ ABSL_GUARDED_BY(mu_);
  std::deque<UtilizationSample> samples_ ABSL_GUARDED_BY(mu_);
  bool stop_ ABSL_GUARDED_BY(mu_) = false;
  bool warned_ ABSL_GUARDED_BY(mu_) = false;
  std::thread poller_;
};

// NVML's GPU-utilization samples of one device: by PCI bus id (e.g. "0000:19:00.0", as
// the harness's gpuinfo reports it) when given, else by `nvml_index` (NVML numbers devices
// in PCI order, which is CUDA's only with CUDA_DEVICE_ORDER=PCI_BUS_ID). Errors:
// UNAVAILABLE when libnvidia-ml.so.1 or one of its functions is missing, NVML does not
// initialize, or the device is not found; FAILED_PRECONDITION when the device keeps no
// utilization samples.
absl::StatusOr<std::unique_ptr<UtilizationSampleSource>> OpenNvmlSampleSource(
    const std::string& pci_bus_id, int nvml_index);

// The worker's meter: NVML's samples when they can be read, else (logged once per
// process) the null meter.
std::unique_ptr<GpuBusyMeter> MakeGpuBusyMeter(const std::string& pci_bus_id, int nvml_index);

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_GPU_BUSY_METER_H_
