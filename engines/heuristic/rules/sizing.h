// Sizing helpers the per-family rules (family_rules.h) share: powers of two, clamps, the
// GPU's compute capability, shape products, the precondition status, and the tiles of
// row-wise kernels over an (OUTER, R, INNER) view.
//
// Pure functions; thread-safe.
#ifndef KAGENT_ENGINES_HEURISTIC_RULES_SIZING_H_
#define KAGENT_ENGINES_HEURISTIC_RULES_SIZING_H_

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "engines/heuristic/template_library.h"
#include "engines/heuristic/template_rules.h"  // RecognizedOp, CeilDiv, SmCount
#include "kagent/v1/common.pb.h"

namespace kagent::rules {

// The smallest power of two >= v (1 for v <= 1).
inline int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}
inline int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

// Compute capability as major * 10 + minor from the GPU spec's arch ("sm_90", "sm_90a",
// "sm_100"); 0 when unknown.
int SmVersion(const kagent::v1::GpuSpec* gpu);

inline bool Is16Bit(const std::string& dtype) {
  return dtype == "bfloat16" || dtype == "float16";
}

// The product of s[from, to) (1 when empty).
inline int64_t Prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

// FAILED_PRECONDITION "template <id>: <why>".
absl::Status Precondition(const TemplateInfo& t, const std::string& why);

// (OUTER, R, INNER) view of a reduction over dims [dim, dim + num_dims).
struct RowView {
  int64_t outer = 1, r = 1, inner = 1;
};
RowView ViewOf(const RecognizedOp& op);

// Tiles (BLOCK_R, BLOCK_I, num_warps) for row-wise kernels over (OUTER, R, INNER).
void RowTiles(const RowView& v, int64_t max_r, std::map<std::string, std::string>* p);

// SPLIT_R for row-wise kernels that can split a row over several programs (reductions
// with atomics, the two-level scan): 1 unless the row programs (after RowTiles) would not
// fill 2 x `sms`; then enough slices for about 4 x `sms` programs, each slice at least
// 4 chunks of BLOCK_R, at most 1024.
void SplitRows(const RowView& v, int64_t sms, std::map<std::string, std::string>* p);

}  // namespace kagent::rules

#endif  // KAGENT_ENGINES_HEURISTIC_RULES_SIZING_H_
