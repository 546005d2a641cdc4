#include "common/storage/migration.h"

#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/status.h"

namespace kagent::storage {

int64_t LatestMigrationVersion(const std::vector<Migration>& migrations) {
  for (size_t i = 0; i < migrations.size(); ++i) {
    KAGENT_CHECK(migrations[i].version == static_cast<int64_t>(i) + 1)
        << "migration versions must be 1, 2, 3, ...; entry " << i << " has version "
        << migrations[i].version;
  }
  return migrations.empty() ? 0 : migrations.back().version;
}

absl::Status NewerSchemaError(absl::string_view database, int64_t version, int64_t latest) {
  return absl::FailedPreconditionError(absl::StrCat(
      database, " has schema version ", version,
      ", newer than the newest this binary knows (", latest,
      "): it was written by a newer kagent. Run that version, or restore a backup "
      "taken before the upgrade; downgrades are not supported"));
}

absl::StatusOr<MigrationOutcome> ApplyMigrations(SqlConnection& db, absl::string_view database,
                                                 const std::vector<Migration>& migrations,
                                                 const MigrationRecord& record) {
  const int64_t latest = LatestMigrationVersion(migrations);
  MigrationOutcome outcome;
  KAGENT_ASSIGN_OR_RETURN(
      SqlRows version, db.Query("SELECT COALESCE(MAX(version), 0) FROM schema_version",
                                SqlParams(), "reading the schema version"));
  outcome.from = version.empty() ? 0 : version.Int(0, 0);
  if (outcome.from > latest) return NewerSchemaError(database, outcome.from, latest);
  for (const Migration& migration : migrations) {
    if (migration.version <= outcome.from) continue;
    KAGENT_RETURN_IF_ERROR(db.Exec(
        migration.sql, absl::StrCat("schema migration ", migration.version, " (",
                                    migration.description, ")", record.failure_suffix)));
    SqlParams params;
    params.Int(migration.version).Text(migration.description);
    if (record.with_time) params.Int(absl::ToUnixMicros(absl::Now()));
    KAGENT_RETURN_IF_ERROR(db.Query(record.insert_sql, params).status());
    ++outcome.applied;
  }
  return outcome;
}

}  // namespace kagent::storage
