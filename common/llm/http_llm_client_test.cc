// Loopback protocol tests: HttpLlmClient against a real HTTP/1.1 server on 127.0.0.1
// that speaks the OpenAI and Anthropic wire formats, including every failure mode.
#include "common/llm/http_llm_client.h"

#include <catch2/catch.hpp>

#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/time/clock.h"
#include "common/llm/endpoint_failure.h"
#include "common/llm/testing/fake_llm_server.h"
#include "common/logging.h"

namespace kagent::llm {
namespace {

using testing::AnthropicError;
using testing::AnthropicReply;
using testing::FakeLlmServer;
using testing::OpenAiError;
using testing::OpenAiReply;
using testing::ScriptedResponse;
using testing::WireFormat;

constexpr char kKey[] = "sk-test-SECRET-0123456789abcdef";

// Short timings so the whole suite stays fast; real time throughout.
HttpLlmClientOptions FastOptions(const FakeLlmServer& server) {
  HttpLlmClientOptions o;
  o.base_url = server.base_url();
  o.model = "test-model";
  o.api_key = kKey;
  o.default_max_tokens = 256;
  o.timeout = absl::Seconds(5);
  o.connect_timeout = absl::Seconds(2);
  o.retry.max_attempts = 3;
  o.retry.initial_backoff = absl::Milliseconds(10);
  o.retry.max_backoff = absl::Milliseconds(40);
  o.retry.total_timeout = absl::Seconds(10);
  o.breaker.failure_threshold = 100;  // out of the way unless a test wants it
  return o;
}

ChatRequest Hello() {
  ChatRequest r;
  r.system = "You are terse.";
  r.messages.push_back({Role::kUser, "Say hello."});
  return r;
}

std::unique_ptr<FakeLlmServer> StartServer(WireFormat format) {
  auto server = FakeLlmServer::Start(format);
  REQUIRE(server.ok());
  return *std::move(server);
}

// Captures every log line for the life of the object.
class LogCapture {
 public:
  LogCapture() {
    SetLogSink([this](const std::string& line) {
      std::lock_guard<std::mutex> lock(mu_);
      lines_.push_back(line);
    });
  }
  ~LogCapture() { SetLogSink(nullptr); }
  std::vector<std::string> lines() {
    std::lock_guard<std::mutex> lock(mu_);
    return lines_;
  }

 private:
  std::mutex mu_;
  std::vector<std::string> lines_;
};

TEST_CASE("openai: success sends the wire format and parses the reply", "[llm][openai]") {
  auto server = StartServer(WireFormat::kOpenAi);
  server->Enqueue(OpenAiReply("Hello!", 21, 3, "served-model", "stop"));
  HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());

  ChatRequest request = Hello();
  request.temperature = 0.25;
  request.max_tokens = 99;
  request.job_id = "job-1";
  auto reply = client.Chat(request);
  REQUIRE(reply.ok());
  CHECK(reply->content == "Hello!");
  CHECK(reply->model == "served-model");
  CHECK(reply->stop_reason == "stop");
  CHECK(reply->usage.input_tokens == 21);
  CHECK(reply->usage.output_tokens == 3);
  CHECK(reply->attempts == 1);

  auto received = server->requests();
  REQUIRE(received.size() == 1);
  const auto& req = received[0];
  CHECK(req.method == "POST");
  CHECK(req.path == "/v1/chat/completions");
  CHECK(req.Header("Authorization") == std::string("Bearer ") + kKey);
  CHECK(absl::StartsWith(req.Header("Content-Type"), "application/json"));
  CHECK(req.Header("x-api-key").empty());
  auto body = req.Json();
  REQUIRE(body.is_object());
  CHECK(body["model"] == "test-model");
  CHECK(body["max_tokens"] == 99);
  CHECK(body["temperature"] == 0.25);
  REQUIRE(body["messages"].size() == 2);
  CHECK(body["messages"][0]["role"] == "system");
  CHECK(body["messages"][0]["content"] == "You are terse.");
  CHECK(body["messages"][1]["role"] == "user");
  CHECK(body["messages"][1]["content"] == "Say hello.");
  // Accounting keys never leave the process.
  CHECK(req.body.find("job-1") == std::string::npos);
}

TEST_CASE("openai: a base URL ending in /v1 and no key", "[llm][openai]") {
  auto server = StartServer(WireFormat::kOpenAi);
  server->Enqueue(OpenAiReply("ok"));
  HttpLlmClientOptions options = FastOptions(*server);
  options.base_url = server->base_url() + "/v1/";
  options.api_key.clear();  // local vLLM / llama.cpp servers need none
  HttpLlmClient client(options, MakeOpenAiProtocol());
  auto reply = client.Chat(Hello());
  REQUIRE(reply.ok());
  auto received = server->requests();
  REQUIRE(received.size() == 1);
  CHECK(received[0].path == "/v1/chat/completions");
  CHECK(received[0].Header("Authorization").empty());
}

TEST_CASE("anthropic: success sends the wire format and parses content blocks",
          "[llm][anthropic]") {
  auto server = StartServer(WireFormat::kAnthropic);
  ScriptedResponse two_blocks;
  two_blocks.body = R"({"id":"msg_1","type":"message","role":"assistant","model":"claude-test",
    "content":[{"type":"text","text":"Hello, "},{"type":"tool_use","id":"t","name":"x","input":{}},
               {"type":"text","text":"world."}],
    "stop_reason":"end_turn","usage":{"input_tokens":30,"output_tokens":4}})";
  server->Enqueue(two_blocks);
  HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());

  ChatRequest request = Hello();
  request.messages.push_back({Role::kAssistant, "Hello."});
  request.messages.push_back({Role::kUser, "Again."});
  auto reply = client.Chat(request);
  REQUIRE(reply.ok());
  CHECK(reply->content == "Hello, world.");
  CHECK(reply->model == "claude-test");
  CHECK(reply->stop_reason == "end_turn");
  CHECK(reply->usage.input_tokens == 30);
  CHECK(reply->usage.output_tokens == 4);

  auto received = server->requests();
  REQUIRE(received.size() == 1);
  const auto& req = received[0];
  CHECK(req.path == "/v1/messages");
  CHECK(req.Header("x-api-key") == kKey);
  CHECK(req.Header("anthropic-version") == "2023-06-01");
  CHECK(req.Header("Authorization").empty());
  auto body = req.Json();
  CHECK(body["system"] == "You are terse.");
  CHECK(body["max_tokens"] == 256);  // the client default
  CHECK(body["model"] == "test-model");
  REQUIRE(body["messages"].size() == 3);
  CHECK(body["messages"][0]["role"] == "user");
  CHECK(body["messages"][1]["role"] == "assistant");
  CHECK(!body.contains("temperature"));
}

TEST_CASE("anthropic: the first message must come from the user", "[llm][anthropic]") {
  auto server = StartServer(WireFormat::kAnthropic);
  HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
  ChatRequest request;
  request.messages.push_back({Role::kAssistant, "I start."});
  auto reply = client.Chat(request);
  CHECK(absl::IsInvalidArgument(reply.status()));
  CHECK(server->request_count() == 0);
}

TEST_CASE("error bodies map to precise statuses and are not retried", "[llm][errors]") {
  SECTION("openai 400") {
    auto server = StartServer(WireFormat::kOpenAi);
    server->Enqueue(OpenAiError(400, "max_tokens is too large"));
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsInvalidArgument(reply.status()));
    CHECK(absl::StrContains(reply.status().message(), "max_tokens is too large"));
    CHECK(absl::StrContains(reply.status().message(), "HTTP 400"));
    CHECK(server->request_count() == 1);
  }
  SECTION("openai 401") {
    auto server = StartServer(WireFormat::kOpenAi);
    server->Enqueue(OpenAiError(401, "Incorrect API key provided", "invalid_api_key"));
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsUnauthenticated(reply.status()));
    CHECK(absl::StrContains(reply.status().message(), "Incorrect API key provided"));
    CHECK(server->request_count() == 1);
  }
  SECTION("anthropic 401") {
    auto server = StartServer(WireFormat::kAnthropic);
    server->Enqueue(AnthropicError(401, "authentication_error", "invalid x-api-key"));
    HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsUnauthenticated(reply.status()));
    CHECK(absl::StrContains(reply.status().message(), "authentication_error: invalid x-api-key"));
    CHECK(server->request_count() == 1);
  }
  SECTION("anthropic 400") {
    auto server = StartServer(WireFormat::kAnthropic);
    server->Enqueue(AnthropicError(400, "invalid_request_error", "messages: roles must alternate"));
    HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsInvalidArgument(reply.status()));
    CHECK(absl::StrContains(reply.status().message(), "roles must alternate"));
  }
  SECTION("a 2xx body that is not the API's shape is INTERNAL") {
    auto server = StartServer(WireFormat::kOpenAi);
    ScriptedResponse odd;
    odd.body = R"({"hello":"world"})";
    server->Enqueue(odd);
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsInternal(reply.status()));
    CHECK(server->request_count() == 1);
  }
}

TEST_CASE("error bodies: each provider's forms give one readable message", "[llm][errors]") {
  auto openai = MakeOpenAiProtocol();
  auto anthropic = MakeAnthropicProtocol();
  for (const auto* p : {openai.get(), anthropic.get()}) {
    CHECK(p->DecodeErrorMessage(R"({"error":{"type":"rate_limit","message":"slow down"}})") ==
          "rate_limit: slow down");
    CHECK(p->DecodeErrorMessage(R"({"error":{"message":"bad key"}})") == "bad key");
    CHECK(p->DecodeErrorMessage(R"({"error":"model not loaded"})") == "model not loaded");
    CHECK(p->DecodeErrorMessage("upstream timed out") == "upstream timed out");  // not JSON
  }
  // vLLM puts the message at the top level.
  CHECK(openai->DecodeErrorMessage(R"({"object":"error","message":"too long","type":"x"})") ==
        "too long");
  CHECK(openai->DecodeErrorMessage(R"({"error":{"type":"t"},"message":"top"})") == "top");
}

TEST_CASE("429 with Retry-After waits at least that long, then succeeds", "[llm][retry]") {
  auto server = StartServer(WireFormat::kOpenAi);
  server->Enqueue(OpenAiError(429, "Rate limit reached", "rate_limit_error")
                      .WithHeader("Retry-After", "1"));
  server->Enqueue(OpenAiReply("after the wait"));
  HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
  auto reply = client.Chat(Hello());
  REQUIRE(reply.ok());
  CHECK(reply->content == "after the wait");
  CHECK(reply->attempts == 2);
  auto received = server->requests();
  REQUIRE(received.size() == 2);
  CHECK(received[1].received - received[0].received >= absl::Seconds(1));
}

TEST_CASE("anthropic 429 with an HTTP-date Retry-After", "[llm][retry]") {
  auto server = StartServer(WireFormat::kAnthropic);
  // One second ahead; HTTP dates have one-second resolution, so the wait is (0, 2] s.
  const std::string when = absl::FormatTime("%a, %d %b %Y %H:%M:%S GMT",
                                            absl::Now() + absl::Seconds(2), absl::UTCTimeZone());
  server->Enqueue(
      AnthropicError(429, "rate_limit_error", "slow down").WithHeader("retry-after", when));
  server->Enqueue(AnthropicReply("ok"));
  HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
  auto reply = client.Chat(Hello());
  REQUIRE(reply.ok());
  auto received = server->requests();
  REQUIRE(received.size() == 2);
  CHECK(received[1].received - received[0].received >= absl::Milliseconds(900));
}

TEST_CASE("a Retry-After beyond the cap fails at once", "[llm][retry]") {
  auto server = StartServer(WireFormat::kOpenAi);
  server->Enqueue(OpenAiError(429, "come back tomorrow").WithHeader("Retry-After", "86400"));
  HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
  const absl::Time start = absl::Now();
  auto reply = client.Chat(Hello());
  CHECK(absl::IsUnavailable(reply.status()));
  CHECK(absl::StrContains(reply.status().message(), "exceeds the cap"));
  CHECK(absl::Now() - start < absl::Seconds(2));
  CHECK(server->request_count() == 1);
  // The wait asked for travels with the error, for a caller that can wait longer.
  std::optional<absl::Duration> after = RetryAfterOf(reply.status());
  REQUIRE(after.has_value());
  CHECK(*after == absl::Seconds(86400));
  CHECK(ClassifyEndpointFailure(reply.status()) == EndpointFailure::kTransient);
  // A message prefix keeps the code and the payload.
  absl::Status prefixed = PrefixMessage("brain: ", reply.status());
  CHECK(absl::IsUnavailable(prefixed));
  CHECK(absl::StartsWith(prefixed.message(), "brain: "));
  CHECK(RetryAfterOf(prefixed) == after);
}

TEST_CASE("endpoint failures are classified by code", "[llm]") {
  CHECK(ClassifyEndpointFailure(absl::OkStatus()) == EndpointFailure::kNone);
  CHECK(ClassifyEndpointFailure(absl::DeadlineExceededError("t")) == EndpointFailure::kTransient);
  CHECK(ClassifyEndpointFailure(absl::NotFoundError("model")) == EndpointFailure::kPermanent);
  CHECK(ClassifyEndpointFailure(absl::UnauthenticatedError("key")) == EndpointFailure::kPermanent);
  CHECK(ClassifyEndpointFailure(absl::PermissionDeniedError("key")) == EndpointFailure::kPermanent);
  CHECK(ClassifyEndpointFailure(absl::ResourceExhaustedError("budget")) == EndpointFailure::kNone);
  CHECK(ClassifyEndpointFailure(absl::InvalidArgumentError("400")) == EndpointFailure::kNone);
  CHECK(ClassifyEndpointFailure(absl::InternalError("bad body")) == EndpointFailure::kNone);
  // Marked only on request, so a brain's own NOT_FOUND is not taken for the endpoint's.
  absl::Status model = absl::NotFoundError("The model `x` does not exist.");
  CHECK(EndpointFailureOf(model) == EndpointFailure::kNone);
  MarkEndpointFailure(&model);
  CHECK(EndpointFailureOf(model) == EndpointFailure::kPermanent);
  absl::Status down = absl::UnavailableError("connection refused");
  MarkEndpointFailure(&down);
  CHECK(EndpointFailureOf(down) == EndpointFailure::kTransient);
  absl::Status bad = absl::InvalidArgumentError("400");
  MarkEndpointFailure(&bad);
  CHECK(EndpointFailureOf(bad) == EndpointFailure::kNone);
  CHECK(EndpointFailureOf(PrefixMessage("brain: ", model)) == EndpointFailure::kPermanent);
  // A 429 within the cap leaves no Retry-After behind.
  CHECK_FALSE(RetryAfterOf(absl::UnavailableError("x")).has_value());
}

TEST_CASE("5xx then success is retried", "[llm][retry]") {
  SECTION("openai 500, 503, then 200") {
    auto server = StartServer(WireFormat::kOpenAi);
    server->Enqueue(OpenAiError(500, "boom", "server_error"));
    server->Enqueue(OpenAiError(503, "overloaded", "server_error"));
    server->Enqueue(OpenAiReply("third time lucky"));
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    REQUIRE(reply.ok());
    CHECK(reply->content == "third time lucky");
    CHECK(reply->attempts == 3);
    CHECK(server->request_count() == 3);
  }
  SECTION("anthropic 529 overloaded, then 200") {
    auto server = StartServer(WireFormat::kAnthropic);
    server->Enqueue(AnthropicError(529, "overloaded_error", "Overloaded"));
    server->Enqueue(AnthropicReply("ok"));
    HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
    auto reply = client.Chat(Hello());
    REQUIRE(reply.ok());
    CHECK(reply->attempts == 2);
  }
  SECTION("persistent 500 gives up after max_attempts with the last message") {
    auto server = StartServer(WireFormat::kOpenAi);
    server->SetDefault(OpenAiError(502, "bad gateway", "server_error"));
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsUnavailable(reply.status()));
    CHECK(absl::StrContains(reply.status().message(), "bad gateway"));
    CHECK(absl::StrContains(reply.status().message(), "after 3 attempts"));
    CHECK(server->request_count() == 3);
  }
}

TEST_CASE("a response slower than the timeout is DEADLINE_EXCEEDED", "[llm][timeout]") {
  auto server = StartServer(WireFormat::kOpenAi);
  server->SetDefault(OpenAiReply("too late").WithDelay(absl::Seconds(3)));
  HttpLlmClientOptions options = FastOptions(*server);
  options.retry.max_attempts = 2;
  HttpLlmClient client(options, MakeOpenAiProtocol());
  ChatRequest request = Hello();
  request.timeout = absl::Milliseconds(300);  // per-call timeout
  const absl::Time start = absl::Now();
  auto reply = client.Chat(request);
  const absl::Duration took = absl::Now() - start;
  CHECK(absl::IsDeadlineExceeded(reply.status()));
  CHECK(server->request_count() == 2);  // timed out, retried, timed out
  CHECK(took >= absl::Milliseconds(600));
  CHECK(took < absl::Seconds(2));
}

TEST_CASE("a slow first attempt is retried and the second succeeds", "[llm][timeout]") {
  auto server = StartServer(WireFormat::kAnthropic);
  server->Enqueue(AnthropicReply("too late").WithDelay(absl::Seconds(3)));
  server->Enqueue(AnthropicReply("in time"));
  HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
  ChatRequest request = Hello();
  request.timeout = absl::Milliseconds(300);
  auto reply = client.Chat(request);
  REQUIRE(reply.ok());
  CHECK(reply->content == "in time");
}

TEST_CASE("the total timeout caps attempts and sleeps", "[llm][timeout]") {
  auto server = StartServer(WireFormat::kOpenAi);
  server->SetDefault(OpenAiReply("late").WithDelay(absl::Seconds(3)));
  HttpLlmClientOptions options = FastOptions(*server);
  options.retry.max_attempts = 10;
  options.retry.total_timeout = absl::Milliseconds(700);
  options.timeout = absl::Milliseconds(400);
  HttpLlmClient client(options, MakeOpenAiProtocol());
  const absl::Time start = absl::Now();
  auto reply = client.Chat(Hello());
  CHECK(absl::IsDeadlineExceeded(reply.status()));
  CHECK(absl::Now() - start < absl::Milliseconds(1500));
  CHECK(server->request_count() <= 3);
}

TEST_CASE("a truncated body is retried, persistent truncation is UNAVAILABLE",
          "[llm][truncated]") {
  SECTION("truncated then whole") {
    auto server = StartServer(WireFormat::kOpenAi);
    server->Enqueue(OpenAiReply("cut short").WithFault(ScriptedResponse::Fault::kTruncateBody));
    server->Enqueue(OpenAiReply("whole"));
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    REQUIRE(reply.ok());
    CHECK(reply->content == "whole");
    CHECK(reply->attempts == 2);
  }
  SECTION("always truncated") {
    auto server = StartServer(WireFormat::kAnthropic);
    server->SetDefault(
        AnthropicReply("cut short").WithFault(ScriptedResponse::Fault::kTruncateBody));
    HttpLlmClient client(FastOptions(*server), MakeAnthropicProtocol());
    auto reply = client.Chat(Hello());
    CHECK(absl::IsUnavailable(reply.status()));
    CHECK(server->request_count() == 3);
  }
  SECTION("connection closed without a response") {
    auto server = StartServer(WireFormat::kOpenAi);
    server->Enqueue(OpenAiReply("x").WithFault(ScriptedResponse::Fault::kCloseWithoutResponse));
    server->Enqueue(OpenAiReply("second"));
    HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
    auto reply = client.Chat(Hello());
    REQUIRE(reply.ok());
    CHECK(reply->content == "second");
  }
}

TEST_CASE("connection refused is UNAVAILABLE after the retries", "[llm][errors]") {
  auto server = StartServer(WireFormat::kOpenAi);
  HttpLlmClientOptions options = FastOptions(*server);
  server->Stop();  // nothing listens on the port any more
  HttpLlmClient client(options, MakeOpenAiProtocol());
  auto reply = client.Chat(Hello());
  CHECK(absl::IsUnavailable(reply.status()));
}

TEST_CASE("circuit breaker opens, fails fast, then recovers half-open", "[llm][breaker]") {
  auto server = StartServer(WireFormat::kOpenAi);
  HttpLlmClientOptions options = FastOptions(*server);
  options.retry.max_attempts = 1;
  options.breaker.failure_threshold = 2;
  options.breaker.cooldown = absl::Milliseconds(800);  // generous: CI machines are busy
  HttpLlmClient client(options, MakeOpenAiProtocol());

  server->Enqueue(OpenAiError(500, "down", "server_error"));
  server->Enqueue(OpenAiError(500, "down", "server_error"));
  CHECK(absl::IsUnavailable(client.Chat(Hello()).status()));
  CHECK(client.breaker().state() == CircuitBreaker::State::kClosed);
  CHECK(absl::IsUnavailable(client.Chat(Hello()).status()));
  CHECK(client.breaker().state() == CircuitBreaker::State::kOpen);

  // Open: refused without contacting the server.
  auto refused = client.Chat(Hello());
  CHECK(absl::IsUnavailable(refused.status()));
  CHECK(absl::StrContains(refused.status().message(), "circuit breaker"));
  CHECK(absl::StrContains(refused.status().message(), "is open"));
  CHECK(server->request_count() == 2);

  // After the cool-down a failing probe re-opens it...
  absl::SleepFor(absl::Milliseconds(900));
  server->Enqueue(OpenAiError(503, "still down", "server_error"));
  CHECK(absl::IsUnavailable(client.Chat(Hello()).status()));
  CHECK(client.breaker().state() == CircuitBreaker::State::kOpen);
  CHECK(server->request_count() == 3);
  CHECK(absl::IsUnavailable(client.Chat(Hello()).status()));
  CHECK(server->request_count() == 3);

  // ...and a succeeding probe closes it.
  absl::SleepFor(absl::Milliseconds(900));
  server->Enqueue(OpenAiReply("back"));
  auto probe = client.Chat(Hello());
  REQUIRE(probe.ok());
  CHECK(client.breaker().state() == CircuitBreaker::State::kClosed);
  server->Enqueue(OpenAiReply("normal"));
  CHECK(client.Chat(Hello()).ok());
  CHECK(server->request_count() == 5);
  CHECK(client.breaker().times_opened() == 2);
}

TEST_CASE("4xx answers do not open the breaker", "[llm][breaker]") {
  auto server = StartServer(WireFormat::kOpenAi);
  HttpLlmClientOptions options = FastOptions(*server);
  options.breaker.failure_threshold = 1;
  HttpLlmClient client(options, MakeOpenAiProtocol());
  server->Enqueue(OpenAiError(400, "bad"));
  server->Enqueue(OpenAiError(429, "busy").WithHeader("Retry-After", "0"));
  server->Enqueue(OpenAiReply("fine"));
  CHECK(absl::IsInvalidArgument(client.Chat(Hello()).status()));
  CHECK(client.breaker().state() == CircuitBreaker::State::kClosed);
  CHECK(client.Chat(Hello()).ok());  // 429 retried, breaker still closed
  CHECK(client.breaker().state() == CircuitBreaker::State::kClosed);
}

TEST_CASE("the API key never reaches the logs or status messages", "[llm][secrets]") {
  LogCapture capture;
  SetLogLevel(LogLevel::kDebug);
  auto server = StartServer(WireFormat::kOpenAi);
  // A hostile error body that echoes the key back.
  server->Enqueue(OpenAiError(500, std::string("bad key ") + kKey, "server_error"));
  server->Enqueue(OpenAiError(401, std::string("Incorrect API key provided: ") + kKey));
  server->Enqueue(OpenAiReply("ok"));
  HttpLlmClient client(FastOptions(*server), MakeOpenAiProtocol());
  auto first = client.Chat(Hello());
  REQUIRE(!first.ok());
  CHECK(absl::StrContains(first.status().message(), "[redacted]"));
  CHECK(!absl::StrContains(first.status().message(), kKey));
  CHECK(client.Chat(Hello()).ok());
  SetLogLevel(LogLevel::kInfo);

  auto lines = capture.lines();
  CHECK(!lines.empty());  // the calls were logged...
  for (const std::string& line : lines) {
    INFO(line);
    CHECK(line.find(kKey) == std::string::npos);  // ...without the key
    CHECK(line.find("sk-test") == std::string::npos);
  }
  // The key did go over the wire, where it belongs.
  CHECK(server->requests()[0].Header("Authorization") == std::string("Bearer ") + kKey);
}

}  // namespace
}  // namespace kagent::llm
