// The sizing rules of matrix-vector products: matvec_row_per_program,
// matvec_multi_row, matvec_split_k (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <string>

#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

absl::StatusOr<TemplateParams> MatvecParams(const TemplateInfo& t, const RecognizedOp& op,
                                            const GpuSpec* gpu) {
  TemplateParams p;
  const int sms = SmCount(gpu);
  const bool half = Is16Bit(op.dtype);
  if (op.m <= 0 || op.k <= 0) return Precondition(t, "matvec shapes unknown");
  p["A_EXPR"] = op.trans_a ? "A.t()" : "A";
  const int64_t max_bk = half ? 4096 : 2048;
  if (t.id == "matvec_row_per_program") {
    // Measured on an H200 (2048 x 1048576 bf16): BLOCK_K 4096 / 16 warps 0.975 ms,
    // 2048 / 8 warps 0.984 ms, 4096 / 8 warps 1.034 ms.
    p["BLOCK_K"] = std::to_string(Clamp(NextPow2(op.k), 64, max_bk));
    p["num_warps"] = op.k >= 65536 && half ? "16" : op.k >= 4096 ? "8" : "4";
    p["num_stages"] = "2";
  } else if (t.id == "matvec_multi_row") {
    int64_t bm = op.m >= 8 * sms ? 4 : 1;
    p["BLOCK_M"] = std::to_string(bm);
    p["BLOCK_K"] = std::to_string(Clamp(NextPow2(op.k), 16, 2048 / bm));
    p["num_warps"] = "4";
    p["num_stages"] = "2";
  } else if (t.id == "matvec_split_k") {
    // Measured on an H200 (2048 x 1048576 bf16): BLOCK_K 2048, SPLIT_K 8, 8 warps
    // 0.966 ms (4.45 TB/s) against 1.943 ms for the 32-row tile start.
    int64_t bk = Clamp(NextPow2(op.k), 64, 2048);
    int64_t bm = 1;
    // At least 8 slices and ~8 programs per SM, no slice under 4 BLOCK_K chunks.
    int64_t want = std::max<int64_t>(8, CeilDiv(8LL * sms, CeilDiv(op.m, bm)));
    int64_t most = std::max<int64_t>(1, op.k / (4 * bk));
    p["BLOCK_M"] = std::to_string(bm);
    p["BLOCK_K"] = std::to_string(bk);
    p["SPLIT_K"] = std::to_string(Clamp(want, 1, std::min<int64_t>(most, 1024)));
    p["num_warps"] = op.k >= 4096 ? "8" : "4";
    p["num_stages"] = "2";
  }
  return p;
}

}  // namespace kagent::rules
