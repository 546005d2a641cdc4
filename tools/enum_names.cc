#include "tools/enum_names.h"

#include "absl/strings/match.h"
#include "absl/strings/string_view.h"

namespace kagent {
namespace {

std::string WithoutPrefix(const std::string& name, absl::string_view prefix) {
  return absl::StartsWith(name, prefix) ? name.substr(prefix.size()) : name;
}

}  // namespace

std::string StateName(v1::JobState state) {
  return WithoutPrefix(v1::JobState_Name(state), "JOB_STATE_");
}

std::string VerdictName(v1::Verdict verdict) {
  return WithoutPrefix(v1::Verdict_Name(verdict), "VERDICT_");
}

std::string AblationName(v1::Ablation ablation) {
  return WithoutPrefix(v1::Ablation_Name(ablation), "ABLATION_");
}

}  // namespace kagent
