// PostgresTestServer: a throwaway PostgreSQL server for tests, on loopback.
//
//   KAGENT_ASSIGN_OR_RETURN(std::unique_ptr<PostgresTestServer> server,
//                           PostgresTestServer::Start());
//   KAGENT_ASSIGN_OR_RETURN(std::string url, server->CreateDatabase("t1"));
//   ... PostgresStorage::Open({.url = url}) ...
//
// Start() makes a temporary directory, runs `initdb` (superuser "kagent", trust
// authentication, UTF8, C locale) and `pg_ctl start` with the server listening on
// 127.0.0.1 at a free port and on a unix socket inside that directory, with fsync off
// (test speed; a clean stop keeps everything). When the process runs as root (as in
// containers), the server runs as the `postgres` system user that Debian's postgresql
// package creates (PostgreSQL refuses to run as root): the directory is chowned to it
// and the tools run with that uid.
//
// The binaries are looked up in $KAGENT_POSTGRES_BINDIR when set (only there), else in
// /usr/lib/postgresql/<version>/bin (newest first). When they are missing Start() fails
// with FAILED_PRECONDITION saying to run scripts/setup.sh: tests must fail, not skip.
//
// The destructor stops the server (fast shutdown) and removes the directory.
// Thread-safety: none; use from one thread (the Storage under test may be shared).
#ifndef KAGENT_COMMON_STORAGE_TESTING_POSTGRES_TEST_SERVER_H_
#define KAGENT_COMMON_STORAGE_TESTING_POSTGRES_TEST_SERVER_H_

#include <sys/types.h>

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

namespace kagent::testing {

class PostgresTestServer {
 public:
  static absl::StatusOr<std::unique_ptr<PostgresTestServer>> Start();

  ~PostgresTestServer();
  PostgresTestServer(const PostgresTestServer&) = delete;
  PostgresTestServer& operator=(const PostgresTestServer&) = delete;

  // Creates database `name` (letters, digits, '_') and returns its connection URI.
  absl::StatusOr<std::string> CreateDatabase(const std::string& name);
  // The URI of database `name` (which need not exist).
  std::string Url(const std::string& name) const;
  // Runs `sql` (one or more statements) in database `name` as the superuser.
  absl::Status Exec(const std::string& name, const std::string& sql);

  // Stops the server (fast shutdown: connections are closed, committed data kept) and
  // starts it again on the same port and data directory.
  absl::Status Stop();
  absl::Status StartAgain();
  bool running() const { return running_; }

  int port() const { return port_; }
  const std::string& directory() const { return directory_; }
  // The last `bytes` of the server's and the tools' log, for failure messages.
  std::string LogTail(size_t bytes = 4000) const;

 private:
  PostgresTestServer() = default;

  // Runs a server tool (argv[0] is a name in bindir_), as the server's user.
  absl::Status Run(const std::vector<std::string>& argv);
  absl::Status StartServer();

  std::string bindir_;
  std::string directory_;  // removed by the destructor
  std::string data_dir_;
  std::string log_path_;
  int port_ = 0;
  bool running_ = false;
  std::optional<uid_t> uid_;  // set: run the tools as this user (we are root)
  std::optional<gid_t> gid_;
};

}  // namespace kagent::testing

#endif  // KAGENT_COMMON_STORAGE_TESTING_POSTGRES_TEST_SERVER_H_
