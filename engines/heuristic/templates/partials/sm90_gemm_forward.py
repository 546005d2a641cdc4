# _ext.gemm takes A (M, K) or (L, M, K): a 4-D (or more) A times a matrix (torch.matmul,
# einsum "bijl,lk->bijk") is one batch over A's leading dims (a view when contiguous).
if A.dim() > 3 and B.dim() == 2:
    out = _ext.gemm(A.reshape(-1, A.shape[-2], A.shape[-1]), B)
    return out.reshape(*A.shape[:-1], B.shape[-1])
return _ext.gemm(A, B)
