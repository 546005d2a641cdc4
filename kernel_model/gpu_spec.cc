#include "kernel_model/gpu_spec.h"

#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

constexpr double kT = 1e12;        // TFLOP/s
constexpr double kTBps = 1e12;     // TB/s (decimal, as datasheets state it)
constexpr double kGBps = 1e9;
constexpr int64_t kGiB = int64_t{1} << 30;
constexpr int64_t kKiB = 1024;

struct TableEntry {
  const char* key;           // display name of the entry
  const char* arch;          // sm_XY
  int sm_count;
  int64_t memory_bytes;      // nominal
  int64_t l2_bytes;
  double dram_bytes_per_second;
  std::vector<std::pair<const char*, double>> flops;
  int max_threads_per_sm;
  int max_blocks_per_sm;
  int registers_per_sm;
  int64_t shared_memory_per_sm_bytes;
};

// Datasheet figures, dense (sparsity halved out). Sources:
//  A100: NVIDIA A100 Tensor Core GPU datasheet (2021) and the Ampere GA100 whitepaper
//        (108 SMs, 40 MB L2, 164 KB shared memory per SM, 2048 threads / 32 blocks per SM).
//  H100: NVIDIA H100 Tensor Core GPU datasheet (SXM5 / PCIe / NVL columns) and the Hopper
//        whitepaper (228 KB shared memory per SM, 50 MB L2; SXM5 132 SMs, PCIe 114 SMs).
//  H200: NVIDIA H200 Tensor Core GPU datasheet (SXM and NVL columns; 141 GB HBM3e,
//        4.8 TB/s; same GH100 compute as H100 SXM / NVL).
//  B200: NVIDIA HGX B200 datasheet, per GPU (8 TB/s HBM3e, 180 GB; FP8 4.5 PF, FP16/BF16
//        2.25 PF, TF32 1.1 PF dense; FP64 and FP64 tensor 37 TF; 148 SMs).
//  L40S: NVIDIA L40S datasheet (864 GB/s GDDR6 48 GB; FP32 91.6 TF; TF32 183, BF16/FP16
//        362, FP8 733 TF dense; 142 SMs, 96 MB L2; Ada: 1536 threads / 24 blocks and
//        100 KB shared memory per SM). The datasheet gives no FP64 figure: none listed.
const std::vector<TableEntry>& Table() {
  static const std::vector<TableEntry>* table = new std::vector<TableEntry>{
      {"NVIDIA A100-SXM4-80GB", "sm_80", 108, 80 * kGiB, 40 * 1024 * kKiB, 2039 * kGBps,
       {{"fp64", 9.7 * kT}, {"fp64_tensor", 19.5 * kT}, {"fp32", 19.5 * kT},
        {"tf32", 156 * kT}, {"bf16", 312 * kT}, {"fp16", 312 * kT}, {"int8", 624 * kT}},
       2048, 32, 65536, 164 * kKiB},
      {"NVIDIA A100-SXM4-40GB", "sm_80", 108, 40 * kGiB, 40 * 1024 * kKiB, 1555 * kGBps,
       {{"fp64", 9.7 * kT}, {"fp64_tensor", 19.5 * kT}, {"fp32", 19.5 * kT},
        {"tf32", 156 * kT}, {"bf16", 312 * kT}, {"fp16", 312 * kT}, {"int8", 624 * kT}},
       2048, 32, 65536, 164 * kKiB},
      {"NVIDIA A100 80GB PCIe", "sm_80", 108, 80 * kGiB, 40 * 1024 * kKiB, 1935 * kGBps,
       {{"fp64", 9.7 * kT}, {"fp64_tensor", 19.5 * kT}, {"fp32", 19.5 * kT},
        {"tf32", 156 * kT}, {"bf16", 312 * kT}, {"fp16", 312 * kT}, {"int8", 624 * kT}},
       2048, 32, 65536, 164 * kKiB},
      {"NVIDIA A100-PCIE-40GB", "sm_80", 108, 40 * kGiB, 40 * 1024 * kKiB, 1555 * kGBps,
       {{"fp64", 9.7 * kT}, {"fp64_tensor", 19.5 * kT}, {"fp32", 19.5 * kT},
        {"tf32", 156 * kT}, {"bf16", 312 * kT}, {"fp16", 312 * kT}, {"int8", 624 * kT}},
       2048, 32, 65536, 164 * kKiB},
      {"NVIDIA H100 SXM5", "sm_90", 132, 80 * kGiB, 50 * 1024 * kKiB, 3.35 * kTBps,
       {{"fp64", 34 * kT}, {"fp64_tensor", 67 * kT}, {"fp32", 67 * kT},
        {"tf32", 494.5 * kT}, {"bf16", 989.5 * kT}, {"fp16", 989.5 * kT},
        {"fp8", 1979 * kT}, {"int8", 1979 * kT}},
       2048, 32, 65536, 228 * kKiB},
      {"NVIDIA H100 PCIe", "sm_90", 114, 80 * kGiB, 50 * 1024 * kKiB, 2.0 * kTBps,
       {{"fp64", 25.6 * kT}, {"fp64_tensor", 51.2 * kT}, {"fp32", 51.2 * kT},
        {"tf32", 378 * kT}, {"bf16", 756 * kT}, {"fp16", 756 * kT}, {"fp8", 1513 * kT},
        {"int8", 1513 * kT}},
       2048, 32, 65536, 228 * kKiB},
      {"NVIDIA H100 NVL", "sm_90", 132, 94 * kGiB, 50 * 1024 * kKiB, 3.9 * kTBps,
       {{"fp64", 30 * kT}, {"fp64_tensor", 60 * kT}, {"fp32", 60 * kT},
        {"tf32", 417.5 * kT}, {"bf16", 835.5 * kT}, {"fp16", 835.5 * kT},
        {"fp8", 1670.5 * kT}, {"int8", 1670.5 * kT}},
       2048, 32, 65536, 228 * kKiB},
      {"NVIDIA H200", "sm_90", 132, 141 * kGiB, 50 * 1024 * kKiB, 4.8 * kTBps,
       {{"fp64", 34 * kT}, {"fp64_tensor", 67 * kT}, {"fp32", 67 * kT},
        {"tf32", 494.5 * kT}, {"bf16", 989.5 * kT}, {"fp16", 989.5 * kT},
        {"fp8", 1979 * kT}, {"int8", 1979 * kT}},
       2048, 32, 65536, 228 * kKiB},
      {"NVIDIA H200 NVL", "sm_90", 132, 141 * kGiB, 50 * 1024 * kKiB, 4.8 * kTBps,
       {{"fp64", 30 * kT}, {"fp64_tensor", 60 * kT}, {"fp32", 60 * kT},
        {"tf32", 417.5 * kT}, {"bf16", 835.5 * kT}, {"fp16", 835.5 * kT},
        {"fp8", 1670.5 * kT}, {"int8", 1670.5 * kT}},
       2048, 32, 65536, 228 * kKiB},
      {"NVIDIA B200", "sm_100", 148, 180 * kGiB, 126 * 1024 * kKiB, 8.0 * kTBps,
       {{"fp64", 37 * kT}, {"fp64_tensor", 37 * kT}, {"fp32", 75 * kT},
        {"tf32", 1100 * kT}, {"bf16", 2250 * kT}, {"fp16", 2250 * kT},
        {"fp8", 4500 * kT}, {"int8", 4500 * kT}},
       2048, 32, 65536, 228 * kKiB},
      {"NVIDIA L40S", "sm_89", 142, 48 * kGiB, 96 * 1024 * kKiB, 864 * kGBps,
       {{"fp32", 91.6 * kT}, {"tf32", 183 * kT}, {"bf16", 362.05 * kT},
        {"fp16", 362.05 * kT}, {"fp8", 733 * kT}, {"int8", 733 * kT}},
       1536, 24, 65536, 100 * kKiB},
  };
  return *table;
}

const TableEntry* Find(absl::string_view key) {
  for (const TableEntry& entry : Table()) {
    if (key == entry.key) return &entry;
  }
  return nullptr;
}

// Maps a device name as CUDA reports it to a table key.
const TableEntry* Match(absl::string_view raw_name, int64_t memory_bytes) {
  std::string name = absl::AsciiStrToUpper(raw_name);
  const bool pcie = absl::StrContains(name, "PCIE");
  const bool nvl = absl::StrContains(name, "NVL");
  if (absl::StrContains(name, "A100")) {
    const bool big = absl::StrContains(name, "80GB") || memory_bytes > 60 * kGiB;
    if (pcie) return Find(big ? "NVIDIA A100 80GB PCIe" : "NVIDIA A100-PCIE-40GB");
    return Find(big ? "NVIDIA A100-SXM4-80GB" : "NVIDIA A100-SXM4-40GB");
  }
  if (absl::StrContains(name, "H200")) return Find(nvl ? "NVIDIA H200 NVL" : "NVIDIA H200");
  if (absl::StrContains(name, "H100")) {
    if (nvl) return Find("NVIDIA H100 NVL");
    if (pcie) return Find("NVIDIA H100 PCIe");
    return Find("NVIDIA H100 SXM5");  // "NVIDIA H100 80GB HBM3"
  }
  if (absl::StrContains(name, "B200")) return Find("NVIDIA B200");
  if (absl::StrContains(name, "L40S")) return Find("NVIDIA L40S");
  return nullptr;
}

kagent::v1::GpuSpec FromEntry(const TableEntry& entry) {
  kagent::v1::GpuSpec spec;
  spec.set_name(entry.key);
  spec.set_arch(entry.arch);
  spec.set_sm_count(entry.sm_count);
  spec.set_memory_bytes(entry.memory_bytes);
  spec.set_l2_bytes(entry.l2_bytes);
  spec.set_peak_dram_bytes_per_second(entry.dram_bytes_per_second);
  for (const auto& [dtype, flops] : entry.flops) (*spec.mutable_peak_flops())[dtype] = flops;
  spec.set_max_threads_per_sm(entry.max_threads_per_sm);
  spec.set_max_blocks_per_sm(entry.max_blocks_per_sm);
  spec.set_registers_per_sm(entry.registers_per_sm);
  spec.set_shared_memory_per_sm_bytes(entry.shared_memory_per_sm_bytes);
  spec.set_measured(false);
  return spec;
}

template <typename T>
T NumberOr(const nlohmann::json& json, const char* key, T fallback) {
  auto it = json.find(key);
  if (it == json.end() || !it->is_number()) return fallback;
  return it->get<T>();
}

}  // namespace

absl::StatusOr<GpuInfo> ParseGpuInfoJson(absl::string_view text) {
  nlohmann::json json = nlohmann::json::parse(text.begin(), text.end(), nullptr, false);
  if (json.is_discarded() || !json.is_object()) {
    return absl::InvalidArgumentError("gpuinfo output is not a JSON object");
  }
  GpuInfo info;
  auto name = json.find("name");
  if (name == json.end() || !name->is_string() || name->get<std::string>().empty()) {
    std::string reason = json.value("reason", std::string());
    return absl::InvalidArgumentError(
        absl::StrCat("gpuinfo reported no GPU name", reason.empty() ? "" : ": ", reason));
  }
  info.name = name->get<std::string>();
  info.sm_count = NumberOr<int>(json, "sm_count", 0);
  info.memory_bytes = NumberOr<int64_t>(json, "total_memory_bytes",
                                        NumberOr<int64_t>(json, "memory_bytes", 0));
  info.l2_bytes = NumberOr<int64_t>(json, "l2_bytes", 0);
  info.sm_clock_mhz = json.contains("sm_clock_khz") ? NumberOr<double>(json, "sm_clock_khz", 0) / 1e3
                                                    : NumberOr<double>(json, "sm_clock_mhz", 0);
  info.mem_clock_mhz = json.contains("mem_clock_khz")
                           ? NumberOr<double>(json, "mem_clock_khz", 0) / 1e3
                           : NumberOr<double>(json, "mem_clock_mhz", 0);
  info.major = NumberOr<int>(json, "major", 0);
  info.minor = NumberOr<int>(json, "minor", 0);
  if (info.major == 0) {
    std::string arch = json.value("arch", std::string());  // "sm_90"
    if (arch.size() >= 5 && arch.rfind("sm_", 0) == 0) {
      int cc = std::atoi(arch.c_str() + 3);
      info.major = cc / 10;
      info.minor = cc % 10;
    }
  }
  if (json.value("measured", false)) {
    info.measured_dram_bytes_per_second = NumberOr<double>(json, "peak_dram_bytes_per_second", 0);
    auto flops = json.find("peak_flops");
    if (flops != json.end() && flops->is_object()) {
      for (const auto& [dtype, value] : flops->items()) {
        if (value.is_number() && value.get<double>() > 0) {
          info.measured_peak_flops[dtype] = value.get<double>();
        }
      }
    }
  }
  return info;
}

absl::StatusOr<kagent::v1::GpuSpec> LookupGpuSpec(absl::string_view name, int64_t memory_bytes) {
  const TableEntry* entry = Match(name, memory_bytes);
  if (entry == nullptr) {
    return absl::NotFoundError(absl::StrCat("GPU '", name, "' is not in the spec table"));
  }
  return FromEntry(*entry);
}

absl::StatusOr<kagent::v1::GpuSpec> GpuSpecFor(const GpuInfo& info) {
  kagent::v1::GpuSpec spec;
  if (const TableEntry* entry = Match(info.name, info.memory_bytes)) {
    spec = FromEntry(*entry);
  } else {
    if (info.measured_dram_bytes_per_second <= 0 || info.measured_peak_flops.empty()) {
      return absl::FailedPreconditionError(absl::StrCat(
          "GPU '", info.name,
          "' is not in the spec table and no measured ceilings were given: run the harness's "
          "gpuinfo mode with --measure-ceilings"));
    }
    spec.set_measured(true);
    spec.set_peak_dram_bytes_per_second(info.measured_dram_bytes_per_second);
    for (const auto& [dtype, flops] : info.measured_peak_flops) {
      (*spec.mutable_peak_flops())[dtype] = flops;
    }
    if (info.major > 0) spec.set_arch(absl::StrFormat("sm_%d%d", info.major, info.minor));
  }
  // What the device reports wins over nominal figures.
  spec.set_name(info.name);
  if (info.sm_count > 0) spec.set_sm_count(info.sm_count);
  if (info.memory_bytes > 0) spec.set_memory_bytes(info.memory_bytes);
  if (info.l2_bytes > 0) spec.set_l2_bytes(info.l2_bytes);
  if (info.sm_clock_mhz > 0) spec.set_sm_clock_mhz(info.sm_clock_mhz);
  if (info.mem_clock_mhz > 0) spec.set_mem_clock_mhz(info.mem_clock_mhz);
  return spec;
}

}  // namespace kagent
