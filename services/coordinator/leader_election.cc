#include "services/coordinator/leader_election.h"

#include <unistd.h>

#include <random>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/logging.h"

namespace kagent {
namespace {

absl::Duration Since(std::chrono::steady_clock::time_point t) {
  return absl::FromChrono(std::chrono::steady_clock::now() - t);
}

}  // namespace

absl::Status LeaderElectionOptions::Validate() const {
  if (holder.empty()) return absl::InvalidArgumentError("leader election: holder is empty");
  if (address.empty()) {
    return absl::InvalidArgumentError(
        "leader election needs the address the other replicas reach this one at "
        "(--advertise host:port)");
  }
  if (ttl < kMinLeaseTtl || ttl > kMaxLeaseTtl) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--leader-lease-seconds is ", absl::FormatDuration(ttl), "; it must be in [",
        absl::FormatDuration(kMinLeaseTtl), ", ", absl::FormatDuration(kMaxLeaseTtl), "]"));
  }
  const absl::Duration renew = renew_interval > absl::ZeroDuration() ? renew_interval : ttl / 3;
  const absl::Duration down = step_down_after > absl::ZeroDuration() ? step_down_after : ttl * 0.8;
  if (!(renew < down && down < ttl)) {
    return absl::InvalidArgumentError(
        "leader election: the renewal interval must be below the step-down time, and that "
        "below the lease's ttl");
  }
  if (retry_interval <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError("leader election: the retry interval must be positive");
  }
  return absl::OkStatus();
}

std::string UniqueHolderId() {
  char host[256] = {0};
  gethostname(host, sizeof(host) - 1);
  std::random_device random;
  return absl::StrFormat("%s-%d-%08x", host[0] != '\0' ? host : "coordinator",
                         static_cast<int>(getpid()), random());
}

LeaderElector::LeaderElector(LeaderElectionOptions options, Storage* storage,
                             prometheus::Registry* registry)
    : options_(std::move(options)), storage_(storage) {
  if (registry != nullptr) {
    is_leader_ = &prometheus::BuildGauge()
                      .Name("kagent_coordinator_leader")
                      .Help("1 while this coordinator replica holds the leader lease, else 0")
                      .Register(*registry)
                      .Add({});
    term_gauge_ = &prometheus::BuildGauge()
                       .Name("kagent_coordinator_leader_term")
                       .Help("the lease term this replica leads at; 0 while it follows")
                       .Register(*registry)
                       .Add({});
    elections_won_ = &prometheus::BuildCounter()
                          .Name("kagent_coordinator_elections_won_total")
                          .Help("times this replica took the leader lease")
                          .Register(*registry)
                          .Add({});
    renew_failures_ = &prometheus::BuildCounter()
                           .Name("kagent_coordinator_lease_renew_failures_total")
                           .Help("lease renewals or attempts that failed (database errors)")
                           .Register(*registry)
                           .Add({});
  }
}

LeaderElector::~LeaderElector() { Stop(); }

void LeaderElector::Start(std::function<void(int64_t)> on_elected,
                          std::function<void(const std::string&)> on_lost) {
  on_elected_ = std::move(on_elected);
  on_lost_ = std::move(on_lost);
  KLOG(INFO) << "leader election: campaigning for lease '" << options_.lease_name << "' as "
             << options_.holder << " (serving at " << options_.address << ", ttl "
             << absl::FormatDuration(options_.ttl) << ")";
  campaign_ = std::thread([this] { Campaign(); });
  watchdog_ = std::thread([this] { Watchdog(); });
}

void LeaderElector::Stop() {
  int64_t term = 0;
  {
    absl::MutexLock lock(&mu_);
    if (stopping_) return;
    stopping_ = true;
    if (leader_) term = term_;
    leader_ = false;
  }
  if (campaign_.joinable()) campaign_.join();
  if (watchdog_.joinable()) watchdog_.join();
  if (term > 0) {
    absl::Status released = storage_->ReleaseLease(options_.lease_name, options_.holder, term);
    if (released.ok()) {
      KLOG(INFO) << "leader election: released lease '" << options_.lease_name << "' (term "
                 << term << ")";
    } else {
      KLOG(WARNING) << "leader election: could not release the lease (it expires in "
                    << absl::FormatDuration(options_.ttl) << "): " << released;
    }
  }
  if (is_leader_ != nullptr) is_leader_->Set(0);
  if (term_gauge_ != nullptr) term_gauge_->Set(0);
}

bool LeaderElector::IsLeader() const {
  absl::MutexLock lock(&mu_);
  return leader_;
}

std::string LeaderElector::LeaderAddress() const {
  absl::MutexLock lock(&mu_);
  return leader_address_;
}

int64_t LeaderElector::term() const {
  absl::MutexLock lock(&mu_);
  return leader_ ? term_ : 0;
}

absl::Status LeaderElector::CheckFence(Storage& transaction) const {
  int64_t term = 0;
  {
    absl::MutexLock lock(&mu_);
    if (leader_) term = term_;
  }
  if (term == 0) {
    return absl::FailedPreconditionError(
        "fenced: this coordinator replica is not the leader; its writes are refused");
  }
  return transaction.CheckLease(options_.lease_name, options_.holder, term);
}

void LeaderElector::Sleep(absl::Duration d) {
  absl::MutexLock lock(&mu_);
  mu_.AwaitWithTimeout(absl::Condition(&stopping_), d);
}

void LeaderElector::Lose(const std::string& reason) {
  int64_t term = 0;
  {
    absl::MutexLock lock(&mu_);
    if (!leader_ || stopping_) return;
    term = term_;
    leader_ = false;
    ended_ = true;
    leader_address_.clear();
  }
  if (is_leader_ != nullptr) is_leader_->Set(0);
  if (term_gauge_ != nullptr) term_gauge_->Set(0);
  KLOG(ERROR) << "leader election: no longer the leader (term " << term << "): " << reason;
  if (on_lost_) on_lost_(reason);
}

void LeaderElector::Campaign() {
  const absl::Duration renew =
      options_.renew_interval > absl::ZeroDuration() ? options_.renew_interval : options_.ttl / 3;
  std::string last_error;
  while (true) {
    bool leading;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ || ended_) return;
      leading = leader_;
    }
    const auto sent = std::chrono::steady_clock::now();
    absl::StatusOr<LeaderLease> lease = storage_->AcquireLease(
        options_.lease_name, options_.holder, options_.address, options_.ttl);
    bool elected = false;
    int64_t term = 0;
    std::string lost;
    if (!lease.ok()) {
      if (renew_failures_ != nullptr) renew_failures_->Increment();
      if (lease.status().ToString() != last_error) {
        last_error = lease.status().ToString();
        KLOG(WARNING) << "leader election: " << (leading ? "renewing" : "taking")
                      << " the lease failed: " << lease.status();
      }
    } else {
      last_error.clear();
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      if (lease->holder == options_.holder) {
        if (!leader_) {
          leader_ = true;
          term_ = lease->term;
          elected = true;
        } else if (lease->term != term_) {
          lost = absl::StrCat("the lease's term moved from ", term_, " to ", lease->term,
                              " while this replica held it");
        }
        term = term_;
        last_renewal_sent_ = sent;
        leader_address_ = options_.address;
      } else {
        if (leader_) {
          lost = absl::StrCat("the lease is held by ", lease->holder, " at term ", lease->term);
        }
        leader_address_ = lease->remaining > absl::ZeroDuration() ? lease->address : "";
      }
    }
    if (!lost.empty()) {
      Lose(lost);
      return;
    }
    if (elected) {
      if (is_leader_ != nullptr) is_leader_->Set(1);
      if (term_gauge_ != nullptr) term_gauge_->Set(static_cast<double>(term));
      if (elections_won_ != nullptr) elections_won_->Increment();
      KLOG(INFO) << "leader election: this replica (" << options_.holder
                 << ") leads at term " << term;
      if (on_elected_) on_elected_(term);
    }
    Sleep(IsLeader() ? renew : options_.retry_interval);
  }
}

void LeaderElector::Watchdog() {
  const absl::Duration down = options_.step_down_after > absl::ZeroDuration()
                                  ? options_.step_down_after
                                  : options_.ttl * 0.8;
  while (true) {
    absl::Duration silent;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_ || ended_) return;
      silent = leader_ ? Since(last_renewal_sent_) : absl::ZeroDuration();
    }
    if (silent > down) {
      Lose(absl::StrCat("no lease renewal succeeded for ", absl::FormatDuration(silent),
                        " (the database is unreachable or too slow); stepping down before "
                        "the lease can expire"));
      return;
    }
    Sleep(absl::Milliseconds(100));
  }
}

}  // namespace kagent
