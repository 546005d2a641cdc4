// The start-up probe against the loopback FakeLlmServer's GET /v1/models, in the OpenAI
// (vLLM, SGLang) and Anthropic shapes, and against a port nothing listens on.
#include "common/llm/endpoint_probe.h"

#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/llm/testing/fake_llm_server.h"

namespace kagent::llm {
namespace {

using testing::AnthropicError;
using testing::FakeLlmServer;
using testing::ModelList;
using testing::OpenAiError;
using testing::WireFormat;

LlmConfig ConfigFor(const FakeLlmServer& server, WireFormat f, const std::string& model) {
  LlmConfig c;
  c.provider = f == WireFormat::kOpenAi ? "openai" : "anthropic";
  c.base_url = absl::StrCat(server.base_url(), "/v1/");  // normalized like the client's
  c.model = model;
  return c;
}

TEST_CASE("probe: the served model passes, and the request is a GET with the key", "[llm][probe]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  server->SetModelsResponse(ModelList(WireFormat::kOpenAi, {"Qwen/Qwen2.5-Coder-32B-Instruct"}));
  ::setenv("KAGENT_PROBE_TEST_KEY", "sk-probe-secret", 1);
  LlmConfig c = ConfigFor(*server, WireFormat::kOpenAi, "Qwen/Qwen2.5-Coder-32B-Instruct");
  c.api_key_env = "KAGENT_PROBE_TEST_KEY";
  REQUIRE(ProbeLlmEndpoint(c).ok());
  auto received = server->requests();
  REQUIRE(received.size() == 1);
  CHECK(received[0].method == "GET");
  CHECK(received[0].path == "/v1/models");
  CHECK(received[0].Header("Authorization") == "Bearer sk-probe-secret");
  ::unsetenv("KAGENT_PROBE_TEST_KEY");
}

TEST_CASE("probe: a model the endpoint does not serve is NOT_FOUND listing what it serves",
          "[llm][probe]") {
  auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
  server->SetModelsResponse(ModelList(WireFormat::kOpenAi, {"meta-llama/Llama-3.1-8B", "qwen3"}));
  absl::Status s = ProbeLlmEndpoint(ConfigFor(*server, WireFormat::kOpenAi, "qwen3-coder"));
  CHECK(absl::IsNotFound(s));
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith(absl::StrCat("the LLM endpoint ", server->base_url(), "/v1/models "
                                            "does not serve model 'qwen3-coder'")));
  CHECK_THAT(std::string(s.message()), Catch::Contains("it serves: meta-llama/Llama-3.1-8B, qwen3"));
}

TEST_CASE("probe: Anthropic's list, its aliases, and its key header", "[llm][probe]") {
  auto server = FakeLlmServer::Start(WireFormat::kAnthropic).value();
  server->SetModelsResponse(
      ModelList(WireFormat::kAnthropic, {"claude-sonnet-4-5-20250929", "claude-haiku-4-5-20251001"}));
  LlmConfig c = ConfigFor(*server, WireFormat::kAnthropic, "claude-sonnet-4-5");
  CHECK(ProbeLlmEndpoint(c).ok());  // the alias of a dated id
  c.model = "claude-haiku-4-5-20251001";
  CHECK(ProbeLlmEndpoint(c).ok());
  c.model = "claude-opus-9";
  CHECK(absl::IsNotFound(ProbeLlmEndpoint(c)));
  auto received = server->requests();
  REQUIRE_FALSE(received.empty());
  CHECK(received[0].path == "/v1/models?limit=1000");
  CHECK(received[0].Header("anthropic-version") == "2023-06-01");
}

TEST_CASE("probe: a refused key, a missing route, a server error", "[llm][probe]") {
  SECTION("401 (vLLM --api-key)") {
    auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
    server->SetModelsResponse(OpenAiError(401, "Unauthorized"));
    absl::Status s = ProbeLlmEndpoint(ConfigFor(*server, WireFormat::kOpenAi, "m"));
    CHECK(absl::IsUnauthenticated(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("refused the key (HTTP 401): invalid_request_error: Unauthorized"));
  }
  SECTION("403 (Anthropic)") {
    auto server = FakeLlmServer::Start(WireFormat::kAnthropic).value();
    server->SetModelsResponse(AnthropicError(403, "permission_error", "no access"));
    CHECK(absl::IsPermissionDenied(ProbeLlmEndpoint(ConfigFor(*server, WireFormat::kAnthropic, "m"))));
  }
  SECTION("no GET /v1/models: the message says how to skip the probe") {
    auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();  // no models response: 404
    absl::Status s = ProbeLlmEndpoint(ConfigFor(*server, WireFormat::kOpenAi, "m"));
    CHECK(absl::IsFailedPrecondition(s));
    CHECK_THAT(std::string(s.message()), Catch::Contains("has no GET /v1/models (HTTP 404)"));
    CHECK_THAT(std::string(s.message()), Catch::Contains("set \"probe\": false"));
  }
  SECTION("503") {
    auto server = FakeLlmServer::Start(WireFormat::kOpenAi).value();
    server->SetModelsResponse(OpenAiError(503, "loading", "server_error"));
    CHECK(absl::IsUnavailable(ProbeLlmEndpoint(ConfigFor(*server, WireFormat::kOpenAi, "m"))));
  }
}

TEST_CASE("probe: an endpoint nothing listens on is unreachable", "[llm][probe]") {
  // A port that was free a moment ago.
  const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) == 0);
  socklen_t len = sizeof(addr);
  REQUIRE(::getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len) == 0);
  const int port = ntohs(addr.sin_port);
  ::close(fd);
  LlmConfig c;
  c.provider = "openai";
  c.base_url = absl::StrCat("http://127.0.0.1:", port);
  c.model = "m";
  absl::Status s = ProbeLlmEndpoint(c);
  CHECK(absl::IsUnavailable(s));
  CHECK_THAT(std::string(s.message()),
             Catch::StartsWith(absl::StrCat("the LLM endpoint http://127.0.0.1:", port,
                                            "/v1/models is unreachable")));
}

TEST_CASE("probe: the configuration key", "[llm][probe]") {
  auto on = ParseLlmConfigJson(R"({"provider": "openai", "base_url": "http://h", "model": "m"})");
  REQUIRE(on.ok());
  CHECK(on->probe);
  auto off = ParseLlmConfigJson(
      R"({"provider": "openai", "base_url": "http://h", "model": "m", "probe": false})");
  REQUIRE(off.ok());
  CHECK_FALSE(off->probe);
  auto bad = ParseLlmConfigJson(
      R"({"provider": "openai", "base_url": "http://h", "model": "m", "probe": "no"})");
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK_THAT(std::string(bad.status().message()), Catch::Contains("probe must be true or false"));
}

}  // namespace
}  // namespace kagent::llm
