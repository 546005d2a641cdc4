// A circuit breaker for one provider endpoint.
//
//   closed --(failure_threshold consecutive failures)--> open
//   open   --(cooldown elapsed, next Allow())-----------> half-open (one probe call)
//   half-open --(probe succeeds)--> closed;  --(probe fails)--> open (cooldown restarts)
//
// Callers ask Allow() before each HTTP attempt and report the outcome with
// RecordSuccess() / RecordFailure(). Only endpoint-health failures should be reported
// as failures (5xx, timeouts, connection errors); a 4xx says nothing about the endpoint
// and should be reported with RecordNeutral() so a half-open probe slot is released.
//
// Thread-safe. The clock must outlive the breaker.
#ifndef KAGENT_COMMON_LLM_CIRCUIT_BREAKER_H_
#define KAGENT_COMMON_LLM_CIRCUIT_BREAKER_H_

#include <cstdint>
#include <memory>
#include <string>

#include "absl/base/thread_annotations.h"
#include "absl/container/flat_hash_map.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/llm/clock.h"

namespace kagent::llm {

struct CircuitBreakerOptions {
  // Consecutive failures that open the breaker. 0 disables the breaker.
  int failure_threshold = 5;
  // Time the breaker stays open before letting one probe through.
  absl::Duration cooldown = absl::Seconds(30);
};

class CircuitBreaker {
 public:
  enum class State { kClosed, kOpen, kHalfOpen };

  // `name` (the endpoint) appears in status messages and logs.
  CircuitBreaker(std::string name, CircuitBreakerOptions options, Clock* clock);

  // OK when a call may proceed; UNAVAILABLE ("circuit breaker for <name> is open ...")
  // while open, or while half-open with the probe already in flight.
  absl::Status Allow();
  void RecordSuccess();
  void RecordFailure();
  // The attempt ended without telling anything about the endpoint's health.
  void RecordNeutral();

  State state();
  const std::string& name() const { return name_; }
  // Times the breaker has opened (for metrics).
  int64_t times_opened();

 private:
  const std::string name_;
  const CircuitBreakerOptions options_;
  Clock* const clock_;
  absl::Mutex mu_;
  State state_ ABSL_GUARDED_BY(mu_) = State::kClosed;
  int consecutive_failures_ ABSL_GUARDED_BY(mu_) = 0;
  absl::Time opened_at_ ABSL_GUARDED_BY(mu_);
  bool probe_in_flight_ ABSL_GUARDED_BY(mu_) = false;
  int64_t times_opened_ ABSL_GUARDED_BY(mu_) = 0;
};

absl::string_view CircuitStateName(CircuitBreaker::State state);

// One breaker per endpoint, shared by every client that talks to it. Thread-safe.
class CircuitBreakerRegistry {
 public:
  explicit CircuitBreakerRegistry(Clock* clock = RealClock()) : clock_(clock) {}
  // Returns the breaker for `endpoint`, creating it with `options` on first use (later
  // calls with other options get the existing breaker).
  std::shared_ptr<CircuitBreaker> Get(const std::string& endpoint,
                                      const CircuitBreakerOptions& options);

 private:
  Clock* const clock_;
  absl::Mutex mu_;
  absl::flat_hash_map<std::string, std::shared_ptr<CircuitBreaker>> breakers_
      ABSL_GUARDED_BY(mu_);
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_CIRCUIT_BREAKER_H_
