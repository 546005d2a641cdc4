#include "engines/heuristic/template_library.h"

#include <cstdlib>
#include <map>
#include <set>
#include <string>
#include <vector>

#include <catch2/catch.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "engines/heuristic/knob_tuner.h"
#include "engines/heuristic/test_library.h"
#include "engines/heuristic/triton_source.h"

namespace kagent {
namespace {

std::shared_ptr<const TemplateLibrary> Lib() { return testing::EmbeddedLibrary(); }

TEST_CASE("Templates: every embedded template renders with its defaults and parses") {
  auto lib = Lib();
  std::vector<std::string> ids = lib->Ids();
  for (const char* id : {"matvec_row_per_program", "matvec_multi_row", "matvec_split_k",
                         "gemm_tiled", "gemm_split_k", "softmax_online", "row_norm",
                         "reduce_dim", "elementwise", "scan_rows", "pool_nd", "loss_reduce",
                         "conv2d_implicit_gemm", "conv2d_depthwise", "loss_rows",
                         "channel_norm", "gemm_persistent_tma", "frobenius_norm",
                         "conv3d_implicit_gemm"}) {
    INFO(id);
    REQUIRE(lib->Find(id) != nullptr);
    auto src = lib->Render(id, {});
    REQUIRE(src.ok());
    CHECK_FALSE(absl::StrContains(*src, "{{"));
    CHECK(absl::StartsWith(*src, std::string("# kagent-template: ") + id));
    CHECK(absl::StrContains(*src, "class ModelNew(nn.Module)"));
    auto info = ParseTritonSource(*src);
    REQUIRE(info.ok());
    CHECK(info->template_id == id);
    CHECK_FALSE(lib->Find(id)->conditions.empty());
  }
  // Params keep the JSON file's order.
  std::vector<std::string> names;
  for (const TemplateParam& p : lib->Find("gemm_tiled")->params) names.push_back(p.name);
  CHECK(absl::StartsWith(absl::StrJoin(names, " "),
                         "BLOCK_M BLOCK_N BLOCK_K GROUP_M num_warps num_stages"));
  CHECK(lib->ForOpClass("matvec").size() == 3);
  // tiled, split-K, persistent TMA, diag, CUTLASS 3xTF32 (SM80 and SM90), SM90 bf16/fp16
  CHECK(lib->ForOpClass("gemm").size() == 7);
  CHECK(lib->Find("gemm_tiled")->language == "triton");  // the default
  CHECK(lib->ForOpClass("norm").size() == 3);  // row_norm, channel_norm, frobenius_norm
}

TEST_CASE("Templates: rendering validates params") {
  auto lib = Lib();
  auto ok = lib->Render("matvec_split_k", {{"SPLIT_K", "3"}, {"BLOCK_K", "1024"}});
  REQUIRE(ok.ok());
  CHECK(absl::StrContains(*ok, "SPLIT_K = 3\n"));
  CHECK(absl::StrContains(*ok, "BLOCK_K = 1024\n"));
  CHECK(lib->Render("nope", {}).status().code() == absl::StatusCode::kNotFound);
  auto bad = lib->Render("matvec_split_k", {{"BLOCK_K", "1000"}});
  CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad.status().message(), "power of two"));
  CHECK(lib->Render("matvec_split_k", {{"BLOCK_K", "32"}}).status().code() ==
        absl::StatusCode::kInvalidArgument);  // below min 64
  CHECK(lib->Render("matvec_split_k", {{"NOT_A_PARAM", "1"}}).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(lib->Render("elementwise", {{"OP", "frobnicate"}}).status().code() ==
        absl::StatusCode::kInvalidArgument);
  auto tile = lib->Render("matvec_multi_row", {{"BLOCK_M", "256"}, {"BLOCK_K", "8192"}});
  CHECK(tile.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(tile.status().message(), "tile"));
  auto eps = lib->Render("row_norm", {{"EPS", "1e-6"}, {"AFFINE", "none"}});
  REQUIRE(eps.ok());
  CHECK(absl::StrContains(*eps, "\"eps\", 1e-06)"));
  // Floats render as Python's repr would: 20.0 and 0.2, not 2e+01 or 0.20000000000000001.
  auto floats = lib->Render("elementwise", {{"OP", "softplus"}, {"ALPHA", "0.2"},
                                            {"BETA", "20"}, {"SCALE", "1e15"},
                                            {"INPUT_SCALE", "1e16"}});
  REQUIRE(floats.ok());
  CHECK(absl::StrContains(*floats, ", 0.2))"));
  CHECK(absl::StrContains(*floats, ", 20.0))"));
  CHECK(absl::StrContains(*floats, "self.scale = 1000000000000000.0\n"));
  CHECK(absl::StrContains(*floats, "self.input_scale = 1e+16\n"));
}

TEST_CASE("Templates: conv_transpose2d refuses a stride or dilation of 0") {
  // STRIDE_W / DILATION_W take -1 ("same as H") or 1-16; 0 (a division by zero in the
  // wrapper) is refused when rendering, as are STRIDE / DILATION below 1.
  auto lib = Lib();
  REQUIRE(lib->Render("conv_transpose2d", {{"STRIDE_W", "-1"}, {"DILATION_W", "16"}}).ok());
  REQUIRE(lib->Render("conv_transpose2d", {{"STRIDE_W", "3"}, {"DILATION_W", "1"}}).ok());
  for (const char* param : {"STRIDE_W", "DILATION_W", "STRIDE", "DILATION"}) {
    INFO(param);
    auto bad = lib->Render("conv_transpose2d", {{param, "0"}});
    CHECK(bad.status().code() == absl::StatusCode::kInvalidArgument);
    CHECK(absl::StrContains(bad.status().message(), absl::StrCat(param, "=0")));
  }
  auto bad = lib->Render("conv_transpose2d", {{"STRIDE_W", "0"}});
  CHECK(absl::StrContains(bad.status().message(), "not one of {-1, 1, 2,"));
  CHECK(lib->Render("conv_transpose2d", {{"STRIDE_W", "-2"}}).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(lib->Render("conv_transpose2d", {{"DILATION_W", "17"}}).status().code() ==
        absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Templates: malformed libraries are refused with the file named") {
  auto missing = TemplateLibrary::FromFiles(
      {{"t.json", R"({"id":"t","op_class":"x","title":"","architecture":"","dtypes":[],
                      "conditions":[],"params":{}})"},
       {"t.py", "x = {{UNDECLARED}}\n"}});
  CHECK(missing.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(missing.status().message(), "UNDECLARED"));
  auto bad_default = TemplateLibrary::FromFiles(
      {{"t.json", R"({"id":"t","op_class":"x","title":"","architecture":"","dtypes":[],
                      "conditions":[],"params":{"B":{"kind":"knob","type":"pow2","min":1,
                      "max":8,"default":3}}})"},
       {"t.py", "x = {{B}}\n"}});
  CHECK(bad_default.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad_default.status().message(), "t.json"));
  CHECK(TemplateLibrary::FromDirectory("/nonexistent").status().code() ==
        absl::StatusCode::kNotFound);
  auto bad_language = TemplateLibrary::FromFiles(
      {{"t.json", R"({"id":"t","op_class":"x","language":"opencl","title":"",
                      "architecture":"","dtypes":[],"conditions":[],"params":{}})"},
       {"t.py", "x = 1\n"}});
  CHECK(bad_language.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad_language.status().message(),
                          "t.json: language must be \"triton\" or \"cuda\", got \"opencl\""));
}

TEST_CASE("Templates: the CUDA template gemm_cutlass_tf32x3 renders its knobs into C++") {
  auto lib = Lib();
  const TemplateInfo* t = lib->Find("gemm_cutlass_tf32x3");
  REQUIRE(t != nullptr);
  CHECK(t->language == "cuda");
  CHECK(t->dtypes == std::vector<std::string>{"float32"});
  auto src = lib->Render("gemm_cutlass_tf32x3", {});
  REQUIRE(src.ok());
  CHECK(absl::StartsWith(*src, "# kagent-template: gemm_cutlass_tf32x3\n"));
  CHECK_FALSE(absl::StrContains(*src, "{{"));
  CHECK(absl::StrContains(*src, "constexpr char kTile[] = \"128x128x32_32x64x32\";"));
  CHECK(absl::StrContains(*src, "/*Stages=*/3,"));
  CHECK(absl::StrContains(*src, "GemmIdentityThreadblockSwizzle<1>"));
  CHECK(absl::StrContains(*src, "__global__ void kagent_gemm_tf32x3_kernel("));
  CHECK(absl::StrContains(*src, "load_inline("));
  CHECK(absl::StrContains(*src, "class ModelNew(nn.Module)"));
  // Not Triton: nothing for the Triton source reader.
  CHECK_FALSE(absl::StrContains(*src, "@triton.jit"));

  CHECK(absl::StrContains(*src, "constexpr int kSplitK = 1;"));
  auto other = lib->Render("gemm_cutlass_tf32x3", {{"TILE", "64x64x16_32x32x16"},
                                                   {"num_stages", "6"},
                                                   {"SWIZZLE", "4"},
                                                   {"SPLIT_K", "66"}});
  REQUIRE(other.ok());
  CHECK(absl::StrContains(*other, "kTile[] = \"64x64x16_32x32x16\";"));
  CHECK(absl::StrContains(*other, "/*Stages=*/6,"));
  CHECK(absl::StrContains(*other, "GemmIdentityThreadblockSwizzle<4>"));
  CHECK(absl::StrContains(*other, "constexpr int kSplitK = 66;"));
  auto m = lib->MatchRender(*other);
  REQUIRE(m.ok());
  CHECK(m->params == std::map<std::string, std::string>{{"TILE", "64x64x16_32x32x16"},
                                                        {"num_stages", "6"},
                                                        {"SWIZZLE", "4"},
                                                        {"SPLIT_K", "66"},
                                                        {"A_EXPR", "A"},
                                                        {"B_EXPR", "B"},
                                                        {"TRIANGLE", "none"},
                                                        {"DIAGONAL", "0"}});
  // Only the generator's tile descriptions, stages 3-8, SWIZZLE a power of two, SPLIT_K
  // 1-512.
  for (const auto& [name, value] : std::vector<std::pair<std::string, std::string>>{
           {"TILE", "128x128x8_32x64x8"}, {"num_stages", "2"}, {"SWIZZLE", "3"},
           {"SPLIT_K", "0"}, {"SPLIT_K", "513"}}) {
    INFO(name << "=" << value);
    CHECK(lib->Render("gemm_cutlass_tf32x3", {{name, value}}).status().code() ==
          absl::StatusCode::kInvalidArgument);
  }
}

TEST_CASE("Templates: the tuner moves a CUDA render's knobs through its params") {
  auto lib = Lib();
  auto src = lib->Render("gemm_cutlass_tf32x3", {});
  REQUIRE(src.ok());
  auto tile = ApplyKnobChanges(*src, {{"tile", "256x64x32_64x32x32"}, {"num_stages", "+2"}},
                               lib.get());
  INFO(tile.status().ToString());
  REQUIRE(tile.ok());
  auto m = lib->MatchRender(tile->source);
  REQUIRE(m.ok());
  CHECK(m->params["TILE"] == "256x64x32_64x32x32");
  CHECK(m->params["num_stages"] == "5");
  REQUIRE(tile->edits.size() == 2);
  CHECK(tile->edits[0].knob == "num_stages");  // the changes' (map) order
  CHECK(tile->edits[0].old_value == 3);
  CHECK(tile->edits[0].new_value == 5);
  CHECK(tile->edits[1].knob == "TILE");
  CHECK(tile->edits[1].old_text == "128x128x32_32x64x32");
  CHECK(tile->edits[1].new_text == "256x64x32_64x32x32");
  CHECK(tile->edits[1].where == "param of cuda template gemm_cutlass_tf32x3");

  auto bad_tile = ApplyKnobChanges(*src, {{"TILE", "96x96x32_32x32x32"}}, lib.get());
  CHECK(bad_tile.status().code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(bad_tile.status().message(), "not one of {128x128x16_32x64x16"));
  auto unknown = ApplyKnobChanges(*src, {{"BLOCK_M", "x2"}}, lib.get());
  CHECK(unknown.status().code() == absl::StatusCode::kNotFound);
  CHECK(absl::StrContains(unknown.status().message(), "its knobs: TILE, num_stages, SWIZZLE"));
  auto stays = ApplyKnobChanges(*src, {{"SWIZZLE", "/2"}}, lib.get());
  CHECK(stays.status().code() == absl::StatusCode::kFailedPrecondition);
  auto clamped = ApplyKnobChanges(*src, {{"num_stages", "x4"}}, lib.get());
  REQUIRE(clamped.ok());
  CHECK(clamped->edits[0].new_value == 8);
  CHECK(absl::StrContains(clamped->edits[0].note, "clamped"));
  // An edited render is no render: the Triton path, which finds no Triton kernel.
  CHECK_FALSE(ApplyKnobChanges(*src + "# edited\n", {{"num_stages", "+1"}}, lib.get()).ok());
}

// A one-template library {t.json, t.py} with params B (pow2 knob, default 4) and N (int
// shape, default 7), plus `extra` files (partials are "partials/<name>.py").
absl::StatusOr<std::shared_ptr<const TemplateLibrary>> IncludeLib(
    const std::string& py, const std::map<std::string, std::string>& extra = {}) {
  std::map<std::string, std::string> files = {
      {"t.json", R"({"id":"t","op_class":"x","title":"","architecture":"","dtypes":[],
                     "conditions":[],"params":{
                       "B":{"kind":"knob","type":"pow2","min":1,"max":64,"default":4},
                       "N":{"kind":"shape","type":"int","min":0,"max":99,"default":7}}})"},
      {"t.py", py}};
  files.insert(extra.begin(), extra.end());
  return TemplateLibrary::FromFiles(files);
}

TEST_CASE("Templates: an include line is replaced by the partial, indented like it") {
  const std::map<std::string, std::string> partials = {
      {"partials/step.py", "a = {{B}}\nif a:\n    b = a * {{N}}\n\nc = 1\n"},
      {"partials/tail.py", "return c\n"}};
  auto lib = IncludeLib(
      "def f():\n"
      "    for i in range(3):\n"
      "        {{> step}}\n"
      "    x = {{N}}\n"
      "{{>  tail }}\n"
      "    {{> tail}}",  // the last line, without a newline
      partials);
  REQUIRE(lib.ok());
  auto out = (*lib)->Render("t", {{"B", "16"}});
  REQUIRE(out.ok());
  // Every partial line gets the include's indentation, except the empty one; the
  // placeholders inside the partial take the template's values.
  CHECK(*out ==
        "def f():\n"
        "    for i in range(3):\n"
        "        a = 16\n"
        "        if a:\n"
        "            b = a * 7\n"
        "\n"
        "        c = 1\n"
        "    x = 7\n"
        "return c\n"
        "    return c");
  // The library holds the expanded source; the partials are not templates.
  CHECK(absl::StrContains((*lib)->Find("t")->source, "        a = {{B}}\n"));
  CHECK((*lib)->Ids() == std::vector<std::string>{"t"});
  CHECK((*lib)->Find("step") == nullptr);
  CHECK((*lib)->ForOpClass("x").size() == 1);
}

TEST_CASE("Templates: bad includes fail the load, naming the template and the partial") {
  auto message = [](const absl::StatusOr<std::shared_ptr<const TemplateLibrary>>& lib) {
    CHECK(lib.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(lib.status().message());
  };
  std::string unknown = message(IncludeLib("x = 1\n    {{> nope}}\n"));
  CHECK(absl::StrContains(unknown, "t.py:2"));
  CHECK(absl::StrContains(unknown, "unknown partial 'nope'"));
  std::string nested =
      message(IncludeLib("{{> outer}}\n", {{"partials/outer.py", "{{> inner}}\n"},
                                           {"partials/inner.py", "y = 2\n"}}));
  CHECK(absl::StrContains(nested, "t.py:1: partial 'outer'"));
  CHECK(absl::StrContains(nested, "partials cannot include partials"));
  std::string self = message(IncludeLib("{{> self}}\n", {{"partials/self.py", "  {{> self}}\n"}}));
  CHECK(absl::StrContains(self, "partials cannot include partials"));
  std::string undeclared =
      message(IncludeLib("{{> p}}\n", {{"partials/p.py", "z = {{UNDECLARED}}\n"}}));
  CHECK(absl::StrContains(undeclared, "partial 'p'"));
  CHECK(absl::StrContains(undeclared, "{{UNDECLARED}} has no param in t.json"));
  std::string inline_include =
      message(IncludeLib("x = 1  {{> p}}\n", {{"partials/p.py", "y = 2\n"}}));
  CHECK(absl::StrContains(inline_include, "t.py:1: malformed include"));
  std::string empty = message(IncludeLib("{{> p}}\n", {{"partials/p.py", ""}}));
  CHECK(absl::StrContains(empty, "partial 'p' (partials/p.py) is empty"));
  // A partial nobody includes is not checked against any template.
  CHECK(IncludeLib("x = 1\n", {{"partials/unused.py", "{{WHATEVER}}\n"}}).ok());
}

TEST_CASE("Templates: the embedded partials are included and are not templates") {
  auto lib = Lib();
  for (const std::string& id : lib->Ids()) {
    INFO(id);
    CHECK_FALSE(absl::StrContains(lib->Find(id)->source, "{{>"));
    CHECK(lib->Find(id)->op_class != "");
  }
  for (const char* partial : {"grouped_pid", "gemm_k_step", "partials/grouped_pid"}) {
    CHECK(lib->Find(partial) == nullptr);
  }
  CHECK(lib->Ids().size() == 30);
  // gemm_tiled includes grouped_pid inside its kernel at 4 spaces.
  CHECK(absl::StrContains(lib->Find("gemm_tiled")->source,
                          "    num_pid_n = tl.cdiv(N, BLOCK_N)\n"
                          "    num_pid_in_group = GROUP_M * num_pid_n\n"));
}

TEST_CASE("Templates: the source directory matches the embedded copy") {
  const char* src = std::getenv("KAGENT_SOURCE_DIR");
  if (src == nullptr) return;
  auto dir = TemplateLibrary::FromDirectory(std::string(src) + "/engines/heuristic/templates");
  REQUIRE(dir.ok());
  auto lib = Lib();
  REQUIRE((*dir)->Ids() == lib->Ids());
  for (const std::string& id : lib->Ids()) {
    CHECK((*dir)->Find(id)->source == lib->Find(id)->source);
  }
}

// `source` with its first `from` replaced by `to` (which must be there).
std::string Replace(std::string source, const std::string& from, const std::string& to) {
  size_t at = source.find(from);
  REQUIRE(at != std::string::npos);
  return source.replace(at, from.size(), to);
}

TEST_CASE("Templates: MatchRender gives back a render's params, and only for renders") {
  auto lib = Lib();
  for (const std::string& id : lib->Ids()) {
    INFO(id);
    auto src = lib->Render(id, {});
    REQUIRE(src.ok());
    auto m = lib->MatchRender(*src);
    INFO(m.status().ToString());
    REQUIRE(m.ok());
    CHECK(m->info == lib->Find(id));
    std::map<std::string, std::string> defaults;
    for (const TemplateParam& p : m->info->params) defaults[p.name] = p.default_value;
    CHECK(m->params == defaults);
  }
  const std::map<std::string, std::string> given = {
      {"SPLIT_K", "3"}, {"BLOCK_K", "1024"}, {"A_EXPR", "A.t()"}, {"num_stages", "4"}};
  auto split = lib->Render("matvec_split_k", given);
  REQUIRE(split.ok());
  auto m = lib->MatchRender(*split);
  REQUIRE(m.ok());
  for (const auto& [name, value] : given) CHECK(m->params.at(name) == value);
  CHECK(m->params.at("BLOCK_M") == "1");  // the default
  auto floats = lib->Render("elementwise", {{"OP", "softplus"}, {"ALPHA", "0.2"}, {"BETA", "20"}});
  REQUIRE(floats.ok());
  auto f = lib->MatchRender(*floats);
  REQUIRE(f.ok());
  CHECK(f->params.at("ALPHA") == "0.2");
  CHECK(f->params.at("BETA") == "20.0");
  CHECK(f->params.at("OP") == "softplus");

  // Anything else is not a render: one more line, a value written another way, a value
  // the param refuses, a tile over the bound, the header on other code, no header.
  auto not_render = [&](const std::string& source) {
    return lib->MatchRender(source).status().code() == absl::StatusCode::kInvalidArgument;
  };
  CHECK(not_render(*split + "# a comment\n"));
  CHECK(not_render(Replace(*split, "import torch\n", "import torch  # same code\n")));
  CHECK(not_render(Replace(*split, "SPLIT_K = 3\n", "SPLIT_K = 03\n")));
  CHECK(not_render(Replace(*split, "BLOCK_K = 1024\n", "BLOCK_K = 1000\n")));
  CHECK(not_render(Replace(*split, "SPLIT_K = 3\n", "SPLIT_K = 3; import os\n")));
  auto tile = lib->Render("matvec_multi_row", {{"BLOCK_M", "4"}, {"BLOCK_K", "8192"}});
  REQUIRE(tile.ok());
  REQUIRE(lib->MatchRender(*tile).ok());
  CHECK(not_render(Replace(*tile, "BLOCK_M = 4\n", "BLOCK_M = 8\n")));  // 8 x 8192 > 32768
  CHECK(not_render("# kagent-template: matvec_split_k\nimport torch\n"));
  CHECK(lib->MatchRender("# kagent-template: no_such\n").status().code() ==
        absl::StatusCode::kNotFound);
  CHECK(lib->MatchRender(split->substr(split->find('\n') + 1)).status().code() ==
        absl::StatusCode::kNotFound);
}

TEST_CASE("Templates: a knob move of the tuner on a render is a render at the new value") {
  // What lets the brain offer variants after a knob move on its own first kernel: the
  // tuner's edit of an integer knob of a render is exactly the template rendered with the
  // new value, and the tuner refuses what the library would not render (a tile over
  // max_tile_elements). Every integer knob of every template, doubled (halved at its max).
  auto lib = Lib();
  std::set<std::string> not_renders;
  for (const std::string& id : lib->Ids()) {
    const TemplateInfo* t = lib->Find(id);
    auto src = lib->Render(id, {});
    REQUIRE(src.ok());
    for (const TemplateParam& p : t->params) {
      if (p.kind != "knob" || (p.type != "pow2" && p.type != "int")) continue;
      INFO(id << " " << p.name);
      const int64_t v = std::stoll(p.default_value);
      const bool up = v * 2 <= p.max;
      auto expected = lib->MatchRender(*src)->params;
      expected[p.name] = std::to_string(up ? v * 2 : v / 2);
      auto tuned = ApplyKnobChanges(*src, {{p.name, up ? "x2" : "/2"}}, lib.get());
      INFO(tuned.status().ToString());
      if (!lib->Render(id, expected).ok()) {
        CHECK(tuned.status().code() == absl::StatusCode::kFailedPrecondition);
        continue;
      }
      REQUIRE(tuned.ok());
      auto m = lib->MatchRender(tuned->source);
      if (!m.ok()) {
        not_renders.insert(id + " " + p.name);
        continue;
      }
      CHECK(m->params == expected);
    }
  }
  // scan_rows launches two kernels with {{num_warps}} and {{num_stages}}; the tuner moves
  // them at the primary launch only, so the result is no render (and gets no variants).
  CHECK(absl::StrJoin(not_renders, ", ") == "scan_rows num_stages, scan_rows num_warps");
}

}  // namespace
}  // namespace kagent
