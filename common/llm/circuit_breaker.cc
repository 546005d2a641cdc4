#include "common/llm/circuit_breaker.h"

#include <utility>

#include "absl/strings/str_cat.h"
#include "common/logging.h"

namespace kagent::llm {

absl::string_view CircuitStateName(CircuitBreaker::State state) {
  switch (state) {
    case CircuitBreaker::State::kClosed: return "closed";
    case CircuitBreaker::State::kOpen: return "open";
    case CircuitBreaker::State::kHalfOpen: return "half-open";
  }
  return "closed";
}

CircuitBreaker::CircuitBreaker(std::string name, CircuitBreakerOptions options, Clock* clock)
    : name_(std::move(name)), options_(options), clock_(clock) {}

absl::Status CircuitBreaker::Allow() {
  if (options_.failure_threshold <= 0) return absl::OkStatus();
  absl::MutexLock lock(&mu_);
  switch (state_) {
    case State::kClosed:
      return absl::OkStatus();
    case State::kOpen: {
      const absl::Duration open_for = clock_->Now() - opened_at_;
      if (open_for < options_.cooldown) {
        return absl::UnavailableError(absl::StrCat(
            "circuit breaker for ", name_, " is open after ", consecutive_failures_,
            " consecutive failures; retry in ",
            absl::FormatDuration(options_.cooldown - open_for)));
      }
      state_ = State::kHalfOpen;
      probe_in_flight_ = true;
      KLOG(INFO).With("endpoint", name_) << "circuit breaker half-open: sending one probe";
      return absl::OkStatus();
    }
    case State::kHalfOpen:
      if (probe_in_flight_) {
        return absl::UnavailableError(absl::StrCat(
            "circuit breaker for ", name_, " is half-open and its probe call is in flight"));
      }
      probe_in_flight_ = true;
      return absl::OkStatus();
  }
  return absl::OkStatus();
}

void CircuitBreaker::RecordSuccess() {
  absl::MutexLock lock(&mu_);
  if (state_ != State::kClosed) {
    KLOG(INFO).With("endpoint", name_) << "circuit breaker closed: probe succeeded";
  }
  state_ = State::kClosed;
  consecutive_failures_ = 0;
  probe_in_flight_ = false;
}

void CircuitBreaker::RecordFailure() {
  if (options_.failure_threshold <= 0) return;
  absl::MutexLock lock(&mu_);
  ++consecutive_failures_;
  if (state_ == State::kHalfOpen ||
      (state_ == State::kClosed && consecutive_failures_ >= options_.failure_threshold)) {
    state_ = State::kOpen;
    opened_at_ = clock_->Now();
    probe_in_flight_ = false;
    ++times_opened_;
    KLOG(WARNING).With("endpoint", name_).With("failures", consecutive_failures_)
        << "circuit breaker opened";
  }
}

void CircuitBreaker::RecordNeutral() {
  absl::MutexLock lock(&mu_);
  // A probe that ended neutrally frees the slot; the next call probes again.
  probe_in_flight_ = false;
}

CircuitBreaker::State CircuitBreaker::state() {
  absl::MutexLock lock(&mu_);
  return state_;
}

int64_t CircuitBreaker::times_opened() {
  absl::MutexLock lock(&mu_);
  return times_opened_;
}

std::shared_ptr<CircuitBreaker> CircuitBreakerRegistry::Get(
    const std::string& endpoint, const CircuitBreakerOptions& options) {
  absl::MutexLock lock(&mu_);
  auto& slot = breakers_[endpoint];
  if (slot == nullptr) slot = std::make_shared<CircuitBreaker>(endpoint, options, clock_);
  return slot;
}

}  // namespace kagent::llm
