#include "kernel_model/recommendation.h"

#include <algorithm>
#include <vector>

#include "absl/strings/str_cat.h"
#include "kernel_model/gpu_spec.h"
#include "kernel_model/speedup_text.h"

namespace kagent {

std::string DeployName(v1::Deploy deploy) {
  switch (deploy) {
    case v1::DEPLOY_KERNEL:
      return "the kernel";
    case v1::DEPLOY_EAGER:
      return "eager";
    case v1::DEPLOY_TORCH_COMPILE:
      return "torch.compile";
    default:
      return "";
  }
}

std::string DeployKey(v1::Deploy deploy) {
  return deploy == v1::DEPLOY_KERNEL ? "kernel" : DeployName(deploy);
}

v1::Recommendation Recommend(const v1::Measurement& final_run) {
  struct Path {
    v1::Deploy deploy;
    double ms;
  };
  // In order of preference on a tie: PyTorch's paths before the kernel (the kernel must
  // beat them), eager before torch.compile (nothing to compile).
  std::vector<Path> timed;
  for (Path p : {Path{v1::DEPLOY_EAGER, final_run.eager().median_ms()},
                 Path{v1::DEPLOY_TORCH_COMPILE, final_run.compiled().median_ms()},
                 Path{v1::DEPLOY_KERNEL, final_run.candidate().median_ms()}}) {
    if (p.ms > 0) timed.push_back(p);
  }
  std::stable_sort(timed.begin(), timed.end(),
                   [](const Path& a, const Path& b) { return a.ms < b.ms; });
  v1::Recommendation r;
  if (timed.empty()) {
    r.set_summary("no recommendation: nothing was timed");
    return r;
  }
  r.set_deploy(timed[0].deploy);
  const std::string what = timed[0].deploy == v1::DEPLOY_KERNEL
                               ? std::string("deploy the kernel")
                               : absl::StrCat("keep PyTorch's ", DeployName(timed[0].deploy));
  if (timed.size() > 1) {
    r.set_runner_up(timed[1].deploy);
    r.set_margin_pct((timed[1].ms / timed[0].ms - 1) * 100);
    r.set_summary(absl::StrCat(what, ": fastest by ", FormatPercent(r.margin_pct()), " (over ",
                               DeployName(timed[1].deploy), ")"));
    // PyTorch kept and the kernel not the runner-up: the margin above is between PyTorch's
    // own paths, so say how far the kernel is behind the path kept.
    const double kernel_ms = final_run.candidate().median_ms();
    if (KeepsPyTorch(timed[0].deploy) && timed[1].deploy != v1::DEPLOY_KERNEL && kernel_ms > 0) {
      r.set_summary(absl::StrCat(r.summary(), "; the kernel is ",
                                 FormatVersus(timed[0].ms / kernel_ms, DeployName(timed[0].deploy))));
    }
  } else {
    r.set_summary(absl::StrCat(what, ": the only path timed"));
  }
  if (MeasuredOnCpuWorker(final_run)) {
    r.set_summary(absl::StrCat(r.summary(),
                               "; timed on the CPU worker (Triton's interpreter), not on a GPU"));
  }
  return r;
}

v1::Recommendation RecommendationOf(const v1::JobResult& result) {
  if (result.recommendation().deploy() != v1::DEPLOY_UNSPECIFIED) return result.recommendation();
  return Recommend(result.best_measurement());
}

}  // namespace kagent
