// The judge's root causes, the second half of Judge::DiagnoseByRules: from a
// Classification (classification.h), one cause per fired category (primary first, then
// secondary, then redundant traffic), then the supporting observations: an occupancy cap
// that is not the bottleneck, the dominant stall reasons, achieved against theoretical
// occupancy, DRAM bytes over the op's minimum, poor L2 reuse and idle tensor cores on
// ops that reuse tiles, and which kernel of several is diagnosed. Every cause cites the
// metrics it read (name, value, unit, meaning) from the view; a cause that can cite none
// is left out. docs/judge.md lists them.
//
// Thread-safe (a pure function over immutable inputs).
#ifndef KAGENT_SERVICES_JUDGE_ROOT_CAUSES_H_
#define KAGENT_SERVICES_JUDGE_ROOT_CAUSES_H_

#include <vector>

#include "kagent/v1/common.pb.h"
#include "kagent/v1/judge_service.pb.h"
#include "kernel_model/profile_view.h"
#include "services/judge/classification.h"
#include "services/judge/judge.h"

namespace kagent {

// The root causes of the kernel `view` describes, classified as `k` under options `o`,
// in the order the report lists them.
std::vector<kagent::v1::RootCause> WriteRootCauses(const kagent::v1::DiagnoseRequest& request,
                                                   const ProfileView& view,
                                                   const Classification& k,
                                                   const JudgeOptions& o);

}  // namespace kagent

#endif  // KAGENT_SERVICES_JUDGE_ROOT_CAUSES_H_
