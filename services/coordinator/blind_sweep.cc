#include "services/coordinator/blind_sweep.h"

#include "absl/strings/str_format.h"

namespace kagent {
namespace {

uint64_t SplitMix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

}  // namespace

uint64_t BlindMoveSeed(uint64_t sweep_seed, int round, int worker_index) {
  uint64_t h = SplitMix64(sweep_seed);
  h = SplitMix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(round)));
  return SplitMix64(h ^ static_cast<uint64_t>(static_cast<uint32_t>(worker_index)));
}

v1::RoundPlan BlindSweepPlan(const std::vector<std::string>& beam_ids, int fixes_per_kernel,
                             int round, uint64_t sweep_seed) {
  v1::RoundPlan plan;
  plan.set_round(round);
  plan.set_rationale(absl::StrFormat(
      "blind sweep (sweep seed %d): %d random move(s) of the brain per beam kernel, no "
      "diagnosis, prescriptions or memory",
      sweep_seed, fixes_per_kernel));
  int worker = 0;
  for (const std::string& id : beam_ids) {
    for (int i = 0; i < fixes_per_kernel; ++i, ++worker) {
      v1::Assignment* a = plan.add_assignments();
      a->set_parent_kernel_id(id);
      a->set_worker_index(worker);
      v1::Prescription* p = a->mutable_prescription();
      p->set_pattern_id(kBlindSweepPattern);
      p->set_title("blind move");
      p->set_blind_seed(BlindMoveSeed(sweep_seed, round, worker));
      p->set_expected_speedup(1.0);
    }
  }
  return plan;
}

}  // namespace kagent
