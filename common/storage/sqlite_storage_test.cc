// SqliteStorage: the conformance suite, then what is particular to SQLite (the file,
// WAL, migrations, corrupt and foreign files, locks held by other connections).
#include "common/storage/sqlite_storage.h"

#include <sqlite3.h>
#include <stdlib.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <fstream>
#include <memory>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/storage_test_suite.h"

namespace kagent {
namespace {

// Every Open logs its schema version at INFO; keep test output to what matters.
const bool kQuietLogs = [] {
  SetLogLevel(LogLevel::kWarning);
  return true;
}();

// A fresh directory under $TMPDIR, removed with everything in it when destroyed.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string pattern =
        absl::StrCat(base != nullptr && base[0] != '\0' ? base : "/tmp", "/kagent-storage-XXXXXX");
    std::vector<char> buffer(pattern.begin(), pattern.end());
    buffer.push_back('\0');
    KAGENT_CHECK(mkdtemp(buffer.data()) != nullptr) << "mkdtemp failed for " << pattern;
    path_ = buffer.data();
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path_, ec);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

// A raw sqlite3 connection, as another process (a backup, the sqlite3 shell) would hold.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    KAGENT_CHECK(sqlite3_open(path.c_str(), &db_) == SQLITE_OK) << sqlite3_errmsg(db_);
  }
  ~RawDb() { sqlite3_close(db_); }
  int Exec(const std::string& sql) {
    return sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, nullptr);
  }
  void MustExec(const std::string& sql) {
    int rc = Exec(sql);
    INFO(sql << ": " << sqlite3_errmsg(db_));
    REQUIRE(rc == SQLITE_OK);
  }
  // The first column of the first row, as text ("" when none).
  std::string Query(const std::string& sql) {
    sqlite3_stmt* stmt = nullptr;
    std::string out;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      const unsigned char* text = sqlite3_column_text(stmt, 0);
      if (text != nullptr) out = reinterpret_cast<const char*>(text);
    }
    sqlite3_finalize(stmt);
    return out;
  }

 private:
  sqlite3* db_ = nullptr;
};

class SqliteTestEnv final : public StorageTestEnv {
 public:
  SqliteTestEnv() : path_(dir_.path() + "/kagent.db") {}

  absl::StatusOr<std::unique_ptr<Storage>> Open() override {
    KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<SqliteStorage> storage,
                            SqliteStorage::Open({.path = path_}));
    return std::unique_ptr<Storage>(std::move(storage));
  }

  absl::Status SetRecordedSchemaVersion(int64_t version) override {
    RawDb db(path_);
    if (db.Exec(absl::StrCat("BEGIN; DELETE FROM schema_version WHERE version > ", version,
                             "; INSERT OR IGNORE INTO schema_version VALUES (", version,
                             ", 'set by a test', 0); COMMIT")) != SQLITE_OK) {
      return absl::InternalError("could not rewrite schema_version");
    }
    return absl::OkStatus();
  }

  const std::string& path() const { return path_; }

 private:
  TempDir dir_;
  std::string path_;
};

std::unique_ptr<StorageTestEnv> MakeSqliteEnv() { return std::make_unique<SqliteTestEnv>(); }

template <typename T>
T Unwrap(absl::StatusOr<T> result) {
  INFO(result.status().ToString());
  REQUIRE(result.ok());
  return *std::move(result);
}

void RequireCode(const absl::Status& status, absl::StatusCode code, absl::string_view needle = "") {
  INFO(status.ToString());
  REQUIRE(status.code() == code);
  REQUIRE(absl::StrContains(status.message(), needle));
}

v1::Job MakeJob(const std::string& id) {
  v1::Job job;
  job.set_id(id);
  job.set_tenant("tenant-a");
  job.set_state(v1::JOB_STATE_QUEUED);
  job.mutable_problem()->set_source("class Model: ...");
  return job;
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  REQUIRE(out.good());
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

KAGENT_STORAGE_CONFORMANCE_TESTS("sqlite", MakeSqliteEnv)

TEST_CASE("sqlite: the file is a WAL-mode kagent database", "[storage][sqlite]") {
  SqliteTestEnv env;
  {
    auto storage = Unwrap(SqliteStorage::Open({.path = env.path()}));
    REQUIRE(storage->path() == env.path());
    REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
    REQUIRE(std::filesystem::exists(env.path() + "-wal"));
    // Another connection (a backup tool, the sqlite3 shell) can read while it is open.
    RawDb raw(env.path());
    REQUIRE(raw.Query("SELECT id FROM jobs") == "job-1");
  }
  RawDb raw(env.path());
  REQUIRE(raw.Query("PRAGMA journal_mode") == "wal");
  REQUIRE(raw.Query("PRAGMA application_id") == std::to_string(0x6B61676E));
  REQUIRE(raw.Query("SELECT MAX(version) FROM schema_version") ==
          std::to_string(SqliteSchemaMigrations().back().version));
  REQUIRE(raw.Query("PRAGMA integrity_check") == "ok");
  REQUIRE(raw.Query("PRAGMA foreign_key_check") == "");
}

TEST_CASE("sqlite: migrates an empty file and creates missing directories", "[storage][sqlite]") {
  TempDir dir;
  SECTION("zero-byte file") {
    const std::string path = dir.path() + "/empty.db";
    WriteFile(path, "");
    auto storage = Unwrap(SqliteStorage::Open({.path = path}));
    REQUIRE(Unwrap(storage->SchemaVersion()) == SqliteSchemaMigrations().back().version);
    REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
    storage.reset();
    RawDb raw(path);
    REQUIRE(raw.Query("SELECT COUNT(*) FROM schema_version") ==
            std::to_string(SqliteSchemaMigrations().size()));
  }
  SECTION("nested directories") {
    const std::string path = dir.path() + "/a/b/c/kagent.db";
    auto storage = Unwrap(SqliteStorage::Open({.path = path}));
    REQUIRE(std::filesystem::exists(path));
  }
  SECTION("directories not created when asked not to") {
    const std::string path = dir.path() + "/missing/kagent.db";
    RequireCode(SqliteStorage::Open({.path = path, .create_parent_directories = false}).status(),
                absl::StatusCode::kFailedPrecondition, path);
  }
  SECTION("a path under a regular file") {
    WriteFile(dir.path() + "/file", "x");
    const std::string path = dir.path() + "/file/kagent.db";
    RequireCode(SqliteStorage::Open({.path = path}).status(),
                absl::StatusCode::kFailedPrecondition, dir.path() + "/file");
  }
  SECTION("bad options") {
    RequireCode(SqliteStorage::Open({.path = ""}).status(), absl::StatusCode::kInvalidArgument,
                "path");
    RequireCode(SqliteStorage::Open({.path = dir.path() + "/x.db", .busy_timeout_ms = -1}).status(),
                absl::StatusCode::kInvalidArgument, "busy_timeout_ms");
  }
}

TEST_CASE("sqlite: in-memory database", "[storage][sqlite]") {
  auto storage = Unwrap(SqliteStorage::Open({.path = ":memory:"}));
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
  REQUIRE(Unwrap(storage->AppendEvent("job-1", [] {
            v1::JobEvent event;
            event.set_type(v1::JOB_EVENT_LOG);
            return event;
          }())) == 1);
  REQUIRE(Unwrap(storage->GetJob("job-1")).revision == 1);
}

TEST_CASE("sqlite: a later migration upgrades in place, a failed one changes nothing",
          "[storage][sqlite]") {
  SqliteTestEnv env;
  const int64_t latest = SqliteSchemaMigrations().back().version;
  {
    auto storage = Unwrap(SqliteStorage::Open({.path = env.path()}));
    REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
  }

  SECTION("a good migration") {
    std::vector<SqliteMigration> next = SqliteSchemaMigrations();
    next.push_back({latest + 1, "add job notes",
                    "ALTER TABLE jobs ADD COLUMN note TEXT; CREATE TABLE notes (x INTEGER);"});
    {
      auto storage = Unwrap(SqliteStorage::Open({.path = env.path(), .migrations = &next}));
      REQUIRE(Unwrap(storage->SchemaVersion()) == latest + 1);
      REQUIRE(Unwrap(storage->GetJob("job-1")).job.problem().source() == "class Model: ...");
      REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-2"), "")).created);
    }
    {
      RawDb raw(env.path());
      REQUIRE(raw.Query("SELECT description FROM schema_version WHERE version = " +
                        std::to_string(latest + 1)) == "add job notes");
      REQUIRE(raw.Query("SELECT COUNT(*) FROM jobs WHERE note IS NULL") == "2");
    }
    // This binary, which knows only `latest`, refuses the upgraded file.
    absl::StatusOr<std::unique_ptr<SqliteStorage>> refused =
        SqliteStorage::Open({.path = env.path()});
    RequireCode(refused.status(), absl::StatusCode::kFailedPrecondition, "newer than the newest");
    REQUIRE(absl::StrContains(refused.status().message(), env.path()));
    // And leaves it as it was.
    auto storage = Unwrap(SqliteStorage::Open({.path = env.path(), .migrations = &next}));
    REQUIRE(Unwrap(storage->GetJob("job-2")).revision == 1);
  }

  SECTION("a failing migration") {
    std::vector<SqliteMigration> broken = SqliteSchemaMigrations();
    broken.push_back({latest + 1, "half good",
                      "CREATE TABLE half (x INTEGER); ALTER TABLE jobs ADD COLUMN y TEXT; "
                      "THIS IS NOT SQL;"});
    absl::Status status = SqliteStorage::Open({.path = env.path(), .migrations = &broken}).status();
    INFO(status.ToString());
    REQUIRE_FALSE(status.ok());
    REQUIRE(absl::StrContains(status.message(), absl::StrCat("schema migration ", latest + 1)));
    REQUIRE(absl::StrContains(status.message(), "half good"));
    {
      RawDb raw(env.path());
      REQUIRE(raw.Query("SELECT MAX(version) FROM schema_version") == std::to_string(latest));
      REQUIRE(raw.Query("SELECT COUNT(*) FROM sqlite_master WHERE name = 'half'") == "0");
    }
    auto storage = Unwrap(SqliteStorage::Open({.path = env.path()}));
    REQUIRE(Unwrap(storage->GetJob("job-1")).revision == 1);
  }
}

TEST_CASE("sqlite: a corrupt file is refused with DATA_LOSS", "[storage][sqlite]") {
  SqliteTestEnv env;
  SECTION("random bytes") {
    std::mt19937 random(42);
    std::string garbage(16384, '\0');
    for (char& c : garbage) c = static_cast<char>(random());
    WriteFile(env.path(), garbage);
    absl::Status status = SqliteStorage::Open({.path = env.path()}).status();
    RequireCode(status, absl::StatusCode::kDataLoss, env.path());
    REQUIRE(absl::StrContains(status.message(), "corrupt"));
    REQUIRE(absl::StrContains(status.message(), "backup"));
    // Refusing did not touch the file.
    REQUIRE(ReadFile(env.path()) == garbage);
  }
  SECTION("a damaged schema page") {
    {
      auto storage = Unwrap(env.Open());
      REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
    }
    {
      RawDb raw(env.path());
      raw.MustExec("PRAGMA wal_checkpoint(TRUNCATE)");
      raw.MustExec("PRAGMA journal_mode=DELETE");
    }
    std::string bytes = ReadFile(env.path());
    REQUIRE(bytes.size() > 4096);
    for (size_t i = 100; i < 4096; ++i) bytes[i] = static_cast<char>(0xA5);
    WriteFile(env.path(), bytes);
    RequireCode(SqliteStorage::Open({.path = env.path()}).status(), absl::StatusCode::kDataLoss,
                "corrupt");
  }
}

TEST_CASE("sqlite: another application's database is refused untouched", "[storage][sqlite]") {
  TempDir dir;
  const std::string path = dir.path() + "/other.db";
  SECTION("tables but no schema_version") {
    {
      RawDb raw(path);
      raw.MustExec("CREATE TABLE users (name TEXT); INSERT INTO users VALUES ('ada')");
    }
    RequireCode(SqliteStorage::Open({.path = path}).status(), absl::StatusCode::kFailedPrecondition,
                "not a kagent database");
    RawDb raw(path);
    REQUIRE(raw.Query("PRAGMA journal_mode") == "delete");
    REQUIRE(raw.Query("SELECT COUNT(*) FROM sqlite_master WHERE name = 'schema_version'") == "0");
  }
  SECTION("another application_id") {
    {
      RawDb raw(path);
      raw.MustExec("PRAGMA application_id = 1234");
    }
    RequireCode(SqliteStorage::Open({.path = path}).status(), absl::StatusCode::kFailedPrecondition,
                "another application");
  }
}

TEST_CASE("sqlite: a lock held by another connection gives UNAVAILABLE after the busy timeout",
          "[storage][sqlite]") {
  SqliteTestEnv env;
  auto storage = Unwrap(SqliteStorage::Open({.path = env.path(), .busy_timeout_ms = 50}));
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
  RawDb other(env.path());
  other.MustExec("BEGIN IMMEDIATE");
  RequireCode(storage->CreateJob(MakeJob("job-2"), "").status(), absl::StatusCode::kUnavailable,
              "lock");
  // Readers are not blocked by the writer (WAL).
  REQUIRE(Unwrap(storage->GetJob("job-1")).revision == 1);
  other.MustExec("COMMIT");
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-2"), "")).created);
}

TEST_CASE("sqlite: calling the storage from inside its own transaction fails fast",
          "[storage][sqlite]") {
  auto storage = Unwrap(SqliteStorage::Open({.path = ":memory:"}));
  REQUIRE(Unwrap(storage->CreateJob(MakeJob("job-1"), "")).created);
  absl::Status inner;
  absl::Status status = storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint("job-1", "k", "v"));
    inner = storage->GetJob("job-1").status();  // the outer object: a bug in the caller
    return inner;
  });
  RequireCode(inner, absl::StatusCode::kFailedPrecondition, "RunInTransaction");
  RequireCode(status, absl::StatusCode::kFailedPrecondition);
  RequireCode(storage->GetCheckpoint("job-1", "k").status(), absl::StatusCode::kNotFound);
  // Other threads, and this one afterwards, are unaffected.
  absl::Status from_thread;
  std::thread([&] { from_thread = storage->GetJob("job-1").status(); }).join();
  REQUIRE(from_thread.ok());
  REQUIRE(storage->GetJob("job-1").ok());
}

}  // namespace kagent
