// C++, for a CUTLASS SM90 GEMM template's cuda_source (inside its namespace, after
// KnobNumber and the knob strings kTile, kCluster, kSchedule and kEpilogue): the kernel's
// tile, cluster and schedules from the knobs.
constexpr bool kCooperative = kSchedule[0] == 'c';
constexpr bool kTmaEpilogue = kEpilogue[0] == 't';
constexpr int kClusterM = KnobNumber(kCluster, 0);
constexpr int kClusterN = KnobNumber(kCluster, 1);
static_assert(!kCooperative || KnobNumber(kTile, 0) % 128 == 0,
              "SCHEDULE cooperative splits a tile between two warpgroups: TILE's M must be 128 "
              "or 256 (pingpong takes 64)");
using TileShape = cute::Shape<cute::Int<KnobNumber(kTile, 0)>, cute::Int<KnobNumber(kTile, 1)>,
                              cute::Int<KnobNumber(kTile, 2)>>;
using ClusterShape = cute::Shape<cute::Int<kClusterM>, cute::Int<kClusterN>, cute::_1>;
using MainloopSchedule =
    std::conditional_t<kCooperative, cutlass::gemm::KernelTmaWarpSpecializedCooperative,
                       cutlass::gemm::KernelTmaWarpSpecializedPingpong>;
using EpilogueSchedule = std::conditional_t<
    kTmaEpilogue,
    std::conditional_t<kCooperative, cutlass::epilogue::TmaWarpSpecializedCooperative,
                       cutlass::epilogue::TmaWarpSpecialized>,
    cutlass::epilogue::NoSmemWarpSpecialized>;
