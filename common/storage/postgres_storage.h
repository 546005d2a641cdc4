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
// The Storage methods themselves are storage::SqlStorage's (common/storage/sql_storage.h),
// written once for both backends over the libpq driver (common/storage/postgres_driver.h)
// with PostgreSQL's dialect text; this file opens and migrates the database and keeps
// the pool.
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

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/storage/forwarding_storage.h"
#include "common/storage/migration.h"
#include "common/storage/storage.h"

namespace kagent {

// One step of the schema, in PostgreSQL's dialect (common/storage/migration.h).
using PostgresMigration = storage::Migration;

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

class PostgresStorage final : public storage::ForwardingStorage {
 public:
  // Connects and migrates. Errors: INVALID_ARGUMENT (empty or unparseable URL, bad
  // options), UNAVAILABLE (cannot connect: the reason, never the password),
  // FAILED_PRECONDITION (newer schema, not a kagent database, no permission), or the
  // status of a failed migration (the database is then unchanged).
  static absl::StatusOr<std::unique_ptr<PostgresStorage>> Open(
      const PostgresStorageOptions& options);

  ~PostgresStorage() override;

  // host:port/dbname of the server (no credentials).
  const std::string& description() const { return description_; }

  // The Storage methods are ForwardingStorage's: each runs on a session from the pool.

 private:
  class Session;  // one pooled connection and the SqlStorage over it (single-threaded)

  PostgresStorage(PostgresStorageOptions options, std::string description,
                  std::unique_ptr<Session> first);

  // Runs `call` on a session taken with Acquire() and given back with Release().
  absl::Status WithConnection(absl::FunctionRef<absl::Status(Storage&)> call) override;

  // Takes an idle session from the pool or opens a new one (waits while `pool_size`
  // are in use). UNAVAILABLE when a new connection fails.
  absl::StatusOr<std::unique_ptr<Session>> Acquire();
  // Returns a session to the pool; drops it when its connection is broken or a
  // transaction was left open.
  void Release(std::unique_ptr<Session> session);

  const PostgresStorageOptions options_;
  const std::string description_;

  absl::Mutex pool_mu_;
  std::vector<std::unique_ptr<Session>> idle_ ABSL_GUARDED_BY(pool_mu_);
  int open_ ABSL_GUARDED_BY(pool_mu_) = 0;  // sessions in use + idle
};

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_POSTGRES_STORAGE_H_
