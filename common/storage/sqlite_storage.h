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
// The Storage methods themselves are storage::SqlStorage's (common/storage/sql_storage.h),
// written once for both backends over the SQLite driver (common/storage/sqlite_driver.h)
// with SQLite's dialect text; this file opens, checks and migrates the database.
//
// Thread-safety: safe for concurrent use. One connection serves every call, one call at
// a time, behind a mutex (the coordinator's write rate is low; each call is short).
// RunInTransaction holds that mutex for the whole body. The locking and forwarding are
// storage::ForwardingStorage's (common/storage/forwarding_storage.h).
// Ownership: the caller owns the SqliteStorage; destroying it closes the file. Only one
// SqliteStorage per file per process (two would contend on the file lock).
#ifndef KAGENT_COMMON_STORAGE_SQLITE_STORAGE_H_
#define KAGENT_COMMON_STORAGE_SQLITE_STORAGE_H_

#include <memory>
#include <string>
#include <vector>

#include "absl/base/thread_annotations.h"
#include "absl/synchronization/mutex.h"
#include "common/storage/forwarding_storage.h"
#include "common/storage/migration.h"
#include "common/storage/storage.h"

namespace kagent {

namespace storage {
class SqlStorage;
}  // namespace storage

// One step of the schema, in SQLite's dialect (common/storage/migration.h).
using SqliteMigration = storage::Migration;

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

class SqliteStorage final : public storage::ForwardingStorage {
 public:
  // Opens or creates the database and migrates it. Errors: INVALID_ARGUMENT (empty
  // path, bad options), FAILED_PRECONDITION (cannot open or create the file, a newer
  // schema, not a kagent database, WAL unavailable on this filesystem), DATA_LOSS
  // (corrupt file), or the status of a failed migration (the file is then unchanged).
  static absl::StatusOr<std::unique_ptr<SqliteStorage>> Open(const SqliteStorageOptions& options);

  ~SqliteStorage() override;

  const std::string& path() const { return path_; }

  // The Storage methods are ForwardingStorage's: each runs on the one connection,
  // under mu_.

 private:
  SqliteStorage(std::string path, std::unique_ptr<storage::SqlStorage> connection);

  // Runs `call` on the connection, holding mu_.
  absl::Status WithConnection(absl::FunctionRef<absl::Status(Storage&)> call) override;

  const std::string path_;
  absl::Mutex mu_;
  // The Storage methods over the one sqlite3 connection (common/storage/sql_storage.h).
  std::unique_ptr<storage::SqlStorage> connection_ ABSL_GUARDED_BY(mu_);
};

}  // namespace kagent

#endif  // KAGENT_COMMON_STORAGE_SQLITE_STORAGE_H_
