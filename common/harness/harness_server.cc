#include "common/harness/harness_server.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstring>

#include "absl/strings/str_cat.h"
#include "common/logging.h"
#include "common/status.h"
#include "common/harness/protocol.h"

namespace kagent {
namespace {

constexpr char kPing[] = "{\"op\":\"ping\"}\n";
constexpr absl::Duration kPingTimeout = absl::Seconds(10);
constexpr absl::Duration kRetryPause = absl::Milliseconds(100);
// A run at least this long resets the restart backoff.
constexpr absl::Duration kStableRun = absl::Seconds(60);

std::string Tail(const std::string& s, size_t n) {
  return s.size() <= n ? s : "..." + s.substr(s.size() - n);
}

std::string Head(const std::string& s, size_t n) {
  return s.size() <= n ? s : s.substr(0, n) + "...";
}

bool IsTrue(const nlohmann::json& j, const char* key) {
  return j.is_object() && j.contains(key) && j[key].is_boolean() && j[key].get<bool>();
}

class FdCloser {
 public:
  explicit FdCloser(int fd) : fd_(fd) {}
  ~FdCloser() {
    if (fd_ >= 0) close(fd_);
  }
  FdCloser(const FdCloser&) = delete;
  FdCloser& operator=(const FdCloser&) = delete;

 private:
  int fd_;
};

// Waits until `fd` has one of `events` (or an error or hang-up, which the next read or
// write reports), `deadline` passes (DEADLINE_EXCEEDED) or `cancel` fires (CANCELLED).
absl::Status WaitFd(int fd, short events, absl::Time deadline, const CancelToken* cancel) {
  while (true) {
    if (cancel != nullptr && cancel->cancelled()) return absl::CancelledError("cancelled");
    absl::Duration left = deadline - absl::Now();
    if (left <= absl::ZeroDuration()) return absl::DeadlineExceededError("no answer by the deadline");
    pollfd fds[2] = {{fd, events, 0}, {-1, POLLIN, 0}};
    nfds_t n = 1;
    if (cancel != nullptr && cancel->wait_fd() >= 0) {
      fds[1].fd = cancel->wait_fd();
      n = 2;
    } else if (cancel != nullptr) {
      left = std::min(left, absl::Milliseconds(50));  // no pipe: poll the flag
    }
    int ms = static_cast<int>(std::min<int64_t>(
        std::max<int64_t>(1, std::ceil(absl::ToDoubleMilliseconds(left))), 60000));
    int r = poll(fds, n, ms);
    if (r < 0 && errno == EINTR) continue;
    if (r < 0) return absl::UnavailableError(absl::StrCat("poll: ", std::strerror(errno)));
    if (fds[0].revents != 0) return absl::OkStatus();
  }
}

}  // namespace

HarnessServer::HarnessServer(HarnessServerOptions options, prometheus::Registry* registry)
    : options_(std::move(options)) {
  if (registry != nullptr) {
    auto* restarts = &prometheus::BuildCounter()
                          .Name("kagent_harness_server_restarts_total")
                          .Help("Times the worker's harness server was started again after it "
                                "ended or failed to start.")
                          .Register(*registry);
    restarts_counter_ = &restarts->Add({{"worker", options_.worker_id}});
  }
}

HarnessServer::~HarnessServer() { Shutdown(); }

std::vector<std::string> HarnessServer::Argv() const {
  std::vector<std::string> argv = HarnessArgv(
      options_.python, "serve",
      {"--socket", socket_path_, "--device", options_.device, "--pool",
       std::to_string(options_.pool), "--prepared-max", std::to_string(options_.prepared_max)});
  if (options_.cache_mb > 0) {
    argv.push_back("--cache-mb");
    argv.push_back(std::to_string(options_.cache_mb));
  }
  if (!options_.sandbox.empty()) argv.push_back("--sandbox=" + options_.sandbox);
  for (const std::string& p : options_.sandbox_hide) {
    argv.push_back("--sandbox-hide");
    argv.push_back(p);
  }
  return argv;
}

absl::Status HarnessServer::Start() {
  absl::MutexLock lock(&mu_);
  if (started_ || stopping_) return absl::OkStatus();
  KAGENT_ASSIGN_OR_RETURN(dir_, ScopedTempDir::Create("kagent-harness-server-"));
  socket_path_ = dir_->path() + "/harness.sock";
  if (socket_path_.size() >= sizeof(sockaddr_un{}.sun_path)) {
    // $TMPDIR is too deep for a socket address: /tmp is not.
    KAGENT_ASSIGN_OR_RETURN(dir_, ScopedTempDir::Create("kagent-harness-server-", "/tmp"));
    socket_path_ = dir_->path() + "/harness.sock";
  }
  started_ = true;
  supervisor_ = std::thread([this] { Supervise(); });
  return absl::OkStatus();
}

void HarnessServer::Shutdown() {
  {
    absl::MutexLock lock(&mu_);
    stopping_ = true;
    if (run_cancel_ != nullptr) run_cancel_->Cancel();
  }
  absl::MutexLock join(&join_mu_);
  if (supervisor_.joinable()) supervisor_.join();
}

bool HarnessServer::ready() const {
  absl::MutexLock lock(&mu_);
  return ready_;
}

int64_t HarnessServer::restarts() const {
  absl::MutexLock lock(&mu_);
  return restarts_;
}

void HarnessServer::Supervise() {
  absl::Duration backoff = options_.restart_backoff_min;
  while (true) {
    CancelToken run_cancel;
    int64_t generation;
    {
      absl::MutexLock lock(&mu_);
      if (stopping_) return;
      generation = ++generation_;
      ready_ = false;
      run_cancel_ = &run_cancel;
    }
    unlink(socket_path_.c_str());  // a socket left by a killed process
    SubprocessOptions so;
    so.argv = Argv();
    so.inherit_env = true;
    so.env = HarnessEnvironment(options_.harness_dir, options_.device,
                                options_.cuda_visible_devices, options_.cupti_lib);
    so.cancel = &run_cancel;
    so.kill_grace = options_.stop_grace;
    so.max_output_bytes = 256 << 10;
    absl::Time started = absl::Now();
    std::thread prober([this, generation, &run_cancel] { Probe(generation, &run_cancel); });
    absl::StatusOr<SubprocessResult> r = RunSubprocess(so);
    std::string why = r.ok() ? absl::StrCat(r->Describe(), ", stderr: ", Tail(r->stderr_data, 2000))
                             : absl::StrCat("could not start: ", r.status().ToString());
    bool stopping;
    {
      absl::MutexLock lock(&mu_);
      ended_generation_ = generation;
      if (generation == 1) first_exit_ = why;
      if (!ready_) ++failed_starts_;
      ready_ = false;
      run_cancel_ = nullptr;
      last_exit_ = why;
      stopping = stopping_;
    }
    prober.join();
    if (stopping) {
      KLOG(INFO).With("worker", options_.worker_id) << "harness server stopped ("
                                                     << (r.ok() ? r->Describe() : why) << ")";
      return;
    }
    if (absl::Now() - started >= kStableRun) backoff = options_.restart_backoff_min;
    KLOG(WARNING).With("worker", options_.worker_id)
        << "harness server ended after " << absl::FormatDuration(absl::Now() - started) << " ("
        << why << "); starting it again in " << absl::FormatDuration(backoff);
    absl::MutexLock lock(&mu_);
    ++restarts_;
    if (restarts_counter_ != nullptr) restarts_counter_->Increment();
    mu_.AwaitWithTimeout(absl::Condition(&stopping_), backoff);
    backoff = std::min(backoff * 2, options_.restart_backoff_max);
  }
}

void HarnessServer::Probe(int64_t generation, CancelToken* run_cancel) {
  absl::Time start = absl::Now();
  absl::Time deadline = start + options_.start_timeout;
  auto done = [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return stopping_ || ended_generation_ >= generation;
  };
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (done()) return;
    }
    absl::Time now = absl::Now();
    if (now >= deadline) {
      KLOG(ERROR).With("worker", options_.worker_id)
          << "harness server did not answer a ping within "
          << absl::FormatDuration(options_.start_timeout) << " of its start: killing it";
      run_cancel->Cancel();
      return;
    }
    bool connected = false;
    absl::StatusOr<nlohmann::json> pong =
        Exchange(kPing, std::min(deadline, now + kPingTimeout), nullptr, &connected);
    if (pong.ok() && IsTrue(*pong, "ok")) {
      absl::MutexLock lock(&mu_);
      if (generation_ == generation && !done()) {
        ready_ = true;
        ever_ready_ = true;
        failed_starts_ = 0;
        KLOG(INFO).With("worker", options_.worker_id)
            << "harness server ready in " << absl::FormatDuration(absl::Now() - start)
            << " (pid " << pong->value("pid", nlohmann::json()).dump() << ", device "
            << pong->value("device", nlohmann::json()).dump() << ")";
      }
      return;
    }
    absl::MutexLock lock(&mu_);
    mu_.AwaitWithTimeout(absl::Condition(&done), kRetryPause);
  }
}

absl::Status HarnessServer::AwaitFirstStart() {
  KAGENT_RETURN_IF_ERROR(Start());
  absl::MutexLock lock(&mu_);
  auto settled = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ever_ready_ || stopping_ || ended_generation_ >= 1;
  };
  mu_.Await(absl::Condition(&settled));
  if (ever_ready_) return absl::OkStatus();
  if (stopping_ && ended_generation_ < 1) return absl::UnavailableError("the harness server is shut down");
  return absl::FailedPreconditionError(
      absl::StrCat("the harness server did not start (", Tail(first_exit_, 4000), ")"));
}

absl::StatusOr<nlohmann::json> HarnessServer::Call(const nlohmann::json& request,
                                                   absl::Duration timeout,
                                                   const CancelToken* cancel) {
  const absl::Time deadline = absl::Now() + timeout;
  KAGENT_RETURN_IF_ERROR(Start());
  const std::string line =
      request.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace) + "\n";
  auto ready_or_stopping = [this]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ready_ || stopping_ || failed_starts_ >= options_.max_failed_starts;
  };
  while (true) {
    int64_t generation;
    {
      absl::MutexLock lock(&mu_);
      while (!ready_or_stopping()) {
        if (cancel != nullptr && cancel->cancelled()) {
          return absl::CancelledError("cancelled while waiting for the harness server to start");
        }
        absl::Time now = absl::Now();
        if (now >= deadline) {
          // Nothing was sent: the server, not the request, is at fault.
          return absl::UnavailableError(absl::StrCat(
              "the harness server was not ready within ", absl::FormatDuration(timeout),
              last_exit_.empty() ? "" : "; it last ended: ", Tail(last_exit_, 1000)));
        }
        mu_.AwaitWithDeadline(absl::Condition(&ready_or_stopping),
                              std::min(deadline, now + absl::Milliseconds(50)));
      }
      if (stopping_) return absl::UnavailableError("the harness server is shut down");
      if (!ready_) {
        return absl::UnavailableError(absl::StrCat(
            "the harness server failed to start ", failed_starts_,
            " times in a row (it is started again after a backoff); it last ended: ",
            Tail(last_exit_, 1000)));
      }
      generation = generation_;
    }
    // A call whose token has fired does not even connect (a quick answer would
    // otherwise beat Exchange's own check of the token).
    if (cancel != nullptr && cancel->cancelled()) {
      return absl::CancelledError("cancelled before the request was sent to the harness server");
    }
    bool connected = false;
    absl::StatusOr<nlohmann::json> answer = Exchange(line, deadline, cancel, &connected);
    if (answer.ok()) return answer;
    const absl::Status& s = answer.status();
    if (absl::IsCancelled(s)) {
      return absl::CancelledError("cancelled; the request to the harness server was withdrawn");
    }
    if (absl::IsDeadlineExceeded(s)) {
      if (connected) KillIfUnresponsive(generation);
      return absl::DeadlineExceededError(
          absl::StrCat("the harness server did not answer within ", absl::FormatDuration(timeout),
                       "; the request was withdrawn"));
    }
    if (!connected) {
      // The process went away between its ping and this connect: wait for the next one.
      absl::MutexLock lock(&mu_);
      auto moved_on = [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
        return stopping_ || generation_ != generation || !ready_;
      };
      mu_.AwaitWithDeadline(absl::Condition(&moved_on), std::min(deadline, absl::Now() + kRetryPause));
      continue;
    }
    std::string exit = ExitOf(generation, absl::Seconds(2));
    if (exit.empty()) return s;
    return absl::UnavailableError(absl::StrCat(s.message(), "; the harness server exited: ", exit));
  }
}

void HarnessServer::KillIfUnresponsive(int64_t generation) {
  bool connected = false;
  absl::StatusOr<nlohmann::json> pong = Exchange(kPing, absl::Now() + kPingTimeout, nullptr, &connected);
  if (pong.ok() && IsTrue(*pong, "ok")) return;
  absl::MutexLock lock(&mu_);
  if (generation_ == generation && ended_generation_ < generation && run_cancel_ != nullptr) {
    KLOG(ERROR).With("worker", options_.worker_id)
        << "harness server does not answer a ping after a request timed out ("
        << (pong.ok() ? pong->dump() : pong.status().ToString()) << "): killing it";
    run_cancel_->Cancel();
  }
}

std::string HarnessServer::ExitOf(int64_t generation, absl::Duration wait) {
  absl::MutexLock lock(&mu_);
  auto ended = [this, generation]() ABSL_EXCLUSIVE_LOCKS_REQUIRED(mu_) {
    return ended_generation_ >= generation || stopping_;
  };
  mu_.AwaitWithTimeout(absl::Condition(&ended), wait);
  return ended_generation_ == generation ? last_exit_ : "";
}

absl::StatusOr<nlohmann::json> HarnessServer::Exchange(const std::string& line,
                                                       absl::Time deadline,
                                                       const CancelToken* cancel,
                                                       bool* connected) const {
  *connected = false;
  int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
  if (fd < 0) return absl::UnavailableError(absl::StrCat("socket: ", std::strerror(errno)));
  FdCloser closer(fd);
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, socket_path_.c_str(), sizeof(addr.sun_path) - 1);
  int rc;
  do {
    rc = connect(fd, reinterpret_cast<const sockaddr*>(&addr), sizeof(addr));
  } while (rc != 0 && errno == EINTR);
  if (rc != 0) {
    return absl::UnavailableError(absl::StrCat("cannot connect to the harness server at ",
                                               socket_path_, ": ", std::strerror(errno)));
  }
  *connected = true;
  size_t off = 0;
  while (off < line.size()) {
    ssize_t n = send(fd, line.data() + off, line.size() - off, MSG_NOSIGNAL);
    if (n > 0) {
      off += static_cast<size_t>(n);
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      KAGENT_RETURN_IF_ERROR(WaitFd(fd, POLLOUT, deadline, cancel));
    } else {
      return absl::UnavailableError(absl::StrCat(
          "the harness server closed the connection while the request was sent (",
          std::strerror(errno), ")"));
    }
  }
  std::string buf;
  size_t newline = std::string::npos;
  char chunk[64 << 10];
  while (newline == std::string::npos) {
    ssize_t n = recv(fd, chunk, sizeof(chunk), 0);
    if (n > 0) {
      size_t from = buf.size();
      buf.append(chunk, static_cast<size_t>(n));
      newline = buf.find('\n', from);
      if (newline == std::string::npos && buf.size() > options_.max_answer_bytes) {
        return absl::UnavailableError(absl::StrCat("the harness server's answer exceeds ",
                                                   options_.max_answer_bytes, " bytes"));
      }
    } else if (n == 0) {
      if (buf.empty()) {
        return absl::UnavailableError("the harness server closed the connection without an answer");
      }
      newline = buf.size();  // a last line without its newline
    } else if (errno == EINTR) {
      continue;
    } else if (errno == EAGAIN || errno == EWOULDBLOCK) {
      KAGENT_RETURN_IF_ERROR(WaitFd(fd, POLLIN, deadline, cancel));
    } else {
      return absl::UnavailableError(
          absl::StrCat("reading the harness server's answer: ", std::strerror(errno)));
    }
  }
  nlohmann::json answer =
      nlohmann::json::parse(buf.begin(), buf.begin() + static_cast<std::ptrdiff_t>(newline),
                            nullptr, /*allow_exceptions=*/false);
  if (answer.is_discarded() || !answer.is_object()) {
    return absl::UnavailableError(absl::StrCat(
        "the harness server answered something that is not a JSON object: '",
        Head(buf.substr(0, newline), 200), "'"));
  }
  return answer;
}

}  // namespace kagent
