// The blind sweep's round plan (JobConfig.ablation ABLATION_BLIND_SWEEP, docs/loop.md
// "Ablations"): instead of profile -> diagnose -> prescribe -> plan, each beam kernel gets
// fixes_per_kernel assignments whose prescription carries only a seed
// (Prescription.blind_seed); the brain turns each seed into a random move of its own
// (engines/heuristic/blind_move.h). The coordinator draws nothing itself: it cannot see the
// brain's template library, and a seed per assignment keeps the draw reproducible.
//
// Pure functions; thread-safe.
#ifndef KAGENT_SERVICES_COORDINATOR_BLIND_SWEEP_H_
#define KAGENT_SERVICES_COORDINATOR_BLIND_SWEEP_H_

#include <cstdint>
#include <string>
#include <vector>

#include "kagent/v1/common.pb.h"

namespace kagent {

// The pattern id of a blind move (not an optimization-database pattern).
inline constexpr char kBlindSweepPattern[] = "blind-sweep";

// The seed of round `round`'s assignment `worker_index` in a sweep seeded `sweep_seed`:
// a SplitMix64 mix of the three, so that neighbouring seeds, rounds and workers draw
// unrelated moves.
uint64_t BlindMoveSeed(uint64_t sweep_seed, int round, int worker_index);

// Round `round`'s plan: for each beam kernel in order, `fixes_per_kernel` assignments
// (worker indices 0, 1, ... across the plan), each a prescription with pattern id
// kBlindSweepPattern and its BlindMoveSeed.
v1::RoundPlan BlindSweepPlan(const std::vector<std::string>& beam_ids, int fixes_per_kernel,
                             int round, uint64_t sweep_seed);

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_BLIND_SWEEP_H_
