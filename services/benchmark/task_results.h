// TaskResults: the idempotence of a worker's task RPCs (Measure, Screen). The first
// request of a task id runs the work; a repeat of a finished task (a retry after a lost
// reply) gets the stored response; a duplicate arriving while the first runs waits for it
// instead of running again. A run that fails is not remembered: the duplicates waiting
// for it get its status, and a later repeat runs again. The last `capacity` task ids are
// kept.
//
// Thread-safe. `work` runs on the calling thread, without the lock.
#ifndef KAGENT_SERVICES_BENCHMARK_TASK_RESULTS_H_
#define KAGENT_SERVICES_BENCHMARK_TASK_RESULTS_H_

#include <algorithm>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>

#include <grpcpp/support/status.h>

#include "absl/synchronization/mutex.h"
#include "absl/time/time.h"

namespace kagent {

template <typename Response>
class TaskResults {
 public:
  explicit TaskResults(size_t capacity) : capacity_(capacity) {}
  TaskResults(const TaskResults&) = delete;
  TaskResults& operator=(const TaskResults&) = delete;

  // Fills `*response` from the task's one run of `work` (see the file comment). A
  // duplicate waits until `cancelled()` (polled every 200 ms) turns true: CANCELLED.
  grpc::Status Run(const std::string& task_id, const std::function<bool()>& cancelled,
                   Response* response, const std::function<grpc::Status(Response*)>& work) {
    std::shared_ptr<Entry> entry;
    {
      absl::MutexLock lock(&mu_);
      auto it = entries_.find(task_id);
      if (it != entries_.end()) {
        entry = it->second;
        while (!entry->done && !cancelled()) {
          mu_.AwaitWithTimeout(absl::Condition(&entry->done), absl::Milliseconds(200));
        }
        if (!entry->done) return grpc::Status(grpc::StatusCode::CANCELLED, "cancelled");
        if (!entry->status.ok()) return entry->status;
        *response = entry->response;
        return grpc::Status::OK;
      }
      entry = std::make_shared<Entry>();
      entries_[task_id] = entry;
      order_.push_back(task_id);
      while (order_.size() > capacity_) {
        entries_.erase(order_.front());
        order_.pop_front();
      }
    }
    grpc::Status status = work(response);
    absl::MutexLock lock(&mu_);
    entry->status = status;
    if (status.ok()) {
      entry->response = *response;
    } else {
      auto it = entries_.find(task_id);
      if (it != entries_.end() && it->second == entry) {
        entries_.erase(it);
        order_.erase(std::find(order_.begin(), order_.end(), task_id));
      }
    }
    entry->done = true;
    return status;
  }

  // Task ids remembered (finished or running). For tests.
  size_t size() const {
    absl::MutexLock lock(&mu_);
    return entries_.size();
  }

 private:
  struct Entry {
    bool done = false;
    grpc::Status status;  // of the first run, shared with its duplicates
    Response response;
  };

  const size_t capacity_;
  mutable absl::Mutex mu_;
  std::map<std::string, std::shared_ptr<Entry>> entries_ ABSL_GUARDED_BY(mu_);
  std::deque<std::string> order_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_BENCHMARK_TASK_RESULTS_H_
