#include "services/profiler/hardware_metrics.h"

#include <catch2/catch.hpp>

#include "services/profiler/gpu_spec.h"
#include "services/profiler/ncu_csv.h"
#include "services/profiler/testing/fake_runner.h"

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

TEST_CASE("Builds SOL and roofline figures from the recorded multi-kernel profile",
          "[hardware_metrics]") {
  absl::StatusOr<NcuCsvReport> report =
      ParseNcuCsv(::kagent::testing::ReadFixture("h200_multi.csv"));
  REQUIRE(report.ok());
  absl::StatusOr<kagent::v1::HardwareMetrics> metrics =
      BuildHardwareMetrics(report->kernels, "ncu", nullptr, nullptr);
  REQUIRE(metrics.ok());
  CHECK(metrics->backend() == "ncu");
  CHECK(metrics->kernels_size() == 3);
  const double total = 12768 + 9760 + 10048;
  CHECK(metrics->aggregate().duration_ns() == Approx(total));
  CHECK(metrics->compute_sol_pct() ==
        Approx((12768 * 5.27 + 9760 * 17.48 + 10048 * 24.07) / total));
  CHECK(metrics->memory_sol_pct() ==
        Approx((12768 * 58.76 + 9760 * 40.63 + 10048 * 35.00) / total));
  CHECK(metrics->roofline_efficiency_pct() == metrics->memory_sol_pct());
  CHECK(metrics->aggregate().values().at("dram__bytes_read.sum") ==
        Approx(33560832.0 + 16786432 + 16839936));
  CHECK(metrics->arithmetic_intensity() == 0);  // no signature
}

TEST_CASE("Applies the arithmetic-intensity roofline against the GPU spec",
          "[hardware_metrics]") {
  absl::StatusOr<NcuCsvReport> report =
      ParseNcuCsv(::kagent::testing::ReadFixture("h200_triton_matvec.csv"));
  REQUIRE(report.ok());
  absl::StatusOr<kagent::v1::GpuSpec> spec = LookupGpuSpec("NVIDIA H200", 0);
  REQUIRE(spec.ok());
  kagent::v1::OpSignature signature;
  const double n = 8192;
  signature.set_flops(2 * n * n);
  signature.set_min_bytes(2 * n * n + 2 * n + 2 * n);
  auto* op = signature.add_ops();
  op->set_op("aten::mv");
  op->add_inputs()->set_dtype("bfloat16");
  absl::StatusOr<kagent::v1::HardwareMetrics> metrics =
      BuildHardwareMetrics(report->kernels, "ncu", &signature, &*spec);
  REQUIRE(metrics.ok());
  const double seconds = 34336e-9;
  CHECK(metrics->arithmetic_intensity() == Approx(signature.flops() / signature.min_bytes()));
  CHECK(metrics->achieved_flops() == Approx(signature.flops() / seconds));
  CHECK(metrics->achieved_bytes_per_second() == Approx(signature.min_bytes() / seconds));
  // Bandwidth-bound: attainable = intensity x 4.8 TB/s, so the bound is achieved / peak BW.
  CHECK(metrics->roofline_bound_pct() ==
        Approx(100.0 * signature.min_bytes() / seconds / 4.8e12));
  CHECK(metrics->roofline_bound_pct() > 50);
  CHECK(metrics->roofline_bound_pct() < 100);
}

TEST_CASE("The roofline needs flops, bytes and a matching peak", "[hardware_metrics]") {
  kagent::v1::HardwareMetrics metrics;
  metrics.mutable_aggregate()->set_duration_ns(1000);
  kagent::v1::GpuSpec spec;
  spec.set_peak_dram_bytes_per_second(1e12);
  (*spec.mutable_peak_flops())["fp32"] = 1e13;
  kagent::v1::OpSignature signature;
  CHECK_FALSE(ApplyRoofline(signature, spec, &metrics));
  signature.set_flops(1e6);
  signature.set_min_bytes(1e5);
  CHECK(ApplyRoofline(signature, spec, &metrics));  // no dtype recorded: fp32
  // 1e6 FLOP in 1 us = 1e12 FLOP/s; intensity 10 -> attainable min(1e13, 10 x 1e12).
  CHECK(metrics.arithmetic_intensity() == Approx(10));
  CHECK(metrics.achieved_flops() == Approx(1e12));
  CHECK(metrics.roofline_bound_pct() == Approx(10));
  signature.add_ops()->add_inputs()->set_dtype("float8_e4m3fn");
  kagent::v1::HardwareMetrics fresh;
  fresh.mutable_aggregate()->set_duration_ns(1000);
  CHECK_FALSE(ApplyRoofline(signature, spec, &fresh));  // no fp8 peak in this spec
  CHECK(PeakFlopsKeyForDtype("torch.bfloat16") == "bf16");
  CHECK(PeakFlopsKeyForDtype("float16") == "fp16");
  CHECK(PeakFlopsKeyForDtype("float64") == "fp64");
  CHECK(PeakFlopsKeyForDtype("int64").empty());
}

TEST_CASE("The useful roofline figure prefers the arithmetic-intensity roofline over SOL",
          "[hardware_metrics]") {
  kagent::v1::HardwareMetrics metrics;
  // The H200 maxpool2d: 99.4% memory SOL from cache traffic, 46% of its roofline.
  metrics.set_memory_sol_pct(99.4);
  metrics.set_roofline_efficiency_pct(99.4);
  metrics.set_roofline_bound_pct(46);
  CHECK(UsefulRooflinePct(metrics) == 46);
  // No FLOPs/bytes from the signature: the roofline is unknown (0), SOL is all there is.
  metrics.clear_roofline_bound_pct();
  CHECK(UsefulRooflinePct(metrics) == Approx(99.4));
  CHECK(UsefulRooflinePct(kagent::v1::HardwareMetrics()) == 0);
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
