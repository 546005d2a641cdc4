#include "common/subprocess/subprocess.h"

#include <fcntl.h>
#include <poll.h>
#include <sched.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/time.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "common/logging.h"
#include "common/status.h"

extern char** environ;

namespace kagent {
namespace {

// Messages the child sends the parent over the close-on-exec status pipe before exec.
enum ChildReport : int32_t {
  kReportNetwork = 1,  // value: 1 isolated, 0 not
  kReportError = 2,    // stage + errno: the child could not start
};
enum ChildStage : int32_t {
  kStageNone = 0,
  kStageSetpgid,
  kStageNetwork,
  kStageRlimit,
  kStageDup,
  kStageChdir,
  kStageExec,
};
struct ChildRecord {
  int32_t kind;
  int32_t stage;
  int32_t value;
};

const char* StageName(int32_t stage) {
  switch (stage) {
    case kStageSetpgid: return "setpgid";
    case kStageNetwork: return "network isolation";
    case kStageRlimit: return "setrlimit";
    case kStageDup: return "dup2";
    case kStageChdir: return "chdir";
    case kStageExec: return "exec";
    default: return "start";
  }
}

absl::Status ErrnoStatus(absl::string_view what, int err) {
  return absl::InternalError(absl::StrCat(what, ": ", std::strerror(err)));
}

// Closes a descriptor once; tolerates -1.
void CloseFd(int* fd) {
  if (*fd >= 0) {
    close(*fd);
    *fd = -1;
  }
}

// Keeps the last `limit` bytes of a stream, amortized O(1) per byte.
class BoundedBuffer {
 public:
  explicit BoundedBuffer(size_t limit) : limit_(limit) {}
  void Append(const char* data, size_t n) {
    total_ += static_cast<int64_t>(n);
    if (limit_ == 0) return;
    if (n >= limit_) {
      data_.assign(data + (n - limit_), limit_);
      return;
    }
    data_.append(data, n);
    if (data_.size() > 2 * limit_) data_.erase(0, data_.size() - limit_);
  }
  std::string Take() {
    if (data_.size() > limit_) data_.erase(0, data_.size() - limit_);
    return std::move(data_);
  }
  int64_t total() const { return total_; }

 private:
  size_t limit_;
  std::string data_;
  int64_t total_ = 0;
};

// Reads everything available from a non-blocking fd. Returns false at EOF or error.
bool DrainFd(int fd, BoundedBuffer* buffer) {
  char chunk[65536];
  for (;;) {
    ssize_t n = read(fd, chunk, sizeof(chunk));
    if (n > 0) {
      buffer->Append(chunk, static_cast<size_t>(n));
      continue;
    }
    if (n == 0) return false;
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) return true;
    return false;
  }
}

// Writes to a pipe with SIGPIPE blocked on this thread; a SIGPIPE raised by this write
// is consumed so it never reaches the process. Returns bytes written, or -1 with errno.
ssize_t WriteNoSigpipe(int fd, const char* data, size_t n) {
  sigset_t pipe_set;
  sigemptyset(&pipe_set);
  sigaddset(&pipe_set, SIGPIPE);
  sigset_t old_mask;
  pthread_sigmask(SIG_BLOCK, &pipe_set, &old_mask);
  sigset_t pending;
  sigpending(&pending);
  const bool was_pending = sigismember(&pending, SIGPIPE) == 1;
  ssize_t written = write(fd, data, n);
  const int saved_errno = errno;
  if (written < 0 && saved_errno == EPIPE && !was_pending) {
    struct timespec zero = {0, 0};
    while (sigtimedwait(&pipe_set, nullptr, &zero) < 0 && errno == EINTR) {
    }
  }
  pthread_sigmask(SIG_SETMASK, &old_mask, nullptr);
  errno = saved_errno;
  return written;
}

bool IsExecutableFile(const std::string& path) {
  if (access(path.c_str(), X_OK) != 0) return false;
  std::error_code ec;
  return std::filesystem::is_regular_file(path, ec);
}

// Everything the child needs, prepared before fork so the child only makes syscalls.
struct ChildPlan {
  std::string program;
  std::vector<std::string> argv_storage;
  std::vector<std::string> env_storage;
  std::vector<char*> argv;
  std::vector<char*> envp;
  std::string working_dir;
  bool isolate_network = false;
  bool require_network = false;
  std::string uid_map;  // "<uid> <uid> 1\n", for the user-namespace fallback
  std::string gid_map;
  int64_t rlimit_as = 0;
  int64_t rlimit_cpu = 0;
  int64_t rlimit_nofile = 0;
  int stdin_fd = -1;
  int stdout_fd = -1;
  int stderr_fd = -1;
  int status_fd = -1;
  pid_t parent = 0;  // the forking process, for the parent-death check
};

void ChildWrite(int fd, const ChildRecord& record) {
  ssize_t ignored = write(fd, &record, sizeof(record));
  (void)ignored;
}

[[noreturn]] void ChildFail(const ChildPlan& plan, int32_t stage, int err) {
  ChildWrite(plan.status_fd, ChildRecord{kReportError, stage, err});
  _exit(127);
}

bool ChildWriteFile(const char* path, const std::string& text) {
  int fd = open(path, O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  ssize_t n = write(fd, text.data(), text.size());
  close(fd);
  return n == static_cast<ssize_t>(text.size());
}

// Runs in the forked child: async-signal-safe calls only.
[[noreturn]] void ChildMain(const ChildPlan& plan) {
  // Default dispositions and an empty mask: exec keeps ignored signals and the mask.
  struct sigaction default_action;
  std::memset(&default_action, 0, sizeof(default_action));
  default_action.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig) sigaction(sig, &default_action, nullptr);
  sigset_t empty;
  sigemptyset(&empty);
  sigprocmask(SIG_SETMASK, &empty, nullptr);

  if (setpgid(0, 0) != 0) ChildFail(plan, kStageSetpgid, errno);
  // Dies with the process that started it (a worker killed mid-task must not leave its
  // measurement running on the GPU). The signal follows the forking thread, which blocks
  // in RunSubprocess until the child is reaped. If the parent already died, stop here.
  prctl(PR_SET_PDEATHSIG, SIGKILL);
  if (getppid() != plan.parent) _exit(127);

  if (plan.isolate_network) {
    bool isolated = unshare(CLONE_NEWNET) == 0;
    if (!isolated && (errno == EPERM || errno == EINVAL)) {
      // Unprivileged: a user namespace owning a network namespace, with our own ids
      // mapped to themselves so file permissions are unchanged.
      if (unshare(CLONE_NEWUSER | CLONE_NEWNET) == 0) {
        ChildWriteFile("/proc/self/setgroups", "deny");
        isolated = ChildWriteFile("/proc/self/uid_map", plan.uid_map) &&
                   ChildWriteFile("/proc/self/gid_map", plan.gid_map);
        if (!isolated) ChildFail(plan, kStageNetwork, errno == 0 ? EPERM : errno);
      }
    }
    if (!isolated && plan.require_network) ChildFail(plan, kStageNetwork, EPERM);
    ChildWrite(plan.status_fd, ChildRecord{kReportNetwork, kStageNone, isolated ? 1 : 0});
  }

  auto set_limit = [&](int resource, int64_t value) {
    if (value <= 0) return;
    struct rlimit limit;
    limit.rlim_cur = static_cast<rlim_t>(value);
    limit.rlim_max = static_cast<rlim_t>(value);
    if (resource == RLIMIT_CPU) {
      // Soft limit sends SIGXCPU; the hard limit one second later sends SIGKILL.
      limit.rlim_max = static_cast<rlim_t>(value + 1);
    }
    struct rlimit current;
    if (getrlimit(resource, &current) == 0 && current.rlim_max != RLIM_INFINITY &&
        limit.rlim_max > current.rlim_max) {
      limit.rlim_max = current.rlim_max;
      if (limit.rlim_cur > limit.rlim_max) limit.rlim_cur = limit.rlim_max;
    }
    if (setrlimit(resource, &limit) != 0) ChildFail(plan, kStageRlimit, errno);
  };
  set_limit(RLIMIT_AS, plan.rlimit_as);
  set_limit(RLIMIT_CPU, plan.rlimit_cpu);
  set_limit(RLIMIT_NOFILE, plan.rlimit_nofile);

  if (dup2(plan.stdin_fd, 0) < 0 || dup2(plan.stdout_fd, 1) < 0 ||
      dup2(plan.stderr_fd, 2) < 0) {
    ChildFail(plan, kStageDup, errno);
  }
  if (!plan.working_dir.empty() && chdir(plan.working_dir.c_str()) != 0) {
    ChildFail(plan, kStageChdir, errno);
  }
  // Nothing but 0, 1 and 2 crosses exec (the status pipe is already close-on-exec).
#ifdef SYS_close_range
  syscall(SYS_close_range, 3U, ~0U, 4U /* CLOSE_RANGE_CLOEXEC */);
#endif
  execve(plan.program.c_str(), plan.argv.data(), plan.envp.data());
  ChildFail(plan, kStageExec, errno);
}

std::map<std::string, std::string> BuildEnv(const SubprocessOptions& options) {
  std::map<std::string, std::string> env;
  if (options.inherit_env && environ != nullptr) {
    for (char** entry = environ; *entry != nullptr; ++entry) {
      absl::string_view text(*entry);
      size_t eq = text.find('=');
      if (eq == absl::string_view::npos) continue;
      env[std::string(text.substr(0, eq))] = std::string(text.substr(eq + 1));
    }
    for (const std::string& name : options.unset_env) env.erase(name);
  }
  for (const auto& [key, value] : options.env) env[key] = value;
  return env;
}

int PidfdOpen(pid_t pid) {
#ifdef SYS_pidfd_open
  return static_cast<int>(syscall(SYS_pidfd_open, pid, 0));
#else
  errno = ENOSYS;
  return -1;
#endif
}

int MillisUntil(absl::Time now, absl::Time when) {
  if (when == absl::InfiniteFuture()) return -1;
  int64_t ms = absl::ToInt64Milliseconds(when - now) + 1;
  return static_cast<int>(std::clamp<int64_t>(ms, 0, 1000));
}

}  // namespace

// ---------------------------------------------------------------------------
// ScopedTempDir
// ---------------------------------------------------------------------------

absl::StatusOr<std::unique_ptr<ScopedTempDir>> ScopedTempDir::Create(
    absl::string_view prefix, absl::string_view parent) {
  std::string base(parent);
  if (base.empty()) {
    const char* tmpdir = std::getenv("TMPDIR");
    base = (tmpdir != nullptr && *tmpdir != '\0') ? tmpdir : "/tmp";
  }
  std::string pattern = absl::StrCat(base, "/", prefix, "XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return ErrnoStatus(absl::StrCat("mkdtemp ", pattern), errno);
  }
  return std::unique_ptr<ScopedTempDir>(new ScopedTempDir(std::string(buffer.data())));
}

ScopedTempDir::~ScopedTempDir() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
  if (ec) {
    // A child may have left directories without write permission: open them up, retry.
    std::filesystem::permissions(path_, std::filesystem::perms::owner_all,
                                 std::filesystem::perm_options::add, ec);
    for (auto it = std::filesystem::recursive_directory_iterator(
             path_, std::filesystem::directory_options::skip_permission_denied, ec);
         !ec && it != std::filesystem::recursive_directory_iterator(); it.increment(ec)) {
      std::error_code ignored;
      if (it->is_directory(ignored)) {
        std::filesystem::permissions(it->path(), std::filesystem::perms::owner_all,
                                     std::filesystem::perm_options::add, ignored);
      }
    }
    ec.clear();
    std::filesystem::remove_all(path_, ec);
    if (ec) {
      KLOG(WARNING) << "could not remove temp dir " << path_ << ": " << ec.message();
    }
  }
}

// ---------------------------------------------------------------------------
// FindExecutable
// ---------------------------------------------------------------------------

absl::StatusOr<std::string> FindExecutable(absl::string_view name,
                                           absl::string_view path_env) {
  if (name.empty()) return absl::InvalidArgumentError("empty program name");
  if (name.find('/') != absl::string_view::npos) {
    std::string path(name);
    if (access(path.c_str(), F_OK) != 0) {
      return absl::NotFoundError(absl::StrCat(path, ": no such file"));
    }
    if (!IsExecutableFile(path)) {
      return absl::PermissionDeniedError(absl::StrCat(path, ": not an executable file"));
    }
    return path;
  }
  std::string search(path_env);
  if (search.empty()) {
    const char* env_path = std::getenv("PATH");
    search = env_path != nullptr ? env_path : "/usr/local/bin:/usr/bin:/bin";
  }
  for (absl::string_view dir : absl::StrSplit(search, ':')) {
    std::string candidate = absl::StrCat(dir.empty() ? "." : dir, "/", name);
    if (IsExecutableFile(candidate)) return candidate;
  }
  return absl::NotFoundError(absl::StrCat(name, " not found on PATH"));
}

// ---------------------------------------------------------------------------
// SubprocessResult
// ---------------------------------------------------------------------------

std::string SubprocessResult::Describe() const {
  std::string text;
  if (exited) {
    text = absl::StrCat("exit ", exit_code);
  } else if (term_signal != 0) {
    const char* description = sigdescr_np(term_signal);
    text = absl::StrCat("signal ", term_signal, " (",
                        description != nullptr ? description : "unknown", ")",
                        core_dumped ? ", core dumped" : "");
  } else {
    text = "unknown status";
  }
  if (timed_out) absl::StrAppend(&text, ", timed out");
  if (cancelled) absl::StrAppend(&text, ", cancelled");
  absl::StrAppend(&text, absl::StrFormat(" after %.3f s", wall_seconds));
  return text;
}

// ---------------------------------------------------------------------------
// RunSubprocess
// ---------------------------------------------------------------------------

absl::StatusOr<SubprocessResult> RunSubprocess(const SubprocessOptions& options) {
  if (options.argv.empty()) return absl::InvalidArgumentError("argv is empty");
  const absl::Time start = absl::Now();
  SubprocessResult result;

  std::unique_ptr<ScopedTempDir> temp_dir;
  if (options.private_temp_dir) {
    KAGENT_ASSIGN_OR_RETURN(temp_dir,
                            ScopedTempDir::Create("kagent-sub-", options.temp_dir_parent));
  }

  ChildPlan plan;
  std::map<std::string, std::string> env = BuildEnv(options);
  if (temp_dir != nullptr) env["TMPDIR"] = temp_dir->path();
  auto path_it = env.find("PATH");
  KAGENT_ASSIGN_OR_RETURN(
      plan.program,
      FindExecutable(options.argv[0], path_it != env.end() ? path_it->second : ""));
  plan.argv_storage = options.argv;
  for (std::string& arg : plan.argv_storage) plan.argv.push_back(arg.data());
  plan.argv.push_back(nullptr);
  for (const auto& [key, value] : env) plan.env_storage.push_back(absl::StrCat(key, "=", value));
  for (std::string& entry : plan.env_storage) plan.envp.push_back(entry.data());
  plan.envp.push_back(nullptr);
  plan.working_dir = !options.working_dir.empty()
                         ? options.working_dir
                         : (temp_dir != nullptr ? temp_dir->path() : std::string());
  plan.isolate_network = options.isolate_network;
  plan.require_network = options.isolate_network && options.require_network_isolation;
  plan.uid_map = absl::StrCat(getuid(), " ", getuid(), " 1\n");
  plan.gid_map = absl::StrCat(getgid(), " ", getgid(), " 1\n");
  plan.rlimit_as = options.rlimit_as_bytes;
  plan.rlimit_cpu = options.rlimit_cpu_seconds;
  plan.rlimit_nofile = options.rlimit_nofile;

  // Descriptors: every one close-on-exec; the child dup2()s its ends onto 0, 1 and 2.
  int stdin_pipe[2] = {-1, -1};
  int stdout_pipe[2] = {-1, -1};
  int stderr_pipe[2] = {-1, -1};
  int status_pipe[2] = {-1, -1};
  auto close_all = [&]() {
    for (int* fd : {&stdin_pipe[0], &stdin_pipe[1], &stdout_pipe[0], &stdout_pipe[1],
                    &stderr_pipe[0], &stderr_pipe[1], &status_pipe[0], &status_pipe[1]}) {
      CloseFd(fd);
    }
  };
  const bool has_stdin = !options.stdin_data.empty();
  if (has_stdin) {
    if (pipe2(stdin_pipe, O_CLOEXEC) != 0) return ErrnoStatus("pipe2", errno);
  } else {
    stdin_pipe[0] = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (stdin_pipe[0] < 0) return ErrnoStatus("open /dev/null", errno);
  }
  if (pipe2(stdout_pipe, O_CLOEXEC) != 0 || pipe2(stderr_pipe, O_CLOEXEC) != 0 ||
      pipe2(status_pipe, O_CLOEXEC) != 0) {
    int err = errno;
    close_all();
    return ErrnoStatus("pipe2", err);
  }
  plan.stdin_fd = stdin_pipe[0];
  plan.stdout_fd = stdout_pipe[1];
  plan.stderr_fd = stderr_pipe[1];
  plan.status_fd = status_pipe[1];
  plan.parent = getpid();

  const pid_t pid = fork();
  if (pid < 0) {
    int err = errno;
    close_all();
    return ErrnoStatus("fork", err);
  }
  if (pid == 0) ChildMain(plan);  // never returns

  // Parent. Also make the child a group leader from this side, so a kill(-pid) sent
  // before the child ran its own setpgid still reaches it.
  setpgid(pid, pid);
  CloseFd(&stdin_pipe[0]);
  CloseFd(&stdout_pipe[1]);
  CloseFd(&stderr_pipe[1]);
  CloseFd(&status_pipe[1]);

  // The status pipe reaches EOF at exec (close-on-exec) or at the child's _exit.
  int32_t failed_stage = kStageNone;
  int failed_errno = 0;
  for (;;) {
    ChildRecord record;
    ssize_t n = read(status_pipe[0], &record, sizeof(record));
    if (n < 0 && errno == EINTR) continue;
    if (n != static_cast<ssize_t>(sizeof(record))) break;
    if (record.kind == kReportNetwork) result.network_isolated = record.value == 1;
    if (record.kind == kReportError) {
      failed_stage = record.stage;
      failed_errno = record.value;
    }
  }
  CloseFd(&status_pipe[0]);
  if (failed_stage != kStageNone) {
    close_all();
    int status = 0;
    while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    if (failed_stage == kStageNetwork) {
      return absl::FailedPreconditionError(absl::StrCat(
          "network isolation was required but unshare(CLONE_NEWNET) is not permitted here: ",
          std::strerror(failed_errno),
          " (run as root, with CAP_SYS_ADMIN, or allow unprivileged user namespaces)"));
    }
    std::string message = absl::StrCat("cannot start ", plan.program, ": ",
                                       StageName(failed_stage), ": ",
                                       std::strerror(failed_errno));
    if (failed_errno == ENOENT) return absl::NotFoundError(message);
    if (failed_errno == EACCES || failed_errno == EPERM) {
      return absl::PermissionDeniedError(message);
    }
    return absl::InternalError(message);
  }

  int pidfd = PidfdOpen(pid);
  fcntl(stdout_pipe[0], F_SETFL, O_NONBLOCK);
  fcntl(stderr_pipe[0], F_SETFL, O_NONBLOCK);
  if (has_stdin) fcntl(stdin_pipe[1], F_SETFL, O_NONBLOCK);

  BoundedBuffer out(options.max_output_bytes);
  BoundedBuffer err(options.max_output_bytes);
  size_t stdin_written = 0;
  const absl::Time deadline =
      options.timeout == absl::InfiniteDuration() ? absl::InfiniteFuture()
                                                  : start + options.timeout;
  absl::Time term_sent = absl::InfiniteFuture();
  bool kill_sent = false;
  bool child_exited = false;
  absl::Time drain_deadline = absl::InfiniteFuture();
  const CancelToken* cancel = options.cancel;

  auto signal_group = [&](int sig) {
    // The child is a zombie at worst until wait4 below, so its pid (= the group id)
    // cannot have been reused.
    kill(-pid, sig);
  };

  for (;;) {
    absl::Time now = absl::Now();
    if (!child_exited && term_sent == absl::InfiniteFuture()) {
      if (now >= deadline) {
        result.timed_out = true;
      } else if (cancel != nullptr && cancel->cancelled()) {
        result.cancelled = true;
      }
      if (result.timed_out || result.cancelled) {
        signal_group(SIGTERM);
        term_sent = now;
      }
    }
    if (!child_exited && !kill_sent && term_sent != absl::InfiniteFuture() &&
        now >= term_sent + options.kill_grace) {
      signal_group(SIGKILL);
      kill_sent = true;
    }
    if (child_exited && stdout_pipe[0] < 0 && stderr_pipe[0] < 0) break;
    if (child_exited && now >= drain_deadline) break;

    std::vector<pollfd> fds;
    int out_index = -1, err_index = -1, in_index = -1, pid_index = -1, cancel_index = -1;
    auto add = [&](int fd, short events) {
      fds.push_back(pollfd{fd, events, 0});
      return static_cast<int>(fds.size()) - 1;
    };
    if (stdout_pipe[0] >= 0) out_index = add(stdout_pipe[0], POLLIN);
    if (stderr_pipe[0] >= 0) err_index = add(stderr_pipe[0], POLLIN);
    if (stdin_pipe[1] >= 0) in_index = add(stdin_pipe[1], POLLOUT);
    if (!child_exited && pidfd >= 0) pid_index = add(pidfd, POLLIN);
    bool cancel_watchable = cancel != nullptr && cancel->wait_fd() >= 0;
    if (!child_exited && term_sent == absl::InfiniteFuture() && cancel_watchable) {
      cancel_index = add(cancel->wait_fd(), POLLIN);
    }

    int wait_ms = 1000;
    auto tighten = [&](int ms) {
      if (ms >= 0) wait_ms = std::min(wait_ms, ms);
    };
    if (!child_exited && term_sent == absl::InfiniteFuture()) tighten(MillisUntil(now, deadline));
    if (!child_exited && !kill_sent && term_sent != absl::InfiniteFuture()) {
      tighten(MillisUntil(now, term_sent + options.kill_grace));
    }
    if (child_exited) tighten(MillisUntil(now, drain_deadline));
    if (!child_exited && pidfd < 0) tighten(20);  // no pidfd: poll for the exit
    if (cancel != nullptr && !cancel_watchable) tighten(50);

    int ready = poll(fds.data(), fds.size(), wait_ms);
    if (ready < 0 && errno != EINTR) {
      KLOG(WARNING) << "poll failed: " << std::strerror(errno);
    }
    if (ready > 0) {
      if (out_index >= 0 && fds[out_index].revents != 0 && !DrainFd(stdout_pipe[0], &out)) {
        CloseFd(&stdout_pipe[0]);
      }
      if (err_index >= 0 && fds[err_index].revents != 0 && !DrainFd(stderr_pipe[0], &err)) {
        CloseFd(&stderr_pipe[0]);
      }
      if (in_index >= 0 && fds[in_index].revents != 0) {
        if (fds[in_index].revents & (POLLERR | POLLHUP | POLLNVAL)) {
          CloseFd(&stdin_pipe[1]);
        } else {
          const std::string& data = options.stdin_data;
          ssize_t n = WriteNoSigpipe(stdin_pipe[1], data.data() + stdin_written,
                                     data.size() - stdin_written);
          if (n > 0) stdin_written += static_cast<size_t>(n);
          if ((n < 0 && errno != EAGAIN && errno != EINTR) || stdin_written == data.size()) {
            CloseFd(&stdin_pipe[1]);
          }
        }
      }
      (void)cancel_index;  // the cancelled() check at the top of the loop handles it
      (void)pid_index;
    }
    if (!child_exited) {
      siginfo_t info;
      std::memset(&info, 0, sizeof(info));
      // WNOWAIT: leave the zombie, so the group id stays reserved while we kill the rest.
      if (waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOHANG | WNOWAIT) == 0 &&
          info.si_pid == pid) {
        child_exited = true;
        // Nothing outlives the run: kill whatever the child left in its group.
        signal_group(SIGKILL);
        CloseFd(&stdin_pipe[1]);
        drain_deadline = absl::Now() + absl::Seconds(2);
      }
    }
  }

  struct rusage usage;
  std::memset(&usage, 0, sizeof(usage));
  int status = 0;
  while (wait4(pid, &status, 0, &usage) < 0 && errno == EINTR) {
  }
  result.wall_seconds = absl::ToDoubleSeconds(absl::Now() - start);
  if (pidfd >= 0) close(pidfd);
  close_all();

  if (WIFEXITED(status)) {
    result.exited = true;
    result.exit_code = WEXITSTATUS(status);
  } else if (WIFSIGNALED(status)) {
    result.term_signal = WTERMSIG(status);
    result.core_dumped = WCOREDUMP(status);
  }
  result.user_cpu_seconds = usage.ru_utime.tv_sec + usage.ru_utime.tv_usec / 1e6;
  result.system_cpu_seconds = usage.ru_stime.tv_sec + usage.ru_stime.tv_usec / 1e6;
  result.peak_rss_bytes = static_cast<int64_t>(usage.ru_maxrss) * 1024;
  result.stdout_total_bytes = out.total();
  result.stderr_total_bytes = err.total();
  result.stdout_data = out.Take();
  result.stderr_data = err.Take();
  return result;
}

}  // namespace kagent
