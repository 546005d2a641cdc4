// The sizing rules of pooling: pool_nd (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <string>
#include <vector>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
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
  return p;
}

}  // namespace kagent::rules
