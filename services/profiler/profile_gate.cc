#include "services/profiler/profile_gate.h"

#include <sys/stat.h>

#include <atomic>
#include <thread>
#include <utility>

#include "absl/strings/str_cat.h"
#include "common/file_io.h"
#include "common/logging.h"

namespace kagent {
namespace {

constexpr absl::Duration kPoll = absl::Milliseconds(10);
constexpr absl::Duration kStopGrace = absl::Seconds(30);

bool Exists(const std::string& path) {
  struct stat st;
  return ::stat(path.c_str(), &st) == 0;
}

}  // namespace

absl::StatusOr<SubprocessResult> RunGatedHarness(CommandRunner* runner,
                                                 SubprocessOptions options,
                                                 const std::string& gate_dir,
                                                 ProfileGpuGate* gate, absl::Duration timeout,
                                                 const CancelToken* cancel,
                                                 GatedRunInfo* info) {
  GatedRunInfo local_info;
  if (info == nullptr) info = &local_info;
  *info = GatedRunInfo{};
  options.argv.push_back(kGateDirFlag);
  options.argv.push_back(gate_dir);
  // This side enforces the bounds (the wait for the gate must not count against them).
  options.timeout = absl::InfiniteDuration();
  CancelToken kill;
  options.cancel = &kill;

  std::atomic<bool> finished{false};
  absl::StatusOr<SubprocessResult> result = absl::UnknownError("not run");
  std::thread process([&] {
    result = runner->Run(options);
    finished.store(true, std::memory_order_release);
  });

  enum class Stage { kPreparing, kOnGpu, kReleased, kStopped };
  Stage stage = Stage::kPreparing;
  bool timed_out = false;
  absl::Status gate_status;
  const absl::Time start = absl::Now();
  absl::Time held_from, stopped_at;
  const std::string ready = absl::StrCat(gate_dir, "/ready");
  const std::string done = absl::StrCat(gate_dir, "/done");
  auto release = [&] {
    const absl::Time from = absl::Now();
    info->gpu_part_seconds = absl::ToDoubleSeconds(from - held_from);
    gate->Release();
    info->release_seconds = absl::ToDoubleSeconds(absl::Now() - from);
    stage = Stage::kReleased;
  };
  while (!finished.load(std::memory_order_acquire)) {
    if (cancel != nullptr && cancel->cancelled()) kill.Cancel();
    const absl::Time now = absl::Now();
    switch (stage) {
      case Stage::kPreparing:
        if (Exists(ready)) {
          info->prepare_seconds = absl::ToDoubleSeconds(now - start);
          gate_status = gate->Acquire(cancel);
          if (gate_status.ok()) {
            const absl::Time granted = absl::Now();
            absl::Status wrote = WriteFileAtomically(absl::StrCat(gate_dir, "/go"), "go\n");
            held_from = absl::Now();
            info->grant_to_go_seconds = absl::ToDoubleSeconds(held_from - granted);
            info->granted = true;
            stage = Stage::kOnGpu;
            if (!wrote.ok()) {  // the harness would wait for ever: end it
              KLOG(WARNING) << "profile gate: " << wrote.ToString();
              gate_status = wrote;
              kill.Cancel();
            }
          } else {
            (void)WriteFileAtomically(absl::StrCat(gate_dir, "/stop"), "stop\n");
            stopped_at = absl::Now();
            stage = Stage::kStopped;
          }
        } else if (now - start > timeout) {
          timed_out = true;
          kill.Cancel();
        }
        break;
      case Stage::kOnGpu:
        if (Exists(done)) {
          release();
        } else if (now - held_from > timeout) {
          timed_out = true;
          kill.Cancel();
        }
        break;
      case Stage::kStopped:
        if (now - stopped_at > kStopGrace) kill.Cancel();
        break;
      case Stage::kReleased:
        break;
    }
    absl::SleepFor(kPoll);
  }
  process.join();
  if (stage == Stage::kOnGpu) release();
  if (!gate_status.ok()) return gate_status;
  if (result.ok() && timed_out) {  // this function's kill, for a bound that passed
    result->timed_out = true;
    result->cancelled = false;
  }
  return result;
}

}  // namespace kagent
