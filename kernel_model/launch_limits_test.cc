#include "kernel_model/launch_limits.h"

#include <catch2/catch.hpp>

#include "kernel_model/gpu_spec.h"
#include "kernel_model/metric_names.h"

namespace kagent {
namespace {

kagent::v1::GpuSpec H200() {
  absl::StatusOr<kagent::v1::GpuSpec> spec = LookupGpuSpec("NVIDIA H200", 0);
  REQUIRE(spec.ok());
  return *spec;
}

// Each case is a launch ncu profiled on the H200 (tests/fixtures/ncu), with the limits,
// the shared-memory configuration and the waves it reported.
TEST_CASE("Launch limits are what ncu reported for the same launches on the H200") {
  struct Case {
    const char* what;
    LaunchConfig config;
    int64_t registers, shared_mem, warps, blocks, carveout;
    double waves;
  };
  const Case cases[] = {
      {"h200_triton_add.csv _add_kernel", {128, 26, 0, 16384}, 16, 32, 16, 32, 32768, 7.76},
      {"h200_multi.csv at::reduce_kernel", {512, 32, 16 + 2048, 512}, 4, 10, 4, 32, 32768, 0.97},
      {"h200_torch_mm_bf16.csv nvjet", {384, 168, 213188, 132}, 1, 1, 5, 32, 233472, 1.0},
      {"h200_judge_grid_underfilled.csv _row_sum_kernel", {128, 32, 16, 16}, 16, 28, 16, 32,
       32768, 0.0076},
      // 5 blocks fit in 100 KiB but the driver took 132 KiB (room for a 6th).
      {"h200_triton_matmul_square.csv matmul_kernel", {128, 96, 16384, 4096}, 5, 7, 16, 32,
       135168, 6.21},
  };
  for (const Case& c : cases) {
    INFO(c.what);
    std::optional<LaunchLimits> limits = ComputeLaunchLimits(H200(), c.config);
    REQUIRE(limits.has_value());
    CHECK(limits->registers == c.registers);
    CHECK(limits->shared_mem == c.shared_mem);
    CHECK(limits->warps == c.warps);
    CHECK(limits->blocks == c.blocks);
    CHECK(limits->carveout_bytes == c.carveout);
    CHECK(limits->waves == Approx(c.waves).epsilon(0.01));
  }
}

TEST_CASE("A block that cannot fit has a zero limit and no waves") {
  // 255 registers x 1024 threads needs more than the SM's 64 K registers.
  std::optional<LaunchLimits> limits = ComputeLaunchLimits(H200(), {1024, 255, 0, 10});
  REQUIRE(limits.has_value());
  CHECK(limits->registers == 0);
  CHECK(limits->waves == 0);
  kagent::v1::KernelMetrics kernel;
  auto& v = *kernel.mutable_values();
  v[metric::kBlockSize] = 1024;
  v[metric::kGridSize] = 10;
  v[metric::kRegistersPerThread] = 255;
  REQUIRE(AddLaunchLimits(H200(), &kernel));
  CHECK(v.at(metric::kLimitRegisters) == 0);
  CHECK_FALSE(v.contains(metric::kWaves));
}

TEST_CASE("Launch limits need the GPU's limits and a valid configuration") {
  CHECK_FALSE(ComputeLaunchLimits(kagent::v1::GpuSpec(), {128, 32, 0, 10}).has_value());
  CHECK_FALSE(ComputeLaunchLimits(H200(), {0, 32, 0, 10}).has_value());
  CHECK_FALSE(ComputeLaunchLimits(H200(), {128, -1, 0, 10}).has_value());
}

TEST_CASE("AddLaunchLimits keeps values already there and needs the configuration") {
  kagent::v1::KernelMetrics kernel;
  auto& v = *kernel.mutable_values();
  v[metric::kBlockSize] = 128;
  v[metric::kGridSize] = 16384;
  CHECK_FALSE(AddLaunchLimits(H200(), &kernel));  // no registers per thread
  CHECK_FALSE(v.contains(metric::kLimitWarps));
  v[metric::kRegistersPerThread] = 26;
  v[metric::kLimitWarps] = 7;  // a value the profiler reported stays
  REQUIRE(AddLaunchLimits(H200(), &kernel));
  CHECK(v.at(metric::kLimitWarps) == 7);
  CHECK(v.at(metric::kLimitRegisters) == 16);
  CHECK(v.at(metric::kLimitSharedMem) == 32);
  CHECK(v.at(metric::kWaves) == Approx(7.76).epsilon(0.01));
}

}  // namespace
}  // namespace kagent
