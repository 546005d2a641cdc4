#include "common/cancel.h"

#include <poll.h>

#include <catch2/catch.hpp>

#include <grpcpp/client_context.h>

namespace kagent {
namespace {

bool Readable(int fd) {
  pollfd p{fd, POLLIN, 0};
  return poll(&p, 1, 0) == 1 && (p.revents & POLLIN) != 0;
}

TEST_CASE("cancel token: fires once, its descriptor stays readable", "[cancel]") {
  CancelToken token;
  CHECK_FALSE(token.cancelled());
  REQUIRE(token.wait_fd() >= 0);
  CHECK_FALSE(Readable(token.wait_fd()));
  token.Cancel();
  token.Cancel();
  CHECK(token.cancelled());
  CHECK(Readable(token.wait_fd()));
  CHECK(Readable(token.wait_fd()));
}

TEST_CASE("cancel token: registered calls are cancelled with it, none after it fired",
          "[cancel]") {
  CancelToken token;
  grpc::ClientContext registered, unregistered;
  CHECK(token.Register(&registered));
  CHECK(token.Register(&unregistered));
  token.Unregister(&unregistered);
  token.Cancel();
  grpc::ClientContext late;
  CHECK_FALSE(token.Register(&late));
  token.Unregister(&registered);
}

}  // namespace
}  // namespace kagent
