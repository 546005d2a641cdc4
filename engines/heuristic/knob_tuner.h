// Knob tuning of any Triton kernel source (CUDA template renders: see below): reads it
// (ParseTritonSource, triton_source.h: the @triton.jit kernels, their tl.constexpr
// parameters and the launch sites `kernel[grid](..., BLOCK_M=32, num_warps=4)`) and
// rewrites knob values (absolute or relative changes) while keeping the grid consistent,
// powers of two and bounds. Works on a user's own kernel with no template and on rendered
// templates alike.
//
// Where a knob K lives, in order of preference (the first launch site that has it; for
// num_warps / num_stages, the primary launch = the first launch site in the source):
//   1. a launch keyword whose value is an integer literal: the literal is rewritten,
//      unless the grid expression (or the assignment of a grid variable) contains that
//      same literal without naming K: then the grid would go stale -> FAILED_PRECONDITION;
//   2. a launch keyword whose value is a name Y: the last `Y = <int>` (or
//      `Y = min(<int>, ...)`/`max(...)`) assignment before the launch is rewritten, so a
//      grid computed from Y follows;
//   3. a constexpr parameter default in the kernel's signature (`BLOCK: tl.constexpr = 64`)
//      when the launch does not pass it;
//   4. num_warps / num_stages absent from the launch: the keyword is added (the change
//      applies to Triton's default, 4 warps / 3 stages).
// An autotuned kernel (@triton.autotune) owns its meta-parameters: a change to a knob its
// configs set (or to num_warps / num_stages when the primary launch's kernel is
// autotuned) adds configs instead of editing a value. Each triton.Config of the list
// gets the change (a config without num_warps / num_stages starts from Triton's
// defaults, 4 and 3; a config without the knob gets no variant), all changes of one
// call together; the variants not already in the list are appended to it, so the
// autotuner picks among the old and the new. The configs must be a list literal in the
// decorator or a name assigned one, of triton.Config({...}, num_warps=.., ...) calls (as
// ParseTritonSource reads them); otherwise, or when no new config results (bounds,
// duplicates), FAILED_PRECONDITION.
//
// Changes: "16" (absolute), "x2" or "*2", "/2", "+1", "-1" (also "+N", "-N", "xN").
// Bounds: a rendered template (first line `# kagent-template: <id>`) uses its params'
// bounds, and a change that grows a BLOCK_* knob past its max_tile_elements (the product
// of the BLOCK_* knobs at the primary launch) is FAILED_PRECONDITION; otherwise the
// generic table: BLOCK* / *_SIZE: powers of two in [1, 65536]
// ([16, 256] when the kernel calls tl.dot); num_warps: power of two in [1, 32];
// num_stages: [1, 8]; SPLIT* / GROUP*: [1, 4096]; other integers: [1, 1<<20]. A
// power-of-two knob moved by +/- steps to the next power of two in that direction; a
// value outside the bounds is clamped; a change that leaves the value where it is
// (already at the bound) is FAILED_PRECONDITION.
//
// Choice knobs: in a rendered template (given `library`), a knob whose name matches one of
// the template's "choice" params case-insensitively ("input_precision" is
// INPUT_PRECISION) is a choice knob; every other knob takes the integer path above, with
// its name matched exactly. Its change is an absolute value from the param's allowed list
// (else INVALID_ARGUMENT naming the allowed values); the value it already has is
// FAILED_PRECONDITION ("stays at ..."). It lives in the first launch keyword of that name
// whose value is a quoted string literal ('...' or "...", as the template renders
// INPUT_PRECISION="ieee"); the literal's content is rewritten, quotes kept. An autotuned
// kernel is FAILED_PRECONDITION, a keyword whose value is no string literal
// FAILED_PRECONDITION, no such keyword NOT_FOUND. A kernel without the template header
// has no choice knobs: a string keyword there is refused as not an integer literal.
//
// CUDA templates: a byte-for-byte render (TemplateLibrary::MatchRender, given `library`)
// of a template whose language is not Triton has no Triton launch sites; its knobs are the
// template's "knob" params (names matched case-insensitively), moved in the params: an
// integer knob by the change strings above within the param's bounds (powers of two for
// pow2), a choice knob to an absolute value from its allowed list (else INVALID_ARGUMENT),
// and the template rendered again, so the result is a render. A name that is no knob of
// the template is NOT_FOUND, a value that stays FAILED_PRECONDITION, and a combination
// the library does not render FAILED_PRECONDITION.
//
// Comments follow the code: after an integer knob's value is rewritten in place (not an
// autotuned kernel's added configs), every comment that states the old value as
// `KNOB=old` (spaces around '=' allowed; the exact name, the whole number) states the new
// one, so a header such as "BLOCK_M=32 rows x BLOCK_K=512 columns" stays true. A
// template's text has no such comments, so a tuned render still matches its template.
//
// Pure functions; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_KNOB_TUNER_H_
#define KAGENT_ENGINES_HEURISTIC_KNOB_TUNER_H_

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/triton_source.h"

namespace kagent {

// The current value of every integer knob at the primary launch (keywords with integer
// values, resolved through variables; constexpr defaults; num_warps/num_stages).
std::map<std::string, int64_t> CurrentKnobs(absl::string_view source,
                                            const TritonSourceInfo& info);

struct KnobBounds {
  int64_t min = 1;
  int64_t max = 1 << 20;
  bool pow2 = false;
};

// The bounds of `knob` for this source (see the file comment). `library` may be null.
KnobBounds BoundsFor(absl::string_view knob, const TritonSourceInfo& info,
                     const TemplateLibrary* library);

// Applies one change string to a value. INVALID_ARGUMENT for a malformed change.
// `note` (may be null) receives "clamped to 256" / "rounded to a power of two" notes.
absl::StatusOr<int64_t> ApplyChange(int64_t current, absl::string_view change,
                                    const KnobBounds& bounds, std::string* note);

struct KnobEdit {
  std::string knob;               // a choice knob: the template param's name (INPUT_PRECISION)
  int64_t old_value = 0;          // integer edits; 0 for a choice edit
  int64_t new_value = 0;
  std::string old_text;           // choice edits: the literal's content ("ieee");
  std::string new_text;           // empty for an integer edit
  std::string where;              // "launch keyword", "variable BLOCK_M", ...
  std::string note;

  // A choice edit (new_text set; a choice value is never empty).
  bool is_choice() const { return !new_text.empty(); }
};

struct TuneResult {
  std::string source;
  std::vector<KnobEdit> edits;
};

// Applies every change (knob name -> change) to the source. All or nothing: the first
// change that cannot apply fails the whole call with its reason.
absl::StatusOr<TuneResult> ApplyKnobChanges(absl::string_view source,
                                            const std::map<std::string, std::string>& changes,
                                            const TemplateLibrary* library);

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_KNOB_TUNER_H_
