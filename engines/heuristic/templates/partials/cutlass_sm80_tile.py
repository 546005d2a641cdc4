// C++, for a CUTLASS 2.x template's cuda_source (after partials/cuda_knob_number and
// `constexpr char kTile[]`, TILE's "TBMxTBNxTBK_WMxWNxWK"): the threadblock and warp tile
// shapes, and the threadblock order (SWIZZLE's GemmIdentityThreadblockSwizzle).
using ThreadblockShape = cutlass::gemm::GemmShape<KnobNumber(kTile, 0), KnobNumber(kTile, 1),
                                                  KnobNumber(kTile, 2)>;
using WarpShape = cutlass::gemm::GemmShape<KnobNumber(kTile, 3), KnobNumber(kTile, 4),
                                           KnobNumber(kTile, 5)>;
using Swizzle = cutlass::gemm::threadblock::GemmIdentityThreadblockSwizzle<{{SWIZZLE}}>;
