ck = c0 + offs_k
k_mask = ck < CG
a = tl.load(x_ptr + a_base[:, None] + ck[None, :] * sxc,
            mask=a_mask_m[:, None] & k_mask[None, :], other=0.0)
b = tl.load(w_ptr + ck[:, None] * swc + b_base[None, :],
            mask=k_mask[:, None] & n_mask[None, :], other=0.0)
if UPCAST:  # Triton's CPU interpreter mis-computes 16-bit tl.dot
    a = a.to(tl.float32)
    b = b.to(tl.float32)
acc = tl.dot(a, b, acc, input_precision=INPUT_PRECISION)
