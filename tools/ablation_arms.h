// The search-efficiency arms as the tools name them on the command line (`kagent submit
// --ablation`, `kagent bench --ablation`; docs/loop.md, "Ablations"): the arm's name to
// the protocol's Ablation, and the rule that --sweep-seed goes only with the blind sweep.
// One table for both commands. Pure functions.
#ifndef KAGENT_TOOLS_ABLATION_ARMS_H_
#define KAGENT_TOOLS_ABLATION_ARMS_H_

#include <cstdint>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

// The Ablation of a job-level arm: "none" (also "full" and ""), "no-counters",
// "no-reflexion" or "blind-sweep", in any case. False for any other name ("greedy" is a
// search strategy, not an Ablation: kagent bench maps it itself).
bool AblationOfArm(absl::string_view arm, v1::Ablation* out);

// OK unless --sweep-seed was given (`given`) with an arm other than the blind sweep, or
// negative; the error names the flag.
absl::Status CheckSweepSeed(v1::Ablation ablation, bool given, int64_t seed);

}  // namespace kagent

#endif  // KAGENT_TOOLS_ABLATION_ARMS_H_
