// GPU spec table: a detected GPU (the harness's `gpuinfo` JSON) -> kagent.v1.GpuSpec with
// datasheet peaks (dense, not sparse) for A100, H100 SXM/PCIe/NVL, H200 (SXM/NVL), B200
// and L40S. An unknown GPU gets a spec with `measured = true` filled from ceilings the
// harness measured (--measure-ceilings: a device copy and a matmul), never a guess.
//
// Peak FLOP/s keys: "fp64" and "fp32" are the CUDA-core (non-tensor) rates; "fp64_tensor",
// "tf32", "bf16", "fp16", "fp8" and "int8" (ops/s) are dense tensor-core rates.
//
// Thread-safe (pure functions over constant tables).
#ifndef KAGENT_KERNEL_MODEL_GPU_SPEC_H_
#define KAGENT_KERNEL_MODEL_GPU_SPEC_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// What the harness's `gpuinfo` mode reports. Both spellings of its fields are accepted:
// {"name","sm_count","total_memory_bytes"|"memory_bytes","l2_bytes",
//  "sm_clock_khz"|"sm_clock_mhz","mem_clock_khz"|"mem_clock_mhz","major","minor"|"arch"},
// plus, after --measure-ceilings, "peak_dram_bytes_per_second" and "peak_flops" with
// "measured": true (the ceilings the harness measured).
struct GpuInfo {
  std::string name;
  int sm_count = 0;
  int64_t memory_bytes = 0;
  int64_t l2_bytes = 0;
  double sm_clock_mhz = 0;
  double mem_clock_mhz = 0;
  int major = 0;
  int minor = 0;
  // Measured ceilings; zero/empty when not measured.
  double measured_dram_bytes_per_second = 0;
  std::map<std::string, double> measured_peak_flops;
};

// Parses the gpuinfo JSON. INVALID_ARGUMENT when it is not JSON or has no "name".
absl::StatusOr<GpuInfo> ParseGpuInfoJson(absl::string_view json);

// The table entry's spec with the detected figures (SM count, memory, L2, clocks) taken
// from `info`. For a GPU not in the table: the measured ceilings with measured = true, or
// FAILED_PRECONDITION asking for --measure-ceilings when there are none.
absl::StatusOr<kagent::v1::GpuSpec> GpuSpecFor(const GpuInfo& info);

// The table entry alone, by name (and memory size to tell A100 40GB from 80GB); NOT_FOUND
// when unknown. For tests and tools.
absl::StatusOr<kagent::v1::GpuSpec> LookupGpuSpec(absl::string_view name, int64_t memory_bytes);

// The gpu_name of a CPU worker's measurements (Triton's interpreter, no GPU), and whether
// `m` is one: its times are the interpreter's, not a GPU's, and it has no counters.
inline constexpr char kCpuWorkerGpuName[] = "cpu";
inline bool MeasuredOnCpuWorker(const kagent::v1::Measurement& m) {
  return m.gpu_name() == kCpuWorkerGpuName;
}
// What stands for a CPU worker where a request describes the GPU (the LLM prompts'
// {{gpu}}, which then say that timings are the interpreter's): name kCpuWorkerGpuName,
// arch "cpu", no ceilings (the brains' rules read it as an unknown GPU).
inline kagent::v1::GpuSpec CpuWorkerGpuSpec() {
  kagent::v1::GpuSpec s;
  s.set_name(kCpuWorkerGpuName);
  s.set_arch("cpu");
  return s;
}

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_GPU_SPEC_H_
