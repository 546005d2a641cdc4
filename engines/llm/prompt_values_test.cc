// The prompt values and the minimal source check of the LLM brain.
#include "engines/llm/prompt_values.h"

#include <catch2/catch.hpp>

#include "absl/status/status.h"

namespace kagent::llm_engine {
namespace {

TEST_CASE("ValidateKernelSource wants ModelNew and a jit kernel", "[llm_brain]") {
  CHECK(ValidateKernelSource("import triton\n@triton.jit\ndef k(x):\n  pass\n"
                             "class ModelNew(nn.Module):\n  pass\n")
            .ok());
  // @jit after `from triton import jit`, decorator arguments, autotune above it.
  CHECK(ValidateKernelSource("@triton.autotune(configs=[], key=[])\n@jit(do_not_specialize=[1])\n"
                             "def k(x): pass\nclass ModelNew:\n  pass\n")
            .ok());
  auto no_model = ValidateKernelSource("@triton.jit\ndef k(x): pass\nclass Model(nn.Module): pass\n");
  CHECK(absl::IsInvalidArgument(no_model));
  CHECK_THAT(std::string(no_model.message()), Catch::Contains("ModelNew"));
  // Nested (indented) ModelNew is not top level; ModelNewer is another name.
  CHECK(!ValidateKernelSource("@triton.jit\ndef k(x): pass\nif True:\n  class ModelNew: pass\n").ok());
  CHECK(!ValidateKernelSource("@triton.jit\ndef k(x): pass\nclass ModelNewer: pass\n").ok());
  auto no_jit = ValidateKernelSource("class ModelNew(nn.Module):\n  pass\n");
  CHECK_THAT(std::string(no_jit.message()), Catch::Contains("@triton.jit"));
  CHECK(!ValidateKernelSource("  \n").ok());
}

TEST_CASE("StripCodeFences removes a fenced block's fences only", "[llm_brain]") {
  CHECK(StripCodeFences("```python\nimport torch\n```") == "import torch\n");
  CHECK(StripCodeFences("```\nx = 1\n```\n") == "x = 1\n");
  CHECK(StripCodeFences("import torch\n") == "import torch\n");
}

TEST_CASE("KernelKnobs reads constexpr parameters and launch meta-parameters", "[llm_brain]") {
  const char* source = R"py(import triton
import triton.language as tl

@triton.autotune(configs=[triton.Config({'BLOCK_M': 64}, num_stages=3)], key=['M'])
@triton.jit
def mm(a_ptr, b_ptr, M, N,
       # tiles
       BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr = 64,
       ACC: tl.constexpr):
    pass

@triton.jit
def other(x, BLOCK_M: tl.constexpr, EVEN: tl.constexpr):
    pass

def not_a_kernel(y, FAKE: tl.constexpr):
    if num_warps == 4: pass

class ModelNew:
    def forward(self, x):
        mm[(1,)](x, x, 1, 1, BLOCK_N=64, ACC=1, num_warps=8)
)py";
  CHECK(KernelKnobs(source) == std::vector<std::string>{"BLOCK_M", "BLOCK_N", "ACC", "EVEN",
                                                        "num_warps", "num_stages"});
  // `num_warps ==` is a comparison, not a meta-parameter; a plain function's
  // constexpr is not a kernel's.
  CHECK(KernelKnobs("@triton.jit\ndef k(x, n):\n  pass\nif num_warps == 4: pass\n"
                    "def f(FAKE: tl.constexpr): pass\n")
            .empty());
  CHECK_THAT(DescribeKnobs({}), Catch::Contains("no tl.constexpr parameter"));
  CHECK(DescribeKnobs({"BLOCK", "num_warps"}) == "BLOCK, num_warps");

  kagent::v1::Prescription p;
  (*p.mutable_knob_changes())["BLOCK_K"] = "x2";
  (*p.mutable_knob_changes())["num_warps"] = "8";
  const std::vector<std::string> knobs = {"BLOCK", "num_warps"};
  const std::string fix = DescribeFix(p, 0, &knobs);
  CHECK_THAT(fix, Catch::Contains("knob changes: BLOCK_K = x2, num_warps = 8"));
  CHECK_THAT(fix, Catch::Contains("the current kernel has no BLOCK_K: make the change's intent "
                                  "with the knobs it has (BLOCK, num_warps)"));
  // Without the kernel's knobs, or with them all present, no such line.
  CHECK_THAT(DescribeFix(p, 0), !Catch::Contains("has no"));
  const std::vector<std::string> all = {"BLOCK_K", "num_warps"};
  CHECK_THAT(DescribeFix(p, 0, &all), !Catch::Contains("has no"));
}

TEST_CASE("DescribeMeasurement gives the median and its ratios to the baselines",
          "[llm_brain]") {
  CHECK_THAT(DescribeMeasurement(nullptr), Catch::Contains("not given"));
  kagent::v1::Measurement m;
  CHECK_THAT(DescribeMeasurement(&m), Catch::Contains("not given"));
  m.mutable_candidate()->set_median_ms(0.2);
  m.mutable_eager()->set_median_ms(0.5);
  m.mutable_compiled()->set_median_ms(0.1);
  m.set_gpu_name("NVIDIA H200");
  CHECK(DescribeMeasurement(&m) ==
        "current kernel: 0.2 ms median\n"
        "eager PyTorch: 0.5 ms median (the current kernel is 2.50x faster than eager PyTorch)\n"
        "torch.compile: 0.1 ms median (the current kernel is 2.00x slower than torch.compile)\n"
        "(measured on NVIDIA H200)");
  // A baseline that was not timed is left out; a CPU worker's times are named as the
  // interpreter's.
  m.clear_compiled();
  m.set_gpu_name("cpu");
  const std::string cpu = DescribeMeasurement(&m);
  CHECK_THAT(cpu, !Catch::Contains("torch.compile"));
  CHECK_THAT(cpu, Catch::Contains("Triton's CPU interpreter"));
}

TEST_CASE("UnappliedKnobChanges compares the named knobs' settings", "[llm_brain]") {
  const std::string parent = R"py(@triton.autotune(configs=[triton.Config({'BLOCK_M': 64}, num_warps=4)], key=[])
@triton.jit
def k(x, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr = 32):
    if BLOCK_M == 64: pass
class ModelNew:
    pass
)py";
  kagent::v1::Prescription p;
  (*p.mutable_knob_changes())["BLOCK_M"] = "128";
  (*p.mutable_knob_changes())["num_warps"] = "8";
  // Only the explanation or a comment changed: neither knob.
  const std::optional<std::string> same =
      UnappliedKnobChanges(p, parent, parent + "# tiles doubled, honest\n");
  REQUIRE(same.has_value());
  CHECK(*same == "the rewrite left BLOCK_M = 64; num_warps = 4 as the parent had it: the "
                 "model did not apply the prescribed knob change");
  // One of them changed: applied.
  std::string more_warps = parent;
  more_warps.replace(more_warps.find("num_warps=4"), 11, "num_warps=8");
  CHECK(!UnappliedKnobChanges(p, parent, more_warps).has_value());
  // A default of a constexpr parameter is a setting too.
  kagent::v1::Prescription n;
  (*n.mutable_knob_changes())["BLOCK_N"] = "64";
  CHECK(UnappliedKnobChanges(n, parent, parent).has_value());
  std::string wider_n = parent;
  wider_n.replace(wider_n.find("= 32"), 4, "= 64");
  CHECK(!UnappliedKnobChanges(n, parent, wider_n).has_value());
  // Nothing to judge: a knob the parent lacks, no knob change, a value not a literal.
  kagent::v1::Prescription k;
  (*k.mutable_knob_changes())["BLOCK_K"] = "x2";
  CHECK(!UnappliedKnobChanges(k, parent, parent).has_value());
  CHECK(!UnappliedKnobChanges(kagent::v1::Prescription(), parent, parent).has_value());
  std::string computed = parent;
  computed.replace(computed.find("num_warps=4"), 11, "num_warps=w");
  kagent::v1::Prescription w;
  (*w.mutable_knob_changes())["num_warps"] = "8";
  CHECK(!UnappliedKnobChanges(w, computed, computed).has_value());
}

TEST_CASE("UnappliedCodeMarkers: the constructs the fix names, missing before and after",
          "[llm_brain]") {
  const std::string parent = R"py(@triton.jit
def k(x, y, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    tl.store(y + offs, tl.load(x + offs))
)py";
  kagent::v1::Prescription p;
  p.add_code_markers("tl.max_contiguous");
  p.add_code_markers("tl.multiple_of");
  // Only a comment names the construct: not applied.
  const std::optional<std::string> missing =
      UnappliedCodeMarkers(p, parent, parent + "# uses tl.multiple_of now\n");
  REQUIRE(missing.has_value());
  CHECK(*missing == "the rewrite still lacks tl.max_contiguous or tl.multiple_of, which the fix "
                    "names and the parent lacked: the model did not apply the prescribed change");
  // One of them in the code: applied.
  std::string hinted = parent;
  hinted.replace(hinted.find("    tl.store"), 0, "    offs = tl.multiple_of(offs, 16)\n");
  CHECK(!UnappliedCodeMarkers(p, parent, hinted).has_value());
  // The parent already had one: nothing to judge; no markers: nothing to judge.
  CHECK(!UnappliedCodeMarkers(p, hinted, hinted).has_value());
  CHECK(!UnappliedCodeMarkers(kagent::v1::Prescription(), parent, parent).has_value());

  // UnappliedFix: the knob check first, then the markers.
  (*p.mutable_knob_changes())["BLOCK"] = "2048";
  const std::string launched = parent + "k[(4,)](x, y, BLOCK=1024)\n";
  CHECK_THAT(UnappliedFix(p, launched, launched).value(), Catch::StartsWith("the rewrite left BLOCK = 1024"));
  std::string wider = launched;
  wider.replace(wider.find("BLOCK=1024"), 10, "BLOCK=2048");
  CHECK_THAT(UnappliedFix(p, launched, wider).value(), Catch::StartsWith("the rewrite still lacks"));
  std::string both = hinted + "k[(4,)](x, y, BLOCK=2048)\n";
  CHECK(!UnappliedFix(p, launched, both).has_value());
}

TEST_CASE("DescribeRoofline gives the profile's roofline figures", "[llm_brain]") {
  CHECK(DescribeRoofline(nullptr, nullptr).empty());
  kagent::v1::HardwareMetrics m;
  CHECK(DescribeRoofline(&m, nullptr).empty());
  m.set_compute_sol_pct(12.5);
  m.set_memory_sol_pct(81);
  CHECK(DescribeRoofline(&m, nullptr) == "speed of light: compute 12.5%, memory 81.0% of peak");
  m.set_arithmetic_intensity(0.25);
  m.set_achieved_flops(0.9e12);
  m.set_achieved_bytes_per_second(3.6e12);
  m.set_roofline_bound_pct(75);
  kagent::v1::GpuSpec gpu;
  gpu.set_peak_dram_bytes_per_second(4.8e12);
  (*gpu.mutable_peak_flops())["fp32"] = 67.2e12;
  CHECK(DescribeRoofline(&m, &gpu) ==
        "speed of light: compute 12.5%, memory 81.0% of peak\n"
        "arithmetic intensity: 0.25 FLOP/byte (ridge points, FLOP/byte: fp32 14)\n"
        "achieved: 0.9 TFLOP/s, 3.6 TB/s\n"
        "of the roofline at this intensity: 75.0%");
}

TEST_CASE("prompt values render the protocol's messages", "[llm_brain]") {
  kagent::v1::GpuSpec gpu;
  CHECK_THAT(DescribeGpu(nullptr), Catch::Contains("not given"));
  gpu.set_name("NVIDIA H200");
  gpu.set_arch("sm_90");
  gpu.set_sm_count(132);
  CHECK(DescribeGpu(&gpu) == "NVIDIA H200 (sm_90, 132 SMs)");
  // Every ceiling the spec holds, peak FLOP/s sorted by dtype.
  gpu.set_peak_dram_bytes_per_second(4.8e12);
  (*gpu.mutable_peak_flops())["fp32"] = 66.9e12;
  (*gpu.mutable_peak_flops())["bf16"] = 989.4e12;
  CHECK(DescribeGpu(&gpu) == "NVIDIA H200 (sm_90, 132 SMs, 4.80 TB/s DRAM, "
                             "peak 989.4 TFLOP/s bf16, peak 66.9 TFLOP/s fp32)");
  kagent::v1::GpuSpec cpu;
  cpu.set_name("cpu (triton interpreter)");
  cpu.set_arch("cpu");
  CHECK_THAT(DescribeGpu(&cpu), Catch::Contains("Triton's CPU interpreter"));
  CHECK_THAT(DescribeGpu(&cpu), !Catch::Contains("details not given"));

  kagent::v1::OpSignature sig;
  sig.set_op_class("matvec");
  auto* op = sig.add_ops();
  op->set_op("aten::mv");
  op->add_inputs()->add_shape(2048);
  op->mutable_inputs(0)->add_shape(4096);
  op->mutable_inputs(0)->set_dtype("bfloat16");
  std::string ops = SummarizeOps(&sig);
  CHECK_THAT(ops, Catch::Contains("op class: matvec"));
  CHECK_THAT(ops, Catch::Contains("aten::mv: inputs [2048, 4096] bfloat16"));
  CHECK_THAT(ops, !Catch::Contains("with"));
  // Recorded scalars follow the op, sorted by name (torch.min(x, dim=1); torch.selu).
  auto* mn = sig.add_ops();
  mn->set_op("aten::min");
  (*mn->mutable_scalars())["keepdim"] = 0;
  (*mn->mutable_scalars())["dim"] = 1;
  auto* elu = sig.add_ops();
  elu->set_op("aten::elu");
  (*elu->mutable_scalars())["alpha"] = 1.6732632423543772;
  std::string with = SummarizeOps(&sig);
  CHECK_THAT(with, Catch::Contains("- aten::min: inputs none -> outputs none, with dim=1, keepdim=0"));
  CHECK_THAT(with, Catch::Contains("aten::elu: inputs none -> outputs none, with alpha=1.67326"));
  // String arguments follow the numbers, quoted (nn.GELU(approximate="tanh")).
  auto* gelu = sig.add_ops();
  gelu->set_op("aten::gelu");
  (*gelu->mutable_strings())["approximate"] = "tanh";
  CHECK_THAT(SummarizeOps(&sig),
             Catch::Contains("aten::gelu: inputs none -> outputs none, with approximate='tanh'"));

  kagent::v1::Prescription p;
  p.set_pattern_id("gemv_row_per_program");
  (*p.mutable_knob_changes())["BLOCK_M"] = "1";
  (*p.mutable_knob_changes())["BLOCK_K"] = "1024";
  std::string fix = DescribeFix(p, 0);
  CHECK_THAT(fix, Catch::Contains("knob changes: BLOCK_K = 1024, BLOCK_M = 1"));
  CHECK_THAT(fix, !Catch::Contains("variant"));
  CHECK_THAT(DescribeFix(p, 1), Catch::Contains("variant 2"));

  CHECK(FormatLessons(nullptr) == "none");
  std::vector<kagent::v1::Reflexion> memory(1);
  memory[0].set_round(1);
  memory[0].set_pattern_id("p1");
  memory[0].set_lesson("BLOCK_K 1024 spills");
  memory[0].add_avoid_patterns("p1");
  CHECK_THAT(FormatLessons(&memory), Catch::Contains("round 1, p1: fix did not work; BLOCK_K 1024 spills; avoid: p1"));

  CHECK_THAT(DescribeReport(nullptr), Catch::Contains("No profile diagnosis"));
  kagent::v1::BottleneckReport r;
  r.set_primary(kagent::v1::BOTTLENECK_MEMORY_BOUND);
  r.set_efficiency_pct(41.5);
  auto* rc = r.add_root_causes();
  rc->set_cause("DRAM underused");
  auto* ev = rc->add_evidence();
  ev->set_metric("dram__throughput.avg.pct_of_peak_sustained_elapsed");
  ev->set_value(41.5);
  std::string d = DescribeReport(&r);
  CHECK_THAT(d, Catch::Contains("category: memory-bound"));
  CHECK_THAT(d, Catch::Contains("dram__throughput.avg.pct_of_peak_sustained_elapsed = 41.5"));
}

}  // namespace
}  // namespace kagent::llm_engine
