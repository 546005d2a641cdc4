// storage::SqlConnection: the small SQL driver the Storage backends are written over.
//
// SqlStorage (common/storage/sql_storage.h) implements every Storage method once, in
// terms of this interface; each backend supplies one implementation over its client
// library (SqliteConnection in sqlite_driver.h, PostgresConnection in
// postgres_driver.h) plus its dialect text (SqlDialect).
//
// Statements are written with positional parameters $1, $2, ... (PostgreSQL's spelling;
// the SQLite driver rewrites them to ?1, ?2, ..., which SQLite reads the same way).
// A statement's result is read whole into SqlRows: every query the storage runs is
// bounded (by a key or a LIMIT), so nothing is streamed.
//
// Errors: each driver maps its library's failures to absl::Status codes as storage.h
// describes (corruption DATA_LOSS; full disk RESOURCE_EXHAUSTED; lock timeouts, I/O and
// connection failures UNAVAILABLE; serialization conflicts ABORTED; constraint
// violations, permissions and unusable databases FAILED_PRECONDITION; anything else
// INTERNAL), built with StorageFailure() so that IsStorageFailure() holds. The message
// names the database and the statement (or `what`, when given); the client message
// names neither.
//
// Thread-safety: a SqlConnection is NOT thread-safe; one thread uses it at a time (the
// backends lend a connection to one call at a time: see forwarding_storage.h).
// SqlParams and SqlRows are plain values.
#ifndef KAGENT_COMMON_STORAGE_SQL_DRIVER_H_
#define KAGENT_COMMON_STORAGE_SQL_DRIVER_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/functional/function_ref.h"
#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace kagent::storage {

// The parameters of one statement, in order ($1 first). Values are copied.
class SqlParams {
 public:
  enum class Type { kInt, kText, kBlob, kNullText };
  struct Value {
    Type type;
    int64_t integer = 0;  // kInt
    std::string bytes{};  // kText, kBlob
  };

  SqlParams& Int(int64_t value);
  SqlParams& Text(absl::string_view value);
  SqlParams& Blob(absl::string_view value);
  // A NULL of type text (e.g. an absent idempotency key).
  SqlParams& NullText();

  const std::vector<Value>& values() const { return values_; }

 private:
  std::vector<Value> values_;
};

// Every row a statement returned, and how many rows it changed.
class SqlRows {
 public:
  // One column of one row, as the driver read it.
  struct Cell {
    bool null = false;
    bool is_integer = false;  // `integer` holds the value (an integer column)
    int64_t integer = 0;
    std::string bytes{};      // text and blob columns
  };

  int size() const { return static_cast<int>(rows_.size()); }
  bool empty() const { return rows_.empty(); }
  // Rows changed by an INSERT, UPDATE or DELETE (0 for other statements).
  int64_t affected() const { return affected_; }

  bool IsNull(int row, int column) const { return rows_[row][column].null; }
  // The integer in an integer column (0 for NULL). Crashes (a programming error) when
  // the column is not an integer.
  int64_t Int(int row, int column) const;
  // The bytes of a text or blob column (empty for NULL).
  const std::string& Bytes(int row, int column) const { return rows_[row][column].bytes; }

  // For drivers.
  void AddRow(std::vector<Cell> row) { rows_.push_back(std::move(row)); }
  void set_affected(int64_t affected) { affected_ = affected; }

 private:
  std::vector<std::vector<Cell>> rows_;
  int64_t affected_ = 0;
};

// One open database connection. Owned by whoever opened it (a SqlStorage, usually);
// closing happens in the destructor.
class SqlConnection {
 public:
  virtual ~SqlConnection() = default;

  // Runs one statement with `params` bound to $1, $2, ... and returns its rows. `what`
  // names the step in an error message (empty: the statement's text).
  virtual absl::StatusOr<SqlRows> Query(absl::string_view sql, const SqlParams& params,
                                        absl::string_view what) = 0;
  absl::StatusOr<SqlRows> Query(absl::string_view sql, const SqlParams& params) {
    return Query(sql, params, absl::string_view());
  }

  // Runs one or more statements without parameters, discarding rows (schema DDL,
  // settings, transaction control). `what` names the step in an error message.
  virtual absl::Status Exec(absl::string_view sql, absl::string_view what) = 0;

  // Runs `fn` atomically: a top-level transaction, or a savepoint when one is already
  // open on this connection (nesting to any depth). On failure everything `fn` wrote is
  // undone and `fn`'s status (or the commit's) returned. `snapshot` asks for a
  // consistent snapshot for the whole transaction where the database offers a choice
  // (PostgreSQL: REPEATABLE READ instead of READ COMMITTED; SQLite transactions always
  // are one).
  virtual absl::Status Atomically(absl::FunctionRef<absl::Status()> fn, bool snapshot) = 0;
};

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_SQL_DRIVER_H_
