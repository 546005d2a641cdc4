#include "tests/integration/process.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/subprocess/subprocess.h"

extern char** environ;

namespace kagent::testing {

Process::Process(std::vector<std::string> argv, std::map<std::string, std::string> env,
                 std::string log_path)
    : log_path_(std::move(log_path)) {
  int fds[2];
  if (pipe(fds) != 0) return;
  pid_ = fork();
  if (pid_ == 0) {
    setpgid(0, 0);
    dup2(fds[1], 1);
    int log = open(log_path_.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (log >= 0) dup2(log, 2);
    close(fds[0]);
    close(fds[1]);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (auto& a : argv) args.push_back(a.data());
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  close(fds[1]);
  out_fd_ = fds[0];
}

Process::~Process() {
  if (pid_ > 0 && !reaped_) {
    kill(-pid_, SIGKILL);
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  if (out_fd_ >= 0) close(out_fd_);
}

nlohmann::json Process::ReadyLine(absl::Duration timeout) {
  absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    size_t nl;
    while ((nl = buffer_.find('\n')) != std::string::npos) {
      std::string line = buffer_.substr(0, nl);
      buffer_.erase(0, nl + 1);
      auto j = nlohmann::json::parse(line, nullptr, false);
      if (!j.is_discarded() && j.is_object() && j.contains("port")) return j;
    }
    pollfd p{out_fd_, POLLIN, 0};
    int ms = static_cast<int>(absl::ToInt64Milliseconds(end - absl::Now()));
    if (poll(&p, 1, std::max(1, std::min(ms, 200))) > 0) {
      char buf[4096];
      ssize_t n = read(out_fd_, buf, sizeof(buf));
      if (n <= 0) return nullptr;  // exited
      buffer_.append(buf, n);
    }
  }
  return nullptr;
}

void Process::Signal(int sig) {
  if (pid_ > 0 && !reaped_) kill(pid_, sig);
}

int Process::Wait(absl::Duration timeout) {
  if (reaped_) return status_;
  absl::Time end = absl::Now() + timeout;
  while (absl::Now() < end) {
    int st;
    pid_t r = waitpid(pid_, &st, WNOHANG);
    if (r == pid_) {
      reaped_ = true;
      status_ = WIFEXITED(st) ? WEXITSTATUS(st) : 128 + WTERMSIG(st);
      return status_;
    }
    absl::SleepFor(absl::Milliseconds(20));
  }
  return -1;
}

bool Process::running() {
  if (reaped_) return false;
  return Wait(absl::ZeroDuration()) == -1;
}

std::string Process::Log() const {
  std::ifstream in(log_path_);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

int RunCommand(const std::vector<std::string>& argv, std::string* out, std::string* err,
               const std::map<std::string, std::string>& env, absl::Duration timeout) {
  SubprocessOptions o;
  o.argv = argv;
  o.inherit_env = true;
  o.env = env;
  o.timeout = timeout;
  o.private_temp_dir = false;
  auto r = RunSubprocess(o);
  if (!r.ok()) {
    if (err) *err = r.status().ToString();
    return -1;
  }
  if (out) *out = r->stdout_data;
  if (err) *err = r->stderr_data;
  return r->exited ? r->exit_code : 128 + r->term_signal;
}

std::string HttpGet(int port, const std::string& path) {
  int s = socket(AF_INET, SOCK_STREAM, 0);
  if (s < 0) return "";
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(static_cast<uint16_t>(port));
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  if (connect(s, reinterpret_cast<sockaddr*>(&a), sizeof(a)) != 0) {
    close(s);
    return "";
  }
  std::string req = absl::StrCat("GET ", path, " HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
  (void)!write(s, req.data(), req.size());
  std::string resp;
  char buf[8192];
  ssize_t n;
  while ((n = read(s, buf, sizeof(buf))) > 0) resp.append(buf, n);
  close(s);
  size_t body = resp.find("\r\n\r\n");
  return body == std::string::npos ? "" : resp.substr(body + 4);
}

std::string BinaryDir() {
  const char* d = std::getenv("KAGENT_BINARY_DIR");
  return d ? d : KAGENT_TEST_BINARY_DIR;
}
std::string SourceDir() {
  const char* d = std::getenv("KAGENT_SOURCE_DIR");
  return d ? d : KAGENT_TEST_SOURCE_DIR;
}
namespace {

std::vector<std::string>& MadeTempDirs() {
  static auto* dirs = new std::vector<std::string>();
  return *dirs;
}

void RemoveMadeTempDirs() {
  if (std::getenv("KAGENT_KEEP_TEST_DIRS") != nullptr) return;
  for (const std::string& dir : MadeTempDirs()) {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
}

}  // namespace

std::string TempDir() {
  std::string t = "/tmp/kagent-it-XXXXXX";
  char* p = mkdtemp(t.data());
  if (p == nullptr) return "/tmp";
  static const bool registered = std::atexit(RemoveMadeTempDirs) == 0;
  (void)registered;
  MadeTempDirs().push_back(p);
  return p;
}

}  // namespace kagent::testing
