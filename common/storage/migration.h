// Schema migrations: the step type and the checks both Storage backends make at open.
//
// A backend keeps an ordered list of migrations (SqliteSchemaMigrations(),
// PostgresSchemaMigrations()); at open it applies, in one transaction, those whose
// version is above the one recorded in the database, and refuses a database whose
// version is above the newest it knows. docs/storage.md describes the rules.
//
// Pure functions: thread-safe, no state.
#ifndef KAGENT_COMMON_STORAGE_MIGRATION_H_
#define KAGENT_COMMON_STORAGE_MIGRATION_H_

#include <cstdint>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"

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

}  // namespace kagent::storage

#endif  // KAGENT_COMMON_STORAGE_MIGRATION_H_
