#include "engines/heuristic/blind_move.h"

#include <set>
#include <string>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "common/source_text.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/test_kernels.h"
#include "engines/heuristic/test_library.h"
#include "engines/heuristic/test_signatures.h"

namespace kagent {
namespace {

std::shared_ptr<const TemplateLibrary> Lib() { return testing::EmbeddedLibrary(); }

// The heuristic brain's first kernel for a 2048 x 1M bf16 matvec: a render of the library.
v1::KernelSource FirstMatvec(const std::shared_ptr<const TemplateLibrary>& lib,
                             const v1::OpSignature& sig) {
  HeuristicBrain brain(lib);
  v1::Problem problem;
  auto r = brain.FirstKernel({&problem, &sig, nullptr});
  REQUIRE(r.ok());
  return r->kernel;
}

TEST_CASE("blind move: the same seed draws the same kernel, other seeds other kernels") {
  auto lib = Lib();
  const v1::OpSignature sig = testing::MatvecSignature(2048, 1 << 20);
  const v1::KernelSource parent = FirstMatvec(lib, sig);
  std::set<std::string> kernels;
  for (uint64_t seed = 1; seed <= 12; ++seed) {
    auto a = DrawBlindMove(*lib, parent, &sig, nullptr, seed);
    auto b = DrawBlindMove(*lib, parent, &sig, nullptr, seed);
    REQUIRE(a.ok());
    REQUIRE(b.ok());
    CHECK(a->kernel.source() == b->kernel.source());
    CHECK(a->moves == b->moves);
    CHECK(NormalizeSource(a->kernel.source()) != NormalizeSource(parent.source()));
    // Every draw is a render of the library (a knob setting or a switch).
    CHECK(lib->MatchRender(a->kernel.source()).ok());
    CHECK(absl::StartsWith(a->kernel.origin(), "template:"));
    REQUIRE_FALSE(a->moves.empty());
    kernels.insert(a->kernel.source());
  }
  CHECK(kernels.size() >= 8);  // twelve seeds, hardly ever the same move
}

TEST_CASE("blind move: draws both knob settings and template switches") {
  auto lib = Lib();
  const v1::OpSignature sig = testing::MatvecSignature(2048, 1 << 20);
  const v1::KernelSource parent = FirstMatvec(lib, sig);
  const std::string parent_template = parent.origin();
  int switches = 0, knob_settings = 0;
  for (uint64_t seed = 0; seed < 40; ++seed) {
    auto m = DrawBlindMove(*lib, parent, &sig, nullptr, seed);
    REQUIRE(m.ok());
    if (absl::StartsWith(m->moves.front(), "switch to ")) {
      ++switches;
      CHECK(m->kernel.origin() != parent_template);
    } else {
      ++knob_settings;
      CHECK(m->kernel.origin() == parent_template);
      CHECK(absl::StrContains(m->moves.front(), " -> "));
    }
  }
  CHECK(switches > 0);
  CHECK(knob_settings > switches);  // one draw in four is a switch
}

TEST_CASE("blind move: a user's kernel gets knob settings through the knob tuner") {
  auto lib = Lib();
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_language(v1::KERNEL_LANGUAGE_TRITON);
  // Without a signature: no switch, only the tuner's knobs.
  auto a = DrawBlindMove(*lib, parent, nullptr, nullptr, 7);
  auto b = DrawBlindMove(*lib, parent, nullptr, nullptr, 7);
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a->kernel.source() == b->kernel.source());
  CHECK(a->kernel.origin() == "brain:heuristic");
  CHECK(a->kernel.source() != parent.source());
}

TEST_CASE("blind move: a kernel with nothing to move and no op is refused, saying why") {
  auto lib = Lib();
  v1::KernelSource parent;
  parent.set_source("class ModelNew: pass\n");
  auto m = DrawBlindMove(*lib, parent, nullptr, nullptr, 1);
  REQUIRE_FALSE(m.ok());
  CHECK(absl::IsFailedPrecondition(m.status()));
  CHECK(absl::StrContains(m.status().message(), "no blind move"));
}

TEST_CASE("heuristic brain: a prescription with a blind seed gets the blind move, variants too") {
  auto lib = Lib();
  const v1::OpSignature sig = testing::MatvecSignature(2048, 1 << 20);
  const v1::KernelSource parent = FirstMatvec(lib, sig);
  HeuristicBrain brain(lib);
  v1::Prescription p;
  p.set_pattern_id("blind-sweep");
  p.set_blind_seed(3);
  // A knob change beside the seed is ignored: the seed alone decides.
  (*p.mutable_knob_changes())["num_warps"] = "x2";
  FixRequest fr;
  fr.parent = &parent;
  fr.prescription = &p;
  fr.signature = &sig;
  auto r = brain.ApplyFix(fr);
  REQUIRE(r.ok());
  auto direct = DrawBlindMove(*lib, parent, &sig, nullptr, 3);
  REQUIRE(direct.ok());
  CHECK(r->kernel.source() == direct->kernel.source());
  CHECK(r->fallback.empty());
  CHECK(absl::StrContains(r->expected_effect, "a blind move (seed 3)"));
  // The screen's variants as for any other render (docs/loop.md: the same machinery).
  CHECK_FALSE(r->variants.empty());
}

}  // namespace
}  // namespace kagent
