// Cassettes: record against a loopback server, replay with the server stopped.
#include "common/llm/cassette.h"

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <unistd.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/llm/http_llm_client.h"
#include "common/llm/sha256.h"
#include "common/llm/testing/fake_llm_server.h"

namespace kagent::llm {
namespace {

namespace fs = std::filesystem;
using testing::FakeLlmServer;
using testing::OpenAiError;
using testing::OpenAiReply;
using testing::WireFormat;

constexpr char kKey[] = "sk-cassette-SECRET-abcdef0123";

fs::path TempFile(const std::string& name) {
  fs::path p = fs::temp_directory_path() / absl::StrCat("kagent_llm_", name, "_", ::getpid());
  fs::remove(p);
  return p;
}

std::string ReadAll(const fs::path& p) {
  std::ifstream in(p);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

ChatRequest Ask(const std::string& text) {
  ChatRequest r;
  r.system = "sys";
  r.messages.push_back({Role::kUser, text});
  return r;
}

TEST_CASE("SHA-256 matches the FIPS test vectors", "[cassette]") {
  CHECK(Sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
  CHECK(Sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
  CHECK(Sha256Hex("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq") ==
        "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
  CHECK(Sha256Hex(std::string(1000000, 'a')) ==
        "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

TEST_CASE("the request hash ignores accounting fields and resolves defaults", "[cassette]") {
  RequestDefaults defaults{.model = "m", .max_tokens = 100, .temperature = 0.2};
  ChatRequest a = Ask("hello");
  ChatRequest b = a;
  b.model = "m";
  b.max_tokens = 100;
  b.temperature = 0.2 + 1e-12;
  b.job_id = "job-9";
  b.tenant = "acme";
  b.timeout = absl::Seconds(3);
  CHECK(RequestHash(a, defaults) == RequestHash(b, defaults));
  ChatRequest c = a;
  c.messages[0].content = "hello!";
  CHECK(RequestHash(a, defaults) != RequestHash(c, defaults));
  ChatRequest d = a;
  d.model = "other";
  CHECK(RequestHash(a, defaults) != RequestHash(d, defaults));
}

TEST_CASE("record against the server, then replay with the server stopped", "[cassette]") {
  const fs::path path = TempFile("cassette.jsonl");
  auto server_or = FakeLlmServer::Start(WireFormat::kOpenAi);
  REQUIRE(server_or.ok());
  auto server = *std::move(server_or);
  server->Enqueue(OpenAiReply("first answer", 11, 3, "served"));
  server->Enqueue(OpenAiReply("second answer", 12, 4, "served"));
  server->Enqueue(OpenAiError(400, "refused"));
  server->Enqueue(OpenAiReply("other answer", 13, 5, "served"));

  RequestDefaults defaults{.model = "m", .max_tokens = 64};
  {
    HttpLlmClientOptions options;
    options.base_url = server->base_url();
    options.model = "m";
    options.api_key = kKey;
    options.default_max_tokens = 64;
    std::shared_ptr<LlmClient> http = MakeOpenAiClient(options);
    auto recorder = CassetteLlmClient::Record(http, path.string(), defaults);
    REQUIRE(recorder.ok());
    CHECK((*recorder)->Chat(Ask("q1")).value().content == "first answer");
    CHECK((*recorder)->Chat(Ask("q1")).value().content == "second answer");  // same request
    CHECK(absl::IsInvalidArgument((*recorder)->Chat(Ask("bad")).status()));
    CHECK((*recorder)->Chat(Ask("q2")).value().content == "other answer");
    CHECK((*recorder)->size() == 4);
  }
  server->Stop();
  const std::string recorded = ReadAll(path);
  CHECK(recorded.find(kKey) == std::string::npos);
  CHECK(absl::StrContains(recorded, "\"hash\""));
  CHECK(absl::StrContains(recorded, "\"q1\""));

  auto replay = CassetteLlmClient::Replay(path.string(), defaults);
  REQUIRE(replay.ok());
  CHECK((*replay)->size() == 4);
  ChatRequest q1 = Ask("q1");
  q1.job_id = "a-different-job";  // not part of the hash
  auto r1 = (*replay)->Chat(q1);
  REQUIRE(r1.ok());
  CHECK(r1->content == "first answer");
  CHECK(r1->from_cassette);
  CHECK(r1->usage.input_tokens == 11);
  CHECK(r1->model == "served");
  CHECK((*replay)->Chat(Ask("q1")).value().content == "second answer");
  CHECK((*replay)->Chat(Ask("q1")).value().content == "second answer");  // the last repeats
  auto bad = (*replay)->Chat(Ask("bad"));
  CHECK(absl::IsInvalidArgument(bad.status()));
  CHECK(absl::StrContains(bad.status().message(), "refused"));
  CHECK((*replay)->Chat(Ask("q2")).value().content == "other answer");

  auto miss = (*replay)->Chat(Ask("never recorded"));
  CHECK(absl::IsNotFound(miss.status()));
  CHECK(absl::StrContains(miss.status().message(),
                          RequestHash(Ask("never recorded"), defaults)));
  fs::remove(path);
}

TEST_CASE("replay reports missing and corrupt cassettes", "[cassette]") {
  const fs::path path = TempFile("corrupt.jsonl");
  CHECK(absl::IsNotFound(CassetteLlmClient::Replay(path.string(), {}).status()));
  {
    std::ofstream(path) << R"({"hash":"h","response":{"content":"x"}})" << "\n"
                        << "\n"
                        << R"({"hash":"h2","response":{"content":5}})" << "\n";
  }
  auto r = CassetteLlmClient::Replay(path.string(), {});
  CHECK(absl::IsInvalidArgument(r.status()));
  CHECK(absl::StrContains(r.status().message(), "line 3"));
  fs::remove(path);
}

TEST_CASE("cassette modes parse", "[cassette]") {
  CHECK(ParseCassetteMode("").value() == CassetteMode::kOff);
  CHECK(ParseCassetteMode("Record").value() == CassetteMode::kRecord);
  CHECK(ParseCassetteMode("replay").value() == CassetteMode::kReplay);
  CHECK(absl::IsInvalidArgument(ParseCassetteMode("rewind").status()));
}

}  // namespace
}  // namespace kagent::llm
