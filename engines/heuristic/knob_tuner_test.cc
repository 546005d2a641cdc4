#include "engines/heuristic/knob_tuner.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_replace.h"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/test_kernels.h"
#include "engines/heuristic/triton_source.h"

namespace kagent {
namespace {

using testing::kUserMatvec;

TEST_CASE("Knobs: parses kernels, constexprs and the launch site of a user kernel") {
  auto info = ParseTritonSource(kUserMatvec);
  REQUIRE(info.ok());
  REQUIRE(info->kernels.size() == 1);
  const JitKernel& k = info->kernels[0];
  CHECK(k.name == "matvec_tile_kernel");
  REQUIRE(k.params.size() == 8);
  CHECK(k.params[6].name == "BLOCK_M");
  CHECK(k.params[6].constexpr_);
  CHECK_FALSE(k.params[0].constexpr_);
  CHECK_FALSE(k.autotuned);
  CHECK_FALSE(k.uses_dot);
  REQUIRE(info->launches.size() == 1);
  const LaunchSite& l = info->launches[0];
  CHECK(l.kernel == "matvec_tile_kernel");
  CHECK(l.grid == "grid");
  REQUIRE(l.Keyword("BLOCK_K") != nullptr);
  CHECK(l.Keyword("BLOCK_K")->value == "512");
  CHECK(l.Keyword("num_warps") == nullptr);
  auto knobs = CurrentKnobs(kUserMatvec, *info);
  CHECK(knobs["BLOCK_M"] == 32);
  CHECK(knobs["BLOCK_K"] == 512);
  CHECK(knobs["num_stages"] == 1);
  CHECK(knobs["num_warps"] == 4);  // Triton's default

  CHECK(ParseTritonSource("import torch\n").status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Knobs: a comment stating a knob's old value states the new one") {
  const std::string header =
      "# A 32-row tile: BLOCK_M=32 rows x BLOCK_K = 512 columns, num_stages=1, Triton's default "
      "num_warps=4.\n# Not these: MY_BLOCK_K=512, BLOCK_K=5120, BLOCK_K=512x, BLOCK_M=999.\n";
  auto r = ApplyKnobChanges(header + kUserMatvec,
                            {{"BLOCK_M", "/2"}, {"BLOCK_K", "x2"}, {"num_warps", "8"}}, nullptr);
  REQUIRE(r.ok());
  CHECK(absl::StartsWith(r->source,
                         "# A 32-row tile: BLOCK_M=16 rows x BLOCK_K = 1024 columns, num_stages=1, "
                         "Triton's default num_warps=8.\n"
                         "# Not these: MY_BLOCK_K=512, BLOCK_K=5120, BLOCK_K=512x, BLOCK_M=999.\n"));
  CHECK(absl::StrContains(r->source, "BLOCK_K=1024"));
  // String literals keep their text.
  CHECK(absl::StrContains(r->source, "\"BLOCK_M=999, num_warps=1\""));
}

TEST_CASE("Knobs: rewrites variables, literals and adds launch keywords") {
  auto r = ApplyKnobChanges(kUserMatvec,
                            {{"BLOCK_M", "/2"}, {"BLOCK_K", "x2"}, {"num_stages", "+1"},
                             {"num_warps", "8"}},
                            nullptr);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->source, "        BLOCK_M = 16\n"));
  CHECK(absl::StrContains(r->source, "BLOCK_K=1024"));
  CHECK(absl::StrContains(r->source, "num_stages=2"));
  CHECK(absl::StrContains(r->source, "num_stages=2, num_warps=8)"));
  // Comments and strings untouched; the grid still follows BLOCK_M.
  CHECK(absl::StrContains(r->source, "\"BLOCK_M=999, num_warps=1\""));
  CHECK(absl::StrContains(r->source, "grid = (triton.cdiv(M, BLOCK_M),)"));
  REQUIRE(r->edits.size() == 4);
  for (const KnobEdit& e : r->edits) {
    if (e.knob == "BLOCK_M") {
      CHECK(e.old_value == 32);
      CHECK(e.new_value == 16);
      CHECK(e.where == "variable BLOCK_M");
    }
    if (e.knob == "num_warps") CHECK(e.old_value == 4);
  }
  // The result parses again and the new values read back.
  auto info = ParseTritonSource(r->source);
  REQUIRE(info.ok());
  auto knobs = CurrentKnobs(r->source, *info);
  CHECK(knobs["BLOCK_M"] == 16);
  CHECK(knobs["num_warps"] == 8);
}

TEST_CASE("Knobs: a plain variable bounded by min() moves its literal") {
  // SPLIT_R is not a launch keyword: the host code uses it for the grid and a workspace.
  const std::string src = R"(import triton
import triton.language as tl


@triton.jit
def k(x_ptr, BLOCK: tl.constexpr):
    pass


def run(x, R):
    SPLIT_R = min(4, triton.cdiv(R, 64))
    grid = (SPLIT_R,)
    k[grid](x, BLOCK=64)
)";
  auto r = ApplyKnobChanges(src, {{"SPLIT_R", "x2"}}, nullptr);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->source, "SPLIT_R = min(8, triton.cdiv(R, 64))"));
  REQUIRE(r->edits.size() == 1);
  CHECK(r->edits[0].old_value == 4);
  CHECK(r->edits[0].where == "variable SPLIT_R");
}

TEST_CASE("Knobs: powers of two, bounds and no-op changes") {
  KnobBounds pow2{1, 256, true};
  std::string note;
  CHECK(*ApplyChange(32, "x3", pow2, &note) == 64);  // 96: nearer power below on a tie
  CHECK(absl::StrContains(note, "power of two"));
  CHECK(*ApplyChange(32, "+1", pow2, &note) == 64);
  CHECK(*ApplyChange(32, "-1", pow2, &note) == 16);
  CHECK(*ApplyChange(32, "x100", pow2, &note) == 256);
  CHECK(absl::StrContains(note, "clamped"));
  CHECK(*ApplyChange(3, "+1", KnobBounds{1, 8, false}, &note) == 4);
  CHECK(ApplyChange(3, "abc", pow2, &note).status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(ApplyChange(3, "x-2", pow2, &note).status().code() == absl::StatusCode::kInvalidArgument);

  auto at_bound = ApplyKnobChanges(kUserMatvec, {{"num_stages", "-1"}}, nullptr);
  CHECK(at_bound.status().code() == absl::StatusCode::kFailedPrecondition);
  auto unknown = ApplyKnobChanges(kUserMatvec, {{"BLOCK_Z", "x2"}}, nullptr);
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
}

TEST_CASE("Knobs: a grid with the knob's literal baked in is refused") {
  std::string src = absl::StrReplaceAll(
      kUserMatvec, {{"        BLOCK_M = 32\n", ""},
                    {"grid = (triton.cdiv(M, BLOCK_M),)", "grid = (triton.cdiv(M, 32),)"},
                    {"BLOCK_M=BLOCK_M", "BLOCK_M=32"}});
  auto r = ApplyKnobChanges(src, {{"BLOCK_M", "/2"}}, nullptr);
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(r.status().message(), "grid"));
  // BLOCK_K is not in the grid: fine.
  CHECK(ApplyKnobChanges(src, {{"BLOCK_K", "/2"}}, nullptr).ok());
  // A meta-lambda grid follows the keyword.
  std::string lambda = absl::StrReplaceAll(
      src, {{"grid = (triton.cdiv(M, 32),)", "grid = lambda meta: (triton.cdiv(M, meta['BLOCK_M']),)"}});
  auto ok = ApplyKnobChanges(lambda, {{"BLOCK_M", "/2"}}, nullptr);
  REQUIRE(ok.ok());
  CHECK(absl::StrContains(ok->source, "BLOCK_M=16"));
}

TEST_CASE("Knobs: constexpr defaults, autotune, tl.dot bounds") {
  std::string with_default = absl::StrReplaceAll(
      kUserMatvec, {{"BLOCK_K: tl.constexpr)", "BLOCK_K: tl.constexpr = 256)"},
                    {"BLOCK_M=BLOCK_M, BLOCK_K=512, ", "BLOCK_M=BLOCK_M, "}});
  auto r = ApplyKnobChanges(with_default, {{"BLOCK_K", "x2"}}, nullptr);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->source, "BLOCK_K: tl.constexpr = 512)"));
  CHECK(absl::StartsWith(r->edits[0].where, "constexpr default"));

  // An autotuned kernel whose configs are built by a call cannot be edited.
  std::string autotuned = absl::StrReplaceAll(
      kUserMatvec, {{"@triton.jit\n", "@triton.autotune(configs=make_configs(), key=['K'])\n@triton.jit\n"}});
  auto a = ApplyKnobChanges(autotuned, {{"BLOCK_K", "x2"}}, nullptr);
  CHECK(a.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(a.status().message(),
                          "@triton.autotune'd and its configs cannot be edited: configs "
                          "`make_configs()` is not a list literal of triton.Config"));

  std::string dot = absl::StrReplaceAll(kUserMatvec, {{"acc += a.to(tl.float32)", "acc += tl.dot(a, a)\n        acc += a.to(tl.float32)"}});
  auto info = ParseTritonSource(dot);
  REQUIRE(info.ok());
  CHECK(info->kernels[0].uses_dot);
  CHECK(BoundsFor("BLOCK_M", *info, nullptr).min == 16);
  auto small = ApplyKnobChanges(dot, {{"BLOCK_M", "1"}}, nullptr);
  REQUIRE(small.ok());
  CHECK(small->edits[0].new_value == 16);
}

TEST_CASE("Knobs: an autotuned kernel's changes add configs for the autotuner") {
  using testing::kUserAutotunedRelu;
  auto info = ParseTritonSource(kUserAutotunedRelu);
  REQUIRE(info.ok());
  const JitKernel& k = info->kernels[0];
  CHECK(k.autotuned);
  CHECK(k.configs_problem.empty());
  REQUIRE(k.configs.size() == 2);
  CHECK(k.configs[0].values.at("BLOCK_SIZE").value == 256);
  CHECK(k.configs[0].values.at("num_warps").value == 2);
  CHECK(k.configs[1].values.at("BLOCK_SIZE").value == 1024);
  CHECK_FALSE(k.configs[1].values.count("num_warps"));
  CHECK_FALSE(k.configs[1].values.count("EVEN"));  // not an integer

  // Both knobs at once: one new config per old one, on lines of their own.
  auto r = ApplyKnobChanges(kUserAutotunedRelu, {{"BLOCK_SIZE", "x2"}, {"num_warps", "x2"}},
                            nullptr);
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->source,
                          "    triton.Config({'BLOCK_SIZE': 1024, \"EVEN\": False}),  # "
                          "'BLOCK_SIZE': 99 in a comment\n"
                          "    triton.Config({\"BLOCK_SIZE\": 512}, num_warps=4),\n"
                          "    triton.Config({'BLOCK_SIZE': 2048, \"EVEN\": False}, "
                          "num_warps=8),\n]\n"));
  auto tuned = ParseTritonSource(r->source);
  REQUIRE(tuned.ok());
  REQUIRE(tuned->kernels[0].configs.size() == 4);
  CHECK(tuned->kernels[0].configs[2].values.at("BLOCK_SIZE").value == 512);
  CHECK(tuned->kernels[0].configs[2].values.at("num_warps").value == 4);
  CHECK(tuned->kernels[0].configs[3].values.at("BLOCK_SIZE").value == 2048);
  CHECK(tuned->kernels[0].configs[3].values.at("num_warps").value == 8);  // from the default 4
  CHECK(absl::StrContains(r->source, "relu_kernel[grid](x, y, n)\n"));  // the launch as it was
  REQUIRE(r->edits.size() == 2);
  for (const KnobEdit& e : r->edits) {
    CHECK(e.where == "autotune configs of relu_kernel (2 configs added; the autotuner picks "
                     "among 4)");
    CHECK(e.old_value == (e.knob == "BLOCK_SIZE" ? 256 : 2));
    CHECK(e.new_value == (e.knob == "BLOCK_SIZE" ? 512 : 4));
  }

  // A change that only reproduces a config the list has adds nothing for it: the second
  // config halved, 512 at the default 4 warps, is the third.
  auto half = ApplyKnobChanges(r->source, {{"BLOCK_SIZE", "/2"}}, nullptr);
  REQUIRE(half.ok());
  CHECK(ParseTritonSource(half->source)->kernels[0].configs.size() == 7);

  // Bounds: nothing new is refused with the reason.
  auto top = ApplyKnobChanges(kUserAutotunedRelu, {{"BLOCK_SIZE", "65536"}}, nullptr);
  REQUIRE(top.ok());
  auto again = ApplyKnobChanges(top->source, {{"BLOCK_SIZE", "65536"}}, nullptr);
  CHECK(again.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(again.status().message(), "gives no config it does not have"));

  // The last config without a trailing comma gets one; the new config follows it.
  std::string no_comma = absl::StrReplaceAll(
      kUserAutotunedRelu, {{"False}),  # 'BLOCK_SIZE': 99 in a comment\n",
                            "False})\n"}});
  auto nc = ApplyKnobChanges(no_comma, {{"num_stages", "1"}}, nullptr);
  REQUIRE(nc.ok());
  CHECK(absl::StrContains(nc->source, "\"EVEN\": False}),\n"
                                      "    triton.Config({\"BLOCK_SIZE\": 256}, num_warps=2, "
                                      "num_stages=1),\n"
                                      "    triton.Config({'BLOCK_SIZE': 1024, \"EVEN\": False}, "
                                      "num_stages=1),\n]\n"));

  // A config list inline in the decorator, one line: the new config joins it inline.
  std::string inline_list = absl::StrReplaceAll(
      kUserAutotunedRelu, {{"configs=CONFIGS", "configs=[triton.Config({'BLOCK_SIZE': 64})]"}});
  auto in = ApplyKnobChanges(inline_list, {{"num_stages", "+1"}}, nullptr);
  REQUIRE(in.ok());
  CHECK(absl::StrContains(in->source,
                          "configs=[triton.Config({'BLOCK_SIZE': 64}), "
                          "triton.Config({'BLOCK_SIZE': 64}, num_stages=4)], key"));
  // An unclosed configs list is refused, not read past its end.
  std::string unclosed = absl::StrReplaceAll(kUserAutotunedRelu, {{"\n]\n", "\n\n"}});
  auto open_list = ApplyKnobChanges(unclosed, {{"BLOCK_SIZE", "x2"}}, nullptr);
  CHECK_FALSE(open_list.ok());
  // A knob the configs do not set, on a kernel that does not take it: not this kernel's.
  CHECK(ApplyKnobChanges(kUserAutotunedRelu, {{"BLOCK_M", "x2"}}, nullptr).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("Knobs: a template's choice param rewrites its string literal") {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  auto src = (*lib)->Render("gemm_tiled", {});
  REQUIRE(src.ok());
  REQUIRE(absl::StrContains(*src, "INPUT_PRECISION=\"ieee\""));
  auto info = ParseTritonSource(*src);
  REQUIRE(info.ok());
  REQUIRE(info->launches.front().Keyword("INPUT_PRECISION") != nullptr);
  CHECK(info->launches.front().Keyword("INPUT_PRECISION")->value == "\"ieee\"");

  // The database's lowercase name finds INPUT_PRECISION; the literal's content changes.
  auto r = ApplyKnobChanges(*src, {{"input_precision", "tf32x3"}}, lib->get());
  REQUIRE(r.ok());
  CHECK(absl::StrContains(r->source, "INPUT_PRECISION=\"tf32x3\", UPCAST="));
  CHECK_FALSE(absl::StrContains(r->source, "INPUT_PRECISION=\"ieee\""));
  CHECK(r->source.size() == src->size() + 2);
  REQUIRE(r->edits.size() == 1);
  const KnobEdit& e = r->edits[0];
  CHECK(e.knob == "INPUT_PRECISION");
  CHECK(e.is_choice());
  CHECK(e.old_text == "ieee");
  CHECK(e.new_text == "tf32x3");
  CHECK(e.old_value == 0);
  CHECK(e.new_value == 0);
  CHECK(e.where == "launch keyword of gemm_kernel");
  REQUIRE(ParseTritonSource(r->source).ok());

  // The param's own name works too, with integer knobs in the same call.
  auto upper = ApplyKnobChanges(*src, {{"INPUT_PRECISION", "tf32"}, {"BLOCK_K", "x2"}},
                                lib->get());
  REQUIRE(upper.ok());
  CHECK(absl::StrContains(upper->source, "INPUT_PRECISION=\"tf32\""));
  CHECK(absl::StrContains(upper->source, "BLOCK_K = 64\n"));
  REQUIRE(upper->edits.size() == 2);
  for (const KnobEdit& edit : upper->edits) {
    if (edit.knob == "BLOCK_K") {
      CHECK_FALSE(edit.is_choice());
      CHECK(edit.old_text.empty());
      CHECK(edit.new_value == 64);
    }
  }
  // Case-insensitive matching is for choice params only: block_k is no knob.
  CHECK(ApplyKnobChanges(*src, {{"block_k", "x2"}}, lib->get()).status().code() ==
        absl::StatusCode::kNotFound);

  // A value outside the allowed list names the allowed values; relative changes too.
  auto bad = ApplyKnobChanges(*src, {{"input_precision", "bf16"}}, lib->get());
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad.status().message(), "ieee, tf32, tf32x3"));
  CHECK(ApplyKnobChanges(*src, {{"input_precision", "x2"}}, lib->get()).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(ApplyKnobChanges(*src, {{"input_precision", "TF32"}}, lib->get()).status().code() ==
        absl::StatusCode::kInvalidArgument);

  // The value it already has is a no-op.
  auto same = ApplyKnobChanges(*src, {{"input_precision", "ieee"}}, lib->get());
  CHECK(same.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(same.status().message(), "INPUT_PRECISION stays at 'ieee'"));

  // Single quotes are kept.
  std::string single =
      absl::StrReplaceAll(*src, {{"INPUT_PRECISION=\"ieee\"", "INPUT_PRECISION='ieee'"}});
  auto s = ApplyKnobChanges(single, {{"input_precision", "tf32x3"}}, lib->get());
  REQUIRE(s.ok());
  CHECK(absl::StrContains(s->source, "INPUT_PRECISION='tf32x3'"));

  // A value that is no string literal is refused; so is a choice param with no keyword.
  std::string named =
      absl::StrReplaceAll(*src, {{"INPUT_PRECISION=\"ieee\"", "INPUT_PRECISION=prec"}});
  CHECK(ApplyKnobChanges(named, {{"input_precision", "tf32"}}, lib->get()).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  CHECK(ApplyKnobChanges(*src, {{"A_EXPR", "A.t()"}}, lib->get()).status().code() ==
        absl::StatusCode::kNotFound);

  // Without the library there are no choice knobs: the integer path refuses the string.
  auto no_lib = ApplyKnobChanges(*src, {{"INPUT_PRECISION", "tf32"}}, nullptr);
  CHECK(no_lib.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(no_lib.status().message(), "not an integer literal"));
}

TEST_CASE("Knobs: a user kernel's string keyword is no choice knob") {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  std::string user = absl::StrReplaceAll(
      kUserMatvec, {{"BLOCK_K: tl.constexpr)", "BLOCK_K: tl.constexpr, PREC: tl.constexpr)"},
                    {"num_stages=1)", "num_stages=1, PREC=\"ieee\")"}});
  auto info = ParseTritonSource(user);
  REQUIRE(info.ok());
  CHECK(info->template_id.empty());
  REQUIRE(info->launches.front().Keyword("PREC") != nullptr);
  for (const char* knob : {"PREC", "prec"}) {
    auto r = ApplyKnobChanges(user, {{knob, "tf32"}}, lib->get());
    CHECK_FALSE(r.ok());
  }
  auto r = ApplyKnobChanges(user, {{"PREC", "tf32"}}, lib->get());
  CHECK(r.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(r.status().message(), "not an integer literal"));
  // Its integer knobs still move.
  auto ok = ApplyKnobChanges(user, {{"BLOCK_K", "x2"}}, lib->get());
  REQUIRE(ok.ok());
  CHECK(absl::StrContains(ok->source, "BLOCK_K=1024, num_stages=1, PREC=\"ieee\")"));
}

TEST_CASE("Knobs: a rendered template's tile stays within its max_tile_elements") {
  // gemm_persistent_tma's 128 x 256 x 64 (bf16, 3 stages: 213 KB of shared memory on
  // sm_90) may not grow to 128 x 256 x 128 (2^22 elements, over its bound of 2^21) even
  // though BLOCK_K 128 is within BLOCK_K's own bounds; shrinking a knob stays allowed.
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  auto src = (*lib)->Render("gemm_persistent_tma",
                            {{"BLOCK_M", "128"}, {"BLOCK_N", "256"}, {"BLOCK_K", "64"}});
  REQUIRE(src.ok());
  auto grown = ApplyKnobChanges(*src, {{"BLOCK_K", "x2"}}, lib->get());
  CHECK(grown.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(grown.status().message(),
                          "BLOCK_K 64 -> 128 makes a tile of more than 2097152 elements"));
  CHECK(ApplyKnobChanges(*src, {{"BLOCK_M", "x2"}}, lib->get()).status().code() ==
        absl::StatusCode::kFailedPrecondition);
  auto both = ApplyKnobChanges(*src, {{"BLOCK_K", "x2"}, {"BLOCK_N", "/2"}}, lib->get());
  INFO(both.status().ToString());
  CHECK(both.ok());  // 128 x 128 x 128 is within the bound
  CHECK(ApplyKnobChanges(*src, {{"BLOCK_K", "/2"}}, lib->get()).ok());
  // Without the library the template's bounds are unknown: the generic ones apply.
  CHECK(ApplyKnobChanges(*src, {{"BLOCK_K", "x2"}}, nullptr).ok());
}

}  // namespace
}  // namespace kagent
