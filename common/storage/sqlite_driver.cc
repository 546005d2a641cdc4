#include "common/storage/sqlite_driver.h"

#include <sqlite3.h>

#include <utility>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "common/status.h"
#include "common/storage/storage.h"

namespace kagent::storage {
namespace {

// Primary result code to a status code; `what` says what was being done. A storage
// failure (StorageFailure): the message names the file and the statement, for the log;
// the client message only SQLite's own text (which names no file) and the hint.
absl::Status SqliteError(sqlite3* db, int rc, absl::string_view what) {
  const char* file = db != nullptr ? sqlite3_db_filename(db, "main") : nullptr;
  std::string where = (file != nullptr && file[0] != '\0') ? file : ":memory:";
  std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  absl::StatusCode code = absl::StatusCode::kInternal;
  std::string hint;
  switch (rc & 0xff) {
    case SQLITE_CORRUPT:
    case SQLITE_NOTADB:
      code = absl::StatusCode::kDataLoss;
      hint = ". The database file is corrupt or not a SQLite database; restore it from a "
             "backup (see docs/storage.md)";
      break;
    case SQLITE_FULL:
      code = absl::StatusCode::kResourceExhausted;
      hint = " (disk full?)";
      break;
    case SQLITE_TOOBIG:
    case SQLITE_NOMEM:
      code = absl::StatusCode::kResourceExhausted;
      break;
    case SQLITE_BUSY:
    case SQLITE_LOCKED:
      code = absl::StatusCode::kUnavailable;
      hint = " (another connection holds the lock past the busy timeout)";
      break;
    case SQLITE_IOERR:
    case SQLITE_PROTOCOL:
    case SQLITE_INTERRUPT:
      code = absl::StatusCode::kUnavailable;
      break;
    case SQLITE_CANTOPEN:
    case SQLITE_PERM:
    case SQLITE_READONLY:
    case SQLITE_AUTH:
      code = absl::StatusCode::kFailedPrecondition;
      break;
    case SQLITE_CONSTRAINT:
      code = absl::StatusCode::kFailedPrecondition;
      hint = " (constraint violated)";
      break;
    default:
      break;
  }
  return StorageFailure(code, absl::StrCat("sqlite ", where, ": ", what, ": ", detail, hint),
                        absl::StrCat("sqlite: ", detail, code == absl::StatusCode::kDataLoss
                                                             ? " (the database is corrupt)"
                                                             : hint));
}

// `sql` with every $N outside string literals written ?N.
std::string ToSqlitePlaceholders(absl::string_view sql) {
  std::string out(sql);
  bool quoted = false;
  for (size_t i = 0; i < out.size(); ++i) {
    if (out[i] == '\'') quoted = !quoted;
    if (!quoted && out[i] == '$' && i + 1 < out.size() && absl::ascii_isdigit(out[i + 1])) {
      out[i] = '?';
    }
  }
  return out;
}

struct Finalizer {
  void operator()(sqlite3_stmt* stmt) const { sqlite3_finalize(stmt); }
};

// The statement's text for a message, cut at 80 characters.
std::string StatementText(sqlite3_stmt* stmt) {
  const char* sql = sqlite3_sql(stmt);
  std::string text = sql != nullptr ? sql : "statement";
  if (text.size() > 80) text = absl::StrCat(text.substr(0, 80), "...");
  return text;
}

int Bind(sqlite3_stmt* stmt, int index, const SqlParams::Value& value) {
  const std::string& bytes = value.bytes;
  switch (value.type) {
    case SqlParams::Type::kInt:
      return sqlite3_bind_int64(stmt, index, value.integer);
    case SqlParams::Type::kText:
      return sqlite3_bind_text64(stmt, index, bytes.empty() ? "" : bytes.data(), bytes.size(),
                                 SQLITE_TRANSIENT, SQLITE_UTF8);
    case SqlParams::Type::kBlob:
      return sqlite3_bind_blob64(stmt, index, bytes.empty() ? "" : bytes.data(), bytes.size(),
                                 SQLITE_TRANSIENT);
    case SqlParams::Type::kNullText:
      return sqlite3_bind_null(stmt, index);
  }
  return SQLITE_MISUSE;
}

// Column `column` of the current row. Integers read as SQLite converts them (text that
// spells a number reads as that number), as sqlite3_column_int64 does.
SqlRows::Cell ReadCell(sqlite3_stmt* stmt, int column) {
  SqlRows::Cell cell;
  const int type = sqlite3_column_type(stmt, column);
  if (type == SQLITE_NULL) {
    cell.null = true;
    return cell;
  }
  if (type == SQLITE_TEXT || type == SQLITE_BLOB) {
    const void* data = sqlite3_column_blob(stmt, column);
    int size = sqlite3_column_bytes(stmt, column);
    if (data != nullptr && size > 0) {
      cell.bytes.assign(static_cast<const char*>(data), static_cast<size_t>(size));
    }
  }
  if (type != SQLITE_BLOB) {
    cell.is_integer = true;
    cell.integer = sqlite3_column_int64(stmt, column);
  }
  return cell;
}

}  // namespace

absl::StatusOr<std::unique_ptr<SqliteConnection>> SqliteConnection::Open(
    const std::string& path, int busy_timeout_ms) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open database ", path, ": ", detail));
  }
  sqlite3_extended_result_codes(db, 1);
  sqlite3_busy_timeout(db, busy_timeout_ms);
  return std::unique_ptr<SqliteConnection>(new SqliteConnection(db));
}

SqliteConnection::~SqliteConnection() { sqlite3_close_v2(db_); }

absl::StatusOr<SqlRows> SqliteConnection::Query(absl::string_view sql, const SqlParams& params,
                                                absl::string_view what) {
  const std::string text = ToSqlitePlaceholders(sql);
  sqlite3_stmt* raw = nullptr;
  int rc = sqlite3_prepare_v2(db_, text.data(), static_cast<int>(text.size()), &raw, nullptr);
  std::unique_ptr<sqlite3_stmt, Finalizer> stmt(raw);
  if (rc != SQLITE_OK) {
    return SqliteError(db_, rc, absl::StrCat("preparing ", text.substr(0, 80)));
  }
  for (size_t i = 0; i < params.values().size(); ++i) {
    rc = Bind(stmt.get(), static_cast<int>(i) + 1, params.values()[i]);
    if (rc != SQLITE_OK) return SqliteError(db_, rc, "binding a parameter");
  }
  SqlRows rows;
  while (true) {
    rc = sqlite3_step(stmt.get());
    if (rc == SQLITE_DONE) break;
    if (rc != SQLITE_ROW) {
      return SqliteError(db_, rc, what.empty() ? StatementText(stmt.get()) : std::string(what));
    }
    const int columns = sqlite3_column_count(stmt.get());
    std::vector<SqlRows::Cell> row;
    row.reserve(columns);
    for (int column = 0; column < columns; ++column) row.push_back(ReadCell(stmt.get(), column));
    rows.AddRow(std::move(row));
  }
  rows.set_affected(sqlite3_stmt_readonly(stmt.get()) ? 0 : sqlite3_changes(db_));
  return rows;
}

absl::Status SqliteConnection::Exec(absl::string_view sql, absl::string_view what) {
  const std::string text(sql);
  char* error = nullptr;
  int rc = sqlite3_exec(db_, text.c_str(), nullptr, nullptr, &error);
  sqlite3_free(error);  // sqlite3_errmsg still holds the message
  if (rc != SQLITE_OK) return SqliteError(db_, rc, what);
  return absl::OkStatus();
}

absl::Status SqliteConnection::Atomically(absl::FunctionRef<absl::Status()> fn,
                                          bool /*snapshot*/) {
  const int level = depth_;
  const std::string savepoint = absl::StrCat("kagent_", level);
  if (level == 0) {
    KAGENT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "beginning a transaction"));
  } else {
    KAGENT_RETURN_IF_ERROR(Exec(absl::StrCat("SAVEPOINT ", savepoint), "savepoint"));
  }
  ++depth_;
  absl::Status status = fn();
  --depth_;
  if (sqlite3_get_autocommit(db_)) {
    // SQLite itself rolled the whole transaction back (e.g. disk full, I/O error).
    depth_ = 0;
    if (!status.ok()) return status;
    return StorageFailure(absl::StatusCode::kAborted,
                          "the database rolled the transaction back after an error",
                          "sqlite: the database rolled the transaction back after an error");
  }
  if (status.ok()) {
    status = level == 0 ? Exec("COMMIT", "committing")
                        : Exec(absl::StrCat("RELEASE ", savepoint), "release");
    if (status.ok()) return status;
  }
  // Undo. A failed ROLLBACK leaves nothing better to do than report the first error.
  if (level == 0) {
    if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK", "rolling back").IgnoreError();
  } else {
    Exec(absl::StrCat("ROLLBACK TO ", savepoint, "; RELEASE ", savepoint),
         "rolling back to a savepoint")
        .IgnoreError();
  }
  return status;
}

}  // namespace kagent::storage
