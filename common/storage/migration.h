// Schema migrations: the step type and the checks both Storage backends make at open.
//
// A backend keeps an ordered list of migrations (SqliteSchemaMigrations(),
// PostgresSchemaMigrations()); at open it applies, in one transaction, those whose
// version is above the one recorded in the database, and refuses a database whose
// version is above the newest it knows. docs/storage.md describes the rules.
// ApplyMigrations() is that step, written once over the SQL driver; each backend wraps
// it in its own transaction and checks (SQLite: the file's identity; PostgreSQL: an
// advisory lock and the schema's tables).
//
// Thread-safety: the pure functions are thread-safe; ApplyMigrations uses the caller's
// connection, which is single-threaded.
#ifndef KAGENT_COMMON_STORAGE_MIGRATION_H_
#define KAGENT_COMMON_STORAGE_MIGRATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "common/storage/sql_driver.h"

namespace kagent::storage {

// One step of the schema: `sql` (one or more statements, in the backend's dialect) takes
// the database from version - 1 to `version`. Versions start at 1 and increase by one.
struct Migration {
  int64_t version;
  const char* description;
  const char* sql;
};

// The version the last migration writes (0 when there are none). Crashes (a programming
// error) unless the versions are 1, 2, 3, ... in order.
int64_t LatestMigrationVersion(const std::vector<Migration>& migrations);

// FAILED_PRECONDITION for a database at schema `version`, newer than `latest`, the
// newest this binary knows. `database` names it in the message ("database PATH",
// "postgres HOST:PORT/DB").
absl::Status NewerSchemaError(absl::string_view database, int64_t version, int64_t latest);

// How a backend records an applied migration in its schema_version table.
struct MigrationRecord {
  // $1 version, $2 description and, when `with_time`, $3 the time in Unix microseconds.
  const char* insert_sql;
  bool with_time;
  // Appended to "schema migration N (description)" in the message of a failed one.
  const char* failure_suffix;
};

// What ApplyMigrations found and did.
struct MigrationOutcome {
  int64_t from = 0;  // the version recorded before
  int applied = 0;   // migrations applied
};

// Inside the caller's open transaction on `db`, whose schema_version table exists:
// reads the recorded version, refuses one newer than `migrations` know
// (NewerSchemaError naming `database`), then runs each later migration's SQL and records
// it. On an error the caller rolls the transaction back, so nothing changes.
absl::StatusOr<MigrationOutcome> ApplyMigrations(SqlConnection& db, absl::string_view database,
                                                 const std::vector<Migration>& migrations,
                                                 const MigrationRecord& record);

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_MIGRATION_H_
