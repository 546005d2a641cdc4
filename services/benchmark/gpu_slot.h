// GpuSlot: one GPU task at a time on one GPU, granted fairly across jobs.
//
// Waiters queue per job; when the slot frees, the head of the next job in round-robin
// order gets it, so a job with many candidates cannot starve another. A waiter whose
// deadline passes or whose call is cancelled leaves the queue. The queue is the
// coordinator scheduler's fairness rule one level down (common/round_robin_queue.h): the
// scheduler shares a job's tasks fairly over the workers, the slot shares the tasks given
// to this worker fairly over its GPU.
//
// Thread-safe.
#ifndef KAGENT_SERVICES_BENCHMARK_GPU_SLOT_H_
#define KAGENT_SERVICES_BENCHMARK_GPU_SLOT_H_

#include <functional>
#include <string>

#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"
#include "common/round_robin_queue.h"

namespace kagent {

class GpuSlot {
 public:
  GpuSlot() = default;

  // Blocks until the slot is this caller's, `deadline` passes (DEADLINE_EXCEEDED) or
  // `cancelled()` turns true (CANCELLED; polled every 100 ms; may be null).
  absl::Status Acquire(const std::string& job_id, absl::Time deadline,
                       const std::function<bool()>& cancelled);
  void Release();

  int queue_depth() const;
  bool busy() const;

 private:
  struct Waiter {
    bool granted = false;
  };
  void GrantLocked() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_);

  mutable absl::Mutex mu_;
  bool busy_ ABSL_GUARDED_BY(mu_) = false;
  RoundRobinQueue<Waiter*> queue_ ABSL_GUARDED_BY(mu_);
};

// Holds the slot for a scope.
class GpuSlotLease {
 public:
  explicit GpuSlotLease(GpuSlot* slot) : slot_(slot) {}
  ~GpuSlotLease() {
    if (slot_) slot_->Release();
  }
  GpuSlotLease(const GpuSlotLease&) = delete;
  GpuSlotLease& operator=(const GpuSlotLease&) = delete;

 private:
  GpuSlot* slot_;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_GPU_SLOT_H_
