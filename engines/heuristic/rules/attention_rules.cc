// The sizing rule of the attention class: attention_online (declared in family_rules.h).
//
// Conditions of use: an attention op (RecognizeOp's class attention) without an attention
// mask tensor, without dropout, with K / V heads that broadcast to Q's and Q, K, V three
// distinct inputs (the template's forward(Q, K, V)); the recognized
// batch, lengths and head dims known (> 0). The tiles follow from the register budget of a
// program, not from any one shape: each keeps a [BLOCK_M, BLOCK_DV] fp32 accumulator, a
// [BLOCK_M, BLOCK_D] Q tile and a [BLOCK_M, BLOCK_N] score tile live across the key loop.
// W below is the wider of the two head dims, each padded to a power of two (at least 16).
//  - 16-bit (tensor cores): 128 queries x 64 keys up to W 64, 64 x 64 up to 128, 8 warps.
//  - fp32 (INPUT_PRECISION ieee: no tensor cores, FMA dots whose operands take more
//    registers per thread): 64 x 32 up to W 64, 32 x 32 up to 128, 8 warps.
//  - W over 128: Q @ K^T in head-dim chunks of 64 (BLOCK_D) and at most 256 value columns
//    per program (more split over the grid's second axis, each part recomputing the
//    scores); 64 x 64 (16-bit) / 32 x 32 (fp32), 8 warps, 2 stages.
//  - Too few programs to fill the GPU twice (short query lengths, few batch x heads):
//    BLOCK_M halves down to 32 (16 for a single query: decoding) before the grid is that
//    small; the blocks never exceed the next power of two of the lengths.
// Checked without a GPU: these tiles compile for sm_90 (the triton wheel's ptxas) without
// register spills, e.g. bf16 head dim 128 at 64 x 64 255 registers, fp32 head dim 64 at
// 64 x 32 150, fp32 / bf16 head dim 1024 in chunks 191 / 210; 128 x 64 for 16-bit head dim
// 128, 64 x 32 fp32 with 4 warps and whole head dims of 256 in one chunk spilled. Not yet
// measured on a GPU: starting tiles for the knob tuner.
#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "engines/heuristic/rules/family_rules.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

absl::StatusOr<TemplateParams> AttentionParams(const TemplateInfo& t, const RecognizedOp& op,
                                               const GpuSpec* gpu) {
  if (op.variant != "sdpa" && op.variant != "written_out") {
    return Precondition(t, absl::StrCat("attention form '", op.variant, "' not supported"));
  }
  if (op.tags.count("masked")) {
    return Precondition(t, "the model passes an attention mask tensor; the template has only "
                           "is_causal");
  }
  if (op.tags.count("dropout")) {
    return Precondition(t, "dropout_p > 0: the reference is random");
  }
  if (op.tags.count("grouped_kv")) {
    return Precondition(t, "K / V heads do not broadcast to Q's (grouped-query attention)");
  }
  if (op.tags.count("shared_inputs")) {
    return Precondition(t, "Q, K and V are views of fewer than three tensors; the template "
                           "takes them as three inputs");
  }
  if (op.batch <= 0 || op.m <= 0 || op.n <= 0 || op.k <= 0 || op.head_dim_v <= 0) {
    return Precondition(t, "attention shapes unknown (Q, K, V not recorded)");
  }
  if (op.variant == "sdpa" && op.scalars.count("scale") && op.scalars.at("scale") == 0) {
    return Precondition(t, "scale 0 (SCALE 0 means SDPA's default 1 / sqrt(D))");
  }
  const bool half = Is16Bit(op.dtype);
  const int64_t d = NextPow2(std::max<int64_t>(op.k, 16));
  const int64_t dv = NextPow2(std::max<int64_t>(op.head_dim_v, 16));
  const int64_t widest = std::max(d, dv);
  int64_t block_m = half ? (widest <= 64 ? 128 : 64) : (widest <= 64 ? 64 : 32);
  int64_t block_n = half ? 64 : 32;
  const int64_t warps = 8;
  const int64_t block_d = widest <= 128 ? d : std::min<int64_t>(d, 64);
  const int64_t block_dv = std::min<int64_t>(dv, 256);
  // Fill the GPU: halve the query block while the grid would not cover the SMs twice.
  const int64_t floor_m = op.m == 1 ? 16 : 32;
  block_m = std::min(block_m, std::max<int64_t>(16, NextPow2(op.m)));
  const int64_t columns = CeilDiv(op.head_dim_v, block_dv);
  while (block_m > floor_m && CeilDiv(op.m, block_m) * op.batch * columns < 2LL * SmCount(gpu)) {
    block_m /= 2;
  }
  block_n = std::min(block_n, std::max<int64_t>(16, NextPow2(op.n)));
  TemplateParams p;
  p["BLOCK_M"] = std::to_string(block_m);
  p["BLOCK_N"] = std::to_string(block_n);
  p["BLOCK_D"] = std::to_string(block_d);
  p["BLOCK_DV"] = std::to_string(block_dv);
  p["num_warps"] = std::to_string(warps);
  p["num_stages"] = widest <= 128 ? "3" : "2";
  p["CAUSAL"] = op.causal ? "True" : "False";
  p["SCALE"] = absl::StrFormat("%.17g", op.scale);
  p["K_EXPR"] = op.tags.count("k_given_transposed") ? "K.mT" : "K";
  p["INPUT_PRECISION"] = "ieee";
  return p;
}

}  // namespace kagent::rules
