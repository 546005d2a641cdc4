#include "common/storage/sqlite_storage.h"

#include <sqlite3.h>

#include <filesystem>
#include <system_error>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "absl/time/time.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/migration.h"
#include "common/storage/records.h"
#include "common/storage/validation.h"

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

// One prepared statement. Bind errors are remembered and reported by Step().
class Statement {
 public:
  Statement(sqlite3* db, sqlite3_stmt* stmt) : db_(db), stmt_(stmt) {}
  ~Statement() { sqlite3_finalize(stmt_); }
  Statement(Statement&& other) noexcept
      : db_(other.db_), stmt_(std::exchange(other.stmt_, nullptr)), bind_rc_(other.bind_rc_) {}
  Statement(const Statement&) = delete;
  Statement& operator=(const Statement&) = delete;
  Statement& operator=(Statement&&) = delete;

  // Parameters are numbered from 1. Values are copied.
  Statement& Int(int index, int64_t value) {
    Record(sqlite3_bind_int64(stmt_, index, value));
    return *this;
  }
  Statement& Text(int index, absl::string_view value) {
    Record(sqlite3_bind_text64(stmt_, index, value.empty() ? "" : value.data(), value.size(),
                               SQLITE_TRANSIENT, SQLITE_UTF8));
    return *this;
  }
  Statement& Blob(int index, absl::string_view value) {
    Record(sqlite3_bind_blob64(stmt_, index, value.empty() ? "" : value.data(), value.size(),
                               SQLITE_TRANSIENT));
    return *this;
  }
  Statement& Null(int index) {
    Record(sqlite3_bind_null(stmt_, index));
    return *this;
  }

  // True when a row is ready, false when done.
  absl::StatusOr<bool> Step() {
    if (bind_rc_ != SQLITE_OK) return SqliteError(db_, bind_rc_, "binding a parameter");
    int rc = sqlite3_step(stmt_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    return SqliteError(db_, rc, Sql());
  }
  // Steps to completion; for statements without result rows.
  absl::Status Run() {
    while (true) {
      KAGENT_ASSIGN_OR_RETURN(bool row, Step());
      if (!row) return absl::OkStatus();
    }
  }

  int64_t ColumnInt(int column) const { return sqlite3_column_int64(stmt_, column); }
  bool ColumnIsNull(int column) const {
    return sqlite3_column_type(stmt_, column) == SQLITE_NULL;
  }
  std::string ColumnBytes(int column) const {
    const void* data = sqlite3_column_blob(stmt_, column);
    int size = sqlite3_column_bytes(stmt_, column);
    if (data == nullptr || size <= 0) return std::string();
    return std::string(static_cast<const char*>(data), static_cast<size_t>(size));
  }

 private:
  void Record(int rc) {
    if (rc != SQLITE_OK && bind_rc_ == SQLITE_OK) bind_rc_ = rc;
  }
  std::string Sql() const {
    const char* sql = sqlite3_sql(stmt_);
    std::string text = sql != nullptr ? sql : "statement";
    if (text.size() > 80) text = absl::StrCat(text.substr(0, 80), "...");
    return text;
  }

  sqlite3* db_;
  sqlite3_stmt* stmt_;
  int bind_rc_ = SQLITE_OK;
};

// The smallest string greater than every string starting with `prefix`, or empty when
// there is none (prefix empty or all 0xff).
std::string PrefixUpperBound(absl::string_view prefix) {
  std::string upper(prefix);
  while (!upper.empty() && static_cast<unsigned char>(upper.back()) == 0xff) upper.pop_back();
  if (!upper.empty()) upper.back() = static_cast<char>(static_cast<unsigned char>(upper.back()) + 1);
  return upper;
}

// Steps `statement` to the end, parsing its `column` of every row into `out`.
template <typename Message>
absl::Status ParseRows(Statement& statement, int column, absl::string_view what,
                       std::vector<Message>* out) {
  while (true) {
    KAGENT_ASSIGN_OR_RETURN(bool row, statement.Step());
    if (!row) return absl::OkStatus();
    KAGENT_ASSIGN_OR_RETURN(Message message,
                            storage::ParseStored<Message>(statement.ColumnBytes(column), what));
    out->push_back(std::move(message));
  }
}

}  // namespace

const std::vector<SqliteMigration>& SqliteSchemaMigrations() {
  static const auto* const kMigrations = new std::vector<SqliteMigration>{
      {1, "jobs, events, candidates, task results, reflexions, artifacts, checkpoints",
       kMigration1},
  };
  return *kMigrations;
}

// ---------------------------------------------------------------------------
// Connection: the Storage implementation over one sqlite3 handle. Not thread-safe:
// SqliteStorage serializes calls. It is also the Storage& handed to transaction bodies.
// ---------------------------------------------------------------------------

class SqliteStorage::Connection final : public Storage {
 public:
  static absl::StatusOr<std::unique_ptr<Connection>> Open(const SqliteStorageOptions& options);

  ~Connection() override { sqlite3_close_v2(db_); }

#include "common/storage/storage_overrides.inc"

 private:
  explicit Connection(sqlite3* db) : db_(db) {}

  absl::StatusOr<Statement> Prepare(absl::string_view sql);
  absl::Status Exec(const char* sql, absl::string_view what);
  // Runs `fn` atomically: a top-level BEGIN IMMEDIATE ... COMMIT, or a savepoint when a
  // transaction is already open. On failure everything `fn` wrote is undone.
  absl::Status Atomically(absl::FunctionRef<absl::Status()> fn);
  absl::Status Configure(const SqliteStorageOptions& options);
  absl::Status CheckIdentity(const std::string& path);
  absl::Status Migrate(const std::string& path, const std::vector<SqliteMigration>& migrations);
  absl::StatusOr<int64_t> PragmaInt(const char* pragma);

  // NOT_FOUND unless the job exists.
  absl::Status RequireJob(absl::string_view job_id);
  absl::StatusOr<StoredJob> ReadJob(const Statement& statement, int revision_column,
                                    int data_column);

  sqlite3* const db_;
  int depth_ = 0;  // open transaction levels (0: none)
};

absl::StatusOr<std::unique_ptr<SqliteStorage::Connection>> SqliteStorage::Connection::Open(
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
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(options.path.c_str(), &db,
                           SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                           nullptr);
  if (rc != SQLITE_OK) {
    std::string detail = db != nullptr ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
    sqlite3_close_v2(db);
    return absl::FailedPreconditionError(
        absl::StrCat("cannot open database ", options.path, ": ", detail));
  }
  std::unique_ptr<Connection> connection(new Connection(db));
  KAGENT_RETURN_IF_ERROR(connection->Configure(options));
  return connection;
}

absl::Status SqliteStorage::Connection::Configure(const SqliteStorageOptions& options) {
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, options.busy_timeout_ms);
  const bool in_memory = options.path == ":memory:";

  // Identify the file before changing anything in it (journal mode is persistent).
  KAGENT_RETURN_IF_ERROR(CheckIdentity(options.path));

  {
    KAGENT_ASSIGN_OR_RETURN(Statement wal, Prepare("PRAGMA journal_mode=WAL"));
    KAGENT_ASSIGN_OR_RETURN(bool row, wal.Step());
    std::string mode = row ? wal.ColumnBytes(0) : "";
    if (!in_memory && mode != "wal") {
      return absl::FailedPreconditionError(absl::StrCat(
          "database ", options.path, ": cannot enable WAL mode (journal_mode is \"", mode,
          "\"); put the database on a local filesystem"));
    }
  }
  KAGENT_RETURN_IF_ERROR(Exec("PRAGMA foreign_keys=ON", "enabling foreign keys"));
  KAGENT_ASSIGN_OR_RETURN(int64_t foreign_keys, PragmaInt("PRAGMA foreign_keys"));
  if (foreign_keys != 1) {
    return absl::FailedPreconditionError(
        "this SQLite library cannot enforce foreign keys (built without them)");
  }
  KAGENT_RETURN_IF_ERROR(Exec(options.synchronous_full ? "PRAGMA synchronous=FULL"
                                                        : "PRAGMA synchronous=NORMAL",
                              "setting synchronous"));
  const std::vector<SqliteMigration>& migrations =
      options.migrations != nullptr ? *options.migrations : SqliteSchemaMigrations();
  return Migrate(options.path, migrations);
}

absl::Status SqliteStorage::Connection::CheckIdentity(const std::string& path) {
  // The first read of the file: a file that is not a database fails here (DATA_LOSS).
  KAGENT_ASSIGN_OR_RETURN(int64_t application_id, PragmaInt("PRAGMA application_id"));
  if (application_id != 0 && application_id != kApplicationId) {
    return absl::FailedPreconditionError(absl::StrFormat(
        "database %s belongs to another application (SQLite application_id 0x%08x); it is "
        "not a kagent database: point the storage path at another file",
        path, application_id));
  }
  KAGENT_ASSIGN_OR_RETURN(
      Statement tables,
      Prepare("SELECT COUNT(*), COALESCE(SUM(name = 'schema_version'), 0) FROM sqlite_master "
              "WHERE type = 'table' AND name NOT LIKE 'sqlite\\_%' ESCAPE '\\'"));
  KAGENT_ASSIGN_OR_RETURN(bool row, tables.Step());
  KAGENT_CHECK(row) << "an aggregate query returned no row";
  if (tables.ColumnInt(0) > 0 && tables.ColumnInt(1) == 0) {
    return absl::FailedPreconditionError(absl::StrCat(
        "database ", path, " has ", tables.ColumnInt(0),
        " tables but no schema_version table; it is not a kagent database: point the "
        "storage path at another file"));
  }
  return absl::OkStatus();
}

absl::Status SqliteStorage::Connection::Migrate(const std::string& path,
                                                const std::vector<SqliteMigration>& migrations) {
  const int64_t latest = storage::LatestMigrationVersion(migrations);
  int64_t from = 0;
  int applied = 0;
  absl::Status status = Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(Exec(
        "CREATE TABLE IF NOT EXISTS schema_version ("
        "  version INTEGER PRIMARY KEY, description TEXT NOT NULL,"
        "  applied_at_unix_micros INTEGER NOT NULL)",
        "creating schema_version"));
    KAGENT_ASSIGN_OR_RETURN(from, SchemaVersion());
    if (from > latest) {
      return storage::NewerSchemaError(absl::StrCat("database ", path), from, latest);
    }
    for (const SqliteMigration& migration : migrations) {
      if (migration.version <= from) continue;
      KAGENT_RETURN_IF_ERROR(Exec(
          migration.sql, absl::StrCat("schema migration ", migration.version, " (",
                                      migration.description, ")")));
      KAGENT_ASSIGN_OR_RETURN(
          Statement record,
          Prepare("INSERT INTO schema_version(version, description, applied_at_unix_micros) "
                  "VALUES (?1, ?2, ?3)"));
      record.Int(1, migration.version)
          .Text(2, migration.description)
          .Int(3, absl::ToUnixMicros(absl::Now()));
      KAGENT_RETURN_IF_ERROR(record.Run());
      ++applied;
    }
    return Exec(absl::StrCat("PRAGMA application_id=", kApplicationId).c_str(),
                "setting application_id");
  });
  if (!status.ok()) return status;
  KLOG(INFO).With("path", path).With("schema_version", static_cast<double>(latest))
      << "storage opened: schema version " << latest << " (" << applied
      << " migrations applied, was " << from << ")";
  return absl::OkStatus();
}

absl::StatusOr<Statement> SqliteStorage::Connection::Prepare(absl::string_view sql) {
  sqlite3_stmt* stmt = nullptr;
  int rc = sqlite3_prepare_v2(db_, sql.data(), static_cast<int>(sql.size()), &stmt, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_finalize(stmt);
    return SqliteError(db_, rc, absl::StrCat("preparing ", sql.substr(0, 80)));
  }
  return Statement(db_, stmt);
}

absl::Status SqliteStorage::Connection::Exec(const char* sql, absl::string_view what) {
  char* error = nullptr;
  int rc = sqlite3_exec(db_, sql, nullptr, nullptr, &error);
  sqlite3_free(error);  // sqlite3_errmsg still holds the message
  if (rc != SQLITE_OK) return SqliteError(db_, rc, what);
  return absl::OkStatus();
}

absl::StatusOr<int64_t> SqliteStorage::Connection::PragmaInt(const char* pragma) {
  KAGENT_ASSIGN_OR_RETURN(Statement statement, Prepare(pragma));
  KAGENT_ASSIGN_OR_RETURN(bool row, statement.Step());
  return row ? statement.ColumnInt(0) : 0;
}

absl::Status SqliteStorage::Connection::Atomically(absl::FunctionRef<absl::Status()> fn) {
  const int level = depth_;
  const std::string savepoint = absl::StrCat("kagent_", level);
  if (level == 0) {
    KAGENT_RETURN_IF_ERROR(Exec("BEGIN IMMEDIATE", "beginning a transaction"));
  } else {
    KAGENT_RETURN_IF_ERROR(Exec(absl::StrCat("SAVEPOINT ", savepoint).c_str(), "savepoint"));
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
                        : Exec(absl::StrCat("RELEASE ", savepoint).c_str(), "release");
    if (status.ok()) return status;
  }
  // Undo. A failed ROLLBACK leaves nothing better to do than report the first error.
  if (level == 0) {
    if (!sqlite3_get_autocommit(db_)) Exec("ROLLBACK", "rolling back").IgnoreError();
  } else {
    Exec(absl::StrCat("ROLLBACK TO ", savepoint, "; RELEASE ", savepoint).c_str(),
         "rolling back to a savepoint")
        .IgnoreError();
  }
  return status;
}

absl::Status SqliteStorage::Connection::RequireJob(absl::string_view job_id) {
  KAGENT_ASSIGN_OR_RETURN(Statement statement, Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
  statement.Text(1, job_id);
  KAGENT_ASSIGN_OR_RETURN(bool found, statement.Step());
  if (!found) return storage::JobNotFound(job_id);
  return absl::OkStatus();
}

absl::StatusOr<StoredJob> SqliteStorage::Connection::ReadJob(const Statement& statement,
                                                             int revision_column,
                                                             int data_column) {
  return storage::ParseStoredJob(statement.ColumnBytes(data_column),
                                 statement.ColumnInt(revision_column));
}

// --- Jobs ------------------------------------------------------------------------

absl::StatusOr<CreateJobResult> SqliteStorage::Connection::CreateJob(
    const v1::Job& job, absl::string_view idempotency_key) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateCreateJob(job, idempotency_key));
  CreateJobResult result;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    if (!idempotency_key.empty()) {
      KAGENT_ASSIGN_OR_RETURN(
          Statement existing,
          Prepare("SELECT revision, data FROM jobs WHERE tenant = ?1 AND idempotency_key = ?2"));
      existing.Text(1, job.tenant()).Text(2, idempotency_key);
      KAGENT_ASSIGN_OR_RETURN(bool found, existing.Step());
      if (found) {
        KAGENT_ASSIGN_OR_RETURN(result.stored, ReadJob(existing, 0, 1));
        result.created = false;
        return absl::OkStatus();
      }
    }
    KAGENT_ASSIGN_OR_RETURN(Statement taken, Prepare("SELECT 1 FROM jobs WHERE id = ?1"));
    taken.Text(1, job.id());
    KAGENT_ASSIGN_OR_RETURN(bool exists, taken.Step());
    if (exists) return storage::JobIdTaken(job.id());
    KAGENT_ASSIGN_OR_RETURN(
        Statement insert,
        Prepare("INSERT INTO jobs(id, tenant, state, idempotency_key, revision, data) "
                "VALUES (?1, ?2, ?3, ?4, 1, ?5)"));
    insert.Text(1, job.id()).Text(2, job.tenant()).Int(3, job.state()).Blob(5,
                                                                           job.SerializeAsString());
    if (idempotency_key.empty()) {
      insert.Null(4);
    } else {
      insert.Text(4, idempotency_key);
    }
    KAGENT_RETURN_IF_ERROR(insert.Run());
    result.stored.job = job;
    result.stored.revision = 1;
    result.created = true;
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<StoredJob> SqliteStorage::Connection::GetJob(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("job_id", job_id));
  KAGENT_ASSIGN_OR_RETURN(Statement statement,
                          Prepare("SELECT revision, data FROM jobs WHERE id = ?1"));
  statement.Text(1, job_id);
  KAGENT_ASSIGN_OR_RETURN(bool found, statement.Step());
  if (!found) return storage::JobNotFound(job_id);
  return ReadJob(statement, 0, 1);
}

absl::StatusOr<int64_t> SqliteStorage::Connection::UpdateJob(const v1::Job& job,
                                                             int64_t expected_revision) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateUpdateJob(job, expected_revision));
  int64_t new_revision = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(Statement current,
                            Prepare("SELECT tenant, revision FROM jobs WHERE id = ?1"));
    current.Text(1, job.id());
    KAGENT_ASSIGN_OR_RETURN(bool found, current.Step());
    if (!found) return storage::JobNotFound(job.id());
    KAGENT_RETURN_IF_ERROR(storage::CheckJobUpdate(job, current.ColumnBytes(0),
                                                   current.ColumnInt(1), expected_revision));
    KAGENT_ASSIGN_OR_RETURN(
        Statement update,
        Prepare("UPDATE jobs SET state = ?2, data = ?3, revision = revision + 1 "
                "WHERE id = ?1 AND revision = ?4"));
    update.Text(1, job.id()).Int(2, job.state()).Blob(3, job.SerializeAsString())
        .Int(4, expected_revision);
    KAGENT_RETURN_IF_ERROR(update.Run());
    KAGENT_CHECK(sqlite3_changes(db_) == 1) << "the revision changed inside a transaction";
    new_revision = expected_revision + 1;
    return absl::OkStatus();
  }));
  return new_revision;
}

absl::StatusOr<JobPage> SqliteStorage::Connection::ListJobs(const ListJobsQuery& query) {
  KAGENT_ASSIGN_OR_RETURN(int page_size, storage::ValidateListJobsQuery(query));
  KAGENT_ASSIGN_OR_RETURN(int64_t before, storage::JobPageStart(query));
  const bool filtered = query.state != v1::JOB_STATE_UNSPECIFIED;
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare(filtered ? "SELECT seq, revision, data FROM jobs WHERE tenant = ?1 AND state = ?2 "
                         "AND seq < ?3 ORDER BY seq DESC LIMIT ?4"
                       : "SELECT seq, revision, data FROM jobs WHERE tenant = ?1 "
                         "AND seq < ?3 ORDER BY seq DESC LIMIT ?4"));
  statement.Text(1, query.tenant).Int(3, before).Int(4, page_size + 1);
  if (filtered) statement.Int(2, query.state);
  JobPage page;
  int64_t last_position = 0;
  while (true) {
    KAGENT_ASSIGN_OR_RETURN(bool row, statement.Step());
    if (!row) break;
    if (static_cast<int>(page.jobs.size()) == page_size) {
      page.next_page_token = storage::EncodeJobPageToken(query, last_position);
      break;
    }
    last_position = statement.ColumnInt(0);
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(statement, 1, 2));
    page.jobs.push_back(std::move(stored));
  }
  return page;
}

absl::StatusOr<std::vector<StoredJob>> SqliteStorage::Connection::ListUnfinishedJobs() {
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare("SELECT revision, data FROM jobs WHERE state IN (?1, ?2, ?3) ORDER BY seq"));
  statement.Int(1, v1::JOB_STATE_QUEUED).Int(2, v1::JOB_STATE_BASELINE).Int(3, v1::JOB_STATE_ROUNDS);
  std::vector<StoredJob> jobs;
  while (true) {
    KAGENT_ASSIGN_OR_RETURN(bool row, statement.Step());
    if (!row) break;
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(statement, 0, 1));
    jobs.push_back(std::move(stored));
  }
  return jobs;
}

absl::Status SqliteStorage::Connection::DeleteJob(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("job_id", job_id));
  return Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(Statement statement, Prepare("DELETE FROM jobs WHERE id = ?1"));
    statement.Text(1, job_id);
    KAGENT_RETURN_IF_ERROR(statement.Run());
    if (sqlite3_changes(db_) == 0) return storage::JobNotFound(job_id);
    return absl::OkStatus();
  });
}

// --- Events ----------------------------------------------------------------------

absl::StatusOr<int64_t> SqliteStorage::Connection::AppendEvent(absl::string_view job_id,
                                                               const v1::JobEvent& event) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateEvent(job_id, event));
  int64_t sequence = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(
        Statement next,
        Prepare("UPDATE jobs SET last_event_sequence = last_event_sequence + 1 WHERE id = ?1 "
                "RETURNING last_event_sequence"));
    next.Text(1, job_id);
    KAGENT_ASSIGN_OR_RETURN(bool found, next.Step());
    if (!found) return storage::JobNotFound(job_id);
    sequence = next.ColumnInt(0);
    KAGENT_RETURN_IF_ERROR(next.Run());
    v1::JobEvent stored = event;
    stored.set_job_id(std::string(job_id));
    stored.set_sequence(sequence);
    KAGENT_ASSIGN_OR_RETURN(
        Statement insert,
        Prepare("INSERT INTO job_events(job_id, sequence, type, data) VALUES (?1, ?2, ?3, ?4)"));
    insert.Text(1, job_id).Int(2, sequence).Int(3, event.type()).Blob(4, stored.SerializeAsString());
    return insert.Run();
  }));
  return sequence;
}

absl::StatusOr<std::vector<v1::JobEvent>> SqliteStorage::Connection::ListEvents(
    absl::string_view job_id, int64_t from_sequence, int limit) {
  KAGENT_ASSIGN_OR_RETURN(int effective,
                          storage::ValidateListEvents(job_id, from_sequence, limit));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare("SELECT data FROM job_events WHERE job_id = ?1 AND sequence >= ?2 "
              "ORDER BY sequence LIMIT ?3"));
  statement.Text(1, job_id).Int(2, from_sequence).Int(3, effective);
  std::vector<v1::JobEvent> events;
  KAGENT_RETURN_IF_ERROR(ParseRows(statement, 0, "job event", &events));
  return events;
}

// --- Candidates ------------------------------------------------------------------

absl::Status SqliteStorage::Connection::PutCandidate(const v1::Candidate& candidate) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateCandidate(candidate));
  return Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(Statement existing,
                            Prepare("SELECT job_id FROM candidates WHERE id = ?1"));
    existing.Text(1, candidate.id());
    KAGENT_ASSIGN_OR_RETURN(bool found, existing.Step());
    if (found && existing.ColumnBytes(0) != candidate.job_id()) {
      return storage::CandidateMoved(candidate, existing.ColumnBytes(0));
    }
    KAGENT_RETURN_IF_ERROR(RequireJob(candidate.job_id()));
    KAGENT_ASSIGN_OR_RETURN(
        Statement upsert,
        Prepare("INSERT INTO candidates(id, job_id, round, verdict, data) "
                "VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT(id) DO UPDATE SET "
                "round = excluded.round, verdict = excluded.verdict, data = excluded.data"));
    upsert.Text(1, candidate.id()).Text(2, candidate.job_id()).Int(3, candidate.round())
        .Int(4, candidate.measurement().verdict()).Blob(5, candidate.SerializeAsString());
    return upsert.Run();
  });
}

absl::StatusOr<v1::Candidate> SqliteStorage::Connection::GetCandidate(
    absl::string_view candidate_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("candidate_id", candidate_id));
  KAGENT_ASSIGN_OR_RETURN(Statement statement,
                          Prepare("SELECT data FROM candidates WHERE id = ?1"));
  statement.Text(1, candidate_id);
  KAGENT_ASSIGN_OR_RETURN(bool found, statement.Step());
  if (!found) return storage::CandidateNotFound(candidate_id);
  return storage::ParseStored<v1::Candidate>(statement.ColumnBytes(0), "candidate");
}

absl::StatusOr<std::vector<v1::Candidate>> SqliteStorage::Connection::ListCandidates(
    absl::string_view job_id, std::optional<int32_t> round) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateListCandidates(job_id, round));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare(round.has_value()
                  ? "SELECT data FROM candidates WHERE job_id = ?1 AND round = ?2 ORDER BY seq"
                  : "SELECT data FROM candidates WHERE job_id = ?1 ORDER BY round, seq"));
  statement.Text(1, job_id);
  if (round.has_value()) statement.Int(2, *round);
  std::vector<v1::Candidate> candidates;
  KAGENT_RETURN_IF_ERROR(ParseRows(statement, 0, "candidate", &candidates));
  return candidates;
}

// --- Task results ----------------------------------------------------------------

absl::StatusOr<std::string> SqliteStorage::Connection::PutTaskResult(absl::string_view job_id,
                                                                     absl::string_view task_id,
                                                                     absl::string_view result) {
  KAGENT_RETURN_IF_ERROR(storage::ValidatePutTaskResult(job_id, task_id, result));
  std::string recorded;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(Statement existing,
                            Prepare("SELECT job_id, data FROM task_results WHERE task_id = ?1"));
    existing.Text(1, task_id);
    KAGENT_ASSIGN_OR_RETURN(bool found, existing.Step());
    if (found) {
      KAGENT_RETURN_IF_ERROR(storage::CheckTaskJob(task_id, existing.ColumnBytes(0), job_id));
      recorded = existing.ColumnBytes(1);
      return absl::OkStatus();
    }
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    KAGENT_ASSIGN_OR_RETURN(
        Statement insert,
        Prepare("INSERT INTO task_results(task_id, job_id, data) VALUES (?1, ?2, ?3)"));
    insert.Text(1, task_id).Text(2, job_id).Blob(3, result);
    KAGENT_RETURN_IF_ERROR(insert.Run());
    recorded = std::string(result);
    return absl::OkStatus();
  }));
  return recorded;
}

absl::StatusOr<std::string> SqliteStorage::Connection::GetTaskResult(absl::string_view task_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("task_id", task_id));
  KAGENT_ASSIGN_OR_RETURN(Statement statement,
                          Prepare("SELECT data FROM task_results WHERE task_id = ?1"));
  statement.Text(1, task_id);
  KAGENT_ASSIGN_OR_RETURN(bool found, statement.Step());
  if (!found) return storage::TaskResultNotFound(task_id);
  return statement.ColumnBytes(0);
}

// --- Reflexions ------------------------------------------------------------------

absl::StatusOr<int64_t> SqliteStorage::Connection::AppendReflexion(
    absl::string_view job_id, const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateAppendReflexion(job_id, reflexion));
  int64_t sequence = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(
        Statement next,
        Prepare("UPDATE jobs SET last_reflexion_sequence = last_reflexion_sequence + 1 "
                "WHERE id = ?1 RETURNING last_reflexion_sequence"));
    next.Text(1, job_id);
    KAGENT_ASSIGN_OR_RETURN(bool found, next.Step());
    if (!found) return storage::JobNotFound(job_id);
    sequence = next.ColumnInt(0);
    KAGENT_RETURN_IF_ERROR(next.Run());
    KAGENT_ASSIGN_OR_RETURN(
        Statement insert,
        Prepare("INSERT INTO reflexions(job_id, sequence, round, data) VALUES (?1, ?2, ?3, ?4)"));
    insert.Text(1, job_id).Int(2, sequence).Int(3, reflexion.round())
        .Blob(4, reflexion.SerializeAsString());
    return insert.Run();
  }));
  return sequence;
}

absl::StatusOr<std::vector<v1::Reflexion>> SqliteStorage::Connection::ListReflexions(
    absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("job_id", job_id));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare("SELECT data FROM reflexions WHERE job_id = ?1 ORDER BY sequence"));
  statement.Text(1, job_id);
  std::vector<v1::Reflexion> reflexions;
  KAGENT_RETURN_IF_ERROR(ParseRows(statement, 0, "reflexion", &reflexions));
  return reflexions;
}

absl::Status SqliteStorage::Connection::AppendSharedReflexion(const SharedMemoryKey& key,
                                                              absl::string_view source_job_id,
                                                              const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateAppendSharedReflexion(key, source_job_id, reflexion));
  return Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(
        Statement insert,
        Prepare("INSERT INTO shared_reflexions(tenant, op_class, gpu_arch, source_job_id, data) "
                "VALUES (?1, ?2, ?3, ?4, ?5)"));
    insert.Text(1, key.tenant).Text(2, key.op_class).Text(3, key.gpu_arch).Text(4, source_job_id)
        .Blob(5, reflexion.SerializeAsString());
    return insert.Run();
  });
}

absl::StatusOr<std::vector<v1::Reflexion>> SqliteStorage::Connection::ListSharedReflexions(
    const SharedMemoryKey& key, int limit) {
  KAGENT_ASSIGN_OR_RETURN(int effective, storage::ValidateListSharedReflexions(key, limit));
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare("SELECT data FROM (SELECT seq, data FROM shared_reflexions WHERE tenant = ?1 "
              "AND op_class = ?2 AND gpu_arch = ?3 ORDER BY seq DESC LIMIT ?4) ORDER BY seq"));
  statement.Text(1, key.tenant).Text(2, key.op_class).Text(3, key.gpu_arch).Int(4, effective);
  std::vector<v1::Reflexion> reflexions;
  KAGENT_RETURN_IF_ERROR(ParseRows(statement, 0, "shared reflexion", &reflexions));
  return reflexions;
}

// --- Artifacts -------------------------------------------------------------------

absl::Status SqliteStorage::Connection::PutArtifact(absl::string_view job_id,
                                                    const v1::Artifact& artifact) {
  KAGENT_RETURN_IF_ERROR(storage::ValidatePutArtifact(job_id, artifact));
  v1::Artifact meta = artifact;
  meta.clear_content();
  return Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    KAGENT_ASSIGN_OR_RETURN(
        Statement upsert,
        Prepare("INSERT INTO artifacts(job_id, name, kind, size_bytes, meta, content) "
                "VALUES (?1, ?2, ?3, ?4, ?5, ?6) ON CONFLICT(job_id, name) DO UPDATE SET "
                "kind = excluded.kind, size_bytes = excluded.size_bytes, "
                "meta = excluded.meta, content = excluded.content"));
    upsert.Text(1, job_id).Text(2, artifact.name()).Text(3, artifact.kind())
        .Int(4, static_cast<int64_t>(artifact.content().size()))
        .Blob(5, meta.SerializeAsString()).Blob(6, artifact.content());
    return upsert.Run();
  });
}

absl::StatusOr<v1::Artifact> SqliteStorage::Connection::GetArtifact(absl::string_view job_id,
                                                                    absl::string_view name) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateGetArtifact(job_id, name));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Statement statement,
      Prepare("SELECT meta, content FROM artifacts WHERE job_id = ?1 AND name = ?2"));
  statement.Text(1, job_id).Text(2, name);
  KAGENT_ASSIGN_OR_RETURN(bool found, statement.Step());
  if (!found) return storage::ArtifactNotFound(job_id, name);
  KAGENT_ASSIGN_OR_RETURN(v1::Artifact artifact,
                          storage::ParseStored<v1::Artifact>(statement.ColumnBytes(0), "artifact"));
  artifact.set_content(statement.ColumnBytes(1));
  return artifact;
}

absl::StatusOr<std::vector<v1::Artifact>> SqliteStorage::Connection::ListArtifacts(
    absl::string_view job_id, absl::string_view prefix, bool include_content) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateListArtifacts(job_id, prefix));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  // Names compare bytewise (BINARY collation): prefix <= name < upper selects exactly the
  // names starting with prefix, through the primary key.
  const std::string upper = PrefixUpperBound(prefix);
  std::string sql = absl::StrCat("SELECT meta, ", include_content ? "content" : "NULL",
                                 " FROM artifacts WHERE job_id = ?1 AND name >= ?2",
                                 upper.empty() ? "" : " AND name < ?3", " ORDER BY name");
  KAGENT_ASSIGN_OR_RETURN(Statement statement, Prepare(sql));
  statement.Text(1, job_id).Text(2, prefix);
  if (!upper.empty()) statement.Text(3, upper);
  std::vector<v1::Artifact> artifacts;
  while (true) {
    KAGENT_ASSIGN_OR_RETURN(bool row, statement.Step());
    if (!row) break;
    KAGENT_ASSIGN_OR_RETURN(v1::Artifact artifact,
                            storage::ParseStored<v1::Artifact>(statement.ColumnBytes(0), "artifact"));
    if (include_content) artifact.set_content(statement.ColumnBytes(1));
    artifacts.push_back(std::move(artifact));
  }
  return artifacts;
}

// --- Checkpoints -----------------------------------------------------------------

absl::Status SqliteStorage::Connection::PutCheckpoint(absl::string_view job_id,
                                                      absl::string_view key,
                                                      absl::string_view value) {
  KAGENT_RETURN_IF_ERROR(storage::ValidatePutCheckpoint(job_id, key, value));
  return Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    KAGENT_ASSIGN_OR_RETURN(
        Statement upsert,
        Prepare("INSERT INTO checkpoints(job_id, key, data) VALUES (?1, ?2, ?3) "
                "ON CONFLICT(job_id, key) DO UPDATE SET data = excluded.data"));
    upsert.Text(1, job_id).Text(2, key).Blob(3, value);
    return upsert.Run();
  });
}

absl::StatusOr<std::string> SqliteStorage::Connection::GetCheckpoint(absl::string_view job_id,
                                                                     absl::string_view key) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateGetCheckpoint(job_id, key));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(Statement statement,
                          Prepare("SELECT data FROM checkpoints WHERE job_id = ?1 AND key = ?2"));
  statement.Text(1, job_id).Text(2, key);
  KAGENT_ASSIGN_OR_RETURN(bool found, statement.Step());
  if (!found) return storage::CheckpointNotFound(job_id, key);
  return statement.ColumnBytes(0);
}

// --- Leader leases: PostgreSQL only (storage.h) --------------------------------------

absl::StatusOr<LeaderLease> SqliteStorage::Connection::AcquireLease(absl::string_view,
                                                                    absl::string_view,
                                                                    absl::string_view,
                                                                    absl::Duration) {
  return storage::LeasesUnsupported("SQLite");
}
absl::StatusOr<LeaderLease> SqliteStorage::Connection::GetLease(absl::string_view) {
  return storage::LeasesUnsupported("SQLite");
}
absl::Status SqliteStorage::Connection::CheckLease(absl::string_view, absl::string_view,
                                                   int64_t) {
  return storage::LeasesUnsupported("SQLite");
}
absl::Status SqliteStorage::Connection::ReleaseLease(absl::string_view, absl::string_view,
                                                     int64_t) {
  return storage::LeasesUnsupported("SQLite");
}

absl::StatusOr<int64_t> SqliteStorage::Connection::SchemaVersion() {
  return PragmaInt("SELECT COALESCE(MAX(version), 0) FROM schema_version");
}

absl::Status SqliteStorage::Connection::RunInTransaction(
    absl::FunctionRef<absl::Status(Storage&)> body) {
  return Atomically([&] { return body(*this); });
}

// ---------------------------------------------------------------------------
// SqliteStorage: the thread-safe front.
// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<SqliteStorage>> SqliteStorage::Open(
    const SqliteStorageOptions& options) {
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Connection> connection, Connection::Open(options));
  return std::unique_ptr<SqliteStorage>(new SqliteStorage(options.path, std::move(connection)));
}

SqliteStorage::SqliteStorage(std::string path, std::unique_ptr<Connection> connection)
    : path_(std::move(path)), connection_(std::move(connection)) {}

SqliteStorage::~SqliteStorage() = default;

absl::Status SqliteStorage::WithConnection(absl::FunctionRef<absl::Status(Storage&)> call) {
  absl::MutexLock lock(&mu_);
  return call(*connection_);
}

}  // namespace kagent
