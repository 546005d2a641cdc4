// Prompt templates: substitution, built-ins, overrides, and docs/llm.md staying true.
#include "common/llm/prompt_templates.h"

#include <catch2/catch.hpp>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>
#include <algorithm>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"

namespace kagent::llm {
namespace {

namespace fs = std::filesystem;

std::string SourceDir() {
  const char* env = std::getenv("KAGENT_SOURCE_DIR");
  return env != nullptr ? env : KAGENT_LLM_SOURCE_DIR;
}

fs::path TempDir(const std::string& name) {
  fs::path dir = fs::temp_directory_path() / absl::StrCat("kagent_llm_", name, "_", ::getpid());
  fs::remove_all(dir);
  fs::create_directories(dir);
  return dir;
}

TEST_CASE("placeholders are found and substituted in one pass", "[prompts]") {
  const std::string text = "Hi {{name}}, {{ name }} runs on {{gpu}}. Keep {{}} and {{ a.b }}.";
  CHECK(TemplatePlaceholders(text) == std::vector<std::string>{"name", "gpu"});
  auto out = RenderTemplate("t", text, {{"name", "K{{gpu}}"}, {"gpu", "H200"}, {"extra", "x"}});
  REQUIRE(out.ok());
  // The value's own braces are not expanded again.
  CHECK(*out == "Hi K{{gpu}}, K{{gpu}} runs on H200. Keep {{}} and {{ a.b }}.");
}

TEST_CASE("a missing value is INVALID_ARGUMENT naming the placeholder", "[prompts]") {
  auto out = RenderTemplate("prescribe", "Fix {{kernel_source}} for {{gpu}}", {{"gpu", "H200"}});
  CHECK(absl::IsInvalidArgument(out.status()));
  CHECK(absl::StrContains(out.status().message(), "{{kernel_source}}"));
  CHECK(absl::StrContains(out.status().message(), "prescribe"));
}

TEST_CASE("the built-in templates are embedded", "[prompts]") {
  const auto names = PromptLibrary::BuiltinNames();
  for (const char* want :
       {"first_kernel", "judge_narrative", "prescribe", "reflect", "rewrite_kernel", "system"}) {
    INFO(want);
    CHECK(std::find(names.begin(), names.end(), want) != names.end());
  }
  PromptLibrary library;
  auto text = library.Template("rewrite_kernel.md");
  REQUIRE(text.ok());
  CHECK(absl::StrContains(*text, "{{kernel_source}}"));
  CHECK(absl::IsNotFound(library.Template("no_such_prompt").status()));
  CHECK(absl::IsInvalidArgument(library.Template("../etc/passwd").status()));
}

TEST_CASE("an override directory replaces a built-in of the same name", "[prompts]") {
  const fs::path dir = TempDir("prompts");
  {
    std::ofstream(dir / "reflect.md") << "Round {{round}}: was it {{verdict}}?";
    std::ofstream(dir / "custom.md") << "Custom {{x}}";
  }
  PromptLibrary library(dir.string());
  CHECK(library.IsOverridden("reflect"));
  CHECK_FALSE(library.IsOverridden("prescribe"));
  auto r = library.Render("reflect", {{"round", "3"}, {"verdict", "right"}});
  REQUIRE(r.ok());
  CHECK(*r == "Round 3: was it right?");
  CHECK(library.Render("custom", {{"x", "y"}}).value() == "Custom y");
  // Not overridden: the built-in.
  CHECK(absl::StrContains(library.Template("prescribe").value(), "{{candidate_patterns}}"));
  fs::remove_all(dir);
}

TEST_CASE("docs/llm.md documents every built-in template and placeholder", "[prompts]") {
  std::ifstream in(fs::path(SourceDir()) / "docs" / "llm.md");
  REQUIRE(in.good());
  std::stringstream doc;
  doc << in.rdbuf();
  PromptLibrary library;
  for (const std::string& name : PromptLibrary::BuiltinNames()) {
    INFO(name);
    CHECK(absl::StrContains(doc.str(), absl::StrCat("`", name, ".md`")));
    for (const std::string& placeholder : TemplatePlaceholders(library.Template(name).value())) {
      INFO(placeholder);
      CHECK(absl::StrContains(doc.str(), absl::StrCat("`{{", placeholder, "}}`")));
    }
  }
}

}  // namespace
}  // namespace kagent::llm
