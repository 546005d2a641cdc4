// --llm-agents: which agents ask the LLM, with which model.
#include "engines/llm/llm_agents.h"

#include <catch2/catch.hpp>

namespace kagent {
namespace {

TEST_CASE("llm agents flag: --llm-agents lists the agents and their models", "[llm_agents]") {
  absl::StatusOr<LlmAgents> all = ParseLlmAgents(kAllLlmAgents);
  REQUIRE(all.ok());
  for (const char* agent : {"rewrite", "prescribe", "reflect", "plan", "narrate"}) {
    CHECK(all->Uses(agent));
    CHECK(all->Model(agent).empty());
  }
  absl::StatusOr<LlmAgents> mixed = ParseLlmAgents(" rewrite=qwen-coder-32b , reflect ");
  REQUIRE(mixed.ok());
  CHECK(mixed->Uses("rewrite"));
  CHECK(mixed->Model("rewrite") == "qwen-coder-32b");
  CHECK(mixed->Uses("reflect"));
  CHECK(mixed->Model("reflect").empty());
  CHECK_FALSE(mixed->Uses("prescribe"));
  CHECK_FALSE(mixed->Uses("narrate"));
  absl::StatusOr<LlmAgents> spread = ParseLlmAgents("rewrite=model-a|model-b,narrate");
  REQUIRE(spread.ok());
  CHECK(spread->Model("rewrite") == "model-a|model-b");
  absl::StatusOr<LlmAgents> none = ParseLlmAgents("");
  REQUIRE(none.ok());
  CHECK(none->models.empty());
}

TEST_CASE("llm agents flag: --llm-agents refuses what it does not know", "[llm_agents]") {
  auto message = [](const char* spec) {
    absl::StatusOr<LlmAgents> r = ParseLlmAgents(spec);
    REQUIRE_FALSE(r.ok());
    CHECK(r.status().code() == absl::StatusCode::kInvalidArgument);
    return std::string(r.status().message());
  };
  CHECK_THAT(message("rewrite,judge"), Catch::Contains("unknown agent 'judge'; the agents are rewrite,"));
  CHECK_THAT(message("reflect,reflect=m"), Catch::Contains("'reflect' is listed twice"));
  CHECK_THAT(message("rewrite,,reflect"), Catch::Contains("empty entry"));
  CHECK_THAT(message("prescribe="), Catch::Contains("names no model"));
  CHECK_THAT(message("reflect=a|b"), Catch::Contains("only the rewrite takes several models"));
  CHECK_THAT(message("rewrite=a||b"), Catch::Contains("empty model between '|'"));
}

}  // namespace
}  // namespace kagent
