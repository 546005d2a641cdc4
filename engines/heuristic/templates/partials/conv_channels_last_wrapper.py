// C++, for a CUTLASS convolution template's cpp_source (after `#define KAGENT_CONV_TEMPLATE
// "<id>"`): the torch wrapper `conv` of the template's kagent_conv_fprop (its cuda_source),
// taking channels-last operands and running the batch in chunks below CUTLASS's 32-bit
// tensor offsets.
#include <ATen/cuda/CUDAContext.h>
#include <c10/cuda/CUDAGuard.h>

#include <algorithm>
#include <vector>

const char* kagent_conv_fprop(const void* x, const void* w, const void* bias, void* y,
                              const int* dims, const int* conv, cudaStream_t stream);

// y (N, Z, P, Q, K) = conv(x (N, D, H, W, C), w (K, T, R, S, C)) [+ bias (K)], all
// contiguous channels-last of the module's dtype; a 2-D conv passes D = T = Z = 1.
// geometry: pad_d, pad_h, pad_w, stride_d, stride_h, stride_w, dil_d, dil_h, dil_w.
torch::Tensor conv(torch::Tensor x, torch::Tensor w, c10::optional<torch::Tensor> bias,
                   std::vector<int64_t> geometry) {
  TORCH_CHECK(x.is_cuda() && w.is_cuda(),
              KAGENT_CONV_TEMPLATE ": x and w must be CUDA tensors");
  TORCH_CHECK(x.dim() == 5 && w.dim() == 5 && x.size(4) == w.size(4) && geometry.size() == 9,
              KAGENT_CONV_TEMPLATE ": needs x (N, D, H, W, C), w (K, T, R, S, C) and 9 "
              "geometry values, got ", x.sizes(), ", ", w.sizes());
  TORCH_CHECK(x.scalar_type() == w.scalar_type(),
              KAGENT_CONV_TEMPLATE ": x and w differ in dtype");
  TORCH_CHECK(x.is_contiguous() && w.is_contiguous(),
              KAGENT_CONV_TEMPLATE ": x and w must be contiguous");
  const int64_t N = x.size(0), K = w.size(0);
  int64_t out[3];
  for (int i = 0; i < 3; ++i) {
    const int64_t in = x.size(1 + i), k = w.size(1 + i);
    out[i] = (in + 2 * geometry[i] - geometry[6 + i] * (k - 1) - 1) / geometry[3 + i] + 1;
    TORCH_CHECK(out[i] > 0, KAGENT_CONV_TEMPLATE ": an empty output along spatial dim ", i);
  }
  auto y = torch::empty({N, out[0], out[1], out[2], K}, x.options());
  if (N == 0 || K == 0) return y;
  TORCH_CHECK(x.size(4) > 0, KAGENT_CONV_TEMPLATE ": no input channels");
  const void* b = nullptr;
  if (bias.has_value() && bias->defined()) {
    TORCH_CHECK(bias->is_contiguous() && bias->numel() == K &&
                    bias->scalar_type() == x.scalar_type(),
                KAGENT_CONV_TEMPLATE ": the bias must be K contiguous elements of x's dtype");
    b = bias->data_ptr();
  }
  // CUTLASS's iterators address a tensor with 32-bit offsets (its can_implement refuses
  // 2 GiB or more): the batch runs in chunks that keep the input and output below that.
  const int64_t per_in = x.numel() / N * x.element_size();
  const int64_t per_out = y.numel() / N * y.element_size();
  const int64_t limit = (int64_t(1) << 31) - 1;
  TORCH_CHECK(w.numel() * w.element_size() <= limit && per_in <= limit && per_out <= limit,
              KAGENT_CONV_TEMPLATE ": one image or the filter holds 2 GiB or more");
  const int64_t chunk = std::max<int64_t>(1, std::min(limit / per_in, limit / per_out));
  c10::cuda::CUDAGuard guard(x.device());
  cudaStream_t stream = at::cuda::getCurrentCUDAStream();
  int conv[9];
  for (int i = 0; i < 9; ++i) conv[i] = int(geometry[i]);
  const char* base_x = static_cast<const char*>(x.data_ptr());
  char* base_y = static_cast<char*>(y.data_ptr());
  for (int64_t n0 = 0; n0 < N; n0 += chunk) {
    const int64_t n = std::min(chunk, N - n0);
    const int dims[12] = {int(n), int(x.size(1)), int(x.size(2)), int(x.size(3)), int(x.size(4)),
                          int(K), int(w.size(1)), int(w.size(2)), int(w.size(3)),
                          int(out[0]), int(out[1]), int(out[2])};
    const char* error = kagent_conv_fprop(base_x + n0 * per_in, w.data_ptr(), b,
                                          base_y + n0 * per_out, dims, conv, stream);
    TORCH_CHECK(error == nullptr, KAGENT_CONV_TEMPLATE ": ", error);
  }
  return y;
}
