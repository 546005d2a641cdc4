#include "kernel_model/profile_view.h"

#include <catch2/catch.hpp>

#include "kernel_model/metric_names.h"
#include "kernel_model/roofline.h"

namespace kagent {
namespace {

// The achieved-FLOPs figure takes its peak by the roofline's rule (DominantPeakKey).
TEST_CASE("The achieved FLOPs use the roofline's dtype rule", "[profile_view]") {
  kagent::v1::HardwareMetrics metrics;
  metrics.add_kernels()->set_duration_ns(1000);  // 1 us
  kagent::v1::GpuSpec gpu;
  (*gpu.mutable_peak_flops())["bf16"] = 1e12;
  (*gpu.mutable_peak_flops())["fp32"] = 1e13;
  kagent::v1::OpSignature signature;
  signature.set_flops(1e6);  // 1e12 FLOP/s over 1 us

  SECTION("an integer first input: the first floating-point dtype") {
    auto* op = signature.add_ops();
    op->add_inputs()->set_dtype("int64");
    op->add_inputs()->set_dtype("bfloat16");
    CHECK(DominantPeakKey(signature) == "bf16");
    auto view = ProfileView::Build(metrics, gpu, &signature, nullptr);
    REQUIRE(view.ok());
    REQUIRE(view->Get(metric::kAchievedFlopsPct).has_value());
    CHECK(*view->Get(metric::kAchievedFlopsPct) == Approx(100.0));
  }
  SECTION("no dtype recorded: fp32") {
    CHECK(DominantPeakKey(signature) == "fp32");
    auto view = ProfileView::Build(metrics, gpu, &signature, nullptr);
    REQUIRE(view.ok());
    REQUIRE(view->Get(metric::kAchievedFlopsPct).has_value());
    CHECK(*view->Get(metric::kAchievedFlopsPct) == Approx(10.0));
  }
  SECTION("no peak for the dtype: unknown") {
    signature.add_ops()->add_inputs()->set_dtype("float8_e4m3fn");
    auto view = ProfileView::Build(metrics, gpu, &signature, nullptr);
    REQUIRE(view.ok());
    CHECK_FALSE(view->Has(metric::kAchievedFlopsPct));
  }
}

}  // namespace
}  // namespace kagent
