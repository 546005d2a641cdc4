#include "kernel_model/roofline.h"

#include <string>

#include <catch2/catch.hpp>

namespace kagent {
namespace {

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

TEST_CASE("An fp32 product's ceiling is 3xTF32's where the tensor cores are faster",
          "[hardware_metrics]") {
  kagent::v1::GpuSpec h100;
  h100.set_peak_dram_bytes_per_second(3.35e12);
  (*h100.mutable_peak_flops())["fp32"] = 67e12;
  (*h100.mutable_peak_flops())["tf32"] = 494.5e12;
  kagent::v1::OpSignature mm;
  mm.set_flops(2.0 * 4096 * 4096 * 4096);
  mm.set_min_bytes(3.0 * 4096 * 4096 * 4);
  auto* op = mm.add_ops();
  op->set_op("aten::mm");
  op->add_inputs()->set_dtype("float32");
  std::string label;
  CHECK(PeakFlops(mm, h100, &label) == Approx(494.5e12 / 3));
  CHECK(label == "fp32 (3xTF32: tf32 / 3)");
  // problems/01 on an H100 through kagentd: 4096^3 in 1.195 ms, 115 TFLOP/s: 70 % of this
  // ceiling, where the FMA peak alone put it at 172 % of the roofline.
  CHECK(RooflinePctAt(mm, h100, 1.195) == Approx(100.0 * mm.flops() / 1.195e-3 / (494.5e12 / 3)));
  CHECK(RooflinePctAt(mm, h100, 1.195) < 100);
  // The same product in bf16 keeps its own peak; an fp32 elementwise op keeps the FMA peak;
  // a GPU without a TF32 peak (or a slower one) keeps fp32's.
  kagent::v1::OpSignature relu = mm;
  relu.mutable_ops(0)->set_op("aten::relu");
  CHECK(PeakFlops(relu, h100, &label) == Approx(67e12));
  CHECK(label == "fp32");
  kagent::v1::OpSignature conv = mm;
  conv.mutable_ops(0)->set_op("aten::convolution");
  CHECK(PeakFlops(conv, h100) == Approx(494.5e12 / 3));
  kagent::v1::GpuSpec old_gpu = h100;
  (*old_gpu.mutable_peak_flops())["tf32"] = 150e12;  // a third below the FMA peak
  CHECK(PeakFlops(mm, old_gpu) == Approx(67e12));
  old_gpu.mutable_peak_flops()->erase("tf32");
  CHECK(PeakFlops(mm, old_gpu) == Approx(67e12));
  (*h100.mutable_peak_flops())["bf16"] = 989.5e12;
  kagent::v1::OpSignature mm16 = mm;
  mm16.mutable_ops(0)->mutable_inputs(0)->set_dtype("bfloat16");
  CHECK(PeakFlops(mm16, h100, &label) == Approx(989.5e12));
  CHECK(label == "bf16");
}

TEST_CASE("The roofline at a measured median", "[hardware_metrics]") {
  kagent::v1::GpuSpec spec;
  spec.set_peak_dram_bytes_per_second(4.8e12);
  (*spec.mutable_peak_flops())["fp32"] = 67e12;
  kagent::v1::OpSignature signature;
  signature.set_flops(1e6);
  signature.set_min_bytes(4.5e9);
  // 4.5 GB in 1 ms: 4.5 TB/s of the 4.8 (a memory-bound op).
  CHECK(RooflinePctAt(signature, spec, 1.0) == Approx(93.75));
  CHECK(RooflinePctAt(signature, spec, 0) == 0);
  CHECK(RooflinePctAt(kagent::v1::OpSignature(), spec, 1.0) == 0);
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

}  // namespace
}  // namespace kagent
