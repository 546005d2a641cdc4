// HarnessServer against a scripted fake server (testdata/fake_harness/kagent_harness: the
// serve wire protocol, standard library only): answers, hangs and cancels withdraw the
// request, a death mid-request, garbage, two calls at once, servers that do not start,
// shutdown.
#include <catch2/catch.hpp>

#include <signal.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <future>
#include <string>
#include <thread>

#include "absl/strings/match.h"
#include "common/harness/harness_server.h"
#include "common/install_paths.h"
#include "common/testing/fixtures.h"

namespace kagent {
namespace {

using testing::SourceDir;

// Any Python 3 runs the fake (it imports nothing beyond the standard library).
HarnessServerOptions FakeOptions(const std::string& harness = "fake_harness") {
  HarnessServerOptions o;
  o.python = DefaultPython();
  o.harness_dir = SourceDir() + "/common/harness/testdata/" + harness;
  o.device = "cpu";
  o.cuda_visible_devices = "3";
  o.worker_id = "worker-test";
  o.restart_backoff_min = absl::Milliseconds(100);
  o.restart_backoff_max = absl::Milliseconds(400);
  o.stop_grace = absl::Seconds(3);
  return o;
}

nlohmann::json Ping(HarnessServer& s) {
  absl::StatusOr<nlohmann::json> a = s.Call({{"op", "ping"}}, absl::Seconds(30), nullptr);
  INFO(a.status().ToString());
  REQUIRE(a.ok());
  return *a;
}

// Polls the fake's own counters until `pred` holds (or 5 s pass).
bool EventuallyStats(HarnessServer& s, const std::function<bool(const nlohmann::json&)>& pred) {
  for (int i = 0; i < 50; ++i) {
    auto a = s.Call({{"op", "fake_stats"}}, absl::Seconds(10), nullptr);
    if (a.ok() && pred(*a)) return true;
    absl::SleepFor(absl::Milliseconds(100));
  }
  return false;
}

TEST_CASE("harness server: starts lazily, waits for readiness, runs with its flags and environment",
          "[harness_server]") {
  HarnessServerOptions o = FakeOptions();
  o.cache_mb = 512;
  o.pool = 3;
  o.prepared_max = 5;
  o.cupti_lib = "/opt/libkagent_cupti.so";
  HarnessServer server(o, nullptr);
  CHECK_FALSE(server.ready());
  // The first call starts the process and waits for its first ping (the fake takes 0.3 s).
  nlohmann::json pong = Ping(server);
  CHECK(server.ready());
  CHECK(pong["ok"] == true);
  CHECK(pong["device"] == "cpu");
  std::vector<std::string> argv = pong["argv"];
  std::vector<std::string> want = {"serve", "--socket", server.socket_path(), "--device", "cpu",
                                   "--pool", "3", "--prepared-max", "5", "--cache-mb", "512"};
  CHECK(argv == want);
  // The harness's folder first, then the worker's PYTHONPATH when it has one.
  const char* worker_path = std::getenv("PYTHONPATH");
  CHECK(pong["env"]["PYTHONPATH"] ==
        (worker_path != nullptr && *worker_path != '\0'
             ? o.harness_dir + ":" + worker_path
             : o.harness_dir));
  CHECK(pong["env"]["CUDA_VISIBLE_DEVICES"] == "3");
  CHECK(pong["env"]["KAGENT_CUPTI_LIB"] == "/opt/libkagent_cupti.so");
  CHECK(pong["env"]["TRITON_INTERPRET"] == "1");
  CHECK(pong["env"]["PYTHONUNBUFFERED"] == "1");
  // The socket is private to this user.
  struct stat st;
  REQUIRE(stat(server.socket_path().c_str(), &st) == 0);
  CHECK((st.st_mode & 0077) == 0);
  CHECK(server.restarts() == 0);
}

TEST_CASE("harness server: the sandbox mode and hidden paths are serve flags", "[harness_server]") {
  HarnessServerOptions o = FakeOptions();
  o.sandbox = "best-effort";
  o.sandbox_hide = {"/etc/kagent/tokens", "/run/secrets/key"};
  HarnessServer server(o, nullptr);
  std::vector<std::string> argv = Ping(server)["argv"];
  std::vector<std::string> tail(argv.end() - 5, argv.end());
  CHECK(tail == std::vector<std::string>{"--sandbox=best-effort", "--sandbox-hide",
                                         "/etc/kagent/tokens", "--sandbox-hide",
                                         "/run/secrets/key"});
  CHECK(server.AwaitFirstStart().ok());
  // Without a mode nothing is passed (the harness's own default).
  HarnessServer plain(FakeOptions(), nullptr);
  std::vector<std::string> plain_argv = Ping(plain)["argv"];
  for (const std::string& a : plain_argv) CHECK_FALSE(absl::StartsWith(a, "--sandbox"));
}

TEST_CASE("harness server: a first start that fails (no sandbox where one is required) is "
          "reported with the server's message, at once", "[harness_server]") {
  REQUIRE(setenv("FAKE_HARNESS_NO_SANDBOX", "1", 1) == 0);
  HarnessServerOptions o = FakeOptions();
  o.sandbox = "required";
  HarnessServer server(o, nullptr);
  absl::Time start = absl::Now();
  absl::Status s = server.AwaitFirstStart();
  INFO(s.ToString());
  CHECK(s.code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(s.message(), "did not start"));
  CHECK(absl::StrContains(s.message(), "exit 1"));
  CHECK(absl::StrContains(s.message(), "the sandbox is required but this host cannot give it"));
  CHECK(absl::Now() - start < absl::Seconds(10));
  // Best effort on the same host starts.
  o.sandbox = "best-effort";
  HarnessServer lenient(o, nullptr);
  CHECK(lenient.AwaitFirstStart().ok());
  CHECK(lenient.ready());
  unsetenv("FAKE_HARNESS_NO_SANDBOX");
}

TEST_CASE("harness server: the default cache size is the server's own", "[harness_server]") {
  HarnessServer server(FakeOptions(), nullptr);
  std::vector<std::string> argv = Ping(server)["argv"];
  CHECK(std::find(argv.begin(), argv.end(), "--cache-mb") == argv.end());
}

TEST_CASE("harness server: a request that hangs times out and its connection is closed",
          "[harness_server]") {
  HarnessServer server(FakeOptions(), nullptr);
  Ping(server);
  absl::Time start = absl::Now();
  auto a = server.Call({{"op", "measure"}, {"fake", "FAKE_HANG"}}, absl::Seconds(1), nullptr);
  absl::Duration took = absl::Now() - start;
  REQUIRE(a.status().code() == absl::StatusCode::kDeadlineExceeded);
  CHECK(absl::StrContains(a.status().message(), "did not answer within"));
  CHECK(took >= absl::Seconds(1));
  CHECK(took < absl::Seconds(5));
  // The server saw the client go (that is how it cancels the work), and it was not
  // restarted: it still answers pings.
  CHECK(EventuallyStats(server, [](const nlohmann::json& s) { return s["cancelled"] == 1; }));
  CHECK(server.restarts() == 0);
}

TEST_CASE("harness server: a cancelled call withdraws its request", "[harness_server]") {
  HarnessServer server(FakeOptions(), nullptr);
  Ping(server);
  CancelToken token;
  std::thread canceller([&] {
    absl::SleepFor(absl::Milliseconds(300));
    token.Cancel();
  });
  absl::Time start = absl::Now();
  auto a = server.Call({{"op", "measure"}, {"fake", "FAKE_HANG"}}, absl::Seconds(60), &token);
  canceller.join();
  CHECK(a.status().code() == absl::StatusCode::kCancelled);
  CHECK(absl::Now() - start < absl::Seconds(3));
  CHECK(EventuallyStats(server, [](const nlohmann::json& s) { return s["cancelled"] == 1; }));
  // A call with an already fired token does not even connect.
  auto b = server.Call({{"op", "ping"}}, absl::Seconds(5), &token);
  CHECK(b.status().code() == absl::StatusCode::kCancelled);
}

TEST_CASE("harness server: a death mid-request is UNAVAILABLE with its exit, then a new server",
          "[harness_server]") {
  prometheus::Registry registry;
  HarnessServer server(FakeOptions(), &registry);
  int64_t pid = Ping(server)["pid"];
  auto a = server.Call({{"op", "measure"}, {"fake", "FAKE_DIE"}}, absl::Seconds(30), nullptr);
  INFO(a.status().ToString());
  REQUIRE(a.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(a.status().message(), "without an answer"));
  CHECK(absl::StrContains(a.status().message(), "exit 3"));
  CHECK(absl::StrContains(a.status().message(), "dying as told"));  // its stderr tail
  // The next call waits for the restarted server.
  int64_t pid2 = Ping(server)["pid"];
  CHECK(pid2 != pid);
  CHECK(server.restarts() == 1);
  bool counted = false;
  for (const auto& family : registry.Collect()) {
    if (family.name != "kagent_harness_server_restarts_total") continue;
    REQUIRE(family.metric.size() == 1);
    CHECK(family.metric[0].label[0].name == "worker");
    CHECK(family.metric[0].label[0].value == "worker-test");
    CHECK(family.metric[0].counter.value == 1);
    counted = true;
  }
  CHECK(counted);
}

TEST_CASE("harness server: garbage and a cut-short answer are UNAVAILABLE naming them",
          "[harness_server]") {
  HarnessServer server(FakeOptions(), nullptr);
  int64_t pid = Ping(server)["pid"];
  auto a = server.Call({{"op", "measure"}, {"fake", "FAKE_GARBAGE"}}, absl::Seconds(10), nullptr);
  REQUIRE(a.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(a.status().message(), "not a JSON object"));
  CHECK(absl::StrContains(a.status().message(), "this is not json"));
  auto b = server.Call({{"op", "measure"}, {"fake", "FAKE_PARTIAL"}}, absl::Seconds(10), nullptr);
  REQUIRE(b.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(b.status().message(), "{\"verdict\": \"COR"));
  // The server is alive: no restart.
  CHECK(Ping(server)["pid"] == pid);
  CHECK(server.restarts() == 0);
}

TEST_CASE("harness server: calls run at once", "[harness_server]") {
  HarnessServer server(FakeOptions(), nullptr);
  Ping(server);
  absl::Time start = absl::Now();
  auto sleep = [&] {
    return server.Call({{"op", "fake_sleep"}, {"seconds", 1.0}}, absl::Seconds(20), nullptr);
  };
  auto f1 = std::async(std::launch::async, sleep);
  auto f2 = std::async(std::launch::async, sleep);
  auto a = f1.get();
  auto b = f2.get();
  CHECK(a.ok());
  CHECK(b.ok());
  CHECK(absl::Now() - start < absl::Milliseconds(1800));  // not one after the other
}

TEST_CASE("harness server: one that keeps failing to start fails calls at once, saying why",
          "[harness_server]") {
  HarnessServerOptions o = FakeOptions();
  o.python = "/nonexistent/python3";
  HarnessServer server(o, nullptr);
  absl::Time start = absl::Now();
  auto a = server.Call({{"op", "ping"}}, absl::Seconds(60), nullptr);
  INFO(a.status().ToString());
  REQUIRE(a.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::Now() - start < absl::Seconds(10));  // three failed starts, not the deadline
  CHECK(absl::StrContains(a.status().message(), "failed to start 3 times in a row"));
  CHECK(absl::StrContains(a.status().message(), "could not start"));
  CHECK(absl::StrContains(a.status().message(), "/nonexistent/python3"));
  CHECK(server.restarts() >= 2);
}

TEST_CASE("harness server: a call waiting for a server that is not ready by its deadline is UNAVAILABLE",
          "[harness_server]") {
  HarnessServerOptions o = FakeOptions("hung_harness");
  o.start_timeout = absl::Seconds(30);
  HarnessServer server(o, nullptr);
  absl::Time start = absl::Now();
  auto a = server.Call({{"op", "ping"}}, absl::Milliseconds(800), nullptr);
  CHECK(absl::Now() - start >= absl::Milliseconds(800));
  // Not DEADLINE_EXCEEDED: nothing was sent, so a measurement must not read as the
  // candidate's TIMEOUT.
  CHECK(a.status().code() == absl::StatusCode::kUnavailable);
  CHECK(absl::StrContains(a.status().message(), "not ready within"));
}

TEST_CASE("harness server: one that never answers a ping is killed and started again",
          "[harness_server]") {
  HarnessServerOptions o = FakeOptions("hung_harness");
  o.start_timeout = absl::Milliseconds(500);
  o.stop_grace = absl::Milliseconds(200);
  HarnessServer server(o, nullptr);
  REQUIRE(server.Start().ok());
  absl::Time until = absl::Now() + absl::Seconds(10);
  while (server.restarts() < 2 && absl::Now() < until) absl::SleepFor(absl::Milliseconds(50));
  CHECK(server.restarts() >= 2);
  CHECK_FALSE(server.ready());
}

TEST_CASE("harness server: shutdown stops the process and later calls are UNAVAILABLE",
          "[harness_server]") {
  HarnessServer server(FakeOptions(), nullptr);
  int pid = Ping(server)["pid"];
  REQUIRE(kill(pid, 0) == 0);
  server.Shutdown();
  CHECK(kill(pid, 0) != 0);  // gone (and reaped)
  CHECK_FALSE(std::filesystem::exists(server.socket_path()));  // removed on SIGTERM
  auto a = server.Call({{"op", "ping"}}, absl::Seconds(1), nullptr);
  CHECK(a.status().code() == absl::StatusCode::kUnavailable);
  server.Shutdown();  // idempotent
  CHECK(server.restarts() == 0);
}

}  // namespace
}  // namespace kagent
