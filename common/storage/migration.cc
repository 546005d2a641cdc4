#include "common/storage/migration.h"

#include "absl/strings/str_cat.h"
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

}  // namespace kagent::storage
