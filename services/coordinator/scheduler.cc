#include "services/coordinator/scheduler.h"

#include <algorithm>
#include <future>
#include <optional>

#include <prometheus/counter.h>
#include <prometheus/gauge.h>
#include <prometheus/histogram.h>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/status.h"

namespace kagent {
namespace {

bool IsTransportFailure(const absl::Status& s) {
  return s.code() == absl::StatusCode::kUnavailable ||
         s.code() == absl::StatusCode::kDeadlineExceeded ||
         s.code() == absl::StatusCode::kUnknown || s.code() == absl::StatusCode::kInternal;
}

const char* KindName(GpuTask::Kind k) {
  switch (k) {
    case GpuTask::Kind::kMeasure:
      return "measure";
    case GpuTask::Kind::kProfile:
      return "profile";
    case GpuTask::Kind::kScreen:
      return "screen";
  }
  return "unknown";
}

// The response a task stores under its id (the one of its kind).
std::string SerializeResult(const GpuTask& task, const GpuTaskResult& r) {
  switch (task.kind) {
    case GpuTask::Kind::kMeasure:
      return r.measure.SerializeAsString();
    case GpuTask::Kind::kProfile:
      return r.profile.SerializeAsString();
    case GpuTask::Kind::kScreen:
      return r.screen.SerializeAsString();
  }
  return "";
}

bool ParseResult(const GpuTask& task, const std::string& bytes, GpuTaskResult* r) {
  switch (task.kind) {
    case GpuTask::Kind::kMeasure:
      return r->measure.ParseFromString(bytes);
    case GpuTask::Kind::kProfile:
      return r->profile.ParseFromString(bytes);
    case GpuTask::Kind::kScreen:
      return r->screen.ParseFromString(bytes);
  }
  return false;
}

}  // namespace

std::string InfraReason(const GpuTask& task, const GpuTaskResult& r) {
  if (task.kind != GpuTask::Kind::kMeasure) return "";
  const v1::Measurement& m = r.measure.measurement();
  if (m.verdict() != v1::VERDICT_INFRA_ERROR) return "";
  return m.correctness().reason().empty() ? "VERDICT_INFRA_ERROR" : m.correctness().reason();
}

void MarkInfraSpent(const GpuTask& task, const std::vector<std::string>& workers,
                    GpuTaskResult* r) {
  if (task.kind != GpuTask::Kind::kMeasure) return;
  v1::CorrectnessDetails* c = r->measure.mutable_measurement()->mutable_correctness();
  c->set_reason(absl::StrCat("infrastructure failure on all ", workers.size(),
                             workers.size() == 1 ? " attempt (worker " : " attempts (workers ",
                             absl::StrJoin(workers, ", "), "); last: ", InfraReason(task, *r)));
}

Scheduler::Scheduler(SchedulerOptions options, Storage* storage, GpuWorkerFactory* factory,
                     prometheus::Registry* registry)
    : options_(options), storage_(storage), factory_(factory) {
  KAGENT_CHECK(options_.tasks_per_worker >= 1 && options_.tasks_per_worker <= kMaxTasksPerWorker)
      << "tasks_per_worker " << options_.tasks_per_worker << " outside 1.." << kMaxTasksPerWorker;
  if (registry != nullptr) {
    queue_depth_ = &prometheus::BuildGauge()
                        .Name("kagent_gpu_queue_depth")
                        .Help("GPU tasks waiting for a worker.")
                        .Register(*registry);
    workers_gauge_ = &prometheus::BuildGauge()
                          .Name("kagent_gpu_workers")
                          .Help("GPU workers known to the scheduler, by state.")
                          .Register(*registry);
    worker_busy_ = &prometheus::BuildGauge()
                        .Name("kagent_gpu_worker_busy")
                        .Help("1 while the worker has a GPU task in flight.")
                        .Register(*registry);
    worker_in_flight_ = &prometheus::BuildGauge()
                             .Name("kagent_gpu_worker_tasks_in_flight")
                             .Help("GPU tasks in flight on the worker (at most --worker-tasks).")
                             .Register(*registry);
    worker_busy_seconds_ = &prometheus::BuildCounter()
                                .Name("kagent_gpu_worker_busy_seconds_total")
                                .Help("Seconds each worker had at least one GPU task in flight.")
                                .Register(*registry);
    tasks_ = &prometheus::BuildCounter()
                  .Name("kagent_gpu_tasks_total")
                  .Help("GPU tasks finished, by kind and outcome.")
                  .Register(*registry);
    infra_retries_ = &prometheus::BuildCounter()
                         .Name("kagent_gpu_task_infra_retries_total")
                         .Help("GPU tasks run again after an infrastructure verdict "
                               "(VERDICT_INFRA_ERROR), by kind.")
                         .Register(*registry);
    task_seconds_ = &prometheus::BuildHistogram()
                         .Name("kagent_gpu_task_seconds")
                         .Help("Wall time of GPU tasks on a worker, by kind.")
                         .Register(*registry);
    // Every known series exists from the start, so a scrape shows 0, not "No data"
    // (the per-worker ones from the worker's registration).
    for (GpuTask::Kind k : {GpuTask::Kind::kMeasure, GpuTask::Kind::kProfile,
                            GpuTask::Kind::kScreen}) {
      const char* kind = KindName(k);
      for (const char* outcome : {"ok", "infra_error", "error"}) {
        tasks_->Add({{"kind", kind}, {"outcome", outcome}});
      }
      infra_retries_->Add({{"kind", kind}});
      task_seconds_->Add({{"kind", kind}}, Metrics::LatencyBuckets());
    }
    queue_depth_->Add({}).Set(0);
    workers_gauge_->Add({{"state", "alive"}}).Set(0);
    workers_gauge_->Add({{"state", "down"}}).Set(0);
  }
  release_thread_ = std::thread([this] { ReleaseLoop(); });
}

Scheduler::~Scheduler() {
  {
    absl::MutexLock lock(&release_mu_);
    release_stop_ = true;
  }
  release_thread_.join();
}

absl::Status Scheduler::RegisterWorker(const std::string& worker_id, const std::string& address,
                                       const std::vector<v1::GpuSpec>& gpus, bool is_static) {
  if (worker_id.empty() || worker_id.size() > 128) {
    return absl::InvalidArgumentError("worker_id must be 1..128 characters");
  }
  if (address.empty() || address.find(':') == std::string::npos) {
    return absl::InvalidArgumentError("worker address must be host:port");
  }
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  if (it == workers_.end() || it->second.info.address != address) {
    KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<GpuWorker> client, factory_->Connect(address));
    Worker w;
    w.info.id = worker_id;
    w.info.address = address;
    w.info.is_static = is_static;
    if (it != workers_.end()) {
      // The same worker at a new address: its tasks in flight finish on the old client
      // (each call holds it) and are counted against this entry.
      const WorkerInfo& old = it->second.info;
      w.info.tasks_done = old.tasks_done;
      w.info.failures = old.failures;
      w.info.busy_seconds = old.busy_seconds;
      w.info.in_flight = old.in_flight;
      w.busy_since = it->second.busy_since;
    }
    w.client = std::move(client);
    workers_[worker_id] = std::move(w);
    if (worker_busy_seconds_ != nullptr) worker_busy_seconds_->Add({{"worker", worker_id}});
    KLOG(INFO).With("worker", worker_id) << "GPU worker registered at " << address;
  }
  Worker& w = workers_[worker_id];
  w.info.alive = true;
  w.info.gpus = gpus;
  w.down_until = absl::InfinitePast();
  w.lease_expiry = is_static ? absl::InfiniteFuture() : absl::Now() + options_.lease;
  Grant();
  UpdateGauges();
  return absl::OkStatus();
}

void Scheduler::RemoveWorker(const std::string& worker_id) {
  absl::MutexLock lock(&mu_);
  auto it = workers_.find(worker_id);
  if (it != workers_.end() && it->second.info.in_flight == 0) workers_.erase(it);
  else if (it != workers_.end()) it->second.lease_expiry = absl::InfinitePast();
  UpdateGauges();
}

bool Scheduler::Usable(const Worker& w, absl::Time now) const {
  return w.lease_expiry > now && w.down_until <= now;
}

bool Scheduler::AnyUsable(absl::Time now) const {
  for (const auto& [id, w] : workers_) {
    if (Usable(w, now)) return true;
  }
  return false;
}

void Scheduler::AccountBusy(Worker& w, absl::Time now) {
  if (w.info.in_flight > 0) {
    double seconds = std::max(0.0, absl::ToDoubleSeconds(now - w.busy_since));
    w.info.busy_seconds += seconds;
    if (worker_busy_seconds_ != nullptr) {
      worker_busy_seconds_->Add({{"worker", w.info.id}}).Increment(seconds);
    }
  }
  w.busy_since = now;
}

bool Scheduler::MayRunOn(const Pending& p, const std::string& id, absl::Time now) const {
  if (p.avoid == nullptr || p.avoid->count(id) == 0) return true;
  // A worker that failed the task, only when every usable worker did.
  for (const auto& [other, w] : workers_) {
    if (p.avoid->count(other) == 0 && Usable(w, now)) return false;
  }
  return true;
}

void Scheduler::Grant() {
  absl::Time now = absl::Now();
  while (true) {
    // Usable workers with a free task slot, the fewest tasks in flight first, so that work
    // spreads over the GPUs before it queues on one; on a tie the first after the worker
    // granted last (in id order, wrapping), so equally idle GPUs take turns.
    std::vector<Worker*> free;
    for (int pass = 0; pass < 2; ++pass) {
      for (auto& [id, w] : workers_) {
        if ((pass == 0) != (id > last_worker_)) continue;
        if (w.info.in_flight >= options_.tasks_per_worker || !Usable(w, now)) continue;
        free.push_back(&w);
      }
    }
    std::stable_sort(free.begin(), free.end(), [](const Worker* x, const Worker* y) {
      return x->info.in_flight < y->info.in_flight;
    });
    // The first of them that can take a task: the first task it may run of the next job
    // after the one served last (round-robin over jobs).
    Worker* to = nullptr;
    Pending* chosen = nullptr;
    for (Worker* w : free) {
      std::optional<Pending*> taken = queue_.TakeNext(
          [&](Pending* const& p) ABSL_NO_THREAD_SAFETY_ANALYSIS {  // mu_ is held
            return MayRunOn(*p, w->info.id, now);
          });
      if (taken) {
        chosen = *taken;
        to = w;
        break;
      }
    }
    if (chosen == nullptr) return;
    chosen->granted = to->info.id;
    last_worker_ = to->info.id;
    AccountBusy(*to, now);
    ++to->info.in_flight;
  }
}

void Scheduler::UpdateGauges() {
  if (queue_depth_ == nullptr) return;
  queue_depth_->Add({}).Set(static_cast<double>(queue_.size()));
  absl::Time now = absl::Now();
  int alive = 0, down = 0;
  for (const auto& [id, w] : workers_) {
    (Usable(w, now) ? alive : down)++;
    worker_busy_->Add({{"worker", id}}).Set(w.info.in_flight > 0 ? 1 : 0);
    worker_in_flight_->Add({{"worker", id}}).Set(w.info.in_flight);
  }
  workers_gauge_->Add({{"state", "alive"}}).Set(alive);
  workers_gauge_->Add({{"state", "down"}}).Set(down);
}

void Scheduler::StoreResult(const GpuTask& task, const GpuTaskResult& r) {
  if (storage_ == nullptr) return;
  absl::StatusOr<std::string> kept =
      storage_->PutTaskResult(task.job_id, task.task_id, SerializeResult(task, r));
  if (!kept.ok()) {
    KLOG(WARNING) << "could not store result of task " << task.task_id << ": " << kept.status();
  }
}

absl::StatusOr<GpuTaskResult> Scheduler::Run(const GpuTask& task, CancelToken* cancel) {
  if (task.task_id.empty() || task.job_id.empty()) {
    return absl::InvalidArgumentError("GPU task needs task_id and job_id");
  }
  // Idempotence: a stored result is the answer.
  if (storage_ != nullptr) {
    absl::StatusOr<std::string> stored = storage_->GetTaskResult(task.task_id);
    if (stored.ok()) {
      GpuTaskResult r;
      r.from_storage = true;
      if (ParseResult(task, *stored, &r)) return r;
      KLOG(WARNING) << "stored result of task " << task.task_id << " unreadable; re-running";
    }
  }
  const char* kind = KindName(task.kind);
  absl::Status last = absl::UnavailableError("not run");
  std::set<std::string> failed_on;   // workers that failed this task
  std::vector<std::string> tried;    // the worker of each attempt, in order
  std::optional<GpuTaskResult> infra;  // the last INFRA_ERROR result
  for (int attempt = 1; attempt <= options_.max_attempts; ++attempt) {
    std::string worker_id;
    absl::StatusOr<GpuTaskResult> r = RunOnce(task, cancel, &failed_on, &worker_id);
    if (!worker_id.empty()) tried.push_back(worker_id);
    if (r.ok() && InfraReason(task, *r).empty()) {
      StoreResult(task, *r);
      if (tasks_ != nullptr) tasks_->Add({{"kind", kind}, {"outcome", "ok"}}).Increment();
      return r;
    }
    if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError("job cancelled");
    if (r.ok()) {
      // The worker's harness failed, not the candidate: the task runs again elsewhere.
      infra = *std::move(r);
      failed_on.insert(worker_id);
      if (attempt < options_.max_attempts) {
        KLOG(WARNING).With("worker", worker_id)
            << "GPU task " << task.task_id << " hit an infrastructure failure on the worker "
            << "(attempt " << attempt << " of " << options_.max_attempts
            << "): " << InfraReason(task, *infra) << "; running it again";
        if (infra_retries_ != nullptr) infra_retries_->Add({{"kind", kind}}).Increment();
      }
      continue;
    }
    last = r.status();
    if (worker_id.empty() || !IsTransportFailure(last)) break;  // not the worker's fault
    failed_on.insert(worker_id);
    KLOG(WARNING).With("worker", worker_id)
        << "GPU task " << task.task_id << " failed on worker (attempt " << attempt
        << "): " << last << "; moving it to another worker";
  }
  if (infra) {
    // Every attempt failed on the infrastructure (the last ones maybe by transport).
    MarkInfraSpent(task, tried, &*infra);
    KLOG(ERROR) << "GPU task " << task.task_id << ": " << InfraReason(task, *infra);
    StoreResult(task, *infra);
    if (tasks_ != nullptr) tasks_->Add({{"kind", kind}, {"outcome", "infra_error"}}).Increment();
    return *std::move(infra);
  }
  if (tasks_ != nullptr) tasks_->Add({{"kind", kind}, {"outcome", "error"}}).Increment();
  return last;
}

absl::StatusOr<GpuTaskResult> Scheduler::RunOnce(const GpuTask& task, CancelToken* cancel,
                                                 const std::set<std::string>* avoid,
                                                 std::string* worker_id) {
  Pending pending{&task, "", false, avoid};
  std::shared_ptr<GpuWorker> client;
  {
    absl::MutexLock lock(&mu_);
    queue_.Push(task.job_id, &pending);
    Grant();
    UpdateGauges();
    absl::Time no_worker_since = absl::Now();
    while (pending.granted.empty()) {
      if (cancel != nullptr && cancel->cancelled()) break;
      absl::Time now = absl::Now();
      if (AnyUsable(now)) {
        no_worker_since = now;
      } else if (now - no_worker_since > options_.no_worker_timeout) {
        break;
      }
      mu_.AwaitWithTimeout(absl::Condition(+[](Pending* p) { return !p->granted.empty(); },
                                           &pending),
                           absl::Milliseconds(200));
      Grant();
    }
    if (pending.granted.empty()) {
      queue_.Remove(task.job_id, &pending);
      UpdateGauges();
      if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError("job cancelled");
      return absl::UnavailableError(absl::StrCat(
          "no GPU worker available for ", absl::FormatDuration(options_.no_worker_timeout),
          " (", workers_.size(),
          " known, none live): start one with `kagent-benchmark --coordinator=ADDR` or give "
          "kagentd --gpus / --workers"));
    }
    *worker_id = pending.granted;
    client = workers_.at(pending.granted).client;
    UpdateGauges();
  }
  absl::Time start = absl::Now();
  GpuTaskResult result;
  absl::Status status;
  switch (task.kind) {
    case GpuTask::Kind::kMeasure: {
      auto r = client->Measure(task.measure, options_.measure_timeout, cancel);
      status = r.status();
      if (r.ok()) result.measure = *std::move(r);
      break;
    }
    case GpuTask::Kind::kProfile: {
      auto r = client->Profile(task.profile, options_.profile_timeout, cancel);
      status = r.status();
      if (r.ok()) result.profile = *std::move(r);
      break;
    }
    case GpuTask::Kind::kScreen: {
      auto r = client->Screen(task.screen, options_.screen_timeout, cancel);
      status = r.status();
      if (r.ok()) result.screen = *std::move(r);
      break;
    }
  }
  absl::Time end = absl::Now();
  double seconds = absl::ToDoubleSeconds(end - start);
  result.seconds = seconds;
  result.worker_id = *worker_id;
  {
    absl::MutexLock lock(&mu_);
    auto it = workers_.find(*worker_id);
    // A worker with tasks in flight is never erased (RemoveWorker), and a re-registration
    // carries its in-flight count over.
    KAGENT_CHECK(it != workers_.end() && it->second.info.in_flight > 0)
        << "worker " << *worker_id << " lost track of its task " << task.task_id;
    Worker& w = it->second;
    AccountBusy(w, end);
    --w.info.in_flight;
    if (status.ok() && !InfraReason(task, result).empty()) {
      ++w.info.failures;  // its harness failed; it stays in rotation (Run prefers others)
    } else if (status.ok()) {
      ++w.info.tasks_done;
    } else if (IsTransportFailure(status) && !(cancel && cancel->cancelled())) {
      ++w.info.failures;
      if (w.info.is_static) {
        w.down_until = absl::Now() + options_.static_cooldown;
      } else {
        w.lease_expiry = absl::InfinitePast();  // must re-register
      }
    }
    if (task_seconds_ != nullptr) {
      task_seconds_->Add({{"kind", KindName(task.kind)}}, Metrics::LatencyBuckets())
          .Observe(seconds);
    }
    Grant();
    UpdateGauges();
  }
  if (!status.ok()) return status;
  return result;
}

void Scheduler::ReleaseJob(const std::string& job_id) {
  if (job_id.empty()) return;
  absl::MutexLock lock(&release_mu_);
  release_queue_.push_back(job_id);
}

void Scheduler::ReleaseLoop() {
  while (true) {
    std::string job_id;
    {
      absl::MutexLock lock(&release_mu_);
      auto ready = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(release_mu_) {
        return release_stop_ || !release_queue_.empty();
      };
      release_mu_.Await(absl::Condition(&ready));
      if (release_queue_.empty()) return;  // stopping, and nothing left to send
      job_id = std::move(release_queue_.front());
      release_queue_.pop_front();
    }
    std::vector<std::pair<std::string, std::shared_ptr<GpuWorker>>> targets;
    {
      absl::MutexLock lock(&mu_);
      absl::Time now = absl::Now();
      for (const auto& [id, w] : workers_) {
        if (Usable(w, now)) targets.emplace_back(id, w.client);
      }
    }
    v1::ReleaseJobRequest request;
    request.set_job_id(job_id);
    std::vector<std::future<absl::StatusOr<v1::ReleaseJobResponse>>> calls;
    for (const auto& [id, client] : targets) {
      GpuWorker* c = client.get();
      calls.push_back(std::async(std::launch::async, [c, &request, this] {
        return c->ReleaseJob(request, options_.release_timeout);
      }));
    }
    for (size_t i = 0; i < calls.size(); ++i) {
      absl::StatusOr<v1::ReleaseJobResponse> r = calls[i].get();
      if (r.ok()) {
        KLOG(DEBUG).With("worker", targets[i].first).With("job_id", job_id)
            << "job released on the worker" << (r->released() ? "" : " (it held nothing)");
      } else if (r.status().code() == absl::StatusCode::kUnimplemented) {
        KLOG(INFO).With("worker", targets[i].first).With("job_id", job_id)
            << "the worker has no ReleaseJob (an older worker): " << r.status();
      } else {
        KLOG(WARNING).With("worker", targets[i].first).With("job_id", job_id)
            << "ReleaseJob failed (ignored; the worker keeps the job's data until it evicts "
               "it): "
            << r.status();
      }
    }
  }
}

std::vector<WorkerInfo> Scheduler::Workers() const {
  absl::MutexLock lock(&mu_);
  std::vector<WorkerInfo> out;
  absl::Time now = absl::Now();
  for (const auto& [id, w] : workers_) {
    WorkerInfo info = w.info;
    info.alive = Usable(w, now);
    if (w.info.in_flight > 0) info.busy_seconds += absl::ToDoubleSeconds(now - w.busy_since);
    out.push_back(info);
  }
  return out;
}

int Scheduler::QueueDepth() const {
  absl::MutexLock lock(&mu_);
  return static_cast<int>(queue_.size());
}

absl::StatusOr<v1::GpuSpec> Scheduler::AnyGpuSpec() const {
  absl::MutexLock lock(&mu_);
  absl::Time now = absl::Now();
  for (const auto& [id, w] : workers_) {
    if (Usable(w, now) && !w.info.gpus.empty()) return w.info.gpus.front();
  }
  return absl::NotFoundError("no live GPU worker has reported its GPU");
}

}  // namespace kagent
