// SetUpOptimizationManager with --llm-config: the endpoint is probed before the service
// starts (common/llm/endpoint_probe.h), against a loopback server in vLLM's shape.
#include "services/optimization_manager/optimization_manager_setup.h"

#include <catch2/catch.hpp>

#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <memory>
#include <string>

#include "absl/strings/str_cat.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/server.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

using llm::testing::FakeLlmServer;
using llm::testing::ModelList;
using llm::testing::WireFormat;

// The configuration in a temporary file, removed at the end of the scope.
struct ConfigFile {
  std::string path;
  explicit ConfigFile(const nlohmann::json& config) {
    char name[] = "/tmp/kagent_om_llm_XXXXXX";
    const int fd = mkstemp(name);
    REQUIRE(fd >= 0);
    close(fd);
    path = name;
    std::ofstream(path) << config.dump();
  }
  ~ConfigFile() { std::remove(path.c_str()); }
};

// Sets the service up on a loopback host as kagent-optimization-manager does.
absl::Status SetUp(const std::string& config_path) {
  ServerOptions server_options;
  server_options.listen = "127.0.0.1:0";
  server_options.metrics_listen = "";
  server_options.drain_seconds = 0;
  auto host = ServiceHost::Create(server_options, nullptr);
  REQUIRE(host.ok());
  ServiceContext ctx;
  ctx.server_options = &server_options;
  ctx.host = host->get();
  OptimizationManagerSetupOptions options;
  options.llm_config = config_path;
  return SetUpOptimizationManager(options, ctx);
}

nlohmann::json Config(const FakeLlmServer& server, const std::string& model) {
  return {{"provider", "openai"}, {"base_url", server.base_url()}, {"model", model}};
}

TEST_CASE("optimization manager setup probes the LLM endpoint", "[llm][probe]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  server->SetModelsResponse(ModelList(WireFormat::kOpenAi, {"Qwen/Qwen3-Coder-30B-A3B-Instruct"}));

  SECTION("the model is served: the service starts") {
    ConfigFile config(Config(*server, "Qwen/Qwen3-Coder-30B-A3B-Instruct"));
    CHECK(SetUp(config.path).ok());
    REQUIRE(server->request_count() == 1);
    CHECK(server->requests()[0].path == "/v1/models");
  }
  SECTION("a wrong model is a refusal to start naming the endpoint and the model") {
    ConfigFile config(Config(*server, "Qwen/Qwen3-Coder"));
    absl::Status s = SetUp(config.path);
    CHECK(absl::IsNotFound(s));
    CHECK_THAT(std::string(s.message()),
               Catch::StartsWith(absl::StrCat("LLM brain from ", config.path, ": the LLM endpoint ",
                                              server->base_url(), "/v1/models does not serve "
                                              "model 'Qwen/Qwen3-Coder'")));
    CHECK_THAT(std::string(s.message()), Catch::Contains("Qwen/Qwen3-Coder-30B-A3B-Instruct"));
  }
  SECTION("\"probe\": false skips it, for an endpoint without the route") {
    auto bare = FakeLlmServer::Start(WireFormat::kOpenAi).value();  // GET /v1/models: 404
    nlohmann::json c = Config(*bare, "m");
    ConfigFile with_probe(c);
    CHECK(absl::IsFailedPrecondition(SetUp(with_probe.path)));
    c["probe"] = false;
    ConfigFile without(c);
    CHECK(SetUp(without.path).ok());
    CHECK(bare->request_count() == 1);  // only the first setup's probe
  }
}

}  // namespace
}  // namespace kagent
