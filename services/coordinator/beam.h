// The beam update at the end of a round: a pure function of the current beam, the round's
// measured candidates and the job's beam settings. No I/O, no clock; thread-compatible.
//
// The next beam is the top K distinct correct kernels by measured median:
//   - the pool is the current beam (its kernels stay candidates, as stored) plus every
//     round candidate whose verdict is CORRECT with a median above 0; any other verdict
//     never enters;
//   - the pool is ordered by median, fastest first; ties keep pool order (the beam's
//     kernels first, in beam order, then the candidates in the order given);
//   - a kernel whose source is the same as a faster one's (NormalizeSource) is skipped;
//   - at most `width` kernels are kept (the GREEDY strategy is width 1: EffectiveConfig).
// The round improved when the pool's fastest median beats the job's best so far by more
// than `improvement_threshold` (a fraction: 0.01 is "a gain above 1%"); the plateau count
// restarts at 0 then, else grows by one. The best median only ever goes down.
#ifndef KAGENT_SERVICES_COORDINATOR_BEAM_H_
#define KAGENT_SERVICES_COORDINATOR_BEAM_H_

#include <string>
#include <vector>

#include "kagent/v1/common.pb.h"

namespace kagent {

struct BeamSettings {
  int width = 1;                       // K, at least 1
  double improvement_threshold = 0.01;
};

// What the job knew before the round (from its checkpoint).
struct BeamProgress {
  double best_median_ms = 0;           // the fastest median so far (the start's at first)
  int rounds_without_improvement = 0;
};

struct BeamUpdate {
  std::vector<std::string> beam_ids;   // the next beam, fastest first
  BeamProgress progress;               // after the round
  bool improved = false;               // the gain was above the threshold
};

BeamUpdate UpdateBeam(const std::vector<v1::Candidate>& beam,
                      const std::vector<v1::Candidate>& measured, const BeamProgress& before,
                      const BeamSettings& settings);

}  // namespace kagent

#endif  // KAGENT_SERVICES_COORDINATOR_BEAM_H_
