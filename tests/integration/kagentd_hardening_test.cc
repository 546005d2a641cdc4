// Integration tests of kagentd's control plane against issue 17 (sealed internal
// services, unparseable requests, metrics, listeners, reflection, shutdown).
#include <catch2/catch.hpp>

#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <fstream>
#include <sstream>
#include <thread>

#include <google/protobuf/descriptor.pb.h>
#include <grpcpp/generic/generic_stub.h>
#include <grpcpp/grpcpp.h>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "common/client.h"
#include "grpc/reflection/v1/reflection.grpc.pb.h"
#include "kagent/v1/job_service.grpc.pb.h"
#include "tests/integration/daemon.h"
#include "tests/integration/health.grpc.pb.h"
#include "tests/integration/process.h"

namespace kagent::testing {
namespace {

constexpr char kInternalToken[] = "cluster-internal-token-0123456789";
constexpr char kTenantToken[] = "alice-token-0123456789";

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

TEST_CASE("kagentd: internal services accept only the internal token", "[integration]") {
  std::string dir = TempDir();
  std::ofstream(dir + "/tokens") << kTenantToken << " alice\n";
  Daemon d(dir, {"--tokens-file=" + dir + "/tokens", absl::StrCat("--internal-token=", kInternalToken)});
  REQUIRE(d.ready["worker_ports"].size() == 1);
  const int internal = d.ready["internal_port"];
  const int worker = d.ready["worker_ports"][0];
  // One RPC of every internal service, with an empty request (valid protobuf).
  struct Rpc {
    int port;
    std::string method;
  };
  const std::vector<Rpc> rpcs = {
      {internal, "/kagent.v1.JudgeService/Diagnose"},
      {internal, "/kagent.v1.AnalyzerService/Prescribe"},
      {internal, "/kagent.v1.OrchestratorService/PlanRound"},
      {internal, "/kagent.v1.OrchestratorService/Reflect"},
      {internal, "/kagent.v1.OptimizationManagerService/Generate"},
      {worker, "/kagent.v1.BenchmarkService/DescribeWorker"},
      {worker, "/kagent.v1.BenchmarkService/Measure"},
      {worker, "/kagent.v1.BenchmarkService/Screen"},
      {worker, "/kagent.v1.BenchmarkService/ReleaseJob"},
      {worker, "/kagent.v1.ProfilerService/Profile"},
      {d.port, "/kagent.v1.JobService/RegisterWorker"},
  };
  for (const Rpc& rpc : rpcs) {
    INFO(rpc.method);
    auto ch = Channel(rpc.port);
    grpc::Status none = RawUnaryCall(ch, rpc.method, "");
    INFO("no token: " << none.error_code() << " " << none.error_message());
    CHECK(none.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    grpc::Status bad = RawUnaryCall(ch, rpc.method, "", "not-a-token-0123456789");
    CHECK(bad.error_code() == grpc::StatusCode::UNAUTHENTICATED);
    grpc::Status tenant = RawUnaryCall(ch, rpc.method, "", kTenantToken);
    INFO("tenant token: " << tenant.error_code() << " " << tenant.error_message());
    CHECK(tenant.error_code() == grpc::StatusCode::PERMISSION_DENIED);
    CHECK(absl::StrContains(tenant.error_message(), "internal token"));
    grpc::Status ok = RawUnaryCall(ch, rpc.method, "", kInternalToken);
    INFO("internal token: " << ok.error_code() << " " << ok.error_message());
    CHECK(ok.error_code() != grpc::StatusCode::UNAUTHENTICATED);
    CHECK(ok.error_code() != grpc::StatusCode::PERMISSION_DENIED);
  }
  // The public API still takes the tenant's token; kagentd's own services still reach
  // each other with auth on: a job runs to the end.
  v1::SubmitJobResponse resp;
  auto c = Ctx(kTenantToken);
  REQUIRE(d.jobs->SubmitJob(c.get(), ReluAddJob(1), &resp).ok());
  std::string out, err;
  std::vector<std::string> argv = {BinaryDir() + "/tools/kagent", "--server", d.addr(), "watch",
                                   resp.job().id()};
  int rc = RunCommand(argv, &out, &err, {{"KAGENT_TOKEN", kTenantToken}});
  INFO(out << err << d.proc->Log().substr(0, 20000));
  CHECK(rc == 0);
  CHECK(absl::StrContains(out, "DONE"));
}

TEST_CASE("kagentd: with only an internal token, internal services still want it", "[integration]") {
  Daemon d(TempDir(), {absl::StrCat("--internal-token=", kInternalToken)});
  auto ch = Channel(d.ready["worker_ports"][0]);
  const std::string method = "/kagent.v1.BenchmarkService/DescribeWorker";
  CHECK(RawUnaryCall(ch, method, "").error_code() == grpc::StatusCode::UNAUTHENTICATED);
  CHECK(RawUnaryCall(ch, method, "", kInternalToken).ok());
  // The public API needs no token in this mode.
  CHECK(RawUnaryCall(d.channel, "/kagent.v1.JobService/ListJobs", "").ok());
}

TEST_CASE("kagentd: unparseable requests are INVALID_ARGUMENT and the log stays JSON", "[integration]") {
  Daemon d(TempDir());
  const std::string method = "/kagent.v1.JobService/SubmitJob";
  std::string valid;
  REQUIRE(ReluAddJob(1).SerializeToString(&valid));
  // problem { name: "\xff\xfe" }: a string field that is not UTF-8.
  const std::string bad_utf8 = std::string("\x0a\x04\x0a\x02\xff\xfe", 6);
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"random bytes", std::string("\xff\xff\xff\xff\xff\x01\x02\x03", 8)},
      {"truncated", valid.substr(0, valid.size() / 2)},
      {"invalid UTF-8", bad_utf8},
  };
  for (const auto& [what, bytes] : cases) {
    INFO(what);
    grpc::Status s = RawUnaryCall(d.channel, method, bytes);
    INFO(s.error_code() << " " << s.error_message());
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), "could not be parsed as kagent.v1.SubmitJobRequest"));
  }
  // A server-streaming method too.
  grpc::GenericStub stub(d.channel);
  {
    auto ctx = Ctx();
    grpc::CompletionQueue cq;
    grpc::Slice slice(std::string("\xff\xff\xff", 3));
    grpc::ByteBuffer req(&slice, 1);
    auto call = stub.PrepareCall(ctx.get(), "/kagent.v1.JobService/WatchJob", &cq);
    void* tag;
    bool ok;
    call->StartCall(reinterpret_cast<void*>(1));
    REQUIRE(cq.Next(&tag, &ok));
    call->Write(req, reinterpret_cast<void*>(2));
    REQUIRE(cq.Next(&tag, &ok));
    call->WritesDone(reinterpret_cast<void*>(3));
    REQUIRE(cq.Next(&tag, &ok));
    grpc::Status s;
    call->Finish(&s, reinterpret_cast<void*>(4));
    REQUIRE(cq.Next(&tag, &ok));
    CHECK(s.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
    CHECK(absl::StrContains(s.error_message(), "kagent.v1.WatchJobRequest"));
  }
  // Nothing was stored.
  v1::ListJobsResponse lr;
  auto ctx = Ctx();
  REQUIRE(d.jobs->ListJobs(ctx.get(), v1::ListJobsRequest(), &lr).ok());
  CHECK(lr.jobs_size() == 0);
  // The metrics count them as INVALID_ARGUMENT.
  std::string scrape = HttpGet(d.metrics_port, "/metrics");
  CHECK(absl::StrContains(scrape, "code=\"INVALID_ARGUMENT\",method=\"SubmitJob\""));
  // Every log line is JSON; libprotobuf's complaint about the UTF-8 is one of them.
  d.proc->Signal(SIGTERM);
  REQUIRE(d.proc->Wait(absl::Seconds(30)) == 0);
  bool saw_utf8 = false;
  for (absl::string_view line : absl::StrSplit(d.proc->Log(), '\n', absl::SkipEmpty())) {
    INFO(line);
    nlohmann::json j = nlohmann::json::parse(line, nullptr, /*allow_exceptions=*/false);
    CHECK(j.is_object());
    if (j.is_object() && absl::StrContains(std::string(j.value("msg", "")), "UTF-8")) saw_utf8 = true;
  }
  CHECK(saw_utf8);
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

// The line of `family` whose labels include every one of `labels` (each `name="value"`).
std::string SeriesLine(const std::string& scrape, const std::string& family,
                       const std::vector<std::string>& labels) {
  std::istringstream in(scrape);
  for (std::string line; std::getline(in, line);) {
    if (line.rfind(family + "{", 0) != 0 && line.rfind(family + " ", 0) != 0) continue;
    bool all = true;
    for (const std::string& l : labels) all = all && absl::StrContains(line, l);
    if (all) return line;
  }
  return "";
}

TEST_CASE("kagentd: labelled series exist at 0 before their first event", "[integration]") {
  Daemon d(TempDir());
  const std::string scrape = HttpGet(d.metrics_port, "/metrics");
  struct Want {
    std::string family;
    std::vector<std::string> labels;
  };
  const std::vector<Want> wants = {
      {"kagent_jobs_submitted_total", {}},
      {"kagent_jobs_finished_total", {"state=\"DONE\""}},
      {"kagent_jobs_finished_total", {"state=\"FAILED\""}},
      {"kagent_jobs_finished_total", {"state=\"CANCELLED\""}},
      {"kagent_rounds_total", {}},
      {"kagent_candidates_total", {"verdict=\"VERDICT_CORRECT\""}},
      {"kagent_job_gpu_seconds_total", {}},
      {"kagent_job_llm_tokens_total", {}},
      {"kagent_job_llm_cost_usd_total", {}},
      {"kagent_gpu_tasks_total", {"kind=\"measure\"", "outcome=\"ok\""}},
      {"kagent_gpu_tasks_total", {"kind=\"profile\"", "outcome=\"infra_error\""}},
      {"kagent_gpu_task_infra_retries_total", {"kind=\"screen\""}},
      {"kagent_gpu_task_seconds_count", {"kind=\"measure\""}},
      {"kagent_gpu_worker_busy_seconds_total", {"worker=\""}},
      {"kagent_benchmark_measurements_total", {"verdict=\"VERDICT_INCORRECT\""}},
      {"kagent_grpc_server_started_total", {"service=\"kagent.v1.JobService\"", "method=\"SubmitJob\""}},
      {"kagent_grpc_server_handled_total",
       {"service=\"kagent.v1.JobService\"", "method=\"WatchJob\"", "code=\"OK\""}},
      {"kagent_grpc_server_handling_seconds_count",
       {"service=\"kagent.v1.BenchmarkService\"", "method=\"Measure\""}},
      {"kagent_grpc_server_started_total", {"service=\"kagent.v1.JudgeService\"", "method=\"Diagnose\""}},
  };
  for (const Want& w : wants) {
    INFO(w.family << " " << absl::StrJoin(w.labels, ","));
    std::string line = SeriesLine(scrape, w.family, w.labels);
    CHECK(!line.empty());
    if (!line.empty()) CHECK(std::stod(line.substr(line.rfind(' ') + 1)) == 0);
  }
}

TEST_CASE("kagentd: server reflection v1 and v1alpha", "[integration]") {
  Daemon d(TempDir());
  auto stub = grpc::reflection::v1::ServerReflection::NewStub(d.channel);
  auto ctx = Ctx();
  auto stream = stub->ServerReflectionInfo(ctx.get());
  grpc::reflection::v1::ServerReflectionRequest req;
  req.set_list_services("");
  REQUIRE(stream->Write(req));
  grpc::reflection::v1::ServerReflectionResponse resp;
  REQUIRE(stream->Read(&resp));
  std::vector<std::string> names;
  for (const auto& s : resp.list_services_response().service()) names.push_back(s.name());
  INFO(absl::StrJoin(names, ","));
  CHECK(std::find(names.begin(), names.end(), "kagent.v1.JobService") != names.end());
  CHECK(std::find(names.begin(), names.end(), "grpc.reflection.v1.ServerReflection") != names.end());
  CHECK(std::find(names.begin(), names.end(), "grpc.reflection.v1alpha.ServerReflection") != names.end());
  req.set_file_containing_symbol("kagent.v1.JobService");
  REQUIRE(stream->Write(req));
  REQUIRE(stream->Read(&resp));
  REQUIRE(resp.has_file_descriptor_response());
  std::vector<std::string> files;
  for (const std::string& bytes : resp.file_descriptor_response().file_descriptor_proto()) {
    google::protobuf::FileDescriptorProto f;
    REQUIRE(f.ParseFromString(bytes));
    files.push_back(f.name());
  }
  INFO(absl::StrJoin(files, ","));
  CHECK(std::find(files.begin(), files.end(), "kagent/v1/job_service.proto") != files.end());
  CHECK(std::find(files.begin(), files.end(), "kagent/v1/common.proto") != files.end());
  req.set_file_containing_symbol("kagent.v1.NoSuchThing");
  REQUIRE(stream->Write(req));
  REQUIRE(stream->Read(&resp));
  CHECK(resp.error_response().error_code() == grpc::StatusCode::NOT_FOUND);
  stream->WritesDone();
  CHECK(stream->Finish().ok());
  // v1alpha still answers (raw bytes: v1 and v1alpha messages are the same on the wire).
  grpc::GenericStub generic(d.channel);
  auto actx = Ctx();
  grpc::CompletionQueue cq;
  auto call = generic.PrepareCall(actx.get(), "/grpc.reflection.v1alpha.ServerReflection/ServerReflectionInfo", &cq);
  void* tag;
  bool ok;
  call->StartCall(reinterpret_cast<void*>(1));
  REQUIRE(cq.Next(&tag, &ok));
  std::string bytes;
  grpc::reflection::v1::ServerReflectionRequest list;
  list.set_list_services("");
  list.SerializeToString(&bytes);
  grpc::Slice slice(bytes);
  grpc::ByteBuffer buf(&slice, 1);
  call->Write(buf, reinterpret_cast<void*>(2));
  REQUIRE(cq.Next(&tag, &ok));
  grpc::ByteBuffer got;
  call->Read(&got, reinterpret_cast<void*>(3));
  REQUIRE(cq.Next(&tag, &ok));
  REQUIRE(ok);
  std::vector<grpc::Slice> slices;
  (void)got.Dump(&slices);
  std::string raw;
  for (const auto& s : slices) raw.append(reinterpret_cast<const char*>(s.begin()), s.size());
  grpc::reflection::v1::ServerReflectionResponse alpha;
  REQUIRE(alpha.ParseFromString(raw));
  CHECK(alpha.list_services_response().service_size() > 0);
  call->WritesDone(reinterpret_cast<void*>(4));
  REQUIRE(cq.Next(&tag, &ok));
  grpc::Status fs;
  call->Finish(&fs, reinterpret_cast<void*>(5));
  REQUIRE(cq.Next(&tag, &ok));
}

TEST_CASE("kagentd: shutdown with an open WatchJob stream keeps drain + grace", "[integration]") {
  constexpr double kDrain = 3, kGrace = 3;
  Daemon d(TempDir(), {absl::StrCat("--drain-seconds=", kDrain),
                       absl::StrCat("--shutdown-grace-seconds=", kGrace)});
  v1::SubmitJobResponse resp;
  auto c = Ctx();
  REQUIRE(d.jobs->SubmitJob(c.get(), ReluAddJob(5), &resp).ok());
  // A watcher that stays open (no deadline) until the server ends the stream.
  std::atomic<int> events{0};
  std::atomic<bool> ended{false};
  grpc::ClientContext wctx;
  v1::WatchJobRequest wr;
  wr.set_job_id(resp.job().id());
  auto reader = d.jobs->WatchJob(&wctx, wr);
  using Clock = std::chrono::steady_clock;
  Clock::time_point stream_end;
  std::thread watcher([&] {
    v1::JobEvent e;
    while (reader->Read(&e)) ++events;
    stream_end = Clock::now();
    ended = true;
  });
  while (events.load() == 0 && !ended) std::this_thread::sleep_for(std::chrono::milliseconds(50));
  REQUIRE_FALSE(ended.load());  // the job is still running: the stream stays open
  const Clock::time_point start = Clock::now();
  d.proc->Signal(SIGTERM);
  int rc = d.proc->Wait(absl::Seconds(60));
  const double exited = std::chrono::duration<double>(Clock::now() - start).count();
  wctx.TryCancel();
  watcher.join();
  const double stream = std::chrono::duration<double>(stream_end - start).count();
  WARN("stream ended " << stream << " s and kagentd exited " << exited << " s after SIGTERM (drain "
                       << kDrain << " s + grace " << kGrace << " s)");
  INFO(d.proc->Log().substr(0, 20000));
  CHECK(rc == 0);
  // The servers keep the bound: the stream ends once the grace deadline cancels it.
  CHECK(stream < kDrain + kGrace + 0.5);
  // The process then stops the worker's harness server (SIGTERM; it exits in under a
  // second since it skips the interpreter's teardown: 2-3 s before). The margin is for a
  // loaded machine.
  CHECK(exited < kDrain + kGrace + 4);
}

}  // namespace
}  // namespace kagent::testing
