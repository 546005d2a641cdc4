// Template variants: the alternatives the heuristic brain offers beside a kernel that is
// a render of one of its own templates, for the caller to screen together (many renders
// of one trusted template timed in one sandboxed process; only the fastest then goes
// through the full correctness gate and timing). See BrainResult::variants
// (engines/kernel_brain.h) and docs/templates.md, "Variants for the screen".
//
// A variant is the kernel's render with one integer knob at a neighbouring value: a pow2
// knob or a SPLIT_* / other int knob halved or doubled, num_stages one less or one more.
// The candidates, in this order (the brain's own ranking: the direction it chose first):
//   1. each moved knob (its value differs from `from`'s), one step further the way it
//      moved;
//   2. num_warps doubled, num_stages + 1 (when not moved);
//   3. with `tiles` (a first kernel or a template switch, whose tiles the rules sized),
//      each other BLOCK_* and SPLIT_* knob halved;
//   4. num_warps halved, num_stages - 1;
//   5. each moved knob one step back, the other way;
//   6. with `tiles`, each other BLOCK_* and SPLIT_* knob doubled.
// Knobs within a step go in the template's param order. A candidate is kept only when the
// library renders it (TemplateLibrary::Render: bounds, powers of two, allowed values,
// max_tile_elements) and its normalized source (NormalizeSource) differs from the kernel's,
// from every source in `exclude` and from every earlier variant; at most `max_variants`.
// Choice, float and shape params never move: a variant computes what the kernel computes.
//
// Pure function of its arguments; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_TEMPLATE_VARIANTS_H_
#define KAGENT_ENGINES_HEURISTIC_TEMPLATE_VARIANTS_H_

#include <map>
#include <string>
#include <vector>

#include "engines/heuristic/template_library.h"

namespace kagent {

// The default bound on variants per kernel: the kernel and six variants make a screen of
// seven renders, enough for the moved knob's two neighbours and num_warps / num_stages
// both ways, while the screen stays a small share of one full measurement.
inline constexpr int kDefaultMaxVariants = 6;

struct TemplateVariant {
  std::string source;
  std::string change;  // e.g. "BLOCK_K 2048 -> 4096"
};

// Up to `max_variants` variants of the render of `info` at `params` (complete and valid,
// as TemplateLibrary::MatchRender returns them). `from`: the params the move started from
// (the parent's, or the rules' before a switch's knob changes); null when there was no
// move. `exclude`: sources no variant may equal after normalization (e.g. the parent).
std::vector<TemplateVariant> TemplateVariants(const TemplateLibrary& library,
                                              const TemplateInfo& info,
                                              const std::map<std::string, std::string>& params,
                                              const std::map<std::string, std::string>* from,
                                              bool tiles, const std::vector<std::string>& exclude,
                                              int max_variants);

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_TEMPLATE_VARIANTS_H_
