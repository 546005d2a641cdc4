// storage::PostgresConnection: the SqlConnection (common/storage/sql_driver.h) over one
// libpq connection (PGconn).
//
// Parameters and results travel in binary format: int8 as 8 big-endian bytes, text and
// bytea as their raw bytes; integer columns (int2, int4, int8, bool) read as integers.
//
// Errors: the SQLSTATE decides the status code (connection failures, 57P0x, 53300
// UNAVAILABLE; 40001 and 40P01 ABORTED, "re-read and retry"; 55P03 and 57014 lock
// timeouts UNAVAILABLE; 53100 disk full and other 53xxx/54xxx RESOURCE_EXHAUSTED; 58xxx
// I/O UNAVAILABLE; XX001/XX002 DATA_LOSS; 23xxx constraint violations, 42501, 25006
// and 28xxx FAILED_PRECONDITION; else INTERNAL). Messages name the server as
// host:port/dbname and never contain the password.
//
// Transactions: a top-level Atomically is BEGIN (READ COMMITTED) or, with `snapshot`,
// BEGIN ISOLATION LEVEL REPEATABLE READ ... COMMIT; nested ones are SAVEPOINTs. A body
// that returns OK after one of its statements failed (the transaction is then aborted
// on the server) gets ABORTED instead of a COMMIT that would silently roll back.
//
// Thread-safety: not thread-safe: one thread at a time. Ownership: owns the PGconn and
// closes it in the destructor.
#ifndef KAGENT_COMMON_STORAGE_POSTGRES_DRIVER_H_
#define KAGENT_COMMON_STORAGE_POSTGRES_DRIVER_H_

#include <memory>
#include <string>

#include "common/storage/sql_driver.h"

typedef struct pg_conn PGconn;
typedef struct pg_result PGresult;

namespace kagent::storage {

// The password in a libpq connection string, if libpq can parse one ("" otherwise).
std::string PostgresPasswordOf(const std::string& url);

// libpq's message text on one line, without the trailing newline.
std::string CleanPostgresMessage(absl::string_view message);

class PostgresConnection final : public SqlConnection {
 public:
  // Connects to `url` (a libpq URI or key=value string; connect_timeout_s applies unless
  // the URL sets one) and sets lock_timeout. `description` (host:port/dbname) names the
  // server in messages. UNAVAILABLE with libpq's reason (password removed) when the
  // connection fails; FAILED_PRECONDITION for a server older than PostgreSQL 11.
  static absl::StatusOr<std::unique_ptr<PostgresConnection>> Connect(
      const std::string& url, int connect_timeout_s, int lock_timeout_ms,
      const std::string& description);

  ~PostgresConnection() override;
  PostgresConnection(const PostgresConnection&) = delete;
  PostgresConnection& operator=(const PostgresConnection&) = delete;

  // False when the connection is known to be broken (e.g. the server closed it while
  // it was idle). Cheap: never blocks.
  bool LooksAlive();
  // Whether the connection can be reused: connected and outside a transaction.
  bool Reusable() const;

  using SqlConnection::Query;
  absl::StatusOr<SqlRows> Query(absl::string_view sql, const SqlParams& params,
                                absl::string_view what) override;
  absl::Status Exec(absl::string_view sql, absl::string_view what) override;
  absl::Status Atomically(absl::FunctionRef<absl::Status()> fn, bool snapshot) override;

 private:
  PostgresConnection(PGconn* conn, std::string description)
      : conn_(conn), description_(std::move(description)) {}

  // The status for a failed command: the SQLSTATE decides the code.
  absl::Status Error(const PGresult* result, absl::string_view what) const;

  PGconn* const conn_;
  const std::string description_;
  int depth_ = 0;  // open transaction levels (0: none)
};

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_POSTGRES_DRIVER_H_
