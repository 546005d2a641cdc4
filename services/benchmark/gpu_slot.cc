#include "services/benchmark/gpu_slot.h"

#include <algorithm>
#include <optional>

namespace kagent {

void GpuSlot::GrantLocked() {
  if (busy_) return;
  std::optional<Waiter*> w = queue_.TakeNext();
  if (!w) return;
  (*w)->granted = true;
  busy_ = true;
}

absl::Status GpuSlot::Acquire(const std::string& job_id, absl::Time deadline,
                              const std::function<bool()>& cancelled) {
  Waiter w;
  absl::MutexLock lock(&mu_);
  queue_.Push(job_id, &w);
  GrantLocked();
  while (!w.granted) {
    bool stop_cancel = cancelled && cancelled();
    if (stop_cancel || absl::Now() >= deadline) {
      queue_.Remove(job_id, &w);
      return stop_cancel ? absl::CancelledError("cancelled while waiting for the GPU")
                         : absl::DeadlineExceededError("deadline passed while waiting for the GPU");
    }
    mu_.AwaitWithDeadline(absl::Condition(&w.granted),
                          std::min(deadline, absl::Now() + absl::Milliseconds(100)));
  }
  return absl::OkStatus();
}

void GpuSlot::Release() {
  absl::MutexLock lock(&mu_);
  busy_ = false;
  GrantLocked();
}

int GpuSlot::queue_depth() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

bool GpuSlot::busy() const {
  absl::MutexLock lock(&mu_);
  return busy_;
}

}  // namespace kagent
