#include "common/storage/sqlite_storage.h"

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/migration.h"
#include "common/storage/sql_storage.h"
#include "common/storage/sqlite_driver.h"

namespace kagent {
namespace {

// PRAGMA application_id of a kagent database: "kagn".
constexpr int64_t kApplicationId = 0x6B61676E;

// The schema, one migration per step. Never edit a released migration: append one.
// docs/storage.md documents every table.
constexpr const char* kMigration1 = R"sql(
CREATE TABLE jobs (
  seq                     INTEGER PRIMARY KEY AUTOINCREMENT,  -- creation order
  id                      TEXT    NOT NULL UNIQUE,
  tenant                  TEXT    NOT NULL,
  state                   INTEGER NOT NULL,                   -- kagent.v1.JobState
  idempotency_key         TEXT,                               -- NULL when none
  revision                INTEGER NOT NULL,                   -- optimistic concurrency
  last_event_sequence     INTEGER NOT NULL DEFAULT 0,
  last_reflexion_sequence INTEGER NOT NULL DEFAULT 0,
  data                    BLOB    NOT NULL                    -- kagent.v1.Job
);
CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs(tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_by_tenant ON jobs(tenant, seq);
CREATE INDEX jobs_by_tenant_state ON jobs(tenant, state, seq);
CREATE INDEX jobs_by_state ON jobs(state, seq);

CREATE TABLE job_events (
  job_id   TEXT    NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL,
  type     INTEGER NOT NULL,                                  -- kagent.v1.JobEventType
  data     BLOB    NOT NULL,                                  -- kagent.v1.JobEvent
  PRIMARY KEY (job_id, sequence)
);

CREATE TABLE candidates (
  seq     INTEGER PRIMARY KEY AUTOINCREMENT,                  -- first insertion order
  id      TEXT    NOT NULL UNIQUE,
  job_id  TEXT    NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  round   INTEGER NOT NULL,
  verdict INTEGER NOT NULL,                                   -- kagent.v1.Verdict
  data    BLOB    NOT NULL                                    -- kagent.v1.Candidate
);
CREATE INDEX candidates_by_job ON candidates(job_id, round, seq);

CREATE TABLE task_results (
  task_id TEXT NOT NULL PRIMARY KEY,
  job_id  TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  data    BLOB NOT NULL
);
CREATE INDEX task_results_by_job ON task_results(job_id);

CREATE TABLE reflexions (
  job_id   TEXT    NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  sequence INTEGER NOT NULL,
  round    INTEGER NOT NULL,
  data     BLOB    NOT NULL,                                  -- kagent.v1.Reflexion
  PRIMARY KEY (job_id, sequence)
);

CREATE TABLE shared_reflexions (
  seq           INTEGER PRIMARY KEY AUTOINCREMENT,
  tenant        TEXT NOT NULL,
  op_class      TEXT NOT NULL,
  gpu_arch      TEXT NOT NULL,
  source_job_id TEXT NOT NULL,                                -- no foreign key: outlives the job
  data          BLOB NOT NULL                                 -- kagent.v1.Reflexion
);
CREATE INDEX shared_reflexions_by_key ON shared_reflexions(tenant, op_class, gpu_arch, seq);

CREATE TABLE artifacts (
  job_id     TEXT    NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  name       TEXT    NOT NULL,
  kind       TEXT    NOT NULL,
  size_bytes INTEGER NOT NULL,
  meta       BLOB    NOT NULL,                                -- kagent.v1.Artifact without content
  content    BLOB    NOT NULL,
  PRIMARY KEY (job_id, name)
);

CREATE TABLE checkpoints (
  job_id TEXT NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  key    TEXT NOT NULL,
  data   BLOB NOT NULL,
  PRIMARY KEY (job_id, key)
);
)sql";

// SQLite's dialect (sql_storage.h). The per-job counters live in the jobs row.
constexpr storage::SqlDialect kSqliteDialect = {
    .name = "SQLite",
    .next_event_sequence = "UPDATE jobs SET last_event_sequence = last_event_sequence + 1 "
                           "WHERE id = $1 RETURNING last_event_sequence",
    .next_reflexion_sequence =
        "UPDATE jobs SET last_reflexion_sequence = last_reflexion_sequence + 1 "
        "WHERE id = $1 RETURNING last_reflexion_sequence",
    .create_job_counters = nullptr,
    // BEGIN IMMEDIATE has locked the whole database for writing already.
    .lock_job_row = "",
    .prefix_by_starts_with = false,
    // One coordinator per SQLite database: no leases (storage.h).
    .acquire_lease = nullptr,
    .get_lease = nullptr,
    .check_lease = nullptr,
    .release_lease = nullptr,
};

// The integer in the first column of the first row of `sql` (0 when no row).
absl::StatusOr<int64_t> QueryInt(storage::SqlConnection& db, absl::string_view sql) {
  KAGENT_ASSIGN_OR_RETURN(storage::SqlRows rows, db.Query(sql, storage::SqlParams()));
  return rows.empty() ? 0 : rows.Int(0, 0);
}

// Refuses, before anything is written, a file that is not a kagent database.
absl::Status CheckIdentity(storage::SqlConnection& db, const std::string& path) {
  // The first read of the file: a file that is not a database fails here (DATA_LOSS).
  KAGENT_ASSIGN_OR_RETURN(int64_t application_id, QueryInt(db, "PRAGMA application_id"));
  if (application_id != 0 && application_id != kApplicationId) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "database %s belongs to another application (SQLite application_id 0x%08x); it is "
        "not a kagent database: point the storage path at another file",
        path, application_id));
  }
  KAGENT_ASSIGN_OR_RETURN(
      storage::SqlRows tables,
      db.Query("SELECT COUNT(*), COALESCE(SUM(name = 'schema_version'), 0) FROM sqlite_master "
               "WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'",
               storage::SqlParams()));
  KAGENT_CHECK(tables.size() == 1) << "an aggregate query returned no row";
  if (tables.Int(0, 0) > 0 && tables.Int(0, 1) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database ", path, " has ", tables.Int(0, 0),
        " tables but no schema_version table; it is not a kagent database: point the "
        "storage path at another file"));
  }
  return absl::OkStatus();
}

// Applies the migrations the file lacks, in one transaction.
absl::Status Migrate(storage::SqlConnection& db, const std::string& path,
                     const std::vector<SqliteMigration>& migrations) {
  storage::MigrationOutcome outcome;
  absl::Status status = db.Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(db.Exec(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        "  version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
        "  applied_at_unix_micros INTEGER NOT NULL)",
        "creating schema_version"));
    KAGENT_ASSIGN_OR_RETURN(
        outcome, storage::ApplyMigrations(
                     db, absl::StrCat("database ", path), migrations,
                     {.insert_sql = "INSERT INTO schema_version(version, description, "
                                    "applied_at_unix_micros) VALUES ($1, $2, $3)",
                      .with_time = true,
                      .failure_suffix = ""}));
    return db.Exec(absl::StrCat("PRAGMA application_id=", kApplicationId),
                   "setting application_id");
  }, /*snapshot=*/false);
  if (!status.ok()) return status;
  const int64_t latest = storage::LatestMigrationVersion(migrations);
  KLOG(INFO).With("path", path).With("schema_version", static_cast<double>(latest))
      << "storage opened: schema version " << latest << " (" << outcome.applied
      << " migrations applied, was " << outcome.from << ")";
  return absl::OkStatus();
}

// Checks the file, sets the connection up (WAL, foreign keys, synchronous) and migrates.
absl::Status Configure(storage::SqlConnection& db, const SqliteStorageOptions& options) {
  const bool in_memory = options.path == ":memory:";

  // Identify the file before changing anything in it (journal mode is persistent).
  KAGENT_RETURN_IF_ERROR(CheckIdentity(db, options.path));

  {
    KAGENT_ASSIGN_OR_RETURN(storage::SqlRows wal,
                            db.Query("PRAGMA journal_mode=WAL", storage::SqlParams()));
    std::string mode = wal.empty() ? "" : wal.Bytes(0, 0);
    if (!in_memory && mode != "wal") {
      return absl::FailedPreconditionError(absl::StrCat(
          "database ", options.path, ": cannot enable WAL mode (journal_mode is \"", mode,
          "\"); put the database on a local filesystem"));
    }
  }
  KAGENT_RETURN_IF_ERROR(db.Exec("PRAGMA foreign_keys=ON", "enabling foreign keys"));
  KAGENT_ASSIGN_OR_RETURN(int64_t foreign_keys, QueryInt(db, "PRAGMA foreign_keys"));
  if (foreign_keys != 1) {
    return absl::FailedPreconditionError(
        "this SQLite library cannot enforce foreign keys (built without them)");
  }
  KAGENT_RETURN_IF_ERROR(db.Exec(options.synchronous_full ? "PRAGMA synchronous=FULL"
                                                           : "PRAGMA synchronous=NORMAL",
                                 "setting synchronous"));
  const std::vector<SqliteMigration>& migrations =
      options.migrations != nullptr ? *options.migrations : SqliteSchemaMigrations();
  return Migrate(db, options.path, migrations);
}

}  // namespace

const std::vector<SqliteMigration>& SqliteSchemaMigrations() {
  static const auto* const kMigrations = new std::vector<SqliteMigration>{
      {1, "jobs, events, candidates, task results, reflexions, artifacts, checkpoints",
       kMigration1},
  };
  return *kMigrations;
}

absl::StatusOr<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(
    const SqliteStorageOptions& options) {
  if (options.path.empty()) {
    return absl::InvalidArgumentError(
        "storage path is empty; give a database file path (or \":memory:\")");
  }
  if (options.busy_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("busy_timeout_ms is ", options.busy_timeout_ms, "; it must be >= 0"));
  }
  const bool in_memory = options.path == ":memory:";
  if (!in_memory && options.create_parent_directories) {
    std::filesystem::path parent = std::filesystem::path(options.path).parent_path();
    std::error_code ec;
    if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    if (ec) {
      return absl::FailedPreconditionError(absl::StrCat(
          "cannot create directory ", parent.string(), " for database ", options.path, ": ",
          ec.message()));
    }
  }
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<storage::SqliteConnection> db,
                          storage::SqliteConnection::Open(options.path, options.busy_timeout_ms));
  KAGENT_RETURN_IF_ERROR(Configure(*db, options));
  auto connection = std::make_unique<storage::SqlStorage>(std::move(db), kSqliteDialect);
  return std::unique_ptr<SqliteStorage>(new SqliteStorage(options.path, std::move(connection)));
}

SqliteStorage::SqliteStorage(std::string path, std::unique_ptr<storage::SqlStorage> connection)
    : path_(std::move(path)), connection_(std::move(connection)) {}

SqliteStorage::~SqliteStorage() = default;

absl::Status SqliteStorage::WithConnection(absl::FunctionRef<absl::Status(Storage&)> call) {
  absl::MutexLock lock(&mu_);
  return call(*connection_);
}

}  // namespace kagent
