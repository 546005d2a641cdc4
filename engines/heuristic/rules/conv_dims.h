// Per-dim convolution arguments shared by the conv rules (conv_rules.cc, the Triton
// templates; conv_cutlass_rules.cc, the CUDA C++ modules): a template's D/H/W params from
// the recorded op.
//
// Pure functions; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_RULES_CONV_DIMS_H_
#define KAGENT_ENGINES_HEURISTIC_RULES_CONV_DIMS_H_

#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/template_rules.h"  // RecognizedOp

namespace kagent::rules {

// One per-dim argument of the D/H/W templates (conv3d_implicit_gemm, conv_transpose_nd,
// the CUTLASS modules): the recorded scalar's name, the template's param prefix, its bounds
// and its value on a unit leading dim. `inferred`: the value from the shapes when the op
// records none (< 0: none).
struct DimArg {
  const char* scalar;
  const char* param;
  int64_t lo, hi, unit, inferred;
};

// Sets <param>_D/H/W for each of `args` and KERNEL_D/H/W from the weight `w` (kernel dims
// from index 2) of an `nd`-D convolution (1 <= nd <= 3): its spatial dim i is the
// template's dim 3 - nd + i, the leading dims are unit. `value(a, i)` is the op's value of
// `a` along spatial dim i (NaN when unknown). FAILED_PRECONDITION naming the argument when
// a value is unknown or out of bounds, or a kernel size is outside [1, 64].
absl::Status SetPerDimParams(const TemplateInfo& t, int nd, const std::vector<int64_t>& w,
                             const std::vector<DimArg>& args,
                             const std::function<double(const DimArg&, int)>& value,
                             std::map<std::string, std::string>* p);

// The spatial rank of a convolution variant (conv1d/2d/3d), 0 for another.
int ConvRank(const RecognizedOp& op);

// The recorded value of aten::convolution's per-dim scalar `scalar` along spatial dim i:
// "<scalar>.i"; when the op records no "<scalar>.1" (a one-element list or a plain
// number), "<scalar>.0", else "<scalar>"; NaN when none is there.
double RecordedDimScalar(const RecognizedOp& op, const char* scalar, int i);

}  // namespace kagent::rules

#endif  // KAGENT_ENGINES_HEURISTIC_RULES_CONV_DIMS_H_
