#include "services/optimization_manager/optimization_manager_service.h"

#include <atomic>
#include <chrono>
#include <set>
#include <string>
#include <thread>

#include <catch2/catch.hpp>
#include <grpcpp/server_context.h>

#include "absl/strings/match.h"
#include "common/source_text.h"
#include "engines/heuristic/heuristic_brain.h"
#include "engines/heuristic/test_kernels.h"
#include "engines/heuristic/test_signatures.h"

namespace kagent {
namespace {

OptimizationManagerOptions Options() {
  OptimizationManagerOptions o;
  o.max_parallel_workers = 4;
  o.python = "python3";
  return o;
}

std::unique_ptr<HeuristicBrain> Brain() {
  auto lib = TemplateLibrary::Embedded();
  REQUIRE(lib.ok());
  return std::make_unique<HeuristicBrain>(*lib);
}

v1::GenerateRequest RoundRequest() {
  v1::GenerateRequest req;
  req.set_job_id("job-1");
  req.mutable_problem()->set_source("class Model: ...");
  *req.mutable_op_signature() = testing::MatvecSignature(2048, 1048576);
  req.mutable_gpu()->set_sm_count(132);
  v1::KernelSource parent;
  parent.set_source(testing::kUserMatvec);
  parent.set_origin("user");
  (*req.mutable_parents())["k0"] = parent;
  return req;
}

v1::Assignment* Add(v1::GenerateRequest* req, int worker, std::map<std::string, std::string> knobs,
                    const std::string& template_switch = "") {
  v1::Assignment* a = req->mutable_plan()->add_assignments();
  a->set_parent_kernel_id("k0");
  a->set_worker_index(worker);
  for (const auto& [k, v] : knobs) (*a->mutable_prescription()->mutable_knob_changes())[k] = v;
  a->mutable_prescription()->set_template_switch(template_switch);
  return a;
}

TEST_CASE("Manager: a round's assignments run in parallel with compile checks and dedup") {
  auto brain = Brain();
  OptimizationManagerServiceImpl svc(Options(), brain.get(), nullptr);
  v1::GenerateRequest req = RoundRequest();
  Add(&req, 0, {{"BLOCK_M", "/2"}});
  Add(&req, 1, {{"BLOCK_K", "x2"}});
  Add(&req, 2, {}, "matvec_split_k");
  Add(&req, 3, {{"BLOCK_M", "16"}});      // same kernel as worker 0
  Add(&req, 4, {{"num_stages", "-1"}});   // already at the bound
  Add(&req, 5, {{"BLOCK_M", "x1"}});      // no change: same as the parent... refused earlier
  v1::GenerateResponse resp;
  REQUIRE(svc.DoGenerate(req, &resp).ok());
  REQUIRE(resp.kernels_size() == 6);
  for (int i = 0; i < 3; ++i) {
    INFO(i << ": " << resp.kernels(i).error());
    CHECK(resp.kernels(i).error().empty());
    CHECK_FALSE(resp.kernels(i).kernel().source().empty());
    CHECK(resp.kernels(i).assignment().worker_index() == i);
    CHECK_FALSE(resp.kernels(i).assignment().prescription().expected_effect().empty());
  }
  CHECK(resp.kernels(2).kernel().origin() == "template:matvec_split_k");
  // The switch renders a template: its variants come along, checked and distinct; the
  // knob moves on the user's kernel have none, nor has the duplicate.
  CHECK(resp.kernels(2).variants_size() > 0);
  CHECK(resp.kernels(2).variants_size() <= kDefaultMaxVariants);
  std::set<std::string> sources = {NormalizeSource(testing::kUserMatvec)};
  for (const auto& g : resp.kernels()) {
    if (g.has_kernel()) CHECK(sources.insert(NormalizeSource(g.kernel().source())).second);
  }
  for (const auto& v : resp.kernels(2).variants()) {
    CHECK(v.origin() == "template:matvec_split_k");
    CHECK(sources.insert(NormalizeSource(v.source())).second);
  }
  for (int i : {0, 1, 3, 4, 5}) CHECK(resp.kernels(i).variants_size() == 0);
  CHECK_FALSE(resp.kernels(3).has_kernel());
  CHECK(absl::StrContains(resp.kernels(3).error(), "duplicate: same kernel as assignment 0"));
  CHECK(resp.kernels(3).duplicate());
  for (int i : {0, 1, 2, 4}) CHECK_FALSE(resp.kernels(i).duplicate());
  // Changes that cannot be made fall back to a derived move, and say so.
  CHECK(absl::StrContains(resp.kernels(4).assignment().prescription().fallback(),
                          "num_stages stays at 1"));
  CHECK(absl::StrContains(resp.kernels(5).assignment().prescription().fallback(), "BLOCK_M"));
  CHECK(resp.kernels(4).kernel().source() != resp.kernels(5).kernel().source());
}

TEST_CASE("Manager: fallbacks of one parent differ and record the move made") {
  // 27_layernorm-shaped: two prescriptions whose moves do not exist in the kernel. Both
  // fall back; the second gets another derived move instead of "duplicate: same kernel
  // as assignment 0". The record names the move made and its expected speedup.
  auto brain = Brain();
  OptimizationManagerServiceImpl svc(Options(), brain.get(), nullptr);
  v1::GenerateRequest req = RoundRequest();
  v1::Assignment* a0 = Add(&req, 0, {{"input_precision", "tf32"}});
  a0->mutable_prescription()->set_pattern_id("tf32-tensor-cores-for-fp32");
  a0->mutable_prescription()->set_fix("Run fp32 tl.dot with input_precision='tf32'");
  a0->mutable_prescription()->set_expected_speedup(3.0);
  Add(&req, 1, {}, "welford_single_pass_norm_missing");
  v1::GenerateResponse resp;
  REQUIRE(svc.DoGenerate(req, &resp).ok());
  REQUIRE(resp.kernels_size() == 2);
  for (int i = 0; i < 2; ++i) {
    INFO(i << ": " << resp.kernels(i).error());
    CHECK(resp.kernels(i).has_kernel());
    CHECK_FALSE(resp.kernels(i).assignment().prescription().fallback().empty());
  }
  CHECK(resp.kernels(0).kernel().source() != resp.kernels(1).kernel().source());
  const auto& rx = resp.kernels(0).assignment().prescription();
  CHECK(rx.fallback() == "the kernel has no input_precision knob");
  CHECK(absl::StartsWith(rx.fix(), "num_warps 4 -> 8"));   // the move made, not TF32's text
  CHECK_FALSE(absl::StrContains(rx.fix(), "tf32"));
  CHECK(rx.expected_speedup() == Approx(1.10));
  CHECK(rx.pattern_id() == "tf32-tensor-cores-for-fp32");  // still traceable to its prescription
}

TEST_CASE("Manager: the parent's diagnosis reaches the brain and guides its fallback") {
  // The same prescription that cannot be made (no input_precision knob): without a
  // report the fallback is a move of no diagnosis; with the judge's memory-bound report
  // on the parent, a memory-bound move for the op (a matvec: one streaming row per
  // program).
  auto brain = Brain();
  OptimizationManagerServiceImpl svc(Options(), brain.get(), nullptr);
  v1::GenerateRequest req = RoundRequest();
  Add(&req, 0, {{"input_precision", "tf32"}})->mutable_prescription()->set_pattern_id("tf32");
  v1::GenerateResponse plain;
  REQUIRE(svc.DoGenerate(req, &plain).ok());
  REQUIRE(plain.kernels_size() == 1);
  CHECK(absl::StrContains(plain.kernels(0).assignment().prescription().expected_effect(),
                          "no diagnosis"));

  v1::BottleneckReport report;
  report.set_primary(v1::BOTTLENECK_MEMORY_BOUND);
  (*req.mutable_parent_reports())["k0"] = report;
  v1::GenerateResponse guided;
  REQUIRE(svc.DoGenerate(req, &guided).ok());
  REQUIRE(guided.kernels_size() == 1);
  INFO(guided.kernels(0).error());
  const auto& rx = guided.kernels(0).assignment().prescription();
  CHECK_FALSE(rx.fallback().empty());
  CHECK(absl::StrContains(rx.expected_effect(), "memory bound"));
  CHECK(guided.kernels(0).kernel().origin() == "template:matvec_row_per_program");
}

TEST_CASE("Manager: open prescriptions get distinct alternatives") {
  auto brain = Brain();
  OptimizationManagerServiceImpl svc(Options(), brain.get(), nullptr);
  v1::GenerateRequest req = RoundRequest();
  Add(&req, 0, {});
  Add(&req, 1, {});
  v1::GenerateResponse resp;
  REQUIRE(svc.DoGenerate(req, &resp).ok());
  REQUIRE(resp.kernels_size() == 2);
  CHECK(resp.kernels(0).error().empty());
  CHECK(resp.kernels(1).error().empty());
  CHECK(resp.kernels(0).kernel().source() != resp.kernels(1).kernel().source());
}

TEST_CASE("Manager: first kernel when the plan and parents are empty") {
  auto brain = Brain();
  OptimizationManagerServiceImpl svc(Options(), brain.get(), nullptr);
  v1::GenerateRequest req;
  req.mutable_problem()->set_source("class Model: ...");
  *req.mutable_op_signature() = testing::MatvecSignature(2048, 1048576);
  v1::GenerateResponse resp;
  grpc::ServerContext ctx;
  REQUIRE(svc.Generate(&ctx, &req, &resp).ok());
  REQUIRE(resp.kernels_size() == 1);
  CHECK(resp.kernels(0).error().empty());
  CHECK(resp.kernels(0).kernel().origin() == "template:matvec_row_per_program");

  v1::GenerateRequest no_sig;
  no_sig.mutable_problem()->set_source("x");
  CHECK(svc.DoGenerate(no_sig, &resp).code() == absl::StatusCode::kInvalidArgument);
}

// A brain that returns fixed sources, to drive the checker.
class ScriptedBrain : public KernelBrain {
 public:
  explicit ScriptedBrain(std::string source) : source_(std::move(source)) {}
  std::string name() const override { return "scripted"; }
  absl::StatusOr<BrainResult> FirstKernel(const FirstKernelRequest&) override { return Make(); }
  absl::StatusOr<BrainResult> ApplyFix(const FixRequest& r) override {
    calls_++;
    BrainResult b = Make();
    b.kernel.set_source(source_ + "\n# worker " + std::to_string(r.alternative) +
                        std::to_string(calls_.load()) + "\nvalue_" +
                        std::to_string(calls_.load()) + " = 1\n");
    return b;
  }
  std::atomic<int> calls_{0};

 private:
  BrainResult Make() {
    BrainResult b;
    b.kernel.set_source(source_);
    return b;
  }
  std::string source_;
};

// A brain whose every result has variants, by the assignment's index among its parent's
// (fallback_alternative): 0 -> K0 with V1, a broken one, V1 again (other whitespace), the
// parent and V2; 1 -> K1 with V2, K0 and V3; 2 -> K0 again (a duplicate) with V4.
class VariantBrain : public KernelBrain {
 public:
  static std::string Src(const std::string& tag) {
    return "import triton\n@triton.jit\ndef k(x):\n    pass\n\nclass ModelNew:\n    tag = '" +
           tag + "'\n";
  }
  std::string name() const override { return "variants"; }
  absl::StatusOr<BrainResult> FirstKernel(const FirstKernelRequest&) override {
    return Make("K0", {"V1", "V1"});  // the second is left out
  }
  absl::StatusOr<BrainResult> ApplyFix(const FixRequest& r) override {
    switch (r.fallback_alternative) {
      case 0:
        return Make("K0", {"V1", "broken", "V1 again", "parent", "V2"});
      case 1:
        return Make("K1", {"V2", "K0", "V3"});
      default:
        return Make("K0", {"V4"});
    }
  }

 private:
  static BrainResult Make(const std::string& kernel, const std::vector<std::string>& variants) {
    BrainResult b;
    b.kernel.set_source(Src(kernel));
    for (const std::string& v : variants) {
      v1::KernelSource& k = b.variants.emplace_back();
      if (v == "broken") {
        k.set_source("import triton\n@triton.jit\ndef k(x):\n    return (\n");
      } else if (v == "parent") {
        k.set_source(testing::kUserMatvec);
      } else if (v == "V1 again") {
        k.set_source(Src("V1") + "\n\n# the same code\n");
      } else {
        k.set_source(Src(v));
      }
    }
    return b;
  }
};

TEST_CASE("Manager: variants pass the compile check and are never screened twice") {
  VariantBrain brain;
  OptimizationManagerServiceImpl svc(Options(), &brain, nullptr);
  v1::GenerateRequest req = RoundRequest();
  Add(&req, 0, {{"BLOCK_M", "/2"}});
  Add(&req, 1, {{"BLOCK_M", "/2"}});
  Add(&req, 2, {{"BLOCK_M", "/2"}});
  v1::GenerateResponse resp;
  REQUIRE(svc.DoGenerate(req, &resp).ok());
  REQUIRE(resp.kernels_size() == 3);
  auto tags = [](const v1::GeneratedKernel& g) {
    std::vector<std::string> out;
    for (const auto& v : g.variants()) {
      size_t at = v.source().find("tag = '");
      out.push_back(at == std::string::npos ? "?" : v.source().substr(at + 7, 2));
    }
    return out;
  };
  // The broken one fails the check; V1 again, the parent, V2 (assignment 0's) and K0
  // (assignment 0's kernel) are taken already; the duplicate's variants go with it.
  CHECK(tags(resp.kernels(0)) == std::vector<std::string>{"V1", "V2"});
  CHECK(tags(resp.kernels(1)) == std::vector<std::string>{"V3"});
  CHECK(absl::StrContains(resp.kernels(2).error(), "duplicate: same kernel as assignment 0"));
  CHECK(resp.kernels(2).duplicate());
  CHECK(resp.kernels(2).variants_size() == 0);

  // A first kernel's variants too.
  v1::GenerateRequest first;
  first.mutable_problem()->set_source("class Model: ...");
  *first.mutable_op_signature() = testing::MatvecSignature(64, 64);
  v1::GenerateResponse fresp;
  REQUIRE(svc.DoGenerate(first, &fresp).ok());
  REQUIRE(fresp.kernels_size() == 1);
  CHECK(tags(fresp.kernels(0)) == std::vector<std::string>{"V1"});
}

TEST_CASE("Manager: syntax errors and missing pieces are reported per assignment") {
  ScriptedBrain broken("import triton\n@triton.jit\ndef k(x):\n    return (\n\nclass ModelNew:\n  pass\n");
  OptimizationManagerServiceImpl svc(Options(), &broken, nullptr);
  v1::GenerateRequest req = RoundRequest();
  Add(&req, 0, {{"BLOCK_M", "/2"}});
  v1::GenerateResponse resp;
  REQUIRE(svc.DoGenerate(req, &resp).ok());
  REQUIRE(resp.kernels_size() == 1);
  CHECK(absl::StrContains(resp.kernels(0).error(), "compile check failed: syntax error"));

  ScriptedBrain no_model("import triton\n@triton.jit\ndef k(x):\n    pass\n");
  OptimizationManagerServiceImpl svc2(Options(), &no_model, nullptr);
  v1::GenerateResponse resp2;
  REQUIRE(svc2.DoGenerate(req, &resp2).ok());
  CHECK(absl::StrContains(resp2.kernels(0).error(), "no top-level class ModelNew"));

  ScriptedBrain no_jit("class ModelNew:\n    pass\n");
  OptimizationManagerServiceImpl svc3(Options(), &no_jit, nullptr);
  v1::GenerateResponse resp3;
  REQUIRE(svc3.DoGenerate(req, &resp3).ok());
  CHECK(absl::StrContains(resp3.kernels(0).error(), "no @triton.jit function"));

  // A CUDA C++ candidate (load_inline) has its kernel in a string: it passes; a string
  // without a __global__ function does not.
  ScriptedBrain cuda(
      "cuda_source = r\"\"\"\n__global__ void __launch_bounds__(256) k(float* x) {}\n\"\"\"\n"
      "class ModelNew:\n    pass\n");
  OptimizationManagerServiceImpl svc4(Options(), &cuda, nullptr);
  v1::GenerateResponse resp4;
  REQUIRE(svc4.DoGenerate(req, &resp4).ok());
  CHECK(resp4.kernels(0).error().empty());
  ScriptedBrain no_global(
      "cuda_source = '__device__ void k(float* x) {}'\nclass ModelNew:\n    pass\n");
  OptimizationManagerServiceImpl svc5(Options(), &no_global, nullptr);
  v1::GenerateResponse resp5;
  REQUIRE(svc5.DoGenerate(req, &resp5).ok());
  CHECK(absl::StrContains(resp5.kernels(0).error(), "or __global__ kernel"));
}

TEST_CASE("Manager: request validation") {
  auto brain = Brain();
  OptimizationManagerServiceImpl svc(Options(), brain.get(), nullptr);
  v1::GenerateResponse resp;
  v1::GenerateRequest missing = RoundRequest();
  Add(&missing, 0, {{"BLOCK_M", "/2"}})->set_parent_kernel_id("nope");
  auto s = svc.DoGenerate(missing, &resp);
  CHECK(s.code() == absl::StatusCode::kInvalidArgument);
  CHECK(absl::StrContains(s.message(), "'nope'"));
  v1::GenerateRequest other = RoundRequest();
  other.set_brain("openai:gpt");
  CHECK(svc.DoGenerate(other, &resp).code() == absl::StatusCode::kFailedPrecondition);
  OptimizationManagerOptions small = Options();
  small.max_assignments = 1;
  OptimizationManagerServiceImpl svc2(small, brain.get(), nullptr);
  v1::GenerateRequest big = RoundRequest();
  Add(&big, 0, {{"BLOCK_M", "/2"}});
  Add(&big, 1, {{"BLOCK_K", "x2"}});
  CHECK(svc2.DoGenerate(big, &resp).code() == absl::StatusCode::kInvalidArgument);
}

TEST_CASE("Manager: normalization ignores comments and whitespace, not strings") {
  CHECK(NormalizeSource("x  =  1   # c\n\n\ny = '#  k'\n") ==
        NormalizeSource("x = 1\ny = '#  k'   \n"));
  CHECK(NormalizeSource("y = '#  k'\n") != NormalizeSource("y = '# k'\n"));
}

}  // namespace
}  // namespace kagent
