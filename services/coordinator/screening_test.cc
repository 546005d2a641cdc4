// The screening policy (screening.h): which variant a screen's results choose, what is
// logged, the task id and the artifact.
#include <catch2/catch.hpp>

#include <nlohmann/json.hpp>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "services/coordinator/screening.h"

namespace kagent {
namespace {

v1::KernelSource Kernel(const std::string& source, const std::string& origin = "") {
  v1::KernelSource k;
  k.set_language(v1::KERNEL_LANGUAGE_TRITON);
  k.set_source(source);
  k.set_origin(origin);
  return k;
}

std::vector<v1::KernelSource> Kernels(int n) {
  std::vector<v1::KernelSource> out;
  for (int i = 0; i < n; ++i) out.push_back(Kernel(absl::StrCat("BLOCK = ", 64 << i, "\n")));
  return out;
}

void AddResult(v1::ScreenResponse* r, int index, bool ok, double ms, const std::string& reason = "") {
  v1::ScreenResult* x = r->add_results();
  x->set_index(index);
  x->set_ok(ok);
  x->set_median_ms(ms);
  x->set_reason(reason);
}

TEST_CASE("screening: the fastest variant that passed is chosen") {
  std::vector<v1::KernelSource> k = Kernels(7);
  v1::ScreenResponse r;
  AddResult(&r, 0, true, 1.2);
  AddResult(&r, 1, true, 1.0);
  AddResult(&r, 2, false, 0, "INCORRECT: max abs error 3.0");
  AddResult(&r, 3, true, 0.912);
  AddResult(&r, 4, false, 0.5, "CRASH");  // a failed one's time never counts
  AddResult(&r, 5, true, 0.95);
  AddResult(&r, 6, true, 0);              // ok without a time: not rankable
  ScreenChoice c = ChooseScreened("r1-w0", k, r, "");
  CHECK(c.index == 3);
  CHECK(c.median_ms == Approx(0.912));
  CHECK(c.message ==
        "r1-w0: screened 7 variants: #3 fastest 0.912 ms (screen, not a measurement); measuring it");
}

TEST_CASE("screening: the kernel as generated can win, and says so") {
  std::vector<v1::KernelSource> k = Kernels(2);
  v1::ScreenResponse r;
  AddResult(&r, 0, true, 0.5);
  AddResult(&r, 1, true, 0.7);
  ScreenChoice c = ChooseScreened("r2-w1", k, r, "");
  CHECK(c.index == 0);
  CHECK(absl::StrContains(c.message, "#0 (the kernel as generated) fastest 0.500 ms"));
}

TEST_CASE("screening: results out of range or repeated are ignored") {
  std::vector<v1::KernelSource> k = Kernels(2);
  v1::ScreenResponse r;
  AddResult(&r, 1, true, 0.9);
  AddResult(&r, 1, true, 0.1);   // a second result for #1
  AddResult(&r, 7, true, 0.05);  // no such kernel
  AddResult(&r, -1, true, 0.05);
  ScreenChoice c = ChooseScreened("r1-w0", k, r, "");
  CHECK(c.index == 1);
  CHECK(c.median_ms == Approx(0.9));
}

TEST_CASE("screening: a variant that is the parent kernel again is not chosen") {
  std::vector<v1::KernelSource> k = {Kernel("BLOCK = 128\n"), Kernel("BLOCK = 64  # the parent\n"),
                                     Kernel("BLOCK = 256\n")};
  v1::ScreenResponse r;
  AddResult(&r, 0, true, 1.1);
  AddResult(&r, 1, true, 0.8);  // fastest, but the parent's code (comments aside)
  AddResult(&r, 2, true, 1.0);
  ScreenChoice c = ChooseScreened("r1-w0", k, r, "BLOCK = 64\n");
  CHECK(c.index == 2);
  CHECK(absl::StrContains(c.message, "1 variant is the parent kernel itself, not chosen"));
  // #0 is what a failed screen would measure anyway: never skipped for being the parent.
  ScreenChoice c0 = ChooseScreened("r1-w0", k, r, "BLOCK = 128\n");
  CHECK(c0.index == 1);
}

TEST_CASE("screening: nothing passed: no choice, the reasons in the message") {
  std::vector<v1::KernelSource> k = Kernels(3);
  v1::ScreenResponse r;
  AddResult(&r, 0, false, 0, "INCORRECT: max abs error 3.0\nat [0]");
  AddResult(&r, 1, false, 0, "COMPILE_ERROR");
  ScreenChoice c = ChooseScreened("r1-w2", k, r, "");
  CHECK(c.index == -1);
  CHECK(c.message ==
        "r1-w2: screened 3 variants, none passed (#0: INCORRECT: max abs error 3.0 at [0]; "
        "#1: COMPILE_ERROR); measuring the kernel as generated");
  ScreenChoice empty = ChooseScreened("r1-w2", k, v1::ScreenResponse(), "");
  CHECK(empty.index == -1);
  CHECK(absl::StrContains(empty.message, "none passed (no result)"));
}

TEST_CASE("screening: a failed screen's message names the status") {
  std::string m = ScreenFailedMessage("r3-w0", 5, absl::UnimplementedError("unknown method Screen"));
  CHECK(m == "r3-w0: the screen of 5 variants failed (UNIMPLEMENTED: unknown method Screen); "
             "measuring the kernel as generated");
}

TEST_CASE("screening: the kernels are the generated one first, at most 32") {
  google::protobuf::RepeatedPtrField<v1::KernelSource> variants;
  for (int i = 0; i < 40; ++i) *variants.Add() = Kernel(absl::StrCat("V = ", i, "\n"));
  std::vector<v1::KernelSource> k = ScreenKernels(Kernel("G = 1\n"), variants);
  REQUIRE(k.size() == static_cast<size_t>(kMaxScreenKernels));
  CHECK(k[0].source() == "G = 1\n");
  CHECK(k[1].source() == "V = 0\n");
  CHECK(k.back().source() == "V = 30\n");
}

TEST_CASE("screening: the task id is deterministic and tied to the kernels") {
  std::vector<v1::KernelSource> k = Kernels(3);
  std::string id = ScreenTaskId("job-1", 2, 4, k);
  CHECK(absl::StartsWith(id, "job-1/r2/w4/screen/"));
  CHECK(id.size() == std::string("job-1/r2/w4/screen/").size() + 16);
  CHECK(ScreenTaskId("job-1", 2, 4, Kernels(3)) == id);  // same inputs, same id (a resume)
  std::vector<v1::KernelSource> other = k;
  other[2].set_source(other[2].source() + " ");
  CHECK(ScreenTaskId("job-1", 2, 4, other) != id);
  CHECK(ScreenTaskId("job-1", 2, 4, Kernels(2)) != id);
  CHECK(ScreenTaskId("job-1", 2, 5, k) != id);
  CHECK(ScreenTaskId("job-1", 3, 4, k) != id);
  std::vector<v1::KernelSource> cuda = k;
  cuda[0].set_language(v1::KERNEL_LANGUAGE_CUDA);
  CHECK(ScreenTaskId("job-1", 2, 4, cuda) != id);
  v1::ScreenRequest r = MakeScreenRequest(id, "job-1", v1::Problem(), k);
  CHECK(r.task_id() == id);
  CHECK(r.job_id() == "job-1");
  CHECK(r.kernels_size() == 3);
  CHECK(r.timing_reps() == 0);  // the worker's default
}

TEST_CASE("screening: screen.json says what was screened and chosen, and that it is no measurement") {
  std::vector<v1::KernelSource> k = {Kernel("A\n", "template:gemm BLOCK_M=64"),
                                     Kernel("B\n", "template:gemm BLOCK_M=128")};
  v1::ScreenResponse r;
  AddResult(&r, 0, true, 1.5);
  AddResult(&r, 1, true, 1.25);
  r.set_gpu_seconds(3.5);
  r.set_gpu_busy_seconds(2.0);
  r.set_worker_id("gpu0");
  r.set_log("tail");
  ScreenChoice c = ChooseScreened("r1-w0", k, r, "");
  nlohmann::json j = nlohmann::json::parse(ScreenArtifactJson("T", k, &r, absl::OkStatus(), c));
  CHECK(j["task_id"] == "T");
  CHECK(absl::StrContains(j["note"].get<std::string>(), "not a measurement"));
  REQUIRE(j["kernels"].size() == 2);
  CHECK(j["kernels"][1]["origin"] == "template:gemm BLOCK_M=128");
  CHECK(j["kernels"][1]["median_ms"] == 1.25);
  CHECK_FALSE(j["kernels"][0].contains("source"));
  CHECK(j["chosen_index"] == 1);
  CHECK(j["gpu_seconds"] == 3.5);
  CHECK(j["gpu_busy_seconds"] == 2.0);
  CHECK(j["worker_id"] == "gpu0");
  ScreenChoice none;
  none.message = "failed";
  nlohmann::json f = nlohmann::json::parse(
      ScreenArtifactJson("T", k, nullptr, absl::UnavailableError("gone"), none));
  CHECK(f["error"] == "UNAVAILABLE: gone");
  CHECK(f["chosen_index"] == -1);
  CHECK_FALSE(f.contains("gpu_seconds"));
}

}  // namespace
}  // namespace kagent
