// Short names of the protocol's enums for what the tools print: JobState, Verdict and
// Ablation without their prefix ("DONE", "CORRECT"). Pure functions.
#ifndef KAGENT_TOOLS_ENUM_NAMES_H_
#define KAGENT_TOOLS_ENUM_NAMES_H_

#include <string>

#include "kagent/v1/common.pb.h"

namespace kagent {

std::string StateName(v1::JobState state);    // JOB_STATE_DONE -> "DONE"
std::string VerdictName(v1::Verdict verdict);  // VERDICT_CORRECT -> "CORRECT"
std::string AblationName(v1::Ablation ablation);  // ABLATION_NO_COUNTERS -> "NO_COUNTERS"

}  // namespace kagent

#endif  // KAGENT_TOOLS_ENUM_NAMES_H_
