// Builds the coordinator (storage, scheduler, loop clients, job manager, JobService) on a
// ServiceContext. Shared by the kagent-coordinator binary and kagentd.
#ifndef KAGENT_SERVICES_COORDINATOR_COORDINATOR_SETUP_H_
#define KAGENT_SERVICES_COORDINATOR_COORDINATOR_SETUP_H_

#include <string>

#include "absl/status/status.h"
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
  int max_concurrent_jobs = 4;
  // GPU tasks a worker is given at once (SchedulerOptions::tasks_per_worker): its GPU runs
  // one at a time, the next prepares on its CPU cores meanwhile. 1..kMaxTasksPerWorker.
  int worker_tasks = 2;
  int max_active_jobs_per_tenant = 64;
  int default_rounds = 5;
  int default_beam = 2;
  int default_fixes = 2;
  int correctness_trials = 5;
  int timing_reps = 100;
  std::string brains = "heuristic";            // comma-separated accepted JobConfig.brain
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

// `self_address_for_loop` overrides the four loop-service addresses (kagentd dials
// itself); empty keeps the configured ones.
absl::Status SetUpCoordinator(const CoordinatorOptions& options, ServiceContext& ctx,
                              const std::string& self_address_for_loop,
                              Scheduler** scheduler_out);

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_COORDINATOR_SETUP_H_
