// The range profiler's configuration, built with CUPTI's host API alone (no GPU, no driver
// call: it runs on any machine with libcupti, given a chip name such as "GH100"): which
// of the requested metrics the chip has, the config image and the number of passes it
// needs. Part of libkagent_cupti.so (range_counters.cc builds one per collection) and
// tested on its own (counter_config_test.cc).
//
// Not thread-safe; owns its CUPTI host object (released by the destructor or a new
// Build). CUPTI's profiler need not be initialized for it.
#ifndef KAGENT_SERVICES_PROFILER_CUPTI_COUNTER_CONFIG_H_
#define KAGENT_SERVICES_PROFILER_CUPTI_COUNTER_CONFIG_H_

#include <cupti_profiler_host.h>
#include <cupti_result.h>

#include <cstdint>
#include <string>
#include <vector>

namespace kagent::cupti {

// "what failed: CUPTI's text" for a failed call, else "".
std::string CuptiFailure(const char* what, CUptiResult result);

class CounterConfig {
 public:
  CounterConfig() = default;
  ~CounterConfig();
  CounterConfig(const CounterConfig&) = delete;
  CounterConfig& operator=(const CounterConfig&) = delete;

  // Builds the configuration for `chip` and the context's counter `availability` image
  // (empty: every counter of the chip). Requested names the chip lacks are left out and
  // listed by missing(); a name whose base metric the chip does not list is never
  // offered to CUPTI. Returns "" or the error (also when no name is left).
  std::string Build(const std::string& chip, std::vector<uint8_t> availability,
                    const std::vector<std::string>& requested);

  const std::vector<std::string>& metrics() const { return metrics_; }  // request order
  const std::vector<const char*>& metric_names() const { return metric_names_; }
  const std::vector<std::string>& missing() const { return missing_; }
  const std::vector<uint8_t>& image() const { return image_; }
  int passes() const { return passes_; }
  // For cuptiProfilerHostEvaluateToGpuValues; valid while this object lives.
  CUpti_Profiler_Host_Object* host() const { return host_; }

 private:
  std::string NewHost();
  void DropHost();
  std::string BuildImage();

  std::string chip_;
  std::vector<uint8_t> availability_;
  CUpti_Profiler_Host_Object* host_ = nullptr;
  std::vector<std::string> metrics_;
  std::vector<const char*> metric_names_;  // pointers into metrics_
  std::vector<std::string> missing_;
  std::vector<uint8_t> image_;
  int passes_ = 0;
};

}  // namespace kagent::cupti

#endif  // KAGENT_SERVICES_PROFILER_CUPTI_COUNTER_CONFIG_H_
