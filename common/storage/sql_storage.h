// storage::SqlStorage: the Storage methods, written once over a SqlConnection
// (common/storage/sql_driver.h), with each backend's dialect text in a SqlDialect.
//
// A SqlStorage is the single-threaded Storage over one database connection that
// forwarding_storage.h calls a backend's connection class: it validates input
// (validation.h), runs the SQL, and is the Storage& that RunInTransaction hands to
// bodies. Every write runs in SqlConnection::Atomically (a transaction, or a savepoint
// inside RunInTransaction's); RunInTransaction asks for a snapshot transaction.
// SqliteStorage owns one (its single connection); PostgresStorage a pool of them.
//
// The methods are in sql_storage.cc (jobs, events, reflexions, candidates, transactions)
// and sql_storage_outputs.cc (task results, artifacts, checkpoints, leases).
//
// Statements are written in the dialect both backends read (standard SQL with
// ON CONFLICT upserts and RETURNING, $N parameters); what differs lives in SqlDialect.
//
// Thread-safety: not thread-safe; one thread at a time (the owner lends it to one call
// at a time). Ownership: owns its connection; the dialect is not owned and must outlive
// it (backends use static ones).
#ifndef KAGENT_COMMON_STORAGE_SQL_STORAGE_H_
#define KAGENT_COMMON_STORAGE_SQL_STORAGE_H_

#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "common/storage/sql_driver.h"
#include "common/storage/storage.h"

namespace kagent::storage {

// What one backend's SQL says differently. Statements take $N parameters.
struct SqlDialect {
  // The backend's name in messages ("SQLite").
  const char* name;
  // Increment the job's event / reflexion counter and return its new value: $1 job id;
  // one row, one column; no row when the job is unknown. The row lock this takes
  // serializes appenders until the transaction ends.
  const char* next_event_sequence;
  const char* next_reflexion_sequence;
  // Run after a job's row is inserted ($1 job id), to create its counters; nullptr when
  // the counters live in the jobs row.
  const char* create_job_counters;
  // Appended to UpdateJob's read of the stored revision: a row lock ("" for none).
  const char* lock_job_row;
  // How ListArtifacts selects the names that start with a prefix: by a range
  // prefix <= name < PrefixUpperBound(prefix) (bytewise text), or, where a bound that
  // is not valid UTF-8 cannot be sent, with starts_with().
  bool prefix_by_starts_with;
  // Leader leases (storage.h), or all nullptr when the backend has none (their methods
  // then answer LeasesUnsupported(name)). acquire_lease: $1 name, $2 holder,
  // $3 address, $4 ttl in milliseconds; returns the lease when taken or renewed, else
  // no row. get_lease and check_lease (which also locks the row until the transaction
  // ends): $1 name. Each returns the lease's name, holder, address, term and remaining
  // milliseconds, in that order. release_lease: $1 name, $2 holder, $3 term; changes
  // the row only when held at that term.
  const char* acquire_lease;
  const char* get_lease;
  const char* check_lease;
  const char* release_lease;
};

class SqlStorage final : public Storage {
 public:
  SqlStorage(std::unique_ptr<SqlConnection> connection, const SqlDialect& dialect)
      : connection_(std::move(connection)), dialect_(dialect) {}

  SqlConnection& connection() { return *connection_; }

#include "common/storage/storage_overrides.inc"

 private:
  // NOT_FOUND unless the job exists.
  absl::Status RequireJob(absl::string_view job_id);
  // The job stored under (tenant, idempotency_key), if any.
  absl::StatusOr<std::optional<StoredJob>> FindJobByKey(absl::string_view tenant,
                                                        absl::string_view idempotency_key);
  // The job id a candidate is stored under, if any.
  absl::StatusOr<std::optional<std::string>> CandidateJob(absl::string_view candidate_id);
  // A recorded task result as (job id, result), if any.
  absl::StatusOr<std::optional<std::pair<std::string, std::string>>> FindTaskResult(
      absl::string_view task_id);
  // Appends to a per-job log: takes the next number with `next_sequence` ($1 job id),
  // then runs `insert` with ($1 job id, $2 sequence, then `values`).
  absl::StatusOr<int64_t> AppendNumbered(absl::string_view job_id, const char* next_sequence,
                                         const char* insert,
                                         absl::FunctionRef<void(int64_t, SqlParams&)> values);

  const std::unique_ptr<SqlConnection> connection_;
  const SqlDialect& dialect_;
};

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_SQL_STORAGE_H_
