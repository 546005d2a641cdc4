// Builds the coordinator (storage, scheduler, loop clients, job manager, JobService) on a
// ServiceContext. Shared by the kagent-coordinator binary and kagentd.
#ifndef KAGENT_SERVICES_COORDINATOR_COORDINATOR_SETUP_H_
#define KAGENT_SERVICES_COORDINATOR_COORDINATOR_SETUP_H_

#include <set>
#include <string>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/options.h"
#include "common/service_main.h"
#include "services/coordinator/job_manager.h"
#include "services/coordinator/loop_services.h"
#include "services/coordinator/scheduler.h"

namespace kagent {

struct CoordinatorOptions {
  std::string db = "var/kagent.db";           // SQLite path or postgres:// URI
  std::string workers;                         // static GPU workers: id=host:port,...
  std::string judge = "127.0.0.1:50052";
  std::string analyzer = "127.0.0.1:50053";
  std::string orchestrator = "127.0.0.1:50054";
  std::string optimization_manager = "127.0.0.1:50055";
  std::string tls_ca;                          // for outbound calls
  double no_worker_timeout_seconds = 60;
  double worker_lease_seconds = 30;            // a registered worker's lease (RegisterWorker)
  double measure_timeout_seconds = 900;
  double call_timeout_seconds = 60;
  double generate_timeout_seconds = 600;
  // Jobs running at once (the rest queue). 0: chosen for the host (kagentd: enough jobs
  // to give every GPU worker its tasks in flight, KagentdConcurrentJobs; a coordinator
  // of its own: 4).
  int max_concurrent_jobs = 0;
  // GPU tasks a worker is given at once (SchedulerOptions::tasks_per_worker): its GPU runs
  // one at a time, the others prepare on its CPU cores meanwhile. 1..kMaxTasksPerWorker;
  // 0: chosen for the host (kagentd: AutoWorkerTasks; a coordinator of its own, whose
  // workers are elsewhere: 2).
  int worker_tasks = 0;
  int max_active_jobs_per_tenant = 64;
  int default_rounds = 5;
  int default_beam = 2;
  int default_fixes = 2;
  int correctness_trials = 5;
  int timing_reps = 100;
  double timing_budget_ms = 1000;  // 0: no budget (every timed rep, however slow)
  int llm_repairs = 1;  // repair turns per failing LLM-written candidate (0..5)
  std::string brains = "heuristic";            // comma-separated accepted JobConfig.brain
  // The agents the loop services ask the LLM with (engines/llm/llm_agents.h's names,
  // comma-separated), among which a job may choose (JobConfig.llm_agents); empty: none.
  // kagentd sets it from its --llm-agents.
  std::string offered_llm_agents;
  // High availability (services/coordinator/leader_election.h): replicas on one
  // PostgreSQL database elect a leader by lease; followers serve reads and forward
  // writes to it at its --advertise address.
  bool leader_election = false;
  std::string advertise;                       // host:port the other replicas reach us at
  double leader_lease_seconds = 15;

  void Register(OptionSet& o);
  absl::Status Validate() const;
};

// The exit status of a coordinator replica that lost the leader lease (it restarts as a
// follower).
inline constexpr int kExitLostLeadership = 75;

// --worker-tasks=0 in kagentd, whose GPU workers share this host's `cpu_cores`: a task
// prepares on the CPU (interpreter, imports, construction, Triton compilation) and then
// holds its worker's GPU 1-5 s, and every preparing process is stopped while the GPU
// times anything (about half of the held time); preparations took 15-50 s of wall time
// (mean per task kind). On the H100 on 2026-12-06 with 8 in flight on 16
// cores, 7.7 tasks were at the worker on average, the cores were 34 % busy and the slot
// was held 84 % of the time (free, with every task there preparing, the rest; with two
// in flight on the H200 it waited two thirds of the time). One task per core of each GPU
// worker, at least 2, at most kMaxTasksPerWorker; 2 when `gpu_workers` is 0 (a CPU
// worker, where preparing and measuring share the same cores).
int AutoWorkerTasks(int cpu_cores, int gpu_workers);

// --max-concurrent-jobs=0 in kagentd: a job has one GPU task in flight in its baseline,
// profile and final steps (a few in its rounds) and none while its brain plans, so with
// fewer jobs than tasks the workers' slots wait: on the H100 with 4 jobs running and 8
// tasks per worker, the GPU was held 69 % of the bench's time; on the H200 with 8 jobs
// and 8 tasks, 76 %, down to 55 % in the windows where most jobs were between tasks.
// Two jobs per task in flight of every GPU worker, at least 4, at most 1024 (how much of
// the slot's idle time that closes is not yet measured: docs/measurement.md).
int KagentdConcurrentJobs(int worker_tasks, int gpu_workers);

// --offered-llm-agents' value: the names, each one of kAllLlmAgents (engines/llm/
// llm_agents.h) and listed once; INVALID_ARGUMENT naming the entry otherwise.
absl::StatusOr<std::set<std::string>> ParseOfferedLlmAgents(absl::string_view spec);

// `self_address_for_loop` overrides the four loop-service addresses (kagentd dials
// itself); empty keeps the configured ones.
absl::Status SetUpCoordinator(const CoordinatorOptions& options, ServiceContext& ctx,
                              const std::string& self_address_for_loop,
                              Scheduler** scheduler_out);

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_COORDINATOR_SETUP_H_
