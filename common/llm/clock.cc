#include "common/llm/clock.h"

#include "absl/time/clock.h"

namespace kagent::llm {
namespace {

class WallClock : public Clock {
 public:
  absl::Time Now() override { return absl::Now(); }
  void SleepFor(absl::Duration d) override {
    if (d > absl::ZeroDuration()) absl::SleepFor(d);
  }
};

}  // namespace

Clock* RealClock() {
  static Clock* const clock = new WallClock();
  return clock;
}

}  // namespace kagent::llm
