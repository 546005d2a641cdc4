// LeaderElector: one coordinator replica leads at a time, by a lease in PostgreSQL.
//
// Every replica campaigns for the lease "coordinator" (Storage::AcquireLease; expiry by
// the database's clock). The holder is the leader: it runs the jobs (JobManager resumes
// every unfinished one when it is elected) and the GPU scheduler. The others are
// followers: they answer reads and watches from the shared database and forward writes
// to the leader at the address the lease names (services/coordinator/job_service.h).
//
//   campaign: every `retry_interval` a follower tries to take the lease; it wins once
//             the lease is free (never taken, released, or expired: its holder stopped
//             renewing for `ttl`).
//   lead:     the leader renews every `renew_interval` (ttl / 3 by default). Leading
//             ends, and `on_lost` runs once, when a renewal finds another holder or when
//             no renewal has succeeded for `step_down_after` (0.8 ttl by default: before
//             the lease can expire in the database, so this replica gives up before
//             another one can take over, even when the database is unreachable).
//   fence:    every write of the leader runs in a transaction that first checks the
//             lease is still this replica's at its term (CheckFence, through
//             common/storage/fenced_storage.h), so a leader paused past its lease (GC,
//             a stopped VM, a network cut) cannot write after a successor began.
//
// Stop() ends the campaign; a leader releases its lease so a follower takes over at
// the next attempt instead of after `ttl`.
//
// Thread-safety: safe for concurrent use. The callbacks run on the campaign thread (or,
// for on_lost after a missed renewal, the watchdog thread), never under a lock of this
// class.
#ifndef KAGENT_SERVICES_COORDINATOR_LEADER_ELECTION_H_
#define KAGENT_SERVICES_COORDINATOR_LEADER_ELECTION_H_

#include <atomic>
#include <chrono>
#include <functional>
#include <string>
#include <thread>

#include "absl/base/thread_annotations.h"
#include "absl/status/status.h"
#include "absl/synchronization/mutex.h"
#include "absl/synchronization/notification.h"
#include "absl/time/time.h"
#include "common/storage/storage.h"
#include "prometheus/counter.h"
#include "prometheus/gauge.h"
#include "prometheus/registry.h"

namespace kagent {

inline constexpr char kCoordinatorLease[] = "coordinator";

// What the job API needs to know about this replica's role.
class LeaderRole {
 public:
  virtual ~LeaderRole() = default;
  // Whether this replica leads now.
  virtual bool IsLeader() const = 0;
  // Where the leader serves, as last read from the lease (host:port); empty when no
  // replica holds it.
  virtual std::string LeaderAddress() const = 0;
};

struct LeaderElectionOptions {
  std::string lease_name = kCoordinatorLease;
  // Unique per process start (UniqueHolderId()).
  std::string holder{};
  // Where this replica serves the job API for the other replicas (host:port).
  std::string address{};
  absl::Duration ttl = absl::Seconds(15);
  absl::Duration renew_interval = absl::ZeroDuration();    // 0: ttl / 3
  absl::Duration step_down_after = absl::ZeroDuration();   // 0: 0.8 * ttl
  absl::Duration retry_interval = absl::Seconds(2);

  // INVALID_ARGUMENT unless holder and address are set, ttl is in the storage bounds and
  // renew_interval < step_down_after < ttl.
  absl::Status Validate() const;
};

// "<hostname>-<pid>-<8 random hex digits>".
std::string UniqueHolderId();

class LeaderElector final : public LeaderRole {
 public:
  // `storage` (unfenced) and `registry` (may be null) are borrowed.
  LeaderElector(LeaderElectionOptions options, Storage* storage,
                prometheus::Registry* registry);
  ~LeaderElector() override;  // Stop()

  // Starts campaigning. `on_elected(term)` runs when this replica wins (once: a replica
  // leads at most one term); `on_lost(reason)` runs once when it stops leading for any
  // reason but Stop(). Call once.
  void Start(std::function<void(int64_t term)> on_elected,
             std::function<void(const std::string& reason)> on_lost);

  // Stops campaigning and, when leading, releases the lease. Idempotent.
  void Stop();

  bool IsLeader() const override;
  std::string LeaderAddress() const override;
  // The term this replica leads at; 0 when it does not lead.
  int64_t term() const;

  // The fence for FencedStorage: CheckLease on `transaction` at this replica's term
  // while it leads; FAILED_PRECONDITION "not the leader" when it does not.
  absl::Status CheckFence(Storage& transaction) const;

  const LeaderElectionOptions& options() const { return options_; }

 private:
  void Campaign();
  void Watchdog();
  // Ends leading (once) and runs on_lost outside the lock.
  void Lose(const std::string& reason);
  void Sleep(absl::Duration d);

  const LeaderElectionOptions options_;
  Storage* const storage_;
  std::function<void(int64_t)> on_elected_;
  std::function<void(const std::string&)> on_lost_;

  mutable absl::Mutex mu_;
  bool leader_ ABSL_GUARDED_BY(mu_) = false;
  bool ended_ ABSL_GUARDED_BY(mu_) = false;   // led once and lost: campaign over
  int64_t term_ ABSL_GUARDED_BY(mu_) = 0;
  std::string leader_address_ ABSL_GUARDED_BY(mu_);
  // When the last successful renewal was sent.
  std::chrono::steady_clock::time_point last_renewal_sent_ ABSL_GUARDED_BY(mu_){};
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::thread campaign_;
  std::thread watchdog_;

  prometheus::Gauge* is_leader_ = nullptr;
  prometheus::Gauge* term_gauge_ = nullptr;
  prometheus::Counter* elections_won_ = nullptr;
  prometheus::Counter* renew_failures_ = nullptr;
};

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_LEADER_ELECTION_H_
