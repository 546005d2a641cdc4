// A kernel's launch limits computed from its launch configuration, for profiles whose
// backend reports the configuration but not Nsight Compute's launch__occupancy_limit_*
// and launch__waves_per_multiprocessor values (the CUPTI backend: its activity records
// carry the grid, block, registers and shared memory of each launch).
//
// The limits follow the CUDA occupancy calculator's rules for sm_80 and later: registers
// allocated per warp in units of 256 and per SM sub-partition (4 per SM), shared memory
// per block rounded up to 128 bytes plus 1 KiB the system reserves per block, the SM's
// warp and block limits. The shared-memory carveout of a launch is the driver's choice,
// undocumented and not in the activity record: taken as the smallest of the
// configurations from 32 KiB up that holds one block more than the other limits allow
// (the largest when none does), so shared memory is never named the limiter unless even
// the largest configuration makes it one. That rule is fitted to what ncu reported on
// the H200 (the configuration and every limit and wave count of each launch in
// tests/fixtures/ncu: ncu_csv_test.cc, launch_limits_test.cc), not taken from the driver.
//
// Thread-safe (pure functions).
#ifndef KAGENT_KERNEL_MODEL_LAUNCH_LIMITS_H_
#define KAGENT_KERNEL_MODEL_LAUNCH_LIMITS_H_

#include <cstdint>
#include <optional>

#include "kagent/v1/common.pb.h"

namespace kagent {

struct LaunchConfig {
  int64_t threads_per_block = 0;     // > 0
  int64_t registers_per_thread = 0;  // >= 0
  int64_t shared_bytes_per_block = 0;  // static + dynamic, >= 0
  int64_t blocks = 0;                // grid size in blocks, >= 0
};

// Resident blocks per SM allowed by each resource, and what follows from them.
struct LaunchLimits {
  int64_t registers = 0;   // launch__occupancy_limit_registers
  int64_t shared_mem = 0;  // launch__occupancy_limit_shared_mem
  int64_t warps = 0;       // launch__occupancy_limit_warps
  int64_t blocks = 0;      // launch__occupancy_limit_blocks
  int64_t carveout_bytes = 0;  // the shared-memory configuration assumed
  int64_t resident = 0;    // blocks per SM at once: the smallest of the four limits
  double waves = 0;        // launch__waves_per_multiprocessor; 0 when resident is 0
};

// nullopt when the GPU's limits (max_threads_per_sm, max_blocks_per_sm, registers_per_sm,
// shared_memory_per_sm_bytes, sm_count) or the configuration are incomplete or invalid.
// A block that cannot fit at all gets a limit of 0 for the resource that stops it.
std::optional<LaunchLimits> ComputeLaunchLimits(const kagent::v1::GpuSpec& gpu,
                                                const LaunchConfig& config);

// Adds the four launch__occupancy_limit_* values and launch__waves_per_multiprocessor to
// `kernel` from its launch__block_size, launch__grid_size, launch__registers_per_thread
// and launch__shared_mem_per_block_static/dynamic values, each only where absent. Returns
// whether it added them (false when an input is missing or ComputeLaunchLimits fails).
bool AddLaunchLimits(const kagent::v1::GpuSpec& gpu, kagent::v1::KernelMetrics* kernel);

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_LAUNCH_LIMITS_H_
