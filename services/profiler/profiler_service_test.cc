#include "services/profiler/profiler_service.h"

#include <grpcpp/grpcpp.h>

#include <catch2/catch.hpp>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "nlohmann/json.hpp"
#include "common/harness/sandbox_flags.h"
#include "services/profiler/cupti_backend.h"
#include "services/profiler/testing/fake_runner.h"

namespace kagent {
namespace {

using ::kagent::testing::FakeRunner;
using ::kagent::testing::ReadFixture;

kagent::v1::ProfileRequest ValidRequest() {
  kagent::v1::ProfileRequest request;
  request.set_task_id("t1");
  request.set_job_id("j1");
  request.mutable_problem()->set_name("matvec");
  request.mutable_problem()->set_source("class Model: ...");
  request.mutable_kernel()->set_language(kagent::v1::KERNEL_LANGUAGE_TRITON);
  request.mutable_kernel()->set_source("class ModelNew: ...");
  return request;
}

ProfilerServiceOptions TestOptions() {
  ProfilerServiceOptions options;
  options.python = "python3";
  options.harness_pythonpath = "/opt/kagent/python";
  options.gpu_index = 2;
  return options;
}

// A gate that says whether it is held; a runner that notes whether it was while gpuinfo
// (which measures the GPU) ran.
class FlagGate final : public ProfileGpuGate {
 public:
  absl::Status Acquire(const CancelToken*) override {
    held = true;
    ++acquired;
    return absl::OkStatus();
  }
  void Release() override { held = false; }
  bool held = false;
  int acquired = 0;
};

class GpuinfoWatchingRunner final : public FakeRunner {
 public:
  explicit GpuinfoWatchingRunner(const FlagGate* gate) : gate_(gate) {}
  absl::StatusOr<SubprocessResult> Run(const SubprocessOptions& options) override {
    if (std::find(options.argv.begin(), options.argv.end(), "gpuinfo") != options.argv.end()) {
      gpuinfo_runs_held.push_back(gate_->held);
    }
    return FakeRunner::Run(options);
  }
  std::vector<bool> gpuinfo_runs_held;

 private:
  const FlagGate* gate_;
};

TEST_CASE("A gated profile detects the GPU under the gate, once", "[profiler_service]") {
  FlagGate gate;
  GpuinfoWatchingRunner runner(&gate);
  runner.gpuinfo_json = ::kagent::testing::kH200GpuInfo;
  runner.ncu_csv = ReadFixture("h200_triton_matvec.csv");
  ProfilerServiceImpl service(TestOptions(), nullptr, &runner);
  REQUIRE(service.RunProfile(ValidRequest(), nullptr, absl::InfiniteDuration(), &gate).ok());
  CHECK(runner.gpuinfo_runs_held == std::vector<bool>{true});
  CHECK_FALSE(gate.held);
  // The fake harness never says ready: the profile itself did not take the gate.
  CHECK(gate.acquired == 1);
  REQUIRE(service.RunProfile(ValidRequest(), nullptr, absl::InfiniteDuration(), &gate).ok());
  CHECK(runner.gpuinfo_runs_held.size() == 1);
  CHECK(gate.acquired == 1);
}

TEST_CASE("Requests are validated with what to fix", "[profiler_service]") {
  FakeRunner runner;
  ProfilerServiceImpl service(TestOptions(), nullptr, &runner);
  CHECK(service.ValidateRequest(ValidRequest()).ok());

  auto request = ValidRequest();
  request.mutable_problem()->clear_source();
  absl::Status status = service.ValidateRequest(request);
  CHECK(status.code() == absl::StatusCode::kInvalidArgument);
  CHECK(status.message().find("problem.source") != absl::string_view::npos);

  request = ValidRequest();
  request.mutable_problem()->set_source(std::string((1 << 20) + 1, 'x'));
  CHECK(service.ValidateRequest(request).message().find("limit") != absl::string_view::npos);

  request = ValidRequest();
  request.clear_kernel();
  CHECK(service.ValidateRequest(request).message().find("kernel.source") !=
        absl::string_view::npos);

  request = ValidRequest();
  request.set_timeout_seconds(-1);
  CHECK(service.ValidateRequest(request).code() == absl::StatusCode::kInvalidArgument);

  // Nothing was run for invalid requests.
  request = ValidRequest();
  request.clear_kernel();
  CHECK(service.RunProfile(request, nullptr).status().code() ==
        absl::StatusCode::kInvalidArgument);
  CHECK(runner.calls().empty());
}

TEST_CASE("Profiles under ncu and returns metrics, GPU spec and roofline", "[profiler_service]") {
  FakeRunner runner;
  runner.gpuinfo_json = ::kagent::testing::kH200GpuInfo;
  runner.ncu_csv = ReadFixture("h200_triton_matvec.csv");
  runner.harness_result =
      R"({"ok":true,"kernels_launched":["_matvec_row_kernel"],"op_signature":)"
      R"({"ops":[{"op":"aten::mv","inputs":[{"shape":[8192,8192],"strides":[8192,1],)"
      R"("dtype":"bfloat16","id":3}],"outputs":[],"scalars":{"alpha":1.5,"beta":0},"strings":{"approximate":"tanh"}}],)"
      R"("flops":134217728,"min_bytes":134250496,)"
      R"("op_class":"matvec"}})";
  ProfilerServiceImpl service(TestOptions(), nullptr, &runner);
  auto request = ValidRequest();
  request.set_timeout_seconds(45);
  absl::StatusOr<kagent::v1::ProfileResponse> response = service.RunProfile(request, nullptr);
  REQUIRE(response.ok());
  const auto& metrics = response->metrics();
  CHECK(metrics.backend() == "ncu");
  REQUIRE(metrics.kernels_size() == 1);
  CHECK(metrics.kernels(0).kernel_name() == "_matvec_row_kernel");
  CHECK(metrics.compute_sol_pct() == Approx(42.67));
  CHECK(metrics.memory_sol_pct() == Approx(82.80));
  CHECK(metrics.roofline_efficiency_pct() == Approx(82.80));
  CHECK(metrics.raw_csv() == runner.ncu_csv);
  CHECK(response->gpu().name() == "NVIDIA H200");
  CHECK(response->gpu().peak_dram_bytes_per_second() == Approx(4.8e12));
  CHECK(response->op_signature().op_class() == "matvec");
  REQUIRE(response->op_signature().ops_size() == 1);
  CHECK(response->op_signature().ops(0).scalars().at("alpha") == 1.5);
  CHECK(response->op_signature().ops(0).scalars().at("beta") == 0.0);
  CHECK(response->op_signature().ops(0).strings().at("approximate") == "tanh");
  CHECK(response->op_signature().ops(0).inputs(0).id() == 3);
  CHECK(metrics.arithmetic_intensity() == Approx(134217728.0 / 134250496.0));
  CHECK(metrics.roofline_bound_pct() > 0);

  // gpuinfo once, then ncu; pinned to the worker's GPU, with the request's timeout.
  std::vector<SubprocessOptions> calls = runner.calls();
  REQUIRE(calls.size() == 2);
  CHECK(std::find(calls[0].argv.begin(), calls[0].argv.end(), "gpuinfo") != calls[0].argv.end());
  CHECK(calls[1].argv[0] == "ncu");
  CHECK(calls[1].env.at("CUDA_VISIBLE_DEVICES") == "2");
  CHECK(calls[1].timeout == absl::Seconds(45));
  // The harness request written for the run (its temp dir is gone; check the content the
  // runner saw through argv instead).
  CHECK(::kagent::testing::ArgAfter(calls[1].argv, "--request").find("/request.json") !=
        std::string::npos);

  // A second profile reuses the detected spec.
  REQUIRE(service.RunProfile(request, nullptr).ok());
  CHECK(runner.calls().size() == 3);
}

TEST_CASE("A signature in the request is not recorded again and gives the roofline",
          "[profiler_service]") {
  FakeRunner runner;
  runner.gpuinfo_json = ::kagent::testing::kH200GpuInfo;
  runner.ncu_csv = ReadFixture("h200_triton_matvec.csv");
  // The harness records nothing when told not to.
  runner.harness_result = R"({"ok":true,"kernels_launched":["_matvec_row_kernel"]})";
  ProfilerServiceImpl service(TestOptions(), nullptr, &runner);

  auto request = ValidRequest();
  request.mutable_op_signature()->set_flops(134217728);
  request.mutable_op_signature()->set_min_bytes(134250496);
  request.mutable_op_signature()->set_op_class("matvec");
  auto* op = request.mutable_op_signature()->add_ops();
  op->set_op("aten::mv");
  op->add_inputs()->set_dtype("bfloat16");
  absl::StatusOr<kagent::v1::ProfileResponse> response = service.RunProfile(request, nullptr);
  REQUIRE(response.ok());
  std::vector<std::string> sent = runner.harness_requests();
  REQUIRE(sent.size() == 1);
  nlohmann::json harness = nlohmann::json::parse(sent[0]);
  CHECK(harness["signature"] == false);
  CHECK(response->op_signature().op_class() == "matvec");
  CHECK(response->metrics().arithmetic_intensity() == Approx(134217728.0 / 134250496.0));
  CHECK(response->metrics().roofline_bound_pct() > 0);

  // Without one, the harness records it (the field is left at its default, true).
  REQUIRE(service.RunProfile(ValidRequest(), nullptr).ok());
  sent = runner.harness_requests();
  REQUIRE(sent.size() == 2);
  CHECK_FALSE(nlohmann::json::parse(sent[1]).contains("signature"));
}

TEST_CASE("The profile request carries the sandbox mode and hidden paths", "[profiler_service]") {
  FakeRunner runner;
  runner.gpuinfo_json = ::kagent::testing::kH200GpuInfo;
  runner.ncu_csv = ReadFixture("h200_triton_matvec.csv");
  runner.harness_result = R"({"ok":true,"kernels_launched":["_matvec_row_kernel"]})";
  ProfilerServiceOptions options = TestOptions();
  options.sandbox = "best-effort";
  options.sandbox_hide = {"/etc/kagent/tokens", "/var/lib/kagent/kagent.db"};
  ProfilerServiceImpl service(options, nullptr, &runner);
  REQUIRE(service.RunProfile(ValidRequest(), nullptr).ok());
  std::vector<std::string> sent = runner.harness_requests();
  REQUIRE(sent.size() == 1);
  nlohmann::json harness = nlohmann::json::parse(sent[0]);
  CHECK(harness["sandbox"] == "best-effort");
  CHECK(harness["sandbox_hide"] ==
        nlohmann::json::array({"/etc/kagent/tokens", "/var/lib/kagent/kagent.db"}));
  CHECK_FALSE(harness.contains("cupti_counters"));  // ncu measures the counters itself
  // No mode: neither field.
  ProfilerServiceImpl plain(TestOptions(), nullptr, &runner);
  REQUIRE(plain.RunProfile(ValidRequest(), nullptr).ok());
  sent = runner.harness_requests();
  REQUIRE(sent.size() == 2);
  CHECK_FALSE(nlohmann::json::parse(sent[1]).contains("sandbox"));
  CHECK_FALSE(nlohmann::json::parse(sent[1]).contains("sandbox_hide"));
}

TEST_CASE("Sandbox flags are checked, and secret files are found", "[profiler_service]") {
  SandboxFlags f;
  CHECK(f.Validate().ok());
  CHECK(f.mode == "required");
  f.mode = "off";
  absl::Status s = f.Validate();
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(s.message() == "--sandbox must be required or best-effort, not 'off'");
  f.mode = "best-effort";
  f.hide = {"relative/path"};
  CHECK(f.Validate().message() == "--sandbox-hide needs an absolute path, not 'relative/path'");
  f.hide = {"/"};
  CHECK(f.Validate().code() == absl::StatusCode::kInvalidArgument);
  f.hide = {"/etc/kagent"};
  CHECK(f.Validate().ok());

  ServerOptions so;
  so.tls_key = "/tls/key.pem";
  so.tls_cert = "/tls/cert.pem";  // public: not hidden
  so.tokens_file = "/etc/kagent/tokens";
  CHECK(SecretFiles(so, "") == std::vector<std::string>{"/tls/key.pem", "/etc/kagent/tokens"});
  CHECK(SecretFiles(ServerOptions(), "/etc/kagent/config.json") ==
        std::vector<std::string>{"/etc/kagent/config.json"});
  CHECK(DatabaseFiles("sqlite:/var/lib/kagent/kagent.db") ==
        std::vector<std::string>{"/var/lib/kagent/kagent.db", "/var/lib/kagent/kagent.db-wal",
                                 "/var/lib/kagent/kagent.db-shm",
                                 "/var/lib/kagent/kagent.db-journal"});
  CHECK(DatabaseFiles("/d/k.db").size() == 4);
  CHECK(DatabaseFiles("postgres://u:p@h:5432/db").empty());
  CHECK(DatabaseFiles("sqlite::memory:").empty());
  CHECK(DatabaseFiles("").empty());
  // The flag's paths first, then the secrets, each once, relative ones made absolute.
  f.hide = {"/etc/kagent", "/tls/key.pem"};
  std::vector<std::string> hide = SandboxHidePaths(f, {"/tls/key.pem", "tokens"});
  REQUIRE(hide.size() == 3);
  CHECK(hide[0] == "/etc/kagent");
  CHECK(hide[1] == "/tls/key.pem");
  CHECK(hide[2] == (std::filesystem::current_path() / "tokens").string());
}

TEST_CASE("auto takes the CUPTI library when there is one, ncu when asked or without it",
          "[profiler_service]") {
  FakeRunner runner;  // ncu runnable
  runner.ncu_csv = ReadFixture("h200_triton_matvec.csv");
  runner.cupti_trace = ::kagent::testing::kOneKernelCuptiTrace;
  const std::string library = std::string(KAGENT_FIXTURE_DIR) + "/README.md";  // any file
  struct Case {
    ProfilerServiceOptions::Backend backend;
    std::string cupti_library;
    const char* chosen;
  };
  for (const Case& c : {Case{ProfilerServiceOptions::Backend::kAuto, library, "cupti"},
                        Case{ProfilerServiceOptions::Backend::kNcu, library, "ncu"},
                        // Named but absent: ncu.
                        Case{ProfilerServiceOptions::Backend::kAuto,
                             "/nonexistent/libkagent_cupti.so", "ncu"}}) {
    INFO(c.cupti_library << " -> " << c.chosen);
    ProfilerServiceOptions options = TestOptions();
    options.backend = c.backend;
    options.cupti_library = c.cupti_library;
    ProfilerServiceImpl service(options, nullptr, &runner);
    absl::StatusOr<kagent::v1::ProfileResponse> response =
        service.RunProfile(ValidRequest(), nullptr);
    REQUIRE(response.ok());
    CHECK(response->metrics().backend() == c.chosen);
  }
}

TEST_CASE("Without ncu: the CUPTI fallback, or a clear error", "[profiler_service]") {
  FakeRunner runner;
  runner.ncu_available = false;
  {
    ProfilerServiceImpl service(TestOptions(), nullptr, &runner);
    absl::Status status = service.RunProfile(ValidRequest(), nullptr).status();
    CHECK(status.code() == absl::StatusCode::kFailedPrecondition);
    CHECK(status.message() ==
          "ncu not found on PATH; install Nsight Compute or use the cupti backend");
  }
  ProfilerServiceOptions options = TestOptions();
  options.cupti_library = std::string(KAGENT_FIXTURE_DIR) + "/README.md";  // any file
  runner.cupti_trace = ::kagent::testing::kOneKernelCuptiTrace;
  ProfilerServiceImpl service(options, nullptr, &runner);
  absl::StatusOr<kagent::v1::ProfileResponse> response =
      service.RunProfile(ValidRequest(), nullptr);
  REQUIRE(response.ok());
  CHECK(response->metrics().backend() == "cupti");
  CHECK(response->metrics().kernels_size() == 1);
  CHECK(response->metrics().aggregate().duration_ns() == 8);
  CHECK(response->metrics().raw_csv().rfind("# backend cupti:", 0) == 0);
  CHECK(response->metrics().raw_csv().find("missing: ") != std::string::npos);
  CHECK(response->metrics().raw_csv().find("dram__bytes_read.sum") != std::string::npos);
  // The CUPTI backend asks the harness for the counters; ncu does not.
  nlohmann::json sent = nlohmann::json::parse(runner.harness_requests().back());
  REQUIRE(sent.contains("cupti_counters"));
  CHECK(sent["cupti_counters"].size() == CuptiCounterMetrics(90).size());
  CHECK(sent["cupti_counters"][0] == CuptiCounterMetrics(90)[0]);

  // Counters in the trace: the SOL figures come out of the same metrics as under ncu.
  // (A hand-written trace, not a recorded one.)
  runner.cupti_trace +=
      R"({"type":"counters","range":0,"name":"k","values":{"sm__throughput.avg.pct_of_peak_sustained_elapsed":61.5,"gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed":23.0,"dram__bytes_read.sum":2048}})"
      "\n"
      R"({"type":"counters_meta","passes":9,"ranges":1,"dropped":0,"missing":[],"chip":"GH100"})"
      "\n";
  runner.harness_result = R"({"ok":true,"cupti_counters":{"ok":true,"passes":9}})";
  absl::StatusOr<kagent::v1::ProfileResponse> counted =
      service.RunProfile(ValidRequest(), nullptr);
  REQUIRE(counted.ok());
  CHECK(counted->metrics().compute_sol_pct() == 61.5);
  CHECK(counted->metrics().memory_sol_pct() == 23.0);
  CHECK(counted->metrics().raw_csv().rfind(
            "# backend cupti: counters via the range profiler (9 passes", 0) == 0);
  const std::string header =
      counted->metrics().raw_csv().substr(0, counted->metrics().raw_csv().find('\n'));
  CHECK(header.find("dram__bytes_read.sum") == std::string::npos);
  CHECK(header.find("dram__bytes_write.sum") != std::string::npos);
}

TEST_CASE("The gRPC handler authenticates and maps statuses", "[profiler_service]") {
  FakeRunner runner;
  runner.gpuinfo_json = ::kagent::testing::kH200GpuInfo;
  runner.ncu_csv = ReadFixture("h200_multi.csv");
  // The profiler is internal to the cluster: only the internal token may call it.
  Authenticator auth({{"tenant-secret", "tenant-a"}}, "secret");
  ProfilerServiceImpl service(TestOptions(), &auth, &runner);
  grpc::ServerBuilder builder;
  int port = 0;
  builder.AddListeningPort("127.0.0.1:0", grpc::InsecureServerCredentials(), &port);
  builder.RegisterService(&service);
  std::unique_ptr<grpc::Server> server = builder.BuildAndStart();
  REQUIRE(server != nullptr);
  REQUIRE(port > 0);
  auto channel = grpc::CreateChannel("127.0.0.1:" + std::to_string(port),
                                     grpc::InsecureChannelCredentials());
  auto stub = kagent::v1::ProfilerService::NewStub(channel);

  {
    grpc::ClientContext context;
    kagent::v1::ProfileResponse response;
    grpc::Status status = stub->Profile(&context, ValidRequest(), &response);
    CHECK(status.error_code() == grpc::StatusCode::UNAUTHENTICATED);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer tenant-secret");
    kagent::v1::ProfileResponse response;
    grpc::Status status = stub->Profile(&context, ValidRequest(), &response);
    CHECK(status.error_code() == grpc::StatusCode::PERMISSION_DENIED);
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer secret");
    kagent::v1::ProfileResponse response;
    grpc::Status status = stub->Profile(&context, ValidRequest(), &response);
    REQUIRE(status.ok());
    CHECK(response.metrics().kernels_size() == 3);
    CHECK(response.gpu().arch() == "sm_90");
  }
  {
    grpc::ClientContext context;
    context.AddMetadata("authorization", "Bearer secret");
    auto request = ValidRequest();
    request.mutable_problem()->clear_source();
    kagent::v1::ProfileResponse response;
    grpc::Status status = stub->Profile(&context, request, &response);
    CHECK(status.error_code() == grpc::StatusCode::INVALID_ARGUMENT);
  }
  server->Shutdown();
}

}  // namespace
}  // namespace kagent

namespace kagent {
namespace {

TEST_CASE("The profiler backend flag names auto, ncu or cupti", "[profiler_service]") {
  CHECK(*ParseProfilerBackend("auto") == ProfilerServiceOptions::Backend::kAuto);
  CHECK(*ParseProfilerBackend("ncu") == ProfilerServiceOptions::Backend::kNcu);
  CHECK(*ParseProfilerBackend("cupti") == ProfilerServiceOptions::Backend::kCupti);
  absl::Status bad = ParseProfilerBackend("nsys").status();
  CHECK(bad.code() == absl::StatusCode::kInvalidArgument);
  CHECK(bad.message() == "--profiler-backend must be auto, ncu or cupti, not 'nsys'");
}

}  // namespace
}  // namespace kagent
