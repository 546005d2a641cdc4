#include "services/profiler/cupti_backend.h"

#include <algorithm>
#include <filesystem>
#include <utility>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/match.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/harness/protocol.h"
#include "common/logging.h"
#include "common/status.h"
#include "kernel_model/launch_limits.h"
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
  std::vector<CuptiTrace::Counters> pending;  // counters lines not yet closed by a meta line
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
      kernel.registers = json.value("registers", int64_t{-1});
      kernel.static_smem = json.value("static_smem", int64_t{-1});
      kernel.dynamic_smem = json.value("dynamic_smem", int64_t{-1});
      trace.kernels.push_back(std::move(kernel));
    } else if (type == "marker") {
      trace.markers.push_back({json.value("name", std::string()), json.value("ts_ns", uint64_t{0})});
    } else if (type == "counters") {
      CuptiTrace::Counters counters;
      counters.range = json.value("range", int64_t{0});
      counters.name = json.value("name", std::string());
      if (auto it = json.find("values"); it != json.end() && it->is_object()) {
        for (const auto& [name, value] : it->items()) {
          if (value.is_number()) counters.values[name] = value.get<double>();
        }
      }
      pending.push_back(std::move(counters));
    } else if (type == "counters_meta") {
      CuptiTrace::CountersMeta meta;
      meta.passes = json.value("passes", 0);
      meta.ranges = json.value("ranges", int64_t{0});
      meta.dropped = json.value("dropped", int64_t{0});
      meta.chip = json.value("chip", std::string());
      if (auto it = json.find("missing"); it != json.end() && it->is_array()) {
        for (const auto& name : *it) {
          if (name.is_string()) meta.missing.push_back(name.get<std::string>());
        }
      }
      trace.counters_meta = std::move(meta);
      trace.counters = std::move(pending);
      pending.clear();
      std::stable_sort(trace.counters.begin(), trace.counters.end(),
                       [](const auto& a, const auto& b) { return a.range < b.range; });
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
    if (kernel->registers >= 0) {
      values[metric::kRegistersPerThread] = static_cast<double>(kernel->registers);
    }
    if (kernel->static_smem >= 0) {
      values[metric::kSharedMemStatic] = static_cast<double>(kernel->static_smem);
    }
    if (kernel->dynamic_smem >= 0) {
      values[metric::kSharedMemDynamic] = static_cast<double>(kernel->dynamic_smem);
    }
    kernels.push_back(std::move(metrics));
  }
  return kernels;
}

absl::Status MergeCuptiCounters(const CuptiTrace& trace,
                                std::vector<kagent::v1::KernelMetrics>* kernels) {
  if (!trace.counters_meta.has_value()) {
    return absl::FailedPreconditionError("the trace has no counters_meta line");
  }
  const size_t ranges = trace.counters.size();
  if (trace.counters_meta->dropped > 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the range profiler dropped ", trace.counters_meta->dropped,
        " ranges (more kernels per forward than it was sized for)"));
  }
  if (ranges == 0) {
    return absl::FailedPreconditionError("the range profiler recorded no ranges");
  }
  if (kernels->size() % ranges != 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the range profiler saw ", ranges, " kernels per pass (one forward) but the profiled "
        "forwards launched ", kernels->size(), ", not a multiple: the forward does not "
        "launch the same kernels every time"));
  }
  for (size_t k = 0; k < kernels->size(); ++k) {
    auto& values = *(*kernels)[k].mutable_values();
    for (const auto& [name, value] : trace.counters[k % ranges].values) {
      values.insert({name, value});  // the trace's own values stay
    }
  }
  return absl::OkStatus();
}

std::vector<std::string> CuptiCounterMetrics(int cc) {
  std::vector<std::string> names;
  for (const std::string& name : NcuMetricsForArch(cc)) {
    if (absl::StartsWith(name, "launch__") || name == metric::kDuration) continue;
    // SASS instruction counts need ncu's instrumentation: the range profiler accepts
    // them and reads 0 (on the H200, 0 FFMA for a GEMM ncu counted 6.9e10 in). Left
    // out, they are missing rather than wrong.
    if (absl::StartsWith(name, "smsp__sass_")) continue;
    names.push_back(name);
  }
  return names;
}

std::vector<std::string> CuptiMissingMetrics(int cc,
                                             const std::vector<kagent::v1::KernelMetrics>& kernels) {
  std::vector<std::string> missing;
  for (const std::string& name : NcuMetricsForArch(cc)) {
    bool present = false;
    for (const auto& kernel : kernels) present = present || kernel.values().contains(name);
    if (!present) missing.push_back(name);
  }
  return missing;
}

std::string CuptiAuditHeader(const CuptiProfile& profile) {
  std::string how =
      profile.counter_passes > 0
          ? absl::StrCat("counters via the range profiler (", profile.counter_passes,
                         " passes, user replay in the candidate's process)")
          : absl::StrCat("trace only (", profile.counters_note, ")");
  return absl::StrCat("# backend cupti: ", how,
                      profile.launch_limits_computed
                          ? "; launch limits and waves computed from each launch's "
                            "configuration"
                          : "",
                      "; missing: ", absl::StrJoin(profile.missing_metrics, ","), "\n");
}

absl::StatusOr<CuptiProfile> RunCuptiProfile(CommandRunner* runner,
                                             const CuptiBackendOptions& options,
                                             const HarnessCommand& harness,
                                             const ProfileRun& caller_run) {
  std::error_code ec;
  if (options.library_path.empty() || !std::filesystem::exists(options.library_path, ec)) {
    return absl::FailedPreconditionError(absl::StrCat(
        "the CUPTI backend needs libkagent_cupti.so; not found at '", options.library_path,
        "' (build target kagent_cupti on a machine with the CUDA toolkit)"));
  }
  ProfileRun run = caller_run;
  UserRunDir user_dir;
  KAGENT_RETURN_IF_ERROR(user_dir.Move(runner, options.run_as, &run));
  const std::string trace_path = absl::StrCat(run.work_dir, "/cupti.jsonl");
  const std::string result_path = absl::StrCat(run.work_dir, "/result.json");
  HarnessCommand traced = harness;
  traced.extra_env["CUDA_INJECTION64_PATH"] = options.library_path;
  traced.extra_env["KAGENT_CUPTI_LIB"] = options.library_path;
  traced.extra_env["KAGENT_CUPTI_OUT"] = trace_path;
  std::vector<std::string> argv =
      HarnessArgv(harness.python, "profile", {"--request", run.request_path, "--out", result_path});
  if (options.run_as) argv = RunAsUser(*options.run_as, std::move(argv));
  SubprocessOptions subprocess = HarnessSubprocessOptions(traced, run, std::move(argv));
  if (options.run_as) {
    subprocess.env["HOME"] = run.work_dir;
    // As under ncu (the configuration measured on the H200): the candidate's workdir in
    // the host's /tmp, which profile mode shares with its sandbox, not inside this run's
    // directory, which the harness hides from it.
    subprocess.env["TMPDIR"] = kNcuTempDir;
  }
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
  // The counters are extra: without them the trace's figures still make a profile.
  const HarnessProfileResult& h = profile.harness;
  if (!h.cupti_counters_ran) {
    profile.counters_note = "no counters asked for";
  } else if (!h.cupti_counters_ok) {
    profile.counters_note = absl::StrCat("counters not collected: ", h.cupti_counters_error);
  } else if (absl::Status merged = MergeCuptiCounters(trace, &profile.kernels); !merged.ok()) {
    profile.counters_note = absl::StrCat("counters left out: ", merged.message());
  } else {
    profile.counter_passes = std::max(1, h.cupti_counter_passes);
  }
  if (!profile.counters_note.empty() && h.cupti_counters_ran) {
    KLOG(WARNING) << "CUPTI backend: " << profile.counters_note;
  }
  if (options.gpu.has_value()) {
    for (auto& kernel : profile.kernels) {
      profile.launch_limits_computed |= AddLaunchLimits(*options.gpu, &kernel);
    }
  }
  profile.missing_metrics = CuptiMissingMetrics(options.compute_capability, profile.kernels);
  profile.raw_trace = std::move(*trace_text);
  return profile;
}

}  // namespace kagent
