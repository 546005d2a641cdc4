// kagent::Storage: the coordinator's persistent state behind one backend-neutral
// interface.
//
// The coordinator is the only stateful service; everything it must not forget lives
// here: jobs (with an optimistic-concurrency revision), each job's event log (sequence
// numbers 1, 2, 3, ... that WatchJob clients resume from), candidates with their
// measurements, idempotent GPU task results, reflexions (per job and a cross-job memory
// keyed by tenant, op class and GPU architecture), artifacts, and per-job checkpoints
// that let a job resume from its last completed step after a restart.
//
// Leader leases (coordinator high availability, services/coordinator/leader_election.h)
// exist only in PostgreSQL: a SQLite database serves one coordinator, and its lease
// methods answer FAILED_PRECONDITION.
//
// Backends: SqliteStorage (common/storage/sqlite_storage.h, the embedded default) and
// PostgresStorage (common/storage/postgres_storage.h); OpenStorage(url) picks one.
// Every backend must pass the conformance suite in
// common/storage/storage_test_suite.h, and must validate input through
// common/storage/validation.h so that error codes and messages are identical.
//
// Messages are stored as serialized protobuf plus the columns needed to query them, so
// fields added to the protocol later round-trip through storage unchanged.
//
// Error model (every method):
//   INVALID_ARGUMENT    bad input; the message names the field and says what to fix.
//   NOT_FOUND           the job / candidate / task / artifact / checkpoint is unknown.
//   ALREADY_EXISTS      CreateJob with an id already taken.
//   ABORTED             UpdateJob with a stale revision: re-read and retry.
//   RESOURCE_EXHAUSTED  a value over its size bound (see the limits below), or disk full.
//   FAILED_PRECONDITION the database is unusable by this binary (newer schema, not a
//                       kagent database, unwritable).
//   DATA_LOSS           the database file is corrupt.
//   UNAVAILABLE         a transient environment failure (locked by another process past
//                       the busy timeout, I/O error): retrying later may succeed.
// A failed call changes nothing: each method is atomic, and bad input is rejected
// before anything is written.
//
// Storage failures (the last five codes, and RESOURCE_EXHAUSTED for a full disk: the
// database itself failed, not the call's input) are built with StorageFailure(), so
// IsStorageFailure() tells them apart. Their message names the database (the SQLite
// file's path, the PostgreSQL server) for the log; their client message
// (common/client_message.h), which ToGrpcStatus sends instead, names neither.
//
// Thread-safety: every implementation is safe for concurrent use by many threads.
// Ownership: callers own the Storage (usually one per process, created at start-up and
// destroyed after the server has drained).
#ifndef KAGENT_COMMON_STORAGE_STORAGE_H_
#define KAGENT_COMMON_STORAGE_STORAGE_H_

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "absl/time/time.h"
#include "kagent/v1/common.pb.h"
#include "kagent/v1/job_service.pb.h"

namespace kagent {

// ---------------------------------------------------------------------------
// Limits. Over a size bound: RESOURCE_EXHAUSTED. Over a length or count bound:
// INVALID_ARGUMENT.
// ---------------------------------------------------------------------------

// Ids (job, candidate, task), tenants, and the op_class and gpu_arch of the shared
// reflexion memory: 1..128 printable ASCII bytes (0x21..0x7e), no spaces.
inline constexpr size_t kMaxStorageIdBytes = 128;
// Idempotency keys: the same rule, up to 256 bytes. Artifact names and checkpoint keys:
// UTF-8 without control characters.
inline constexpr size_t kMaxIdempotencyKeyBytes = 256;
inline constexpr size_t kMaxArtifactNameBytes = 512;
inline constexpr size_t kMaxArtifactKindBytes = 64;
inline constexpr size_t kMaxCheckpointKeyBytes = 256;
inline constexpr int64_t kMaxArtifactBytes = int64_t{16} << 20;    // content
inline constexpr int64_t kMaxCheckpointBytes = int64_t{16} << 20;
inline constexpr int64_t kMaxTaskResultBytes = int64_t{16} << 20;
// A serialized Job, JobEvent, Candidate or Reflexion.
inline constexpr int64_t kMaxRecordBytes = int64_t{64} << 20;

inline constexpr int kDefaultJobPageSize = 50;
inline constexpr int kMaxJobPageSize = 500;
inline constexpr int kDefaultEventLimit = 1000;
inline constexpr int kMaxEventLimit = 10000;
inline constexpr int kDefaultSharedReflexionLimit = 100;
inline constexpr int kMaxSharedReflexionLimit = 1000;

// ---------------------------------------------------------------------------
// Value types.
// ---------------------------------------------------------------------------

// A job with its revision: 1 after CreateJob, +1 per successful UpdateJob. The revision
// is storage metadata (Job has no field for it); pass it back to UpdateJob.
struct StoredJob {
  v1::Job job{};
  int64_t revision = 0;
};

struct CreateJobResult {
  StoredJob stored{};
  // False when the (tenant, idempotency key) pair was already used: `stored` is then
  // the job created by that first call, and nothing was written.
  bool created = false;
};

struct ListJobsQuery {
  std::string tenant{};                     // required: a tenant sees only its jobs
  v1::JobState state = v1::JOB_STATE_UNSPECIFIED;  // UNSPECIFIED: every state
  int page_size = 0;                        // 0: kDefaultJobPageSize; 1..kMaxJobPageSize
  std::string page_token{};                 // empty: the first page
};

struct JobPage {
  std::vector<StoredJob> jobs{};            // newest first (reverse creation order)
  std::string next_page_token{};            // empty: no more pages
};

// The key of the cross-job reflexion memory. All three parts are required.
struct SharedMemoryKey {
  std::string tenant{};
  std::string op_class{};                   // e.g. "matvec"
  std::string gpu_arch{};                   // e.g. "sm_90"
};

// A named lease (e.g. "coordinator") as the database holds it.
struct LeaderLease {
  std::string name{};
  std::string holder{};     // who holds (or last held) it: unique per process start
  std::string address{};    // where the holder serves (host:port), for forwarding
  // 1 for the first holder; +1 each time the lease is taken by another holder or taken
  // again after it expired. Renewals by the holder keep it. A write fenced at term T
  // (CheckLease) cannot commit once a term above T has begun.
  int64_t term = 0;
  // Until expiry, by the database's clock when it was read; <= 0: expired (free).
  absl::Duration remaining = absl::ZeroDuration();
};

inline constexpr size_t kMaxLeaseAddressBytes = 256;
inline constexpr absl::Duration kMinLeaseTtl = absl::Seconds(1);
inline constexpr absl::Duration kMaxLeaseTtl = absl::Hours(1);

// ---------------------------------------------------------------------------
// The interface.
// ---------------------------------------------------------------------------

class Storage {
 public:
  virtual ~Storage() = default;

  // --- Jobs ---------------------------------------------------------------------

  // Stores a new job at revision 1. Requires job.id, job.tenant and a valid job.state
  // other than UNSPECIFIED. When `idempotency_key` is not empty and this tenant already
  // created a job with it, returns that job with created=false (even if job.id
  // differs). ALREADY_EXISTS when job.id is taken (by any tenant).
  virtual absl::StatusOr<CreateJobResult> CreateJob(const v1::Job& job,
                                                    absl::string_view idempotency_key) = 0;

  // NOT_FOUND when unknown. Does not check the tenant: callers compare job.tenant with
  // the caller's tenant.
  virtual absl::StatusOr<StoredJob> GetJob(absl::string_view job_id) = 0;

  // Replaces the job whose id is job.id when its stored revision equals
  // `expected_revision`; returns the new revision (expected_revision + 1). ABORTED when
  // the stored revision differs (someone else updated it: re-read, re-apply, retry).
  // The tenant is immutable: INVALID_ARGUMENT when job.tenant differs from the stored.
  virtual absl::StatusOr<int64_t> UpdateJob(const v1::Job& job, int64_t expected_revision) = 0;

  // One tenant's jobs, newest first, optionally filtered by state. Page tokens are
  // opaque, bound to the tenant and state filter they were issued for, and stay valid
  // while jobs are created or deleted (no job is returned twice or skipped, except
  // jobs created after the first page, which appear only on a new listing).
  virtual absl::StatusOr<JobPage> ListJobs(const ListJobsQuery& query) = 0;

  // Every tenant's jobs in QUEUED, BASELINE or ROUNDS, oldest first: what a restarted
  // coordinator resumes.
  virtual absl::StatusOr<std::vector<StoredJob>> ListUnfinishedJobs() = 0;

  // Deletes a job and everything stored under it (events, candidates, task results,
  // reflexions, artifacts, checkpoints). The shared reflexion memory is kept.
  // NOT_FOUND when unknown.
  virtual absl::Status DeleteJob(absl::string_view job_id) = 0;

  // --- Job events ---------------------------------------------------------------

  // Appends an event to the job's log, assigning the next sequence number (1, 2, 3, ...
  // per job, no gaps, atomic under concurrent appenders) and returns it. event.job_id
  // must be empty or equal `job_id`; event.sequence must be 0 (storage assigns it);
  // event.type must be set. The stored event carries job_id and sequence.
  virtual absl::StatusOr<int64_t> AppendEvent(absl::string_view job_id,
                                              const v1::JobEvent& event) = 0;

  // Events with sequence >= from_sequence (0 or 1: from the start), ascending, at most
  // `limit` (0: kDefaultEventLimit; 1..kMaxEventLimit). NOT_FOUND for an unknown job.
  virtual absl::StatusOr<std::vector<v1::JobEvent>> ListEvents(absl::string_view job_id,
                                                               int64_t from_sequence,
                                                               int limit) = 0;

  // --- Candidates ---------------------------------------------------------------

  // Inserts or replaces the candidate with this id. Requires id and job_id (an
  // existing job; NOT_FOUND otherwise) and round >= 0. A stored candidate cannot move
  // to another job (INVALID_ARGUMENT).
  virtual absl::Status PutCandidate(const v1::Candidate& candidate) = 0;

  virtual absl::StatusOr<v1::Candidate> GetCandidate(absl::string_view candidate_id) = 0;

  // A job's candidates ordered by round, then by first insertion; only `round` when
  // given. NOT_FOUND for an unknown job.
  virtual absl::StatusOr<std::vector<v1::Candidate>> ListCandidates(
      absl::string_view job_id, std::optional<int32_t> round) = 0;

  // --- Idempotent GPU task results ------------------------------------------------

  // Records the result of GPU task `task_id` (belonging to job `job_id`) unless one is
  // already recorded; returns the recorded result, which is the first one written: a
  // task re-run after a crash yields the original result and is not counted twice.
  // INVALID_ARGUMENT when the task is recorded under another job.
  virtual absl::StatusOr<std::string> PutTaskResult(absl::string_view job_id,
                                                    absl::string_view task_id,
                                                    absl::string_view result) = 0;

  // NOT_FOUND when no result is recorded for the task.
  virtual absl::StatusOr<std::string> GetTaskResult(absl::string_view task_id) = 0;

  // --- Reflexions -----------------------------------------------------------------

  // Appends to the job's reflexion history; returns its position (1, 2, 3, ...).
  virtual absl::StatusOr<int64_t> AppendReflexion(absl::string_view job_id,
                                                  const v1::Reflexion& reflexion) = 0;

  // The job's reflexions in append order. NOT_FOUND for an unknown job.
  virtual absl::StatusOr<std::vector<v1::Reflexion>> ListReflexions(
      absl::string_view job_id) = 0;

  // Appends to the cross-job memory under `key`. `source_job_id` (may be empty) records
  // where the lesson came from; the entry outlives that job.
  virtual absl::Status AppendSharedReflexion(const SharedMemoryKey& key,
                                             absl::string_view source_job_id,
                                             const v1::Reflexion& reflexion) = 0;

  // The most recent `limit` entries under exactly `key` (0: kDefaultSharedReflexionLimit;
  // 1..kMaxSharedReflexionLimit), oldest first. Empty when there are none.
  virtual absl::StatusOr<std::vector<v1::Reflexion>> ListSharedReflexions(
      const SharedMemoryKey& key, int limit) = 0;

  // --- Artifacts ------------------------------------------------------------------

  // Inserts or replaces the job's artifact named artifact.name. Content over
  // kMaxArtifactBytes: RESOURCE_EXHAUSTED. NOT_FOUND for an unknown job.
  virtual absl::Status PutArtifact(absl::string_view job_id, const v1::Artifact& artifact) = 0;

  virtual absl::StatusOr<v1::Artifact> GetArtifact(absl::string_view job_id,
                                                   absl::string_view name) = 0;

  // The job's artifacts whose name starts with `prefix` (empty: all), by name. Without
  // `include_content` the content field is left empty (cheap listing).
  virtual absl::StatusOr<std::vector<v1::Artifact>> ListArtifacts(absl::string_view job_id,
                                                                  absl::string_view prefix,
                                                                  bool include_content) = 0;

  // --- Checkpoints: a per-job key-value store for resuming ------------------------

  // Sets `key` to `value` for the job (overwrites). Over kMaxCheckpointBytes:
  // RESOURCE_EXHAUSTED. NOT_FOUND for an unknown job.
  virtual absl::Status PutCheckpoint(absl::string_view job_id, absl::string_view key,
                                     absl::string_view value) = 0;

  // NOT_FOUND when the job or the key is unknown.
  virtual absl::StatusOr<std::string> GetCheckpoint(absl::string_view job_id,
                                                    absl::string_view key) = 0;

  // --- Atomic multi-write ---------------------------------------------------------

  // Runs `body` in one transaction: when it returns OK everything it wrote through the
  // Storage& it receives commits together; otherwise (or when the commit fails)
  // nothing it wrote is kept and its status is returned. Reads inside see the
  // transaction's own writes. A nested RunInTransaction on that Storage& is a nested
  // atomic unit: its failure undoes only its own writes.
  //
  // Preconditions: `body` uses only the Storage& it receives, not this object (the
  // SQLite backend answers FAILED_PRECONDITION to such a call instead of deadlocking),
  // and does not keep it after returning. Keep bodies short: other writers wait.
  virtual absl::Status RunInTransaction(absl::FunctionRef<absl::Status(Storage&)> body) = 0;

  // --- Leader leases ---------------------------------------------------------------
  //
  // `name` and `holder` follow the id rules; `address` is 1..kMaxLeaseAddressBytes
  // printable ASCII; `ttl` is in [kMinLeaseTtl, kMaxLeaseTtl]. Expiry is judged by the
  // database's clock, so replicas' clocks need not agree. SQLite: FAILED_PRECONDITION.

  // Takes the lease when it is free (never taken, expired or released) and renews it
  // when `holder` holds it: it then expires `ttl` from now and names `address`. Returns
  // the lease as stored after the call; `holder` won when the result's holder equals it
  // (otherwise the current holder's lease, unchanged).
  virtual absl::StatusOr<LeaderLease> AcquireLease(absl::string_view name,
                                                   absl::string_view holder,
                                                   absl::string_view address,
                                                   absl::Duration ttl) = 0;

  // The lease as stored. NOT_FOUND when it was never taken.
  virtual absl::StatusOr<LeaderLease> GetLease(absl::string_view name) = 0;

  // The fence: OK when `holder` holds lease `name` at `term` and it has not expired;
  // FAILED_PRECONDITION otherwise (the message says who holds it now). Inside
  // RunInTransaction it also locks the lease until the transaction ends, so no other
  // holder can take it before this transaction's writes commit: a write made after a
  // passing CheckLease in the same transaction commits only under that term.
  virtual absl::Status CheckLease(absl::string_view name, absl::string_view holder,
                                  int64_t term) = 0;

  // Gives the lease up (it becomes free at once) when `holder` holds it at `term`;
  // otherwise changes nothing. OK either way, NOT_FOUND when it was never taken.
  virtual absl::Status ReleaseLease(absl::string_view name, absl::string_view holder,
                                    int64_t term) = 0;

  // --- Introspection --------------------------------------------------------------

  // The schema version of the open database (for logs and health checks).
  virtual absl::StatusOr<int64_t> SchemaVersion() = 0;
};

// Whether a job in this state still has work to do (QUEUED, BASELINE, ROUNDS).
bool IsUnfinishedJobState(v1::JobState state);

// True for a status built by StorageFailure(): the storage failed (disk full, corrupt,
// locked, unreachable), as opposed to bad input, an unknown id or a stale revision.
bool IsStorageFailure(const absl::Status& status);

// For backends: a storage failure with `code`. `message` is for the log and may name the
// database file or server; `client_message` is what a client sees (no path, URI or
// credential) and is prefixed with "storage error: ".
absl::Status StorageFailure(absl::StatusCode code, absl::string_view message,
                            absl::string_view client_message);

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_STORAGE_H_
