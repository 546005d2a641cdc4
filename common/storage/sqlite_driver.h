// storage::SqliteConnection: the SqlConnection (common/storage/sql_driver.h) over one
// sqlite3 handle.
//
// Statements take $1, $2, ... and are prepared as ?1, ?2, ... (SQLite's positional
// form). Errors: SQLite's primary result code decides the status code (CORRUPT and
// NOTADB DATA_LOSS; FULL, TOOBIG, NOMEM RESOURCE_EXHAUSTED; BUSY, LOCKED, IOERR,
// PROTOCOL, INTERRUPT UNAVAILABLE; CANTOPEN, PERM, READONLY, AUTH, CONSTRAINT
// FAILED_PRECONDITION; else INTERNAL); the message names the file and the statement.
//
// Transactions: a top-level Atomically is BEGIN IMMEDIATE ... COMMIT (the write lock
// is taken at once, so a transaction never fails half-way for lock contention);
// nested ones are SAVEPOINTs. When SQLite rolls a transaction back by itself (disk
// full, I/O error) the failure is reported and the nesting depth reset.
//
// Thread-safety: not thread-safe (opened with SQLITE_OPEN_NOMUTEX): one thread at a
// time. Ownership: owns the handle and closes it in the destructor.
#ifndef KAGENT_COMMON_STORAGE_SQLITE_DRIVER_H_
#define KAGENT_COMMON_STORAGE_SQLITE_DRIVER_H_

#include <memory>
#include <string>

#include "common/storage/sql_driver.h"

struct sqlite3;

namespace kagent::storage {

class SqliteConnection final : public SqlConnection {
 public:
  // Opens (creating when missing) the database at `path` (":memory:" for an in-memory
  // one) with extended result codes and a busy timeout of `busy_timeout_ms`.
  // FAILED_PRECONDITION naming the path when it cannot be opened.
  static absl::StatusOr<std::unique_ptr<SqliteConnection>> Open(const std::string& path,
                                                                int busy_timeout_ms);

  ~SqliteConnection() override;
  SqliteConnection(const SqliteConnection&) = delete;
  SqliteConnection& operator=(const SqliteConnection&) = delete;

  using SqlConnection::Query;
  absl::StatusOr<SqlRows> Query(absl::string_view sql, const SqlParams& params,
                                absl::string_view what) override;
  absl::Status Exec(absl::string_view sql, absl::string_view what) override;
  absl::Status Atomically(absl::FunctionRef<absl::Status()> fn, bool snapshot) override;

 private:
  explicit SqliteConnection(sqlite3* db) : db_(db) {}

  sqlite3* const db_;
  int depth_ = 0;  // open transaction levels (0: none)
};

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_SQLITE_DRIVER_H_
