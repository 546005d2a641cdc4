// Circuit breaker state machine on a fake clock.
#include "common/llm/circuit_breaker.h"

#include <catch2/catch.hpp>

#include "absl/strings/match.h"

namespace kagent::llm {
namespace {

using State = CircuitBreaker::State;

TEST_CASE("closed -> open after N consecutive failures", "[breaker]") {
  FakeClock clock;
  CircuitBreaker b("http://x/v1/messages", {.failure_threshold = 3, .cooldown = absl::Seconds(10)},
                   &clock);
  for (int i = 0; i < 2; ++i) {
    REQUIRE(b.Allow().ok());
    b.RecordFailure();
  }
  REQUIRE(b.Allow().ok());
  b.RecordSuccess();  // resets the count
  for (int i = 0; i < 2; ++i) {
    REQUIRE(b.Allow().ok());
    b.RecordFailure();
  }
  CHECK(b.state() == State::kClosed);
  REQUIRE(b.Allow().ok());
  b.RecordFailure();
  CHECK(b.state() == State::kOpen);
  absl::Status refused = b.Allow();
  CHECK(absl::IsUnavailable(refused));
  CHECK(absl::StrContains(refused.message(), "http://x/v1/messages"));
  CHECK(absl::StrContains(refused.message(), "open"));
}

TEST_CASE("open -> half-open after the cool-down, one probe at a time", "[breaker]") {
  FakeClock clock;
  CircuitBreaker b("e", {.failure_threshold = 1, .cooldown = absl::Seconds(10)}, &clock);
  REQUIRE(b.Allow().ok());
  b.RecordFailure();
  clock.Advance(absl::Seconds(9));
  CHECK(absl::IsUnavailable(b.Allow()));
  clock.Advance(absl::Seconds(1));
  CHECK(b.Allow().ok());  // the probe
  CHECK(b.state() == State::kHalfOpen);
  CHECK(absl::IsUnavailable(b.Allow()));  // a second caller while the probe runs

  SECTION("probe succeeds -> closed") {
    b.RecordSuccess();
    CHECK(b.state() == State::kClosed);
    CHECK(b.Allow().ok());
    CHECK(b.Allow().ok());
  }
  SECTION("probe fails -> open again, cool-down restarts") {
    b.RecordFailure();
    CHECK(b.state() == State::kOpen);
    clock.Advance(absl::Seconds(5));
    CHECK(absl::IsUnavailable(b.Allow()));
    clock.Advance(absl::Seconds(5));
    CHECK(b.Allow().ok());
    CHECK(b.times_opened() == 2);
  }
  SECTION("probe ends neutrally -> the next caller probes") {
    b.RecordNeutral();
    CHECK(b.state() == State::kHalfOpen);
    CHECK(b.Allow().ok());
  }
}

TEST_CASE("threshold 0 disables the breaker", "[breaker]") {
  FakeClock clock;
  CircuitBreaker b("e", {.failure_threshold = 0, .cooldown = absl::Seconds(10)}, &clock);
  for (int i = 0; i < 100; ++i) {
    REQUIRE(b.Allow().ok());
    b.RecordFailure();
  }
  CHECK(b.state() == State::kClosed);
}

TEST_CASE("the registry shares one breaker per endpoint", "[breaker]") {
  FakeClock clock;
  CircuitBreakerRegistry registry(&clock);
  auto a = registry.Get("http://a/v1/messages", {});
  auto a2 = registry.Get("http://a/v1/messages", {.failure_threshold = 1});
  auto b = registry.Get("http://b/v1/messages", {});
  CHECK(a == a2);
  CHECK(a != b);
}

}  // namespace
}  // namespace kagent::llm
