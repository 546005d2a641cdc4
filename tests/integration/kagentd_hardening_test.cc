// Integration tests of kagentd's control plane against issue 17 (sealed internal
// services, unparseable requests, metrics, listeners, reflection, shutdown).
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "common/client.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "tests/integration/daemon.h"
#include "tests/integration/health.grpc.pb.h"
#include "tests/integration/process.h"

namespace kagent::testing {
namespace {

std::shared_ptr<grpc::Channel> Channel(int port) {
  return *MakeChannel(absl::StrCat("127.0.0.1:", port), ChannelOptions());
}

// A port that was free a moment ago (bound to port 0, then closed).
int FreePort() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  REQUIRE(fd >= 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  a.sin_port = 0;
  REQUIRE(bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof(a)) == 0);
  socklen_t len = sizeof(a);
  REQUIRE(getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len) == 0);
  close(fd);
  return ntohs(a.sin_port);
}

bool Serving(int port) {
  auto health = grpc::health::v1::Health::NewStub(Channel(port));
  grpc::health::v1::HealthCheckRequest req;
  grpc::health::v1::HealthCheckResponse resp;
  auto ctx = Ctx();
  return health->Check(ctx.get(), req, &resp).ok() &&
         resp.status() == grpc::health::v1::HealthCheckResponse::SERVING;
}

TEST_CASE("kagentd: every listener can be pinned and is in the start line", "[integration]") {
  const int internal = FreePort(), worker = FreePort();
  Daemon d(TempDir(), {absl::StrCat("--internal-listen=127.0.0.1:", internal),
                       absl::StrCat("--worker-listen=127.0.0.1:", worker)});
  INFO(d.ready.dump());
  CHECK(d.ready["internal_port"] == internal);
  REQUIRE(d.ready["worker_ports"].size() == 1);
  CHECK(d.ready["worker_ports"][0] == worker);
  CHECK(d.ready["workers"] == 1);
  CHECK(Serving(d.port));
  CHECK(Serving(internal));
  CHECK(Serving(worker));
  // A bad address is a usage error.
  std::string out, err;
  CHECK(RunCommand({BinaryDir() + "/tools/kagentd", "--worker-listen=nope"}, &out, &err) == 2);
  CHECK(absl::StrContains(err, "--worker-listen"));
}

}  // namespace
}  // namespace kagent::testing
