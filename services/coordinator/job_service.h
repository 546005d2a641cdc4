// JobServiceImpl: the public job API (kagent.v1.JobService), served by the coordinator.
// Validates every request (INVALID_ARGUMENT, NOT_FOUND, RESOURCE_EXHAUSTED,
// UNAUTHENTICATED, PERMISSION_DENIED with a message saying what to fix), scopes every
// job to the caller's tenant (another tenant's job is NOT_FOUND), and hands accepted jobs
// to the JobManager. Thread-safe.
#ifndef KAGENT_SERVICES_COORDINATOR_JOB_SERVICE_H_
#define KAGENT_SERVICES_COORDINATOR_JOB_SERVICE_H_

#include <set>
#include <string>

#include "common/auth.h"
#include "common/storage/storage.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "services/coordinator/job_manager.h"
#include "services/coordinator/leader_forwarder.h"
#include "services/coordinator/scheduler.h"

namespace kagent {

struct JobServiceLimits {
  int64_t max_source_bytes = 1 << 20;        // problem and kernel sources
  int max_active_jobs_per_tenant = 64;
  int max_extra_shapes = 16;
  std::set<std::string> brains = {"heuristic"};  // accepted JobConfig.brain values
  // The agents the loop services have on the LLM (--offered-llm-agents), among which
  // JobConfig.llm_agents may choose; empty: none.
  std::set<std::string> llm_agents;
};

// Checks a SubmitJobRequest; the message names the field and the accepted range.
// config.llm_agents must list agents of `limits.llm_agents`, each once, and "rewrite"
// exactly when config.brain names an LLM brain (not "heuristic" or empty); the message
// lists the agents offered.
absl::Status ValidateSubmit(const v1::SubmitJobRequest& request, const JobServiceLimits& limits);

class JobServiceImpl final : public v1::JobService::Service {
 public:
  // Borrowed pointers must outlive the service; `auth` may be null (auth off).
  JobServiceImpl(JobServiceLimits limits, Storage* storage, JobManager* jobs,
                 Scheduler* scheduler, const Authenticator* auth)
      : limits_(std::move(limits)), storage_(storage), jobs_(jobs), scheduler_(scheduler),
        auth_(auth) {}

  // With leader election: while `forwarder` says this replica does not lead, SubmitJob
  // and CancelJob are forwarded to the leader (after the caller is authenticated here),
  // and RegisterWorker registers the worker here and with the leader; reads are served
  // from storage by every replica. Borrowed; call before serving.
  void SetLeaderForwarder(LeaderForwarder* forwarder) { forwarder_ = forwarder; }

  grpc::Status SubmitJob(grpc::ServerContext* context, const v1::SubmitJobRequest* request,
                         v1::SubmitJobResponse* response) override;
  grpc::Status GetJob(grpc::ServerContext* context, const v1::GetJobRequest* request,
                      v1::GetJobResponse* response) override;
  grpc::Status ListJobs(grpc::ServerContext* context, const v1::ListJobsRequest* request,
                        v1::ListJobsResponse* response) override;
  grpc::Status CancelJob(grpc::ServerContext* context, const v1::CancelJobRequest* request,
                         v1::CancelJobResponse* response) override;
  grpc::Status WatchJob(grpc::ServerContext* context, const v1::WatchJobRequest* request,
                        grpc::ServerWriter<v1::JobEvent>* writer) override;
  grpc::Status ListCandidates(grpc::ServerContext* context,
                              const v1::ListCandidatesRequest* request,
                              v1::ListCandidatesResponse* response) override;
  grpc::Status GetArtifacts(grpc::ServerContext* context, const v1::GetArtifactsRequest* request,
                            v1::GetArtifactsResponse* response) override;
  grpc::Status RegisterWorker(grpc::ServerContext* context,
                              const v1::RegisterWorkerRequest* request,
                              v1::RegisterWorkerResponse* response) override;

 private:
  // The job if it exists and belongs to the caller's tenant; NOT_FOUND otherwise.
  absl::StatusOr<v1::Job> OwnJob(const Caller& caller, const std::string& job_id);

  const JobServiceLimits limits_;
  Storage* storage_;
  JobManager* jobs_;
  Scheduler* scheduler_;
  const Authenticator* auth_;
  LeaderForwarder* forwarder_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_JOB_SERVICE_H_
