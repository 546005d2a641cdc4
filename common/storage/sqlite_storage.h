// SqliteStorage: the embedded Storage backend, one SQLite file.
//
//   KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStorage> storage,
//                           SqliteStorage::Open({.path = "/var/lib/kagent/kagent.db"}));
//
// The file is opened in WAL mode (readers never block the writer; a crash loses no
// committed transaction), with foreign keys on, a busy timeout for other processes
// that open the same file (a backup, the sqlite3 shell), and synchronous=FULL by
// default. Open() applies the schema migrations this binary knows and that the file
// lacks, all in one transaction; a file written by a newer binary is refused with
// FAILED_PRECONDITION, a file that is not a kagent database likewise, and a corrupt
// file with DATA_LOSS. docs/storage.md describes the schema.
//
// Thread-safety: safe for concurrent use. One connection serves every call, one call at
// a time, behind a mutex (the coordinator's write rate is low; each call is short).
// RunInTransaction holds that mutex for the whole body.
// Ownership: the caller owns the SqliteStorage; destroying it closes the file. Only one
// SqliteStorage per file per process (two would contend on the file lock).
#ifndef KAGENT_COMMON_STORAGE_SQLITE_STORAGE_H_
#define KAGENT_COMMON_STORAGE_SQLITE_STORAGE_H_

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
// version - 1 to `version`. Migrations are applied in order; versions start at 1 and
// increase by one.
struct SqliteMigration {
  int64_t version;
  const char* description;
  const char* sql;
};

// The migrations this binary knows, in order. The last one's version is the schema
// version this binary writes.
const std::vector<SqliteMigration>& SqliteSchemaMigrations();

struct SqliteStorageOptions {
  // The database file, created when absent; ":memory:" for a private in-memory database
  // (tests; no WAL, gone when closed).
  std::string path{};
  // Create the file's parent directories when missing.
  bool create_parent_directories = true;
  // How long a statement waits for a lock held by another connection before failing
  // with UNAVAILABLE.
  int busy_timeout_ms = 5000;
  // synchronous=FULL (true): a committed transaction survives power loss.
  // synchronous=NORMAL (false): faster; the last transactions before a power loss may
  // be rolled back (never corrupted). Either is safe against a process crash.
  bool synchronous_full = true;
  // Tests only: the migrations to apply instead of SqliteSchemaMigrations(). Not owned;
  // must outlive Open().
  const std::vector<SqliteMigration>* migrations = nullptr;
};

class SqliteStorage final : public Storage {
 public:
  // Opens or creates the database and migrates it. Errors: INVALID_ARGUMENT (empty
  // path, bad options), FAILED_PRECONDITION (cannot open or create the file, a newer
  // schema, not a kagent database, WAL unavailable on this filesystem), DATA_LOSS
  // (corrupt file), or the status of a failed migration (the file is then unchanged).
  static absl::StatusOr<std::unique_ptr<SqliteStorage>> Open(const SqliteStorageOptions& options);

  ~SqliteStorage() override;
  SqliteStorage(const SqliteStorage&) = delete;
  SqliteStorage& operator=(const SqliteStorage&) = delete;

  const std::string& path() const { return path_; }

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
  class Connection;  // the single-threaded implementation over one sqlite3 handle

  SqliteStorage(std::string path, std::unique_ptr<Connection> connection);

  // FAILED_PRECONDITION when the calling thread is inside RunInTransaction's body
  // (calling this object there would deadlock).
  absl::Status CheckNotReentrant() const;

  const std::string path_;
  mutable absl::Mutex mu_;
  std::unique_ptr<Connection> connection_ ABSL_GUARDED_BY(mu_);
  // The thread running a RunInTransaction body, if any.
  std::atomic<std::thread::id> transaction_thread_{};
};

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_SQLITE_STORAGE_H_
