#include "services/coordinator/coordinator_setup.h"

#include <algorithm>
#include <cstdlib>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/strings/numbers.h"
#include "common/advertise.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/fenced_storage.h"
#include "common/storage/storage_factory.h"
#include "engines/llm/llm_agents.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "services/coordinator/job_service.h"
#include "services/coordinator/leader_election.h"
#include "services/coordinator/leader_forwarder.h"

namespace kagent {

void CoordinatorOptions::Register(OptionSet& o) {
  o.AddString("db", &db,
              "storage: a SQLite file (PATH or sqlite:PATH, created if missing) or a PostgreSQL "
              "URI (postgres://USER:PASSWORD@HOST:PORT/DB; prefer KAGENT_DB to keep it off argv)",
              /*secret=*/true);
  o.AddString("workers", &workers,
              "static GPU workers, comma-separated id=host:port (workers may also register)");
  o.AddString("judge", &judge, "JudgeService address");
  o.AddString("analyzer", &analyzer, "AnalyzerService address");
  o.AddString("orchestrator", &orchestrator, "OrchestratorService address");
  o.AddString("optimization-manager", &optimization_manager, "OptimizationManagerService address");
  o.AddString("tls-ca", &tls_ca, "CA (PEM) for TLS to the other services; empty: plaintext");
  o.AddDouble("no-worker-timeout-seconds", &no_worker_timeout_seconds,
              "a GPU task with no live worker for this long fails its job");
  o.AddDouble("worker-lease-seconds", &worker_lease_seconds,
              "how long a registered GPU worker stays schedulable after its last renewal");
  o.AddDouble("measure-timeout-seconds", &measure_timeout_seconds, "deadline of one measurement");
  o.AddDouble("call-timeout-seconds", &call_timeout_seconds, "deadline of judge/analyzer/orchestrator calls");
  o.AddDouble("generate-timeout-seconds", &generate_timeout_seconds, "deadline of a Generate call");
  o.AddInt("max-concurrent-jobs", &max_concurrent_jobs,
           "jobs running at once; the rest queue (0: auto: in kagentd two per GPU task in "
           "flight, at least 4; otherwise 4)");
  o.AddInt("worker-tasks", &worker_tasks,
           "GPU tasks in flight on one worker at most (1..16): the worker's GPU runs one at "
           "a time while the others prepare and compile on its CPU cores; 1: one task per "
           "worker; 0: chosen for the host (kagentd: one per core of each GPU worker, "
           "2..16; a coordinator of its own: 2)");
  o.AddInt("max-active-jobs-per-tenant", &max_active_jobs_per_tenant,
           "unfinished jobs a tenant may have; SubmitJob beyond it is RESOURCE_EXHAUSTED");
  o.AddInt("default-rounds", &default_rounds, "rounds when a job sets no budget");
  o.AddInt("default-beam", &default_beam, "beam width K when a job sets none");
  o.AddInt("default-fixes", &default_fixes, "fixes per kernel M when a job sets none");
  o.AddInt("correctness-trials", &correctness_trials, "seeded correctness trials per measurement");
  o.AddInt("timing-reps", &timing_reps, "timed repetitions per measurement");
  o.AddDouble("timing-budget-ms", &timing_budget_ms,
              "wall ms of timed calls after which a slow kernel's timing stops early (at "
              "least 10 calls); 0: every timed repetition");
  o.AddInt("llm-repairs", &llm_repairs,
           "times a candidate an LLM wrote that failed the gate is sent back to it with its "
           "verdict and error, within the round (0..5; 0: never)");
  o.AddString("brains", &brains, "accepted JobConfig.brain values, comma-separated");
  o.AddString("offered-llm-agents", &offered_llm_agents,
              "the agents the loop services ask the LLM with (their --llm-agents' names, e.g. "
              "rewrite,prescribe,reflect,plan,narrate), among which a job may choose "
              "(JobConfig.llm_agents, kagent submit --llm-agents); empty: none (kagentd sets "
              "it from its --llm-agents)");
  o.AddBool("leader-election", &leader_election,
            "run as one of several coordinator replicas on one PostgreSQL --db: the replica "
            "holding the leader lease runs the jobs, the others serve reads and forward "
            "writes to it (SQLite serves one coordinator)");
  o.AddString("advertise", &advertise,
              "with --leader-election: host:port the other replicas reach this one at "
              "(default: this host's name and the --listen port)");
  o.AddDouble("leader-lease-seconds", &leader_lease_seconds,
              "with --leader-election: the leader lease's ttl; a follower takes over within "
              "about this long after the leader stops renewing");
  o.AddValidator([this] { return Validate(); });
}

absl::StatusOr<std::set<std::string>> ParseOfferedLlmAgents(absl::string_view spec) {
  std::set<std::string> agents;
  for (absl::string_view raw : absl::StrSplit(spec, ',', absl::SkipWhitespace())) {
    std::string agent(absl::StripAsciiWhitespace(raw));
    KAGENT_RETURN_IF_ERROR(CheckLlmAgentName(agent, "--offered-llm-agents"));
    if (!agents.insert(agent).second) {
      return absl::InvalidArgumentError(
          absl::StrCat("--offered-llm-agents: agent '", agent, "' is listed twice"));
    }
  }
  return agents;
}

absl::Status CoordinatorOptions::Validate() const {
  if (db.empty()) return absl::InvalidArgumentError("--db must name a file");
  if (no_worker_timeout_seconds <= 0 || measure_timeout_seconds <= 0 || call_timeout_seconds <= 0 ||
      generate_timeout_seconds <= 0) {
    return absl::InvalidArgumentError("timeouts must be positive");
  }
  if (worker_lease_seconds < 3 || worker_lease_seconds > 3600) {
    return absl::InvalidArgumentError("--worker-lease-seconds must be in [3, 3600]");
  }
  if (max_concurrent_jobs < 0 || max_concurrent_jobs > 1024) {
    return absl::InvalidArgumentError("--max-concurrent-jobs must be in [0, 1024] (0: auto)");
  }
  if (worker_tasks < 0 || worker_tasks > kMaxTasksPerWorker) {
    return absl::InvalidArgumentError(
        absl::StrCat("--worker-tasks must be in [0, ", kMaxTasksPerWorker, "] (0: auto)"));
  }
  if (default_rounds < 1 || default_rounds > 1000 || default_beam < 1 || default_beam > 16 ||
      default_fixes < 1 || default_fixes > 16) {
    return absl::InvalidArgumentError(
        "--default-rounds in [1,1000], --default-beam and --default-fixes in [1,16]");
  }
  if (correctness_trials < 5 || correctness_trials > 100 || timing_reps < 100 || timing_reps > 100000) {
    return absl::InvalidArgumentError(
        "--correctness-trials must be in [5,100] and --timing-reps in [100,100000]");
  }
  if (!(timing_budget_ms >= 0 && timing_budget_ms <= 1e6)) {
    return absl::InvalidArgumentError(
        absl::StrCat("--timing-budget-ms must be in [0,1e6] (got ", timing_budget_ms, ")"));
  }
  if (absl::StatusOr<std::set<std::string>> agents = ParseOfferedLlmAgents(offered_llm_agents);
      !agents.ok()) {
    return agents.status();
  }
  if (llm_repairs < 0 || llm_repairs > 5) {
    return absl::InvalidArgumentError(absl::StrCat("--llm-repairs must be in [0,5], got ", llm_repairs));
  }
  if (leader_election) {
    absl::StatusOr<StorageUrl> url = ParseStorageUrl(db);
    if (url.ok() && url->backend != StorageBackend::kPostgres) {
      return absl::InvalidArgumentError(
          "--leader-election needs a PostgreSQL --db (postgres://...): a SQLite database "
          "serves one coordinator replica");
    }
    if (leader_lease_seconds < 3 || leader_lease_seconds > 3600) {
      return absl::InvalidArgumentError("--leader-lease-seconds must be in [3, 3600]");
    }
  }
  if (!workers.empty()) {
    for (absl::string_view w : absl::StrSplit(workers, ',', absl::SkipEmpty())) {
      std::vector<std::string> kv = absl::StrSplit(w, absl::MaxSplits('=', 1));
      if (kv.size() != 2 || kv[0].empty() || kv[1].find(':') == std::string::npos) {
        return absl::InvalidArgumentError(
            absl::StrCat("--workers entry '", w, "' must be id=host:port"));
      }
    }
  }
  return absl::OkStatus();
}

int KagentdConcurrentJobs(int worker_tasks, int gpu_workers) {
  return std::clamp(2 * worker_tasks * gpu_workers, 4, 1024);
}

int AutoWorkerTasks(int cpu_cores, int gpu_workers) {
  if (gpu_workers <= 0) return 2;
  return std::clamp(cpu_cores / gpu_workers, 2, kMaxTasksPerWorker);
}

absl::Status SetUpCoordinator(const CoordinatorOptions& o, ServiceContext& ctx,
                              const std::string& self_address, Scheduler** scheduler_out) {
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Storage> storage, OpenStorage(o.db));
  Storage* store = ctx.Keep(std::move(storage));
  KLOG(INFO) << "storage: " << RedactStorageUrl(o.db);
  LeaderElector* elector = nullptr;
  if (o.leader_election) {
    LeaderElectionOptions eo;
    eo.holder = UniqueHolderId();
    eo.address = o.advertise;
    if (eo.address.empty()) {
      const std::string& listen = ctx.server_options->listen;
      int port = 0;
      if (!absl::SimpleAtoi(listen.substr(listen.rfind(':') + 1), &port) || port == 0) {
        return absl::InvalidArgumentError(
            "--leader-election with an ephemeral --listen port needs --advertise host:port");
      }
      eo.address = DefaultAdvertiseAddress(listen, port);
    }
    eo.ttl = absl::Seconds(o.leader_lease_seconds);
    KAGENT_RETURN_IF_ERROR(eo.Validate());
    elector = ctx.Keep(std::make_unique<LeaderElector>(eo, store, &ctx.metrics->registry()));
    // Every write of this replica commits only while it holds the lease at its term.
    store = ctx.Keep(std::make_unique<FencedStorage>(
        store, [elector](Storage& tx) { return elector->CheckFence(tx); }));
  }

  ChannelOptions channel;
  channel.tls_ca = o.tls_ca;
  channel.max_message_bytes = ctx.server_options->max_message_bytes;
  auto* factory = ctx.Keep(std::make_unique<GrpcGpuWorkerFactory>(channel, ctx.server_options->internal_token));
  SchedulerOptions so;
  so.no_worker_timeout = absl::Seconds(o.no_worker_timeout_seconds);
  so.lease = absl::Seconds(o.worker_lease_seconds);
  so.measure_timeout = absl::Seconds(o.measure_timeout_seconds);
  so.screen_timeout = absl::Seconds(o.measure_timeout_seconds);  // a screen is one harness run too
  so.tasks_per_worker = o.worker_tasks > 0 ? o.worker_tasks : 2;
  auto* scheduler = ctx.Keep(std::make_unique<Scheduler>(so, store, factory, &ctx.metrics->registry()));
  if (!o.workers.empty()) {
    for (absl::string_view w : absl::StrSplit(o.workers, ',', absl::SkipEmpty())) {
      std::vector<std::string> kv = absl::StrSplit(w, absl::MaxSplits('=', 1));
      KAGENT_RETURN_IF_ERROR(scheduler->RegisterWorker(kv[0], kv[1], {}, /*is_static=*/true));
    }
  }
  if (scheduler_out != nullptr) *scheduler_out = scheduler;

  LoopServiceAddresses addr{o.judge, o.analyzer, o.orchestrator, o.optimization_manager};
  if (!self_address.empty()) addr = {self_address, self_address, self_address, self_address};
  KAGENT_ASSIGN_OR_RETURN(
      std::unique_ptr<GrpcLoopServices> loop,
      GrpcLoopServices::Create(addr, channel, ctx.server_options->internal_token,
                               absl::Seconds(o.call_timeout_seconds),
                               absl::Seconds(o.generate_timeout_seconds)));
  LoopServices* services = ctx.Keep(std::move(loop));

  JobDefaults d;
  d.beam_width = o.default_beam;
  d.fixes_per_kernel = o.default_fixes;
  d.max_rounds = o.default_rounds;
  d.max_concurrent_jobs = o.max_concurrent_jobs > 0 ? o.max_concurrent_jobs : 4;
  d.correctness_trials = o.correctness_trials;
  d.timing_reps = o.timing_reps;
  d.timing_budget_ms = o.timing_budget_ms > 0 ? o.timing_budget_ms : -1;
  d.llm_repairs = o.llm_repairs;
  JobManager* jobs = ctx.Keep(std::make_unique<JobManager>(d, store, scheduler, services,
                                                           &ctx.metrics->registry()));
  JobServiceLimits limits;
  limits.max_active_jobs_per_tenant = o.max_active_jobs_per_tenant;
  limits.llm_agents = *ParseOfferedLlmAgents(o.offered_llm_agents);  // validated
  limits.brains.clear();
  for (absl::string_view b : absl::StrSplit(o.brains, ',', absl::SkipEmpty())) {
    limits.brains.insert(std::string(b));
  }
  auto* svc = ctx.Keep(std::make_unique<JobServiceImpl>(limits, store, jobs, scheduler, ctx.auth));
  ctx.host->AddService(svc, v1::JobService::service_full_name());
  if (elector == nullptr) {
    ctx.OnStarted([jobs] { return jobs->ResumeUnfinished(); });
    ctx.OnStop([jobs] { jobs->Shutdown(); });
    return absl::OkStatus();
  }
  svc->SetLeaderForwarder(ctx.Keep(std::make_unique<LeaderForwarder>(
      elector, channel, absl::Seconds(o.call_timeout_seconds))));
  // Stop hooks run in reverse: the jobs stop first, then the lease is released, so a
  // follower takes over at once and finds every job at a completed step.
  ctx.OnStop([elector] { elector->Stop(); });
  ctx.OnStop([jobs] { jobs->Shutdown(); });
  ctx.OnStarted([elector, jobs]() -> absl::Status {
    elector->Start(
        [jobs](int64_t term) {
          absl::Status resumed = jobs->ResumeUnfinished();
          if (!resumed.ok()) {
            KLOG(ERROR) << "leader election: resuming the unfinished jobs at term " << term
                        << " failed: " << resumed << "; exiting so that another replica leads";
            std::_Exit(kExitLostLeadership);
          }
        },
        [](const std::string& reason) {
          // The job threads of this replica may be in the middle of a step: its writes
          // are fenced already, and the successor resumes every job from its last
          // completed step. Exiting at once is the one clean way to stop them all.
          KLOG(ERROR) << "leader election: lost the leader lease (" << reason
                      << "); exiting with status " << kExitLostLeadership
                      << " so that this replica restarts as a follower";
          std::_Exit(kExitLostLeadership);
        });
    return absl::OkStatus();
  });
  return absl::OkStatus();
}

}  // namespace kagent
