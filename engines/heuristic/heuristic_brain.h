// HeuristicBrain: the embedded, deterministic KernelBrain (no network).
//
// FirstKernel recognizes the problem's op from its op signature, picks a template of the
// op class whose conditions of use hold and renders it with params sized for the shapes
// and the GPU (SelectTemplate and TemplateParamsFor, template_rules.h).
//
// ApplyFix applies one prescription to a parent kernel:
//   * blind_seed set (a blind-sweep job): the random move DrawBlindMove draws from that
//     seed (blind_move.h); every other field of the prescription, the report and the
//     memory are ignored, and there is no fallback (an error when no draw gave a kernel);
//   * template_switch set: re-renders the named template for the recognized op (its
//     conditions must hold), then applies the prescription's knob_changes that exist in
//     the new kernel;
//   * knob_changes set: rewrites the parent's knobs with the knob tuner (any Triton
//     source with a launch site; rendered templates keep their documented bounds);
//   * when the named knob does not exist in the parent or the named template is not in
//     the library (NOT_FOUND), or a knob change cannot be made (FAILED_PRECONDITION: a
//     no-op such as "BLOCK_K stays at 32", a bound, an autotuned knob), the diagnosis's
//     own move (below; without a report, the generic moves) is made instead: the result's
//     `fallback` says why, its expected effect and expected_speedup (a modest prior:
//     x1.10 for a knob move, x1.25 for a template switch) are the derived move's, not the
//     prescription's. `fallback_alternative` k picks the (k mod n)-th of the n applicable
//     derived moves, so that later assignments of the same parent do not repeat an
//     earlier one's fallback (with no other move left, the manager reports a duplicate);
//   * neither: derives the moves from the bottleneck report's category (grid
//     underfilled -> more programs or split-K; memory bound -> wider loads, deeper
//     pipeline; occupancy -> smaller tiles / fewer stages; ...); `alternative` picks the
//     i-th applicable move so that workers sharing a prescription get different fixes.
// Every result carries the expected effect of each move (grid sizes against the SM
// count, loads per iteration, ...) so a reflexion can check it. Never a blind sweep, unless the
// prescription asks for one (blind_seed).
//
// Variants (BrainResult::variants): when the kernel returned is, byte for byte, a render
// of one of the library's templates (TemplateLibrary::MatchRender; whatever the parent's
// origin claims), its origin is "template:<id>" and it comes with up to
// `max_variants` renders of the same template at neighbouring knob values
// (TemplateVariants, template_variants.h): the knobs the move changed (against the parent
// when the parent is a render of the same template, else against the rules' params),
// num_warps / num_stages, and for a first kernel or a switch the tiles the rules sized.
// Never the parent's source. A user's kernel edited by the knob tuner is not a render:
// no variants. Nor is a CUDA template's render given any (the screen takes Triton kernels
// only); its kernel carries language CUDA, a Triton template's TRITON.
//
// Thread-safe: immutable after construction.
#ifndef KAGENT_ENGINES_HEURISTIC_HEURISTIC_BRAIN_H_
#define KAGENT_ENGINES_HEURISTIC_HEURISTIC_BRAIN_H_

#include <map>
#include <memory>
#include <string>

#include "absl/status/statusor.h"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/template_rules.h"
#include "engines/heuristic/template_variants.h"
#include "engines/kernel_brain.h"
#include "kernel_model/op_recognition.h"

namespace kagent {

struct HeuristicBrainOptions {
  // At most this many variants per result; 0: none.
  int max_variants = kDefaultMaxVariants;
};

class HeuristicBrain : public KernelBrain {
 public:
  // `library` must not be null.
  explicit HeuristicBrain(std::shared_ptr<const TemplateLibrary> library,
                          HeuristicBrainOptions options = {});

  std::string name() const override { return "heuristic"; }
  absl::StatusOr<BrainResult> FirstKernel(const FirstKernelRequest& request) override;
  absl::StatusOr<BrainResult> ApplyFix(const FixRequest& request) override;

  // Renders template `id` for the signature's op (FirstKernel with a chosen template; no
  // variants).
  absl::StatusOr<BrainResult> RenderFor(const std::string& id,
                                        const kagent::v1::OpSignature& signature,
                                        const kagent::v1::GpuSpec* gpu) const;

  const TemplateLibrary& library() const { return *library_; }

 private:
  // ApplyFix before the variants.
  absl::StatusOr<BrainResult> Fix(const FixRequest& request) const;
  // Fills r->variants (and sets its origin) when r->kernel is a render of the library's;
  // `parent`, `signature` and `gpu` may be null.
  void AddVariants(const kagent::v1::KernelSource* parent,
                   const kagent::v1::OpSignature* signature, const kagent::v1::GpuSpec* gpu,
                   BrainResult* r) const;
  absl::StatusOr<BrainResult> SwitchTemplate(const FixRequest& request,
                                             const std::string& id) const;
  absl::StatusOr<BrainResult> TuneKnobs(const FixRequest& request,
                                        const std::map<std::string, std::string>& changes,
                                        const std::string& why) const;
  // The `alternative`-th applicable move for the diagnosis; with `wrap`, the
  // (alternative mod n)-th of the n that apply (else FAILED_PRECONDITION when fewer apply).
  absl::StatusOr<BrainResult> DerivedMove(const FixRequest& request, int alternative,
                                          bool wrap) const;

  std::shared_ptr<const TemplateLibrary> library_;
  HeuristicBrainOptions options_;
};

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_HEURISTIC_BRAIN_H_
