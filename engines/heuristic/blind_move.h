// Blind moves: the heuristic brain's random moves for a blind-sweep job
// (Prescription.blind_seed; JobConfig.ablation ABLATION_BLIND_SWEEP, docs/loop.md
// "Ablations"). A blind move uses the same template library and knob tuner as the guided
// moves, but no diagnosis, prescription or memory: a random knob setting or a random
// template switch, drawn from a seed.
//
// The draw, from std::mt19937_64 seeded with `seed` (its output is fixed by the C++
// standard, and no std:: distribution is used, so a seed draws the same move on every
// build), up to kBlindDraws times until one gives a kernel that differs from the parent
// (after NormalizeSource):
//   * a template switch, one draw in four while the op class has another template whose
//     conditions of use hold (TemplateParamsFor), or always when the parent has no knob
//     to move: one of those templates (by id order), rendered with the rules' params and
//     then one or two of its knobs set at random;
//   * otherwise a knob setting on the parent: one or two of its knobs, each set to a
//     random legal value other than its current one. On a render of the library (MatchRender)
//     the knobs are the template's "knob" params (pow2: a power of two within the bounds;
//     int: any value within bounds up to 64 values, else a power of two or a bound;
//     choice: an allowed value) and the template is rendered again; on any other Triton
//     kernel they are the knob tuner's CurrentKnobs within BoundsFor, set with
//     ApplyKnobChanges. A draw the library refuses (max_tile_elements) or the tuner cannot
//     make is drawn again.
// Float and shape params never move. FAILED_PRECONDITION when no draw gave a new kernel.
//
// Pure function of its arguments; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_BLIND_MOVE_H_
#define KAGENT_ENGINES_HEURISTIC_BLIND_MOVE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "engines/heuristic/template_library.h"
#include "kagent/v1/common.pb.h"

namespace kagent {

inline constexpr int kBlindDraws = 32;

struct BlindMove {
  kagent::v1::KernelSource kernel;  // origin "template:<id>" for a render, else "brain:heuristic"
  std::vector<std::string> moves;   // e.g. "BLOCK_K 2048 -> 512", "switch to matvec_split_k"
};

// The blind move for `parent` drawn from `seed`. `signature` (the op, for a switch) and
// `gpu` (the rules' sizing) may be null: without a recognized op there is no switch.
absl::StatusOr<BlindMove> DrawBlindMove(const TemplateLibrary& library,
                                        const kagent::v1::KernelSource& parent,
                                        const kagent::v1::OpSignature* signature,
                                        const kagent::v1::GpuSpec* gpu, uint64_t seed);

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_BLIND_MOVE_H_
