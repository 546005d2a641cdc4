// The sizing rules of pooling: pool_nd (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "engines/heuristic/rules/conv_dims.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

absl::StatusOr<TemplateParams> PoolParams(const TemplateInfo& t, const RecognizedOp& op,
                                          const GpuSpec* /*gpu*/) {
  TemplateParams p;
  const bool max = absl::StartsWith(op.variant, "max");
  const bool one_d = absl::EndsWith(op.variant, "1d");
  if ((!one_d && !absl::EndsWith(op.variant, "2d") && !absl::EndsWith(op.variant, "3d")) ||
      op.tags.count("adaptive")) {
    return Precondition(t, absl::StrCat("pooling '", op.variant,
                                        op.tags.count("adaptive") ? "' (adaptive)" : "'",
                                        " not supported (max/avg 1-D, 2-D and 3-D)"));
  }
  const std::vector<int64_t>& o = op.output_shape;
  if (o.size() < (one_d ? 3u : 4u)) return Precondition(t, "pooled output shape unknown");
  int64_t ow = o.back(), oh = one_d ? 1 : o[o.size() - 2];
  // Wide, flat tiles. Measured on an H200 (tests/gpu/template_sweep.py, problems/33:
  // max 3x3 stride 2 over 32 x 64 x 512 x 512 fp32, packed loads): 1 x 256 outputs with
  // 4 warps 0.648 ms (torch.compile 0.672), 2 x 256 0.679, 4 x 128 with 8 warps 0.784,
  // 8 x 128 1.561, 16 x 64 2.485: taller tiles lose. 1-D: 1024 outputs, 4 warps
  // (problems/31, 32: 1.06x and 1.09x torch.compile).
  const int64_t tile = one_d ? 1024 : 256;
  int64_t bw = Clamp(NextPow2(ow), 16, tile);
  int64_t bh = Clamp(NextPow2(oh), 1, std::max<int64_t>(1, tile / bw));
  p["OP"] = max ? "max" : "avg";
  p["BLOCK_W"] = std::to_string(bw);
  p["BLOCK_H"] = std::to_string(bh);
  p["num_warps"] = bw * bh >= 256 ? "4" : "2";
  // The window from the recorded op's scalars where there are some (CTOR recorded: any
  // constructor, none included; session 36's H100 run saw five level-1 pools whose
  // modules hold their sizes inside get the params' defaults, CTOR torch, and fail the
  // gate). A 1-D pool runs as a 2-D one over an unsqueezed H = 1: its dim is the recorded
  // op's last, and the leading recorded dims of fewer pooled dims are unit ones.
  if (!op.scalars.count("kernel_size.0") && !op.scalars.count("kernel_size")) return p;
  int recorded_dims = 0;
  while (op.scalars.count(absl::StrCat("kernel_size.", recorded_dims))) ++recorded_dims;
  const int nd = one_d ? 1 : absl::EndsWith(op.variant, "2d") ? 2 : 3;
  if (recorded_dims > 1 && recorded_dims < nd) {
    return Precondition(t, "the recorded window has fewer dims than the pool");
  }
  if (ScalarArg(op, "ceil_mode", 0) != 0) return Precondition(t, "ceil_mode is not supported");
  // Pooled dim i's value of scalar `name`: the recorded op's own dim (the last nd of its
  // dims), a one-element list or a plain number for every dim (RecordedDimScalar, as the
  // conv rules read theirs), else `fallback`.
  auto value = [&](const char* name, int i, double fallback) {
    const double v = RecordedDimScalar(op, name, std::max(0, recorded_dims - nd + i));
    return std::isnan(v) ? fallback : v;
  };
  const char* kDim = "DHW";
  for (int i = 0; i < nd; ++i) {
    const double k = value("kernel_size", i, NAN);
    const double s = value("stride", i, k);  // torch's default stride is the window
    const double pad = value("padding", i, 0);
    const double dil = value("dilation", i, 1);
    if (!(k >= 1 && k <= 64 && s >= 1 && s <= 64 && pad >= 0 && pad <= 32 && dil >= 1 &&
          dil <= 64)) {
      return Precondition(t, absl::StrCat("recorded window outside the template's bounds (kernel ",
                                          k, ", stride ", s, ", padding ", pad, ", dilation ",
                                          dil, ")"));
    }
    const std::string d(1, kDim[3 - nd + i]);
    p["KERNEL_" + d] = std::to_string(static_cast<int64_t>(k));
    p["STRIDE_" + d] = std::to_string(static_cast<int64_t>(s));
    p["PADDING_" + d] = std::to_string(static_cast<int64_t>(pad));
    p["DILATION_" + d] = std::to_string(static_cast<int64_t>(dil));
  }
  p["CTOR"] = "recorded";
  p["COUNT_INCLUDE_PAD"] = ScalarArg(op, "count_include_pad", 1) != 0 ? "True" : "False";
  const double divisor = ScalarArg(op, "divisor_override", 0);
  if (divisor < 0 || divisor > 1048576) return Precondition(t, "divisor_override out of range");
  p["DIVISOR"] = std::to_string(static_cast<int64_t>(divisor));
  return p;
}

}  // namespace kagent::rules
