// The sizing rules of matrix products: gemm_diag, the CUDA C++ modules gemm_cutlass_tf32x3,
// gemm_sm90_tf32x3 and gemm_sm90_bf16, and gemm_tiled, gemm_split_k and gemm_persistent_tma
// (declared in family_rules.h).
#include "engines/heuristic/rules/family_rules.h"

#include <algorithm>
#include <string>

#include "absl/strings/str_cat.h"
#include "engines/heuristic/rules/sizing.h"

namespace kagent::rules {

using kagent::v1::GpuSpec;

absl::StatusOr<TemplateParams> GemmDiagParams(const TemplateInfo& t, const RecognizedOp& op,
                                              const GpuSpec* /*gpu*/) {
  TemplateParams p;
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

namespace {

// Why gemm_cutlass_tf32x3's module cannot take `op` on `gpu` (an unknown arch passes), or
// "" when it can: C = A @ B of fp32 operands, 2-D or a batch of them (A 3-D; the module
// folds a row-major 3-D A times a 2-D B into one product), each row-major or transposed by
// the reference (read column-major in place), optionally torch.triu / tril of the product,
// with 16-byte accesses along each operand's contiguous dimension and C's rows (CUTLASS's
// alignment 4), compiled for sm_90a.
std::string CutlassTf32x3Refusal(const RecognizedOp& op, const GpuSpec* gpu) {
  const bool triangle = op.variant == "triangular";
  if (op.variant != "mm" && op.variant != "matmul" && op.variant != "bmm" && !triangle) {
    return absl::StrCat("only a plain or batched A @ B (aten::mm / bmm / matmul) or its "
                        "triu / tril, the problem is ",
                        DescribeOp(op));
  }
  if (triangle && op.triangle.empty()) {
    return "the reference's tril / triu does not take the product (an operand's triangle, or "
           "more than one)";
  }
  const bool batched = op.batch > 1 || op.tags.count("batched") > 0;
  if (op.input_shape.size() != (batched ? 3u : 2u)) {
    return "A must be 2-D, or 3-D for a batch of products";
  }
  if (op.batch >= 65536) return "a batch of at most 65535 products (the grid's z)";
  if (op.m <= 0 || op.n <= 0 || op.k <= 0) return "GEMM shapes unknown";
  const int64_t a_lead = op.trans_a ? op.m : op.k, b_lead = op.trans_b ? op.k : op.n;
  if (a_lead % 4 != 0 || b_lead % 4 != 0 || op.n % 4 != 0) {
    return absl::StrCat("each operand's contiguous dimension and N must be multiples of 4 "
                        "(16-byte accesses), got A's ",
                        a_lead, ", B's ", b_lead, ", N=", op.n);
  }
  const int cc = SmVersion(gpu);
  if (cc > 0 && cc != 90) return absl::StrCat("compiled for sm_90a only, the GPU is ", gpu->arch());
  return "";
}

// The same for the SM90 CUDA modules, gemm_sm90_tf32x3's and gemm_sm90_bf16's: A (M, K) or
// (L, M, K) times B (K, N) or (L, K, N), any strides (the fp32 split reads through them;
// the 16-bit module copies what its compiled layouts cannot read), compiled for sm_90a.
std::string Sm90GemmRefusal(const RecognizedOp& op, const GpuSpec* gpu) {
  if (op.variant != "mm" && op.variant != "matmul" && op.variant != "bmm") {
    return absl::StrCat("only a plain or batched A @ B (no bias, diag or triangle), the "
                        "problem is ",
                        DescribeOp(op));
  }
  if (op.input_shape.size() < 2 || op.input_shape.size() > 3 ||
      (op.batch > 1 && op.input_shape.size() != 3)) {
    return "A must be 2-D or 3-D, and 3-D when the product is batched";
  }
  if (op.m <= 0 || op.n <= 0 || op.k <= 0) return "GEMM shapes unknown";
  const int cc = SmVersion(gpu);
  if (cc > 0 && cc != 90) return absl::StrCat("compiled for sm_90a only, the GPU is ", gpu->arch());
  return "";
}

// A 3xTF32 split writes 12 bytes per operand element: the product's FLOP per such byte,
// M N / (8 (M + N)) (per batch), is what decides whether the split pays.
double FlopPerSplitByte(const RecognizedOp& op) {
  const double m = static_cast<double>(op.m), n = static_cast<double>(op.n);
  return m * n / (8.0 * (m + n));
}

// gemm_cutlass_tf32x3's K slices for a 2-D product whose 128 x 128 tiles leave SMs idle
// (serial split-K), from tests/gpu/gemm_sweep.py on an H100 (2026-12-07; x cuBLAS's fp32,
// slices -> ms): one wave of threadblocks is enough and deep slices are cheap, 4 tiles of
// 256 x 524288 x 256: 33 slices 1.035 ms (1.27x), 66 1.037, 132 1.054, 16 1.823 (half
// the SMs); 8 tiles of 512 x 262144 x 256: 16 0.970 (1.36x), 33 0.979, 66 1.001, 132
// 1.026; 64 tiles of 1024 x 65536 x 1024: 16 1.889 (1.31x), 33 1.906, 1 3.641. So: at
// least one threadblock per SM and slices at most kDeepSliceK deep, at least kMinSliceK;
// 1 for a batch of more than one (the module ignores SPLIT_K there; a batch of one it
// runs as a 2-D product, as PrefersCutlassTf32x3 sizes it) or a product that fills the GPU.
constexpr int64_t kMinSliceK = 2048;
constexpr int64_t kDeepSliceK = 16384;
int64_t CutlassTf32x3SplitK(const RecognizedOp& op, const GpuSpec* gpu) {
  if (op.batch > 1) return 1;
  const int64_t tiles = CeilDiv(op.m, 128) * CeilDiv(op.n, 128);
  const int64_t sms = SmCount(gpu);
  if (tiles >= sms) return 1;
  const int64_t slices = std::max(CeilDiv(sms, tiles), CeilDiv(op.k, kDeepSliceK));
  const int64_t most = std::min<int64_t>(512, std::max<int64_t>(1, op.k / kMinSliceK));
  return std::clamp<int64_t>(slices, 1, most);
}

// The threadblock tiles (tm x tn) of gemm_cutlass_tf32x3's output that hold an element of
// a triangular product's kept triangle, over the batch: the module skips the others (its
// OutsideTriangle, on whole tiles: a tile row's rows [r0, r0 + tm)). All tiles without a
// triangle.
int64_t CutlassTf32x3KeptTiles(const RecognizedOp& op, int64_t tm, int64_t tn) {
  const int64_t batch = std::max<int64_t>(1, op.batch);
  if (op.variant != "triangular" || op.triangle.empty()) {
    return CeilDiv(op.m, tm) * CeilDiv(op.n, tn) * batch;
  }
  int64_t kept = 0;
  for (int64_t r0 = 0; r0 < op.m; r0 += tm) {
    if (op.triangle == "lower") {  // columns j <= i + diagonal
      const int64_t last = std::min(op.n - 1, r0 + tm - 1 + op.diagonal);
      if (last >= 0) kept += last / tn + 1;
    } else {  // upper: columns j >= i + diagonal
      const int64_t first = std::max<int64_t>(0, r0 + op.diagonal);
      if (first <= op.n - 1) kept += (op.n - 1) / tn - first / tn + 1;
    }
  }
  return kept * batch;
}

// Whether the serial reduction of CutlassTf32x3SplitK's slices costs under a tenth of the
// product: each slice's epilogue waits for the one before it, about 2.3 us a link on an
// H100 (128 x 1048576 x 128, one tile in 132 slices: 0.818 ms where its mainloops take
// about 0.5 ms; 0.82x cuBLAS), against the product at the 66-73 TFLOP/s the split kernel
// ran at (above).
bool SplitChainPays(const RecognizedOp& op, const GpuSpec* gpu) {
  const double chain_s = 2.3e-6 * static_cast<double>(CutlassTf32x3SplitK(op, gpu));
  const double work_s = 2.0 * static_cast<double>(op.m) * static_cast<double>(op.n) *
                        static_cast<double>(op.k) / 70e12;
  return chain_s <= 0.1 * work_s;
}

}  // namespace

absl::StatusOr<TemplateParams> GemmCutlassTf32x3Params(const TemplateInfo& t,
                                                       const RecognizedOp& op,
                                                       const GpuSpec* gpu) {
  if (std::string why = CutlassTf32x3Refusal(op, gpu); !why.empty()) return Precondition(t, why);
  // The JSON's tile (128 x 128 x 32, 3 stages) unless a sweep below says otherwise.
  TemplateParams p;
  // A transposed operand is read through its storage order (a column-major layout), at
  // cuBLAS's plain-layout speed and better. H100, tests/gpu/gemm_sweep.py (2026-12-07, x
  // cuBLAS's fp32 on the same transposed operands, 2048 x 8192 x 4096): A.T @ B 1.37x
  // (1.909 ms; 4 stages 1.908), A @ B.T 1.43x (1.832; 4 stages 1.818), A.T @ B.T 1.42x
  // (1.884; 4 stages 1.843); the gate's error 0.08-0.10 of its tolerance.
  p["A_EXPR"] = op.trans_a ? "A.mT" : "A";
  p["B_EXPR"] = op.trans_b ? "B.mT" : "B";
  if (op.trans_b) p["num_stages"] = "4";
  if (op.variant == "triangular") {
    p["TRIANGLE"] = op.triangle;
    p["DIAGONAL"] = std::to_string(op.diagonal);
    // The tiles outside the triangle skip their main loop, so the computed tiles are fewer
    // than the grid's: under two waves of 128 x 128 tiles, 128 x 64 ones balance the SMs
    // better. H100 (the same sweep, x cuBLAS's product and tril/triu): tril of 2048 x 8192
    // x 3072 (136 computed 128 x 128 tiles) 0.752 ms at 128 x 64 in 4 stages (2.79x)
    // against 0.940 at 128 x 128 (2.24x); tril of 4096^3 (528) 0.994 at 128 x 128 (2.69x)
    // against 1.043, triu 0.976 (2.78x) against 1.033; triu of 8 x 1024^3 (288) 0.211 at
    // 128 x 128 (1.80x) against 0.215.
    if (CutlassTf32x3KeptTiles(op, 128, 128) < 2 * static_cast<int64_t>(SmCount(gpu))) {
      p["TILE"] = "128x64x32_64x32x32";
      p["num_stages"] = "4";
    }
  }
  p["SPLIT_K"] = std::to_string(CutlassTf32x3SplitK(op, gpu));
  // A batch: 4 stages (H100, x cuBLAS's fp32: 128 x 512 x 1024 x 512 1.36x against 1.29x
  // with 3, 16 x 2048^3 1.36x against 1.35x, 64 x 256 x 4096 x 256 1.52x against 1.46x);
  // 2-D products keep 3 (4096^3: 1.41x against 1.37x with 4).
  if (op.batch > 1) p["num_stages"] = "4";
  return p;
}

absl::StatusOr<TemplateParams> GemmSm90Tf32x3Params(const TemplateInfo& t,
                                                    const RecognizedOp& op,
                                                    const GpuSpec* gpu) {
  if (std::string why = Sm90GemmRefusal(op, gpu); !why.empty()) return Precondition(t, why);
  TemplateParams p;
  p["A_EXPR"] = op.trans_a ? "A.mT" : "A";
  p["B_EXPR"] = op.trans_b ? "B.mT" : "B";
  // 128 x 256 tiles in 2 x 1 clusters, cooperative: the fastest or within 10 % of it on
  // every shape of tests/gpu/gemm_sweep.py on an H200 (2026-12-06; docs/benchmarks.md):
  // 4096^2 1.247 ms (2.14x cuBLAS's fp32), 128 x 128 tiles 1.379-1.685, ping-pong 64 x 128
  // 3.38 (H100).
  p["TILE"] = "128x256x32";
  p["CLUSTER"] = "2x1";
  p["SCHEDULE"] = "cooperative";
  // The TMA epilogue stores 16-byte rows of D; the direct one takes any N (4099 x 2949 x
  // 3001: 0.866 ms, 1.93x) but is slower where the epilogue weighs (K = 32: 1.03 ms
  // against 0.375 with TMA).
  p["EPILOGUE"] = op.n % 4 == 0 ? "tma" : "direct";
  return p;
}

absl::StatusOr<TemplateParams> GemmSm90Bf16Params(const TemplateInfo& t, const RecognizedOp& op,
                                                  const GpuSpec* gpu) {
  if (!Is16Bit(op.dtype)) {
    return Precondition(t, absl::StrCat("bf16 or fp16 operands only, the problem's are ",
                                        op.dtype.empty() ? "unknown" : op.dtype));
  }
  if (std::string why = Sm90GemmRefusal(op, gpu); !why.empty()) return Precondition(t, why);
  TemplateParams p;
  p["DTYPE"] = op.dtype;
  // The layouts compiled in: a transposed operand is read through its storage order.
  p["A_EXPR"] = op.trans_a ? "A.mT" : "A";
  p["B_EXPR"] = op.trans_b ? "B.mT" : "B";
  // The TMA epilogue everywhere: the direct one is 5x slower where the output's stores
  // dominate (32768 x 64 x 32768 4.72 ms against 0.868 with TMA, H100), and an N not a
  // multiple of 8 through padded rows and a copy was measured with TMA (4099 x 2949 x
  // 3001: 2.33x cuBLAS; PrefersSm90Bf16).
  p["EPILOGUE"] = "tma";
  // 128 x 256 x 64 tiles in 2 x 1 clusters, cooperative: the fastest of 9 variants or
  // within 2 % of it on 9 of the 14 shapes tests/gpu/gemm_sweep.py --dtype bfloat16 ran on
  // an H100 (2026-12-07; against cuBLAS's bf16: 2048^3 1.00x, 4096^3 1.01x, 1024 x 8192 x
  // 16384 1.03x, 8192^3 0.85x, 128 x 512 x 1024 x 512 0.97x); not on 1024^3 (64-row
  // ping-pong 33 % faster), 262144 x 128 x 1024 and the transposed A (2-4 % off) or
  // 256 x 524288 x 256 (4x off: no split-K). With one K step (K <= 64) the clusters gain
  // nothing: 1 x 1 there (16384 x 32 x 16384 0.197 ms against 0.203 in 2 x 1).
  p["TILE"] = "128x256x64";
  p["SCHEDULE"] = "cooperative";
  p["CLUSTER"] = op.k <= 64 ? "1x1" : "2x1";
  return p;
}

bool PrefersCutlassTf32x3(const RecognizedOp& op, const GpuSpec* gpu) {
  if (op.dtype != "float32" || SmVersion(gpu) != 90 || !CutlassTf32x3Refusal(op, gpu).empty()) {
    return false;
  }
  const int64_t sms = SmCount(gpu);
  const int64_t tiles = CeilDiv(op.m, 128) * CeilDiv(op.n, 128);
  // A batch of products (the SM90 kernel's rule, asked first, takes the large ones): each
  // mma.sync step splits its operands in registers, where the SM90 kernel's split writes
  // 12 bytes per operand element first. H100, x cuBLAS's fp32 (4 stages):
  // 128 x 512 x 1024 x 512 (problems/06) 1.36x (the SM90 kernel 1.05x on an H200),
  // 64 x 256 x 4096 x 256 1.52x (SM90 0.64x), 16 x 2048^3 1.36x. Enough tiles over the
  // batch to fill the GPU.
  if (op.batch > 1) return tiles * op.batch >= sms;
  // Few output tiles over a long K (problems/05's 256 x 524288 x 256: 0.05x without a
  // split, 1.27x in 33 slices): serial split-K (CutlassTf32x3SplitK) when slices at least
  // kMinSliceK deep can fill the GPU and their serial reduction is cheap.
  if (tiles < sms) return tiles * (op.k / kMinSliceK) >= sms && SplitChainPays(op, gpu);
  // torch.triu / tril of a product (the SM90 kernel takes no triangle): the tiles outside
  // the triangle skip their main loop, about half of a square product's work.
  if (op.variant == "triangular") return true;
  // Where gemm_sm90_tf32x3's error is too close to the tolerance (K over 4096), the CUTLASS
  // 2.x kernel's three mma.sync products per step keep it far inside: measured on an H200
  // (tests/gpu/gemm_sweep.py, x cuBLAS's fp32, the gate's error): 8192^3 1.36x, 0.10;
  // 1024 x 8192 x 16384 1.34x, 0.10.
  if (op.k <= 4096 || op.k > 65536) return false;
  return FlopPerSplitByte(op) >= 80.0;
}

bool PrefersSm90Bf16(const RecognizedOp& op, const GpuSpec* gpu) {
  if (!Is16Bit(op.dtype) || SmVersion(gpu) != 90 || !Sm90GemmRefusal(op, gpu).empty()) {
    return false;
  }
  // Against cuBLAS's bf16 on an H100 (tests/gpu/gemm_sweep.py --dtype bfloat16), the
  // CUTLASS SM90 kernel ties it on large products (0.84-1.03x) and wins only where the
  // output's stores dominate, K one 64-deep step: 32768 x 64 x 32768 0.867 ms against
  // 0.920 (1.06x), 16384 x 32 x 16384 0.197 against 0.234 (1.19x); gemm_tiled's best there
  // was 0.71x of cuBLAS on an H200 (0.964 ms against 0.684). Elsewhere gemm_tiled and
  // gemm_persistent_tma already tie cuBLAS (problems/02, 07).
  const bool fills = CeilDiv(op.m, 128) * CeilDiv(op.n, 256) * std::max<int64_t>(1, op.batch) >=
                     SmCount(gpu);
  // K or N not a multiple of 8 (rows TMA cannot read in place): the module computes on
  // zero-padded copies, where cuBLAS's bf16 drops to 130-136 TFLOP/s (about 700 on aligned
  // sizes). H100 (gemm_sweep.py --dtype bfloat16 --only irregular): 4099 x 2949 x 3001
  // 0.240 ms against 0.560 (2.33x), 8205 x 2949 x 5921 0.713 against 2.127 (2.98x), its
  // outputs within an ulp of the exactly rounded product (0.31 of the gate, as cuBLAS's).
  if (op.k % 8 != 0 || op.n % 8 != 0) return fills;
  if (op.k > 64 || op.m % 8 != 0) return false;
  // Rows TMA reads in place (16 bytes) and enough 128 x 256 tiles to fill the GPU.
  return fills;
}

bool PrefersSm90Tf32x3(const RecognizedOp& op, const GpuSpec* gpu) {
  if (op.dtype != "float32" || SmVersion(gpu) != 90 || !Sm90GemmRefusal(op, gpu).empty()) {
    return false;
  }
  // Accuracy: the tensor cores' fp32 accumulation loses more than cuBLAS's FMA chains, in
  // proportion to K. Measured on an H200 against the gate's tolerance (randn operands,
  // atol 1e-4 x rms(C), rtol 1e-4): 0.25 of it at K = 2048, 0.50 at 4096, 0.98 at 8192,
  // 54 at K = 524288 (cuBLAS: 0.05-0.10). K <= 4096 keeps half the tolerance in reserve.
  if (op.k > 4096) return false;
  // Speed: the split writes 12 bytes per operand element before the GEMM reads them, so
  // it pays where the product's work per operand element is large (FlopPerSplitByte).
  // Measured on an H200 (x cuBLAS's fp32): 2.0-2.3x at
  // 92-1024 (4099 x 2949 x 3001, 262144 x 128 x 1024, 16384 x 32 x 16384, 16 x 2048^3,
  // 16 x 1024 x 2048 x 768, 8192 x 256 x 8192), 1.97x at 128 (2048^3); 0.79x at 64
  // (1024^3), 1.05x at 32 (128 x 512 x 1024 x 512), 0.64x at 16 (64 x 256 x 4096 x 256),
  // 0.54x at 32 (512^3).
  if (FlopPerSplitByte(op) < 80.0) return false;
  // And enough 128 x 256 tiles to fill the GPU: 2048^2 (128 tiles, 1.97x) does; 1024^2 (32)
  // does not.
  const int64_t tiles = CeilDiv(op.m, 128) * CeilDiv(op.n, 256) * std::max<int64_t>(1, op.batch);
  return tiles >= SmCount(gpu) / 2;
}

absl::StatusOr<TemplateParams> GemmParams(const TemplateInfo& t, const RecognizedOp& op,
                                          const GpuSpec* gpu) {
  TemplateParams p;
  const int sms = SmCount(gpu);
  const bool half = Is16Bit(op.dtype);
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
  // Not for split-K: 128 x 256 x 64 is over its max_tile_elements (its partial sums in
  // fp32 are a second output tile).
  if (half && t.id != "gemm_split_k" && op.m >= 2048 && op.n >= 2048 && op.k >= 1024) bn = 256;
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

}  // namespace kagent::rules
