// PostgresStorage: the conformance suite against a real PostgreSQL server started on
// loopback for this process (common/storage/testing/postgres_test_server.h), then what
// is particular to PostgreSQL: writers on several connections and storages, a server
// restart, connection failures, foreign databases, concurrent migrations.
//
// Without the server binaries every test fails with a message saying to run
// scripts/setup.sh.
#include "common/storage/postgres_storage.h"

#include <catch2/catch.hpp>

#include <stdlib.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <memory>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/storage/fenced_storage.h"
#include "common/storage/storage_factory.h"
#include "common/storage/storage_test_suite.h"
#include "common/storage/testing/postgres_test_server.h"

namespace kagent {
namespace {

using testing::PostgresTestServer;

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

void RequireOk(const absl::Status& status) {
  INFO(status.ToString());
  REQUIRE(status.ok());
}

void RequireCode(const absl::Status& status, absl::StatusCode code, absl::string_view needle = "") {
  INFO(status.ToString());
  REQUIRE(status.code() == code);
  REQUIRE(absl::StrContains(status.message(), needle));
}

// The server every test in this process shares (started on first use, stopped at exit).
PostgresTestServer& SharedServer() {
  static absl::StatusOr<std::unique_ptr<PostgresTestServer>>* const server =
      new absl::StatusOr<std::unique_ptr<PostgresTestServer>>(PostgresTestServer::Start());
  // Stopped by an atexit hook rather than a static destructor so that the order against
  // other statics does not matter.
  static const bool registered = [] {
    atexit([] { server->value().reset(); });
    return true;
  }();
  (void)registered;
  INFO("starting the test PostgreSQL server: " << server->status().ToString());
  REQUIRE(server->ok());
  return ***server;
}

// A fresh database on the shared server.
std::string NewDatabase() {
  static int counter = 0;
  PostgresTestServer& server = SharedServer();
  absl::StatusOr<std::string> url = server.CreateDatabase(absl::StrCat("t", ++counter));
  INFO(url.status().ToString() << "\n" << server.LogTail());
  REQUIRE(url.ok());
  return *url;
}

std::unique_ptr<PostgresStorage> OpenPg(const std::string& url, int pool_size = 4) {
  return Unwrap(PostgresStorage::Open({.url = url, .pool_size = pool_size}));
}

class PostgresTestEnv final : public StorageTestEnv {
 public:
  PostgresTestEnv() : database_(absl::StrCat("t", ++counter_)) {
    absl::StatusOr<std::string> url = SharedServer().CreateDatabase(database_);
    INFO(url.status().ToString());
    REQUIRE(url.ok());
    url_ = *url;
  }

  absl::StatusOr<std::unique_ptr<Storage>> Open() override {
    KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresStorage> storage,
                            PostgresStorage::Open({.url = url_}));
    return std::unique_ptr<Storage>(std::move(storage));
  }

  absl::Status SetRecordedSchemaVersion(int64_t version) override {
    return SharedServer().Exec(
        database_, absl::StrCat("BEGIN; DELETE FROM schema_version WHERE version > ", version,
                                "; INSERT INTO schema_version(version, description) VALUES (",
                                version, ", 'set by a test') ON CONFLICT DO NOTHING; COMMIT"));
  }

 private:
  static inline int counter_ = 1000;
  std::string database_;
  std::string url_;
};

std::unique_ptr<StorageTestEnv> MakePostgresEnv() { return std::make_unique<PostgresTestEnv>(); }

v1::Job MakeJob(const std::string& id, const std::string& tenant = "tenant-a") {
  v1::Job job;
  job.set_id(id);
  job.set_tenant(tenant);
  job.set_state(v1::JOB_STATE_QUEUED);
  job.mutable_problem()->set_name("matvec");
  return job;
}

v1::JobEvent MakeEvent(const std::string& message) {
  v1::JobEvent event;
  event.set_type(v1::JOB_EVENT_LOG);
  event.set_message(message);
  return event;
}

}  // namespace

KAGENT_STORAGE_CONFORMANCE_TESTS("postgres", MakePostgresEnv)

namespace {

TEST_CASE("postgres: concurrent writers on two storages and many connections are gap-free",
          "[postgres]") {
  const std::string url = NewDatabase();
  // Two PostgresStorage objects: separate pools, as two coordinator processes would have.
  std::unique_ptr<PostgresStorage> a = OpenPg(url, 4);
  std::unique_ptr<PostgresStorage> b = OpenPg(url, 4);
  RequireOk(a->CreateJob(MakeJob("job-1"), "").status());
  constexpr int kThreadsPerStorage = 4;
  constexpr int kPerThread = 40;
  std::atomic<int> failures{0};
  std::vector<std::vector<int64_t>> assigned(2 * kThreadsPerStorage);
  std::vector<std::thread> threads;
  for (int t = 0; t < 2 * kThreadsPerStorage; ++t) {
    threads.emplace_back([&, t] {
      Storage& storage = t % 2 == 0 ? *a : *b;
      for (int i = 0; i < kPerThread; ++i) {
        absl::StatusOr<int64_t> sequence =
            storage.AppendEvent("job-1", MakeEvent(absl::StrCat("t", t, "-", i)));
        if (!sequence.ok()) {
          ++failures;
          continue;
        }
        assigned[t].push_back(*sequence);
        // Read-modify-write of the job from both storages: retries lose nothing.
        if (i % 4 == 0) {
          while (true) {
            absl::StatusOr<StoredJob> job = storage.GetJob("job-1");
            if (!job.ok()) {
              ++failures;
              break;
            }
            job->job.set_current_round(job->job.current_round() + 1);
            absl::StatusOr<int64_t> updated = storage.UpdateJob(job->job, job->revision);
            if (updated.ok()) break;
            if (updated.status().code() != absl::StatusCode::kAborted) {
              ++failures;
              break;
            }
          }
        }
      }
    });
  }
  for (std::thread& thread : threads) thread.join();
  REQUIRE(failures == 0);
  std::vector<int64_t> all;
  for (const std::vector<int64_t>& per_thread : assigned) {
    REQUIRE(std::is_sorted(per_thread.begin(), per_thread.end()));
    all.insert(all.end(), per_thread.begin(), per_thread.end());
  }
  std::sort(all.begin(), all.end());
  const int total = 2 * kThreadsPerStorage * kPerThread;
  std::vector<int64_t> expected;
  for (int64_t s = 1; s <= total; ++s) expected.push_back(s);
  REQUIRE(all == expected);
  std::vector<v1::JobEvent> events = Unwrap(b->ListEvents("job-1", 0, kMaxEventLimit));
  REQUIRE(static_cast<int>(events.size()) == total);
  std::set<std::string> messages;
  for (size_t i = 0; i < events.size(); ++i) {
    REQUIRE(events[i].sequence() == static_cast<int64_t>(i) + 1);
    REQUIRE(events[i].job_id() == "job-1");
    messages.insert(events[i].message());
  }
  REQUIRE(static_cast<int>(messages.size()) == total);
  const int updates = 2 * kThreadsPerStorage * (kPerThread / 4);
  StoredJob job = Unwrap(a->GetJob("job-1"));
  REQUIRE(job.job.current_round() == updates);
  REQUIRE(job.revision == 1 + updates);
}

TEST_CASE("postgres: a transaction conflicting with another storage's is ABORTED, not torn",
          "[postgres]") {
  const std::string url = NewDatabase();
  std::unique_ptr<PostgresStorage> a = OpenPg(url);
  std::unique_ptr<PostgresStorage> b = OpenPg(url);
  RequireOk(a->CreateJob(MakeJob("job-1"), "").status());
  // a's transaction reads the job; b updates it meanwhile; a's update must not win
  // over b's silently.
  absl::Status status = a->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_ASSIGN_OR_RETURN(StoredJob job, tx.GetJob("job-1"));
    StoredJob other = Unwrap(b->GetJob("job-1"));
    other.job.set_current_round(7);
    REQUIRE(Unwrap(b->UpdateJob(other.job, other.revision)) == 2);
    job.job.set_current_round(3);
    return tx.UpdateJob(job.job, job.revision).status();
  });
  RequireCode(status, absl::StatusCode::kAborted);
  StoredJob job = Unwrap(a->GetJob("job-1"));
  REQUIRE(job.revision == 2);
  REQUIRE(job.job.current_round() == 7);
}

TEST_CASE("postgres: a server restart keeps the data, open storages reconnect", "[postgres]") {
  absl::StatusOr<std::unique_ptr<PostgresTestServer>> started = PostgresTestServer::Start();
  INFO(started.status().ToString());
  REQUIRE(started.ok());
  PostgresTestServer& server = **started;
  const std::string url = Unwrap(server.CreateDatabase("restart"));

  std::unique_ptr<PostgresStorage> storage = OpenPg(url);
  RequireOk(storage->CreateJob(MakeJob("job-1"), "key-1").status());
  for (int i = 0; i < 3; ++i) Unwrap(storage->AppendEvent("job-1", MakeEvent("before")));
  RequireOk(storage->PutCheckpoint("job-1", "round/1", std::string("\x00\xff", 2)));
  std::unique_ptr<PostgresStorage> kept_open = OpenPg(url, 2);
  REQUIRE(Unwrap(kept_open->GetJob("job-1")).revision == 1);
  storage.reset();

  RequireOk(server.Stop());
  // While the server is down: UNAVAILABLE, naming the server, both for a new open and
  // for a call on an open storage.
  RequireCode(PostgresStorage::Open({.url = url, .connect_timeout_s = 2}).status(),
              absl::StatusCode::kUnavailable, absl::StrCat("127.0.0.1:", server.port(), "/restart"));
  RequireCode(kept_open->GetJob("job-1").status(), absl::StatusCode::kUnavailable);
  RequireOk(server.StartAgain());

  // The open storage recovers by itself (its broken connections are replaced).
  REQUIRE(Unwrap(kept_open->GetJob("job-1")).job.id() == "job-1");
  storage = OpenPg(url);
  REQUIRE(Unwrap(storage->SchemaVersion()) == PostgresSchemaMigrations().back().version);
  REQUIRE(Unwrap(storage->ListEvents("job-1", 0, 0)).size() == 3);
  REQUIRE(Unwrap(storage->GetCheckpoint("job-1", "round/1")) == std::string("\x00\xff", 2));
  REQUIRE_FALSE(Unwrap(storage->CreateJob(MakeJob("job-2"), "key-1")).created);
  // The counters continue.
  REQUIRE(Unwrap(storage->AppendEvent("job-1", MakeEvent("after"))) == 4);

  // A restart with the storages open and idle: the next calls just work.
  RequireOk(server.Stop());
  RequireOk(server.StartAgain());
  REQUIRE(Unwrap(storage->AppendEvent("job-1", MakeEvent("after restart"))) == 5);
  REQUIRE(Unwrap(kept_open->ListEvents("job-1", 0, 0)).size() == 5);
  kept_open.reset();
  storage.reset();
}

TEST_CASE("postgres: connection failures are UNAVAILABLE and never show the password",
          "[postgres]") {
  PostgresTestServer& server = SharedServer();
  // Wrong port: refused.
  absl::Status status =
      PostgresStorage::Open({.url = "postgresql://kagent:hunter2@127.0.0.1:1/x"}).status();
  RequireCode(status, absl::StatusCode::kUnavailable, "127.0.0.1:1/x");
  REQUIRE_FALSE(absl::StrContains(status.message(), "hunter2"));
  // A database that does not exist: the server's reason is passed on.
  status = PostgresStorage::Open(
               {.url = absl::StrCat("postgresql://kagent:hunter2@127.0.0.1:", server.port(),
                                    "/no_such_db")})
               .status();
  RequireCode(status, absl::StatusCode::kUnavailable, "no_such_db");
  REQUIRE_FALSE(absl::StrContains(status.message(), "hunter2"));
  // Options.
  const auto invalid = absl::StatusCode::kInvalidArgument;
  RequireCode(PostgresStorage::Open({}).status(), invalid, "empty");
  RequireCode(PostgresStorage::Open({.url = "postgresql://u:hunter2@h:notaport/x%zz"}).status(),
              invalid);
  status = PostgresStorage::Open({.url = "postgresql://u:hunter2@h/x?bogus_option=1"}).status();
  RequireCode(status, invalid);
  REQUIRE_FALSE(absl::StrContains(status.message(), "hunter2"));
  RequireCode(PostgresStorage::Open({.url = server.Url("postgres"), .pool_size = 0}).status(),
              invalid, "pool_size");
  REQUIRE(DescribePostgresUrl("postgresql://u:pw@db.example:6543/kagent?sslmode=require") ==
          "db.example:6543/kagent");
  REQUIRE(DescribePostgresUrl("host=db user=kagent password=pw") == "db:5432/kagent");
}

TEST_CASE("postgres: a database of another application is refused untouched", "[postgres]") {
  const std::string url = NewDatabase();
  const std::string name = url.substr(url.rfind('/') + 1);
  RequireOk(SharedServer().Exec(name, "CREATE TABLE customers (id INT); INSERT INTO customers VALUES (1)"));
  RequireCode(PostgresStorage::Open({.url = url}).status(), absl::StatusCode::kFailedPrecondition,
              "not a kagent database");
  // Nothing was created.
  RequireCode(SharedServer().Exec(name, "SELECT * FROM schema_version"),
              absl::StatusCode::kInternal, "schema_version");
}

TEST_CASE("postgres: concurrent first opens migrate once", "[postgres]") {
  const std::string url = NewDatabase();
  constexpr int kOpeners = 4;
  std::vector<absl::Status> results(kOpeners);
  std::vector<std::thread> threads;
  for (int i = 0; i < kOpeners; ++i) {
    threads.emplace_back([&, i] {
      absl::StatusOr<std::unique_ptr<PostgresStorage>> storage =
          PostgresStorage::Open({.url = url, .pool_size = 1});
      results[i] = storage.status();
    });
  }
  for (std::thread& thread : threads) thread.join();
  for (const absl::Status& status : results) RequireOk(status);
  std::unique_ptr<PostgresStorage> storage = OpenPg(url);
  REQUIRE(Unwrap(storage->SchemaVersion()) == PostgresSchemaMigrations().back().version);
}

TEST_CASE("postgres: a migration failure leaves the database unchanged", "[postgres]") {
  const std::string url = NewDatabase();
  std::vector<PostgresMigration> migrations = PostgresSchemaMigrations();
  migrations.push_back({static_cast<int64_t>(migrations.size()) + 1, "broken",
                        "CREATE TABLE extra (x INT); SELECT no_such_function()"});
  RequireCode(PostgresStorage::Open({.url = url, .migrations = &migrations}).status(),
              absl::StatusCode::kInternal, "broken");
  // Nothing of it (not even migration 1) was applied.
  const std::string name = url.substr(url.rfind('/') + 1);
  RequireCode(SharedServer().Exec(name, "SELECT * FROM jobs"), absl::StatusCode::kInternal);
  std::unique_ptr<PostgresStorage> storage = OpenPg(url);
  REQUIRE(Unwrap(storage->SchemaVersion()) == PostgresSchemaMigrations().back().version);
  RequireCode(SharedServer().Exec(name, "SELECT * FROM extra"), absl::StatusCode::kInternal);
}

TEST_CASE("postgres: calling the storage from inside its transaction body is refused",
          "[postgres]") {
  std::unique_ptr<PostgresStorage> storage = OpenPg(NewDatabase());
  RequireOk(storage->CreateJob(MakeJob("job-1"), "").status());
  absl::Status inner;
  RequireOk(storage->RunInTransaction([&](Storage&) -> absl::Status {
    inner = storage->GetJob("job-1").status();
    return absl::OkStatus();
  }));
  RequireCode(inner, absl::StatusCode::kFailedPrecondition, "RunInTransaction");
  // Other threads' plain calls run beside a transaction (the pool).
  RequireOk(storage->RunInTransaction([&](Storage& tx) -> absl::Status {
    KAGENT_RETURN_IF_ERROR(tx.PutCheckpoint("job-1", "k", "v"));
    absl::Status other;
    std::thread([&] { other = storage->GetJob("job-1").status(); }).join();
    return other;
  }));
}

TEST_CASE("postgres: the test server fails, not skips, without the server binaries",
          "[postgres]") {
  const char* saved = getenv("KAGENT_POSTGRES_BINDIR");
  const std::string previous = saved != nullptr ? saved : "";
  setenv("KAGENT_POSTGRES_BINDIR", "/nonexistent/kagent-test", 1);
  absl::StatusOr<std::unique_ptr<PostgresTestServer>> server = PostgresTestServer::Start();
  if (saved != nullptr) {
    setenv("KAGENT_POSTGRES_BINDIR", previous.c_str(), 1);
  } else {
    unsetenv("KAGENT_POSTGRES_BINDIR");
  }
  RequireCode(server.status(), absl::StatusCode::kFailedPrecondition, "scripts/setup.sh");
}

TEST_CASE("postgres: OpenStorage opens PostgreSQL from a URL", "[postgres]") {
  const std::string url = NewDatabase();
  for (const std::string& form : {url, "postgres" + url.substr(std::string("postgresql").size())}) {
    std::unique_ptr<Storage> storage = Unwrap(OpenStorage(form));
    REQUIRE(Unwrap(storage->SchemaVersion()) >= 1);
  }
}

}  // namespace
}  // namespace kagent

// --- Leader leases and the fence (coordinator high availability) ---------------------

namespace kagent {
namespace {

TEST_CASE("postgres: a lease is taken when free, renewed by its holder, refused to others",
          "[postgres][lease]") {
  std::unique_ptr<PostgresStorage> a = OpenPg(NewDatabase());
  RequireCode(a->GetLease("coordinator").status(), absl::StatusCode::kNotFound, "never taken");
  LeaderLease first = Unwrap(a->AcquireLease("coordinator", "r1", "10.0.0.1:50051", absl::Seconds(30)));
  REQUIRE(first.holder == "r1");
  REQUIRE(first.address == "10.0.0.1:50051");
  REQUIRE(first.term == 1);
  REQUIRE(first.remaining > absl::Seconds(25));
  // Another replica sees r1's lease, unchanged.
  LeaderLease other = Unwrap(a->AcquireLease("coordinator", "r2", "10.0.0.2:50051", absl::Seconds(30)));
  REQUIRE(other.holder == "r1");
  REQUIRE(other.term == 1);
  REQUIRE(other.address == "10.0.0.1:50051");
  // Renewing keeps the term.
  REQUIRE(Unwrap(a->AcquireLease("coordinator", "r1", "10.0.0.1:50051", absl::Seconds(30))).term == 1);
  RequireOk(a->CheckLease("coordinator", "r1", 1));
  RequireCode(a->CheckLease("coordinator", "r2", 1), absl::StatusCode::kFailedPrecondition,
              "held by r1 at term 1");
  RequireCode(a->CheckLease("coordinator", "r1", 2), absl::StatusCode::kFailedPrecondition,
              "fenced");
  // Bad arguments name the field.
  RequireCode(a->AcquireLease("coordinator", "", "x:1", absl::Seconds(30)).status(),
              absl::StatusCode::kInvalidArgument, "lease holder");
  RequireCode(a->AcquireLease("coordinator", "r1", "x:1", absl::Milliseconds(10)).status(),
              absl::StatusCode::kInvalidArgument, "lease ttl");
  RequireCode(a->CheckLease("coordinator", "r1", 0), absl::StatusCode::kInvalidArgument, "term");
}

TEST_CASE("postgres: an expired or released lease goes to the next replica at a new term",
          "[postgres][lease]") {
  std::unique_ptr<PostgresStorage> a = OpenPg(NewDatabase());
  REQUIRE(Unwrap(a->AcquireLease("coordinator", "r1", "h1:1", absl::Seconds(1))).term == 1);
  std::this_thread::sleep_for(std::chrono::milliseconds(1300));
  RequireCode(a->CheckLease("coordinator", "r1", 1), absl::StatusCode::kFailedPrecondition,
              "expired");
  LeaderLease taken = Unwrap(a->AcquireLease("coordinator", "r2", "h2:1", absl::Seconds(30)));
  REQUIRE(taken.holder == "r2");
  REQUIRE(taken.term == 2);
  // r1 coming back finds r2's lease; its old term stays fenced.
  REQUIRE(Unwrap(a->AcquireLease("coordinator", "r1", "h1:1", absl::Seconds(30))).holder == "r2");
  RequireCode(a->CheckLease("coordinator", "r1", 1), absl::StatusCode::kFailedPrecondition,
              "held by r2 at term 2");
  // A release by a stale term changes nothing; the holder's frees it at once.
  RequireOk(a->ReleaseLease("coordinator", "r1", 1));
  REQUIRE(Unwrap(a->GetLease("coordinator")).remaining > absl::Seconds(20));
  RequireOk(a->ReleaseLease("coordinator", "r2", 2));
  REQUIRE(Unwrap(a->GetLease("coordinator")).remaining <= absl::ZeroDuration());
  LeaderLease third = Unwrap(a->AcquireLease("coordinator", "r3", "h3:1", absl::Seconds(30)));
  REQUIRE(third.holder == "r3");
  REQUIRE(third.term == 3);
}

TEST_CASE("postgres: fenced writes commit only under the lease they checked",
          "[postgres][lease]") {
  const std::string url = NewDatabase();
  std::unique_ptr<PostgresStorage> a = OpenPg(url);
  std::unique_ptr<PostgresStorage> b = OpenPg(url);
  REQUIRE(Unwrap(a->AcquireLease("coordinator", "r1", "h1:1", absl::Seconds(1))).term == 1);
  FencedStorage leader(a.get(), [](Storage& tx) { return tx.CheckLease("coordinator", "r1", 1); });
  RequireOk(leader.CreateJob(MakeJob("job-1"), "").status());
  RequireOk(leader.AppendEvent("job-1", MakeEvent("first")).status());

  // r1 is inside a fenced transaction when its lease runs out and r2 tries to take it:
  // r2 waits for the transaction, whose write commits under term 1; only then does
  // term 2 begin.
  std::atomic<bool> in_body{false};
  std::atomic<int64_t> commit_done_ms{0};
  std::atomic<int64_t> taken_ms{0};
  const absl::Time start = absl::Now();
  std::thread taker([&] {
    while (!in_body.load()) std::this_thread::sleep_for(std::chrono::milliseconds(5));
    std::this_thread::sleep_for(std::chrono::milliseconds(1200));  // past the ttl
    LeaderLease l = Unwrap(b->AcquireLease("coordinator", "r2", "h2:1", absl::Seconds(30)));
    taken_ms = absl::ToInt64Milliseconds(absl::Now() - start);
    REQUIRE(l.holder == "r2");
    REQUIRE(l.term == 2);
  });
  RequireOk(leader.RunInTransaction([&](Storage& tx) -> absl::Status {
    in_body = true;
    std::this_thread::sleep_for(std::chrono::milliseconds(2000));
    return tx.AppendEvent("job-1", MakeEvent("in the fenced transaction")).status();
  }));
  commit_done_ms = absl::ToInt64Milliseconds(absl::Now() - start);
  taker.join();
  INFO("commit at " << commit_done_ms << " ms, taken at " << taken_ms << " ms");
  REQUIRE(taken_ms.load() >= commit_done_ms.load() - 50);

  // After the takeover every fenced write of r1 fails and writes nothing.
  RequireCode(leader.AppendEvent("job-1", MakeEvent("too late")).status(),
              absl::StatusCode::kFailedPrecondition, "held by r2 at term 2");
  RequireCode(leader.PutCheckpoint("job-1", "round", "x"), absl::StatusCode::kFailedPrecondition,
              "fenced");
  StoredJob job = Unwrap(leader.GetJob("job-1"));  // reads still work
  job.job.set_current_round(5);
  RequireCode(leader.UpdateJob(job.job, job.revision).status(),
              absl::StatusCode::kFailedPrecondition, "fenced");
  RequireCode(leader.RunInTransaction([](Storage&) { return absl::OkStatus(); }),
              absl::StatusCode::kFailedPrecondition, "fenced");
  std::vector<v1::JobEvent> events = Unwrap(b->ListEvents("job-1", 0, 0));
  REQUIRE(events.size() == 2);
  REQUIRE(events[1].message() == "in the fenced transaction");
  REQUIRE(Unwrap(b->GetJob("job-1")).revision == 1);
  // A write whose own status fails returns that status (not the fence's).
  FencedStorage r2(b.get(), [](Storage& tx) { return tx.CheckLease("coordinator", "r2", 2); });
  RequireCode(r2.AppendEvent("no-such-job", MakeEvent("x")).status(),
              absl::StatusCode::kNotFound);
}

TEST_CASE("sqlite-backed storages refuse leases: one coordinator per SQLite database",
          "[postgres][lease]") {
  std::unique_ptr<Storage> sqlite = Unwrap(OpenStorage("sqlite::memory:"));
  RequireCode(sqlite->AcquireLease("coordinator", "r1", "h:1", absl::Seconds(10)).status(),
              absl::StatusCode::kFailedPrecondition, "need PostgreSQL");
  RequireCode(sqlite->CheckLease("coordinator", "r1", 1), absl::StatusCode::kFailedPrecondition,
              "one coordinator");
}

}  // namespace
}  // namespace kagent
