// Test data: the harness's gpuinfo output on a known GPU, for the GPU spec table's tests
// and the profiler's fake runner. Test-only; constants, thread-safe.
#ifndef KAGENT_KERNEL_MODEL_TESTING_GPU_INFO_H_
#define KAGENT_KERNEL_MODEL_TESTING_GPU_INFO_H_

namespace kagent::testing {

// The harness's gpuinfo output on the H200 (python/kagent_harness/gpuinfo.py's fields).
inline constexpr char kH200GpuInfo[] =
    R"({"ok":true,"name":"NVIDIA H200","arch":"sm_90","compute_capability":"9.0",)"
    R"("sm_count":132,"memory_bytes":150754820096,"l2_bytes":52428800,)"
    R"("sm_clock_mhz":1980,"mem_clock_mhz":3201,"measured":false,)"
    R"("peak_dram_bytes_per_second":0.0,"peak_flops":{}})";

}  // namespace kagent::testing

#endif  // KAGENT_KERNEL_MODEL_TESTING_GPU_INFO_H_
