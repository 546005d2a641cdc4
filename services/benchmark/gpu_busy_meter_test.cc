// GpuBusyMeter: the integration of utilization samples over a window, the sampled meter
// over a scripted source (the driver's short buffer forgets; the meter does not), and
// NVML's absence.
#include <catch2/catch.hpp>

#include <algorithm>
#include <vector>

#include "services/benchmark/gpu_busy_meter.h"

namespace kagent {
namespace {

const absl::Time kT0 = absl::FromUnixSeconds(1'700'000'000);

absl::Time At(double seconds) { return kT0 + absl::Seconds(seconds); }

std::deque<UtilizationSample> Samples(std::vector<std::pair<double, double>> at_percent) {
  std::deque<UtilizationSample> out;
  for (auto [t, p] : at_percent) out.push_back({At(t), p});
  return out;
}

TEST_CASE("busy seconds: each sample covers the period since the one before", "[gpu_busy]") {
  auto s = Samples({{1, 100}, {2, 50}, {3, 0}, {4, 100}});
  const absl::Duration max = absl::Seconds(2);
  // [0.5, 3.5]: half of sample 1's period (its period is taken as the next interval),
  // all of sample 2's at 50 %, sample 3 idle, half of sample 4's.
  CHECK(IntegrateBusySeconds(s, At(0.5), At(3.5), max) == Approx(0.5 + 0.5 + 0 + 0.5));
  CHECK(IntegrateBusySeconds(s, At(1), At(2), max) == Approx(0.5));
  CHECK(IntegrateBusySeconds(s, At(2), At(3), max) == Approx(0));
  // The window's order matters; an empty window or no samples is 0.
  CHECK(IntegrateBusySeconds(s, At(3), At(1), max) == 0);
  CHECK(IntegrateBusySeconds({}, At(0), At(10), max) == 0);
  // Before the first sample's period nothing is known.
  CHECK(IntegrateBusySeconds(s, At(-10), At(0), max) == 0);
}

TEST_CASE("busy seconds: missed samples count as not busy and the newest extends to the window's end",
          "[gpu_busy]") {
  const absl::Duration max = absl::Seconds(2);
  // A 10 s gap: the second sample covers only its last 2 s.
  auto gap = Samples({{0, 100}, {10, 100}});
  CHECK(IntegrateBusySeconds(gap, At(0), At(10), max) == Approx(2));
  // The window ends 1 s after the newest sample: that second counts at its percent...
  auto s = Samples({{1, 100}, {2, 100}});
  CHECK(IntegrateBusySeconds(s, At(1.5), At(3), max) == Approx(0.5 + 1));
  // ... for at most one period.
  CHECK(IntegrateBusySeconds(s, At(1.5), At(10), max) == Approx(0.5 + 2));
}

// The driver's buffer: holds only what the test put there last.
class ScriptedSource final : public UtilizationSampleSource {
 public:
  explicit ScriptedSource(absl::Mutex* mu, std::vector<UtilizationSample>* buffer,
                          std::vector<absl::Time>* asked, bool* fail)
      : mu_(mu), buffer_(buffer), asked_(asked), fail_(fail) {}
  absl::StatusOr<std::vector<UtilizationSample>> SamplesAfter(absl::Time after) override {
    absl::MutexLock lock(mu_);
    asked_->push_back(after);
    if (*fail_) return absl::UnavailableError("driver gone");
    std::vector<UtilizationSample> out;
    for (const auto& s : *buffer_) {
      if (s.time > after) out.push_back(s);
    }
    return out;
  }

 private:
  absl::Mutex* mu_;
  std::vector<UtilizationSample>* buffer_;
  std::vector<absl::Time>* asked_;
  bool* fail_;
};

TEST_CASE("sampled meter: keeps what the driver's buffer forgets, asks only for new samples",
          "[gpu_busy]") {
  absl::Mutex mu;
  std::vector<UtilizationSample> buffer;
  std::vector<absl::Time> asked;
  bool fail = false;
  absl::Time t0 = absl::Now() - absl::Minutes(1);  // within the meter's two hours
  auto at = [&](double s) { return t0 + absl::Seconds(s); };
  {
    absl::MutexLock lock(&mu);
    for (int i = 1; i <= 5; ++i) buffer.push_back({at(i), 100});
  }
  SampledGpuBusyMeter::Options o;
  o.poll_interval = absl::Hours(1);  // only the first poll and BusySeconds read
  SampledGpuBusyMeter meter(std::make_unique<ScriptedSource>(&mu, &buffer, &asked, &fail), o);
  CHECK(meter.BusySeconds(at(0), at(5)) == Approx(5));
  {
    absl::MutexLock lock(&mu);
    // The driver moved on: the first five are gone from its buffer.
    buffer.clear();
    for (int i = 6; i <= 10; ++i) buffer.push_back({at(i), 50});
  }
  CHECK(meter.BusySeconds(at(0), at(10)) == Approx(5 + 2.5));
  {
    absl::MutexLock lock(&mu);
    // Only the first read asked for everything; the others for what came after the
    // newest sample the meter had.
    CHECK(std::count(asked.begin(), asked.end(), absl::InfinitePast()) == 1);
    CHECK(asked.back() == at(5));
    fail = true;
  }
  // A failing source keeps what was read.
  CHECK(meter.BusySeconds(at(0), at(10)) == Approx(7.5));
}

TEST_CASE("NVML: a device that does not exist is not opened and the meter then answers 0",
          "[gpu_busy]") {
  // Without a driver (the CPU machines) libnvidia-ml.so.1 does not load; with one, no
  // device has this bus id. Either way: UNAVAILABLE.
  auto source = OpenNvmlSampleSource("0000:ff:1f.7", 0);
  CHECK(source.status().code() == absl::StatusCode::kUnavailable);
  std::unique_ptr<GpuBusyMeter> meter = MakeGpuBusyMeter("0000:ff:1f.7", 0);
  REQUIRE(meter != nullptr);
  CHECK(meter->BusySeconds(absl::Now() - absl::Seconds(10), absl::Now()) == 0);
  NullGpuBusyMeter null;
  CHECK(null.BusySeconds(absl::Now() - absl::Seconds(10), absl::Now()) == 0);
}

}  // namespace
}  // namespace kagent
