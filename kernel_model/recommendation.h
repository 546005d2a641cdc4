// What a user should deploy for a problem, from the best kernel's final run: that run timed
// the kernel, eager PyTorch and torch.compile side by side (docs/measurement.md), so the
// choice compares times of one run. The kernel is recommended only when it is strictly
// faster than both PyTorch paths; otherwise the faster PyTorch path is kept ("keep PyTorch's
// eager: fastest by 34 % (over the kernel)"), eager on a tie with torch.compile. When the
// margin is between PyTorch's two paths, the summary also says how far the kernel is behind
// ("keep PyTorch's eager: fastest by 0.1 % (over torch.compile); the kernel is 1.19x slower
// than eager").
//
// Thread-safe (pure functions).
#ifndef KAGENT_KERNEL_MODEL_RECOMMENDATION_H_
#define KAGENT_KERNEL_MODEL_RECOMMENDATION_H_

#include <string>

#include "kagent/v1/common.pb.h"

namespace kagent {

// The recommendation from `final_run`'s medians (candidate, eager, compiled; a time <= 0
// was not measured and takes no part). Deploy UNSPECIFIED when none was measured. The
// summary says which and by how much; on a CPU worker (MeasuredOnCpuWorker) it adds that
// the times are Triton's interpreter's, not a GPU's.
kagent::v1::Recommendation Recommend(const kagent::v1::Measurement& final_run);

// `result`'s stored recommendation; for a result stored before there was one (deploy
// UNSPECIFIED), Recommend(result.best_measurement()).
kagent::v1::Recommendation RecommendationOf(const kagent::v1::JobResult& result);

// "the kernel", "eager", "torch.compile"; "" for UNSPECIFIED.
std::string DeployName(kagent::v1::Deploy deploy);

// The short form for tables and JSON: "kernel", "eager", "torch.compile"; "" for
// UNSPECIFIED.
std::string DeployKey(kagent::v1::Deploy deploy);

// Whether `deploy` keeps a PyTorch path (eager or torch.compile) rather than the kernel.
inline bool KeepsPyTorch(kagent::v1::Deploy deploy) {
  return deploy == kagent::v1::DEPLOY_EAGER || deploy == kagent::v1::DEPLOY_TORCH_COMPILE;
}

}  // namespace kagent

#endif  // KAGENT_KERNEL_MODEL_RECOMMENDATION_H_
