#include "services/profiler/cupti/counter_config.h"

#include <cupti.h>

#include <set>
#include <utility>

namespace kagent::cupti {
namespace {

bool AddMetrics(CUpti_Profiler_Host_Object* host, const char** names, size_t count) {
  CUpti_Profiler_Host_ConfigAddMetrics_Params add = {
      CUpti_Profiler_Host_ConfigAddMetrics_Params_STRUCT_SIZE};
  add.pHostObject = host;
  add.ppMetricNames = names;
  add.numMetrics = count;
  return cuptiProfilerHostConfigAddMetrics(&add) == CUPTI_SUCCESS;
}

// The chip's base metric names (counters, ratios, throughputs): a metric "base.rollup"
// exists only when its base is among them. Empty when CUPTI cannot list them.
std::set<std::string> BaseMetrics(CUpti_Profiler_Host_Object* host) {
  std::set<std::string> names;
  for (CUpti_MetricType type :
       {CUPTI_METRIC_TYPE_COUNTER, CUPTI_METRIC_TYPE_RATIO, CUPTI_METRIC_TYPE_THROUGHPUT}) {
    CUpti_Profiler_Host_GetBaseMetrics_Params base = {
        CUpti_Profiler_Host_GetBaseMetrics_Params_STRUCT_SIZE};
    base.pHostObject = host;
    base.metricType = type;
    if (cuptiProfilerHostGetBaseMetrics(&base) != CUPTI_SUCCESS) return {};
    for (size_t i = 0; i < base.numMetrics; ++i) {
      if (base.ppMetricNames[i] != nullptr) names.insert(base.ppMetricNames[i]);
    }
  }
  return names;
}

}  // namespace

std::string CuptiFailure(const char* what, CUptiResult result) {
  if (result == CUPTI_SUCCESS) return "";
  const char* text = nullptr;
  cuptiGetResultString(result, &text);
  return std::string(what) + " failed: " + (text != nullptr ? text : "unknown CUPTI error");
}

CounterConfig::~CounterConfig() { DropHost(); }

void CounterConfig::DropHost() {
  if (host_ == nullptr) return;
  CUpti_Profiler_Host_Deinitialize_Params p = {
      CUpti_Profiler_Host_Deinitialize_Params_STRUCT_SIZE};
  p.pHostObject = host_;
  cuptiProfilerHostDeinitialize(&p);
  host_ = nullptr;
}

std::string CounterConfig::NewHost() {
  DropHost();
  CUpti_Profiler_Host_Initialize_Params host = {CUpti_Profiler_Host_Initialize_Params_STRUCT_SIZE};
  host.profilerType = CUPTI_PROFILER_TYPE_RANGE_PROFILER;
  host.pChipName = chip_.c_str();
  host.pCounterAvailabilityImage = availability_.empty() ? nullptr : availability_.data();
  if (std::string e = CuptiFailure("cuptiProfilerHostInitialize", cuptiProfilerHostInitialize(&host));
      !e.empty()) {
    return e;
  }
  host_ = host.pHostObject;
  return "";
}

// Adds the names one at a time, so one the chip lacks is listed as missing instead of
// failing the whole set. A name CUPTI refuses leaves the host object unusable (CUDA
// 13.0's host API: every later call fails), so the object is then made anew with the
// names accepted so far.
std::string CounterConfig::Build(const std::string& chip, std::vector<uint8_t> availability,
                                 const std::vector<std::string>& requested) {
  chip_ = chip;
  availability_ = std::move(availability);
  metrics_.clear();
  metric_names_.clear();
  missing_.clear();
  image_.clear();
  passes_ = 0;
  if (std::string e = NewHost(); !e.empty()) return e;
  const std::set<std::string> bases = BaseMetrics(host_);
  for (const std::string& name : requested) {
    if (!bases.empty() && !bases.contains(name.substr(0, name.find('.')))) {
      missing_.push_back(name);
      continue;
    }
    const char* one = name.c_str();
    if (AddMetrics(host_, &one, 1)) {
      metrics_.push_back(name);
      continue;
    }
    missing_.push_back(name);
    if (std::string e = NewHost(); !e.empty()) return e;
    std::vector<const char*> accepted;
    for (const std::string& m : metrics_) accepted.push_back(m.c_str());
    if (!accepted.empty() && !AddMetrics(host_, accepted.data(), accepted.size())) {
      return "cuptiProfilerHostConfigAddMetrics failed again for the accepted metrics";
    }
  }
  if (metrics_.empty()) return "the chip " + chip_ + " has none of the requested metrics";
  for (const std::string& name : metrics_) metric_names_.push_back(name.c_str());
  // The names were checked one call each, and CUPTI schedules each call's counters in
  // passes of their own (22 names: 41 passes). Added in one call, they share passes.
  // Should CUPTI refuse them together, they go in one call each, as checked.
  if (std::string e = NewHost(); !e.empty()) return e;
  if (!AddMetrics(host_, metric_names_.data(), metric_names_.size())) {
    if (std::string e = NewHost(); !e.empty()) return e;
    for (const char* name : metric_names_) {
      if (!AddMetrics(host_, &name, 1)) {
        return std::string("cuptiProfilerHostConfigAddMetrics failed again for ") + name;
      }
    }
  }
  return BuildImage();
}

std::string CounterConfig::BuildImage() {
  CUpti_Profiler_Host_GetConfigImageSize_Params size = {
      CUpti_Profiler_Host_GetConfigImageSize_Params_STRUCT_SIZE};
  size.pHostObject = host_;
  if (std::string e = CuptiFailure("cuptiProfilerHostGetConfigImageSize",
                                   cuptiProfilerHostGetConfigImageSize(&size));
      !e.empty()) {
    return e;
  }
  image_.resize(size.configImageSize);
  CUpti_Profiler_Host_GetConfigImage_Params image = {
      CUpti_Profiler_Host_GetConfigImage_Params_STRUCT_SIZE};
  image.pHostObject = host_;
  image.configImageSize = image_.size();
  image.pConfigImage = image_.data();
  if (std::string e = CuptiFailure("cuptiProfilerHostGetConfigImage",
                                   cuptiProfilerHostGetConfigImage(&image));
      !e.empty()) {
    return e;
  }
  CUpti_Profiler_Host_GetNumOfPasses_Params passes = {
      CUpti_Profiler_Host_GetNumOfPasses_Params_STRUCT_SIZE};
  passes.configImageSize = image_.size();
  passes.pConfigImage = image_.data();
  if (std::string e = CuptiFailure("cuptiProfilerHostGetNumOfPasses",
                                   cuptiProfilerHostGetNumOfPasses(&passes));
      !e.empty()) {
    return e;
  }
  passes_ = static_cast<int>(passes.numOfPasses);
  return "";
}

}  // namespace kagent::cupti
