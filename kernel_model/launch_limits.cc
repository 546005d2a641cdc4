#include "kernel_model/launch_limits.h"

#include <algorithm>
#include <vector>

#include "kernel_model/metric_names.h"

namespace kagent {
namespace {

constexpr int64_t kWarpSize = 32;
constexpr int64_t kRegisterAllocationUnit = 256;  // registers, per warp
constexpr int64_t kSubPartitions = 4;             // per SM: registers are split this way
constexpr int64_t kSharedAllocationUnit = 128;    // bytes
constexpr int64_t kReservedSharedPerBlock = 1024;  // bytes the system keeps per block
constexpr int64_t kKiB = 1024;
// Shared-memory configurations (carveouts) of sm_80 and later, from 32 KiB up; a GPU
// offers those up to its shared_memory_per_sm_bytes.
constexpr int64_t kCarveoutsKiB[] = {32, 64, 100, 132, 164, 196, 228};

int64_t RoundUp(int64_t value, int64_t unit) { return (value + unit - 1) / unit * unit; }

int64_t SharedLimit(int64_t carveout, int64_t per_block) {
  return carveout / per_block;
}

}  // namespace

std::optional<LaunchLimits> ComputeLaunchLimits(const kagent::v1::GpuSpec& gpu,
                                                const LaunchConfig& config) {
  if (gpu.max_threads_per_sm() <= 0 || gpu.max_blocks_per_sm() <= 0 ||
      gpu.registers_per_sm() <= 0 || gpu.shared_memory_per_sm_bytes() <= 0 ||
      gpu.sm_count() <= 0) {
    return std::nullopt;
  }
  if (config.threads_per_block <= 0 || config.registers_per_thread < 0 ||
      config.shared_bytes_per_block < 0 || config.blocks < 0) {
    return std::nullopt;
  }
  LaunchLimits limits;
  const int64_t warps_per_block = (config.threads_per_block + kWarpSize - 1) / kWarpSize;
  limits.warps = gpu.max_threads_per_sm() / kWarpSize / warps_per_block;
  limits.blocks = gpu.max_blocks_per_sm();
  if (config.registers_per_thread == 0) {
    limits.registers = limits.blocks;
  } else {
    const int64_t per_warp =
        RoundUp(config.registers_per_thread * kWarpSize, kRegisterAllocationUnit);
    const int64_t warps_per_partition = gpu.registers_per_sm() / kSubPartitions / per_warp;
    limits.registers = warps_per_partition * kSubPartitions / warps_per_block;
  }
  const int64_t shared_per_block =
      RoundUp(config.shared_bytes_per_block, kSharedAllocationUnit) + kReservedSharedPerBlock;
  std::vector<int64_t> carveouts;
  for (int64_t kib : kCarveoutsKiB) {
    if (kib * kKiB < gpu.shared_memory_per_sm_bytes()) carveouts.push_back(kib * kKiB);
  }
  carveouts.push_back(gpu.shared_memory_per_sm_bytes());
  const int64_t others = std::min({limits.registers, limits.warps, limits.blocks});
  limits.carveout_bytes = carveouts.back();
  for (int64_t carveout : carveouts) {
    if (SharedLimit(carveout, shared_per_block) > others) {
      limits.carveout_bytes = carveout;
      break;
    }
  }
  limits.shared_mem =
      std::min<int64_t>(SharedLimit(limits.carveout_bytes, shared_per_block), limits.blocks);
  limits.resident = std::min(others, limits.shared_mem);
  if (limits.resident > 0) {
    limits.waves = static_cast<double>(config.blocks) /
                   static_cast<double>(limits.resident * gpu.sm_count());
  }
  return limits;
}

bool AddLaunchLimits(const kagent::v1::GpuSpec& gpu, kagent::v1::KernelMetrics* kernel) {
  auto& values = *kernel->mutable_values();
  auto get = [&values](const char* name) -> std::optional<double> {
    auto it = values.find(name);
    if (it == values.end()) return std::nullopt;
    return it->second;
  };
  const auto block = get(metric::kBlockSize);
  const auto grid = get(metric::kGridSize);
  const auto registers = get(metric::kRegistersPerThread);
  if (!block || !grid || !registers) return false;
  LaunchConfig config;
  config.threads_per_block = static_cast<int64_t>(*block);
  config.blocks = static_cast<int64_t>(*grid);
  config.registers_per_thread = static_cast<int64_t>(*registers);
  config.shared_bytes_per_block = static_cast<int64_t>(get(metric::kSharedMemStatic).value_or(0) +
                                                       get(metric::kSharedMemDynamic).value_or(0));
  const std::optional<LaunchLimits> limits = ComputeLaunchLimits(gpu, config);
  if (!limits) return false;
  values.insert({metric::kLimitRegisters, static_cast<double>(limits->registers)});
  values.insert({metric::kLimitSharedMem, static_cast<double>(limits->shared_mem)});
  values.insert({metric::kLimitWarps, static_cast<double>(limits->warps)});
  values.insert({metric::kLimitBlocks, static_cast<double>(limits->blocks)});
  if (limits->resident > 0) values.insert({metric::kWaves, limits->waves});
  return true;
}

}  // namespace kagent
