// Time seam for the LLM clients: reading the clock and sleeping go through Clock so unit
// tests can check backoff and breaker timing without sleeping for real.
//
// Thread-safety: implementations must be safe to call from many threads.
#ifndef KAGENT_COMMON_LLM_CLOCK_H_
#define KAGENT_COMMON_LLM_CLOCK_H_

#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kagent::llm {

class Clock {
 public:
  virtual ~Clock() = default;
  virtual absl::Time Now() = 0;
  virtual void SleepFor(absl::Duration d) = 0;
};

// The wall clock. Never destroyed; the pointer is valid for the life of the process.
Clock* RealClock();

// A manual clock for tests: SleepFor advances Now() at once and records the duration.
class FakeClock : public Clock {
 public:
  explicit FakeClock(absl::Time start = absl::FromUnixSeconds(1700000000)) : now_(start) {}
  absl::Time Now() override {
    absl::MutexLock lock(&mu_);
    return now_;
  }
  void SleepFor(absl::Duration d) override {
    absl::MutexLock lock(&mu_);
    sleeps_.push_back(d);
    if (d > absl::ZeroDuration()) now_ += d;
  }
  void Advance(absl::Duration d) {
    absl::MutexLock lock(&mu_);
    now_ += d;
  }
  std::vector<absl::Duration> sleeps() {
    absl::MutexLock lock(&mu_);
    return sleeps_;
  }

 private:
  absl::Mutex mu_;
  absl::Time now_ ABSL_GUARDED_BY(mu_);
  std::vector<absl::Duration> sleeps_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kagent::llm

#endif  // KAGENT_COMMON_LLM_CLOCK_H_
