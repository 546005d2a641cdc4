#include "common/storage/postgres_storage.h"

#include <libpq-fe.h>

#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/migration.h"
#include "common/storage/postgres_driver.h"
#include "common/storage/sql_storage.h"

namespace kagent {
namespace {

// pg_advisory_xact_lock key that serializes migrations: "kagn" as an integer.
constexpr int64_t kMigrationLockKey = 0x6B61676E;

// The schema, one migration per step. Never edit a released migration: append one.
// docs/storage.md documents every table. Names and ids are TEXT COLLATE "C" (bytewise
// order); integers are BIGINT so every integer column reads back as int8.
constexpr const char* kMigration1 = R"sql(
CREATE TABLE jobs (
  seq             BIGSERIAL PRIMARY KEY,              -- creation order, page position
  id              TEXT COLLATE "C" NOT NULL UNIQUE,
  tenant          TEXT COLLATE "C" NOT NULL,
  state           BIGINT NOT NULL,                    -- kagent.v1.JobState
  idempotency_key TEXT COLLATE "C",                   -- NULL when none
  revision        BIGINT NOT NULL,                    -- optimistic concurrency
  data            BYTEA  NOT NULL                     -- kagent.v1.Job
);
CREATE UNIQUE INDEX jobs_by_idempotency_key ON jobs(tenant, idempotency_key)
  WHERE idempotency_key IS NOT NULL;
CREATE INDEX jobs_by_tenant ON jobs(tenant, seq);
CREATE INDEX jobs_by_tenant_state ON jobs(tenant, state, seq);
CREATE INDEX jobs_by_state ON jobs(state, seq);

-- The per-job counters AppendEvent and AppendReflexion increment (UPDATE ... RETURNING:
-- the row lock serializes appenders). Apart from jobs so that appenders and UpdateJob
-- do not contend for one row.
CREATE TABLE job_counters (
  job_id                  TEXT COLLATE "C" PRIMARY KEY REFERENCES jobs(id) ON DELETE CASCADE,
  last_event_sequence     BIGINT NOT NULL DEFAULT 0,
  last_reflexion_sequence BIGINT NOT NULL DEFAULT 0
);

CREATE TABLE job_events (
  job_id   TEXT COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  sequence BIGINT NOT NULL,
  type     BIGINT NOT NULL,                           -- kagent.v1.JobEventType
  data     BYTEA  NOT NULL,                           -- kagent.v1.JobEvent
  PRIMARY KEY (job_id, sequence)
);

CREATE TABLE candidates (
  seq     BIGSERIAL PRIMARY KEY,                      -- first insertion order
  id      TEXT COLLATE "C" NOT NULL UNIQUE,
  job_id  TEXT COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  round   BIGINT NOT NULL,
  verdict BIGINT NOT NULL,                            -- kagent.v1.Verdict
  data    BYTEA  NOT NULL                             -- kagent.v1.Candidate
);
CREATE INDEX candidates_by_job ON candidates(job_id, round, seq);

CREATE TABLE task_results (
  task_id TEXT COLLATE "C" NOT NULL PRIMARY KEY,
  job_id  TEXT COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  data    BYTEA NOT NULL
);
CREATE INDEX task_results_by_job ON task_results(job_id);

CREATE TABLE reflexions (
  job_id   TEXT COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  sequence BIGINT NOT NULL,
  round    BIGINT NOT NULL,
  data     BYTEA  NOT NULL,                           -- kagent.v1.Reflexion
  PRIMARY KEY (job_id, sequence)
);

CREATE TABLE shared_reflexions (
  seq           BIGSERIAL PRIMARY KEY,
  tenant        TEXT COLLATE "C" NOT NULL,
  op_class      TEXT COLLATE "C" NOT NULL,
  gpu_arch      TEXT COLLATE "C" NOT NULL,
  source_job_id TEXT COLLATE "C" NOT NULL,            -- no foreign key: outlives the job
  data          BYTEA NOT NULL                        -- kagent.v1.Reflexion
);
CREATE INDEX shared_reflexions_by_key ON shared_reflexions(tenant, op_class, gpu_arch, seq);

CREATE TABLE artifacts (
  job_id     TEXT COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  name       TEXT COLLATE "C" NOT NULL,
  kind       TEXT COLLATE "C" NOT NULL,
  size_bytes BIGINT NOT NULL,
  meta       BYTEA  NOT NULL,                         -- kagent.v1.Artifact without content
  content    BYTEA  NOT NULL,
  PRIMARY KEY (job_id, name)
);

CREATE TABLE checkpoints (
  job_id TEXT COLLATE "C" NOT NULL REFERENCES jobs(id) ON DELETE CASCADE,
  key    TEXT COLLATE "C" NOT NULL,
  data   BYTEA NOT NULL,
  PRIMARY KEY (job_id, key)
);
)sql";

// Leader leases (storage.h): one row per lease name. expires_at is set and compared with
// the server's clock_timestamp(), so replicas' clocks never matter.
constexpr const char* kMigration2 = R"sql(
CREATE TABLE leases (
  name       TEXT COLLATE "C" PRIMARY KEY,
  holder     TEXT COLLATE "C" NOT NULL,
  address    TEXT COLLATE "C" NOT NULL,
  term       BIGINT NOT NULL,
  expires_at TIMESTAMPTZ NOT NULL
);
)sql";

// The columns every lease query returns, in SqlDialect's order.
#define KAGENT_LEASE_COLUMNS \
  "name, holder, address, term, " \
  "(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000)::bigint"

// PostgreSQL's dialect (sql_storage.h). The per-job counters live in job_counters, apart
// from jobs, so that appenders and UpdateJob do not contend for one row; UpdateJob locks
// the job row before comparing revisions.
constexpr storage::SqlDialect kPostgresDialect = {
    .name = "PostgreSQL",
    .next_event_sequence =
        "UPDATE job_counters SET last_event_sequence = last_event_sequence + 1 "
        "WHERE job_id = $1 RETURNING last_event_sequence",
    .next_reflexion_sequence =
        "UPDATE job_counters SET last_reflexion_sequence = last_reflexion_sequence + 1 "
        "WHERE job_id = $1 RETURNING last_reflexion_sequence",
    .create_job_counters = "INSERT INTO job_counters(job_id) VALUES ($1)",
    .lock_job_row = " FOR NO KEY UPDATE",
    // A range bound that is not valid UTF-8 cannot be sent as TEXT.
    .prefix_by_starts_with = true,
    // One statement: take it when free, renew it when ours, else leave it. The row lock
    // this takes waits for a holder's open fenced transaction (check_lease's FOR SHARE).
    .acquire_lease =
        "INSERT INTO leases AS l (name, holder, address, term, expires_at) "
        "VALUES ($1, $2, $3, 1, clock_timestamp() + $4::float8 * interval '1 millisecond') "
        "ON CONFLICT (name) DO UPDATE SET "
        "term = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp() "
        "THEN l.term ELSE l.term + 1 END, "
        "holder = excluded.holder, address = excluded.address, "
        "expires_at = excluded.expires_at "
        "WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp() "
        "RETURNING " KAGENT_LEASE_COLUMNS,
    .get_lease = "SELECT " KAGENT_LEASE_COLUMNS " FROM leases WHERE name = $1",
    .check_lease = "SELECT " KAGENT_LEASE_COLUMNS " FROM leases WHERE name = $1 FOR SHARE",
    .release_lease =
        "UPDATE leases SET expires_at = clock_timestamp() - interval '1 millisecond' "
        "WHERE name = $1 AND holder = $2 AND term = $3 AND expires_at > clock_timestamp()",
};

#undef KAGENT_LEASE_COLUMNS

// Applies the migrations the database lacks, in one transaction under an advisory lock.
absl::Status Migrate(storage::SqlConnection& db, const std::string& description,
                     const std::vector<PostgresMigration>& migrations) {
  storage::MigrationOutcome outcome;
  KAGENT_RETURN_IF_ERROR(db.Atomically([&]() -> absl::Status {
    // Two processes opening at once: the second waits here, then finds nothing to do.
    KAGENT_RETURN_IF_ERROR(db.Query("SELECT pg_advisory_xact_lock($1)",
                                    storage::SqlParams().Int(kMigrationLockKey),
                                    "taking the migration lock")
                               .status());
    KAGENT_ASSIGN_OR_RETURN(
        storage::SqlRows tables,
        db.Query("SELECT COUNT(*), COUNT(*) FILTER (WHERE table_name = 'schema_version') "
                 "FROM information_schema.tables WHERE table_schema = current_schema() "
                 "AND table_type = 'BASE TABLE'",
                 storage::SqlParams(), "listing tables"));
    if (tables.Int(0, 0) > 0 && tables.Int(0, 1) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "postgres ", description, ": the schema has ", tables.Int(0, 0),
          " tables but no schema_version table; it is not a kagent database: point the "
          "storage URL at another database (or schema)"));
    }
    if (tables.Int(0, 1) == 0) {
      KAGENT_RETURN_IF_ERROR(db.Exec(
          "CREATE TABLE schema_version ("
          "  version BIGINT PRIMARY KEY, description TEXT NOT NULL,"
          "  applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
          "creating schema_version"));
    }
    KAGENT_ASSIGN_OR_RETURN(
        outcome, storage::ApplyMigrations(
                     db, absl::StrCat("postgres ", description), migrations,
                     {.insert_sql = "INSERT INTO schema_version(version, description) "
                                    "VALUES ($1, $2)",
                      .with_time = false,
                      .failure_suffix = " failed"}));
    return absl::OkStatus();
  }, /*snapshot=*/false));
  const int64_t latest = storage::LatestMigrationVersion(migrations);
  KLOG(INFO).With("database", description).With("schema_version", static_cast<double>(latest))
      << "storage opened: schema version " << latest << " (" << outcome.applied
      << " migrations applied, was " << outcome.from << ")";
  return absl::OkStatus();
}

}  // namespace

const std::vector<PostgresMigration>& PostgresSchemaMigrations() {
  static const auto* const kMigrations = new std::vector<PostgresMigration>{
      {1, "jobs, counters, events, candidates, task results, reflexions, artifacts, checkpoints",
       kMigration1},
      {2, "leader leases", kMigration2},
  };
  return *kMigrations;
}

std::string DescribePostgresUrl(const std::string& url) {
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return "(unparseable connection string)";
  std::string host, hostaddr, port, dbname, user;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (o->val == nullptr) continue;
    const std::string key = o->keyword;
    if (key == "host") host = o->val;
    if (key == "hostaddr") hostaddr = o->val;
    if (key == "port") port = o->val;
    if (key == "dbname") dbname = o->val;
    if (key == "user") user = o->val;
  }
  PQconninfoFree(options);
  if (host.empty()) host = hostaddr;
  if (host.empty()) host = "localhost";
  if (port.empty()) port = "5432";
  if (dbname.empty()) dbname = user.empty() ? "(default)" : user;
  return absl::StrCat(host, ":", port, "/", dbname);
}

// ---------------------------------------------------------------------------
// Session: one pooled connection and the Storage methods over it (SqlStorage, also the
// Storage& given to transaction bodies). Not thread-safe: PostgresStorage hands each
// session to one thread at a time.
// ---------------------------------------------------------------------------

class PostgresStorage::Session {
 public:
  // Connects. UNAVAILABLE with libpq's reason when that fails.
  static absl::StatusOr<std::unique_ptr<Session>> Connect(const PostgresStorageOptions& options,
                                                          const std::string& description) {
    KAGENT_ASSIGN_OR_RETURN(
        std::unique_ptr<storage::PostgresConnection> connection,
        storage::PostgresConnection::Connect(options.url, options.connect_timeout_s,
                                             options.lock_timeout_ms, description));
    return std::unique_ptr<Session>(new Session(std::move(connection)));
  }

  storage::PostgresConnection& connection() { return connection_; }
  storage::SqlStorage& storage() { return storage_; }

 private:
  explicit Session(std::unique_ptr<storage::PostgresConnection> connection)
      : connection_(*connection), storage_(std::move(connection), kPostgresDialect) {}

  storage::PostgresConnection& connection_;  // owned by storage_
  storage::SqlStorage storage_;
};

// ---------------------------------------------------------------------------
// PostgresStorage: the thread-safe front over a pool of sessions.
// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<PostgresStorage>> PostgresStorage::Open(
    const PostgresStorageOptions& options) {
  if (options.url.empty()) {
    return absl::InvalidArgumentError(
        "storage URL is empty; give a PostgreSQL connection URI "
        "(postgresql://user@host:5432/dbname)");
  }
  {
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(options.url.c_str(), &error);
    std::string reason = error != nullptr ? storage::CleanPostgresMessage(error) : "";
    if (error != nullptr) PQfreemem(error);
    if (parsed == nullptr) {
      // libpq may echo part of the string; keep anything after "://" out of the message.
      return absl::InvalidArgumentError(absl::StrCat(
          "storage URL is not a valid PostgreSQL connection URI or key=value string (",
          absl::StrContains(options.url, "@") ? "details withheld: the URL may hold a password"
                                                 : reason,
          ")"));
    }
    PQconninfoFree(parsed);
  }
  if (options.pool_size < 1 || options.pool_size > 64) {
    return absl::InvalidArgumentError(
        absl::StrCat("pool_size is ", options.pool_size, "; it must be 1..64"));
  }
  if (options.connect_timeout_s < 1) {
    return absl::InvalidArgumentError(
        absl::StrCat("connect_timeout_s is ", options.connect_timeout_s, "; it must be >= 1"));
  }
  if (options.lock_timeout_ms < 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("lock_timeout_ms is ", options.lock_timeout_ms, "; it must be >= 0"));
  }
  std::string description = DescribePostgresUrl(options.url);
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session,
                          Session::Connect(options, description));
  const std::vector<PostgresMigration>& migrations =
      options.migrations != nullptr ? *options.migrations : PostgresSchemaMigrations();
  KAGENT_RETURN_IF_ERROR(Migrate(session->connection(), description, migrations));
  PostgresStorageOptions kept = options;
  kept.migrations = nullptr;
  return std::unique_ptr<PostgresStorage>(
      new PostgresStorage(std::move(kept), std::move(description), std::move(session)));
}

PostgresStorage::PostgresStorage(PostgresStorageOptions options, std::string description,
                                 std::unique_ptr<Session> first)
    : options_(std::move(options)), description_(std::move(description)) {
  absl::MutexLock lock(&pool_mu_);
  idle_.push_back(std::move(first));
  open_ = 1;
}

PostgresStorage::~PostgresStorage() = default;

absl::StatusOr<std::unique_ptr<PostgresStorage::Session>> PostgresStorage::Acquire() {
  std::vector<std::unique_ptr<Session>> dead;  // closed outside the lock
  {
    absl::MutexLock lock(&pool_mu_);
    while (true) {
      pool_mu_.Await(absl::Condition(
          +[](PostgresStorage* self) ABSL_EXCLUSIVE_LOCKS_REQUIRED(self->pool_mu_) {
            return !self->idle_.empty() || self->open_ < self->options_.pool_size;
          },
          this));
      if (idle_.empty()) break;  // room for a new connection
      std::unique_ptr<Session> session = std::move(idle_.back());
      idle_.pop_back();
      if (session->connection().LooksAlive()) return session;
      // The server closed it while idle (restart, idle timeout): open a fresh one.
      dead.push_back(std::move(session));
      --open_;
    }
    ++open_;
  }
  dead.clear();
  absl::StatusOr<std::unique_ptr<Session>> session = Session::Connect(options_, description_);
  if (!session.ok()) {
    absl::MutexLock lock(&pool_mu_);
    --open_;
  }
  return session;
}

void PostgresStorage::Release(std::unique_ptr<Session> session) {
  if (!session->connection().Reusable()) {
    session.reset();
    absl::MutexLock lock(&pool_mu_);
    --open_;
    return;
  }
  absl::MutexLock lock(&pool_mu_);
  idle_.push_back(std::move(session));
}

absl::Status PostgresStorage::WithConnection(
    absl::FunctionRef<absl::Status(Storage&)> call) {
  KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<Session> session, Acquire());
  absl::Status status = call(session->storage());
  Release(std::move(session));
  return status;
}

}  // namespace kagent
