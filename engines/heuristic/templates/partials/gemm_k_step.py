kmask = offs_k + k0 < K
a = tl.load(a_ptrs, mask=(offs_m[:, None] < M) & kmask[None, :], other=0.0)
b = tl.load(b_ptrs, mask=kmask[:, None] & (offs_n[None, :] < N), other=0.0)
if UPCAST:  # Triton's CPU interpreter mis-computes bf16 tl.dot
    a = a.to(tl.float32)
    b = b.to(tl.float32)
acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
a_ptrs += BLOCK_K * stride_ak
b_ptrs += BLOCK_K * stride_bk
