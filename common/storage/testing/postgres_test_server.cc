#include "common/storage/testing/postgres_test_server.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <grp.h>
#include <libpq-fe.h>
#include <netinet/in.h>
#include <pwd.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "common/status.h"

namespace kagent::testing {
namespace {

constexpr const char* kSuperuser = "kagent";

std::string FindBindir() {
  std::vector<std::string> candidates;
  const char* env = getenv("KAGENT_POSTGRES_BINDIR");
  if (env != nullptr && env[0] != '\0') {
    candidates.push_back(env);  // an explicit choice: no fallback
  } else {
    for (int version = 17; version >= 12; --version) {
      candidates.push_back(absl::StrCat("/usr/lib/postgresql/", version, "/bin"));
    }
  }
  for (const std::string& dir : candidates) {
    if (access((dir + "/initdb").c_str(), X_OK) == 0 &&
        access((dir + "/pg_ctl").c_str(), X_OK) == 0 &&
        access((dir + "/postgres").c_str(), X_OK) == 0) {
      return dir;
    }
  }
  return "";
}

// A TCP port on 127.0.0.1 that was free a moment ago.
absl::StatusOr<int> FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  if (fd < 0) return absl::InternalError(absl::StrCat("socket: ", strerror(errno)));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  addr.sin_port = 0;
  socklen_t length = sizeof(addr);
  if (bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof(addr)) != 0 ||
      getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &length) != 0) {
    const std::string error = strerror(errno);
    close(fd);
    return absl::InternalError(absl::StrCat("binding a loopback port: ", error));
  }
  close(fd);
  return ntohs(addr.sin_port);
}

}  // namespace

absl::StatusOr<std::unique_ptr<PostgresTestServer>> PostgresTestServer::Start() {
  std::unique_ptr<PostgresTestServer> server(new PostgresTestServer());
  server->bindir_ = FindBindir();
  if (server->bindir_.empty()) {
    return absl::FailedPreconditionError(
        "PostgreSQL server binaries (initdb, pg_ctl, postgres) not found in "
        "$KAGENT_POSTGRES_BINDIR or /usr/lib/postgresql/<version>/bin. Run scripts/setup.sh "
        "(it installs Debian's postgresql package), or set KAGENT_POSTGRES_BINDIR. The "
        "PostgreSQL storage tests need a real server and do not skip.");
  }
  if (geteuid() == 0) {
    passwd* user = getpwnam("postgres");
    if (user == nullptr) {
      return absl::FailedPreconditionError(
          "running as root, and there is no `postgres` system user to run the test server "
          "as (PostgreSQL refuses to run as root). Run scripts/setup.sh (Debian's "
          "postgresql package creates the user)");
    }
    server->uid_ = user->pw_uid;
    server->gid_ = user->pw_gid;
  }
  const char* base = getenv("TMPDIR");
  std::string pattern =
      absl::StrCat(base != nullptr && base[0] != '\0' ? base : "/tmp", "/kagent-pg-XXXXXX");
  std::vector<char> buffer(pattern.begin(), pattern.end());
  buffer.push_back('\0');
  if (mkdtemp(buffer.data()) == nullptr) {
    return absl::InternalError(absl::StrCat("mkdtemp ", pattern, ": ", strerror(errno)));
  }
  server->directory_ = buffer.data();
  server->data_dir_ = server->directory_ + "/data";
  server->log_path_ = server->directory_ + "/server.log";
  if (server->uid_.has_value() &&
      chown(server->directory_.c_str(), *server->uid_, *server->gid_) != 0) {
    return absl::InternalError(
        absl::StrCat("chown ", server->directory_, " to postgres: ", strerror(errno)));
  }
  {
    std::ofstream log(server->log_path_);  // created now so that we can always read it
  }
  if (server->uid_.has_value()) {
    chown(server->log_path_.c_str(), *server->uid_, *server->gid_);  // best effort
  }
  KAGENT_RETURN_IF_ERROR(server->Run({"initdb", "-D", server->data_dir_, "-U", kSuperuser,
                                      "-A", "trust", "-E", "UTF8", "--locale=C", "-N"}));
  absl::Status started;
  for (int attempt = 0; attempt < 3; ++attempt) {
    KAGENT_ASSIGN_OR_RETURN(server->port_, FreePort());
    started = server->StartServer();
    if (started.ok()) break;
  }
  KAGENT_RETURN_IF_ERROR(started);
  return server;
}

PostgresTestServer::~PostgresTestServer() {
  if (running_) {
    if (!Stop().ok()) {
      // Last resort: the postmaster's pid is the first line of postmaster.pid.
      std::ifstream pid_file(data_dir_ + "/postmaster.pid");
      pid_t pid = 0;
      if (pid_file >> pid && pid > 0) kill(pid, SIGQUIT);
    }
  }
  if (!directory_.empty()) {
    std::error_code ec;
    std::filesystem::remove_all(directory_, ec);
  }
}

absl::Status PostgresTestServer::Run(const std::vector<std::string>& argv) {
  const std::string program = absl::StrCat(bindir_, "/", argv[0]);
  const int log_fd = open(log_path_.c_str(), O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
  if (log_fd < 0) return absl::InternalError(absl::StrCat("open ", log_path_, ": ", strerror(errno)));
  {
    std::string line = absl::StrCat("$ ", absl::StrJoin(argv, " "), "\n");
    (void)!write(log_fd, line.data(), line.size());
  }
  std::vector<char*> args;
  for (const std::string& arg : argv) args.push_back(const_cast<char*>(arg.c_str()));
  args[0] = const_cast<char*>(program.c_str());
  args.push_back(nullptr);
  const pid_t pid = fork();
  if (pid < 0) {
    close(log_fd);
    return absl::InternalError(absl::StrCat("fork: ", strerror(errno)));
  }
  if (pid == 0) {
    // Child: only async-signal-safe calls until exec.
    const int null_fd = open("/dev/null", O_RDONLY);
    if (null_fd >= 0) dup2(null_fd, 0);
    dup2(log_fd, 1);
    dup2(log_fd, 2);
    if (uid_.has_value()) {
      if (setgroups(0, nullptr) != 0 || setgid(*gid_) != 0 || setuid(*uid_) != 0) _exit(126);
    }
    if (chdir(directory_.c_str()) != 0) _exit(126);
    execv(program.c_str(), args.data());
    _exit(127);
  }
  close(log_fd);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0) {
    if (errno != EINTR) return absl::InternalError(absl::StrCat("waitpid: ", strerror(errno)));
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return absl::InternalError(absl::StrCat(
        program, " failed (", WIFEXITED(status) ? absl::StrCat("exit ", WEXITSTATUS(status))
                                                 : absl::StrCat("signal ", WTERMSIG(status)),
        "); log ", log_path_, ":\n", LogTail()));
  }
  return absl::OkStatus();
}

absl::Status PostgresTestServer::StartServer() {
  const std::string options = absl::StrCat(
      "-p ", port_, " -k ", directory_,
      " -c listen_addresses=127.0.0.1 -c fsync=off -c synchronous_commit=off"
      " -c full_page_writes=off -c max_connections=200");
  KAGENT_RETURN_IF_ERROR(Run({"pg_ctl", "-D", data_dir_, "-l", log_path_, "-w", "-t", "60", "-o",
                              options, "start"}));
  running_ = true;
  return absl::OkStatus();
}

absl::Status PostgresTestServer::Stop() {
  if (!running_) return absl::OkStatus();
  KAGENT_RETURN_IF_ERROR(Run({"pg_ctl", "-D", data_dir_, "-m", "fast", "-w", "-t", "60", "stop"}));
  running_ = false;
  return absl::OkStatus();
}

absl::Status PostgresTestServer::StartAgain() {
  if (running_) return absl::OkStatus();
  return StartServer();
}

std::string PostgresTestServer::Url(const std::string& name) const {
  return absl::StrCat("postgresql://", kSuperuser, "@127.0.0.1:", port_, "/", name);
}

absl::Status PostgresTestServer::Exec(const std::string& name, const std::string& sql) {
  PGconn* conn = PQconnectdb(Url(name).c_str());
  if (PQstatus(conn) != CONNECTION_OK) {
    std::string error = PQerrorMessage(conn);
    PQfinish(conn);
    return absl::UnavailableError(absl::StrCat("connecting to test database ", name, ": ", error));
  }
  PQsetNoticeProcessor(conn, [](void*, const char*) {}, nullptr);
  PGresult* result = PQexec(conn, sql.c_str());
  const ExecStatusType status = PQresultStatus(result);
  std::string error = PQresultErrorMessage(result);
  PQclear(result);
  PQfinish(conn);
  if (status != PGRES_COMMAND_OK && status != PGRES_TUPLES_OK) {
    return absl::InternalError(absl::StrCat("test database ", name, ": ", sql, ": ", error));
  }
  return absl::OkStatus();
}

absl::StatusOr<std::string> PostgresTestServer::CreateDatabase(const std::string& name) {
  if (name.empty()) return absl::InvalidArgumentError("database name is empty");
  for (char c : name) {
    if (!absl::ascii_isalnum(static_cast<unsigned char>(c)) && c != '_') {
      return absl::InvalidArgumentError(absl::StrCat("database name \"", name,
                                                     "\": use letters, digits and '_'"));
    }
  }
  KAGENT_RETURN_IF_ERROR(Exec("postgres", absl::StrCat("CREATE DATABASE \"", name, "\"")));
  return Url(name);
}

std::string PostgresTestServer::LogTail(size_t bytes) const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream buffer;
  buffer << in.rdbuf();
  std::string text = buffer.str();
  if (text.size() > bytes) text = "..." + text.substr(text.size() - bytes);
  return text;
}

}  // namespace kagent::testing
