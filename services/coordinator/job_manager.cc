#include "services/coordinator/job_manager.h"

#include <algorithm>
#include <utility>

#include <google/protobuf/util/time_util.h>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "services/coordinator/job_run.h"
#include "services/coordinator/job_store.h"

namespace kagent {

using google::protobuf::util::TimeUtil;

JobManager::JobManager(JobDefaults defaults, Storage* storage, Scheduler* scheduler,
                       LoopServices* services, prometheus::Registry* registry)
    : defaults_(defaults),
      storage_(storage),
      scheduler_(scheduler),
      metrics_(JobMetrics::Register(registry)),
      run_deps_{.defaults = defaults,
                .storage = storage,
                .scheduler = scheduler,
                .services = services,
                .metrics = metrics_,
                .shutting_down = [this] { return ShuttingDown(); },
                .emit = [this](const std::string& job_id, v1::JobEvent event) {
                  return Emit(job_id, std::move(event));
                }} {}

bool JobManager::ShuttingDown() const {
  absl::MutexLock lock(&mu_);
  return shutting_down_;
}

JobManager::~JobManager() { Shutdown(); }

v1::JobConfig JobManager::EffectiveConfig(const v1::JobConfig& in) const {
  v1::JobConfig c = in;
  if (!c.has_beam_width()) c.set_beam_width(defaults_.beam_width);
  if (!c.has_fixes_per_kernel()) c.set_fixes_per_kernel(defaults_.fixes_per_kernel);
  if (c.strategy() == v1::SEARCH_STRATEGY_UNSPECIFIED) c.set_strategy(v1::SEARCH_STRATEGY_BEAM);
  // GREEDY is beam width 1; SubmitJob refuses GREEDY with another explicit width
  // (ValidateSubmit), so this only fills in a width left out.
  if (c.strategy() == v1::SEARCH_STRATEGY_GREEDY) c.set_beam_width(1);
  if (!c.has_plateau_rounds()) c.set_plateau_rounds(defaults_.plateau_rounds);
  if (!c.has_target_efficiency_pct()) c.set_target_efficiency_pct(defaults_.target_efficiency_pct);
  if (c.brain().empty()) c.set_brain("heuristic");
  v1::Budget* b = c.mutable_budget();
  if (!b->has_max_rounds()) b->set_max_rounds(defaults_.max_rounds);
  if (!b->has_max_wall_seconds()) b->set_max_wall_seconds(defaults_.max_wall_seconds);
  return c;
}

absl::StatusOr<v1::Job> JobManager::Submit(v1::Job job, const std::string& idempotency_key) {
  *job.mutable_config() = EffectiveConfig(job.config());
  job.set_state(v1::JOB_STATE_QUEUED);
  auto now = TimeUtil::GetCurrentTime();
  *job.mutable_created_at() = now;
  *job.mutable_updated_at() = now;
  v1::JobEvent e;
  e.set_type(v1::JOB_EVENT_STATE_CHANGED);
  e.set_state(v1::JOB_STATE_QUEUED);
  e.set_message("job queued");
  e.set_total_rounds(job.config().budget().max_rounds());
  e.set_job_id(job.id());
  *e.mutable_time() = now;
  // The job and its first event in one transaction: a failed Submit leaves nothing (no
  // job without events, which WatchJob would wait on and a restart would run).
  CreateJobResult created;
  int64_t sequence = 0;
  absl::Status stored = storage_->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(created, tx.CreateJob(job, idempotency_key));
    if (!created.created) return absl::OkStatus();
    KAGENT_ASSIGN_OR_RETURN(sequence, tx.AppendEvent(job.id(), e));
    return absl::OkStatus();
  });
  if (!stored.ok()) {
    metrics_.CountStorageFailure(stored, "submit");
    return stored;
  }
  if (!created.created) return created.stored.job;
  NoteEvent(job.id(), sequence);
  if (metrics_.jobs_submitted != nullptr) metrics_.jobs_submitted->Add({}).Increment();
  absl::MutexLock lock(&mu_);
  if (!shutting_down_) {
    waiting_.push_back(job.id());
    MaybeStartQueued();
  }
  return created.stored.job;
}

absl::StatusOr<v1::Job> JobManager::Cancel(const std::string& job_id, const std::string& reason) {
  bool changed = false;
  KAGENT_ASSIGN_OR_RETURN(v1::Job job, MutateJob(*storage_, job_id, [&](v1::Job& j) {
    if (j.state() == v1::JOB_STATE_CANCELLED) return absl::OkStatus();
    if (IsTerminal(j.state())) {
      return absl::FailedPreconditionError(absl::StrCat(
          "job ", job_id, " already finished (", v1::JobState_Name(j.state()), ")"));
    }
    j.set_state(v1::JOB_STATE_CANCELLED);
    j.mutable_result()->set_stop_reason(reason.empty() ? "cancelled" : "cancelled: " + reason);
    changed = true;
    return absl::OkStatus();
  }));
  if (changed) {
    v1::JobEvent e;
    e.set_type(v1::JOB_EVENT_JOB_FINISHED);
    e.set_state(v1::JOB_STATE_CANCELLED);
    e.set_message(job.result().stop_reason());
    (void)Emit(job_id, e);
    if (metrics_.jobs_finished != nullptr) {
      metrics_.jobs_finished->Add({{"state", "CANCELLED"}}).Increment();
    }
    absl::MutexLock lock(&mu_);
    waiting_.erase(std::remove(waiting_.begin(), waiting_.end(), job_id), waiting_.end());
    auto it = running_.find(job_id);
    if (it != running_.end() && !it->second.finished) {
      it->second.cancel->Cancel();  // the job's thread releases it on the workers at its end
    } else {
      scheduler_->ReleaseJob(job_id);  // it may have run before a restart
    }
  }
  return job;
}

absl::Status JobManager::ResumeUnfinished() {
  KAGENT_ASSIGN_OR_RETURN(std::vector<StoredJob> jobs, storage_->ListUnfinishedJobs());
  absl::MutexLock lock(&mu_);
  for (const StoredJob& s : jobs) {
    KLOG(INFO).With("job_id", s.job.id())
        << "resuming job in state " << v1::JobState_Name(s.job.state());
    waiting_.push_back(s.job.id());
  }
  MaybeStartQueued();
  return absl::OkStatus();
}

void JobManager::MaybeStartQueued() {
  // Reap finished threads.
  for (auto it = running_.begin(); it != running_.end();) {
    if (it->second.finished) {
      if (it->second.thread.joinable()) it->second.thread.detach();
      it = running_.erase(it);
    } else {
      ++it;
    }
  }
  while (!shutting_down_ && !waiting_.empty() &&
         static_cast<int>(running_.size()) < defaults_.max_concurrent_jobs) {
    std::string id = waiting_.front();
    waiting_.erase(waiting_.begin());
    StartLocked(id);
  }
  if (metrics_.jobs_running != nullptr) {
    metrics_.jobs_running->Add({{"state", "running"}}).Set(static_cast<double>(running_.size()));
    metrics_.jobs_running->Add({{"state", "queued"}}).Set(static_cast<double>(waiting_.size()));
  }
}

void JobManager::StartLocked(const std::string& job_id) {
  if (running_.count(job_id)) return;
  Running& r = running_[job_id];
  r.cancel = std::make_unique<CancelToken>();
  CancelToken* token = r.cancel.get();
  r.thread = std::thread([this, job_id, token] {
    RunJob(job_id, token);
    absl::MutexLock lock(&mu_);
    auto it = running_.find(job_id);
    if (it != running_.end()) it->second.finished = true;
    MaybeStartQueued();
  });
}

void JobManager::RunJob(const std::string& job_id, CancelToken* cancel) {
  LogScope scope({.job_id = job_id});
  JobRun run(run_deps_, job_id, cancel);
  run.Run();
}

absl::StatusOr<int64_t> JobManager::Emit(const std::string& job_id, v1::JobEvent event) {
  event.set_job_id(job_id);
  event.set_sequence(0);
  *event.mutable_time() = TimeUtil::GetCurrentTime();
  KAGENT_ASSIGN_OR_RETURN(int64_t seq, storage_->AppendEvent(job_id, event));
  NoteEvent(job_id, seq);
  return seq;
}

void JobManager::NoteEvent(const std::string& job_id, int64_t sequence) {
  absl::MutexLock lock(&events_mu_);
  int64_t& last = last_sequence_[job_id];
  last = std::max(last, sequence);
}

void JobManager::WaitForEvent(const std::string& job_id, int64_t after, absl::Duration timeout,
                              const std::function<bool()>& cancelled) {
  absl::MutexLock lock(&events_mu_);
  auto ready = [&]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(events_mu_) {
    auto it = last_sequence_.find(job_id);
    return it != last_sequence_.end() && it->second > after;
  };
  absl::Time deadline = absl::Now() + timeout;
  while (!ready() && absl::Now() < deadline && !(cancelled && cancelled())) {
    events_mu_.AwaitWithDeadline(absl::Condition(&ready),
                                 std::min(deadline, absl::Now() + absl::Milliseconds(100)));
  }
}

void JobManager::Shutdown() {
  std::map<std::string, Running> running;
  {
    absl::MutexLock lock(&mu_);
    if (shutting_down_ && running_.empty()) return;
    shutting_down_ = true;
    for (auto& [id, r] : running_) r.cancel->Cancel();
  }
  // Join outside the lock: job threads take mu_ when they end.
  while (true) {
    std::thread t;
    {
      absl::MutexLock lock(&mu_);
      auto it = std::find_if(running_.begin(), running_.end(),
                             [](auto& kv) { return kv.second.thread.joinable(); });
      if (it == running_.end()) break;
      t = std::move(it->second.thread);
    }
    t.join();
  }
  absl::MutexLock lock(&mu_);
  running_.clear();
}

int JobManager::running_jobs() const {
  absl::MutexLock lock(&mu_);
  int n = 0;
  for (const auto& [id, r] : running_) n += r.finished ? 0 : 1;
  return n;
}

}  // namespace kagent
