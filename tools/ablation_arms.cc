#include "tools/ablation_arms.h"

#include <string>
#include <utility>

#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"

namespace kagent {

bool AblationOfArm(absl::string_view arm, v1::Ablation* out) {
  static constexpr std::pair<const char*, v1::Ablation> kArms[] = {
      {"", v1::ABLATION_NONE},
      {"none", v1::ABLATION_NONE},
      {"full", v1::ABLATION_NONE},
      {"no-counters", v1::ABLATION_NO_COUNTERS},
      {"no-reflexion", v1::ABLATION_NO_REFLEXION},
      {"blind-sweep", v1::ABLATION_BLIND_SWEEP}};
  const std::string name = absl::AsciiStrToLower(arm);
  for (const auto& [arm_name, ablation] : kArms) {
    if (name == arm_name) {
      *out = ablation;
      return true;
    }
  }
  return false;
}

absl::Status CheckSweepSeed(v1::Ablation ablation, bool given, int64_t seed) {
  if (!given) return absl::OkStatus();
  if (ablation != v1::ABLATION_BLIND_SWEEP) {
    return absl::InvalidArgumentError(
        "--sweep-seed seeds the blind sweep: give it with --ablation blind-sweep");
  }
  if (seed < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--sweep-seed must be >= 0 (got ", seed, ")"));
  }
  return absl::OkStatus();
}

}  // namespace kagent
