out_dtype = torch.promote_types(A.dtype, B.dtype)
if A.dtype != out_dtype:
    A = A.to(out_dtype)
if B.dtype != out_dtype:
    B = B.to(out_dtype)
