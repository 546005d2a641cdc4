#include "engines/heuristic/heuristic_brain.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "engines/heuristic/knob_tuner.h"
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

  v1::OpSignature skinny;  // few output tiles, long K: split-K
  AddOp(&skinny, "aten::mm", {{{64, 65536}}, {{65536, 64}}}, {{{64, 64}}});
  CHECK(first(skinny)->kernel.origin() == "template:gemm_split_k");

  v1::OpSignature lrelu;
  AddOp(&lrelu, "aten::leaky_relu", {{{16, 16384}}}, {{{16, 16384}}});
  auto e = first(lrelu);
  REQUIRE(e.ok());
  CHECK(absl::StrContains(e->kernel.source(), "OP=\"leaky_relu\""));
  CHECK(absl::StrContains(e->kernel.source(), "\"negative_slope\", 0.01"));

  v1::OpSignature sm;
  AddOp(&sm, "aten::_log_softmax", {{{16, 16384}}}, {{{16, 16384}}});
  auto s = first(sm);
  REQUIRE(s.ok());
  CHECK(absl::StrContains(s->kernel.source(), "LOG=True"));

  v1::OpSignature conv;
  AddOp(&conv, "aten::convolution", {{{16, 3, 64, 64}}, {{8, 3, 3, 3}}}, {{{16, 8, 62, 62}}});
  CHECK(first(conv).status().code() == absl::StatusCode::kUnimplemented);

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

}  // namespace
}  // namespace kagent
