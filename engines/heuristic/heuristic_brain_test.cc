#include "engines/heuristic/heuristic_brain.h"

#include <array>
#include <set>
#include <utility>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/source_text.h"
#include "engines/heuristic/knob_tuner.h"
#include "engines/heuristic/triton_source.h"
#include "engines/heuristic/test_kernels.h"
#include "engines/heuristic/test_signatures.h"

namespace kagent {
namespace {

using testing::AddOp;

HeuristicBrain MakeBrain() {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  return HeuristicBrain(*lib);
}

v1::GpuSpec H200() {
  v1::GpuSpec g;
  g.set_name("NVIDIA H200");
  g.set_arch("sm_90");
  g.set_sm_count(132);
  return g;
}

// The kernel came from template `id` and contains every fragment.
void CheckFragments(const BrainResult& r, const std::string& id,
                    const std::vector<std::string>& fragments) {
  CHECK(r.kernel.origin() == "template:" + id);
  for (const std::string& f : fragments) {
    INFO(f);
    CHECK(absl::StrContains(r.kernel.source(), f));
  }
}

// The brain's first kernel for `sig` on `gpu`: it comes from template `id`, contains every
// fragment, and the knob tuner can move `knob` by `change` in it (the template's bounds
// apply). Returns the tuned source.
std::string CheckFirstKernel(HeuristicBrain& brain, const v1::Problem& problem,
                             const v1::OpSignature& sig, const v1::GpuSpec& gpu,
                             const std::string& id, const std::vector<std::string>& fragments,
                             const std::string& knob, const std::string& change) {
  INFO(id);
  auto r = brain.FirstKernel({&problem, &sig, &gpu});
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CheckFragments(*r, id, fragments);
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  REQUIRE((*lib)->Find(id) != nullptr);
  if ((*lib)->Find(id)->language == "triton") {  // a CUDA C++ module has no @triton.jit
    auto info = ParseTritonSource(r->kernel.source());
    REQUIRE(info.ok());
    CHECK(info->template_id == id);
  }
  auto tuned = ApplyKnobChanges(r->kernel.source(), {{knob, change}}, lib->get());
  INFO(tuned.status().ToString());
  REQUIRE(tuned.ok());
  REQUIRE(tuned->edits.size() == 1);
  CHECK(tuned->edits[0].knob == knob);
  return tuned->source;
}

// Template `id` rendered for `sig` on `gpu` (a template switch's render): it contains every
// fragment.
void CheckRender(HeuristicBrain& brain, const std::string& id, const v1::OpSignature& sig,
                 const v1::GpuSpec& gpu, const std::vector<std::string>& fragments) {
  INFO(id);
  auto r = brain.RenderFor(id, sig, &gpu);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CheckFragments(*r, id, fragments);
}

TEST_CASE("Brain: first kernels by op class and shape") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  problem.set_source("class Model: ...");
  v1::GpuSpec gpu = H200();
  auto first = [&](const v1::OpSignature& sig) {
    return brain.FirstKernel({&problem, &sig, &gpu});
  };
  auto big = first(testing::MatvecSignature(2048, 1048576));
  REQUIRE(big.ok());
  CHECK(big->kernel.origin() == "template:matvec_row_per_program");
  CHECK(absl::StrContains(big->kernel.source(), "BLOCK_K = 4096"));
  CHECK(absl::StrContains(big->kernel.source(), "num_warps=16"));
  auto small = first(testing::MatvecSignature(64, 1 << 20));
  REQUIRE(small.ok());
  CHECK(small->kernel.origin() == "template:matvec_split_k");
  auto info = ParseTritonSource(small->kernel.source());
  REQUIRE(info.ok());

  v1::OpSignature gemm;
  AddOp(&gemm, "aten::mm", {{{4096, 4096}, "bfloat16"}, {{4096, 4096}, "bfloat16"}},
        {{{4096, 4096}, "bfloat16"}});
  auto g = first(gemm);
  REQUIRE(g.ok());
  CHECK(g->kernel.origin() == "template:gemm_tiled");
  CHECK(absl::StrContains(g->kernel.source(), "BLOCK_M = 128"));
  CHECK(absl::StrContains(g->kernel.source(), "BLOCK_N = 256"));  // large bf16: 128 x 256
  v1::OpSignature small_k;  // problems/04's K of one step: the CUTLASS SM90 kernel on Hopper
  AddOp(&small_k, "aten::mm", {{{32768, 64}, "bfloat16"}, {{64, 32768}, "bfloat16"}},
        {{{32768, 32768}, "bfloat16"}});
  auto sk = first(small_k);
  REQUIRE(sk.ok());
  CHECK(sk->kernel.origin() == "template:gemm_sm90_bf16");
  CHECK(sk->kernel.language() == v1::KERNEL_LANGUAGE_CUDA);
  CHECK(absl::StrContains(sk->kernel.source(), "kCluster[] = \"1x1\""));
  CHECK(absl::StrContains(sk->kernel.source(), "kDtype[] = \"bfloat16\""));
  // K or N not a multiple of 8 (cuBLAS's bf16 at 130 TFLOP/s there): the padded SM90
  // kernel with the TMA epilogue, where its tiles fill the GPU; a small one stays Triton.
  v1::OpSignature odd16;
  AddOp(&odd16, "aten::mm", {{{4099, 2949}, "bfloat16"}, {{2949, 3001}, "bfloat16"}},
        {{{4099, 3001}, "bfloat16"}});
  auto o16 = first(odd16);
  REQUIRE(o16.ok());
  CHECK(o16->kernel.origin() == "template:gemm_sm90_bf16");
  CHECK(absl::StrContains(o16->kernel.source(), "kEpilogue[] = \"tma\""));
  v1::OpSignature odd16_small;
  AddOp(&odd16_small, "aten::mm", {{{500, 2949}, "bfloat16"}, {{2949, 301}, "bfloat16"}},
        {{{500, 301}, "bfloat16"}});
  CHECK(first(odd16_small)->kernel.origin() != "template:gemm_sm90_bf16");
  // Elsewhere gemm_tiled with 64 x 128 tiles, 4 warps, 2 stages.
  v1::GpuSpec a100;
  a100.set_arch("sm_80");
  a100.set_sm_count(108);
  auto sk80 = brain.FirstKernel({&problem, &small_k, &a100});
  REQUIRE(sk80.ok());
  CHECK(sk80->kernel.origin() == "template:gemm_tiled");
  CHECK(absl::StrContains(sk80->kernel.source(), "BLOCK_N = 128"));
  CHECK(absl::StrContains(sk80->kernel.source(), "BLOCK_M = 64"));
  CHECK(absl::StrContains(sk80->kernel.source(), "num_warps=4"));
  CHECK(absl::StrContains(sk80->kernel.source(), "num_stages=2"));

  v1::OpSignature skinny;  // few output tiles, long K: split-K
  AddOp(&skinny, "aten::mm", {{{64, 65536}}, {{65536, 64}}}, {{{64, 64}}});
  CHECK(first(skinny)->kernel.origin() == "template:gemm_split_k");

  // problems/27: LayerNorm over rows of 16384 bf16 (the 1-D path) in one pass of 16384
  // with 8 warps (measured on the H200: 1.201 ms against 1.484 for two passes of 4096).
  v1::OpSignature ln;
  AddOp(&ln, "aten::native_layer_norm",
        {{{65536, 16384}, "bfloat16"}, {{16384}, "bfloat16"}, {{16384}, "bfloat16"}},
        {{{65536, 16384}, "bfloat16"}, {{65536, 1}, "float32"}, {{65536, 1}, "float32"}});
  auto lnk = first(ln);
  REQUIRE(lnk.ok());
  CHECK(lnk->kernel.origin() == "template:row_norm");
  CHECK(absl::StrContains(lnk->kernel.source(), "BLOCK_R = min(16384,"));
  CHECK(absl::StrContains(lnk->kernel.source(), "num_warps=8"));

  // problems/24: min over dim 1 of 96 x 4096 x 4096 bf16: 32 x 64 tiles, 4 warps.
  v1::OpSignature mn;
  AddOp(&mn, "aten::min", {{{96, 4096, 4096}, "bfloat16"}},
        {{{96, 4096}, "bfloat16"}, {{96, 4096}, "int64"}}, {{"dim", 1.0}, {"keepdim", 0.0}});
  auto mnk = first(mn);
  REQUIRE(mnk.ok());
  CHECK(absl::StrContains(mnk->kernel.source(), "BLOCK_R = min(32,"));
  CHECK(absl::StrContains(mnk->kernel.source(), "BLOCK_I = min(64,"));
  CHECK(absl::StrContains(mnk->kernel.source(), "num_warps=4"));

  v1::OpSignature lrelu;
  AddOp(&lrelu, "aten::leaky_relu", {{{16, 16384}}}, {{{16, 16384}}});
  auto e = first(lrelu);
  REQUIRE(e.ok());
  CHECK(absl::StrContains(e->kernel.source(), "OP=\"leaky_relu\""));
  CHECK(absl::StrContains(e->kernel.source(), "\"negative_slope\", 0.01"));
  v1::OpSignature gelu_tanh;  // nn.GELU(approximate="tanh"), from the recorded string
  AddOp(&gelu_tanh, "aten::gelu", {{{16, 16384}}}, {{{16, 16384}}});
  (*gelu_tanh.mutable_ops(0)->mutable_strings())["approximate"] = "tanh";
  auto gt = first(gelu_tanh);
  REQUIRE(gt.ok());
  CHECK(absl::StrContains(gt->kernel.source(), "OP=\"gelu_tanh\""));

  // The rendered source of a first kernel that must exist.
  auto source = [](const absl::StatusOr<BrainResult>& r) {
    REQUIRE(r.ok());
    return r->kernel.source();
  };
  // Recorded scalars reach the kernel: torch.selu (aten::elu with SELU's alpha and scale)
  // renders OP=selu, not elu with alpha 1 (problem 17); a recorded slope, bounds or elu
  // scale replace torch's defaults.
  v1::OpSignature selu;
  AddOp(&selu, "aten::elu", {{{16, 16384}, "bfloat16"}}, {{{16, 16384}, "bfloat16"}},
        {{"alpha", 1.6732632423543772}, {"scale", 1.0507009873554805}, {"input_scale", 1.0}});
  const std::string se = source(first(selu));
  CHECK(absl::StrContains(se, "OP=\"selu\""));
  v1::OpSignature elu;
  AddOp(&elu, "aten::elu", {{{16, 16384}}}, {{{16, 16384}}},
        {{"alpha", 1.0}, {"scale", 1.0}, {"input_scale", 1.0}});
  const std::string el = source(first(elu));
  CHECK(absl::StrContains(el, "OP=\"elu\""));
  CHECK(absl::StrContains(el, "\"alpha\", 1.0)"));
  CHECK(absl::StrContains(el, "self.scale = 1.0\n"));
  v1::OpSignature scaled_elu;
  AddOp(&scaled_elu, "aten::elu", {{{16, 16384}}}, {{{16, 16384}}},
        {{"alpha", 0.5}, {"scale", 2.0}, {"input_scale", 0.25}});
  const std::string sc = source(first(scaled_elu));
  CHECK(absl::StrContains(sc, "OP=\"elu\""));
  CHECK(absl::StrContains(sc, "\"alpha\", 0.5)"));
  CHECK(absl::StrContains(sc, "self.scale = 2.0\n"));
  CHECK(absl::StrContains(sc, "self.input_scale = 0.25\n"));
  v1::OpSignature slope;
  AddOp(&slope, "aten::leaky_relu", {{{16, 16384}}}, {{{16, 16384}}}, {{"negative_slope", 0.2}});
  const std::string sl = source(first(slope));
  CHECK(absl::StrContains(sl, "\"negative_slope\", 0.2)"));
  v1::OpSignature relu6;  // F.relu6 is aten::hardtanh(x, 0, 6)
  AddOp(&relu6, "aten::hardtanh", {{{16, 16384}}}, {{{16, 16384}}},
        {{"min_val", 0.0}, {"max_val", 6.0}});
  const std::string r6 = source(first(relu6));
  CHECK(absl::StrContains(r6, "\"min_val\", 0.0)"));
  CHECK(absl::StrContains(r6, "\"max_val\", 6.0)"));
  v1::OpSignature softplus;
  AddOp(&softplus, "aten::softplus", {{{16, 16384}}}, {{{16, 16384}}},
        {{"beta", 2.0}, {"threshold", 10.0}});
  const std::string sp = source(first(softplus));
  CHECK(absl::StrContains(sp, "\"beta\", 2.0)"));
  CHECK(absl::StrContains(sp, "\"threshold\", 10.0)"));

  v1::OpSignature sm;
  AddOp(&sm, "aten::_log_softmax", {{{16, 16384}}}, {{{16, 16384}}});
  auto s = first(sm);
  REQUIRE(s.ok());
  CHECK(absl::StrContains(s->kernel.source(), "LOG=True"));
  // Contiguous rows up to 32768 in one pass (problems/25 on the H200: 1.024 ms against
  // 1.521 for two passes of 8192).
  CHECK(absl::StrContains(s->kernel.source(), "BLOCK_R = min(16384,"));
  CHECK(absl::StrContains(s->kernel.source(), "num_warps=16"));

  v1::OpSignature conv;  // a transposed 3-D conv without scalars: its parameters unknown
  AddOp(&conv, "aten::convolution", {{{16, 32, 16, 16, 16}}, {{32, 64, 3, 3, 3}}},
        {{{16, 64, 18, 18, 18}}});
  auto unrecorded = first(conv);
  CHECK(unrecorded.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(unrecorded.status().message(), "conv_transpose_nd"));

  v1::OpSignature f64;
  AddOp(&f64, "aten::relu", {{{16, 16}, "float64"}}, {{{16, 16}, "float64"}});
  auto bad = first(f64);
  CHECK(bad.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(bad.status().message(), "float64"));

  v1::OpSignature linear;  // addmm: bias; the plain GEMM template says why it cannot
  AddOp(&linear, "aten::addmm", {{{256}}, {{128, 512}}, {{512, 256}}}, {{{128, 256}}});
  auto l = first(linear);
  CHECK(l.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(l.status().message(), "bias"));
}

TEST_CASE("Brain: first kernels for scans, pooling, losses and conv2d (problems 31-44)") {
  HeuristicBrain brain = MakeBrain();
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  v1::Problem problem;
  problem.set_source("class Model: ...");
  v1::GpuSpec gpu = H200();
  auto check = [&](const v1::OpSignature& sig, const std::string& id,
                   std::vector<std::string> fragments, const std::string& knob,
                   const std::string& change) {
    CheckFirstKernel(brain, problem, sig, gpu, id, fragments, knob, change);
  };

  v1::OpSignature cumsum;  // problems/43: 32768 x 16384 fp32 along dim 1
  AddOp(&cumsum, "aten::cumsum", {{{32768, 16384}}}, {{{32768, 16384}}});
  check(cumsum, "scan_rows",
        {"BLOCK_R = min(2048,", "BLOCK_I = min(1,", "SPLIT_R = min(1,", "OP=\"cumsum\"",
         "REVERSE=False", "EXCLUSIVE=False"},
        "BLOCK_R", "/2");
  v1::OpSignature long_rows;  // 4 rows of 2^22: 4 programs would idle 128 SMs, so
                              // min(cdiv(4 x 132, 4), cdiv(2^22, 4 x 2048)) = 132 slices
  AddOp(&long_rows, "aten::cumsum", {{{4, 1 << 22}}}, {{{4, 1 << 22}}});
  check(long_rows, "scan_rows", {"SPLIT_R = min(132,", "BLOCK_R = min(2048,"}, "SPLIT_R", "x2");
  v1::OpSignature rcumprod;
  AddOp(&rcumprod, "aten::flip", {{{64, 100}, "bfloat16"}}, {{{64, 100}, "bfloat16"}});
  AddOp(&rcumprod, "aten::cumprod", {{{64, 100}, "bfloat16"}}, {{{64, 100}, "bfloat16"}});
  AddOp(&rcumprod, "aten::flip", {{{64, 100}, "bfloat16"}}, {{{64, 100}, "bfloat16"}});
  check(rcumprod, "scan_rows", {"BLOCK_R = min(128,", "OP=\"cumprod\"", "REVERSE=True"},
        "num_warps", "x2");

  v1::OpSignature masked;  // torch.cumsum(x * mask, dim)
  AddOp(&masked, "aten::mul", {{{128, 4000}}, {{128, 4000}, "bool"}}, {{{128, 4000}}});
  AddOp(&masked, "aten::cumsum", {{{128, 4000}}}, {{{128, 4000}}});
  check(masked, "scan_rows", {"masked = True", "OP=\"cumsum\""}, "BLOCK_R", "x2");

  v1::OpSignature kbx;  // KernelBench's shape-changing "exclusive" cumsum is refused
  AddOp(&kbx, "aten::select", {{{4, 6}}}, {{{4}}});
  AddOp(&kbx, "aten::zeros_like", {{{4, 1}}}, {{{4, 1}}});
  AddOp(&kbx, "aten::cat", {{{4, 1}}, {{4, 6}}}, {{{4, 7}}});
  AddOp(&kbx, "aten::slice", {{{4, 7}}}, {{{3, 7}}});
  AddOp(&kbx, "aten::cumsum", {{{3, 7}}}, {{{3, 7}}});
  auto refused = brain.FirstKernel({&problem, &kbx, &gpu});
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(refused.status().message(), "changes the input's shape"));
  v1::OpSignature excl;  // a shape-keeping exclusive cumsum renders EXCLUSIVE=True
  AddOp(&excl, "aten::slice", {{{4, 6}}}, {{{4, 5}}});
  AddOp(&excl, "aten::cat", {{{4, 1}}, {{4, 5}}}, {{{4, 6}}});
  AddOp(&excl, "aten::cumsum", {{{4, 6}}}, {{{4, 6}}});
  check(excl, "scan_rows", {"EXCLUSIVE=True", "REVERSE=False"}, "num_warps", "/2");

  v1::OpSignature mp1;  // problems/31: MaxPool1d on 64 x 64 x 131072
  AddOp(&mp1, "aten::unsqueeze", {{{64, 64, 131072}}}, {{{64, 64, 1, 131072}}});
  AddOp(&mp1, "aten::max_pool2d_with_indices", {{{64, 64, 1, 131072}}},
        {{{64, 64, 1, 65536}}, {{64, 64, 1, 65536}, "int64"}});
  AddOp(&mp1, "aten::squeeze", {{{64, 64, 1, 65536}}}, {{{64, 64, 65536}}});
  AddOp(&mp1, "aten::squeeze", {{{64, 64, 1, 65536}, "int64"}}, {{{64, 64, 65536}, "int64"}});
  check(mp1, "pool_nd", {"op = \"max\"", "BLOCK_W = min(1024,", "BLOCK_H = min(1,"},
        "BLOCK_W", "/2");
  v1::OpSignature ap2;  // problems/34: AvgPool2d(3, 1, 1) on 64 x 64 x 512 x 512 bf16
  AddOp(&ap2, "aten::avg_pool2d", {{{64, 64, 512, 512}, "bfloat16"}},
        {{{64, 64, 512, 512}, "bfloat16"}});
  check(ap2, "pool_nd", {"op = \"avg\"", "BLOCK_W = min(256,", "BLOCK_H = min(1,"},
        "BLOCK_H", "x2");
  v1::OpSignature mp2;  // problems/33: MaxPool2d(3, 2, 1) on 32 x 64 x 512 x 512 fp32
  AddOp(&mp2, "aten::max_pool2d_with_indices", {{{32, 64, 512, 512}}},
        {{{32, 64, 256, 256}}, {{32, 64, 256, 256}, "int64"}});
  check(mp2, "pool_nd", {"op = \"max\"", "BLOCK_W = min(256,", "BLOCK_H = min(1,",
                         "num_warps=4"}, "BLOCK_H", "x2");
  v1::OpSignature ap3;  // 3-D pooling: planes of (n, c, od)
  AddOp(&ap3, "aten::avg_pool3d", {{{4, 4, 8, 8, 8}}}, {{{4, 4, 4, 4, 4}}});
  check(ap3, "pool_nd", {"op = \"avg\"", "BLOCK_W = min(16,", "BLOCK_H = min(4,"},
        "num_warps", "x2");
  // The window recorded (CTOR recorded): per dim; a one-element list stands for every
  // dim; a 1-D pool's dim is the unsqueezed 2-D op's last; ceil_mode refused.
  v1::OpSignature mp3;
  AddOp(&mp3, "aten::max_pool3d_with_indices", {{{2, 4, 9, 9, 9}}}, {{{2, 4, 4, 5, 4}}},
        {{"kernel_size.0", 3.0}, {"kernel_size.1", 2.0}, {"kernel_size.2", 3.0},
         {"stride.0", 2.0}, {"stride.1", 2.0}, {"stride.2", 2.0}, {"padding.0", 1.0},
         {"padding.1", 1.0}, {"padding.2", 0.0}, {"dilation.0", 1.0}, {"dilation.1", 1.0},
         {"dilation.2", 1.0}, {"ceil_mode", 0.0}});
  check(mp3, "pool_nd",
        {"\"recorded\" == \"recorded\"", "self.kernel = (3, 2, 3)", "self.stride = (2, 2, 2)",
         "self.padding = (1, 1, 0)", "self.dilation = (1, 1, 1)"},
        "num_warps", "x2");
  v1::OpSignature ap3_one;
  AddOp(&ap3_one, "aten::avg_pool3d", {{{4, 4, 8, 8, 8}}}, {{{4, 4, 4, 4, 4}}},
        {{"kernel_size.0", 2.0}, {"ceil_mode", 0.0}, {"count_include_pad", 0.0}});
  check(ap3_one, "pool_nd",
        {"self.kernel = (2, 2, 2)", "self.stride = (2, 2, 2)", "self.padding = (0, 0, 0)",
         "self.count_include_pad = False"},
        "num_warps", "x2");
  v1::OpSignature mp1_dil;
  AddOp(&mp1_dil, "aten::max_pool2d_with_indices", {{{4, 8, 1, 100}}}, {{{4, 8, 1, 95}}},
        {{"kernel_size.0", 1.0}, {"kernel_size.1", 4.0}, {"stride.0", 1.0}, {"stride.1", 1.0},
         {"padding.0", 0.0}, {"padding.1", 2.0}, {"dilation.0", 1.0}, {"dilation.1", 3.0},
         {"ceil_mode", 0.0}});
  auto one_d = brain.RenderFor("pool_nd", mp1_dil, &gpu);
  REQUIRE(one_d.ok());
  for (const char* want : {"self.kernel = (1, 1, 4)", "self.padding = (0, 0, 2)",
                           "self.dilation = (1, 1, 3)", "self.stride = (1, 1, 1)"}) {
    CHECK(absl::StrContains(one_d->kernel.source(), want));
  }
  v1::OpSignature ceil = mp3;
  (*ceil.mutable_ops(0)->mutable_scalars())["ceil_mode"] = 1.0;
  CHECK(brain.RenderFor("pool_nd", ceil, &gpu).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  v1::OpSignature adaptive;  // adaptive pooling has no template
  AddOp(&adaptive, "aten::_adaptive_avg_pool2d", {{{4, 4, 8, 8}}}, {{{4, 4, 1, 1}}});
  CHECK(brain.FirstKernel({&problem, &adaptive, &gpu}).status().code() ==
        absl::StatusCode::kUnimplemented);

  v1::OpSignature mse;  // problems/37: 32768 x 16384 fp32
  AddOp(&mse, "aten::sub", {{{32768, 16384}}, {{32768, 16384}}}, {{{32768, 16384}}});
  AddOp(&mse, "aten::pow", {{{32768, 16384}}}, {{{32768, 16384}}});
  AddOp(&mse, "aten::mean", {{{32768, 16384}}}, {{{}}});
  check(mse, "loss_reduce",
        {"LOSS=\"mse\"", "reduction = \"mean\"", "BLOCK = 4096\n", "SPLIT_N = 528\n"},
        "SPLIT_N", "x2");
  v1::OpSignature kl;  // problems/40: kl_div(log(p), t, batchmean), 16384 x 32768
  AddOp(&kl, "aten::log", {{{16384, 32768}}}, {{{16384, 32768}}});
  AddOp(&kl, "aten::mul", {{{16384, 32768}}, {{16384, 32768}}}, {{{16384, 32768}}});
  AddOp(&kl, "aten::xlogy", {{{16384, 32768}}, {{16384, 32768}}}, {{{16384, 32768}}});
  AddOp(&kl, "aten::sub", {{{16384, 32768}}, {{16384, 32768}}}, {{{16384, 32768}}});
  AddOp(&kl, "aten::sum", {{{16384, 32768}}}, {{{}}});
  AddOp(&kl, "aten::div", {{{}}}, {{{}}});
  check(kl, "loss_reduce", {"LOSS=\"kl_div\"", "reduction = \"batchmean\"", "LOG_INPUT=True"},
        "BLOCK", "/2");
  v1::OpSignature small;  // 100 elements: one program, a 128-wide block
  AddOp(&small, "aten::smooth_l1_loss", {{{10, 10}, "bfloat16"}, {{10, 10}, "bfloat16"}},
        {{{}, "bfloat16"}});
  check(small, "loss_reduce", {"LOSS=\"smooth_l1\"", "BLOCK = 128\n", "SPLIT_N = 1\n"},
        "num_warps", "/2");
  v1::OpSignature ce;  // problems/38: cross-entropy over 32768 classes, one row per program
  AddOp(&ce, "aten::_log_softmax", {{{32768, 32768}}}, {{{32768, 32768}}});
  AddOp(&ce, "aten::nll_loss_forward", {{{32768, 32768}}, {{32768}, "int64"}}, {{{}}, {{}}});
  check(ce, "loss_rows", {"loss = \"cross_entropy\"", "BLOCK = min(4096,", "num_warps=8"},
        "BLOCK", "/2");
  CHECK(brain.RenderFor("loss_reduce", ce, &gpu).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  v1::OpSignature cos;  // problems/42: mean(1 - cosine_similarity(p, t, dim=1)), 512 x 256
  AddOp(&cos, "aten::linalg_vector_norm", {{{512, 256}}}, {{{512, 1}}});
  AddOp(&cos, "aten::linalg_vector_norm", {{{512, 256}}}, {{{512, 1}}});
  AddOp(&cos, "aten::clamp_min_", {{{512, 1}}, {{}}}, {{{512, 1}}});
  AddOp(&cos, "aten::clamp_min_", {{{512, 1}}, {{}}}, {{{512, 1}}});
  AddOp(&cos, "aten::div", {{{512, 256}}, {{512, 1}}}, {{{512, 256}}});
  AddOp(&cos, "aten::div", {{{512, 256}}, {{512, 1}}}, {{{512, 256}}});
  AddOp(&cos, "aten::mul", {{{512, 256}}, {{512, 256}}}, {{{512, 256}}});
  AddOp(&cos, "aten::sum", {{{512, 256}}}, {{{512}}});
  AddOp(&cos, "aten::rsub", {{{512}}}, {{{512}}});
  AddOp(&cos, "aten::mean", {{{512}}}, {{{}}});
  check(cos, "loss_rows", {"loss = \"cosine_similarity\"", "BLOCK = min(256,", "num_warps=2"},
        "num_warps", "x2");
  v1::OpSignature tm;  // nn.TripletMarginLoss as torch records it, 128 x 4096
  for (int i = 0; i < 2; ++i) {
    AddOp(&tm, "aten::sub", {{{128, 4096}}, {{128, 4096}}}, {{{128, 4096}}});
    AddOp(&tm, "aten::add", {{{128, 4096}}}, {{{128, 4096}}});
    AddOp(&tm, "aten::norm", {{{128, 4096}}}, {{{128}}});
  }
  AddOp(&tm, "aten::add", {{{128}}}, {{{128}}});
  AddOp(&tm, "aten::sub", {{{128}}, {{128}}}, {{{128}}});
  AddOp(&tm, "aten::clamp_min", {{{128}}}, {{{128}}});
  AddOp(&tm, "aten::mean", {{{128}}}, {{{}}});
  check(tm, "loss_rows", {"loss = \"triplet_margin\"", "BLOCK = min(4096,"}, "BLOCK", "/2");
  v1::OpSignature bce;  // recognized, no template
  AddOp(&bce, "aten::binary_cross_entropy", {{{64, 64}}, {{64, 64}}}, {{{}}});
  CHECK(brain.FirstKernel({&problem, &bce, &gpu}).status().code() ==
        absl::StatusCode::kUnimplemented);

  v1::OpSignature conv;  // problems/35: 3x3, padding 1, 64 -> 128, no bias, fp32
  AddOp(&conv, "aten::convolution", {{{16, 64, 256, 256}}, {{128, 64, 3, 3}}},
        {{{16, 128, 256, 256}}});
  // On sm_90 CUTLASS's implicit GEMM, 3xTF32 on 128 x 64 x 16 tiles in 5 stages (the H100
  // sweep's fastest, 1.42x cuDNN); the Triton template's render, a template switch away,
  // keeps 256 x 128 tiles with 3xTF32 dots (its fastest on the H200).
  check(conv, "conv_cutlass_fprop",
        {"constexpr char kTile[] = \"128x64x16_64x32x16\";", "/*Stages=*/5,",
         "#define KAGENT_DTYPE_float32 1", "constexpr int kAlign = 4;", "dims = 2\n",
         "    64, 128,\n", "_per_dim(dims, 1, 3, 3),",
         "padding=_per_dim(dims, 0, 1, 1),", "stride=_per_dim(dims, 1, 1, 1),",
         "bias=False)"},
        "num_stages", "-1");
  CheckRender(brain, "conv2d_implicit_gemm", conv, gpu,
              {"BLOCK_M = 256\n", "BLOCK_N = 128\n", "BLOCK_K = 32\n", "padding = _pair(1, -1)",
               "stride = _pair(1, -1)", "bias = False\n", "INPUT_PRECISION=\"tf32x3\""});
  {  // An unknown GPU (the CPU worker) keeps exact fp32 dots and 64 x 64 tiles.
    v1::GpuSpec cpu;
    auto r = brain.FirstKernel({&problem, &conv, &cpu});
    REQUIRE(r.ok());
    CHECK(absl::StrContains(r->kernel.source(), "BLOCK_M = 64\n"));
    CHECK(absl::StrContains(r->kernel.source(), "INPUT_PRECISION=\"ieee\""));
  }
  v1::OpSignature conv16;  // bf16, stride 2, bias
  AddOp(&conv16, "aten::convolution",
        {{{8, 32, 64, 64}, "bfloat16"}, {{256, 32, 3, 3}, "bfloat16"}, {{256}, "bfloat16"}},
        {{{8, 256, 32, 32}, "bfloat16"}});
  // bf16 with 256 output channels (two 128-wide tiles): CUTLASS 3.x's TMA and wgmma
  // kernel, 128 x 128 x 64 in 1 x 2 clusters; CUTLASS 2.x's render a switch away.
  check(conv16, "conv_sm90_fprop",
        {"constexpr char kTile[] = \"128x128x64\";", "constexpr char kCluster[] = \"1x2\";",
         "constexpr char kDtype[] = \"bfloat16\";", "constexpr bool kBias = \"True\"[0]",
         "stride=_per_dim(dims, 1, 2, 2),", "padding=_per_dim(dims, 0, 1, 1),", "bias=True)"},
        "CLUSTER", "1x1");
  CheckRender(brain, "conv_cutlass_fprop", conv16, gpu,
              {"constexpr char kTile[] = \"128x256x64_64x64x64\";", "/*Stages=*/3,",
               "#define KAGENT_DTYPE_bfloat16 1", "constexpr int kAlign = 8;"});
  {  // 160 output channels leave a ragged 128-wide tile: CUTLASS 2.x's 256 x 128 x 32
     // (problems/74: 1.15x cuDNN against 0.87x).
    v1::OpSignature c160;
    AddOp(&c160, "aten::convolution",
          {{{8, 96, 64, 128}, "bfloat16"}, {{160, 96, 3, 3}, "bfloat16"}},
          {{{8, 160, 62, 126}, "bfloat16"}},
          {{"stride.0", 1.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"groups", 1.0},
           {"transposed", 0.0}});
    CheckFirstKernel(brain, problem, c160, gpu, "conv_cutlass_fprop",
                     {"constexpr char kTile[] = \"256x128x32_64x64x32\";"}, "num_stages", "+1");
    // fp32 is never the SM90 module's: it says so.
    auto f = brain.RenderFor("conv_sm90_fprop", conv, &gpu);
    CHECK(f.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(f.status().message(), "dtype float32 not in {bfloat16, float16}"));
  }
  CheckRender(brain, "conv2d_implicit_gemm", conv16, gpu,
              {"BLOCK_M = 128\n", "BLOCK_N = 128\n", "BLOCK_K = 32\n", "stride = _pair(2, -1)",
               "padding = _pair(1, -1)", "bias = True\n"});
  {  // Three input channels (an RGB stem): padded to 4 for the fixed-channels iterators.
    v1::OpSignature stem;
    AddOp(&stem, "aten::convolution", {{{8, 3, 224, 224}}, {{64, 3, 7, 7}}},
          {{{8, 64, 109, 109}}},
          {{"stride.0", 2.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"groups", 1.0},
           {"transposed", 0.0}});
    auto r = brain.FirstKernel({&problem, &stem, &gpu});
    REQUIRE(r.ok());
    CHECK(r->kernel.origin() == "template:conv_cutlass_fprop");
    CHECK(absl::StrContains(r->kernel.source(), "constexpr int kAlign = 4;"));
    CHECK(absl::StrContains(r->kernel.source(), "#define KAGENT_PAD_CHANNELS_True 1"));
    // A 3-D stem (KernelBench's 54: 3 -> 64 channels, 3 x 3 x 3): still the Triton
    // conv3d_implicit_gemm first (the fold below has not run on a GPU); a switch renders
    // the CUTLASS module with the depth taps folded into the channels.
    v1::OpSignature stem3d;
    AddOp(&stem3d, "aten::convolution", {{{16, 3, 64, 64, 64}}, {{64, 3, 3, 3, 3}}},
          {{{16, 64, 62, 62, 62}}},
          {{"stride.0", 1.0}, {"stride.1", 1.0}, {"stride.2", 1.0}, {"padding.0", 0.0},
           {"padding.1", 0.0}, {"padding.2", 0.0}, {"dilation.0", 1.0}, {"dilation.1", 1.0},
           {"dilation.2", 1.0}, {"groups", 1.0}, {"transposed", 0.0}});
    r = brain.FirstKernel({&problem, &stem3d, &gpu});
    REQUIRE(r.ok());
    CHECK(r->kernel.origin() == "template:conv3d_implicit_gemm");
    auto folded = brain.RenderFor("conv_cutlass_fprop", stem3d, &gpu);
    REQUIRE(folded.ok());
    CHECK(absl::StrContains(folded->kernel.source(), "#define KAGENT_FOLD_DEPTH_True 1"));
    CHECK(absl::StrContains(folded->kernel.source(), "#define KAGENT_PAD_CHANNELS_False 1"));
    CHECK(absl::StrContains(folded->kernel.source(), "constexpr int kAlign = 4;"));
    // A bias-free fp32 pointwise conv with 16-byte accesses (64 channels, 128 x 128
    // pixels): the batched GEMM over NCHW in place (its H100 sweep, 1.27-1.83x cuDNN).
    v1::OpSignature pw;
    AddOp(&pw, "aten::convolution", {{{16, 64, 128, 128}}, {{128, 64, 1, 1}}},
          {{{16, 128, 128, 128}}},
          {{"stride.0", 1.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"groups", 1.0},
           {"transposed", 0.0}});
    r = brain.FirstKernel({&problem, &pw, &gpu});
    REQUIRE(r.ok());
    CHECK(r->kernel.origin() == "template:conv_pointwise_gemm");
    CHECK(absl::StrContains(r->kernel.source(), "constexpr int kAlign = 4;"));
    CHECK(absl::StrContains(r->kernel.source(), "constexpr char kTile[] = \"64x128x16_32x64x16\";"));
    // With a bias (a second pass over the output, unmeasured) the Triton implicit GEMM
    // starts; a switch naming the GEMM (the alias "pointwise") renders it.
    v1::OpSignature pw_bias;
    AddOp(&pw_bias, "aten::convolution", {{{16, 64, 128, 128}}, {{128, 64, 1, 1}}, {{128}}},
          {{{16, 128, 128, 128}}},
          {{"stride.0", 1.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"groups", 1.0},
           {"transposed", 0.0}});
    r = brain.FirstKernel({&problem, &pw_bias, &gpu});
    REQUIRE(r.ok());
    CHECK(r->kernel.origin() == "template:conv2d_implicit_gemm");
    v1::Prescription to_gemm;
    to_gemm.set_template_switch("pointwise");
    FixRequest fix{&r->kernel, &to_gemm, nullptr, &pw_bias, &gpu, nullptr, nullptr, 0};
    auto switched = brain.ApplyFix(fix);
    REQUIRE(switched.ok());
    CHECK(switched->kernel.origin() == "template:conv_pointwise_gemm");
    CHECK(absl::StrContains(switched->kernel.source(), "constexpr int kAlign = 4;"));
    // Odd channel counts in bf16 (cp.async moves 4 bytes or more): refused with the reason.
    v1::OpSignature odd;
    AddOp(&odd, "aten::convolution",
          {{{2, 5, 16, 16}, "bfloat16"}, {{7, 5, 3, 3}, "bfloat16"}}, {{{2, 7, 14, 14}, "bfloat16"}},
          {{"stride.0", 1.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"groups", 1.0},
           {"transposed", 0.0}});
    auto o = brain.RenderFor("conv_cutlass_fprop", odd, &gpu);
    CHECK(o.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(o.status().message(), "no access width"));
    // Another arch: the module is compiled for sm_90a only.
    v1::GpuSpec a100;
    a100.set_arch("sm_80");
    a100.set_sm_count(108);
    CHECK(brain.RenderFor("conv_cutlass_fprop", conv, &a100).status().code() ==
          absl::StatusCode::kFailedPrecondition);
    r = brain.FirstKernel({&problem, &conv, &a100});
    REQUIRE(r.ok());
    CHECK(r->kernel.origin() == "template:conv2d_implicit_gemm");
  }

  v1::OpSignature grouped;  // groups 4: 64 -> 128 channels, 16 in and 32 out per group
  AddOp(&grouped, "aten::convolution", {{{8, 64, 32, 32}}, {{128, 16, 3, 3}}},
        {{{8, 128, 32, 32}}});
  check(grouped, "conv2d_implicit_gemm",
        {"groups = 4\n", "BLOCK_N = 32\n", "BLOCK_K = 16\n", "padding = _pair(1, -1)"},
        "BLOCK_N", "x2");
  // problems/47 (groups 4, 32 -> 32 channels per group, 16 x 256 x 256 pixels): large,
  // so 256 x 32 tiles with tf32x3 on sm_90.
  v1::OpSignature grouped47;
  AddOp(&grouped47, "aten::convolution", {{{16, 128, 256, 256}}, {{128, 32, 3, 3}}},
        {{{16, 128, 256, 256}}}, {{"stride.0", 1.0}, {"padding.0", 1.0}, {"dilation.0", 1.0},
                                  {"groups", 4.0}, {"transposed", 0.0}});
  check(grouped47, "conv2d_implicit_gemm",
        {"BLOCK_M = 256\n", "BLOCK_N = 32\n", "BLOCK_K = 32\n", "num_warps=8",
         "INPUT_PRECISION=\"tf32x3\""},
        "BLOCK_M", "/2");
  // problems/46 (bf16, 256 -> 256, dilation 2): 256 x 128 x 64, 8 warps, 3 stages on sm_90;
  // the dilation comes from the recorded scalars, not from the shapes (which read as
  // padding 1, dilation 1).
  v1::OpSignature dil;
  AddOp(&dil, "aten::convolution",
        {{{64, 256, 128, 128}, "bfloat16"}, {{256, 256, 3, 3}, "bfloat16"}},
        {{{64, 256, 128, 128}, "bfloat16"}},
        {{"stride.0", 1.0}, {"padding.0", 2.0}, {"dilation.0", 2.0}, {"groups", 1.0},
         {"transposed", 0.0}});
  check(dil, "conv_sm90_fprop",
        {"constexpr char kTile[] = \"128x128x64\";", "dilation=_per_dim(dims, 1, 2, 2),",
         "padding=_per_dim(dims, 0, 2, 2),", "    256, 256,\n", "#if 2 == 3"},
        "TILE", "64x256x64");
  CheckRender(brain, "conv2d_implicit_gemm", dil, gpu,
              {"BLOCK_M = 256\n", "BLOCK_N = 128\n", "BLOCK_K = 64\n", "num_warps=8",
               "num_stages=3", "dilation = _pair(2, -1)", "padding = _pair(2, -1)",
               "if \"recorded\" == \"torch\":", "kernel_size = (3, 3)"});

  // nn.ConvTranspose2d(64, 32, 4, stride=2, padding=1, output_padding=1) with a bias, as
  // aten::convolution records it; the parameters come from the scalars.
  v1::OpSignature deconv;
  AddOp(&deconv, "aten::convolution", {{{8, 64, 32, 32}}, {{64, 32, 4, 4}}, {{32}}},
        {{{8, 32, 65, 65}}},
        {{"transposed", 1.0}, {"groups", 1.0}, {"stride.0", 2.0}, {"stride.1", 2.0},
         {"padding.0", 1.0}, {"padding.1", 1.0}, {"output_padding.0", 1.0},
         {"output_padding.1", 1.0}, {"dilation.0", 1.0}, {"dilation.1", 1.0}});
  check(deconv, "conv_transpose2d",
        {"stride = _pair(2, -1)", "padding = _pair(1, -1)", "output_padding = _pair(1, -1)",
         "dilation = _pair(1, -1)", "bias = True", "\"recorded\" == \"torch\"",
         "in_channels, out_channels = 64, 32", "kernel_size = (4, 4)"},
        "BLOCK_M", "x2");
  v1::OpSignature deconv_old = deconv;  // an older harness: no scalars, no parameters
  deconv_old.mutable_ops(0)->clear_scalars();
  CHECK(brain.FirstKernel({&problem, &deconv_old, &gpu}).status().code() ==
        absl::StatusCode::kFailedPrecondition);

  v1::OpSignature dw;  // problems/36: depthwise 3x3, padding 1, bias, 16 x 128 x 512 x 512
  AddOp(&dw, "aten::convolution", {{{16, 128, 512, 512}}, {{128, 1, 3, 3}}, {{128}}},
        {{{16, 128, 512, 512}}});
  check(dw, "conv2d_depthwise",
        {"channels = 128\n", "channels * 1, (3, 3)", "stride=_pair(1, -1)",
         "padding=_pair(1, -1)", "bias=True)", "BLOCK_W = min(128,", "BLOCK_H = min(8,"},
        "BLOCK_H", "/2");
  // A switch to the implicit GEMM for a depthwise conv says why it cannot, and back.
  auto sw = brain.RenderFor("implicit_gemm", dw, &gpu);
  CHECK(sw.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(sw.status().message(), "depthwise: conv2d_depthwise"));
  CHECK(brain.RenderFor("conv2d_depthwise", conv, &gpu).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  // Depth multiplier 2, stride 2, no bias, padding (2, 1) and dilation (1, 2) as
  // aten::convolution records them (KernelBench's per-dim constructors).
  v1::OpSignature dw2;
  AddOp(&dw2, "aten::convolution", {{{2, 32, 64, 64}, "bfloat16"}, {{64, 1, 5, 5}, "bfloat16"}},
        {{{2, 64, 32, 29}, "bfloat16"}},
        {{"stride.0", 2.0}, {"stride.1", 2.0}, {"padding.0", 2.0}, {"padding.1", 1.0},
         {"dilation.0", 1.0}, {"dilation.1", 2.0}, {"transposed", 0.0}, {"groups", 32.0}});
  check(dw2, "conv2d_depthwise",
        {"channels = 32\n", "channels * 2, (5, 5)", "stride=_pair(2, -1)",
         "padding=_pair(2, 1)", "dilation=_pair(1, 2)", "bias=False)", "BLOCK_W = min(32,",
         "BLOCK_H = min(32,"},
        "num_warps", "x2");
  // KernelBench's per-dim depthwise forms: stride (2, 1), padding (1, 3) from the recorded
  // scalars (no single stride and padding reproduces the output shape), and a (5, 1) kernel
  // with dilation 2 (inference, with dilation 1, finds another padding).
  v1::OpSignature dw3;
  AddOp(&dw3, "aten::convolution", {{{2, 6, 11, 13}}, {{6, 1, 3, 7}}, {{6}}},
        {{{2, 6, 6, 13}}},
        {{"stride.0", 2.0}, {"stride.1", 1.0}, {"padding.0", 1.0}, {"padding.1", 3.0},
         {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"transposed", 0.0}, {"groups", 6.0}});
  check(dw3, "conv2d_depthwise",
        {"channels * 1, (3, 7)", "stride=_pair(2, 1)", "padding=_pair(1, 3)",
         "dilation=_pair(1, -1)", "bias=True)"},
        "num_warps", "x2");
  v1::OpSignature dw4;
  AddOp(&dw4, "aten::convolution", {{{1, 8, 13, 11}}, {{8, 1, 5, 1}}}, {{{1, 8, 5, 11}}},
        {{"stride.0", 1.0}, {"stride.1", 1.0}, {"padding.0", 0.0}, {"padding.1", 0.0},
         {"dilation.0", 2.0}, {"dilation.1", 2.0}, {"transposed", 0.0}, {"groups", 8.0}});
  check(dw4, "conv2d_depthwise",
        {"(5, 1)", "stride=_pair(1, -1)", "padding=_pair(0, -1)",
         "dilation=_pair(2, -1)"},
        "num_warps", "x2");
  // Recorded values outside the template's bounds are refused, not clamped.
  v1::OpSignature dw5 = dw4;
  (*dw5.mutable_ops(0)->mutable_scalars())["dilation.0"] = 40.0;
  CHECK(brain.FirstKernel({&problem, &dw5, &gpu}).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Brain: 3-D and 1-D convolutions through conv3d_implicit_gemm") {
  HeuristicBrain brain = MakeBrain();
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  auto check = [&](const v1::OpSignature& sig, std::vector<std::string> fragments,
                   const v1::GpuSpec* g, const std::string& knob, const std::string& change) {
    CheckFirstKernel(brain, problem, sig, *g, "conv3d_implicit_gemm", fragments, knob, change);
  };
  // KernelBench's asymmetric Conv3d: kernel (3, 5, 7), stride (1, 2, 1), padding (0, 1, 3),
  // groups 2, bias, as aten::convolution records it: the layer from the params alone.
  v1::OpSignature asym;
  AddOp(&asym, "aten::convolution", {{{2, 8, 16, 32, 32}}, {{12, 4, 3, 5, 7}}, {{12}}},
        {{{2, 12, 14, 16, 32}}},
        {{"stride.0", 1.0}, {"stride.1", 2.0}, {"stride.2", 1.0}, {"padding.0", 0.0},
         {"padding.1", 1.0}, {"padding.2", 3.0}, {"dilation.0", 1.0}, {"dilation.1", 1.0},
         {"dilation.2", 1.0}, {"transposed", 0.0}, {"groups", 2.0}});
  check(asym,
        {"dims = 3\n", "\"recorded\" == \"torch\"", "in_channels, out_channels = 8, 12\n",
         "kernel_size = _per_dim(dims, 3, 5, 7)", "stride = _per_dim(dims, 1, 2, 1)",
         "padding = _per_dim(dims, 0, 1, 3)", "dilation = _per_dim(dims, 1, 1, 1)",
         "groups = 2\n", "bias = True\n", "BLOCK_M = 64\n", "BLOCK_N = 16\n", "BLOCK_K = 16\n",
         "INPUT_PRECISION=\"ieee\""},
        &gpu, "BLOCK_N", "x2");
  // A large fp32 Conv3d without scalars (an older harness): stride and padding inferred;
  // on sm_90 the 2-D rule's 256 x 128 tiles with tf32x3, on the CPU worker exact dots.
  v1::OpSignature big;
  AddOp(&big, "aten::convolution", {{{4, 64, 16, 32, 32}}, {{128, 64, 3, 3, 3}}},
        {{{4, 128, 16, 32, 32}}});
  // On sm_90 the first kernel is CUTLASS's (its 3-D kernel); this template's render (a
  // template switch) keeps the 2-D rule's 256 x 128 tiles with tf32x3.
  CheckFirstKernel(brain, problem, big, gpu, "conv_cutlass_fprop",
                   {"dims = 3\n", "#if 3 == 3", "padding=_per_dim(dims, 1, 1, 1),",
                    "_per_dim(dims, 3, 3, 3),", "constexpr char kTile[] = \"128x64x16_64x32x16\";"},
                   "num_stages", "-1");
  CheckRender(brain, "conv3d_implicit_gemm", big, gpu,
              {"padding = _per_dim(dims, 1, 1, 1)", "stride = _per_dim(dims, 1, 1, 1)",
               "bias = False\n", "BLOCK_M = 256\n", "BLOCK_N = 128\n", "BLOCK_K = 32\n",
               "num_warps=8", "INPUT_PRECISION=\"tf32x3\""});
  v1::GpuSpec cpu;
  check(big, {"BLOCK_M = 64\n", "BLOCK_N = 64\n", "INPUT_PRECISION=\"ieee\""}, &cpu,
        "num_stages", "-1");
  // nn.Conv1d(16, 32, 5, stride=2, padding=2, dilation=2, groups=4), bf16: dims 1, the
  // W params, unit D and H.
  v1::OpSignature c1;
  AddOp(&c1, "aten::convolution",
        {{{8, 16, 1000}, "bfloat16"}, {{32, 4, 5}, "bfloat16"}, {{32}, "bfloat16"}},
        {{{8, 32, 498}, "bfloat16"}},
        {{"stride.0", 2.0}, {"padding.0", 2.0}, {"dilation.0", 2.0}, {"transposed", 0.0},
         {"groups", 4.0}});
  check(c1,
        {"dims = 1\n", "kernel_size = _per_dim(dims, 1, 1, 5)",
         "stride = _per_dim(dims, 1, 1, 2)", "padding = _per_dim(dims, 0, 0, 2)",
         "dilation = _per_dim(dims, 1, 1, 2)", "groups = 4\n", "bias = True\n",
         "BLOCK_M = 128\n", "BLOCK_N = 16\n", "BLOCK_K = 16\n", "num_stages=4"},
        &gpu, "BLOCK_K", "x2");
  // A transposed 1-D conv is not this template's (conv_transpose_nd's); the 2-D template
  // refuses a 3-D conv and the 3-D one a 2-D conv.
  v1::OpSignature t1;
  AddOp(&t1, "aten::convolution", {{{2, 8, 10}}, {{8, 4, 3}}}, {{{2, 4, 12}}},
        {{"stride.0", 1.0}, {"padding.0", 0.0}, {"dilation.0", 1.0}, {"transposed", 1.0},
         {"output_padding.0", 0.0}, {"groups", 1.0}});
  auto t1k = brain.RenderFor("conv1d", t1, &gpu);
  CHECK(t1k.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(t1k.status().message(), "not transposed"));
  CHECK(brain.RenderFor("implicit_gemm", big, &gpu).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  v1::OpSignature conv2d;
  AddOp(&conv2d, "aten::convolution", {{{16, 64, 32, 32}}, {{128, 64, 3, 3}}},
        {{{16, 128, 32, 32}}});
  auto sw = brain.RenderFor("conv3d", conv2d, &gpu);
  CHECK(sw.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(sw.status().message(), "2-D: conv2d_implicit_gemm"));
  auto c1k = brain.RenderFor("conv1d", c1, &gpu);
  REQUIRE(c1k.ok());
}

TEST_CASE("Brain: transposed 1-D, 3-D and grouped 2-D convolutions through conv_transpose_nd") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  auto check = [&](const v1::OpSignature& sig, std::vector<std::string> fragments,
                   const v1::GpuSpec* g, const std::string& knob, const std::string& change) {
    CheckFirstKernel(brain, problem, sig, *g, "conv_transpose_nd", fragments, knob, change);
  };
  // nn.ConvTranspose1d(32, 16, 5, stride=3, padding=2, output_padding=1, dilation=2,
  // groups=4) with a bias, as aten::convolution records it: the layer from the params
  // alone (C_out = weight.shape[1] * groups), the D and H dims unit.
  v1::OpSignature t1;
  AddOp(&t1, "aten::convolution", {{{4, 32, 100}}, {{32, 4, 5}}, {{16}}}, {{{4, 16, 302}}},
        {{"stride.0", 3.0}, {"padding.0", 2.0}, {"dilation.0", 2.0}, {"transposed", 1.0},
         {"output_padding.0", 1.0}, {"groups", 4.0}});
  check(t1,
        {"dims = 1\n", "\"recorded\" == \"torch\"", "in_channels, out_channels = 32, 16\n",
         "kernel_size = _per_dim(dims, 1, 1, 5)", "stride = _per_dim(dims, 1, 1, 3)",
         "padding = _per_dim(dims, 0, 0, 2)", "dilation = _per_dim(dims, 1, 1, 2)",
         "out_pad = _per_dim(dims, 0, 0, 1)", "groups = 4\n",
         "bias = True\n", "BLOCK_N = 16\n", "BLOCK_K = 16\n", "INPUT_PRECISION=\"ieee\""},
        &gpu, "BLOCK_N", "x2");
  // F.conv_transpose3d's own op (aten::conv_transpose3d: no `transposed` flag), asymmetric
  // stride and output padding, bf16, no bias; large: 256 x 128 x 64 tiles on sm_90.
  v1::OpSignature t3;
  AddOp(&t3, "aten::conv_transpose3d",
        {{{8, 128, 16, 32, 32}, "bfloat16"}, {{128, 128, 3, 3, 3}, "bfloat16"}},
        {{{8, 128, 33, 64, 32}, "bfloat16"}},
        {{"stride.0", 2.0}, {"stride.1", 2.0}, {"stride.2", 1.0}, {"padding.0", 1.0},
         {"padding.1", 1.0}, {"padding.2", 1.0}, {"output_padding.0", 0.0},
         {"output_padding.1", 1.0}, {"output_padding.2", 0.0}, {"groups", 1.0},
         {"dilation.0", 1.0}, {"dilation.1", 1.0}, {"dilation.2", 1.0}});
  check(t3,
        {"dims = 3\n", "kernel_size = _per_dim(dims, 3, 3, 3)",
         "stride = _per_dim(dims, 2, 2, 1)", "out_pad = _per_dim(dims, 0, 1, 0)", "groups = 1\n",
         "bias = False\n", "BLOCK_M = 256\n", "BLOCK_N = 128\n", "BLOCK_K = 64\n"},
        &gpu, "BLOCK_M", "/2");
  // Grouped 2-D (the 2-D template serves groups = 1 only): nn.ConvTranspose2d(64, 64, 3,
  // stride=2, padding=1, groups=8, dilation=(1, 2)).
  v1::OpSignature t2;
  AddOp(&t2, "aten::convolution", {{{2, 64, 16, 20}}, {{64, 8, 3, 3}}},
        {{{2, 64, 31, 41}}},
        {{"stride.0", 2.0}, {"stride.1", 2.0}, {"padding.0", 1.0}, {"padding.1", 1.0},
         {"dilation.0", 1.0}, {"dilation.1", 2.0}, {"transposed", 1.0},
         {"output_padding.0", 0.0}, {"output_padding.1", 0.0}, {"groups", 8.0}});
  check(t2,
        {"dims = 2\n", "in_channels, out_channels = 64, 64\n", "groups = 8\n",
         "dilation = _per_dim(dims, 1, 1, 2)", "BLOCK_N = 16\n", "BLOCK_K = 16\n"},
        &gpu, "GROUP_M", "x2");
  // The 2-D template names its own condition; without output_padding the parameters are
  // unknown.
  auto sw = brain.RenderFor("conv_transpose", t2, &gpu);
  CHECK(sw.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(sw.status().message(), "groups = 1"));
  v1::OpSignature no_op = t1;
  no_op.mutable_ops(0)->mutable_scalars()->erase("output_padding.0");
  auto refused = brain.FirstKernel({&problem, &no_op, &gpu});
  CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(refused.status().message(), "output_padding not recorded"));
}

TEST_CASE("Brain: a memory-bound pooling kernel widens its output rows") {
  HeuristicBrain brain = MakeBrain();
  v1::GpuSpec gpu = H200();
  v1::OpSignature sig;  // problems/33: MaxPool2d(3, 2, 1), 32 x 64 x 512 x 512
  AddOp(&sig, "aten::max_pool2d_with_indices", {{{32, 64, 512, 512}}},
        {{{32, 64, 256, 256}}, {{32, 64, 256, 256}, "int64"}});
  v1::Problem problem;
  auto first = brain.FirstKernel({&problem, &sig, &gpu});
  REQUIRE(first.ok());
  v1::Prescription open;
  open.set_pattern_id("memory_bound");
  v1::BottleneckReport report;
  report.set_primary(v1::BOTTLENECK_MEMORY_BOUND);
  FixRequest req{&first->kernel, &open, &problem, &sig, &gpu, &report, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->kernel.source(), "BLOCK_W = min(512,"));
  CHECK(absl::StrContains(r->expected_effect, "memory bound: wider output rows"));
}

TEST_CASE("Brain: the database's loss_fused_online and row_chunked_loop resolve per op") {
  HeuristicBrain brain = MakeBrain();
  v1::GpuSpec gpu = H200();
  v1::OpSignature ce;  // problems/38's start: log_softmax, gather, mean kernels
  AddOp(&ce, "aten::_log_softmax", {{{512, 512}}}, {{{512, 512}}});
  AddOp(&ce, "aten::nll_loss_forward", {{{512, 512}}, {{512}, "int64"}}, {{{}}, {{}}});
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_origin("user");
  v1::Prescription fused;
  fused.set_template_switch("loss_fused_online");
  FixRequest req{&parent, &fused, nullptr, &ce, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(r->kernel.origin() == "template:loss_rows");
  CHECK(absl::StrContains(r->expected_effect, "-> loss_rows"));
  // Already that template: no move.
  v1::KernelSource same = r->kernel;
  req.parent = &same;
  CHECK(brain.ApplyFix(req).status().code() == absl::StatusCode::kFailedPrecondition);

  v1::OpSignature cumsum;
  AddOp(&cumsum, "aten::cumsum", {{{64, 100000}}}, {{{64, 100000}}});
  v1::Prescription chunked;
  chunked.set_template_switch("row_chunked_loop");
  req = {&parent, &chunked, nullptr, &cumsum, &gpu, nullptr, nullptr, 0};
  auto s = brain.ApplyFix(req);
  REQUIRE(s.ok());
  CHECK(s->kernel.origin() == "template:scan_rows");
  // Not for a matvec: the name resolves to no template there.
  v1::OpSignature mm = testing::MatvecSignature(64, 1024);
  CHECK(brain.RenderFor("loss_fused_online", mm, &gpu).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("Brain: prescribed knob changes on the user's 32-row tile matvec") {
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_origin("user");
  v1::Prescription p;
  p.set_pattern_id("grid_underfilled_shrink_rows");
  (*p.mutable_knob_changes())["BLOCK_M"] = "/2";
  p.set_expected_speedup(1.6);
  v1::OpSignature sig = testing::MatvecSignature(2048, 1048576);
  v1::GpuSpec gpu = H200();
  FixRequest req;
  req.parent = &parent;
  req.prescription = &p;
  req.signature = &sig;
  req.gpu = &gpu;
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->kernel.source(), "BLOCK_M = 16\n"));
  CHECK(absl::StrContains(r->expected_effect, "row programs 64 -> 128 on 132 SMs"));
  CHECK(absl::StrContains(r->expected_effect, "x1.60"));
  REQUIRE(r->moves.size() == 1);
  CHECK(r->moves[0] == "BLOCK_M 32 -> 16 (variable BLOCK_M)");
}

TEST_CASE("Brain: an autotuned user kernel with no template gets configs, not a refusal") {
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source(testing::kUserAutotunedRelu);
  v1::GpuSpec gpu = H200();
  v1::Prescription open;
  open.set_pattern_id("memory_bound");
  v1::BottleneckReport report;
  report.set_primary(v1::BOTTLENECK_MEMORY_BOUND);
  // No signature: no template applies, so only the kernel's own knobs can move.
  FixRequest req{&parent, &open, nullptr, nullptr, &gpu, &report, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  // BLOCK_K / BLOCK / BLOCK_R / BLOCK_W are not this kernel's: the first move that
  // applies is a deeper pipeline, one new config per old one.
  CHECK(absl::StrContains(r->expected_effect, "memory bound: more loads in flight"));
  CHECK(absl::StrContains(r->kernel.source(),
                          "triton.Config({\"BLOCK_SIZE\": 256}, num_warps=2, num_stages=4),"));
  REQUIRE(r->moves.size() == 1);
  CHECK(absl::StrContains(r->moves[0], "num_stages 3 -> 4 (autotune configs of relu_kernel"));
}

TEST_CASE("Brain: template switch and derived moves") {
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  v1::OpSignature sig = testing::MatvecSignature(2048, 1048576);
  v1::GpuSpec gpu = H200();

  v1::Prescription sw;
  sw.set_template_switch("matvec_splitk");  // alias
  (*sw.mutable_knob_changes())["SPLIT_K"] = "x2";
  FixRequest req{&parent, &sw, nullptr, &sig, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(r->kernel.origin() == "template:matvec_split_k");
  CHECK(absl::StrContains(r->expected_effect, "architecture switch"));
  CHECK(absl::StrContains(r->expected_effect, "SPLIT_K"));

  v1::Prescription unknown;
  unknown.set_template_switch("does_not_exist");
  req.prescription = &unknown;
  // No report: the generic move replaces the unknown template, and says so.
  auto fallback = brain.ApplyFix(req);
  REQUIRE(fallback.ok());
  CHECK(absl::StrContains(fallback->expected_effect, "does not apply here"));
  CHECK(absl::StrContains(fallback->expected_effect, "no diagnosis"));

  // Without the signature a switch cannot render.
  req.prescription = &sw;
  req.signature = nullptr;
  CHECK(brain.ApplyFix(req).status().code() == absl::StatusCode::kFailedPrecondition);
  req.signature = &sig;

  // No explicit move: the diagnosis decides; alternatives differ.
  v1::Prescription open;
  open.set_pattern_id("grid_underfilled");
  v1::BottleneckReport report;
  report.set_primary(v1::BOTTLENECK_GRID_UNDERFILLED);
  req.prescription = &open;
  req.report = &report;
  req.alternative = 0;
  auto a0 = brain.ApplyFix(req);
  req.alternative = 1;
  auto a1 = brain.ApplyFix(req);
  REQUIRE(a0.ok());
  REQUIRE(a1.ok());
  CHECK(a0->kernel.source() != a1->kernel.source());
  CHECK(absl::StrContains(a0->expected_effect, "grid underfilled"));
  CHECK(absl::StrContains(a0->kernel.source(), "BLOCK_M = 16"));    // fewer rows per program
  CHECK(a1->kernel.origin() == "template:matvec_split_k");           // then split-K

  // A prescription naming a knob this kernel lacks falls back to the diagnosis's move
  // (and says so) instead of failing the worker.
  v1::Prescription grid;
  grid.set_title("Parallelize over every independent dimension");
  (*grid.mutable_knob_changes())["GRID_DIMS"] = "all";
  req.prescription = &grid;
  req.alternative = 0;
  auto g = brain.ApplyFix(req);
  REQUIRE(g.ok());
  CHECK(absl::StrContains(g->expected_effect, "does not apply here"));
  CHECK(absl::StrContains(g->expected_effect, "grid underfilled"));
  CHECK(g->kernel.source() == a0->kernel.source());
  // So does a switch to a template the library lacks.
  v1::Prescription fuse;
  fuse.set_pattern_id("fuse-kernel-chain");
  fuse.set_template_switch("fused_single_kernel");
  req.prescription = &fuse;
  auto f = brain.ApplyFix(req);
  REQUIRE(f.ok());
  CHECK(absl::StrContains(f->expected_effect, "'fuse-kernel-chain' does not apply here"));
  // Without a usable diagnosis the original error stands.
  req.prescription = &grid;
  report.set_primary(v1::BOTTLENECK_AT_ROOFLINE);
  CHECK(brain.ApplyFix(req).status().code() == absl::StatusCode::kNotFound);

  req.prescription = &open;
  req.alternative = 0;
  CHECK(brain.ApplyFix(req).status().code() == absl::StatusCode::kFailedPrecondition);
}


TEST_CASE("Brain: a fallback names the move made, with its own expected speedup") {
  // 01_matmul_square_fp32: tf32-tensor-cores-for-fp32 on a kernel with no
  // input_precision knob. The fallback is the generic move, and nothing of TF32's x3.00.
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_origin("user");
  v1::OpSignature sig = testing::MatvecSignature(2048, 1048576);
  v1::GpuSpec gpu = H200();
  v1::Prescription tf32;
  tf32.set_pattern_id("tf32-tensor-cores-for-fp32");
  tf32.set_title("TF32 tensor cores for fp32 GEMMs");
  tf32.set_expected_effect("Tensor-pipe activity rises");
  tf32.set_expected_speedup(3.0);
  (*tf32.mutable_knob_changes())["input_precision"] = "tf32";
  FixRequest req{&parent, &tf32, nullptr, &sig, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(r->fallback == "the kernel has no input_precision knob");
  CHECK(r->expected_speedup == Approx(1.10));
  REQUIRE(r->moves.size() == 1);
  CHECK(absl::StartsWith(r->moves[0], "num_warps 4 -> 8"));
  CHECK(absl::StrContains(r->expected_effect, "does not apply here"));
  CHECK_FALSE(absl::StrContains(r->expected_effect, "x3.00"));
  CHECK_FALSE(absl::StrContains(r->expected_effect, "Tensor-pipe"));
  // A direct move is no fallback.
  v1::Prescription rows;
  (*rows.mutable_knob_changes())["BLOCK_M"] = "/2";
  req.prescription = &rows;
  auto d = brain.ApplyFix(req);
  REQUIRE(d.ok());
  CHECK(d->fallback.empty());
  CHECK(d->expected_speedup == 0);
}

TEST_CASE("Brain: GEMM first kernels follow the H200 measurements") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  auto source = [&](const v1::OpSignature& sig, const v1::GpuSpec& g, const std::string& id) {
    auto r = brain.FirstKernel({&problem, &sig, &g});
    REQUIRE(r.ok());
    CHECK(r->kernel.origin() == "template:" + id);
    return r->kernel.source();
  };
  // problems/06: a batch of fp32 products on sm_90 -> the CUTLASS 2.x 3xTF32 kernel, one
  // batch per grid z, no split; on an sm_80 GPU gemm_tiled's 128 x 64 tiles, 4 warps,
  // 4 stages, tf32x3 dots.
  v1::OpSignature bmm;
  AddOp(&bmm, "aten::bmm", {{{128, 512, 1024}}, {{128, 1024, 512}}}, {{{128, 512, 512}}});
  std::string batched = source(bmm, gpu, "gemm_cutlass_tf32x3");
  CHECK(absl::StrContains(batched, "constexpr int kSplitK = 1;"));
  CHECK(absl::StrContains(batched, "/*Stages=*/4,"));
  v1::GpuSpec ampere = gpu;
  ampere.set_arch("sm_80");
  std::string b = source(bmm, ampere, "gemm_tiled");
  CHECK(absl::StrContains(b, "BLOCK_M = 128\n"));
  CHECK(absl::StrContains(b, "BLOCK_N = 64\n"));
  CHECK(absl::StrContains(b, "INPUT_PRECISION=\"tf32x3\""));
  CHECK(absl::StrContains(b, "num_warps=4"));
  CHECK(absl::StrContains(b, "num_stages=4"));
  // problems/03 (K = 128) and problems/01 (square, K = 4096) on sm_90: 3xTF32 as one
  // CUTLASS SM90 GEMM over 3K, 128 x 256 tiles in 2 x 1 clusters (1.96x and 2.14x cuBLAS's
  // fp32 on an H200); on an sm_80 GPU 03 keeps gemm_tiled's tf32x3 dots and 01 exact fp32.
  v1::OpSignature skinny;
  AddOp(&skinny, "aten::mm", {{{262144, 128}}, {{128, 1024}}}, {{{262144, 1024}}});
  std::string sm90 = source(skinny, gpu, "gemm_sm90_tf32x3");
  CHECK(absl::StrContains(sm90, "kTile[] = \"128x256x32\""));
  CHECK(absl::StrContains(sm90, "kCluster[] = \"2x1\""));
  CHECK(absl::StrContains(sm90, "kEpilogue[] = \"tma\""));
  v1::OpSignature square;
  AddOp(&square, "aten::mm", {{{4096, 4096}}, {{4096, 4096}}}, {{{4096, 4096}}});
  source(square, gpu, "gemm_sm90_tf32x3");
  v1::GpuSpec a100 = gpu;
  a100.set_arch("sm_80");
  CHECK(absl::StrContains(source(skinny, a100, "gemm_tiled"), "INPUT_PRECISION=\"tf32x3\""));
  CHECK(absl::StrContains(source(square, a100, "gemm_tiled"), "INPUT_PRECISION=\"ieee\""));
  v1::GpuSpec cpu;  // no arch: never tf32x3, never CUDA C++
  CHECK(absl::StrContains(source(skinny, cpu, "gemm_tiled"), "INPUT_PRECISION=\"ieee\""));
  // Where the sweep measured the SM90 kernel losing or too close to the tolerance: K over
  // 4096 (8192^3: 0.98 of it), little work per operand element (1024^3: 0.79x), a batch
  // of small products (problems/06 above: 1.05x).
  // K over 4096 goes to the CUTLASS 2.x kernel instead (8192^3: 1.36x, 0.10 of it).
  v1::OpSignature deep;
  AddOp(&deep, "aten::mm", {{{8192, 8192}}, {{8192, 8192}}}, {{{8192, 8192}}});
  source(deep, gpu, "gemm_cutlass_tf32x3");
  source(deep, a100, "gemm_tiled");
  v1::OpSignature small;
  AddOp(&small, "aten::mm", {{{1024, 1024}}, {{1024, 1024}}}, {{{1024, 1024}}});
  source(small, gpu, "gemm_tiled");
  // An N that is no multiple of 4 (problems/90): the direct epilogue.
  v1::OpSignature odd;
  AddOp(&odd, "aten::mm", {{{4099, 2949}}, {{2949, 3001}}}, {{{4099, 3001}}});
  CHECK(absl::StrContains(source(odd, gpu, "gemm_sm90_tf32x3"), "kEpilogue[] = \"direct\""));
  // problems/05 on sm_90: the CUTLASS 2.x kernel in 33 serial K slices (4 output tiles,
  // a threadblock per SM); elsewhere gemm_split_k with BLOCK_K 64 and about 4 programs per
  // SM (16 tiles -> 33).
  v1::OpSignature large_k;
  AddOp(&large_k, "aten::mm", {{{256, 524288}}, {{524288, 256}}}, {{{256, 256}}});
  CHECK(absl::StrContains(source(large_k, gpu, "gemm_cutlass_tf32x3"),
                          "constexpr int kSplitK = 33;"));
  // The slices follow the output's tiles and K: a threadblock per SM at least, slices at
  // most 16384 deep and at least 2048; where such slices cannot fill the GPU, or their
  // serial reduction would weigh (one tile in 132 slices), gemm_split_k as before.
  for (auto [m, k, n, split] : std::vector<std::array<int64_t, 4>>{
           {512, 262144, 256, 17}, {1024, 65536, 1024, 4}, {2048, 16384, 1024, 2}}) {
    INFO(m << " x " << k << " x " << n);
    v1::OpSignature sig;
    AddOp(&sig, "aten::mm", {{{m, k}}, {{k, n}}}, {{{m, n}}});
    CHECK(absl::StrContains(source(sig, gpu, "gemm_cutlass_tf32x3"),
                            absl::StrCat("constexpr int kSplitK = ", split, ";")));
  }
  // A batch of one (aten::bmm, 3-D operands) is sized as the 2-D product the module runs.
  v1::OpSignature one;
  AddOp(&one, "aten::bmm", {{{1, 256, 524288}}, {{1, 524288, 256}}}, {{{1, 256, 256}}});
  CHECK(absl::StrContains(source(one, gpu, "gemm_cutlass_tf32x3"),
                          "constexpr int kSplitK = 33;"));
  for (auto [m, k, n] : std::vector<std::array<int64_t, 3>>{
           {256, 8192, 256}, {128, 65536, 128}, {128, 1048576, 128}}) {
    INFO(m << " x " << k << " x " << n);
    v1::OpSignature shallow;
    AddOp(&shallow, "aten::mm", {{{m, k}}, {{k, n}}}, {{{m, n}}});
    source(shallow, gpu, "gemm_split_k");
  }
  std::string sk = source(large_k, a100, "gemm_split_k");
  CHECK(absl::StrContains(sk, "BLOCK_K = 64\n"));
  CHECK(absl::StrContains(sk, "SPLIT_K = 33\n"));
  CHECK(absl::StrContains(sk, "INPUT_PRECISION=\"ieee\""));
  // problems/07: bf16 A.T @ B on Hopper starts from the persistent TMA kernel; on an
  // sm_80 GPU, and without the transpose (problems/02), from gemm_tiled.
  v1::OpSignature ta;
  AddOp(&ta, "aten::t", {{{8192, 8192}, "bfloat16"}}, {{{8192, 8192}, "bfloat16", {1, 8192}}});
  AddOp(&ta, "aten::mm", {{{8192, 8192}, "bfloat16", {1, 8192}}, {{8192, 8192}, "bfloat16"}},
        {{{8192, 8192}, "bfloat16"}});
  std::string t = source(ta, gpu, "gemm_persistent_tma");
  CHECK(absl::StrContains(t, "BLOCK_N = 256\n"));
  CHECK(absl::StrContains(t, "num_stages=3"));
  source(ta, a100, "gemm_tiled");
  v1::OpSignature plain;
  AddOp(&plain, "aten::mm", {{{8192, 8192}, "bfloat16"}, {{8192, 8192}, "bfloat16"}},
        {{{8192, 8192}, "bfloat16"}});
  source(plain, gpu, "gemm_tiled");
}

TEST_CASE("Brain: instance norm through channel_norm, x / ||x||_F through frobenius_norm") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  // KernelBench level 1's InstanceNorm: nn.InstanceNorm2d(64) on 112 x 64 x 512 x 512.
  auto instance = [](int tensors, double training) {
    v1::OpSignature sig;
    AddOp(&sig, "aten::view", {{{112, 64, 512, 512}}}, {{{1, 7168, 512, 512}}});
    std::vector<testing::T> in = {{{1, 7168, 512, 512}}};
    for (int i = 1; i < tensors; ++i) in.push_back({{7168}});
    AddOp(&sig, "aten::native_batch_norm", in, {{{1, 7168, 512, 512}}},
          {{"training", training}, {"momentum", 0.1}, {"eps", 1e-5}});
    AddOp(&sig, "aten::view", {{{1, 7168, 512, 512}}}, {{{112, 64, 512, 512}}});
    return sig;
  };
  auto render = [&](const v1::OpSignature& sig) {
    auto r = brain.FirstKernel({&problem, &sig, &gpu});
    REQUIRE(r.ok());
    return r->kernel;
  };
  v1::KernelSource k = render(instance(1, 1.0));
  CHECK(k.origin() == "template:channel_norm");
  for (const char* f : {"\"instance\", \"inorm\"", "64, 64, 1e-05, False", "2, \"input\""}) {
    INFO(f);
    CHECK(absl::StrContains(k.source(), f));
  }
  CHECK(absl::StrContains(render(instance(3, 1.0)).source(), "1e-05, True"));
  CHECK(absl::StrContains(render(instance(3, 0.0)).source(), "\"running\""));
  v1::OpSignature half = instance(2, 1.0);  // weight without bias
  auto partial = brain.FirstKernel({&problem, &half, &gpu});
  CHECK(partial.status().code() == absl::StatusCode::kFailedPrecondition);

  // problems-like Frobenius: 16 x 64 x 256 x 256 fp32, 2^26 elements.
  v1::OpSignature fro;
  AddOp(&fro, "aten::linalg_vector_norm", {{{16, 64, 256, 256}}}, {{{}}}, {{"ord", 2.0}});
  AddOp(&fro, "aten::div", {{{16, 64, 256, 256}}, {{}}}, {{{16, 64, 256, 256}}});
  v1::KernelSource f = render(fro);
  CHECK(f.origin() == "template:frobenius_norm");
  CHECK(absl::StrContains(f.source(), "BLOCK = 4096"));
  CHECK(absl::StrContains(f.source(), "SPLIT = 528"));
  // x / ||x|| along dim 1 (KernelBench's L2Norm, 16 x 16384): row_norm, NORM l2, no
  // affine; order 3 has no template.
  auto l2 = [](double ord, const std::string& dtype) {
    v1::OpSignature sig;
    AddOp(&sig, "aten::linalg_vector_norm", {{{16, 16384}, dtype}}, {{{16, 1}, dtype}},
          {{"ord", ord}, {"dim.0", 1.0}, {"keepdim", 1.0}});
    AddOp(&sig, "aten::div", {{{16, 16384}, dtype}, {{16, 1}, dtype}}, {{{16, 16384}, dtype}});
    return sig;
  };
  v1::KernelSource l2k = render(l2(2.0, "float32"));
  CHECK(l2k.origin() == "template:row_norm");
  for (const char* f : {"NORM=\"l2\"", "self.affine = \"none\"", "d0 = 1 % x.dim()",
                        "BLOCK_R = min(16384,"}) {
    INFO(f);
    CHECK(absl::StrContains(l2k.source(), f));
  }
  v1::OpSignature l3 = l2(3.0, "float32");
  CHECK(brain.FirstKernel({&problem, &l3, &gpu}).status().code() ==
        absl::StatusCode::kUnimplemented);
  // KernelBench's L1Norm: x / torch.sum(torch.abs(x), dim=1, keepdim=True), bf16.
  v1::OpSignature l1;
  AddOp(&l1, "aten::abs", {{{16, 16384}, "bfloat16"}}, {{{16, 16384}, "bfloat16"}});
  AddOp(&l1, "aten::sum", {{{16, 16384}, "bfloat16"}}, {{{16, 1}, "bfloat16"}},
        {{"dim.0", 1.0}, {"keepdim", 1.0}});
  AddOp(&l1, "aten::div", {{{16, 16384}, "bfloat16"}, {{16, 1}, "bfloat16"}},
        {{{16, 16384}, "bfloat16"}});
  v1::KernelSource l1k = render(l1);
  CHECK(l1k.origin() == "template:row_norm");
  CHECK(absl::StrContains(l1k.source(), "NORM=\"l1\""));
  CHECK(absl::StrContains(l1k.source(), "self.affine = \"none\""));
}

TEST_CASE("Brain: a model computing more than the template's op gets no kernel") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  // torch.sum(torch.abs(x), dim=1): reduce_dim would render sum(x).
  v1::OpSignature sig;
  AddOp(&sig, "aten::abs", {{{64, 4096}}}, {{{64, 4096}}});
  AddOp(&sig, "aten::sum.dim_IntList", {{{64, 4096}}}, {{{64}}}, {{"dim.0", 1.0}});
  auto first = brain.FirstKernel({&problem, &sig, &gpu});
  REQUIRE_FALSE(first.ok());
  CHECK(first.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(absl::StrContains(first.status().message(), "no template family for reduction/sum"));
  CHECK(absl::StrContains(first.status().message(),
                          "the model also computes aten::abs before aten::sum"));
  // A prescribed switch to the reduction template is refused too, naming the op.
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  v1::Prescription sw;
  sw.set_template_switch("reduce_dim");
  FixRequest req{&parent, &sw, nullptr, &sig, &gpu, nullptr, nullptr, 0};
  auto switched = brain.ApplyFix(req);
  REQUIRE_FALSE(switched.ok());
  CHECK(switched.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(switched.status().message(), "aten::abs before aten::sum"));
  // relu(A @ B): gemm_tiled has no epilogue.
  v1::OpSignature mm;
  AddOp(&mm, "aten::mm", {{{512, 256}}, {{256, 384}}}, {{{512, 384}}});
  AddOp(&mm, "aten::relu", {{{512, 384}}}, {{{512, 384}}});
  auto g = brain.FirstKernel({&problem, &mm, &gpu});
  CHECK(g.status().code() == absl::StatusCode::kUnimplemented);
  CHECK(absl::StrContains(g.status().message(), "aten::relu after aten::mm"));
  // Without the relu the same GEMM renders.
  v1::OpSignature plain;
  AddOp(&plain, "aten::mm", {{{512, 256}}, {{256, 384}}}, {{{512, 384}}});
  CHECK(brain.FirstKernel({&problem, &plain, &gpu}).ok());
}

TEST_CASE("Brain: p-norm, var and std reductions along a dim through reduce_dim") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  // As the harness records torch.norm(x, dim=1) etc. on a 16 x 4096 x 256 input.
  auto reduction = [&](const std::string& aten, std::map<std::string, double> scalars) {
    v1::OpSignature sig;
    AddOp(&sig, aten, {{{16, 4096, 256}}}, {{{16, 256}}}, scalars);
    return brain.FirstKernel({&problem, &sig, &gpu});
  };
  auto l2 = reduction("aten::linalg_vector_norm", {{"ord", 2.0}, {"dim.0", 1.0}, {"keepdim", 0.0}});
  REQUIRE(l2.ok());
  CHECK(l2->kernel.origin() == "template:reduce_dim");
  CHECK(absl::StrContains(l2->kernel.source(), "op = \"norm\""));
  CHECK(absl::StrContains(l2->kernel.source(), "order = \"2\""));
  auto l1 = reduction("aten::linalg_vector_norm", {{"ord", 1.0}, {"dim.0", 1.0}, {"keepdim", 0.0}});
  REQUIRE(l1.ok());
  CHECK(absl::StrContains(l1->kernel.source(), "order = \"1\""));
  // ord=inf is not recorded (non-finite): the order is unknown.
  auto inf = reduction("aten::linalg_vector_norm", {{"dim.0", 1.0}, {"keepdim", 0.0}});
  CHECK(inf.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(inf.status().message(), "not recorded"));
  auto var = reduction("aten::var", {{"dim.0", 1.0}, {"correction", 0.0}, {"keepdim", 0.0}});
  REQUIRE(var.ok());
  CHECK(absl::StrContains(var->kernel.source(), "op = \"var\""));
  CHECK(absl::StrContains(var->kernel.source(), "correction = 0 "));
  auto sd = reduction("aten::std", {{"dim.0", 1.0}, {"correction", 1.0}, {"keepdim", 0.0}});
  REQUIRE(sd.ok());
  CHECK(absl::StrContains(sd->kernel.source(), "op = \"std\""));
  CHECK(absl::StrContains(sd->kernel.source(), "correction = 1 "));
}

TEST_CASE("Brain: the TMA persistent GEMM is a switch target, 2-D and Hopper only") {
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source("# user kernel");
  parent.set_origin("template:gemm_tiled");
  v1::OpSignature gemm;  // problems/02: 8192^3 bf16
  AddOp(&gemm, "aten::mm", {{{8192, 8192}, "bfloat16"}, {{8192, 8192}, "bfloat16"}},
        {{{8192, 8192}, "bfloat16"}});
  v1::GpuSpec gpu = H200();
  v1::Prescription sw;  // the database's gemm-persistent-tma-warp-specialized
  sw.set_pattern_id("gemm-persistent-tma-warp-specialized");
  sw.set_template_switch("gemm_persistent_tma");
  (*sw.mutable_knob_changes())["NUM_PROGRAMS"] = "sm_count";
  FixRequest req{&parent, &sw, nullptr, &gemm, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(r->kernel.origin() == "template:gemm_persistent_tma");
  CHECK(r->fallback.empty());
  const std::string& src = r->kernel.source();
  CHECK(absl::StrContains(src, "BLOCK_M = 128"));
  CHECK(absl::StrContains(src, "BLOCK_N = 256"));
  CHECK(absl::StrContains(src, "BLOCK_K = 64"));
  CHECK(absl::StrContains(src, "num_warps=8, num_stages=3"));
  CHECK(absl::StrContains(src, "tl.make_tensor_descriptor"));
  CHECK(!absl::StrContains(src, "{{"));
  // The template has no NUM_PROGRAMS knob (the grid is the SM count already): skipped.
  CHECK(absl::StrContains(absl::StrJoin(r->moves, "; "), "skip NUM_PROGRAMS"));

  // The other database spelling resolves to it too; the first kernel stays gemm_tiled.
  v1::Prescription alias;
  alias.set_template_switch("gemm_persistent");
  req.prescription = &alias;
  auto a = brain.ApplyFix(req);
  REQUIRE(a.ok());
  CHECK(a->kernel.origin() == "template:gemm_persistent_tma");
  v1::Problem problem;
  auto first = brain.FirstKernel({&problem, &gemm, &gpu});
  REQUIRE(first.ok());
  CHECK(first->kernel.origin() == "template:gemm_tiled");

  // fp32: 64 x 64 x 32 tiles, 8 warps, exact fp32 dot.
  v1::OpSignature f32;
  AddOp(&f32, "aten::mm", {{{4096, 4096}}, {{4096, 4096}}}, {{{4096, 4096}}});
  req.prescription = &sw;
  req.signature = &f32;
  auto f = brain.ApplyFix(req);
  REQUIRE(f.ok());
  CHECK(absl::StrContains(f->kernel.source(), "BLOCK_N = 64"));
  CHECK(absl::StrContains(f->kernel.source(), "BLOCK_K = 32"));
  CHECK(absl::StrContains(f->kernel.source(), "num_warps=8"));
  CHECK(absl::StrContains(f->kernel.source(), "\"ieee\""));

  // Batched: refused (2-D only).
  v1::OpSignature bmm;
  AddOp(&bmm, "aten::bmm", {{{8, 1024, 512}, "bfloat16"}, {{8, 512, 1024}, "bfloat16"}},
        {{{8, 1024, 1024}, "bfloat16"}});
  req.signature = &bmm;
  auto b = brain.ApplyFix(req);
  REQUIRE(!b.ok());
  CHECK(b.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(b.status().message(), "2-D only"));

  // Before Hopper: refused; an unknown arch is allowed.
  req.signature = &gemm;
  gpu.set_arch("sm_80");
  auto ampere = brain.ApplyFix(req);
  REQUIRE(!ampere.ok());
  CHECK(absl::StrContains(ampere.status().message(), "sm_90"));
  gpu.set_arch("");
  CHECK(brain.ApplyFix(req).ok());
  gpu.set_arch("sm_100a");
  CHECK(brain.ApplyFix(req).ok());
}

TEST_CASE("Brain: the CUTLASS 2.x 3xTF32 GEMM starts past K = 4096, or for a triangle") {
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  v1::OpSignature f32;
  AddOp(&f32, "aten::mm", {{{4096, 4096}}, {{4096, 4096}}}, {{{4096, 4096}}});
  // Not chosen by the rules up to K = 4096 (gemm_sm90_tf32x3 is faster there).
  for (int64_t m : {128, 4096}) {
    for (int64_t k : {64, 4096}) {
      v1::OpSignature sig;
      AddOp(&sig, "aten::mm", {{{m, k}}, {{k, 4096}}}, {{{m, 4096}}});
      auto first = brain.FirstKernel({&problem, &sig, &gpu});
      REQUIRE(first.ok());
      CHECK(first->kernel.origin() != "template:gemm_cutlass_tf32x3");
      // The SM90 one is (a CUDA first kernel, gemm_sm90_tf32x3) where its rule says so.
      CHECK(first->kernel.language() ==
            (first->kernel.origin() == "template:gemm_sm90_tf32x3" ? v1::KERNEL_LANGUAGE_CUDA
                                                                   : v1::KERNEL_LANGUAGE_TRITON));
    }
  }
  v1::KernelSource parent;
  parent.set_source("# user kernel");
  parent.set_language(v1::KERNEL_LANGUAGE_TRITON);
  v1::Prescription sw;
  sw.set_template_switch("gemm_cutlass_tf32x3");
  (*sw.mutable_knob_changes())["TILE"] = "64x128x32_32x64x32";
  FixRequest req{&parent, &sw, &problem, &f32, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  INFO(r.status().ToString());
  REQUIRE(r.ok());
  CHECK(r->kernel.origin() == "template:gemm_cutlass_tf32x3");
  CHECK(r->kernel.language() == v1::KERNEL_LANGUAGE_CUDA);
  CHECK(r->variants.empty());  // the screen takes Triton kernels only
  const std::string& src = r->kernel.source();
  CHECK(absl::StrContains(src, "constexpr char kTile[] = \"64x128x32_32x64x32\";"));
  CHECK(absl::StrContains(src, "__global__ void kagent_gemm_tf32x3_kernel("));
  CHECK(absl::StrContains(src, "cutlass::arch::OpMultiplyAddFastF32"));
  CHECK(absl::StrContains(absl::StrJoin(r->moves, "; "),
                          "TILE 128x128x32_32x64x32 -> 64x128x32_32x64x32"));

  // A knob move on that CUDA render stays a CUDA render.
  v1::Prescription stages;
  (*stages.mutable_knob_changes())["num_stages"] = "+1";
  FixRequest tune{&r->kernel, &stages, &problem, &f32, &gpu, nullptr, nullptr, 0};
  auto t = brain.ApplyFix(tune);
  INFO(t.status().ToString());
  REQUIRE(t.ok());
  CHECK(t->kernel.language() == v1::KERNEL_LANGUAGE_CUDA);
  CHECK(absl::StrContains(t->kernel.source(), "/*Stages=*/4,"));
  CHECK(absl::StrContains(t->kernel.source(), "\"64x128x32_32x64x32\""));

  // Refused where the module does not apply: the Triton templates keep those.
  struct Refusal {
    const char* what;
    v1::OpSignature sig;
    const char* message;
  };
  std::vector<Refusal> refusals(5);
  refusals[0] = {"bf16", {}, "dtype bfloat16"};
  AddOp(&refusals[0].sig, "aten::mm", {{{256, 256}, "bfloat16"}, {{256, 256}, "bfloat16"}},
        {{{256, 256}, "bfloat16"}});
  refusals[1] = {"a 4-D batch", {}, "A must be 2-D, or 3-D for a batch of products"};
  AddOp(&refusals[1].sig, "aten::matmul", {{{4, 8, 256, 256}}, {{4, 8, 256, 256}}},
        {{{4, 8, 256, 256}}});
  refusals[2] = {"K not a multiple of 4", {}, "multiples of 4"};
  AddOp(&refusals[2].sig, "aten::mm", {{{256, 255}}, {{255, 256}}}, {{{256, 256}}});
  refusals[3] = {"N not a multiple of 4", {}, "multiples of 4"};
  AddOp(&refusals[3].sig, "aten::mm", {{{256, 256}}, {{256, 250}}}, {{{256, 250}}});
  // A transposed A is read column-major in place: its M is the contiguous dimension.
  refusals[4] = {"a transposed A whose M is not a multiple of 4", {}, "A's 254"};
  AddOp(&refusals[4].sig, "aten::t", {{{512, 254}}}, {{{254, 512}, "float32", {1, 254}}});
  AddOp(&refusals[4].sig, "aten::mm", {{{254, 512}, "float32", {1, 254}}, {{512, 256}}},
        {{{254, 256}}});
  for (Refusal& no : refusals) {
    INFO(no.what);
    req.signature = &no.sig;
    auto refused = brain.ApplyFix(req);
    REQUIRE_FALSE(refused.ok());
    CHECK(refused.status().code() == absl::StatusCode::kFailedPrecondition);
    CHECK(absl::StrContains(refused.status().message(), no.message));
  }
  // A transposed B (A @ B.T) and a triangle of a product (torch.tril(A @ B, -1)) render
  // the layouts and the triangle the module compiles in.
  v1::OpSignature trans_b;
  AddOp(&trans_b, "aten::t", {{{256, 512}}}, {{{512, 256}, "float32", {1, 512}}});
  AddOp(&trans_b, "aten::mm", {{{256, 512}}, {{512, 256}, "float32", {1, 512}}},
        {{{256, 256}}});
  req.signature = &trans_b;
  auto tb = brain.ApplyFix(req);
  INFO(tb.status().ToString());
  REQUIRE(tb.ok());
  CHECK(absl::StrContains(tb->kernel.source(), "constexpr char kBExpr[] = \"B.mT\";"));
  CHECK(absl::StrContains(tb->kernel.source(), "        A, B = A, B.mT\n"));
  v1::OpSignature lower;
  AddOp(&lower, "aten::mm", {{{4096, 4096}}, {{4096, 4096}}}, {{{4096, 4096}}});
  AddOp(&lower, "aten::tril", {{{4096, 4096}}}, {{{4096, 4096}}}, {{"diagonal", -1.0}});
  // The first kernel too: the SM90 module takes no triangle, this one skips the tiles
  // outside it.
  auto first_lower = brain.FirstKernel({&problem, &lower, &gpu});
  REQUIRE(first_lower.ok());
  CHECK(first_lower->kernel.origin() == "template:gemm_cutlass_tf32x3");
  CHECK(absl::StrContains(first_lower->kernel.source(), "kTriangle[] = \"lower\";"));
  CHECK(absl::StrContains(first_lower->kernel.source(), "kDiagonal = -1;"));
  // 528 of its 128 x 128 tiles hold the triangle: four waves, the JSON's tile.
  CHECK(absl::StrContains(first_lower->kernel.source(), "kTile[] = \"128x128x32_32x64x32\";"));
  // A triangle with one wave of 128 x 128 tiles (136 of 2048 x 3072's) takes 128 x 64 ones.
  v1::OpSignature narrow;
  AddOp(&narrow, "aten::mm", {{{2048, 8192}}, {{8192, 3072}}}, {{{2048, 3072}}});
  AddOp(&narrow, "aten::tril", {{{2048, 3072}}}, {{{2048, 3072}}});
  auto first_narrow = brain.FirstKernel({&problem, &narrow, &gpu});
  REQUIRE(first_narrow.ok());
  CHECK(absl::StrContains(first_narrow->kernel.source(), "kTile[] = \"128x64x32_64x32x32\";"));
  CHECK(absl::StrContains(first_narrow->kernel.source(), "/*Stages=*/4,"));
  req.signature = &f32;
  gpu.set_arch("sm_80");
  auto ampere = brain.ApplyFix(req);
  REQUIRE_FALSE(ampere.ok());
  CHECK(absl::StrContains(ampere.status().message(), "sm_90a only"));
}

TEST_CASE("Brain: the database's attention_flash switch renders attention_online") {
  // A user's attention kernel (F.scaled_dot_product_attention, causal, bf16) and the
  // database's flash-attention pattern: the switch resolves to the template, sized by its
  // rule; SDPA's first kernel is that template too.
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source("# user kernel");
  parent.set_origin("user");
  v1::OpSignature sdpa;
  const testing::T t{{4, 8, 1000, 128}, "bfloat16"};
  AddOp(&sdpa, "aten::_scaled_dot_product_flash_attention", {t, t, t}, {t},
        {{"dropout_p", 0.0}, {"is_causal", 1.0}, {"return_debug_mask", 0.0}});
  v1::GpuSpec gpu = H200();
  v1::Prescription sw;
  sw.set_pattern_id("flash-attention-tiling");
  sw.set_template_switch("attention_flash");
  FixRequest req{&parent, &sw, nullptr, &sdpa, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(r->kernel.origin() == "template:attention_online");
  CHECK(r->fallback.empty());
  CHECK(absl::StrContains(r->kernel.source(), "CAUSAL=True"));
  CHECK(absl::StrContains(r->kernel.source(), "BLOCK_M = min(64,"));
  CHECK(!absl::StrContains(r->kernel.source(), "{{"));
  v1::Problem problem;
  auto first = brain.FirstKernel({&problem, &sdpa, &gpu});
  REQUIRE(first.ok());
  CHECK(first->kernel.origin() == "template:attention_online");
}

TEST_CASE("Brain: later assignments of a parent get other fallback moves") {
  // 27_layernorm / 10_relu: two prescriptions of one parent both fall back. The
  // assignment's index among its parent's picks the k-th derived move, so they differ.
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_origin("user");
  v1::OpSignature sig = testing::MatvecSignature(2048, 1048576);
  v1::GpuSpec gpu = H200();
  v1::Prescription persistent;
  persistent.set_pattern_id("persistent-grid-stride");
  persistent.set_template_switch("no_such_template");
  v1::Prescription pad;
  pad.set_pattern_id("pad-shared-memory-banks");
  (*pad.mutable_knob_changes())["SMEM_PAD"] = "1";
  FixRequest first{&parent, &persistent, nullptr, &sig, &gpu, nullptr, nullptr, 0};
  FixRequest second{&parent, &pad, nullptr, &sig, &gpu, nullptr, nullptr, 0};
  second.fallback_alternative = 1;
  auto a = brain.ApplyFix(first);
  auto b = brain.ApplyFix(second);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->fallback == "the library has no template 'no_such_template'");
  CHECK(b->fallback == "the kernel has no SMEM_PAD knob");
  CHECK(a->kernel.source() != b->kernel.source());
  REQUIRE(a->moves.size() == 1);
  REQUIRE(b->moves.size() == 1);
  CHECK(a->moves[0] != b->moves[0]);
  // Without that index both would make the same move (what the H200 run saw).
  second.fallback_alternative = 0;
  auto same = brain.ApplyFix(second);
  REQUIRE(same.ok());
  CHECK(same->kernel.source() == a->kernel.source());
  // Past the last applicable move the choice wraps around instead of failing.
  second.fallback_alternative = 100;
  CHECK(brain.ApplyFix(second).ok());
}

TEST_CASE("Brain: a no-op knob change falls back instead of failing") {
  // 01_matmul: tile-multiple-of-16-for-mma asked for BLOCK_K 32 on a kernel whose
  // BLOCK_K already is 32 ("BLOCK_K stays at 32 under '32'").
  HeuristicBrain brain = MakeBrain();
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_origin("user");
  v1::OpSignature sig = testing::MatvecSignature(2048, 1048576);
  v1::GpuSpec gpu = H200();
  v1::Prescription noop;
  noop.set_pattern_id("tile-multiple-of-16-for-mma");
  (*noop.mutable_knob_changes())["BLOCK_M"] = "32";
  FixRequest req{&parent, &noop, nullptr, &sig, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->fallback, "BLOCK_M stays at 32"));
  CHECK(r->kernel.source() != parent.source());
  // With a report saying there is nothing left to gain, the original error stands.
  v1::BottleneckReport roof;
  roof.set_primary(v1::BOTTLENECK_AT_ROOFLINE);
  req.report = &roof;
  CHECK(brain.ApplyFix(req).status().code() == absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Brain: channel_norm for inference BatchNorm and GroupNorm (problems 29, 30)") {
  HeuristicBrain brain = MakeBrain();
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  v1::Problem problem;
  problem.set_source("class Model: ...");
  v1::GpuSpec gpu = H200();
  auto first = [&](const v1::OpSignature& sig) {
    return brain.FirstKernel({&problem, &sig, &gpu});
  };
  // Renders channel_norm with `fragments`, and the knob tuner moves `knob` in it.
  auto check = [&](const v1::OpSignature& sig, std::vector<std::string> fragments,
                   const std::string& knob, const std::string& change) {
    return CheckFirstKernel(brain, problem, sig, gpu, "channel_norm", fragments, knob, change);
  };
  const std::vector<int64_t> x = {32, 64, 512, 512};
  v1::OpSignature bn;  // problems/29: F.batch_norm(x, rm, rv, w, b, training=False)
  AddOp(&bn, "aten::native_batch_norm", {{x}, {{64}}, {{64}}, {{64}}, {{64}}},
        {{x}, {{0}}, {{0}}}, {{"training", 0.0}, {"momentum", 0.1}, {"eps", 1e-5}});
  std::string tuned = check(bn,
                            {"norm, module = \"batch\", \"none\"",
                             "channels, groups, eps, affine = 64, 1, 1e-05, True",
                             "BLOCK = min(4096,", "BLOCK_P = min(1,", "num_warps = 8\n"},
                            "num_warps", "x2");
  CHECK(absl::StrContains(tuned, "num_warps = 16\n"));  // both kernels follow the variable
  check(bn, {}, "BLOCK", "/2");
  // On a GPU the same call is aten::cudnn_batch_norm, whose eps is `epsilon`.
  v1::OpSignature cudnn;
  AddOp(&cudnn, "aten::cudnn_batch_norm", {{x}, {{64}}, {{64}}, {{64}}, {{64}}},
        {{x}, {{0}}, {{0}}, {{0}, "uint8"}},
        {{"training", 0.0}, {"exponential_average_factor", 0.1}, {"epsilon", 1e-3}});
  check(cudnn, {"channels, groups, eps, affine = 64, 1, 0.001, True"}, "BLOCK_P", "x2");
  // BatchNorm1d on (N, C) without affine: HW = 1, planes stacked per program.
  v1::OpSignature bn1d;
  AddOp(&bn1d, "aten::_native_batch_norm_legit_no_training",
        {{{65536, 1024}, "bfloat16"}, {{1024}, "bfloat16"}, {{1024}, "bfloat16"}},
        {{{65536, 1024}, "bfloat16"}}, {{"momentum", 0.1}, {"eps", 1e-5}});
  check(bn1d, {"= 1024, 1, 1e-05, False", "BLOCK = min(1,", "BLOCK_P = min(2048,"},
        "BLOCK_P", "/2");

  v1::OpSignature gn;  // problems/30: nn.GroupNorm(8, 64) on 32 x 64 x 512 x 512
  AddOp(&gn, "aten::native_group_norm", {{x}, {{64}}, {{64}}}, {{x}, {{32, 8}}, {{32, 8}}},
        {{"N", 32.0}, {"C", 64.0}, {"HxW", 262144.0}, {"group", 8.0}, {"eps", 1e-5}});
  // 256 (n, group) programs would not fill 2 x 132 SMs: cdiv(4 x 132, 256) = 3 slices.
  tuned = check(gn,
                {"norm, module = \"group\", \"gn\"",
                 "channels, groups, eps, affine = 64, 8, 1e-05, True", "BLOCK_R = min(2048,",
                 "SPLIT_R = min(3,", "BLOCK = min(4096,"},
                "SPLIT_R", "x2");
  CHECK(absl::StrContains(tuned, "SPLIT_R = min(6,"));
  check(gn, {}, "BLOCK_R", "/2");
  check(gn, {}, "num_stages", "+1");
  v1::OpSignature many;  // enough (n, group) programs: no split
  AddOp(&many, "aten::native_group_norm", {{{256, 64, 56, 56}, "bfloat16"}},
        {{{256, 64, 56, 56}, "bfloat16"}}, {{"group", 32.0}, {"eps", 1e-6}});
  check(many, {"= 64, 32, 1e-06, False", "SPLIT_R = min(1,"}, "BLOCK", "x2");

  // Training mode: batch statistics. nn.BatchNorm2d (its num_batches_tracked counter
  // update recorded) holds its tensors as self.bn; F.batch_norm(training=True) on the
  // model's own weight, bias and buffers keeps MODULE none, STATS input.
  v1::OpSignature train;
  AddOp(&train, "aten::add_", {{{}, "int64"}}, {{{}, "int64"}}, {{"other", 1.0}});
  AddOp(&train, "aten::native_batch_norm", {{x}, {{64}}, {{64}}, {{64}}, {{64}}},
        {{x}, {{64}}, {{64}}}, {{"training", 1.0}, {"momentum", 0.1}, {"eps", 1e-5}});
  check(train, {"norm, module = \"batch\", \"bn\"", "dims, stats, momentum = 2, \"input\", 0.1",
                "BLOCK_C = min(1,"}, "BLOCK_R", "/2");
  v1::OpSignature train_fn;
  AddOp(&train_fn, "aten::native_batch_norm", {{x}, {{64}}, {{64}}, {{64}}, {{64}}},
        {{x}, {{64}}, {{64}}}, {{"training", 1.0}, {"momentum", 0.2}, {"eps", 1e-5}});
  check(train_fn, {"norm, module = \"batch\", \"none\"", "= 2, \"input\", 0.2"}, "SPLIT_R", "x2");
  // Refused, with the reason: F.batch_norm in training mode with three tensors (weight
  // and bias, or the running statistics?), an unknown mode, a lone weight, groups not
  // recorded.
  v1::OpSignature train3;
  AddOp(&train3, "aten::native_batch_norm", {{x}, {{64}}, {{64}}}, {{x}, {{64}}, {{64}}},
        {{"training", 1.0}, {"momentum", 0.1}, {"eps", 1e-5}});
  auto t = first(train3);
  CHECK(t.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(t.status().message(), "running statistics is not recorded"));
  v1::OpSignature update;
  AddOp(&update, "aten::_batch_norm_with_update", {{x}, {{64}}, {{64}}, {{64}}, {{64}}}, {{x}});
  CHECK(first(update).status().code() == absl::StatusCode::kFailedPrecondition);
  v1::OpSignature old;  // a signature without scalars
  AddOp(&old, "aten::native_batch_norm", {{x}, {{64}}, {{64}}, {{64}}, {{64}}}, {{x}});
  auto o = first(old);
  CHECK(o.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(o.status().message(), "training flag"));
  v1::OpSignature lone;
  AddOp(&lone, "aten::native_batch_norm", {{x}, {{64}}, {{64}}, {{64}}}, {{x}},
        {{"training", 0.0}});
  CHECK(absl::StrContains(first(lone).status().message(), "weight without bias"));
  v1::OpSignature nogroups;
  AddOp(&nogroups, "aten::native_group_norm", {{x}, {{64}}, {{64}}}, {{x}});
  CHECK(absl::StrContains(first(nogroups).status().message(), "group count"));
  // The database's names switch to it; row_norm refuses a batch norm and says where to go.
  auto sw = brain.RenderFor("batchnorm", bn, &gpu);
  REQUIRE(sw.ok());
  CHECK(sw->kernel.origin() == "template:channel_norm");
  CHECK(brain.RenderFor("row_chunked_loop", gn, &gpu)->kernel.origin() ==
        "template:channel_norm");
  auto rn = brain.RenderFor("row_norm", bn, &gpu);
  CHECK(rn.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(rn.status().message(), "channel_norm"));
  CHECK(brain.RenderFor("channel_norm", testing::MatvecSignature(64, 64), &gpu).status().code() ==
        absl::StatusCode::kFailedPrecondition);
}

TEST_CASE("Brain: a prescribed input_precision rewrites a rendered GEMM's choice knob") {
  // problems/01 (square fp32, K = 4096) on an sm_80 GPU starts from gemm_tiled with exact
  // fp32 dots (on sm_90 from gemm_sm90_tf32x3); the database's tf32x3-tensor-cores-for-fp32
  // names the knob in lowercase.
  HeuristicBrain brain = MakeBrain();
  v1::Problem problem;
  v1::GpuSpec gpu = H200();
  gpu.set_arch("sm_80");
  v1::OpSignature square;
  AddOp(&square, "aten::mm", {{{4096, 4096}}, {{4096, 4096}}}, {{{4096, 4096}}});
  auto first = brain.FirstKernel({&problem, &square, &gpu});
  REQUIRE(first.ok());
  REQUIRE(first->kernel.origin() == "template:gemm_tiled");
  REQUIRE(absl::StrContains(first->kernel.source(), "INPUT_PRECISION=\"ieee\""));
  v1::Prescription p;
  p.set_pattern_id("tf32x3-tensor-cores-for-fp32");
  p.set_title("3xTF32 tensor cores for fp32 GEMMs and convolutions");
  p.set_expected_speedup(1.2);
  (*p.mutable_knob_changes())["input_precision"] = "tf32x3";
  FixRequest req{&first->kernel, &p, &problem, &square, &gpu, nullptr, nullptr, 0};
  auto r = brain.ApplyFix(req);
  REQUIRE(r.ok());
  CHECK(r->fallback.empty());
  CHECK(absl::StrContains(r->kernel.source(), "INPUT_PRECISION=\"tf32x3\""));
  CHECK_FALSE(absl::StrContains(r->kernel.source(), "INPUT_PRECISION=\"ieee\""));
  REQUIRE(r->moves.size() == 1);
  CHECK(absl::StrContains(r->moves[0], "ieee -> tf32x3"));
  CHECK(r->moves[0] == "INPUT_PRECISION ieee -> tf32x3 (launch keyword of gemm_kernel)");
  CHECK(absl::StrContains(r->expected_effect,
                          "INPUT_PRECISION ieee -> tf32x3: fp32 dots run as three TF32 "
                          "tensor-core products (about fp32 accuracy)"));
  CHECK(absl::StrContains(r->expected_effect, "x1.20"));
}

// The params in which variant `v` differs from `kernel` (both renders of `id`), as
// "NAME old -> new".
std::vector<std::string> Differences(const TemplateLibrary& lib, const std::string& id,
                                     const std::string& kernel, const std::string& v) {
  auto a = lib.MatchRender(kernel);
  auto b = lib.MatchRender(v);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->info->id == id);
  CHECK(b->info->id == id);
  std::vector<std::string> out;
  for (const auto& [name, value] : b->params) {
    const std::string& old = a->params.at(name);
    if (old != value) out.push_back(name + " " + old + " -> " + value);
  }
  return out;
}

// What every result's variants must be: renders of the kernel's template with one knob
// changed, distinct from each other, from the kernel and from `parent`, in the kernel's
// language and origin; returns their changes in order.
std::vector<std::string> CheckVariants(const TemplateLibrary& lib, const BrainResult& r,
                                       const std::string& parent = "") {
  const std::string id(absl::StripPrefix(r.kernel.origin(), "template:"));
  REQUIRE(r.kernel.origin() == "template:" + id);
  std::set<std::string> seen = {NormalizeSource(r.kernel.source())};
  if (!parent.empty()) seen.insert(NormalizeSource(parent));
  std::vector<std::string> changes;
  for (const v1::KernelSource& v : r.variants) {
    CHECK(seen.insert(NormalizeSource(v.source())).second);
    CHECK(v.origin() == r.kernel.origin());
    CHECK(v.language() == r.kernel.language());
    std::vector<std::string> d = Differences(lib, id, r.kernel.source(), v.source());
    REQUIRE(d.size() == 1);
    changes.push_back(d[0]);
  }
  return changes;
}

TEST_CASE("Brain: variants around its own template renders, none around a user's kernel") {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  HeuristicBrain brain(*lib);
  v1::Problem problem;
  v1::GpuSpec gpu = H200();

  // A first kernel: the rules' tiles, num_warps and num_stages around it, at most 6.
  v1::OpSignature gemm;
  AddOp(&gemm, "aten::mm", {{{4096, 4096}, "bfloat16"}, {{4096, 4096}, "bfloat16"}},
        {{{4096, 4096}, "bfloat16"}});
  auto first = brain.FirstKernel({&problem, &gemm, &gpu});
  REQUIRE(first.ok());
  CHECK(first->variants.size() == kDefaultMaxVariants);
  CHECK(CheckVariants(**lib, *first) ==
        std::vector<std::string>{"num_warps 8 -> 16", "num_stages 4 -> 5", "BLOCK_M 128 -> 64",
                                 "BLOCK_N 256 -> 128", "BLOCK_K 64 -> 32", "num_warps 8 -> 4"});
  auto again = brain.FirstKernel({&problem, &gemm, &gpu});  // deterministic
  REQUIRE(again.ok());
  REQUIRE(again->variants.size() == first->variants.size());
  for (size_t i = 0; i < first->variants.size(); ++i) {
    CHECK(again->variants[i].source() == first->variants[i].source());
  }

  // A knob move on the brain's own first kernel: its result is a render again (origin
  // template:...), and the moved knob leads; the parent's BLOCK_K 4096 is never offered.
  v1::OpSignature mv = testing::MatvecSignature(2048, 1048576);
  auto row = brain.FirstKernel({&problem, &mv, &gpu});
  REQUIRE(row.ok());
  REQUIRE(row->kernel.origin() == "template:matvec_row_per_program");
  v1::Prescription wider;
  (*wider.mutable_knob_changes())["BLOCK_K"] = "x2";
  FixRequest req{&row->kernel, &wider, &problem, &mv, &gpu, nullptr, nullptr, 0};
  auto moved = brain.ApplyFix(req);
  REQUIRE(moved.ok());
  CHECK(moved->fallback.empty());
  CHECK(moved->kernel.origin() == "template:matvec_row_per_program");
  CHECK(CheckVariants(**lib, *moved, row->kernel.source()) ==
        std::vector<std::string>{"BLOCK_K 8192 -> 16384", "num_stages 2 -> 3",
                                 "num_warps 16 -> 8", "num_stages 2 -> 1"});

  // A template switch from a user's kernel: the new template's tiles vary too, and the
  // switch's knob change (SPLIT_K x2 on the rules' 8) leads.
  v1::KernelSource user;
  user.set_source(testing::kUserMatvec);
  user.set_origin("user");
  v1::Prescription sw;
  sw.set_template_switch("matvec_split_k");
  (*sw.mutable_knob_changes())["SPLIT_K"] = "x2";
  req = {&user, &sw, &problem, &mv, &gpu, nullptr, nullptr, 0};
  auto split = brain.ApplyFix(req);
  REQUIRE(split.ok());
  CHECK(split->kernel.origin() == "template:matvec_split_k");
  std::vector<std::string> changes = CheckVariants(**lib, *split, user.source());
  REQUIRE(changes.size() == kDefaultMaxVariants);
  CHECK(changes[0] == "SPLIT_K 16 -> 32");

  // Knob moves on a user's kernel, on one that claims a template origin, and on a render
  // with one line added are not renders: no variants, and the origin says the brain.
  v1::Prescription halve;
  (*halve.mutable_knob_changes())["BLOCK_M"] = "/2";
  v1::KernelSource spoofed = user;
  spoofed.set_origin("template:matvec_multi_row");
  v1::KernelSource edited = row->kernel;
  edited.set_source(row->kernel.source() + "# tuned by hand\n");
  using Case = std::pair<const v1::KernelSource*, const v1::Prescription*>;
  for (const auto& [parent, p] :
       std::vector<Case>{{&user, &halve}, {&spoofed, &halve}, {&edited, &wider}}) {
    INFO(parent->origin());
    req = {parent, p, &problem, &mv, &gpu, nullptr, nullptr, 0};
    auto r = brain.ApplyFix(req);
    REQUIRE(r.ok());
    CHECK(r->fallback.empty());
    CHECK(r->variants.empty());
    CHECK(r->kernel.origin() == "brain:heuristic");
  }

  // The bound is an option; 0 turns variants off (the origin still tells the render).
  HeuristicBrain two(*lib, {.max_variants = 2});
  auto bounded = two.FirstKernel({&problem, &gemm, &gpu});
  REQUIRE(bounded.ok());
  CHECK(CheckVariants(**lib, *bounded) ==
        std::vector<std::string>{"num_warps 8 -> 16", "num_stages 4 -> 5"});
  HeuristicBrain none(*lib, {.max_variants = 0});
  auto off = none.FirstKernel({&problem, &gemm, &gpu});
  REQUIRE(off.ok());
  CHECK(off->variants.empty());
  CHECK(off->kernel.source() == first->kernel.source());
}

}  // namespace
}  // namespace kagent
