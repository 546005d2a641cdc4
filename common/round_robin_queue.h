// RoundRobinQueue: items waiting for one kind of resource, queued per job and taken
// fairly. Each take serves the next job after the one served last (in key order, wrapping
// around), so a job with many waiting items cannot starve another; within a job, first in,
// first out.
//
// The one fairness rule of the GPU path, used at both of its levels:
//   - the coordinator's Scheduler (services/coordinator/scheduler.h): GPU tasks waiting
//     for a free task place on some worker; a task may be ineligible for a given worker
//     (one that failed it before), which TakeNext's predicate expresses;
//   - a worker's GpuSlot (services/benchmark/gpu_slot.h): the tasks given to that worker
//     waiting for its one GPU; every waiter is eligible.
//
//   RoundRobinQueue<Waiter*> q;
//   q.Push("job-a", &w1); q.Push("job-a", &w2); q.Push("job-b", &w3);
//   q.TakeNext();  // w1 (job-a), then w3 (job-b), then w2 (job-a)
//
// Not thread-safe: the owner guards it with its own mutex (and waits on that mutex).
// Items are values (usually pointers to waiters the owner keeps alive while queued).
#ifndef KAGENT_COMMON_ROUND_ROBIN_QUEUE_H_
#define KAGENT_COMMON_ROUND_ROBIN_QUEUE_H_

#include <algorithm>
#include <cstddef>
#include <deque>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace kagent {

template <typename T>
class RoundRobinQueue {
 public:
  // Queues `item` last among `job`'s.
  void Push(const std::string& job, T item) { queues_[job].push_back(std::move(item)); }

  // Removes `item` from `job`'s queue (a waiter that gave up); false when it is not there.
  bool Remove(const std::string& job, const T& item) {
    auto it = queues_.find(job);
    if (it == queues_.end()) return false;
    auto& q = it->second;
    auto end = std::remove(q.begin(), q.end(), item);
    bool found = end != q.end();
    q.erase(end, q.end());
    if (q.empty()) queues_.erase(it);
    return found;
  }

  // Takes the first item that `eligible` (a predicate on const T&) accepts, of the next
  // job after the one served last that has such an item; that job is then the one served
  // last. nullopt (and nothing changes) when no queued item is eligible.
  template <typename Eligible>
  std::optional<T> TakeNext(Eligible eligible) {
    const auto start = queues_.upper_bound(last_job_);
    for (int pass = 0; pass < 2; ++pass) {
      auto begin = pass == 0 ? start : queues_.begin();
      auto end = pass == 0 ? queues_.end() : start;
      for (auto it = begin; it != end; ++it) {
        auto& q = it->second;
        for (auto p = q.begin(); p != q.end(); ++p) {
          if (!eligible(static_cast<const T&>(*p))) continue;
          T item = std::move(*p);
          q.erase(p);
          last_job_ = it->first;
          if (q.empty()) queues_.erase(it);
          return item;
        }
      }
    }
    return std::nullopt;
  }
  std::optional<T> TakeNext() {
    return TakeNext([](const T&) { return true; });
  }

  // Items queued, over all jobs.
  size_t size() const {
    size_t n = 0;
    for (const auto& [job, q] : queues_) n += q.size();
    return n;
  }
  bool empty() const { return queues_.empty(); }

 private:
  std::map<std::string, std::deque<T>> queues_;  // by job; never an empty deque
  std::string last_job_;                         // the job served last
};

}  // namespace kagent

#endif  // KAGENT_COMMON_ROUND_ROBIN_QUEUE_H_
