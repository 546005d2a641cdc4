#include "tools/loadtest_server.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "absl/time/clock.h"

namespace kagent {

ProcSample ReadProc(int64_t pid) {
  ProcSample s;
  std::ifstream in(absl::StrCat("/proc/", pid, "/status"));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> f = absl::StrSplit(line, absl::ByAnyChar(" \t"), absl::SkipEmpty());
    if (f.size() < 2) continue;
    int64_t v = 0;
    if (f[0] == "VmRSS:" && absl::SimpleAtoi(f[1], &v)) s.rss_mib = static_cast<double>(v) / 1024.0;
    if (f[0] == "Threads:" && absl::SimpleAtoi(f[1], &v)) s.threads = v;
  }
  std::error_code ec;
  int64_t n = 0;
  for (auto it = std::filesystem::directory_iterator(absl::StrCat("/proc/", pid, "/fd"), ec);
       !ec && it != std::filesystem::directory_iterator(); it.increment(ec)) {
    ++n;
  }
  if (!ec) s.fds = n;
  return s;
}

absl::StatusOr<nlohmann::json> ServerProcess::Start(const std::vector<std::string>& argv,
                                                   const std::string& log,
                                                   absl::Duration timeout) {
  int out[2];
  if (pipe2(out, O_CLOEXEC) != 0) return absl::InternalError(strerror(errno));
  int err = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (err < 0) return absl::InternalError(absl::StrCat("cannot write ", log, ": ", strerror(errno)));
  pid_ = fork();
  if (pid_ < 0) return absl::InternalError(strerror(errno));
  if (pid_ == 0) {
    // kagentd ends with this process, even when it is killed (a test's timeout).
    prctl(PR_SET_PDEATHSIG, SIGTERM);
    dup2(out[1], 1);
    dup2(err, 2);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(out[1]);
  close(err);
  out_ = out[0];
  absl::Time deadline = absl::Now() + timeout;
  std::string buf;
  while (absl::Now() < deadline) {
    pollfd p{out_, POLLIN, 0};
    int r = poll(&p, 1, 200);
    if (r > 0) {
      char chunk[4096];
      ssize_t n = read(out_, chunk, sizeof chunk);
      if (n > 0) buf.append(chunk, static_cast<size_t>(n));
      size_t nl;
      while ((nl = buf.find('\n')) != std::string::npos) {
        std::string line = buf.substr(0, nl);
        buf.erase(0, nl + 1);
        nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
        if (j.is_object() && j.contains("port")) return j;
      }
      if (n == 0) break;  // stdout closed
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      pid_ = -1;
      return absl::UnavailableError(absl::StrCat("kagentd exited (status ", status, "); see ", log));
    }
  }
  return absl::DeadlineExceededError(absl::StrCat("kagentd printed no ready line in ",
                                                  absl::FormatDuration(timeout), "; see ", log));
}

bool ServerProcess::Alive() {
  if (pid_ <= 0) return false;
  int status = 0;
  if (waitpid(pid_, &status, WNOHANG) == pid_) {
    exit_status_ = status;
    pid_ = -1;
    return false;
  }
  return true;
}

std::pair<double, int> ServerProcess::Stop(absl::Duration grace) {
  if (out_ >= 0) {
    close(out_);
    out_ = -1;
  }
  if (pid_ <= 0) return {0, exit_status_};
  absl::Time t0 = absl::Now();
  kill(pid_, SIGTERM);
  int status = 0;
  while (true) {
    pid_t r = waitpid(pid_, &status, WNOHANG);
    if (r == pid_) break;
    if (absl::Now() - t0 > grace) {
      kill(pid_, SIGKILL);
      waitpid(pid_, &status, 0);
      break;
    }
    absl::SleepFor(absl::Milliseconds(50));
  }
  pid_ = -1;
  exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  return {absl::ToDoubleSeconds(absl::Now() - t0), exit_status_};
}

}  // namespace kagent
