// PostgresStorage: the Storage backend over a PostgreSQL server (libpq), for a
// coordinator that keeps its state outside its pod.
//
//   KAGENT_ASSIGN_OR_RETURN(
//       std::unique_ptr<PostgresStorage> storage,
//       PostgresStorage::Open({.url = "postgresql://kagent@db.example:5432/kagent"}));
//
// Open() connects, then applies the schema migrations this binary knows and that the
// database lacks, all in one transaction under an advisory lock (two processes opening
// at once serialize; the second finds nothing to do). A database written by a newer
// binary is refused with FAILED_PRECONDITION, as is a schema that holds tables but no
// schema_version table (not a kagent database). docs/storage.md describes the schema.
//
// Rows: the same tables as SQLite, protobuf blobs in BYTEA next to the indexed columns;
// names are TEXT COLLATE "C" (bytewise order, like SQLite's BINARY).
//
// Concurrency: a pool of up to `pool_size` connections, opened lazily. Each plain call
// takes one connection for its duration and runs as one READ COMMITTED transaction;
// per-job event and reflexion counters are incremented with UPDATE ... RETURNING in the
// same transaction as the insert, so the row lock serializes appenders from any number
// of connections and processes (gap-free; a rolled-back append consumes no number).
// UpdateJob locks the job row (SELECT ... FOR NO KEY UPDATE) before comparing
// revisions. RunInTransaction runs its body on one connection in a REPEATABLE READ
// transaction (a consistent snapshot: no torn reads); bodies from this process run one
// at a time (a mutex), so they never conflict with each other. A conflict with another
// process's transaction (serialization failure, deadlock) is reported as ABORTED: the
// caller re-reads and retries, as for a stale revision. Nested RunInTransaction and every
// call inside a body use SAVEPOINTs.
//
// Errors: as storage.h. Connection failures (server down, refused, authentication) are
// UNAVAILABLE with libpq's reason; messages name the server as host:port/dbname and
// never contain the password. A connection that breaks is dropped from the pool and a
// new one is opened by the next call, so the storage recovers when the server comes
// back.
//
// Thread-safety: safe for concurrent use by many threads.
// Ownership: the caller owns the PostgresStorage; destroying it closes its connections.
// Precondition: no call is in flight at destruction.
#ifndef KAGENT_COMMON_STORAGE_POSTGRES_STORAGE_H_
#define KAGENT_COMMON_STORAGE_POSTGRES_STORAGE_H_

#include <atomic>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/storage/storage.h"

namespace kagent {

// One step of the schema: `sql` (one or more statements) takes the database from
// version - 1 to `version`. Versions start at 1 and increase by one.
struct PostgresMigration {
  int64_t version;
  const char* description;
  const char* sql;
};

// The migrations this binary knows, in order; the last one's version is the schema
// version this binary writes.
const std::vector<PostgresMigration>& PostgresSchemaMigrations();

struct PostgresStorageOptions {
  // A libpq connection URI (postgresql://user:password@host:port/dbname?param=value) or
  // a key=value connection string. Required.
  std::string url{};
  // The most connections open at once (1..64). Calls beyond it wait for a free one.
  int pool_size = 4;
  // Seconds to wait for a connection (libpq connect_timeout) unless the URL sets one.
  int connect_timeout_s = 10;
  // Milliseconds a statement waits for a row lock held by another transaction before
  // failing with UNAVAILABLE (PostgreSQL lock_timeout; 0 waits forever).
  int lock_timeout_ms = 30000;
  // Tests only: the migrations to apply instead of PostgresSchemaMigrations(). Not
  // owned; must outlive Open().
  const std::vector<PostgresMigration>* migrations = nullptr;
};

// The server a URL points at, for messages and logs: "host:port/dbname" (user, password
// and other parameters left out). "(unparseable connection string)" when libpq cannot
// parse it.
std::string DescribePostgresUrl(const std::string& url);

class PostgresStorage final : public Storage {
 public:
  // Connects and migrates. Errors: INVALID_ARGUMENT (empty or unparseable URL, bad
  // options), UNAVAILABLE (cannot connect: the reason, never the password),
  // FAILED_PRECONDITION (newer schema, not a kagent database, no permission), or the
  // status of a failed migration (the database is then unchanged).
  static absl::StatusOr<std::unique_ptr<PostgresStorage>> Open(
      const PostgresStorageOptions& options);

  ~PostgresStorage() override;
  PostgresStorage(const PostgresStorage&) = delete;
  PostgresStorage& operator=(const PostgresStorage&) = delete;

  // host:port/dbname of the server (no credentials).
  const std::string& description() const { return description_; }

  absl::StatusOr<CreateJobResult> CreateJob(const v1::Job& job,
                                            absl::string_view idempotency_key) override;
  absl::StatusOr<StoredJob> GetJob(absl::string_view job_id) override;
  absl::StatusOr<int64_t> UpdateJob(const v1::Job& job, int64_t expected_revision) override;
  absl::StatusOr<JobPage> ListJobs(const ListJobsQuery& query) override;
  absl::StatusOr<std::vector<StoredJob>> ListUnfinishedJobs() override;
  absl::Status DeleteJob(absl::string_view job_id) override;

  absl::StatusOr<int64_t> AppendEvent(absl::string_view job_id,
                                      const v1::JobEvent& event) override;
  absl::StatusOr<std::vector<v1::JobEvent>> ListEvents(absl::string_view job_id,
                                                       int64_t from_sequence,
                                                       int limit) override;

  absl::Status PutCandidate(const v1::Candidate& candidate) override;
  absl::StatusOr<v1::Candidate> GetCandidate(absl::string_view candidate_id) override;
  absl::StatusOr<std::vector<v1::Candidate>> ListCandidates(
      absl::string_view job_id, std::optional<int32_t> round) override;

  absl::StatusOr<std::string> PutTaskResult(absl::string_view job_id,
                                            absl::string_view task_id,
                                            absl::string_view result) override;
  absl::StatusOr<std::string> GetTaskResult(absl::string_view task_id) override;

  absl::StatusOr<int64_t> AppendReflexion(absl::string_view job_id,
                                          const v1::Reflexion& reflexion) override;
  absl::StatusOr<std::vector<v1::Reflexion>> ListReflexions(absl::string_view job_id) override;
  absl::Status AppendSharedReflexion(const SharedMemoryKey& key,
                                     absl::string_view source_job_id,
                                     const v1::Reflexion& reflexion) override;
  absl::StatusOr<std::vector<v1::Reflexion>> ListSharedReflexions(const SharedMemoryKey& key,
                                                                  int limit) override;

  absl::Status PutArtifact(absl::string_view job_id, const v1::Artifact& artifact) override;
  absl::StatusOr<v1::Artifact> GetArtifact(absl::string_view job_id,
                                           absl::string_view name) override;
  absl::StatusOr<std::vector<v1::Artifact>> ListArtifacts(absl::string_view job_id,
                                                          absl::string_view prefix,
                                                          bool include_content) override;

  absl::Status PutCheckpoint(absl::string_view job_id, absl::string_view key,
                             absl::string_view value) override;
  absl::StatusOr<std::string> GetCheckpoint(absl::string_view job_id,
                                            absl::string_view key) override;

  absl::Status RunInTransaction(absl::FunctionRef<absl::Status(Storage&)> body) override;
  absl::StatusOr<int64_t> SchemaVersion() override;

 private:
  class Session;  // the single-threaded implementation over one PGconn

  PostgresStorage(PostgresStorageOptions options, std::string description,
                  std::unique_ptr<Session> first);

  // Takes an idle session from the pool or opens a new one (waits while `pool_size`
  // are in use). UNAVAILABLE when a new connection fails.
  absl::StatusOr<std::unique_ptr<Session>> Acquire();
  // Returns a session to the pool; drops it when its connection is broken or a
  // transaction was left open.
  void Release(std::unique_ptr<Session> session);
  // FAILED_PRECONDITION when the calling thread is inside RunInTransaction's body.
  absl::Status CheckNotReentrant() const;

  template <typename Fn>
  auto WithSession(Fn fn) -> decltype(fn(std::declval<Session&>()));

  const PostgresStorageOptions options_;
  const std::string description_;

  absl::Mutex pool_mu_;
  std::vector<std::unique_ptr<Session>> idle_ ABSL_GUARDED_BY(pool_mu_);
  int open_ ABSL_GUARDED_BY(pool_mu_) = 0;  // sessions in use + idle

  // Held for the whole body of RunInTransaction: one transaction at a time per process.
  absl::Mutex transaction_mu_;
  std::atomic<std::thread::id> transaction_thread_{};
};

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_POSTGRES_STORAGE_H_
