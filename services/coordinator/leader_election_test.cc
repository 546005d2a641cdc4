// LeaderElector against a real PostgreSQL server (common/storage/testing/): one leader
// at a time, takeover after a release or an expiry, the fence, and stepping down when
// the database cannot be reached.
#include "services/coordinator/leader_election.h"

#include <catch2/catch.hpp>

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/storage/fenced_storage.h"
#include "common/storage/postgres_storage.h"
#include "common/storage/testing/postgres_test_server.h"

namespace kagent {
namespace {

using testing::PostgresTestServer;

const bool kQuietLogs = [] {
  SetLogLevel(LogLevel::kWarning);
  return true;
}();

std::unique_ptr<PostgresTestServer> StartServer() {
  absl::StatusOr<std::unique_ptr<PostgresTestServer>> server = PostgresTestServer::Start();
  INFO(server.status().ToString());
  REQUIRE(server.ok());
  return *std::move(server);
}

std::unique_ptr<PostgresStorage> Open(PostgresTestServer& server, const std::string& db) {
  absl::StatusOr<std::unique_ptr<PostgresStorage>> storage =
      PostgresStorage::Open({.url = server.Url(db), .connect_timeout_s = 2, .lock_timeout_ms = 2000});
  INFO(storage.status().ToString());
  REQUIRE(storage.ok());
  return *std::move(storage);
}

LeaderElectionOptions Options(const std::string& holder) {
  LeaderElectionOptions o;
  o.holder = holder;
  o.address = holder + ":50051";
  o.ttl = absl::Seconds(3);
  o.retry_interval = absl::Milliseconds(200);
  return o;
}

// Waits up to `timeout` for `done`.
template <typename Fn>
bool WaitFor(Fn done, absl::Duration timeout) {
  const absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    if (done()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return done();
}

struct Replica {
  std::unique_ptr<LeaderElector> elector;
  std::atomic<int64_t> elected_term{0};
  std::atomic<bool> lost{false};
  std::string lost_reason;

  Replica(const std::string& holder, Storage* storage)
      : elector(std::make_unique<LeaderElector>(Options(holder), storage, nullptr)) {}
  void Start() {
    elector->Start([this](int64_t term) { elected_term = term; },
                   [this](const std::string& reason) {
                     lost_reason = reason;
                     lost = true;
                   });
  }
};

TEST_CASE("leader election: one leader; a follower takes over when it stops or goes silent",
          "[postgres][leader]") {
  std::unique_ptr<PostgresTestServer> server = StartServer();
  REQUIRE(server->CreateDatabase("ha").ok());
  std::unique_ptr<PostgresStorage> sa = Open(*server, "ha");
  std::unique_ptr<PostgresStorage> sb = Open(*server, "ha");

  Replica a("replica-a", sa.get());
  a.Start();
  REQUIRE(WaitFor([&] { return a.elector->IsLeader(); }, absl::Seconds(5)));
  REQUIRE(a.elected_term == 1);
  Replica b("replica-b", sb.get());
  b.Start();
  // b follows and knows where the leader is; it never wins while a renews.
  REQUIRE(WaitFor([&] { return b.elector->LeaderAddress() == "replica-a:50051"; },
                  absl::Seconds(5)));
  std::this_thread::sleep_for(std::chrono::seconds(4));  // longer than the ttl
  REQUIRE(a.elector->IsLeader());
  REQUIRE_FALSE(b.elector->IsLeader());
  REQUIRE_FALSE(a.lost);

  // The fence: a's writes pass, b's are refused.
  FencedStorage wa(sa.get(), [&](Storage& tx) { return a.elector->CheckFence(tx); });
  FencedStorage wb(sb.get(), [&](Storage& tx) { return b.elector->CheckFence(tx); });
  v1::Job job;
  job.set_id("job-1");
  job.set_tenant("t");
  job.set_state(v1::JOB_STATE_QUEUED);
  REQUIRE(wa.CreateJob(job, "").ok());
  job.set_id("job-2");
  absl::Status refused = wb.CreateJob(job, "").status();
  REQUIRE(refused.code() == absl::StatusCode::kFailedPrecondition);
  REQUIRE(absl::StrContains(refused.message(), "not the leader"));

  // A stopping leader releases the lease: b takes over at the next attempt, at term 2.
  const absl::Time stopped = absl::Now();
  a.elector->Stop();
  REQUIRE(WaitFor([&] { return b.elector->IsLeader(); }, absl::Seconds(2)));
  INFO("takeover after a release: " << absl::FormatDuration(absl::Now() - stopped));
  REQUIRE(b.elected_term == 2);
  REQUIRE_FALSE(a.lost);  // Stop() is not a loss
  REQUIRE(wb.CreateJob(job, "").ok());
  absl::Status stale = wa.PutCheckpoint("job-1", "k", "v");
  REQUIRE(stale.code() == absl::StatusCode::kFailedPrecondition);

  // Silence: the database stops answering b. b steps down (on_lost) within 0.8 ttl
  // plus a renewal, before the lease can expire; a new replica then takes over once
  // the server is back and the lease has expired.
  REQUIRE(server->Stop().ok());
  const absl::Time cut = absl::Now();
  REQUIRE(WaitFor([&] { return b.lost.load(); }, absl::Seconds(6)));
  const absl::Duration step_down = absl::Now() - cut;
  INFO("stepped down after " << absl::FormatDuration(step_down) << ": " << b.lost_reason);
  REQUIRE(step_down < absl::Seconds(3));  // the ttl
  REQUIRE_FALSE(b.elector->IsLeader());
  REQUIRE(absl::StrContains(b.lost_reason, "no lease renewal succeeded"));
  REQUIRE(server->StartAgain().ok());
  std::unique_ptr<PostgresStorage> sc = Open(*server, "ha");
  Replica c("replica-c", sc.get());
  c.Start();
  REQUIRE(WaitFor([&] { return c.elector->IsLeader(); }, absl::Seconds(8)));
  REQUIRE(c.elected_term == 3);
  // b's writes stay fenced for good: it led term 2 only.
  REQUIRE(wb.PutCheckpoint("job-2", "k", "v").code() == absl::StatusCode::kFailedPrecondition);
  c.elector->Stop();
  b.elector->Stop();
}

TEST_CASE("leader election: a renewal that finds another holder ends leading at once",
          "[postgres][leader]") {
  std::unique_ptr<PostgresTestServer> server = StartServer();
  REQUIRE(server->CreateDatabase("ha").ok());
  std::unique_ptr<PostgresStorage> sa = Open(*server, "ha");
  Replica a("replica-a", sa.get());
  a.Start();
  REQUIRE(WaitFor([&] { return a.elector->IsLeader(); }, absl::Seconds(5)));
  // Someone rewrites the lease behind a's back (an operator, a clock-skewed database).
  REQUIRE(server->Exec("ha", "UPDATE leases SET holder = 'intruder', term = term + 1").ok());
  REQUIRE(WaitFor([&] { return a.lost.load(); }, absl::Seconds(3)));
  REQUIRE(absl::StrContains(a.lost_reason, "held by intruder"));
  REQUIRE_FALSE(a.elector->IsLeader());
  a.elector->Stop();
}

TEST_CASE("leader election: options are checked", "[leader]") {
  LeaderElectionOptions o = Options("r");
  REQUIRE(o.Validate().ok());
  o.address.clear();
  REQUIRE(absl::StrContains(o.Validate().message(), "--advertise"));
  o = Options("r");
  o.renew_interval = absl::Seconds(3);
  REQUIRE(o.Validate().code() == absl::StatusCode::kInvalidArgument);
  REQUIRE(absl::StrContains(UniqueHolderId(), "-"));
  REQUIRE(UniqueHolderId() != UniqueHolderId());
}

}  // namespace
}  // namespace kagent
