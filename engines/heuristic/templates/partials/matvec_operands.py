M, K = A.shape
x = B.reshape(K, -1) if B.dim() == 2 else B.reshape(K, 1)
assert x.shape[1] == 1, "matvec template needs a single right-hand column"
out_dtype = torch.promote_types(A.dtype, B.dtype)
y = torch.empty((M,), device=A.device, dtype=out_dtype)
