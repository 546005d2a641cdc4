// Text for the prompt templates' placeholders (prompts/*.md, documented in docs/llm.md),
// rendered from the protocol's messages. Shared by LlmKernelBrain and LlmNarrator.
//
// Every function is pure and thread-safe; null pointers are allowed where a request may
// leave the message out, and render a short "not given" text instead.
#ifndef KAGENT_ENGINES_LLM_PROMPT_VALUES_H_
#define KAGENT_ENGINES_LLM_PROMPT_VALUES_H_

#include <optional>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/string_view.h"
#include "kagent/v1/common.pb.h"

namespace kagent::llm_engine {

// {{gpu}}: "NVIDIA H200 (sm_90, 132 SMs, 4.80 TB/s DRAM, 60 MiB L2, peak 989.4 TFLOP/s
// bf16, ...)" with every ceiling the spec holds (peak FLOP/s per dtype, sorted by dtype);
// a generic phrase when `gpu` is null or empty. A CPU worker's spec (arch "cpu") says
// that there is no GPU and that timings come from Triton's CPU interpreter.
std::string DescribeGpu(const kagent::v1::GpuSpec* gpu);

// The knobs a kernel really has: the names of the tl.constexpr parameters of its
// @triton.jit functions (in order of appearance, each once), then the launch
// meta-parameters num_warps and num_stages when the source passes them (at a launch or
// in a triton.Config). Empty when the source has none.
std::vector<std::string> KernelKnobs(absl::string_view source);

// Whether a rewrite left the prescription's knob changes unapplied: for each knob of
// `prescription.knob_changes` the parent has (KernelKnobs), its settings in the source
// (`NAME=64` at a launch, `'NAME': 64` in a triton.Config, `NAME: tl.constexpr = 64`) are
// compared between `parent` and `rewrite`. A text naming the unchanged settings when
// every such knob is set to numeric literals and the rewrite sets them exactly as the
// parent did; nullopt when one changed, or when nothing can be judged (no knob change,
// no such knob in the parent, a value that is not a literal).
std::optional<std::string> UnappliedKnobChanges(const kagent::v1::Prescription& prescription,
                                                absl::string_view parent,
                                                absl::string_view rewrite);

// Whether a rewrite left out the constructs the fix names (`prescription.code_markers`,
// e.g. tl.max_contiguous / tl.multiple_of, of which one suffices): a text naming them when
// neither `parent` nor `rewrite` contains any of them outside '#' comments; nullopt when
// the rewrite has one, when the parent already had one (nothing to judge), or when the
// prescription names none.
std::optional<std::string> UnappliedCodeMarkers(const kagent::v1::Prescription& prescription,
                                                absl::string_view parent,
                                                absl::string_view rewrite);

// Whether a rewrite did not apply the fix: UnappliedKnobChanges' text, else
// UnappliedCodeMarkers'.
std::optional<std::string> UnappliedFix(const kagent::v1::Prescription& prescription,
                                        absl::string_view parent, absl::string_view rewrite);

// {{kernel_knobs}}: KernelKnobs as a line ("BLOCK_SIZE, num_warps"), or a sentence saying
// that the kernel has no tunable parameter.
std::string DescribeKnobs(const std::vector<std::string>& knobs);

// {{op_summary}}: the op class, FLOPs and minimum bytes when known, then one line per
// recorded aten op with its input and output shapes and dtypes and its recorded numeric
// arguments (", with alpha=1.67326, scale=1.0507", so torch.selu is not read as F.elu;
// at most 40 ops).
std::string SummarizeOps(const kagent::v1::OpSignature* signature);

// {{measured}}: the current kernel's median and its ratio to eager PyTorch's and
// torch.compile's medians of the same run ("0.2 ms median; eager 0.5 ms (2.50x faster
// than eager); torch.compile 0.4 ms (2.00x faster than torch.compile)"); on a CPU worker
// (gpu_name "cpu") a note that the times come from Triton's CPU interpreter. A short
// "not measured" text when `measurement` is null or has no median.
std::string DescribeMeasurement(const kagent::v1::Measurement* measurement);

// {{diagnosis}}: the judge's report as plain text (category, limiter, efficiency,
// headroom, dominant kernel, summary, root causes with their cited metrics, narrative).
std::string DescribeReport(const kagent::v1::BottleneckReport* report);

// The profile's roofline figures, appended to {{diagnosis}}: speed of light (compute and
// memory % of peak), and when the op signature gave FLOPs and bytes the arithmetic
// intensity, the achieved FLOP/s and bytes/s, and the % of the roofline at that
// intensity; with `gpu`'s ceilings, the ridge point of each dtype's peak against its DRAM
// bandwidth. Empty when `metrics` is null or holds no figure.
std::string DescribeRoofline(const kagent::v1::HardwareMetrics* metrics,
                             const kagent::v1::GpuSpec* gpu);

// {{fix_description}}: the prescription's fix, rationale, expected effect, knob changes,
// template switch and risks, one per line; plus a note for alternative > 0 asking for a
// different way of applying the fix than the other workers. With `knobs` (the parent's
// KernelKnobs), a knob change naming a knob the kernel does not have is followed by a
// line saying so and asking for the change's intent with the knobs it has, so a kernel
// without BLOCK_K is not asked to double BLOCK_K as if it had one.
std::string DescribeFix(const kagent::v1::Prescription& prescription, int alternative,
                        const std::vector<std::string>* knobs = nullptr);

// {{lessons}}: the job's reflexions, newest last (at most the last 20), or "none".
std::string FormatLessons(const std::vector<kagent::v1::Reflexion>* memory);

// A number as the profile lists it ("%.6g").
std::string FormatNumber(double value);

// The Python source in an LLM's "code" value: surrounding ``` fences (with or without a
// language tag) are removed, the rest is kept verbatim.
std::string StripCodeFences(absl::string_view code);

// A kernel answered as Markdown: the body of the first ``` fenced block (any language
// tag, ```python the usual) that defines a top-level `class ModelNew`, and the text
// outside the fences (the model's explanation, trimmed). Nullopt when no fenced block
// defines it. An unclosed fence runs to the end of the reply.
struct FencedKernel {
  std::string code;
  std::string explanation;
};
std::optional<FencedKernel> FindFencedKernel(absl::string_view reply);

// The minimal check a candidate must pass before it is returned: a top-level
// `class ModelNew` and at least one function decorated with @triton.jit or @jit (the
// decorator may take arguments). INVALID_ARGUMENT saying what is missing.
absl::Status ValidateKernelSource(absl::string_view source);

}  // namespace kagent::llm_engine

#endif  // KAGENT_ENGINES_LLM_PROMPT_VALUES_H_
