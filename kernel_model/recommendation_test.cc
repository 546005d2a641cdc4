#include "kernel_model/recommendation.h"

#include <catch2/catch.hpp>

#include "kernel_model/gpu_spec.h"
#include "kernel_model/speedup_text.h"

namespace kagent {
namespace {

v1::Measurement Run(double kernel_ms, double eager_ms, double compile_ms) {
  v1::Measurement m;
  m.set_gpu_name("NVIDIA H200");
  m.mutable_candidate()->set_median_ms(kernel_ms);
  m.mutable_eager()->set_median_ms(eager_ms);
  m.mutable_compiled()->set_median_ms(compile_ms);
  return m;
}

TEST_CASE("speedup text: slower reads as slower, with the digits that keep it from 0") {
  CHECK(FormatSpeedup(2.0 / 1.0) == "2.00x faster");
  CHECK(FormatSpeedup(0.8) == "0.80x (1.25x slower)");
  CHECK(FormatSpeedup(1.0 / 338) == "0.003x (338x slower)");
  CHECK(FormatSpeedup(0.9996) == "1.00x (as fast)");
  CHECK(FormatSpeedup(0) == "n/a");
  CHECK(FormatSpeedup(-1) == "n/a");
  CHECK(FormatVersus(0.01, "eager") == "100x slower than eager");
  CHECK(FormatVersus(1.5, "torch.compile") == "1.50x faster than torch.compile");
  CHECK(FormatVersus(1.001, "the start") == "as fast as the start");
  CHECK(FormatVersus(0, "eager") == "not compared with eager");
  CHECK(FormatPercent(34.2) == "34 %");
  CHECK(FormatPercent(4.24) == "4.2 %");
}

TEST_CASE("recommendation: the kernel only when it beats both PyTorch paths") {
  // 1.0 ms kernel, 1.25 ms eager, 1.1 ms compile: the kernel, 10 % over torch.compile.
  v1::Recommendation k = Recommend(Run(1.0, 1.25, 1.1));
  CHECK(k.deploy() == v1::DEPLOY_KERNEL);
  CHECK(k.runner_up() == v1::DEPLOY_TORCH_COMPILE);
  CHECK(k.margin_pct() == Approx(10.0));
  CHECK(k.summary() == "deploy the kernel: fastest by 10 % (over torch.compile)");

  // eager 0.5 ms, compile 0.8 ms, kernel 2 ms: keep eager, 60 % over torch.compile.
  v1::Recommendation e = Recommend(Run(2.0, 0.5, 0.8));
  CHECK(e.deploy() == v1::DEPLOY_EAGER);
  CHECK(e.runner_up() == v1::DEPLOY_TORCH_COMPILE);
  CHECK(e.margin_pct() == Approx(60.0));
  CHECK(e.summary() ==
        "keep PyTorch's eager: fastest by 60 % (over torch.compile); the kernel is 4.00x slower "
        "than eager");

  // compile 1.0 ms, kernel 1.04 ms, eager 3 ms: keep torch.compile, 4 % over the kernel.
  v1::Recommendation c = Recommend(Run(1.04, 3.0, 1.0));
  CHECK(c.deploy() == v1::DEPLOY_TORCH_COMPILE);
  CHECK(c.runner_up() == v1::DEPLOY_KERNEL);
  CHECK(c.margin_pct() == Approx(4.0));
  CHECK(c.summary() == "keep PyTorch's torch.compile: fastest by 4.0 % (over the kernel)");
}

TEST_CASE("recommendation: ties keep PyTorch, eager before torch.compile") {
  v1::Recommendation tie = Recommend(Run(1.0, 2.0, 1.0));
  CHECK(tie.deploy() == v1::DEPLOY_TORCH_COMPILE);
  CHECK(tie.runner_up() == v1::DEPLOY_KERNEL);
  CHECK(tie.margin_pct() == 0);
  v1::Recommendation all = Recommend(Run(1.0, 1.0, 1.0));
  CHECK(all.deploy() == v1::DEPLOY_EAGER);
  CHECK(all.runner_up() == v1::DEPLOY_TORCH_COMPILE);
}

TEST_CASE("recommendation: untimed paths take no part, and nothing timed gives none") {
  v1::Recommendation k = Recommend(Run(1.0, 0, 0));
  CHECK(k.deploy() == v1::DEPLOY_KERNEL);
  CHECK(k.runner_up() == v1::DEPLOY_UNSPECIFIED);
  CHECK(k.margin_pct() == 0);
  CHECK(k.summary() == "deploy the kernel: the only path timed");
  CHECK(Recommend(Run(0, 0, 0)).deploy() == v1::DEPLOY_UNSPECIFIED);
  CHECK(Recommend(Run(2.0, 0, 1.0)).deploy() == v1::DEPLOY_TORCH_COMPILE);
}

TEST_CASE("recommendation: a CPU worker's times are said to be the interpreter's") {
  v1::Measurement m = Run(338, 1, 2);
  m.set_gpu_name(kCpuWorkerGpuName);
  v1::Recommendation r = Recommend(m);
  CHECK(r.deploy() == v1::DEPLOY_EAGER);
  CHECK(r.summary() ==
        "keep PyTorch's eager: fastest by 100 % (over torch.compile); the kernel is 338x slower "
        "than eager; timed on the CPU worker "
        "(Triton's interpreter), not on a GPU");
}

TEST_CASE("recommendation: a stored one is kept, an older result's is derived") {
  v1::JobResult stored;
  *stored.mutable_best_measurement() = Run(2.0, 1.0, 3.0);
  CHECK(RecommendationOf(stored).deploy() == v1::DEPLOY_EAGER);
  stored.mutable_recommendation()->set_deploy(v1::DEPLOY_KERNEL);
  CHECK(RecommendationOf(stored).deploy() == v1::DEPLOY_KERNEL);
  CHECK(DeployKey(v1::DEPLOY_KERNEL) == "kernel");
  CHECK(DeployKey(v1::DEPLOY_TORCH_COMPILE) == "torch.compile");
  CHECK(DeployName(v1::DEPLOY_UNSPECIFIED).empty());
  CHECK(KeepsPyTorch(v1::DEPLOY_EAGER));
  CHECK_FALSE(KeepsPyTorch(v1::DEPLOY_KERNEL));
}

}  // namespace
}  // namespace kagent
