#include "common/storage/postgres_storage.h"

#include <libpq-fe.h>
#include <poll.h>

#include <cstring>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_replace.h"
#include "absl/strings/strip.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/migration.h"
#include "common/storage/records.h"
#include "common/storage/validation.h"

namespace kagent {
namespace {

// pg_advisory_xact_lock key that serializes migrations: "kagn" as an integer.
constexpr int64_t kMigrationLockKey = 0x6B61676E;

// Type OIDs of the parameters we send (binary format).
constexpr Oid kByteaOid = 17;
constexpr Oid kInt8Oid = 20;
constexpr Oid kInt2Oid = 21;
constexpr Oid kInt4Oid = 23;
constexpr Oid kTextOid = 25;
constexpr Oid kBoolOid = 16;

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

// The columns every lease query returns, in ReadLease's order.
#define KAGENT_LEASE_COLUMNS \
  "name, holder, address, term, " \
  "(EXTRACT(EPOCH FROM (expires_at - clock_timestamp())) * 1000)::bigint"

// libpq's messages end in a newline; some span lines.
std::string CleanMessage(absl::string_view message) {
  std::string out(absl::StripAsciiWhitespace(message));
  absl::StrReplaceAll({{"\n", " "}, {"\t", " "}}, &out);
  return out;
}

// The password in a connection string, if libpq can parse one.
std::string PasswordOf(const std::string& url) {
  std::string password;
  char* error = nullptr;
  PQconninfoOption* options = PQconninfoParse(url.c_str(), &error);
  if (error != nullptr) PQfreemem(error);
  if (options == nullptr) return password;
  for (PQconninfoOption* o = options; o->keyword != nullptr; ++o) {
    if (std::strcmp(o->keyword, "password") == 0 && o->val != nullptr) password = o->val;
  }
  PQconninfoFree(options);
  return password;
}

// Removes `secret` from `text` (a message that might echo it).
std::string Scrub(std::string text, const std::string& secret) {
  if (secret.size() >= 1) absl::StrReplaceAll({{secret, "***"}}, &text);
  return text;
}

// One parameter list for PQexecParams. Every value is sent in binary format: int8 as
// 8 big-endian bytes, text and bytea as their raw bytes.
class Params {
 public:
  Params& Int(int64_t value) {
    std::string bytes(8, '\0');
    uint64_t v = static_cast<uint64_t>(value);
    for (int i = 7; i >= 0; --i) {
      bytes[i] = static_cast<char>(v & 0xff);
      v >>= 8;
    }
    return Add(kInt8Oid, std::move(bytes), false);
  }
  Params& Text(absl::string_view value) { return Add(kTextOid, std::string(value), false); }
  Params& Bytes(absl::string_view value) { return Add(kByteaOid, std::string(value), false); }
  Params& NullText() { return Add(kTextOid, std::string(), true); }

  int size() const { return static_cast<int>(types_.size()); }
  const Oid* types() const { return types_.data(); }
  // Valid until the next Add.
  void Arrays(std::vector<const char*>* values, std::vector<int>* lengths,
              std::vector<int>* formats) const {
    for (size_t i = 0; i < values_.size(); ++i) {
      values->push_back(nulls_[i] ? nullptr : values_[i].data());
      lengths->push_back(static_cast<int>(values_[i].size()));
      formats->push_back(1);
    }
  }

 private:
  Params& Add(Oid type, std::string value, bool null) {
    types_.push_back(type);
    values_.push_back(std::move(value));
    nulls_.push_back(null);
    return *this;
  }
  std::vector<Oid> types_;
  std::vector<std::string> values_;
  std::vector<bool> nulls_;
};

// An owned PGresult in binary format.
class Result {
 public:
  explicit Result(PGresult* result) : result_(result) {}
  ~Result() { PQclear(result_); }
  Result(Result&& other) noexcept : result_(std::exchange(other.result_, nullptr)) {}
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;

  const PGresult* get() const { return result_; }
  // True when the command succeeded (with or without rows).
  bool ok() const {
    ExecStatusType status = PQresultStatus(result_);
    return status == PGRES_COMMAND_OK || status == PGRES_TUPLES_OK;
  }
  int rows() const { return PQntuples(result_); }
  // Rows changed by an INSERT/UPDATE/DELETE.
  int64_t affected() const {
    const char* count = PQcmdTuples(result_);
    return count != nullptr && count[0] != '\0' ? std::strtoll(count, nullptr, 10) : 0;
  }
  bool IsNull(int row, int column) const { return PQgetisnull(result_, row, column) != 0; }
  int64_t Int(int row, int column) const {
    const auto* bytes = reinterpret_cast<const unsigned char*>(PQgetvalue(result_, row, column));
    const int length = PQgetlength(result_, row, column);
    const Oid type = PQftype(result_, column);
    KAGENT_CHECK(type == kInt8Oid || type == kInt4Oid || type == kInt2Oid || type == kBoolOid)
        << "column " << column << " is not an integer (type oid " << type << ")";
    uint64_t v = 0;
    for (int i = 0; i < length; ++i) v = (v << 8) | bytes[i];
    if (length == 4) return static_cast<int32_t>(static_cast<uint32_t>(v));
    if (length == 2) return static_cast<int16_t>(static_cast<uint16_t>(v));
    if (length == 1) return static_cast<int64_t>(v);
    return static_cast<int64_t>(v);
  }
  std::string Bytes(int row, int column) const {
    return std::string(PQgetvalue(result_, row, column),
                       static_cast<size_t>(PQgetlength(result_, row, column)));
  }

 private:
  PGresult* result_;
};

void IgnoreNotice(void*, const char*) {}

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
// Session: the Storage implementation over one connection. Not thread-safe:
// PostgresStorage hands each session to one thread at a time. It is also the Storage&
// given to transaction bodies.
// ---------------------------------------------------------------------------

class PostgresStorage::Session final : public Storage {
 public:
  // Connects. UNAVAILABLE with libpq's reason when that fails.
  static absl::StatusOr<std::unique_ptr<Session>> Connect(const PostgresStorageOptions& options,
                                                          const std::string& description);

  ~Session() override { PQfinish(conn_); }

  // False when the connection is known to be broken (e.g. the server closed it while
  // the session was idle). Cheap: never blocks.
  bool LooksAlive();
  // Whether the session can go back to the pool: connected and outside a transaction.
  bool Reusable() const {
    return PQstatus(conn_) == CONNECTION_OK && PQtransactionStatus(conn_) == PQTRANS_IDLE &&
           depth_ == 0;
  }

  absl::Status Migrate(const std::vector<PostgresMigration>& migrations);

#include "common/storage/storage_overrides.inc"

 private:
  Session(PGconn* conn, std::string description)
      : conn_(conn), description_(std::move(description)) {}

  // The status for a failed command: the SQLSTATE decides the code.
  absl::Status Error(const PGresult* result, absl::string_view what) const;
  // One statement with parameters; results in binary format.
  absl::StatusOr<Result> Exec(const char* sql, const Params& params, absl::string_view what);
  absl::StatusOr<Result> Exec(const char* sql, const Params& params) {
    return Exec(sql, params, "");
  }
  // One or more statements without parameters (transaction control, migrations).
  absl::Status ExecScript(const char* sql, absl::string_view what);
  // Runs `fn` atomically: a top-level transaction (READ COMMITTED, or REPEATABLE READ
  // when `snapshot`), or a savepoint inside the open one. On failure everything `fn`
  // wrote is undone.
  absl::Status Atomically(absl::FunctionRef<absl::Status()> fn, bool snapshot = false);

  absl::Status RequireJob(absl::string_view job_id);
  // Row `row` of a result of KAGENT_LEASE_COLUMNS.
  static LeaderLease ReadLease(const Result& result, int row);
  absl::StatusOr<StoredJob> ReadJob(const Result& result, int row, int revision_column,
                                    int data_column);
  // Fills `out` with the parsed `column` of every row.
  template <typename Message>
  absl::Status ParseRows(const Result& result, int column, absl::string_view what,
                         std::vector<Message>* out);

  PGconn* const conn_;
  const std::string description_;
  int depth_ = 0;  // open transaction levels (0: none)
};

absl::StatusOr<std::unique_ptr<PostgresStorage::Session>> PostgresStorage::Session::Connect(
    const PostgresStorageOptions& options, const std::string& description) {
  const std::string password = PasswordOf(options.url);
  bool has_timeout = false;
  {
    char* error = nullptr;
    PQconninfoOption* parsed = PQconninfoParse(options.url.c_str(), &error);
    if (error != nullptr) PQfreemem(error);
    if (parsed != nullptr) {
      for (PQconninfoOption* o = parsed; o->keyword != nullptr; ++o) {
        if (std::strcmp(o->keyword, "connect_timeout") == 0 && o->val != nullptr) {
          has_timeout = true;
        }
      }
      PQconninfoFree(parsed);
    }
  }
  const std::string timeout = absl::StrCat(options.connect_timeout_s);
  std::vector<const char*> keys = {"dbname", "client_encoding", "fallback_application_name"};
  std::vector<const char*> values = {options.url.c_str(), "UTF8", "kagent"};
  if (!has_timeout) {
    keys.push_back("connect_timeout");
    values.push_back(timeout.c_str());
  }
  keys.push_back(nullptr);
  values.push_back(nullptr);
  PGconn* conn = PQconnectdbParams(keys.data(), values.data(), /*expand_dbname=*/1);
  if (conn == nullptr) {
    return absl::ResourceExhaustedError("libpq could not allocate a connection");
  }
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string reason = Scrub(CleanMessage(PQerrorMessage(conn)), password);
    PQfinish(conn);
    return StorageFailure(absl::StatusCode::kUnavailable,
                          absl::StrCat("postgres ", description, ": cannot connect: ", reason),
                          "postgres: cannot connect to the database server");
  }
  PQsetNoticeProcessor(conn, IgnoreNotice, nullptr);
  std::unique_ptr<Session> session(new Session(conn, description));
  if (PQserverVersion(conn) < 110000) {
    return absl::FailedPreconditionError(absl::StrCat(
        "postgres ", description, ": server version ", PQserverVersion(conn),
        " is too old; kagent needs PostgreSQL 11 or newer"));
  }
  KAGENT_RETURN_IF_ERROR(session->ExecScript(
      absl::StrCat("SET lock_timeout = ", options.lock_timeout_ms).c_str(),
      "setting lock_timeout"));
  return session;
}

bool PostgresStorage::Session::LooksAlive() {
  if (PQstatus(conn_) != CONNECTION_OK || PQtransactionStatus(conn_) != PQTRANS_IDLE) {
    return false;
  }
  pollfd fd{PQsocket(conn_), POLLIN, 0};
  if (fd.fd < 0) return false;
  // We never LISTEN, so an idle connection receives nothing unless the server is
  // going away (a termination message, then EOF: a restart, an idle timeout, an
  // administrator's pg_terminate_backend). Treat anything readable as dead.
  return poll(&fd, 1, 0) == 0;
}

absl::Status PostgresStorage::Session::Error(const PGresult* result,
                                             absl::string_view what) const {
  const char* state = result != nullptr ? PQresultErrorField(result, PG_DIAG_SQLSTATE) : nullptr;
  const std::string sqlstate = state != nullptr ? state : "";
  const char* primary =
      result != nullptr ? PQresultErrorField(result, PG_DIAG_MESSAGE_PRIMARY) : nullptr;
  std::string detail = CleanMessage(primary != nullptr ? primary : PQerrorMessage(conn_));
  const std::string code_note = sqlstate.empty() ? "" : absl::StrCat(" (SQLSTATE ", sqlstate, ")");
  std::string message = absl::StrCat("postgres ", description_, ": ", what,
                                     what.empty() ? "" : ": ", detail, code_note);
  // The log gets `message` (server, statement, the server's text). A client gets the
  // server's text only where it names no file or host (disk, I/O, corruption and
  // connection errors do): there a plain description.
  auto failure = [&](absl::StatusCode code, absl::string_view suffix,
                     absl::string_view client_text = "") {
    return StorageFailure(
        code, absl::StrCat(message, suffix),
        absl::StrCat("postgres: ", client_text.empty() ? detail : std::string(client_text),
                     code_note, client_text.empty() ? suffix : ""));
  };
  if (PQstatus(conn_) != CONNECTION_OK || sqlstate.empty() || absl::StartsWith(sqlstate, "08") ||
      sqlstate == "57P01" || sqlstate == "57P02" || sqlstate == "57P03" ||
      sqlstate == "53300") {
    return failure(absl::StatusCode::kUnavailable, "; the connection to the server failed",
                   "the connection to the database server failed");
  }
  if (sqlstate == "40001" || sqlstate == "40P01") {
    return failure(absl::StatusCode::kAborted,
                   "; a concurrent transaction changed the same rows: re-read and retry");
  }
  if (sqlstate == "55P03" || sqlstate == "57014") {
    return failure(absl::StatusCode::kUnavailable,
                   " (another transaction holds the lock past lock_timeout)");
  }
  if (sqlstate == "53100") {
    return failure(absl::StatusCode::kResourceExhausted, " (disk full?)",
                   "the database server's disk is full");
  }
  if (absl::StartsWith(sqlstate, "53") || absl::StartsWith(sqlstate, "54")) {
    return failure(absl::StatusCode::kResourceExhausted, "",
                   "the database server is out of resources");
  }
  if (absl::StartsWith(sqlstate, "58")) {  // I/O error
    return failure(absl::StatusCode::kUnavailable, "", "I/O error on the database server");
  }
  if (sqlstate == "XX001" || sqlstate == "XX002") {
    return failure(absl::StatusCode::kDataLoss,
                   ". The database is corrupt; restore it from a backup (see docs/storage.md)",
                   "the database is corrupt");
  }
  if (absl::StartsWith(sqlstate, "23")) {
    return failure(absl::StatusCode::kFailedPrecondition, " (constraint violated)");
  }
  if (absl::StartsWith(sqlstate, "42501") || absl::StartsWith(sqlstate, "25006") ||
      absl::StartsWith(sqlstate, "28")) {
    return failure(absl::StatusCode::kFailedPrecondition, "");
  }
  return failure(absl::StatusCode::kInternal, "", absl::StartsWith(sqlstate, "XX")
                                                      ? "internal error of the database server"
                                                      : "");
}

absl::StatusOr<Result> PostgresStorage::Session::Exec(const char* sql, const Params& params,
                                                      absl::string_view what) {
  std::vector<const char*> values;
  std::vector<int> lengths;
  std::vector<int> formats;
  params.Arrays(&values, &lengths, &formats);
  Result result(PQexecParams(conn_, sql, params.size(), params.types(), values.data(),
                             lengths.data(), formats.data(), /*resultFormat=*/1));
  if (!result.ok()) return Error(result.get(), what.empty() ? absl::string_view(sql).substr(0, 60) : what);
  return result;
}

absl::Status PostgresStorage::Session::ExecScript(const char* sql, absl::string_view what) {
  Result result(PQexec(conn_, sql));
  if (!result.ok()) return Error(result.get(), what);
  return absl::OkStatus();
}

absl::Status PostgresStorage::Session::Atomically(absl::FunctionRef<absl::Status()> fn,
                                                  bool snapshot) {
  const int level = depth_;
  const std::string savepoint = absl::StrCat("kagent_", level);
  if (level == 0) {
    KAGENT_RETURN_IF_ERROR(ExecScript(
        snapshot ? "BEGIN ISOLATION LEVEL REPEATABLE READ" : "BEGIN", "beginning a transaction"));
  } else {
    KAGENT_RETURN_IF_ERROR(
        ExecScript(absl::StrCat("SAVEPOINT ", savepoint).c_str(), "creating a savepoint"));
  }
  ++depth_;
  absl::Status status = fn();
  --depth_;
  if (status.ok() && PQtransactionStatus(conn_) == PQTRANS_INERROR) {
    // A statement failed and its error was dropped: COMMIT would silently roll back.
    status = StorageFailure(
        absl::StatusCode::kAborted,
        absl::StrCat("postgres ", description_,
                     ": a statement in the transaction failed and the transaction was "
                     "rolled back"),
        "postgres: a statement in the transaction failed and the transaction was rolled back");
  }
  if (status.ok()) {
    status = level == 0 ? ExecScript("COMMIT", "committing")
                        : ExecScript(absl::StrCat("RELEASE SAVEPOINT ", savepoint).c_str(),
                                     "releasing a savepoint");
    if (status.ok()) return status;
  }
  // Undo. A failed rollback (connection lost) leaves nothing better to report than the
  // first error; the broken session is dropped from the pool.
  if (level == 0) {
    if (PQtransactionStatus(conn_) != PQTRANS_IDLE) {
      ExecScript("ROLLBACK", "rolling back").IgnoreError();
    }
  } else {
    ExecScript(absl::StrCat("ROLLBACK TO SAVEPOINT ", savepoint, "; RELEASE SAVEPOINT ",
                            savepoint).c_str(),
               "rolling back to a savepoint")
        .IgnoreError();
  }
  return status;
}

absl::Status PostgresStorage::Session::Migrate(const std::vector<PostgresMigration>& migrations) {
  const int64_t latest = storage::LatestMigrationVersion(migrations);
  int64_t from = 0;
  int applied = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    // Two processes opening at once: the second waits here, then finds nothing to do.
    KAGENT_RETURN_IF_ERROR(
        Exec("SELECT pg_advisory_xact_lock($1)", Params().Int(kMigrationLockKey),
             "taking the migration lock")
            .status());
    KAGENT_ASSIGN_OR_RETURN(
        Result tables,
        Exec("SELECT COUNT(*), COUNT(*) FILTER (WHERE table_name = 'schema_version') "
             "FROM information_schema.tables WHERE table_schema = current_schema() "
             "AND table_type = 'BASE TABLE'",
             Params(), "listing tables"));
    if (tables.Int(0, 0) > 0 && tables.Int(0, 1) == 0) {
      return absl::FailedPreconditionError(absl::StrCat(
          "postgres ", description_, ": the schema has ", tables.Int(0, 0),
          " tables but no schema_version table; it is not a kagent database: point the "
          "storage URL at another database (or schema)"));
    }
    if (tables.Int(0, 1) == 0) {
      KAGENT_RETURN_IF_ERROR(ExecScript(
          "CREATE TABLE schema_version ("
          "  version BIGINT PRIMARY KEY, description TEXT NOT NULL,"
          "  applied_at TIMESTAMPTZ NOT NULL DEFAULT now())",
          "creating schema_version"));
    }
    KAGENT_ASSIGN_OR_RETURN(from, SchemaVersion());
    if (from > latest) {
      return storage::NewerSchemaError(absl::StrCat("postgres ", description_), from, latest);
    }
    for (const PostgresMigration& migration : migrations) {
      if (migration.version <= from) continue;
      KAGENT_RETURN_IF_ERROR(ExecScript(
          migration.sql, absl::StrCat("schema migration ", migration.version, " (",
                                      migration.description, ") failed")));
      KAGENT_RETURN_IF_ERROR(
          Exec("INSERT INTO schema_version(version, description) VALUES ($1, $2)",
               Params().Int(migration.version).Text(migration.description))
              .status());
      ++applied;
    }
    return absl::OkStatus();
  }));
  KLOG(INFO).With("database", description_).With("schema_version", static_cast<double>(latest))
      << "storage opened: schema version " << latest << " (" << applied
      << " migrations applied, was " << from << ")";
  return absl::OkStatus();
}

absl::Status PostgresStorage::Session::RequireJob(absl::string_view job_id) {
  KAGENT_ASSIGN_OR_RETURN(Result result,
                          Exec("SELECT 1 FROM jobs WHERE id = $1", Params().Text(job_id)));
  if (result.rows() == 0) return storage::JobNotFound(job_id);
  return absl::OkStatus();
}

absl::StatusOr<StoredJob> PostgresStorage::Session::ReadJob(const Result& result, int row,
                                                            int revision_column,
                                                            int data_column) {
  return storage::ParseStoredJob(result.Bytes(row, data_column),
                                 result.Int(row, revision_column));
}

template <typename Message>
absl::Status PostgresStorage::Session::ParseRows(const Result& result, int column,
                                                 absl::string_view what,
                                                 std::vector<Message>* out) {
  out->reserve(result.rows());
  for (int row = 0; row < result.rows(); ++row) {
    KAGENT_ASSIGN_OR_RETURN(Message message,
                            storage::ParseStored<Message>(result.Bytes(row, column), what));
    out->push_back(std::move(message));
  }
  return absl::OkStatus();
}

absl::StatusOr<int64_t> PostgresStorage::Session::SchemaVersion() {
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("SELECT COALESCE(MAX(version), 0) FROM schema_version", Params(), "reading the schema version"));
  return result.Int(0, 0);
}

// A top-level REPEATABLE READ transaction, or a savepoint inside the open one.
absl::Status PostgresStorage::Session::RunInTransaction(
    absl::FunctionRef<absl::Status(Storage&)> body) {
  return Atomically([&] { return body(*this); }, /*snapshot=*/true);
}

// --- Jobs ------------------------------------------------------------------------

absl::StatusOr<CreateJobResult> PostgresStorage::Session::CreateJob(
    const v1::Job& job, absl::string_view idempotency_key) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateCreateJob(job, idempotency_key));
  CreateJobResult result;
  auto find_by_key = [&]() -> absl::StatusOr<bool> {
    if (idempotency_key.empty()) return false;
    KAGENT_ASSIGN_OR_RETURN(
        Result existing,
        Exec("SELECT revision, data FROM jobs WHERE tenant = $1 AND idempotency_key = $2",
             Params().Text(job.tenant()).Text(idempotency_key)));
    if (existing.rows() == 0) return false;
    KAGENT_ASSIGN_OR_RETURN(result.stored, ReadJob(existing, 0, 0, 1));
    result.created = false;
    return true;
  };
  const absl::Status taken = storage::JobIdTaken(job.id());
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(bool found, find_by_key());
    if (found) return absl::OkStatus();
    KAGENT_ASSIGN_OR_RETURN(Result exists,
                            Exec("SELECT 1 FROM jobs WHERE id = $1", Params().Text(job.id())));
    if (exists.rows() > 0) return taken;
    Params params;
    params.Text(job.id()).Text(job.tenant()).Int(job.state());
    if (idempotency_key.empty()) {
      params.NullText();
    } else {
      params.Text(idempotency_key);
    }
    params.Bytes(job.SerializeAsString());
    // A concurrent creator of the same id or key wins the race: we wait for it to
    // commit, insert nothing, and answer as if we had come second.
    KAGENT_ASSIGN_OR_RETURN(
        Result inserted,
        Exec("INSERT INTO jobs(id, tenant, state, idempotency_key, revision, data) "
             "VALUES ($1, $2, $3, $4, 1, $5) ON CONFLICT DO NOTHING RETURNING seq",
             params));
    if (inserted.rows() == 0) {
      KAGENT_ASSIGN_OR_RETURN(bool raced, find_by_key());
      if (raced) return absl::OkStatus();
      return taken;
    }
    KAGENT_RETURN_IF_ERROR(
        Exec("INSERT INTO job_counters(job_id) VALUES ($1)", Params().Text(job.id())).status());
    result.stored.job = job;
    result.stored.revision = 1;
    result.created = true;
    return absl::OkStatus();
  }));
  return result;
}

absl::StatusOr<StoredJob> PostgresStorage::Session::GetJob(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("job_id", job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Result result, Exec("SELECT revision, data FROM jobs WHERE id = $1", Params().Text(job_id)));
  if (result.rows() == 0) return storage::JobNotFound(job_id);
  return ReadJob(result, 0, 0, 1);
}

absl::StatusOr<int64_t> PostgresStorage::Session::UpdateJob(const v1::Job& job,
                                                            int64_t expected_revision) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateUpdateJob(job, expected_revision));
  int64_t new_revision = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    // The row lock makes concurrent updaters queue; each then sees the latest revision.
    KAGENT_ASSIGN_OR_RETURN(
        Result current,
        Exec("SELECT tenant, revision FROM jobs WHERE id = $1 FOR NO KEY UPDATE",
             Params().Text(job.id())));
    if (current.rows() == 0) return storage::JobNotFound(job.id());
    KAGENT_RETURN_IF_ERROR(storage::CheckJobUpdate(job, current.Bytes(0, 0), current.Int(0, 1),
                                                   expected_revision));
    KAGENT_ASSIGN_OR_RETURN(
        Result update,
        Exec("UPDATE jobs SET state = $2, data = $3, revision = revision + 1 "
             "WHERE id = $1 AND revision = $4",
             Params().Text(job.id()).Int(job.state()).Bytes(job.SerializeAsString())
                 .Int(expected_revision)));
    KAGENT_CHECK(update.affected() == 1) << "the revision changed under a row lock";
    new_revision = expected_revision + 1;
    return absl::OkStatus();
  }));
  return new_revision;
}

absl::StatusOr<JobPage> PostgresStorage::Session::ListJobs(const ListJobsQuery& query) {
  KAGENT_ASSIGN_OR_RETURN(int page_size, storage::ValidateListJobsQuery(query));
  KAGENT_ASSIGN_OR_RETURN(int64_t before, storage::JobPageStart(query));
  const bool filtered = query.state != v1::JOB_STATE_UNSPECIFIED;
  Params params;
  params.Text(query.tenant).Int(before).Int(page_size + 1);
  if (filtered) params.Int(query.state);
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec(filtered ? "SELECT seq, revision, data FROM jobs WHERE tenant = $1 AND state = $4 "
                      "AND seq < $2 ORDER BY seq DESC LIMIT $3"
                    : "SELECT seq, revision, data FROM jobs WHERE tenant = $1 "
                      "AND seq < $2 ORDER BY seq DESC LIMIT $3",
           params));
  JobPage page;
  int64_t last_position = 0;
  for (int row = 0; row < result.rows(); ++row) {
    if (static_cast<int>(page.jobs.size()) == page_size) {
      page.next_page_token = storage::EncodeJobPageToken(query, last_position);
      break;
    }
    last_position = result.Int(row, 0);
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(result, row, 1, 2));
    page.jobs.push_back(std::move(stored));
  }
  return page;
}

absl::StatusOr<std::vector<StoredJob>> PostgresStorage::Session::ListUnfinishedJobs() {
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("SELECT revision, data FROM jobs WHERE state IN ($1, $2, $3) ORDER BY seq",
           Params().Int(v1::JOB_STATE_QUEUED).Int(v1::JOB_STATE_BASELINE)
               .Int(v1::JOB_STATE_ROUNDS)));
  std::vector<StoredJob> jobs;
  for (int row = 0; row < result.rows(); ++row) {
    KAGENT_ASSIGN_OR_RETURN(StoredJob stored, ReadJob(result, row, 0, 1));
    jobs.push_back(std::move(stored));
  }
  return jobs;
}

absl::Status PostgresStorage::Session::DeleteJob(absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("job_id", job_id));
  return Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(Result result,
                            Exec("DELETE FROM jobs WHERE id = $1", Params().Text(job_id)));
    if (result.affected() == 0) return storage::JobNotFound(job_id);
    return absl::OkStatus();
  });
}

// --- Events ----------------------------------------------------------------------

absl::StatusOr<int64_t> PostgresStorage::Session::AppendEvent(absl::string_view job_id,
                                                              const v1::JobEvent& event) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateEvent(job_id, event));
  int64_t sequence = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    // The row lock on the job's counter serializes appenders from every connection
    // until this transaction ends: numbers are handed out, and become visible, in order.
    KAGENT_ASSIGN_OR_RETURN(
        Result next,
        Exec("UPDATE job_counters SET last_event_sequence = last_event_sequence + 1 "
             "WHERE job_id = $1 RETURNING last_event_sequence",
             Params().Text(job_id)));
    if (next.rows() == 0) return storage::JobNotFound(job_id);
    sequence = next.Int(0, 0);
    v1::JobEvent stored = event;
    stored.set_job_id(std::string(job_id));
    stored.set_sequence(sequence);
    return Exec("INSERT INTO job_events(job_id, sequence, type, data) VALUES ($1, $2, $3, $4)",
                Params().Text(job_id).Int(sequence).Int(event.type())
                    .Bytes(stored.SerializeAsString()))
        .status();
  }));
  return sequence;
}

absl::StatusOr<std::vector<v1::JobEvent>> PostgresStorage::Session::ListEvents(
    absl::string_view job_id, int64_t from_sequence, int limit) {
  KAGENT_ASSIGN_OR_RETURN(int effective,
                          storage::ValidateListEvents(job_id, from_sequence, limit));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("SELECT data FROM job_events WHERE job_id = $1 AND sequence >= $2 "
           "ORDER BY sequence LIMIT $3",
           Params().Text(job_id).Int(from_sequence).Int(effective)));
  std::vector<v1::JobEvent> events;
  KAGENT_RETURN_IF_ERROR(ParseRows(result, 0, "job event", &events));
  return events;
}

// --- Candidates ------------------------------------------------------------------

absl::Status PostgresStorage::Session::PutCandidate(const v1::Candidate& candidate) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateCandidate(candidate));
  auto stored_job = [&]() -> absl::StatusOr<std::optional<std::string>> {
    KAGENT_ASSIGN_OR_RETURN(Result existing, Exec("SELECT job_id FROM candidates WHERE id = $1",
                                                  Params().Text(candidate.id())));
    if (existing.rows() == 0) return std::optional<std::string>();
    return std::optional<std::string>(existing.Bytes(0, 0));
  };
  return Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(std::optional<std::string> job, stored_job());
    if (job.has_value() && *job != candidate.job_id()) {
      return storage::CandidateMoved(candidate, *job);
    }
    KAGENT_RETURN_IF_ERROR(RequireJob(candidate.job_id()));
    KAGENT_ASSIGN_OR_RETURN(
        Result upsert,
        Exec("INSERT INTO candidates(id, job_id, round, verdict, data) "
             "VALUES ($1, $2, $3, $4, $5) ON CONFLICT (id) DO UPDATE SET "
             "round = excluded.round, verdict = excluded.verdict, data = excluded.data "
             "WHERE candidates.job_id = excluded.job_id RETURNING seq",
             Params().Text(candidate.id()).Text(candidate.job_id()).Int(candidate.round())
                 .Int(candidate.measurement().verdict()).Bytes(candidate.SerializeAsString())));
    if (upsert.rows() == 0) {
      // Another connection stored this id under another job meanwhile.
      KAGENT_ASSIGN_OR_RETURN(job, stored_job());
      return storage::CandidateMoved(candidate, job.value_or(""));
    }
    return absl::OkStatus();
  });
}

absl::StatusOr<v1::Candidate> PostgresStorage::Session::GetCandidate(
    absl::string_view candidate_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("candidate_id", candidate_id));
  KAGENT_ASSIGN_OR_RETURN(Result result, Exec("SELECT data FROM candidates WHERE id = $1",
                                              Params().Text(candidate_id)));
  if (result.rows() == 0) return storage::CandidateNotFound(candidate_id);
  return storage::ParseStored<v1::Candidate>(result.Bytes(0, 0), "candidate");
}

absl::StatusOr<std::vector<v1::Candidate>> PostgresStorage::Session::ListCandidates(
    absl::string_view job_id, std::optional<int32_t> round) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateListCandidates(job_id, round));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  Params params;
  params.Text(job_id);
  if (round.has_value()) params.Int(*round);
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec(round.has_value()
               ? "SELECT data FROM candidates WHERE job_id = $1 AND round = $2 ORDER BY seq"
               : "SELECT data FROM candidates WHERE job_id = $1 ORDER BY round, seq",
           params));
  std::vector<v1::Candidate> candidates;
  KAGENT_RETURN_IF_ERROR(ParseRows(result, 0, "candidate", &candidates));
  return candidates;
}

// --- Task results ----------------------------------------------------------------

absl::StatusOr<std::string> PostgresStorage::Session::PutTaskResult(absl::string_view job_id,
                                                                    absl::string_view task_id,
                                                                    absl::string_view result) {
  KAGENT_RETURN_IF_ERROR(storage::ValidatePutTaskResult(job_id, task_id, result));
  std::string recorded;
  // Returns true when a result is recorded (and sets `recorded`).
  auto existing = [&]() -> absl::StatusOr<bool> {
    KAGENT_ASSIGN_OR_RETURN(Result found,
                            Exec("SELECT job_id, data FROM task_results WHERE task_id = $1",
                                 Params().Text(task_id)));
    if (found.rows() == 0) return false;
    KAGENT_RETURN_IF_ERROR(storage::CheckTaskJob(task_id, found.Bytes(0, 0), job_id));
    recorded = found.Bytes(0, 1);
    return true;
  };
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(bool found, existing());
    if (found) return absl::OkStatus();
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    KAGENT_ASSIGN_OR_RETURN(
        Result inserted,
        Exec("INSERT INTO task_results(task_id, job_id, data) VALUES ($1, $2, $3) "
             "ON CONFLICT (task_id) DO NOTHING RETURNING 1",
             Params().Text(task_id).Text(job_id).Bytes(result)));
    if (inserted.rows() == 0) {
      // A racing writer recorded first: its result stands.
      KAGENT_ASSIGN_OR_RETURN(found, existing());
      if (!found) {
        return absl::AbortedError(absl::StrCat("task ", storage::QuoteValue(task_id),
                                               " was recorded concurrently; retry"));
      }
      return absl::OkStatus();
    }
    recorded = std::string(result);
    return absl::OkStatus();
  }));
  return recorded;
}

absl::StatusOr<std::string> PostgresStorage::Session::GetTaskResult(absl::string_view task_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("task_id", task_id));
  KAGENT_ASSIGN_OR_RETURN(Result result, Exec("SELECT data FROM task_results WHERE task_id = $1",
                                              Params().Text(task_id)));
  if (result.rows() == 0) return storage::TaskResultNotFound(task_id);
  return result.Bytes(0, 0);
}

// --- Reflexions ------------------------------------------------------------------

absl::StatusOr<int64_t> PostgresStorage::Session::AppendReflexion(
    absl::string_view job_id, const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateAppendReflexion(job_id, reflexion));
  int64_t sequence = 0;
  KAGENT_RETURN_IF_ERROR(Atomically([&]() -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(
        Result next,
        Exec("UPDATE job_counters SET last_reflexion_sequence = last_reflexion_sequence + 1 "
             "WHERE job_id = $1 RETURNING last_reflexion_sequence",
             Params().Text(job_id)));
    if (next.rows() == 0) return storage::JobNotFound(job_id);
    sequence = next.Int(0, 0);
    return Exec("INSERT INTO reflexions(job_id, sequence, round, data) VALUES ($1, $2, $3, $4)",
                Params().Text(job_id).Int(sequence).Int(reflexion.round())
                    .Bytes(reflexion.SerializeAsString()))
        .status();
  }));
  return sequence;
}

absl::StatusOr<std::vector<v1::Reflexion>> PostgresStorage::Session::ListReflexions(
    absl::string_view job_id) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateIdentifier("job_id", job_id));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("SELECT data FROM reflexions WHERE job_id = $1 ORDER BY sequence", Params().Text(job_id)));
  std::vector<v1::Reflexion> reflexions;
  KAGENT_RETURN_IF_ERROR(ParseRows(result, 0, "reflexion", &reflexions));
  return reflexions;
}

absl::Status PostgresStorage::Session::AppendSharedReflexion(const SharedMemoryKey& key,
                                                             absl::string_view source_job_id,
                                                             const v1::Reflexion& reflexion) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateAppendSharedReflexion(key, source_job_id, reflexion));
  return Atomically([&]() -> absl::Status {
    return Exec("INSERT INTO shared_reflexions(tenant, op_class, gpu_arch, source_job_id, data) "
                "VALUES ($1, $2, $3, $4, $5)",
                Params().Text(key.tenant).Text(key.op_class).Text(key.gpu_arch)
                    .Text(source_job_id).Bytes(reflexion.SerializeAsString()))
        .status();
  });
}

absl::StatusOr<std::vector<v1::Reflexion>> PostgresStorage::Session::ListSharedReflexions(
    const SharedMemoryKey& key, int limit) {
  KAGENT_ASSIGN_OR_RETURN(int effective, storage::ValidateListSharedReflexions(key, limit));
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("SELECT data FROM (SELECT seq, data FROM shared_reflexions WHERE tenant = $1 "
           "AND op_class = $2 AND gpu_arch = $3 ORDER BY seq DESC LIMIT $4) AS recent "
           "ORDER BY seq",
           Params().Text(key.tenant).Text(key.op_class).Text(key.gpu_arch).Int(effective)));
  std::vector<v1::Reflexion> reflexions;
  KAGENT_RETURN_IF_ERROR(ParseRows(result, 0, "shared reflexion", &reflexions));
  return reflexions;
}

// --- Artifacts -------------------------------------------------------------------

absl::Status PostgresStorage::Session::PutArtifact(absl::string_view job_id,
                                                   const v1::Artifact& artifact) {
  KAGENT_RETURN_IF_ERROR(storage::ValidatePutArtifact(job_id, artifact));
  v1::Artifact meta = artifact;
  meta.clear_content();
  return Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    return Exec("INSERT INTO artifacts(job_id, name, kind, size_bytes, meta, content) "
                "VALUES ($1, $2, $3, $4, $5, $6) ON CONFLICT (job_id, name) DO UPDATE SET "
                "kind = excluded.kind, size_bytes = excluded.size_bytes, "
                "meta = excluded.meta, content = excluded.content",
                Params().Text(job_id).Text(artifact.name()).Text(artifact.kind())
                    .Int(static_cast<int64_t>(artifact.content().size()))
                    .Bytes(meta.SerializeAsString()).Bytes(artifact.content()))
        .status();
  });
}

absl::StatusOr<v1::Artifact> PostgresStorage::Session::GetArtifact(absl::string_view job_id,
                                                                   absl::string_view name) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateGetArtifact(job_id, name));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(
      Result result, Exec("SELECT meta, content FROM artifacts WHERE job_id = $1 AND name = $2",
                          Params().Text(job_id).Text(name)));
  if (result.rows() == 0) return storage::ArtifactNotFound(job_id, name);
  KAGENT_ASSIGN_OR_RETURN(v1::Artifact artifact,
                          storage::ParseStored<v1::Artifact>(result.Bytes(0, 0), "artifact"));
  artifact.set_content(result.Bytes(0, 1));
  return artifact;
}

absl::StatusOr<std::vector<v1::Artifact>> PostgresStorage::Session::ListArtifacts(
    absl::string_view job_id, absl::string_view prefix, bool include_content) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateListArtifacts(job_id, prefix));
  if (prefix.find('\0') != absl::string_view::npos) {
    // No stored name contains NUL (validation refuses it), and TEXT cannot carry one.
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    return std::vector<v1::Artifact>();
  }
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  // name >= prefix uses the primary key (COLLATE "C": bytewise); starts_with() cuts the
  // range where the prefix ends.
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec(include_content
               ? "SELECT meta, content FROM artifacts WHERE job_id = $1 AND name >= $2 "
                 "AND starts_with(name, $2) ORDER BY name"
               : "SELECT meta FROM artifacts WHERE job_id = $1 AND name >= $2 "
                 "AND starts_with(name, $2) ORDER BY name",
           Params().Text(job_id).Text(prefix)));
  std::vector<v1::Artifact> artifacts;
  for (int row = 0; row < result.rows(); ++row) {
    KAGENT_ASSIGN_OR_RETURN(v1::Artifact artifact,
                            storage::ParseStored<v1::Artifact>(result.Bytes(row, 0), "artifact"));
    if (include_content) artifact.set_content(result.Bytes(row, 1));
    artifacts.push_back(std::move(artifact));
  }
  return artifacts;
}

// --- Checkpoints -----------------------------------------------------------------

absl::Status PostgresStorage::Session::PutCheckpoint(absl::string_view job_id,
                                                     absl::string_view key,
                                                     absl::string_view value) {
  KAGENT_RETURN_IF_ERROR(storage::ValidatePutCheckpoint(job_id, key, value));
  return Atomically([&]() -> absl::Status {
    KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
    return Exec("INSERT INTO checkpoints(job_id, key, data) VALUES ($1, $2, $3) "
                "ON CONFLICT (job_id, key) DO UPDATE SET data = excluded.data",
                Params().Text(job_id).Text(key).Bytes(value))
        .status();
  });
}

absl::StatusOr<std::string> PostgresStorage::Session::GetCheckpoint(absl::string_view job_id,
                                                                    absl::string_view key) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateGetCheckpoint(job_id, key));
  KAGENT_RETURN_IF_ERROR(RequireJob(job_id));
  KAGENT_ASSIGN_OR_RETURN(Result result,
                          Exec("SELECT data FROM checkpoints WHERE job_id = $1 AND key = $2",
                               Params().Text(job_id).Text(key)));
  if (result.rows() == 0) return storage::CheckpointNotFound(job_id, key);
  return result.Bytes(0, 0);
}

// --- Leader leases ----------------------------------------------------------------

LeaderLease PostgresStorage::Session::ReadLease(const Result& result, int row) {
  LeaderLease lease;
  lease.name = result.Bytes(row, 0);
  lease.holder = result.Bytes(row, 1);
  lease.address = result.Bytes(row, 2);
  lease.term = result.Int(row, 3);
  lease.remaining = absl::Milliseconds(result.Int(row, 4));
  return lease;
}

absl::StatusOr<LeaderLease> PostgresStorage::Session::AcquireLease(absl::string_view name,
                                                                   absl::string_view holder,
                                                                   absl::string_view address,
                                                                   absl::Duration ttl) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateAcquireLease(name, holder, address, ttl));
  // One statement: take it when free, renew it when ours, else leave it. The row lock
  // this takes waits for a holder's open fenced transaction (CheckLease's FOR SHARE).
  KAGENT_ASSIGN_OR_RETURN(
      Result taken,
      Exec("INSERT INTO leases AS l (name, holder, address, term, expires_at) "
           "VALUES ($1, $2, $3, 1, clock_timestamp() + $4::float8 * interval '1 millisecond') "
           "ON CONFLICT (name) DO UPDATE SET "
           "term = CASE WHEN l.holder = excluded.holder AND l.expires_at > clock_timestamp() "
           "THEN l.term ELSE l.term + 1 END, "
           "holder = excluded.holder, address = excluded.address, "
           "expires_at = excluded.expires_at "
           "WHERE l.holder = excluded.holder OR l.expires_at <= clock_timestamp() "
           "RETURNING " KAGENT_LEASE_COLUMNS,
           Params().Text(name).Text(holder).Text(address).Int(absl::ToInt64Milliseconds(ttl)),
           "taking a lease"));
  if (taken.rows() == 1) return ReadLease(taken, 0);
  return GetLease(name);
}

absl::StatusOr<LeaderLease> PostgresStorage::Session::GetLease(absl::string_view name) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateLeaseName(name));
  KAGENT_ASSIGN_OR_RETURN(Result result,
                          Exec("SELECT " KAGENT_LEASE_COLUMNS " FROM leases WHERE name = $1",
                               Params().Text(name), "reading a lease"));
  if (result.rows() == 0) return storage::LeaseNotFound(name);
  return ReadLease(result, 0);
}

absl::Status PostgresStorage::Session::CheckLease(absl::string_view name,
                                                  absl::string_view holder, int64_t term) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateLeaseHolder(name, holder, term));
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("SELECT " KAGENT_LEASE_COLUMNS " FROM leases WHERE name = $1 FOR SHARE",
           Params().Text(name), "checking a lease"));
  if (result.rows() == 0) return storage::LeaseNotHeld(name, holder, term, nullptr);
  LeaderLease stored = ReadLease(result, 0);
  if (stored.holder != holder || stored.term != term || stored.remaining <= absl::ZeroDuration()) {
    return storage::LeaseNotHeld(name, holder, term, &stored);
  }
  return absl::OkStatus();
}

absl::Status PostgresStorage::Session::ReleaseLease(absl::string_view name,
                                                    absl::string_view holder, int64_t term) {
  KAGENT_RETURN_IF_ERROR(storage::ValidateLeaseHolder(name, holder, term));
  KAGENT_ASSIGN_OR_RETURN(
      Result result,
      Exec("UPDATE leases SET expires_at = clock_timestamp() - interval '1 millisecond' "
           "WHERE name = $1 AND holder = $2 AND term = $3 AND expires_at > clock_timestamp()",
           Params().Text(name).Text(holder).Int(term), "releasing a lease"));
  if (result.affected() == 0) {
    KAGENT_RETURN_IF_ERROR(GetLease(name).status());
  }
  return absl::OkStatus();
}

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
    std::string reason = error != nullptr ? CleanMessage(error) : "";
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
  KAGENT_RETURN_IF_ERROR(session->Migrate(migrations));
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
      if (session->LooksAlive()) return session;
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
  if (!session->Reusable()) {
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
  absl::Status status = call(*session);
  Release(std::move(session));
  return status;
}

}  // namespace kagent
