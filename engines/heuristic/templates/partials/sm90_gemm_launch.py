// C++, for a CUTLASS SM90 GEMM template's cuda_source (inside its namespace, after
// sm90_gemm_schedule): launches `kernel`, the template's own __global__ wrapper of
// GemmKernel, for `args` on `stream` in clusters of kClusterM x kClusterN (its workspace
// initialized first). nullptr on success, else a message.
template <typename GemmKernel, typename Kernel>
const char* LaunchGemm(Kernel kernel, const typename GemmKernel::Arguments& args,
                       void* workspace, cudaStream_t stream) {
  if (!GemmKernel::can_implement(args)) return "CUTLASS cannot implement these sizes";
  if (GemmKernel::initialize_workspace(args, workspace, stream) != cutlass::Status::kSuccess) {
    return "CUTLASS could not initialize its workspace";
  }
  auto params = GemmKernel::to_underlying_arguments(args, workspace);
  const int smem = GemmKernel::SharedStorageSize;
  static const cudaError_t attribute =
      cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (attribute != cudaSuccess) return cudaGetErrorString(attribute);
  cudaLaunchConfig_t config = {};
  cudaLaunchAttribute cluster[1];
  cluster[0].id = cudaLaunchAttributeClusterDimension;
  cluster[0].val.clusterDim.x = kClusterM;
  cluster[0].val.clusterDim.y = kClusterN;
  cluster[0].val.clusterDim.z = 1;
  config.gridDim = GemmKernel::get_grid_shape(params);
  config.blockDim = GemmKernel::get_block_shape();
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = cluster;
  config.numAttrs = 1;
  const cudaError_t launched = cudaLaunchKernelEx(&config, kernel, params);
  return launched == cudaSuccess ? nullptr : cudaGetErrorString(launched);
}
