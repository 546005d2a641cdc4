#include "services/benchmark/gpu_slot.h"

#include <algorithm>

namespace kagent {

void GpuSlot::GrantLocked() {
  if (busy_ || queues_.empty()) return;
  auto it = queues_.upper_bound(last_job_);
  if (it == queues_.end()) it = queues_.begin();
  Waiter* w = it->second.front();
  it->second.pop_front();
  last_job_ = it->first;
  if (it->second.empty()) queues_.erase(it);
  w->granted = true;
  busy_ = true;
}

absl::Status GpuSlot::Acquire(const std::string& job_id, absl::Time deadline,
                              const std::function<bool()>& cancelled) {
  Waiter w;
  absl::MutexLock lock(&mu_);
  queues_[job_id].push_back(&w);
  GrantLocked();
  while (!w.granted) {
    bool stop_cancel = cancelled && cancelled();
    if (stop_cancel || absl::Now() >= deadline) {
      auto it = queues_.find(job_id);
      if (it != queues_.end()) {
        it->second.erase(std::remove(it->second.begin(), it->second.end(), &w), it->second.end());
        if (it->second.empty()) queues_.erase(it);
      }
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
  int n = 0;
  for (const auto& [job, q] : queues_) n += static_cast<int>(q.size());
  return n;
}

bool GpuSlot::busy() const {
  absl::MutexLock lock(&mu_);
  return busy_;
}

}  // namespace kagent
