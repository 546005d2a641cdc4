// The first-kernel rules: which template serves a recognized op and the params it is
// rendered with (tile sizes from the shapes and the GPU, measured on an H200 where the
// comments say so). See template_rules.h.
#include "engines/heuristic/template_rules.h"

#include <algorithm>
#include <cmath>
#include <set>
#include <vector>

#include "absl/strings/ascii.h"
#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/strip.h"
#include "common/status.h"

namespace kagent {

using kagent::v1::GpuSpec;

int SmCount(const GpuSpec* gpu) {
  constexpr int kDefaultSmCount = 132;  // H200; used when the GPU spec is absent
  return gpu != nullptr && gpu->sm_count() > 0 ? gpu->sm_count() : kDefaultSmCount;
}

namespace {

int64_t NextPow2(int64_t v) {
  int64_t p = 1;
  while (p < v) p *= 2;
  return p;
}
int64_t Clamp(int64_t v, int64_t lo, int64_t hi) { return std::max(lo, std::min(v, hi)); }

// Compute capability as major * 10 + minor from the GPU spec's arch ("sm_90", "sm_90a",
// "sm_100"); 0 when unknown.
int SmVersion(const GpuSpec* gpu) {
  if (gpu == nullptr) return 0;
  absl::string_view arch = gpu->arch();
  if (!absl::ConsumePrefix(&arch, "sm_")) return 0;
  int v = 0;
  size_t i = 0;
  for (; i < arch.size() && i < 4 && absl::ascii_isdigit(arch[i]); ++i) v = v * 10 + (arch[i] - '0');
  return i >= 2 ? v : 0;
}

bool Is16Bit(const std::string& dtype) { return dtype == "bfloat16" || dtype == "float16"; }

int64_t Prod(const std::vector<int64_t>& s, size_t from, size_t to) {
  int64_t p = 1;
  for (size_t i = from; i < to && i < s.size(); ++i) p *= s[i];
  return p;
}

absl::Status Precondition(const TemplateInfo& t, const std::string& why) {
  return absl::FailedPreconditionError(absl::StrCat("template ", t.id, ": ", why));
}

// (OUTER, R, INNER) view of a reduction over dims [dim, dim + num_dims).
struct RowView {
  int64_t outer = 1, r = 1, inner = 1;
};
RowView ViewOf(const RecognizedOp& op) {
  RowView v;
  int rank = op.input_shape.size();
  int d0 = op.dim < 0 ? op.dim + rank : op.dim;
  d0 = Clamp(d0, 0, std::max(0, rank - 1));
  int d1 = std::min(rank, d0 + std::max(1, op.num_dims));
  v.outer = Prod(op.input_shape, 0, d0);
  v.r = Prod(op.input_shape, d0, d1);
  v.inner = Prod(op.input_shape, d1, rank);
  return v;
}

// Tiles (BLOCK_R, BLOCK_I, num_warps) for row-wise kernels over (OUTER, R, INNER).
void RowTiles(const RowView& v, int64_t max_r, std::map<std::string, std::string>* p) {
  int64_t bi = v.inner == 1 ? 1 : Clamp(NextPow2(v.inner), 1, 64);
  int64_t br = Clamp(NextPow2(v.r), 1, std::max<int64_t>(1, max_r / bi));
  int64_t tile = br * bi;
  int64_t warps = Clamp(tile / 512, 1, 16);
  warps = NextPow2(warps);
  (*p)["BLOCK_R"] = std::to_string(br);
  (*p)["BLOCK_I"] = std::to_string(bi);
  (*p)["num_warps"] = std::to_string(std::max<int64_t>(warps, v.inner == 1 ? 4 : 2));
}

// Tiles of the implicit-GEMM convolutions (conv2d_implicit_gemm, conv3d_implicit_gemm,
// conv_transpose2d), per group: M = output pixels, N = cout output channels, K runs over
// cin input channels per tap. Sets BLOCK_M/N/K, GROUP_M, num_warps, num_stages and
// INPUT_PRECISION.
//  - Large fp32 convolutions on sm_80+ (at least 65536 output pixels, 32 output channels
//    per group): 256 x min(128, cout) x 32 tiles, 8 warps, 3 stages, 3xTF32 dots (tf32x3,
//    about fp32 accuracy), although they spill about 0.5-1.2 KB per thread on sm_90.
//    Measured on an H200 (template_sweep.py; cuDNN = eager without TF32): problems/35
//    (3 x 3, 64 -> 128) 6.26 ms against 8.77 for ieee 128 x 128 x 32 (cuDNN 3.70);
//    problems/47 (groups 4, 32 -> 32 per group) 4.08 against 6.32 for ieee 128 x 32 x 32
//    and 10.7 for the old 64 x 32 x 16 (cuDNN 3.51); problems/48 (5 x 3, stride 2) 5.51
//    against 7.65 ieee (cuDNN 3.26); problems/49 (3-D, 32 -> 64) 4.39 against 6.09 ieee
//    128 x 64 (cuDNN 2.76).
//  - Large 16-bit convolutions on sm_90+ (128 output channels or more): 256 x 128 x 64, 8
//    warps, 3 stages. Measured on an H200: problems/46 (bf16 3 x 3, dilation 2, 256 ->
//    256) 6.67 ms against 10.43 for 128 x 128 x 64 / 4 stages and 10.12 for 128 x 256
//    (cuDNN 2.53); problems/50 (bf16 1-D, 1024 -> 1024, k 5) 6.89 against 9.37 (cuDNN
//    2.21). Far from cuDNN: the NCHW gather, not the tile, is the limit.
//  - Otherwise fp32 64 x min(64, cout) x min(32, cin), 16-bit 128 x min(128, cout) x
//    min(64, cin), exact (ieee) dots (compiled for sm_90 without spills).
void ConvTiles(bool half, int sm, int64_t cin, int64_t cout, int64_t pixels,
               std::map<std::string, std::string>* p) {
  const bool large = pixels >= 65536 && cout >= 32;
  const bool tf32x3 = !half && sm >= 80 && large;
  const bool wide_half = half && sm >= 90 && large && cout >= 128;
  int64_t bm = half ? 128 : 64;
  int64_t bn = Clamp(NextPow2(cout), 16, half ? 128 : 64);
  if (tf32x3) bm = 256, bn = Clamp(NextPow2(cout), 32, 128);
  if (wide_half) bm = 256, bn = 128;
  (*p)["BLOCK_M"] = std::to_string(bm);
  (*p)["BLOCK_N"] = std::to_string(bn);
  (*p)["BLOCK_K"] = std::to_string(Clamp(NextPow2(cin), 16, half ? 64 : 32));
  (*p)["GROUP_M"] = "8";
  (*p)["num_warps"] = bm * bn >= 4096 ? "8" : "4";
  (*p)["num_stages"] = half && !wide_half ? "4" : "3";
  (*p)["INPUT_PRECISION"] = tf32x3 ? "tf32x3" : "ieee";
}

// SPLIT_R for row-wise kernels that can split a row over several programs (reductions
// with atomics, the two-level scan): 1 unless the row programs (after RowTiles) would not
// fill 2 x `sms`; then enough slices for about 4 x `sms` programs, each slice at least
// 4 chunks of BLOCK_R, at most 1024.
void SplitRows(const RowView& v, int64_t sms, std::map<std::string, std::string>* p) {
  int64_t br = std::stoll((*p)["BLOCK_R"]), bi = std::stoll((*p)["BLOCK_I"]);
  int64_t programs = v.outer * CeilDiv(v.inner, bi);
  int64_t split = 1;
  if (programs < 2LL * sms) {
    split = Clamp(CeilDiv(4LL * sms, programs), 1, std::max<int64_t>(1, CeilDiv(v.r, 4 * br)));
  }
  (*p)["SPLIT_R"] = std::to_string(std::min<int64_t>(split, 1024));
}

// The elementwise template's scalar params for the activation: the values the signature
// recorded for the op (OpRecord.scalars, by aten's argument names), else torch's defaults
// (signatures from older harnesses carry none). The *_NAME params are the constructor
// keywords ModelNew reads them from when the problem passes them.
std::string OpArgs(const RecognizedOp& op, std::map<std::string, std::string>* p) {
  auto value = [&](const char* name, double fallback) {
    return FloatText(ScalarArg(op, name, fallback));
  };
  const std::string& variant = op.variant;
  if (variant == "leaky_relu") {
    (*p)["ALPHA_NAME"] = "negative_slope";
    (*p)["ALPHA"] = value("negative_slope", 0.01);
  } else if (variant == "elu") {
    (*p)["ALPHA_NAME"] = "alpha";
    (*p)["ALPHA"] = value("alpha", 1.0);
    (*p)["SCALE"] = value("scale", 1.0);
    (*p)["INPUT_SCALE"] = value("input_scale", 1.0);
  } else if (variant == "celu") {
    (*p)["ALPHA_NAME"] = "alpha";
    (*p)["ALPHA"] = value("alpha", 1.0);
  } else if (variant == "softplus") {
    (*p)["ALPHA_NAME"] = "beta";
    (*p)["ALPHA"] = value("beta", 1.0);
    (*p)["BETA_NAME"] = "threshold";
    (*p)["BETA"] = value("threshold", 20.0);
  } else if (variant == "scale") {
    (*p)["SCALE"] = value("other", 1.0);
  } else if (variant == "hardtanh") {
    (*p)["ALPHA_NAME"] = "min_val";
    (*p)["ALPHA"] = value("min_val", -1.0);
    (*p)["BETA_NAME"] = "max_val";
    (*p)["BETA"] = value("max_val", 1.0);
  }
  return variant;
}

}  // namespace

const std::map<std::string, std::string>& TemplateAliases() {
  static const auto* m = new std::map<std::string, std::string>{
      {"matvec_row", "matvec_row_per_program"},
      {"matvec_one_row_per_program", "matvec_row_per_program"},
      {"matvec_splitk", "matvec_split_k"},
      {"matvec_tile", "matvec_multi_row"},
      {"matvec_multi_row_tile", "matvec_multi_row"},
      {"gemm", "gemm_tiled"},
      {"gemm_grouped", "gemm_tiled"},
      {"gemm_swizzled", "gemm_tiled"},
      {"gemm_splitk", "gemm_split_k"},
      {"gemm_persistent", "gemm_persistent_tma"},
      {"softmax", "softmax_online"},
      {"log_softmax", "softmax_online"},
      {"softmax_row", "softmax_online"},
      {"layernorm", "row_norm"},
      {"rmsnorm", "row_norm"},
      {"layernorm_welford", "row_norm"},
      {"batchnorm", "channel_norm"},
      {"batch_norm", "channel_norm"},
      {"groupnorm", "channel_norm"},
      {"group_norm", "channel_norm"},
      {"instancenorm", "channel_norm"},
      {"instance_norm", "channel_norm"},
      {"frobenius", "frobenius_norm"},
      {"reduction", "reduce_dim"},
      {"reduce_single_pass", "reduce_dim"},
      {"reduce_two_pass", "reduce_dim"},
      {"reduce_split", "reduce_dim"},
      {"elementwise_activation", "elementwise"},
      {"scan", "scan_rows"},
      {"cumsum", "scan_rows"},
      {"cumprod", "scan_rows"},
      {"scan_blocked_two_level", "scan_rows"},
      {"pooling", "pool_nd"},
      {"pool", "pool_nd"},
      {"maxpool", "pool_nd"},
      {"avgpool", "pool_nd"},
      {"loss", "loss_reduce"},
      {"loss_two_stage", "loss_reduce"},
      {"cross_entropy", "loss_rows"},
      {"row_loss", "loss_rows"},
      {"conv2d", "conv2d_implicit_gemm"},
      {"conv_implicit_gemm", "conv2d_implicit_gemm"},
      {"implicit_gemm", "conv2d_implicit_gemm"},
      {"depthwise", "conv2d_depthwise"},
      {"conv_transpose", "conv_transpose2d"},
      {"deconv", "conv_transpose2d"},
      {"conv_depthwise", "conv2d_depthwise"},
      {"dwconv", "conv2d_depthwise"},
      {"conv3d", "conv3d_implicit_gemm"},
      {"conv1d", "conv3d_implicit_gemm"},
      {"conv1d_implicit_gemm", "conv3d_implicit_gemm"},
      {"implicit_gemm_3d", "conv3d_implicit_gemm"},
  };
  return *m;
}

absl::StatusOr<std::map<std::string, std::string>> TemplateParamsFor(
    const TemplateInfo& t, const RecognizedOp& op, const GpuSpec* gpu) {
  std::map<std::string, std::string> p;
  const int sms = SmCount(gpu);
  if (op.op_class != t.op_class) {
    return Precondition(t, absl::StrCat("serves op class ", t.op_class, ", the problem is ",
                                        DescribeOp(op)));
  }
  // Rendering the main op alone would drop the model's other compute ops.
  if (op.tags.count("extra_ops")) {
    return Precondition(t, absl::StrCat(op.extra_ops_why, "; the template computes ", op.op_class,
                                        "/", op.variant, " alone (no prologue or epilogue ops)"));
  }
  if (!op.dtype.empty() &&
      std::find(t.dtypes.begin(), t.dtypes.end(), op.dtype) == t.dtypes.end()) {
    return Precondition(t, absl::StrCat("dtype ", op.dtype, " not in {",
                                        absl::StrJoin(t.dtypes, ", "), "}"));
  }
  const bool half = Is16Bit(op.dtype);
  if (t.op_class == "matvec") {
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
  if (t.id == "gemm_diag") {
    if (op.variant != "diag" || op.diag_side.empty()) {
      return Precondition(t, "needs torch.diag of a 1-D tensor multiplied with a matrix, on a "
                             "side the signature tells");
    }
    p["SIDE"] = op.diag_side;
    // Memory bound: 32 x 256 tiles of 8 warps, 32 elements a thread.
    p["BLOCK_R"] = "32";
    p["BLOCK_C"] = std::to_string(Clamp(NextPow2(op.n), 16, 256));
    p["num_warps"] = "8";
    return p;
  }
  if (t.op_class == "gemm") {
    if (op.variant == "addmm" || op.variant == "linear") {
      return Precondition(t, "a bias-adding linear layer (addmm) is not a plain A @ B");
    }
    if (op.variant == "diag") {
      return Precondition(t, "the reference has diag structure the plain GEMM would not preserve");
    }
    if (op.variant == "triangular") {
      if (op.triangle.empty()) {
        return Precondition(t, "the reference's tril/triu does not take the product (an "
                               "operand's triangle, or more than one): only a triangular "
                               "product is supported");
      }
      if (t.FindParam("TRIANGLE") == nullptr) {
        return Precondition(t, "a triangular product (torch.triu / tril of A @ B) needs "
                               "gemm_tiled's TRIANGLE");
      }
      p["TRIANGLE"] = op.triangle;
      p["DIAGONAL"] = std::to_string(op.diagonal);
    }
    if (op.m <= 0 || op.n <= 0 || op.k <= 0) return Precondition(t, "GEMM shapes unknown");
    if (t.id == "gemm_split_k" && op.batch > 1) {
      return Precondition(t, "split-K template is 2-D only (the problem is batched)");
    }
    if (t.id == "gemm_persistent_tma") {
      if (op.batch > 1) {
        return Precondition(t, "persistent TMA template is 2-D only (the problem is batched)");
      }
      // Tensor descriptors are TMA from sm_90 on; an unknown arch is allowed (the kernel
      // itself falls back to pointer loads before sm_90).
      const int cc = SmVersion(gpu);
      if (cc > 0 && cc < 90) {
        return Precondition(t, absl::StrCat("needs Hopper (sm_90) or newer for TMA, the GPU is ",
                                            gpu->arch()));
      }
    }
    auto tile = [&](int64_t dim) { return Clamp(NextPow2(dim), 16, half ? 128 : 64); };
    int64_t bm = tile(op.m), bn = tile(op.n);
    // Large 16-bit GEMMs: 128 x 256 tiles. Measured on an H200 (problems/02, 8192^3 bf16,
    // 8 warps, 4 stages): BLOCK_N 128 -> 256 took 2.136 ms to 1.534 (cuBLAS 1.537);
    // BLOCK_M 256 instead gave 1.974.
    if (half && op.m >= 2048 && op.n >= 2048 && op.k >= 1024) bn = 256;
    int64_t bk = half ? 64 : 32;
    // fp32 GEMMs that are batched or have a short K, on sm_80+: 128 x 64 x 32 tiles, 4
    // warps, 4 stages with 3xTF32 dots (tf32x3: split operands on the tensor cores, about
    // fp32 accuracy, gated at the same tolerance). Measured on an H200 against the exact
    // (ieee) 128 x 128 x 32 / 8 warps: problems/06 (128 x 512 x 1024 x 512) 1.355 ms vs
    // 1.640 (cuBLAS 1.365); problems/03 (K = 128) 1.614 vs 1.882 (cuBLAS 1.794). Larger
    // tf32x3 tiles spill (problems/01: 128 x 128 x 32 3.98 ms against ieee's 3.21).
    const bool tf32x3 = !half && t.id == "gemm_tiled" && SmVersion(gpu) >= 80 &&
                        (op.batch > 1 || op.k <= 256) && op.m >= 128 && op.n >= 64;
    if (tf32x3) bm = 128, bn = 64;
    // fp32 split-K: BLOCK_K 64 and about 4 programs per SM. Measured on an H200
    // (problems/05, 256 x 524288 x 256): 64 x 64 x 64 with SPLIT_K 32 1.92 ms; the old
    // 64 x 64 x 32 with SPLIT_K 17 4.26 ms (cuBLAS 1.30).
    if (!half && t.id == "gemm_split_k") bk = 64;
    // 16-bit GEMMs whose K is one BLOCK_K step (K <= 64): 64 x 128 tiles, 4 warps, 2
    // stages, more programs to hide the output stores that dominate. Measured on an H200
    // (template_sweep.py, problems/04, 32768 x 64 x 32768 bf16): 64 x 128 / 4 warps / 2
    // stages 0.964 ms, 128 x 128 / 4 / 2 1.072, 128 x 256 / 8 / 3 1.105, 128 x 128 / 8 / 4
    // 1.438 (the general rule); cuBLAS 0.684.
    const bool one_k_step = half && t.id == "gemm_tiled" && op.k <= 64;
    if (one_k_step) bm = 64, bn = 128;
    p["BLOCK_M"] = std::to_string(bm);
    p["BLOCK_N"] = std::to_string(bn);
    p["BLOCK_K"] = std::to_string(bk);
    p["GROUP_M"] = "8";
    p["num_warps"] = bm * bn >= 128 * 128 ? "8" : "4";
    p["num_stages"] = half ? "4" : "3";
    if (one_k_step) p["num_warps"] = "4", p["num_stages"] = "2";
    std::string tr = t.id == "gemm_split_k" ? ".t()" : ".mT";
    p["A_EXPR"] = op.trans_a ? "A" + tr : "A";
    p["B_EXPR"] = op.trans_b ? "B" + tr : "B";
    p["INPUT_PRECISION"] = "ieee";
    if (tf32x3) {
      p["INPUT_PRECISION"] = "tf32x3";
      p["num_warps"] = "4";
      p["num_stages"] = "4";
    }
    if (t.id == "gemm_persistent_tma") {
      // 16-bit: gemm_tiled's tiles (128 x 256 x 64 for large GEMMs) with 3 stages, which
      // fill 213 KB of shared memory on sm_90 (4 would not fit). fp32 (ieee, FMA dot): at
      // most 64 x 64 x 32 with 8 warps; 128 x 128 x 32 spills 5.5 KB per thread and 4 warps
      // spill too (compile_sm90.py).
      p["num_warps"] = half && bm * bn < 128 * 128 ? "4" : "8";
      p["num_stages"] = "3";
    }
    if (t.id == "gemm_split_k") {
      int64_t tiles = CeilDiv(op.m, bm) * CeilDiv(op.n, bn);
      int64_t want = CeilDiv((half ? 2LL : 4LL) * sms, tiles);
      int64_t most = std::max<int64_t>(1, op.k / (4 * bk));
      p["SPLIT_K"] = std::to_string(Clamp(want, 1, std::min<int64_t>(most, 256)));
    }
    return p;
  }
  if (t.op_class == "softmax") {
    if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
    RowView v = ViewOf(op);
    // fp32 contiguous rows (INNER == 1) up to 32768 elements in one pass from registers,
    // 16 warps. Measured on an H200 (template_sweep.py, problems/25, softmax over rows of
    // 32768 fp32): one pass of 32768 / 16 warps 1.024 ms, / 8 warps 1.296; two passes of
    // 16384 / 16 warps 1.415, of 8192 / 16 warps 1.521 (the old rule); torch.compile 1.426;
    // through the loop 1.029 ms. 16-bit rows keep chunks of 16384: one pass of 32768 bf16
    // took problems/26 (log-softmax) from 1.183 ms to 1.699 through the loop.
    RowTiles(v, half ? 16384 : v.inner == 1 ? 32768 : 8192, &p);
    p["DIM"] = std::to_string(op.dim);
    p["LOG"] = op.variant == "log_softmax" ? "True" : "False";
    p["num_stages"] = "1";
    return p;
  }
  if (t.id == "channel_norm") {
    if (op.variant != "batch" && op.variant != "group" && op.variant != "instance") {
      return Precondition(t, absl::StrCat("serves batch (inference), group and instance "
                                          "norms, the problem is ", DescribeOp(op)));
    }
    const std::vector<int64_t>& s = op.input_shape;
    if (s.size() < 2 || s[0] <= 0 || s[1] <= 0) {
      return Precondition(t, "input shape (N, C, *) unknown");
    }
    const bool batch = op.variant == "batch";
    const bool instance = op.variant == "instance";
    const int64_t n = s[0], c = s[1], hw = Prod(s, 2, s.size());
    int64_t groups = 1;
    if (instance) {
      // InstanceNorm: GroupNorm's statistics with one channel per group; the running
      // statistics (a tracking InstanceNorm in eval mode) like BatchNorm inference.
      if (s.size() < 3 || s.size() > 5) {
        return Precondition(t, "InstanceNorm input is not (N, C, L), (N, C, H, W) or (N, C, D, H, W)");
      }
      groups = c;
    } else if (batch) {
      // Inference reads the running statistics; training normalizes with the batch's own
      // and updates the running ones. _native_batch_norm_legit_no_training and
      // _batch_norm_no_update are inference by name; the others record `training`.
      const double training = ScalarArg(op, "training", -1);
      const bool inference = op.main_op == "_native_batch_norm_legit_no_training" ||
                             op.main_op == "_batch_norm_no_update" || training == 0;
      if (!inference) {
        return Precondition(
            t, training == 1 ? "BatchNorm in training mode normalizes with batch statistics "
                               "(and updates the running ones); the template serves inference"
                             : absl::StrCat("aten::", op.main_op, " without a recorded training "
                                            "flag: inference cannot be confirmed"));
      }
    } else {
      groups = static_cast<int64_t>(ScalarArg(op, "group", 0));
      if (groups <= 0 || c % groups != 0) {
        return Precondition(t, absl::StrCat("GroupNorm's group count (", groups,
                                            ") not recorded or does not divide ", c,
                                            " channels"));
      }
    }
    if (op.tags.count("partial_affine")) {
      return Precondition(t, "weight without bias (or bias without weight): the template "
                             "takes both or neither");
    }
    p["NORM"] = op.variant;
    // The suite's inference BatchNorm (problems/29) holds weight, bias and running stats
    // on the model (F.batch_norm); GroupNorm references (problems/30, KernelBench) hold
    // an nn.GroupNorm named gn, InstanceNorm ones (KernelBench level 1) an
    // nn.InstanceNorm2d named inorm (without affine or tracking its state_dict is empty,
    // so the name only matters for those).
    p["MODULE"] = batch ? "none" : instance ? "inorm" : "gn";
    if (instance) {
      p["DIMS"] = std::to_string(s.size() - 2);
      p["STATS"] = op.tags.count("running_stats") ? "running" : "input";
    }
    p["CHANNELS"] = std::to_string(c);
    p["GROUPS"] = std::to_string(groups);
    p["EPS"] = FloatText(ScalarArg(op, "eps", ScalarArg(op, "epsilon", 1e-5)));
    p["AFFINE"] = op.has_affine ? "True" : "False";
    // Normalize: 4096 contiguous elements of a plane per program, 8 warps (58 registers in
    // fp32 compiled for sm_90: 4 programs per SM, 64 KiB of loads in flight); for HW below
    // 4096, whole planes stacked to 2048 elements at 8 per thread (2-D tiles cost about 8
    // registers per element held). GPU timing unmeasured.
    const int64_t block = Clamp(NextPow2(hw), 1, 4096);
    const int64_t bp = block >= 4096 ? 1 : Clamp(2048 / block, 1, std::min<int64_t>(4096, NextPow2(n * c)));
    const int64_t per_thread = bp > 1 ? 256 : 512;
    p["BLOCK"] = std::to_string(block);
    p["BLOCK_P"] = std::to_string(bp);
    p["num_warps"] = std::to_string(NextPow2(Clamp(block * bp / per_thread, 1, 8)));
    p["num_stages"] = "1";
    // GroupNorm statistics: each (n, group) is one contiguous run of L elements, streamed
    // in chunks of 2048 (46 registers with 8 warps: 5 programs per SM); split a group
    // when the N * G programs would not fill 2 x SMs, for about 4 programs per SM, each
    // slice at least 4 chunks.
    const int64_t len = (c / groups) * hw;
    const int64_t br = Clamp(NextPow2(len), 16, 2048);
    int64_t split = 1;
    if (!batch && !op.tags.count("running_stats") && n * groups < 2LL * sms) {
      split = Clamp(CeilDiv(4LL * sms, n * groups), 1, std::max<int64_t>(1, CeilDiv(len, 4 * br)));
    }
    p["BLOCK_R"] = std::to_string(br);
    p["SPLIT_R"] = std::to_string(std::min<int64_t>(split, 1024));
    return p;
  }
  if (t.id == "frobenius_norm") {
    if (op.variant != "frobenius") {
      return Precondition(t, absl::StrCat("serves x / ||x||_F over every element, the problem "
                                          "is ", DescribeOp(op)));
    }
    if (op.input_shape.empty() && op.output_shape.empty()) {
      return Precondition(t, "input shape unknown");
    }
    // loss_reduce's sizing (a whole-tensor reduction too): BLOCK 4096 from 4 M elements,
    // SPLIT about four pass-1 programs per SM. GPU timing unmeasured.
    const int64_t n = Prod(op.output_shape.empty() ? op.input_shape : op.output_shape, 0, 8);
    const int64_t block = n >= (4LL << 20) ? 4096 : Clamp(NextPow2(n), 64, 1024);
    p["BLOCK"] = std::to_string(block);
    p["SPLIT"] = std::to_string(Clamp(CeilDiv(n, 4 * block), 1, std::min<int64_t>(4LL * sms, 1024)));
    p["BLOCK_SCALE"] = std::to_string(block);
    p["num_warps"] = block >= 4096 ? "8" : "4";
    p["num_stages"] = "2";
    return p;
  }
  if (t.op_class == "norm") {
    if (op.variant != "layer" && op.variant != "rms" && op.variant != "l1" &&
        op.variant != "l2") {
      return Precondition(t, absl::StrCat("normalization '", op.variant,
                                          "' is not LayerNorm / RMSNorm / x / ||x||_1,2 "
                                          "along dims (batch and group norms: channel_norm)"));
    }
    if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
    RowView v = ViewOf(op);
    // Contiguous rows (INNER == 1, the 1-D path) up to 16384 elements are normalized in
    // one pass from registers, 8 warps from 8192 elements, else 4; wider rows take two
    // passes of 16384. Measured on an H200 (template_sweep.py, problems/27, LayerNorm rows
    // of 16384 bf16, 1-D path): one pass of 16384 / 8 warps 1.201 ms, / 16 warps 1.939;
    // two passes of 8192 / 8 1.198, of 4096 / 8 1.338, of 4096 / 4 1.484 (the old rule);
    // torch.compile 1.017. Tiled rows (INNER > 1) keep chunks of 4096 elements.
    RowTiles(v, v.inner == 1 ? 16384 : 4096, &p);
    if (v.inner == 1) p["num_warps"] = std::stoll(p["BLOCK_R"]) >= 8192 ? "8" : "4";
    // l1 / l2 (x / ||x|| along dims, no eps, no weights) take AFFINE none.
    p["NORM"] = op.variant;
    p["AFFINE"] = !op.has_affine || op.variant == "l1" || op.variant == "l2" ? "none"
                  : op.variant == "layer" ? "layernorm_module"
                                          : "rmsnorm_module";
    p["DIM"] = std::to_string(op.dim);
    p["NUM_DIMS"] = std::to_string(std::max(1, op.num_dims));
    p["num_stages"] = "1";
    return p;
  }
  if (t.op_class == "reduction") {
    static const std::set<std::string> kOps = {"sum",    "mean",   "max",  "min", "prod",
                                               "argmax", "argmin", "norm", "var", "std"};
    if (!kOps.count(op.variant)) {
      return Precondition(t, absl::StrCat("reduction '", op.variant, "' not supported"));
    }
    if (op.variant == "norm") {
      // linalg_vector_norm's ord / norm's p; the harness leaves non-finite numbers out, so
      // a missing order is +-inf, which the signature cannot tell apart.
      const double ord = ScalarArg(op, op.main_op == "norm" ? "p" : "ord", NAN);
      if (ord != 2.0 && ord != 1.0 && ord != 0.0) {
        return Precondition(t, std::isnan(ord) ? std::string("norm order not recorded (+-inf)")
                                               : absl::StrCat("norm order ", ord,
                                                              " (the template has 2, 1, 0, +-inf)"));
      }
      p["ORD"] = absl::StrCat(static_cast<int>(ord));
    }
    if (op.variant == "var" || op.variant == "std") {
      const double correction = ScalarArg(op, "correction", 1.0);
      if (correction < 0 || correction > 64 || correction != std::floor(correction)) {
        return Precondition(t, absl::StrCat("correction ", correction, " not an integer in [0, 64]"));
      }
      p["CORRECTION"] = absl::StrCat(static_cast<int>(correction));
    }
    if (op.num_dims != 1 && op.input_shape.size() > 1) {
      return Precondition(t, absl::StrCat("reduces ", op.num_dims,
                                          " dims at once; the template reduces one"));
    }
    if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
    RowView v = ViewOf(op);
    // Tiles of 8192 elements with at most 8 warps; 16-bit tiles over a middle dim (INNER >
    // 1) of 2048 elements (BLOCK_I 64 x BLOCK_R 32, 4 warps). Measured on an H200
    // (template_sweep.py, problems/24, min over dim 1 of 96 x 4096 x 4096 bf16): 64 x 32 /
    // 4 warps 0.724 ms, 128 x 32 / 8 0.730, 256 x 16 / 8 0.743, 64 x 128 / 8 0.831 (the
    // 8192 rule); torch.compile 0.754. fp32 over a middle dim (problems/20, 22) already
    // runs at 93% of the roofline with the 8192 rule, so it keeps it.
    RowTiles(v, half && v.inner > 1 ? 2048 : 8192, &p);
    p["num_warps"] = std::to_string(std::min<int64_t>(8, std::stoll(p["num_warps"])));
    SplitRows(v, sms, &p);
    p["OP"] = op.variant;
    p["DIM"] = std::to_string(op.dim);
    p["KEEPDIM"] = op.keepdim ? "True" : "False";
    p["num_stages"] = "1";
    return p;
  }
  if (t.op_class == "elementwise") {
    const TemplateParam* ops = t.FindParam("OP");
    if (ops == nullptr ||
        std::find(ops->allowed.begin(), ops->allowed.end(), op.variant) == ops->allowed.end()) {
      return Precondition(t, absl::StrCat("activation '", op.variant, "' not in its OP list"));
    }
    p["OP"] = OpArgs(op, &p);
    p["BLOCK"] = op.numel >= (1 << 20) ? "4096" : "1024";
    p["num_warps"] = op.numel >= (1 << 20) ? "8" : "4";
    return p;
  }
  if (t.op_class == "scan") {
    // variant: [reverse_|exclusive_|masked_]cumsum|cumprod.
    absl::string_view base = op.variant;
    bool reverse = absl::ConsumePrefix(&base, "reverse_");
    bool exclusive = absl::ConsumePrefix(&base, "exclusive_");
    bool masked = absl::ConsumePrefix(&base, "masked_");
    if (base != "cumsum" && base != "cumprod") {
      return Precondition(t, absl::StrCat("scan '", op.variant, "' not supported (cumsum, cumprod)"));
    }
    if (op.input_shape.empty()) return Precondition(t, "input shape unknown");
    if (op.tags.count("shape_changing")) {
      return Precondition(t, "the reference's exclusive scan changes the input's shape "
                             "(concatenation then a slice); the template keeps it");
    }
    RowView v = ViewOf(op);
    // A chunk of 2048 scans in registers with 4 warps; more only costs registers.
    RowTiles(v, 2048, &p);
    // Few long rows: a blocked two-level scan (totals pass, then slices in parallel).
    SplitRows(v, sms, &p);
    p["OP"] = std::string(base);
    p["DIM"] = std::to_string(op.dim);
    p["REVERSE"] = reverse ? "True" : "False";
    p["EXCLUSIVE"] = exclusive ? "True" : "False";
    p["MASKED"] = masked ? "True" : "False";
    p["num_stages"] = "1";
    return p;
  }
  if (t.op_class == "pooling") {
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
  if (t.id == "loss_rows") {
    if (op.variant != "cross_entropy" && op.variant != "cosine_similarity" &&
        op.variant != "triplet_margin") {
      return Precondition(t, absl::StrCat("loss '", op.variant,
                                          "' is not a row loss (cross_entropy, cosine_similarity, "
                                          "triplet_margin)"));
    }
    if (op.input_shape.size() != 2 || op.input_shape[1] <= 0) {
      return Precondition(t, "row losses take (B, C) inputs");
    }
    if (!op.reduction.empty() && op.reduction != "mean") {
      return Precondition(t, absl::StrCat("reduction ", op.reduction, " (the template takes the mean)"));
    }
    int64_t block = Clamp(NextPow2(op.input_shape[1]), 16, half ? 8192 : 4096);
    p["LOSS"] = op.variant;
    p["BLOCK"] = std::to_string(block);
    p["num_warps"] = block >= 4096 ? "8" : block >= 1024 ? "4" : "2";
    p["num_stages"] = "2";
    return p;
  }
  if (t.op_class == "loss") {
    static const std::set<std::string> kLosses = {"mse", "smooth_l1", "huber", "hinge", "kl_div"};
    if (!kLosses.count(op.variant)) {
      return Precondition(t, absl::StrCat("loss '", op.variant,
                                          "' is not an elementwise loss (mse, smooth_l1, huber, "
                                          "hinge, kl_div)"));
    }
    if (op.numel <= 0) return Precondition(t, "input shape unknown");
    // A few programs per SM, each streaming >= 4 chunks of BLOCK; the final pass adds at
    // most 4 x SMs partials.
    int64_t block = op.numel >= (1 << 22) ? 4096 : Clamp(NextPow2(op.numel), 64, 1024);
    int64_t split = Clamp(CeilDiv(op.numel, 4 * block), 1, 4LL * sms);
    p["LOSS"] = op.variant;
    p["REDUCTION"] = op.reduction.empty() ? "mean" : op.reduction;
    p["LOG_INPUT"] = op.tags.count("log_input") ? "True" : "False";
    p["BLOCK"] = std::to_string(block);
    p["SPLIT_N"] = std::to_string(split);
    p["num_warps"] = block >= 4096 ? "8" : "4";
    p["num_stages"] = "2";
    return p;
  }
  if (t.id == "conv2d_depthwise") {
    if (op.variant != "conv2d" || op.tags.count("transposed") || !op.tags.count("depthwise")) {
      return Precondition(t, absl::StrCat("serves depthwise 2-D convolutions (groups = in "
                                          "channels), the problem is ", DescribeOp(op)));
    }
    const std::vector<int64_t>& o = op.output_shape;
    if (op.weight_shape.size() != 4 || op.input_shape.size() != 4 || o.size() != 4) {
      return Precondition(t, "convolution shapes unknown");
    }
    if (!op.tags.count("conv_params_inferred")) {
      return Precondition(t, "no stride and padding reproduce the recorded output shape");
    }
    const int64_t c = op.input_shape[1];
    int64_t bw = Clamp(NextPow2(o[3]), 16, 128);
    int64_t bh = Clamp(NextPow2(o[2]), 1, std::max<int64_t>(1, 1024 / bw));
    p["CHANNELS"] = std::to_string(c);
    p["MULT"] = std::to_string(std::max<int64_t>(1, op.weight_shape[0] / c));
    p["KH"] = std::to_string(op.weight_shape[2]);
    p["KW"] = std::to_string(op.weight_shape[3]);
    p["STRIDE"] = std::to_string(Clamp(op.stride, 1, 16));
    p["PADDING"] = std::to_string(Clamp(op.padding, 0, 32));
    p["DILATION"] = std::to_string(Clamp(op.dilation, 1, 16));
    p["BIAS"] = op.has_bias ? "True" : "False";
    p["BLOCK_W"] = std::to_string(bw);
    p["BLOCK_H"] = std::to_string(bh);
    p["num_warps"] = "4";
    return p;
  }
  if (t.id == "conv_transpose2d") {
    if (op.variant != "conv2d" || !op.tags.count("transposed") || op.tags.count("grouped")) {
      return Precondition(t, absl::StrCat("serves transposed 2-D convolutions with groups = 1, "
                                          "the problem is ", DescribeOp(op)));
    }
    if (op.weight_shape.size() != 4 || op.input_shape.size() != 4) {
      return Precondition(t, "convolution shapes unknown");
    }
    // Stride, padding, output padding and dilation are not recoverable from the shapes
    // alone (H 32 -> 34 with k 3 is stride 1, padding 0 or stride 2, padding 16, output
    // padding 1): they come from aten::convolution's recorded scalars, and the module is
    // built from in/out/kernel plus these (CTOR in_out_kernel), whatever the order of the
    // reference's constructor.
    auto pair = [&](const char* name, int64_t lo, int64_t hi, const char* h_param,
                    const char* w_param) -> absl::Status {
      const double h = ScalarArg(op, absl::StrCat(name, ".0"), NAN);
      const double w = ScalarArg(op, absl::StrCat(name, ".1"), h);
      if (std::isnan(h) || h < lo || h > hi || w < lo || w > hi) {
        return Precondition(t, absl::StrCat(name, " not recorded or outside [", lo, ", ", hi, "]"));
      }
      p[h_param] = absl::StrCat(static_cast<int64_t>(h));
      p[w_param] = w == h ? "-1" : absl::StrCat(static_cast<int64_t>(w));
      return absl::OkStatus();
    };
    KAGENT_RETURN_IF_ERROR(pair("stride", 1, 16, "STRIDE", "STRIDE_W"));
    KAGENT_RETURN_IF_ERROR(pair("padding", 0, 32, "PADDING", "PADDING_W"));
    KAGENT_RETURN_IF_ERROR(pair("output_padding", 0, 15, "OUTPUT_PADDING", "OUTPUT_PADDING_W"));
    KAGENT_RETURN_IF_ERROR(pair("dilation", 1, 16, "DILATION", "DILATION_W"));
    // The weight is (C_in, C_out, KH, KW). Tiles as the implicit GEMM's (ConvTiles; the
    // transposed kernel's own timing is the loop's to measure).
    const int64_t cin = op.weight_shape[0], cout = op.weight_shape[1];
    const std::vector<int64_t>& out = op.output_shape.size() == 4 ? op.output_shape : op.input_shape;
    ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * out[2] * out[3], &p);
    p["CTOR"] = "in_out_kernel";
    p["BIAS"] = op.has_bias ? "True" : "False";
    return p;
  }
  if (t.id == "conv3d_implicit_gemm") {
    const bool one_d = op.variant == "conv1d";
    if ((op.variant != "conv3d" && !one_d) || op.tags.count("transposed")) {
      return Precondition(t, absl::StrCat("serves 3-D and 1-D convolutions, not transposed "
                                          "(2-D: conv2d_implicit_gemm), the problem is ",
                                          DescribeOp(op)));
    }
    const size_t rank = one_d ? 3 : 5;
    const std::vector<int64_t>& x = op.input_shape;
    const std::vector<int64_t>& w = op.weight_shape;
    if (w.size() != rank || x.size() != rank || w[1] <= 0 || x[1] % w[1] != 0 ||
        w[0] % (x[1] / w[1]) != 0 || x[1] > 1048576 || w[0] > 1048576) {
      return Precondition(t, "convolution shapes unknown");
    }
    const int64_t groups = x[1] / w[1];
    if (groups > 65535) return Precondition(t, "more than 65535 groups (the grid's axis-1 limit)");
    // The layer comes from the params alone (CTOR recorded), so the reference's constructor
    // order does not matter: stride, padding and dilation per dim from aten::convolution's
    // recorded scalars (stride.i for spatial dim i); without them (an older harness) the
    // stride and padding inferred from the shapes, with dilation 1. A 1-D conv is the
    // template's W dim, with unit D and H.
    const int nd = static_cast<int>(rank) - 2;
    const bool recorded = op.scalars.count("stride.0") > 0;
    if (!recorded && !op.tags.count("conv_params_inferred")) {
      return Precondition(t, "stride and padding neither recorded nor inferable from the shapes");
    }
    static const char* const kDims[] = {"D", "H", "W"};
    struct Arg {
      const char* scalar;
      const char* param;
      int64_t lo, hi, inferred, unit;
    };
    const Arg args[] = {{"stride", "STRIDE", 1, 16, op.stride, 1},
                        {"padding", "PADDING", 0, 64, op.padding, 0},
                        {"dilation", "DILATION", 1, 16, op.dilation, 1}};
    for (int d = 0; d < 3; ++d) {
      const int i = d - (3 - nd);  // the op's spatial dim; < 0 for a 1-D conv's D and H
      for (const Arg& a : args) {
        const double v = i < 0      ? a.unit
                         : recorded ? ScalarArg(op, absl::StrCat(a.scalar, ".", i), NAN)
                                    : a.inferred;
        if (std::isnan(v) || v < a.lo || v > a.hi) {
          return Precondition(t, absl::StrCat(a.scalar, " not recorded or outside [", a.lo,
                                              ", ", a.hi, "]"));
        }
        p[absl::StrCat(a.param, "_", kDims[d])] = absl::StrCat(static_cast<int64_t>(v));
      }
      const int64_t k = i < 0 ? 1 : w[2 + i];
      if (k < 1 || k > 64) return Precondition(t, absl::StrCat("kernel size ", k, " outside [1, 64]"));
      p[absl::StrCat("KERNEL_", kDims[d])] = std::to_string(k);
    }
    // Tiles as the 2-D implicit GEMM's, per group (ConvTiles).
    const int64_t cin = w[1], cout = w[0] / groups;
    const std::vector<int64_t>& out = op.output_shape.size() == rank ? op.output_shape : x;
    ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * Prod(out, 2, rank), &p);
    p["DIMS"] = one_d ? "1" : "3";
    p["CTOR"] = "recorded";
    p["IN_CHANNELS"] = std::to_string(x[1]);
    p["OUT_CHANNELS"] = std::to_string(w[0]);
    p["GROUPS"] = std::to_string(groups);
    p["BIAS"] = op.has_bias ? "True" : "False";
    return p;
  }
  if (t.op_class == "conv") {
    if (op.variant != "conv2d" || op.tags.count("transposed") || op.tags.count("depthwise")) {
      return Precondition(t, absl::StrCat("implicit GEMM serves standard and grouped 2-D "
                                          "convolutions (depthwise: conv2d_depthwise), the "
                                          "problem is ", DescribeOp(op)));
    }
    if (op.weight_shape.size() != 4 || op.input_shape.size() != 4 || op.weight_shape[1] <= 0 ||
        op.input_shape[1] % op.weight_shape[1] != 0) {
      return Precondition(t, "convolution shapes unknown");
    }
    // A grouped convolution is G independent GEMMs of C_in / G by C_out / G channels; the
    // tiles are sized for one group.
    const int64_t groups = op.input_shape[1] / op.weight_shape[1];
    const int64_t cin = op.weight_shape[1], cout = op.weight_shape[0] / groups;
    // Tiles per group (ConvTiles). Stride, padding and dilation: aten::convolution's
    // recorded values (the H dim's; the candidate builds its nn.Conv2d from the
    // constructor's arguments where the reference's constructor gives them), else the ones
    // inferred from the shapes.
    const std::vector<int64_t>& out = op.output_shape.size() == 4 ? op.output_shape : op.input_shape;
    ConvTiles(half, SmVersion(gpu), cin, cout, out[0] * out[2] * out[3], &p);
    auto recorded = [&](const char* name, int64_t inferred) {
      return static_cast<int64_t>(ScalarArg(op, name, static_cast<double>(inferred)));
    };
    p["STRIDE"] = std::to_string(Clamp(recorded("stride.0", op.stride), 1, 16));
    p["PADDING"] = std::to_string(Clamp(recorded("padding.0", op.padding), 0, 32));
    p["DILATION"] = std::to_string(Clamp(recorded("dilation.0", op.dilation), 1, 16));
    p["BIAS"] = op.has_bias ? "True" : "False";
    p["GROUPS"] = std::to_string(groups);
    return p;
  }
  return Precondition(t, absl::StrCat("no parameter rules for op class ", t.op_class));
}

absl::StatusOr<std::string> SelectTemplate(const RecognizedOp& op, const GpuSpec* gpu) {
  const int sms = SmCount(gpu);
  // The model computes more than the class's templates perform (a prologue or an epilogue:
  // sum(|x|), relu(conv(x)), an activation after a matmul): no template renders it.
  if (op.tags.count("extra_ops")) {
    return absl::UnimplementedError(absl::StrCat(
        "no template family for ", DescribeOp(op), ": ", op.extra_ops_why, ", which no ",
        op.op_class, " template performs (they have no prologue or epilogue ops)"));
  }
  if (op.op_class == "matvec") {
    return op.m >= 4LL * sms ? "matvec_row_per_program" : "matvec_split_k";
  }
  if (op.op_class == "gemm") {
    if (op.variant == "diag") return "gemm_diag";
    if (op.variant == "triangular") return "gemm_tiled";  // its TRIANGLE
    int64_t tiles = CeilDiv(op.m, 64) * CeilDiv(op.n, 64) * op.batch;
    if (op.batch == 1 && tiles < sms / 2 && op.k >= 4096) return "gemm_split_k";
    // A large 16-bit GEMM with a transposed A on Hopper: the persistent TMA kernel reads A
    // through a descriptor on its storage order. Measured on an H200 (problems/07, 8192^3
    // bf16, A.T @ B): 128 x 256 x 64, 3 stages 1.484 ms, against gemm_tiled's best 1.656
    // (cuBLAS 1.419, torch.compile 1.617); without the transpose (problems/02) the tiled
    // kernel stays faster (1.544 against 1.629).
    if (Is16Bit(op.dtype) && op.trans_a && op.batch == 1 && SmVersion(gpu) >= 90 &&
        op.m >= 2048 && op.n >= 2048 && op.k >= 1024) {
      return "gemm_persistent_tma";
    }
    return "gemm_tiled";
  }
  if (op.op_class == "softmax") return "softmax_online";
  // row_norm computes LayerNorm and RMSNorm statistics; channel_norm serves BatchNorm
  // (inference only: TemplateParamsFor refuses training mode), GroupNorm and
  // InstanceNorm; frobenius_norm x / ||x||_F. row_norm also divides by the 1- or 2-norm
  // along dims (l1, l2); another order (vector_norm_dim) has no template.
  if (op.op_class == "norm" && (op.variant == "layer" || op.variant == "rms" ||
                                op.variant == "l1" || op.variant == "l2")) {
    return "row_norm";
  }
  if (op.op_class == "norm" &&
      (op.variant == "batch" || op.variant == "group" || op.variant == "instance")) {
    return "channel_norm";
  }
  if (op.op_class == "norm" && op.variant == "frobenius") return "frobenius_norm";
  if (op.op_class == "reduction") return "reduce_dim";
  if (op.op_class == "elementwise") return "elementwise";
  if (op.op_class == "scan") return "scan_rows";
  if (op.op_class == "pooling" && !op.tags.count("adaptive") &&
      (absl::EndsWith(op.variant, "1d") || absl::EndsWith(op.variant, "2d") ||
       absl::EndsWith(op.variant, "3d"))) {
    return "pool_nd";
  }
  if (op.op_class == "loss" && (op.variant == "mse" || op.variant == "smooth_l1" ||
                                op.variant == "huber" || op.variant == "hinge" ||
                                op.variant == "kl_div")) {
    return "loss_reduce";
  }
  if (op.op_class == "loss" && (op.variant == "cross_entropy" || op.variant == "cosine_similarity" ||
                                op.variant == "triplet_margin")) {
    return "loss_rows";
  }
  if (op.op_class == "conv" && op.variant == "conv2d" && op.tags.count("transposed") &&
      !op.tags.count("grouped")) {
    return "conv_transpose2d";
  }
  if (op.op_class == "conv" && op.variant == "conv2d" && !op.tags.count("transposed")) {
    return op.tags.count("depthwise") ? "conv2d_depthwise" : "conv2d_implicit_gemm";
  }
  // 3-D and 1-D convolutions (1-D runs as 3-D with unit depth and height), groups >= 1;
  // transposed ones have no template.
  if (op.op_class == "conv" && (op.variant == "conv3d" || op.variant == "conv1d") &&
      !op.tags.count("transposed")) {
    return "conv3d_implicit_gemm";
  }
  return absl::UnimplementedError(absl::StrCat("no template family for ", DescribeOp(op),
                                               op.reason.empty() ? "" : " (" + op.reason + ")"));
}

}  // namespace kagent
