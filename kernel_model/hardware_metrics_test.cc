#include "kernel_model/hardware_metrics.h"

#include <catch2/catch.hpp>

namespace kagent {
namespace {

using kagent::v1::KernelMetrics;

KernelMetrics Kernel(const std::string& name, double duration,
                     std::map<std::string, double> values) {
  KernelMetrics kernel;
  kernel.set_kernel_name(name);
  kernel.set_duration_ns(duration);
  values["gpu__time_duration.sum"] = duration;
  for (const auto& [k, v] : values) (*kernel.mutable_values())[k] = v;
  return kernel;
}

TEST_CASE("Aggregates counters by sum and percentages by duration weight", "[hardware_metrics]") {
  std::vector<KernelMetrics> kernels = {
      Kernel("a", 900, {{"dram__bytes_read.sum", 1000},
                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 10},
                        {"launch__grid_size", 100}}),
      Kernel("b", 100, {{"dram__bytes_read.sum", 24},
                        {"sm__throughput.avg.pct_of_peak_sustained_elapsed", 90},
                        {"launch__grid_size", 1100},
                        {"lts__t_sector_hit_rate.pct", 50}}),
  };
  kernels[0].add_grid(100);
  KernelMetrics aggregate = AggregateKernels(kernels);
  CHECK(aggregate.kernel_name() == "aggregate");
  CHECK(aggregate.invocation() == 2);
  CHECK(aggregate.duration_ns() == 1000);
  CHECK(aggregate.values().at("gpu__time_duration.sum") == 1000);
  CHECK(aggregate.values().at("dram__bytes_read.sum") == 1024);
  CHECK(aggregate.values().at("sm__throughput.avg.pct_of_peak_sustained_elapsed") ==
        Approx(0.9 * 10 + 0.1 * 90));
  CHECK(aggregate.values().at("launch__grid_size") == Approx(0.9 * 100 + 0.1 * 1100));
  // Reported by one kernel only: its own value.
  CHECK(aggregate.values().at("lts__t_sector_hit_rate.pct") == Approx(50));
  CHECK(aggregate.grid(0) == 100);  // the longest kernel's launch
}

TEST_CASE("Kernels without durations weigh equally", "[hardware_metrics]") {
  KernelMetrics a;
  (*a.mutable_values())["lts__t_sector_hit_rate.pct"] = 20;
  KernelMetrics b;
  (*b.mutable_values())["lts__t_sector_hit_rate.pct"] = 40;
  CHECK(AggregateKernels({a, b}).values().at("lts__t_sector_hit_rate.pct") == Approx(30));
}

TEST_CASE("No kernels is a clear error", "[hardware_metrics]") {
  absl::StatusOr<kagent::v1::HardwareMetrics> metrics =
      BuildHardwareMetrics({}, "ncu", nullptr, nullptr);
  REQUIRE_FALSE(metrics.ok());
  CHECK(metrics.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(metrics.status().message().find("launched no GPU kernel") != absl::string_view::npos);
}

}  // namespace
}  // namespace kagent
