// Backoff math, Retry-After parsing and the retry loop's timing, on a fake clock and a
// scripted transport: no sleeping, no sockets.
#include "common/llm/retry.h"

#include <catch2/catch.hpp>

#include <deque>
#include <memory>

#include "absl/strings/match.h"
#include "common/llm/clock.h"
#include "common/llm/http_llm_client.h"

namespace kagent::llm {
namespace {

TEST_CASE("backoff ceilings grow exponentially up to the cap", "[retry]") {
  RetryPolicy p;
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Milliseconds(1000);
  p.multiplier = 2.0;
  CHECK(BackoffCeiling(p, 1) == absl::Milliseconds(100));
  CHECK(BackoffCeiling(p, 2) == absl::Milliseconds(200));
  CHECK(BackoffCeiling(p, 3) == absl::Milliseconds(400));
  CHECK(BackoffCeiling(p, 4) == absl::Milliseconds(800));
  CHECK(BackoffCeiling(p, 5) == absl::Milliseconds(1000));
  CHECK(BackoffCeiling(p, 500) == absl::Milliseconds(1000));  // no overflow
}

TEST_CASE("full jitter draws uniformly under the ceiling", "[retry]") {
  RetryPolicy p;
  p.initial_backoff = absl::Milliseconds(100);
  p.max_backoff = absl::Seconds(10);
  CHECK(BackoffDelay(p, 3, 0.0) == absl::ZeroDuration());
  CHECK(BackoffDelay(p, 3, 0.5) == absl::Milliseconds(200));
  CHECK(BackoffDelay(p, 3, 0.999999) < absl::Milliseconds(400));
  CHECK(BackoffDelay(p, 3, 7.0) < absl::Milliseconds(400));   // clamped into [0, 1)
  CHECK(BackoffDelay(p, 3, -1.0) == absl::ZeroDuration());
}

TEST_CASE("Retry-After: delta-seconds and HTTP-date", "[retry]") {
  const absl::Time now = absl::FromUnixSeconds(1445412480);  // Wed, 21 Oct 2015 07:28:00 GMT
  CHECK(ParseRetryAfter("3", now) == absl::Seconds(3));
  CHECK(ParseRetryAfter(" 0 ", now) == absl::ZeroDuration());
  CHECK(ParseRetryAfter("1.5", now) == absl::Milliseconds(1500));
  CHECK(ParseRetryAfter("Wed, 21 Oct 2015 07:28:30 GMT", now) == absl::Seconds(30));
  CHECK(ParseRetryAfter("Wed, 21 Oct 2015 07:27:00 GMT", now) == absl::ZeroDuration());
  CHECK_FALSE(ParseRetryAfter("", now).has_value());
  CHECK_FALSE(ParseRetryAfter("-4", now).has_value());
  CHECK_FALSE(ParseRetryAfter("soon", now).has_value());
}

TEST_CASE("HTTP statuses: which are retried and what they map to", "[retry]") {
  for (int s : {408, 429, 500, 502, 503, 504, 529}) CHECK(IsRetryableHttpStatus(s));
  for (int s : {200, 400, 401, 403, 404, 413, 422, 501}) CHECK_FALSE(IsRetryableHttpStatus(s));
  CHECK(HttpStatusToCode(400) == absl::StatusCode::kInvalidArgument);
  CHECK(HttpStatusToCode(401) == absl::StatusCode::kUnauthenticated);
  CHECK(HttpStatusToCode(403) == absl::StatusCode::kPermissionDenied);
  CHECK(HttpStatusToCode(429) == absl::StatusCode::kUnavailable);  // not a budget
  CHECK(HttpStatusToCode(529) == absl::StatusCode::kUnavailable);
  CHECK(HttpStatusToCode(504) == absl::StatusCode::kDeadlineExceeded);
  CHECK(HttpStatusToCode(501) == absl::StatusCode::kInternal);
  CHECK(IsRetryableTransportError(absl::DeadlineExceededError("t")));
  CHECK(IsRetryableTransportError(absl::UnavailableError("c")));
  CHECK_FALSE(IsRetryableTransportError(absl::InvalidArgumentError("u")));
}

// Answers from a script; records what it was asked.
class ScriptedTransport : public HttpTransport {
 public:
  void Push(absl::StatusOr<HttpResponse> r) { script_.push_back(std::move(r)); }
  absl::StatusOr<HttpResponse> Post(const HttpRequest& request) override {
    timeouts.push_back(request.timeout);
    if (script_.empty()) return absl::InternalError("script exhausted");
    auto r = std::move(script_.front());
    script_.pop_front();
    return r;
  }
  std::vector<absl::Duration> timeouts;

 private:
  std::deque<absl::StatusOr<HttpResponse>> script_;
};

HttpResponse Http(int status, std::string body, std::map<std::string, std::string> headers = {}) {
  return HttpResponse{status, std::move(headers), std::move(body)};
}

const char kOk[] =
    R"({"choices":[{"message":{"content":"ok"},"finish_reason":"stop"}],
        "usage":{"prompt_tokens":1,"completion_tokens":1}})";

struct Rig {
  FakeClock clock;
  std::shared_ptr<ScriptedTransport> transport = std::make_shared<ScriptedTransport>();
  std::unique_ptr<HttpLlmClient> client;
  explicit Rig(RetryPolicy policy, absl::Duration timeout = absl::Seconds(60)) {
    HttpLlmClientOptions o;
    o.base_url = "http://llm.invalid";
    o.model = "m";
    o.timeout = timeout;
    o.retry = policy;
    HttpLlmClientDeps deps;
    deps.transport = transport;
    deps.clock = &clock;
    deps.uniform01 = [] { return 0.5; };
    client = std::make_unique<HttpLlmClient>(o, MakeOpenAiProtocol(), deps);
  }
};

ChatRequest OneMessage() {
  ChatRequest r;
  r.messages.push_back({Role::kUser, "hi"});
  return r;
}

TEST_CASE("retry loop sleeps the jittered backoff between attempts", "[retry]") {
  RetryPolicy p;
  p.max_attempts = 4;
  p.initial_backoff = absl::Seconds(1);
  p.max_backoff = absl::Seconds(3);
  Rig rig(p);
  rig.transport->Push(Http(503, "{}"));
  rig.transport->Push(absl::UnavailableError("connection reset"));
  rig.transport->Push(absl::DeadlineExceededError("timed out"));
  rig.transport->Push(Http(200, kOk));
  auto reply = rig.client->Chat(OneMessage());
  REQUIRE(reply.ok());
  CHECK(reply->attempts == 4);
  // Ceilings 1 s, 2 s, 3 s (capped); jitter draw 0.5.
  CHECK(rig.clock.sleeps() == std::vector<absl::Duration>{
                                  absl::Milliseconds(500), absl::Seconds(1),
                                  absl::Milliseconds(1500)});
}

TEST_CASE("Retry-After overrides a shorter backoff", "[retry]") {
  RetryPolicy p;
  p.initial_backoff = absl::Milliseconds(100);
  Rig rig(p);
  rig.transport->Push(Http(429, "{}", {{"retry-after", "7"}}));
  rig.transport->Push(Http(200, kOk));
  REQUIRE(rig.client->Chat(OneMessage()).ok());
  CHECK(rig.clock.sleeps() == std::vector<absl::Duration>{absl::Seconds(7)});
}

TEST_CASE("the total-time cap stops retries and clips attempt timeouts", "[retry]") {
  RetryPolicy p;
  p.max_attempts = 10;
  p.initial_backoff = absl::Seconds(4);
  p.max_backoff = absl::Seconds(4);
  p.total_timeout = absl::Seconds(10);
  Rig rig(p, /*timeout=*/absl::Seconds(60));
  for (int i = 0; i < 10; ++i) rig.transport->Push(Http(500, R"({"error":{"message":"x"}})"));
  auto reply = rig.client->Chat(OneMessage());
  CHECK(absl::IsUnavailable(reply.status()));
  CHECK(absl::StrContains(reply.status().message(), "no time left to retry"));
  // Sleeps of 2 s each (ceiling 4 s, draw 0.5): attempts at t=0, 2, 4, 6, 8; the sleep
  // after the fifth would end at t=10, the cap.
  CHECK(rig.transport->timeouts.size() == 5);
  CHECK(rig.transport->timeouts[0] == absl::Seconds(10));
  CHECK(rig.transport->timeouts[4] == absl::Seconds(2));
}

TEST_CASE("non-retryable errors are not retried", "[retry]") {
  Rig rig(RetryPolicy{});
  rig.transport->Push(Http(403, R"({"error":{"message":"forbidden"}})"));
  auto reply = rig.client->Chat(OneMessage());
  CHECK(absl::IsPermissionDenied(reply.status()));
  CHECK(rig.transport->timeouts.size() == 1);
  CHECK(rig.clock.sleeps().empty());
}

}  // namespace
}  // namespace kagent::llm
