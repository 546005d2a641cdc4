#include "engines/heuristic/template_variants.h"

#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "common/source_text.h"
#include "engines/heuristic/test_library.h"

namespace kagent {
namespace {

std::shared_ptr<const TemplateLibrary> Lib() { return testing::EmbeddedLibrary(); }

// The complete params of template `id` rendered with `given`.
std::map<std::string, std::string> Params(const TemplateLibrary& lib, const std::string& id,
                                          const std::map<std::string, std::string>& given) {
  auto src = lib.Render(id, given);
  REQUIRE(src.ok());
  auto m = lib.MatchRender(*src);
  REQUIRE(m.ok());
  return m->params;
}

std::vector<std::string> Changes(const std::vector<TemplateVariant>& variants) {
  std::vector<std::string> out;
  for (const TemplateVariant& v : variants) out.push_back(v.change);
  return out;
}

// Every variant is a render of `id` that differs from `params` in exactly the knob its
// change names, and no two variants (nor a variant and the kernel) are the same source.
void CheckRenders(const TemplateLibrary& lib, const std::string& id,
                  const std::map<std::string, std::string>& params,
                  const std::vector<TemplateVariant>& variants) {
  std::set<std::string> seen = {NormalizeSource(*lib.Render(id, params))};
  for (const TemplateVariant& v : variants) {
    INFO(v.change);
    CHECK(seen.insert(NormalizeSource(v.source)).second);
    auto m = lib.MatchRender(v.source);
    REQUIRE(m.ok());
    CHECK(m->info->id == id);
    std::vector<std::string> differ;
    for (const auto& [name, value] : m->params) {
      if (params.at(name) != value) differ.push_back(name + " " + params.at(name) + " -> " + value);
    }
    REQUIRE(differ.size() == 1);
    CHECK(differ[0] == v.change);
  }
}

TEST_CASE("Variants: one knob at a time around a first kernel, in the brain's order") {
  // gemm_tiled as the brain renders a large bf16 GEMM: 128 x 256 x 64, 8 warps, 4 stages.
  auto lib = Lib();
  const auto params = Params(*lib, "gemm_tiled",
                             {{"BLOCK_M", "128"}, {"BLOCK_N", "256"}, {"BLOCK_K", "64"},
                              {"num_warps", "8"}, {"num_stages", "4"}});
  const TemplateInfo& t = *lib->Find("gemm_tiled");
  auto six = TemplateVariants(*lib, t, params, &params, /*tiles=*/true, {}, 6);
  CHECK(Changes(six) == std::vector<std::string>{
                            "num_warps 8 -> 16", "num_stages 4 -> 5", "BLOCK_M 128 -> 64",
                            "BLOCK_N 256 -> 128", "BLOCK_K 64 -> 32", "num_warps 8 -> 4"});
  CheckRenders(*lib, "gemm_tiled", params, six);
  // Without the bound: num_stages 3 too, and no larger tile, since every doubled one is
  // refused by the library (BLOCK_N 512 is over its max; 256 x 256 x 64 and
  // 128 x 256 x 128 are over max_tile_elements). GROUP_M is no tile: it does not move.
  auto all = TemplateVariants(*lib, t, params, &params, true, {}, 100);
  CHECK(Changes(all).size() == 7);
  CHECK(all.back().change == "num_stages 4 -> 3");
  CheckRenders(*lib, "gemm_tiled", params, all);
  // The same call gives the same variants; the bound takes a prefix; 0 gives none.
  auto again = TemplateVariants(*lib, t, params, &params, true, {}, 6);
  REQUIRE(again.size() == six.size());
  for (size_t i = 0; i < six.size(); ++i) CHECK(again[i].source == six[i].source);
  CHECK(Changes(TemplateVariants(*lib, t, params, &params, true, {}, 2)) ==
        std::vector<std::string>{"num_warps 8 -> 16", "num_stages 4 -> 5"});
  CHECK(TemplateVariants(*lib, t, params, &params, true, {}, 0).empty());
  // Without tiles (a knob move) only num_warps and num_stages move.
  CHECK(Changes(TemplateVariants(*lib, t, params, &params, false, {}, 100)) ==
        std::vector<std::string>{"num_warps 8 -> 16", "num_stages 4 -> 5", "num_warps 8 -> 4",
                                 "num_stages 4 -> 3"});
}

TEST_CASE("Variants: the moved knob goes on first and back last, never to the parent") {
  // matvec_split_k after SPLIT_K 4 -> 8 (x2): SPLIT_K 16 first, 4 (the parent) last.
  auto lib = Lib();
  const TemplateInfo& t = *lib->Find("matvec_split_k");
  const std::map<std::string, std::string> knobs = {
      {"BLOCK_K", "2048"}, {"SPLIT_K", "8"}, {"num_warps", "8"}, {"num_stages", "2"}};
  const auto params = Params(*lib, "matvec_split_k", knobs);
  auto parent_knobs = knobs;
  parent_knobs["SPLIT_K"] = "4";
  const auto from = Params(*lib, "matvec_split_k", parent_knobs);
  const std::string parent = *lib->Render("matvec_split_k", from);
  auto v = TemplateVariants(*lib, t, params, &from, /*tiles=*/false, {}, 100);
  CHECK(Changes(v) == std::vector<std::string>{"SPLIT_K 8 -> 16", "num_warps 8 -> 16",
                                               "num_stages 2 -> 3", "num_warps 8 -> 4",
                                               "num_stages 2 -> 1", "SPLIT_K 8 -> 4"});
  CheckRenders(*lib, "matvec_split_k", params, v);
  CHECK(v.back().source == parent);
  // The parent is measured already: excluded, also when written with other whitespace.
  auto without = TemplateVariants(*lib, t, params, &from, false, {parent + "\n\n"}, 100);
  CHECK(Changes(without).size() == 5);
  CHECK(without.back().change == "num_stages 2 -> 1");
  // A move down continues down. With tiles (a switch) BLOCK_K moves too; BLOCK_M 1 has no
  // half.
  auto down = TemplateVariants(*lib, t, from, &params, /*tiles=*/true, {}, 100);
  CHECK(Changes(down) == std::vector<std::string>{
                             "SPLIT_K 4 -> 2", "num_warps 8 -> 16", "num_stages 2 -> 3",
                             "BLOCK_K 2048 -> 1024", "num_warps 8 -> 4", "num_stages 2 -> 1",
                             "SPLIT_K 4 -> 8", "BLOCK_M 1 -> 2", "BLOCK_K 2048 -> 4096"});
  CheckRenders(*lib, "matvec_split_k", from, down);
}

TEST_CASE("Variants: bounds, choices and shape params") {
  auto lib = Lib();
  // gemm_tiled in fp32 with tf32x3 on a transposed A: the choice and shape params stay,
  // num_stages 1 has no lower neighbour, num_warps 1 no half, BLOCK_K 16 no half.
  const auto params = Params(*lib, "gemm_tiled",
                             {{"BLOCK_M", "16"}, {"BLOCK_N", "16"}, {"BLOCK_K", "16"},
                              {"num_warps", "1"}, {"num_stages", "1"},
                              {"INPUT_PRECISION", "tf32x3"}, {"A_EXPR", "A.mT"}});
  auto v = TemplateVariants(*lib, *lib->Find("gemm_tiled"), params, nullptr, true, {}, 100);
  CHECK(Changes(v) == std::vector<std::string>{"num_warps 1 -> 2", "num_stages 1 -> 2",
                                               "BLOCK_M 16 -> 32", "BLOCK_N 16 -> 32",
                                               "BLOCK_K 16 -> 32"});
  CheckRenders(*lib, "gemm_tiled", params, v);
  // A template without num_stages (elementwise): BLOCK and num_warps only.
  const auto ew =
      Params(*lib, "elementwise", {{"OP", "relu"}, {"BLOCK", "4096"}, {"num_warps", "8"}});
  CHECK(Changes(TemplateVariants(*lib, *lib->Find("elementwise"), ew, nullptr, true, {}, 100)) ==
        std::vector<std::string>{"num_warps 8 -> 16", "BLOCK 4096 -> 2048", "num_warps 8 -> 4",
                                 "BLOCK 4096 -> 8192"});
}

}  // namespace
}  // namespace kagent
