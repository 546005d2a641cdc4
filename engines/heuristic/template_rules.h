// The heuristic brain's first-kernel rules: which template of the library serves a
// recognized op (SelectTemplate), the params it is rendered with (TemplateParamsFor: tile
// sizes, warps and stages from the shapes, the dtype and the GPU; shape params from the
// recorded op), and the template names a prescription may use (TemplateAliases). Rules
// measured on an H200 say so, with the figures, where they are written.
//
// Pure functions of their arguments; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_TEMPLATE_RULES_H_
#define KAGENT_ENGINES_HEURISTIC_TEMPLATE_RULES_H_

#include <cstdint>
#include <map>
#include <string>

#include "absl/status/statusor.h"
#include "engines/heuristic/template_library.h"
#include "kagent/v1/common.pb.h"
#include "kernel_model/op_recognition.h"

namespace kagent {

// Template id aliases accepted in Prescription.template_switch (e.g. the analyzer's
// database names) -> template ids of the library.
const std::map<std::string, std::string>& TemplateAliases();

// The params (knobs and shape params) of template `info` for this op, or
// FAILED_PRECONDITION naming the condition that does not hold. `gpu` may be null (then
// 132 SMs and an unknown arch: no sm_80+/sm_90+ rules).
absl::StatusOr<std::map<std::string, std::string>> TemplateParamsFor(
    const TemplateInfo& info, const RecognizedOp& op, const kagent::v1::GpuSpec* gpu);

// The template FirstKernel uses for this op: UNIMPLEMENTED when the class has no family.
absl::StatusOr<std::string> SelectTemplate(const RecognizedOp& op,
                                           const kagent::v1::GpuSpec* gpu);

// The GPU's SM count, or an H200's 132 when `gpu` is null or does not say.
int SmCount(const kagent::v1::GpuSpec* gpu);

// ceil(a / b) for b > 0; 0 when b <= 0.
inline int64_t CeilDiv(int64_t a, int64_t b) { return b <= 0 ? 0 : (a + b - 1) / b; }

}  // namespace kagent

#endif  // KAGENT_ENGINES_HEURISTIC_TEMPLATE_RULES_H_
