// OpenStorage / ParseStorageUrl: URL forms, errors, redaction. Opening PostgreSQL
// through a URL is tested in postgres_storage_test.cc (it needs a server).
#include "common/storage/storage_factory.h"

#include <stdlib.h>

#include <catch2/catch.hpp>

#include <filesystem>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"

namespace kagent {
namespace {

const bool kQuietLogs = [] {
  SetLogLevel(LogLevel::kWarning);
  return true;
}();

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

TEST_CASE("storage_factory: URL forms", "[storage_factory]") {
  StorageUrl url = Unwrap(ParseStorageUrl("sqlite:/var/lib/kagent/kagent.db"));
  REQUIRE(url.backend == StorageBackend::kSqlite);
  REQUIRE(url.target == "/var/lib/kagent/kagent.db");
  url = Unwrap(ParseStorageUrl("sqlite:///var/lib/kagent/kagent.db"));
  REQUIRE(url.target == "/var/lib/kagent/kagent.db");
  url = Unwrap(ParseStorageUrl("sqlite:relative/k.db"));
  REQUIRE(url.target == "relative/k.db");
  url = Unwrap(ParseStorageUrl("SQLite::memory:"));
  REQUIRE(url.backend == StorageBackend::kSqlite);
  REQUIRE(url.target == ":memory:");
  url = Unwrap(ParseStorageUrl("/data/kagent.db"));
  REQUIRE(url.backend == StorageBackend::kSqlite);
  REQUIRE(url.target == "/data/kagent.db");
  url = Unwrap(ParseStorageUrl("kagent.db"));
  REQUIRE(url.target == "kagent.db");
  url = Unwrap(ParseStorageUrl("./a:b.db"));  // a colon later in a path is no scheme
  REQUIRE(url.backend == StorageBackend::kSqlite);
  REQUIRE(url.target == "./a:b.db");
  url = Unwrap(ParseStorageUrl(":memory:"));
  REQUIRE(url.target == ":memory:");

  for (const char* pg : {"postgres://u@db:5432/kagent", "postgresql://u:pw@db/kagent?sslmode=require",
                         "PostgreSQL://db"}) {
    url = Unwrap(ParseStorageUrl(pg));
    REQUIRE(url.backend == StorageBackend::kPostgres);
    REQUIRE(url.target == pg);
  }
}

TEST_CASE("storage_factory: bad URLs are INVALID_ARGUMENT", "[storage_factory]") {
  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(ParseStorageUrl("").status(), invalid, "empty");
  RequireCode(ParseStorageUrl("mysql://u@db/kagent").status(), invalid, "\"mysql\"");
  RequireCode(ParseStorageUrl("mysql://u@db/kagent").status(), invalid, "postgresql://");
  RequireCode(ParseStorageUrl("redis:x").status(), invalid, "not supported");
  RequireCode(ParseStorageUrl("sqlite:").status(), invalid, "no path");
  RequireCode(ParseStorageUrl("sqlite://").status(), invalid, "no path");
  RequireCode(ParseStorageUrl("postgres:db").status(), invalid, "connection URI");
  absl::Status status = ParseStorageUrl("postgresql:u:hunter2@db").status();
  RequireCode(status, invalid);
  REQUIRE_FALSE(absl::StrContains(status.message(), "hunter2"));
  RequireCode(OpenStorage("ftp://x").status(), invalid, "ftp");
  RequireCode(OpenStorage("").status(), invalid);
}

TEST_CASE("storage_factory: redaction", "[storage_factory]") {
  REQUIRE(RedactStorageUrl("postgresql://kagent:s3cret@db:5432/kagent") ==
          "postgresql://kagent:***@db:5432/kagent");
  REQUIRE(RedactStorageUrl("postgres://kagent@db/kagent?password=s3cret&sslmode=require") ==
          "postgres://kagent@db/kagent?password=***&sslmode=require");
  REQUIRE(RedactStorageUrl("postgres://u:p%40ss@db") == "postgres://u:***@db");
  REQUIRE(RedactStorageUrl("postgres://db/kagent") == "postgres://db/kagent");
  REQUIRE(RedactStorageUrl("sqlite:/a/b.db") == "sqlite:/a/b.db");
}

TEST_CASE("storage_factory: opens SQLite by path and by sqlite: URL", "[storage_factory]") {
  const char* base = getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(base != nullptr && base[0] != '\0' ? base : "/tmp", "/kagent-factory-XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  REQUIRE(mkdtemp(buffer.data()) != nullptr);
  const std::string dir = buffer.data();
  {
    std::unique_ptr<Storage> storage = Unwrap(OpenStorage(dir + "/plain.db"));
    v1::Job job;
    job.set_id("job-1");
    job.set_tenant("t");
    job.set_state(v1::JOB_STATE_QUEUED);
    REQUIRE(Unwrap(storage->CreateJob(job, "")).created);
    storage.reset();
    storage = Unwrap(OpenStorage("sqlite:" + dir + "/plain.db"));  // the same file
    REQUIRE(Unwrap(storage->GetJob("job-1")).job.tenant() == "t");
    REQUIRE(Unwrap(storage->SchemaVersion()) >= 1);
    storage = Unwrap(OpenStorage("sqlite::memory:"));
    RequireCode(storage->GetJob("job-1").status(), absl::StatusCode::kNotFound);
  }
  std::error_code ec;
  std::filesystem::remove_all(dir, ec);
}

TEST_CASE("storage_factory: an unreachable PostgreSQL is UNAVAILABLE without the password",
          "[storage_factory]") {
  // Port 1 on loopback: nothing listens there, the connection is refused at once.
  absl::StatusOr<std::unique_ptr<Storage>> storage =
      OpenStorage("postgresql://kagent:hunter2@127.0.0.1:1/kagent?connect_timeout=2");
  RequireCode(storage.status(), absl::StatusCode::kUnavailable, "127.0.0.1:1/kagent");
  REQUIRE(absl::StrContains(storage.status().message(), "cannot connect"));
  REQUIRE_FALSE(absl::StrContains(storage.status().message(), "hunter2"));
}

}  // namespace
}  // namespace kagent
