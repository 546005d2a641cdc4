#include "services/profiler/cupti_backend.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/harness/protocol.h"
#include "common/logging.h"
#include "common/status.h"
#include "kernel_model/metric_names.h"
#include "kernel_model/ncu_metrics.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

std::vector<int64_t> Dim3(const nlohmann::json& json) {
  std::vector<int64_t> dims;
  if (!json.is_array()) return dims;
  for (const auto& d : json) {
    if (d.is_number_integer()) dims.push_back(d.get<int64_t>());
  }
  return dims;
}

int64_t Product(const std::vector<int64_t>& dims) {
  int64_t product = dims.empty() ? 0 : 1;
  for (int64_t d : dims) product *= d;
  return product;
}

struct Window {
  uint64_t begin;
  uint64_t end;
};

}  // namespace

CuptiTrace ParseCuptiTrace(absl::string_view text) {
  CuptiTrace trace;
  for (absl::string_view line : absl::StrSplit(text, '\n', absl::SkipWhitespace())) {
    nlohmann::json json = nlohmann::json::parse(line.begin(), line.end(), nullptr, false);
    if (json.is_discarded() || !json.is_object()) {
      ++trace.malformed_lines;
      continue;
    }
    const std::string type = json.value("type", std::string());
    if (type == "kernel") {
      CuptiTrace::Kernel kernel;
      kernel.name = json.value("name", std::string());
      kernel.start_ns = json.value("start_ns", uint64_t{0});
      kernel.end_ns = json.value("end_ns", uint64_t{0});
      kernel.stream = json.value("stream", int64_t{0});
      kernel.device = json.value("device", int64_t{0});
      kernel.correlation = json.value("correlation", int64_t{0});
      if (auto it = json.find("grid"); it != json.end()) kernel.grid = Dim3(*it);
      if (auto it = json.find("block"); it != json.end()) kernel.block = Dim3(*it);
      trace.kernels.push_back(std::move(kernel));
    } else if (type == "marker") {
      trace.markers.push_back({json.value("name", std::string()), json.value("ts_ns", uint64_t{0})});
    } else {
      ++trace.malformed_lines;
    }
  }
  return trace;
}

absl::StatusOr<std::vector<kagent::v1::KernelMetrics>> CuptiKernelsInWindows(
    const CuptiTrace& trace, absl::string_view begin_marker, absl::string_view end_marker) {
  std::vector<CuptiTrace::Marker> markers = trace.markers;
  std::stable_sort(markers.begin(), markers.end(),
                   [](const auto& a, const auto& b) { return a.ts_ns < b.ts_ns; });
  std::vector<Window> windows;
  bool open = false;
  uint64_t begin = 0;
  for (const auto& marker : markers) {
    if (marker.name == begin_marker) {
      open = true;
      begin = marker.ts_ns;
    } else if (marker.name == end_marker && open) {
      windows.push_back({begin, marker.ts_ns});
      open = false;
    }
  }
  if (windows.empty()) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUPTI trace has no '", begin_marker, "'/'", end_marker,
        "' marker pair: the harness must mark the profiled forwards with kagent_cupti_mark()"));
  }
  std::vector<const CuptiTrace::Kernel*> selected;
  for (const auto& kernel : trace.kernels) {
    for (const Window& window : windows) {
      if (kernel.start_ns >= window.begin && kernel.start_ns <= window.end) {
        selected.push_back(&kernel);
        break;
      }
    }
  }
  std::stable_sort(selected.begin(), selected.end(),
                   [](const auto* a, const auto* b) { return a->start_ns < b->start_ns; });
  std::vector<kagent::v1::KernelMetrics> kernels;
  for (const CuptiTrace::Kernel* kernel : selected) {
    kagent::v1::KernelMetrics metrics;
    metrics.set_kernel_name(kernel->name);
    metrics.set_invocation(static_cast<int64_t>(kernels.size()));
    const double duration =
        kernel->end_ns > kernel->start_ns ? static_cast<double>(kernel->end_ns - kernel->start_ns)
                                          : 0.0;
    metrics.set_duration_ns(duration);
    for (int64_t d : kernel->grid) metrics.add_grid(d);
    for (int64_t d : kernel->block) metrics.add_block(d);
    auto& values = *metrics.mutable_values();
    values[metric::kDuration] = duration;
    if (!kernel->grid.empty()) {
      values[metric::kGridSize] = static_cast<double>(Product(kernel->grid));
    }
    if (!kernel->block.empty()) {
      values[metric::kBlockSize] = static_cast<double>(Product(kernel->block));
    }
    kernels.push_back(std::move(metrics));
  }
  return kernels;
}

std::vector<std::string> CuptiMissingMetrics(int cc) {
  std::vector<std::string> missing;
  for (const std::string& name : NcuMetricsForArch(cc)) {
    if (name != metric::kDuration && name != metric::kGridSize && name != metric::kBlockSize) {
      missing.push_back(name);
    }
  }
  return missing;
}

absl::StatusOr<CuptiProfile> RunCuptiProfile(CommandRunner* runner,
                                             const CuptiBackendOptions& options,
                                             const HarnessCommand& harness,
                                             const ProfileRun& run) {
  std::error_code ec;
  if (options.library_path.empty() || !std::filesystem::exists(options.library_path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUPTI backend needs libkagent_cupti.so; not found at '", options.library_path,
        "' (build target kagent_cupti on a machine with the CUDA toolkit)"));
  }
  const std::string trace_path = absl::StrCat(run.work_dir, "/cupti.jsonl");
  const std::string result_path = absl::StrCat(run.work_dir, "/result.json");
  HarnessCommand traced = harness;
  traced.extra_env["CUDA_INJECTION64_PATH"] = options.library_path;
  traced.extra_env["KAGENT_CUPTI_LIB"] = options.library_path;
  traced.extra_env["KAGENT_CUPTI_OUT"] = trace_path;
  SubprocessOptions subprocess = HarnessSubprocessOptions(
      traced, run,
      HarnessArgv(harness.python, "profile", {"--request", run.request_path, "--out", result_path}));
  KAGENT_ASSIGN_OR_RETURN(SubprocessResult result,
                          RunHarnessProfileProcess(runner, std::move(subprocess), run));
  if (result.timed_out) {
    return absl::DeadlineExceededError(absl::StrFormat(
        "CUPTI profiling timed out after %.1f s", absl::ToDoubleSeconds(run.timeout)));
  }
  if (result.cancelled) return absl::CancelledError("profiling cancelled");

  CuptiProfile profile;
  KAGENT_ASSIGN_OR_RETURN(profile.harness, ReadProfiledHarnessResult(result_path));
  if (!result.ok()) {
    return absl::InternalError(absl::StrCat("the harness failed under CUPTI (",
                                            result.Describe(), "): ",
                                            result.stderr_data.substr(0, 600)));
  }
  absl::StatusOr<std::string> trace_text = ReadFileBounded(trace_path, size_t{256} << 20);
  if ((!trace_text.ok() || trace_text->empty()) && !profile.harness.cupti_trace_jsonl.empty()) {
    trace_text = profile.harness.cupti_trace_jsonl;
  }
  if (!trace_text.ok()) {
    return absl::InternalError(absl::StrCat(
        "the CUPTI tracer wrote no trace (", trace_path,
        "): was libkagent_cupti.so loaded, and is libcupti on the library path?"));
  }
  CuptiTrace trace = ParseCuptiTrace(*trace_text);
  KAGENT_ASSIGN_OR_RETURN(profile.kernels, CuptiKernelsInWindows(trace));
  if (profile.kernels.empty()) {
    return absl::FailedPreconditionError(
        "no kernels captured: the candidate launched no GPU kernel inside the profiled range");
  }
  profile.raw_trace = std::move(*trace_text);
  return profile;
}

}  // namespace kagent
