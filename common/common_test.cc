// Unit tests for the common runtime: options, auth, logging, status conversion, metrics.
#include <catch2/catch.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "common/auth.h"
#include "common/file_io.h"
#include "common/grpc_status.h"
#include "common/logging.h"
#include "common/metrics.h"
#include "common/options.h"
#include "common/server.h"
#include "common/status.h"
#include "nlohmann/json.hpp"

namespace kagent {
namespace {

std::string TempFile(const std::string& content) {
  char path[] = "/tmp/kagent_test_XXXXXX";
  int fd = mkstemp(path);
  REQUIRE(fd >= 0);
  close(fd);
  std::ofstream(path) << content;
  return path;
}

TEST_CASE("options: flag beats env beats config beats default") {
  std::string a = "da", b = "db", c = "dc", d = "dd";
  int n = 1;
  OptionSet o("prog");
  o.AddString("a", &a, "");
  o.AddString("b", &b, "");
  o.AddString("c", &c, "");
  o.AddString("d", &d, "");
  o.AddInt("n", &n, "");
  std::string cfg = TempFile(R"({"a": "ca", "b": "cb", "c": "cc", "n": 7})");
  std::map<std::string, std::string> env = {{"KAGENT_A", "ea"}, {"KAGENT_B", "eb"},
                                            {"KAGENT_CONFIG", cfg}};
  const char* argv[] = {"prog", "--a=fa", "pos1", "--n", "9"};
  REQUIRE(o.Parse(5, argv, &env).ok());
  CHECK(a == "fa");
  CHECK(b == "eb");
  CHECK(c == "cc");
  CHECK(d == "dd");
  CHECK(n == 9);
  CHECK(o.SourceOf("a") == "flag");
  CHECK(o.SourceOf("b") == "env");
  CHECK(o.SourceOf("c") == "config");
  CHECK(o.SourceOf("d") == "default");
  CHECK(o.positional() == std::vector<std::string>{"pos1"});
  std::remove(cfg.c_str());
}

TEST_CASE("options: a string list: one value per flag, flags replace env and config") {
  using V = std::vector<std::string>;
  {
    V hide = {"/default"};
    OptionSet o("prog");
    o.AddStringList("hide", &hide, "");
    std::map<std::string, std::string> env = {{"KAGENT_HIDE", "/e1,/e2"}};
    const char* argv[] = {"prog", "--hide=/f1", "--hide", "/f,2"};
    REQUIRE(o.Parse(4, argv, &env).ok());
    CHECK(hide == V{"/f1", "/f,2"});  // a flag's value is never split
    CHECK(o.SourceOf("hide") == "flag");
  }
  {
    V hide;
    OptionSet o("prog");
    o.AddStringList("hide", &hide, "");
    std::map<std::string, std::string> env = {{"KAGENT_HIDE", "/e1,,/e2"}};
    const char* argv[] = {"prog"};
    REQUIRE(o.Parse(1, argv, &env).ok());
    CHECK(hide == V{"/e1", "/e2"});
  }
  {
    V hide;
    OptionSet o("prog");
    o.AddStringList("hide", &hide, "");
    std::string cfg = TempFile(R"({"hide": ["/c1", "/c2"]})");
    std::map<std::string, std::string> env;
    const char* argv[] = {"prog", "--config", cfg.c_str()};
    REQUIRE(o.Parse(3, argv, &env).ok());
    CHECK(hide == V{"/c1", "/c2"});
    CHECK(o.config_path() == cfg);
    std::remove(cfg.c_str());
  }
  {
    V hide;
    OptionSet o("prog");
    o.AddStringList("hide", &hide, "");
    std::string cfg = TempFile(R"({"hide": ["/c1", 3]})");
    std::map<std::string, std::string> env;
    const char* argv[] = {"prog", "--config", cfg.c_str()};
    auto s = o.Parse(3, argv, &env);
    CHECK(s.code() == absl::StatusCode::kInvalidArgument);
    CHECK(s.message().find("array of strings") != std::string::npos);
    std::remove(cfg.c_str());
  }
}

TEST_CASE("options: errors name what to fix") {
  int n = 0;
  OptionSet o("prog");
  o.AddInt("n", &n, "");
  std::map<std::string, std::string> env;
  const char* bad_flag[] = {"prog", "--nope=1"};
  auto s = o.Parse(2, bad_flag, &env);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message().find("--nope") != std::string::npos);

  OptionSet o2("prog");
  o2.AddInt("n", &n, "");
  const char* bad_int[] = {"prog", "--n=abc"};
  s = o2.Parse(2, bad_int, &env);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message().find("integer") != std::string::npos);

  OptionSet o3("prog");
  o3.AddInt("n", &n, "");
  std::string cfg = TempFile(R"({"typo": 1})");
  const char* with_cfg[] = {"prog", "--config", cfg.c_str()};
  s = o3.Parse(3, with_cfg, &env);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message().find("typo") != std::string::npos);
  std::remove(cfg.c_str());
}

TEST_CASE("server options validate") {
  ServerOptions so;
  CHECK(so.Validate().ok());
  so.tls_cert = "x";
  CHECK(so.Validate().code() == absl::StatusCode::kInvalidArgument);
  so.tls_cert.clear();
  so.max_message_bytes = 10;
  CHECK(so.Validate().code() == absl::StatusCode::kInvalidArgument);
  so.max_message_bytes = 1 << 20;
  so.log_level = "loud";
  CHECK(so.Validate().code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("auth: tokens map to tenants, internal token may act for a tenant") {
  Authenticator off;
  auto c = off.AuthenticateHeader("", "");
  REQUIRE(c.ok());
  CHECK(c->tenant == kDefaultTenant);

  Authenticator on({{"tok-alice-0123456789", "alice"}}, "internal-secret-0123");
  CHECK(on.AuthenticateHeader("", "").status().code() == absl::StatusCode::kUnauthenticated);
  CHECK(on.AuthenticateHeader("Bearer wrong", "").status().code() ==
        absl::StatusCode::kUnauthenticated);
  CHECK(on.AuthenticateHeader("Basic abc", "").status().code() ==
        absl::StatusCode::kUnauthenticated);
  auto alice = on.AuthenticateHeader("Bearer tok-alice-0123456789", "bob");
  REQUIRE(alice.ok());
  CHECK(alice->tenant == "alice");  // a user cannot pick another tenant
  CHECK_FALSE(alice->internal);
  auto svc = on.AuthenticateHeader("Bearer internal-secret-0123", "bob");
  REQUIRE(svc.ok());
  CHECK(svc->internal);
  CHECK(svc->tenant == "bob");
}

TEST_CASE("auth: with only an internal token, users are the default tenant, not internal") {
  Authenticator internal_only({}, "internal-secret-0123");
  auto user = internal_only.AuthenticateHeader("", "bob");
  REQUIRE(user.ok());
  CHECK(user->tenant == kDefaultTenant);
  CHECK_FALSE(user->internal);
  auto svc = internal_only.AuthenticateHeader("Bearer internal-secret-0123", "");
  REQUIRE(svc.ok());
  CHECK(svc->internal);
  CHECK(internal_only.AuthenticateHeader("Bearer guess", "").status().code() ==
        absl::StatusCode::kUnauthenticated);
}

TEST_CASE("auth: internal services accept only internal callers, in every mode") {
  auto check = [](const Authenticator* auth, absl::string_view header) {
    absl::StatusOr<Caller> c =
        auth == nullptr ? Authenticator().AuthenticateHeader(header, "")
                        : auth->AuthenticateHeader(header, "");
    if (!c.ok()) return c.status();
    return RequireInternal(auth, *c, !header.empty(), "Diagnose");
  };
  // Auth off (no authenticator, or one with nothing configured): everyone is internal.
  Authenticator off;
  CHECK(check(nullptr, "").ok());
  CHECK(check(&off, "").ok());
  CHECK(check(&off, "Bearer anything").ok());
  // Tokens and an internal token.
  Authenticator on({{"tok-alice-0123456789", "alice"}}, "internal-secret-0123");
  CHECK(check(&on, "").code() == absl::StatusCode::kUnauthenticated);
  CHECK(check(&on, "Bearer wrong").code() == absl::StatusCode::kUnauthenticated);
  absl::Status tenant = check(&on, "Bearer tok-alice-0123456789");
  CHECK(tenant.code() == absl::StatusCode::kPermissionDenied);
  CHECK(absl::StrContains(tenant.message(), "Diagnose"));
  CHECK(absl::StrContains(tenant.message(), "internal token"));
  CHECK(check(&on, "Bearer internal-secret-0123").ok());
  // Only an internal token: users need no token for the public API, but an internal
  // service still wants the internal token.
  Authenticator internal_only({}, "internal-secret-0123");
  absl::Status none = check(&internal_only, "");
  CHECK(none.code() == absl::StatusCode::kUnauthenticated);
  CHECK(absl::StrContains(none.message(), "internal token"));
  CHECK(check(&internal_only, "Bearer guess").code() == absl::StatusCode::kUnauthenticated);
  CHECK(check(&internal_only, "Bearer internal-secret-0123").ok());
}

TEST_CASE("auth: tokens file is validated") {
  std::string good = TempFile("# comment\ntok-alice-0123456789 alice\n\n");
  auto a = Authenticator::FromFile(good, "");
  REQUIRE(a.ok());
  CHECK(a->AuthenticateHeader("Bearer tok-alice-0123456789", "")->tenant == "alice");
  std::string bad = TempFile("short alice\n");
  CHECK(Authenticator::FromFile(bad, "").status().code() == absl::StatusCode::kInvalidArgument);
  std::remove(good.c_str());
  std::remove(bad.c_str());
}

TEST_CASE("logging writes JSON lines with scope fields") {
  std::vector<std::string> lines;
  SetLogSink([&](const std::string& l) { lines.push_back(l); });
  {
    LogScope scope({.job_id = "job-1", .request_id = "req-9", .tenant = "t"});
    KLOG(INFO).With("worker", "w0") << "hello " << 42;
  }
  KLOG(DEBUG) << "filtered out at info";
  SetLogSink(nullptr);
  REQUIRE(lines.size() == 1);
  auto j = nlohmann::json::parse(lines[0]);
  CHECK(j["msg"] == "hello 42");
  CHECK(j["level"] == "info");
  CHECK(j["job_id"] == "job-1");
  CHECK(j["request_id"] == "req-9");
  CHECK(j["worker"] == "w0");
}

TEST_CASE("status conversion keeps code and message") {
  auto g = ToGrpcStatus(absl::NotFoundError("job x not found"));
  CHECK(g.error_code() == grpc::StatusCode::NOT_FOUND);
  CHECK(g.error_message() == "job x not found");
  CHECK(FromGrpcStatus(g).code() == absl::StatusCode::kNotFound);
  CHECK(ToGrpcStatus(absl::OkStatus()).ok());
}

absl::StatusOr<int> Half(int x) {
  if (x % 2) return absl::InvalidArgumentError("odd");
  return x / 2;
}
absl::Status UseMacros(int x, int* out) {
  KAGENT_ASSIGN_OR_RETURN(int h, Half(x));
  KAGENT_RETURN_IF_ERROR(absl::OkStatus());
  *out = h;
  return absl::OkStatus();
}

TEST_CASE("file_io: whole-file reads and atomic writes, errors naming the path") {
  std::string path = TempFile("old");
  REQUIRE(WriteFileAtomically(path, std::string("new\0bytes", 9)).ok());
  absl::StatusOr<std::string> back = ReadFile(path);
  REQUIRE(back.ok());
  CHECK(*back == std::string("new\0bytes", 9));
  CHECK_FALSE(std::ifstream(path + ".tmp").good());  // the temporary is renamed away
  REQUIRE(WriteFileAtomically(path, "").ok());
  CHECK(ReadFile(path).value().empty());
  std::remove(path.c_str());

  absl::StatusOr<std::string> missing = ReadFile("/nonexistent/kagent/file");
  CHECK(missing.status().code() == absl::StatusCode::kNotFound);
  CHECK(missing.status().message() ==
        "cannot read /nonexistent/kagent/file: No such file or directory");
  absl::StatusOr<std::string> dir = ReadFile("/tmp");
  CHECK(dir.status().code() == absl::StatusCode::kInternal);
  CHECK(dir.status().message() == "cannot read /tmp: Is a directory");
  absl::Status unwritable = WriteFileAtomically("/nonexistent/kagent/file", "x");
  CHECK(unwritable.code() == absl::StatusCode::kInternal);
  CHECK(unwritable.message() == "cannot write /nonexistent/kagent/file: No such file or directory");
}

TEST_CASE("status macros propagate") {
  int out = 0;
  CHECK(UseMacros(4, &out).ok());
  CHECK(out == 2);
  CHECK(UseMacros(3, &out).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("metrics: method names split and codes named") {
  auto [svc, m] = SplitFullMethod("/kagent.v1.JobService/SubmitJob");
  CHECK(svc == "kagent.v1.JobService");
  CHECK(m == "SubmitJob");
  CHECK(std::string(GrpcCodeName(5)) == "NOT_FOUND");
  CHECK(std::string(GrpcCodeName(grpc::StatusCode::UNAUTHENTICATED)) == "UNAUTHENTICATED");
  CHECK(std::string(GrpcCodeName(17)) == "UNKNOWN");
  auto metrics = Metrics::Create("");
  REQUIRE(metrics.ok());
  (*metrics)->RecordStarted("/a.B/C");
  CHECK((*metrics)->in_flight() == 1);
  (*metrics)->RecordHandled("/a.B/C", 0, 0.01);
  CHECK((*metrics)->in_flight() == 0);
}

}  // namespace
}  // namespace kagent
