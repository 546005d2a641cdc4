// `kagent export --package`: the package of a recorded CPU job (tests/fixtures/jobs, a
// real relu_add job run on kagentd's CPU worker), written and then tested with its own
// pytest file under Triton's interpreter.
#include <catch2/catch.hpp>

#include <filesystem>
#include <map>
#include <string>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "common/file_io.h"
#include "common/install_paths.h"
#include "common/subprocess/subprocess.h"
#include "common/testing/fixtures.h"
#include "kernel_model/recommendation.h"
#include "kernel_model/speedup_text.h"
#include "nlohmann/json.hpp"
#include "tools/package.h"

namespace kagent {
namespace {

v1::Job RecordedCpuJob() {
  v1::Job job;
  absl::Status loaded = testing::LoadJsonFixture("tests/fixtures/jobs/cpu_relu_add.job.json", &job);
  INFO(loaded.ToString());
  REQUIRE(loaded.ok());
  return job;
}

std::map<std::string, std::string> Files(const PythonPackage& p) {
  std::map<std::string, std::string> files;
  for (const PackageFile& f : p.files) files[f.path] = f.contents;
  return files;
}

// Writes `p` under a new temporary folder and runs its pytest there with `env` added.
SubprocessResult RunPackageTests(const PythonPackage& p, std::map<std::string, std::string> env) {
  auto dir = ScopedTempDir::Create("kagent-package-test-");
  REQUIRE(dir.ok());
  for (const PackageFile& f : p.files) {
    std::filesystem::path path = std::filesystem::path((*dir)->path()) / f.path;
    std::filesystem::create_directories(path.parent_path());
    REQUIRE(WriteFileAtomically(path.string(), f.contents).ok());
  }
  SubprocessOptions o;
  o.argv = {DefaultPython(), "-m", "pytest", "-q", "-rs", "-p", "no:cacheprovider", p.name};
  o.working_dir = (*dir)->path();
  o.inherit_env = true;
  o.env = std::move(env);
  o.env["COLUMNS"] = "400";  // pytest's summary lines unwrapped
  o.timeout = absl::Seconds(120);
  absl::StatusOr<SubprocessResult> r = RunSubprocess(o);
  REQUIRE(r.ok());
  return *std::move(r);
}

TEST_CASE("package: a recorded CPU job's package holds the kernel, the reference and its figures") {
  v1::Job job = RecordedCpuJob();
  absl::StatusOr<PythonPackage> p = RenderPythonPackage(job);
  REQUIRE(p.ok());
  CHECK(p->name == "kagent_problem_relu_add");
  std::map<std::string, std::string> files = Files(*p);
  // kernel.py is the verified best kernel verbatim: a source defining ModelNew, which is
  // what a job takes as its starting kernel.
  CHECK(files.at("kagent_problem_relu_add/kernel.py") == job.result().best_kernel().source());
  CHECK(absl::StrContains(files.at("kagent_problem_relu_add/kernel.py"), "class ModelNew"));
  CHECK(files.at("kagent_problem_relu_add/reference.py") == job.problem().source());

  nlohmann::json figures = nlohmann::json::parse(files.at("kagent_problem_relu_add/figures.json"));
  const v1::JobResult& r = job.result();
  CHECK(figures["job_id"] == job.id());
  CHECK(figures["verdict"] == "VERDICT_CORRECT");
  CHECK(figures["device"] == "cpu");
  CHECK(figures["language"] == "triton");
  CHECK(figures["median_ms"] == r.best_measurement().candidate().median_ms());
  CHECK(figures["speedup_vs_eager"] == r.speedup_vs_eager());
  CHECK(figures["speedup_vs_compile"] == r.speedup_vs_compile());
  CHECK(figures["speedup_vs_start"] == r.speedup_vs_start());
  CHECK(figures["start_ms"] == r.best_measurement().reference_kernel().median_ms());
  CHECK(figures["date"] == "2026-12-05T03:24:10Z");
  CHECK(figures["roofline_efficiency_pct"].is_null());  // no counters on the CPU
  CHECK(figures["atol"].is_null());

  // The docstring and README say the same, slower as slower, and that these are
  // interpreter timings.
  const std::string& module = files.at("kagent_problem_relu_add/__init__.py");
  REQUIRE(r.speedup_vs_eager() < 1);
  const std::string slower =
      absl::StrCat("- vs eager PyTorch: ", FormatSpeedup(r.speedup_vs_eager()), " (eager ");
  CHECK(absl::StrContains(slower, "x slower) (eager "));
  CHECK(absl::StrContains(module, slower));
  CHECK(absl::StrContains(module, "(Triton's interpreter: correctness only, not GPU timings)"));
  CHECK(absl::StrContains(module, "OP_NAME = \"kagent_job_0b44f594c78b::problem_relu_add\""));
  CHECK(absl::StrContains(module, "VERIFIED_DEVICE = \"cpu\""));
  CHECK(absl::StrContains(files.at("kagent_problem_relu_add/README.md"), slower));
  CHECK(absl::StrContains(files.at("kagent_problem_relu_add/README.md"),
                          "TRITON_INTERPRET=1 python -m pytest kagent_problem_relu_add"));

  // The interpreter's kernel is slower than eager PyTorch: the package says to keep eager
  // (a result stored before recommendations existed: derived from the final run), and its
  // Model takes that path by default.
  REQUIRE(r.recommendation().deploy() == v1::DEPLOY_UNSPECIFIED);
  CHECK(figures["deploy"] == "eager");
  CHECK(figures["recommendation"] == Recommend(r.best_measurement()).summary());
  CHECK(absl::StrContains(module, "DEPLOY = \"eager\""));
  CHECK(absl::StrContains(module, "- deploy: keep PyTorch's eager: fastest by "));
  CHECK(absl::StrContains(files.at("kagent_problem_relu_add/README.md"),
                          "The job found PyTorch's eager faster than the kernel, so Model runs the "
                          "problem's reference eagerly by default"));
}

TEST_CASE("package: the recommended path is the package's default") {
  v1::Job job = RecordedCpuJob();
  for (auto [deploy, key] : {std::pair{v1::DEPLOY_KERNEL, "kernel"},
                             std::pair{v1::DEPLOY_TORCH_COMPILE, "torch.compile"}}) {
    job.mutable_result()->mutable_recommendation()->set_deploy(deploy);
    job.mutable_result()->mutable_recommendation()->set_summary("the summary");
    absl::StatusOr<PythonPackage> p = RenderPythonPackage(job);
    REQUIRE(p.ok());
    std::map<std::string, std::string> files = Files(*p);
    const std::string& module = files.at("kagent_problem_relu_add/__init__.py");
    CHECK(absl::StrContains(module, absl::StrCat("DEPLOY = \"", key, "\"")));
    CHECK(absl::StrContains(module, "- deploy: the summary"));
    nlohmann::json figures = nlohmann::json::parse(files.at("kagent_problem_relu_add/figures.json"));
    CHECK(figures["deploy"] == key);
    CHECK(absl::StrContains(files.at("kagent_problem_relu_add/README.md"),
                            deploy == v1::DEPLOY_KERNEL
                                ? "Model runs the kernel on the inputs it was verified on"
                                : "so Model runs the problem's reference under torch.compile"));
  }
}

TEST_CASE("package: the package passes its own tests under Triton's interpreter", "[python]") {
  absl::StatusOr<PythonPackage> p = RenderPythonPackage(RecordedCpuJob());
  REQUIRE(p.ok());
  SubprocessResult r = RunPackageTests(*p, {{"TRITON_INTERPRET", "1"}});
  INFO(r.stdout_data << r.stderr_data);
  CHECK(r.ok());
  // Every test ran: the kernel on its verified inputs, eagerly and under torch.compile,
  // the recommended default path (eager here), the fallback, kernel.py alone as a starting
  // kernel, and the figures.
  CHECK(absl::StrContains(r.stdout_data, "6 passed"));
  CHECK_FALSE(absl::StrContains(r.stdout_data, "skipped"));
}

TEST_CASE("package: a CUDA C++ kernel's tests skip on a machine without a GPU, saying why",
          "[python]") {
  v1::Job job = RecordedCpuJob();
  job.mutable_result()->mutable_best_kernel()->set_language(v1::KERNEL_LANGUAGE_CUDA);
  job.mutable_result()->mutable_best_measurement()->set_gpu_name("NVIDIA H200");
  absl::StatusOr<PythonPackage> p = RenderPythonPackage(job);
  REQUIRE(p.ok());
  CHECK(absl::StrContains(Files(*p).at("kagent_problem_relu_add/__init__.py"),
                          "LANGUAGE = \"cuda\""));
  SubprocessResult r = RunPackageTests(*p, {{"TRITON_INTERPRET", "1"}, {"CUDA_VISIBLE_DEVICES", ""}});
  INFO(r.stdout_data << r.stderr_data);
  CHECK(r.ok());
  // The default path, the fallback and the figures run; the three that need the kernel are
  // skipped.
  CHECK(absl::StrContains(r.stdout_data, "3 passed, 3 skipped"));
  CHECK(absl::StrContains(r.stdout_data, "the kernel is CUDA C++"));
}

TEST_CASE("package: only a DONE job's verified best kernel is packaged") {
  v1::Job running = RecordedCpuJob();
  running.set_state(v1::JOB_STATE_ROUNDS);
  absl::StatusOr<PythonPackage> p = RenderPythonPackage(running);
  CHECK(p.status().code() == absl::StatusCode::kFailedPrecondition);
  CHECK(absl::StrContains(p.status().message(), "job job-0b44f594c78b is ROUNDS"));

  v1::Job wrong = RecordedCpuJob();
  wrong.mutable_result()->mutable_best_measurement()->set_verdict(v1::VERDICT_INCORRECT);
  CHECK(RenderPythonPackage(wrong).status().code() == absl::StatusCode::kFailedPrecondition);

  v1::Job none = RecordedCpuJob();
  none.mutable_result()->clear_best_kernel();
  p = RenderPythonPackage(none);
  CHECK(absl::StrContains(p.status().message(), "without a best kernel"));
}

TEST_CASE("package: the package name is the problem's as a Python identifier") {
  CHECK(PythonPackageName("matvec-bf16") == "kagent_matvec_bf16");
  CHECK(PythonPackageName("GEMM 4096") == "kagent_gemm_4096");
  CHECK(PythonPackageName("1x1conv") == "kagent__1x1conv");
  CHECK(PythonPackageName("") == "kagent_kernel");
}

}  // namespace
}  // namespace kagent
