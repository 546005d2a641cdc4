"""The comparison's statistics in one pass over the outputs (a Triton kernel), for fp32,
fp16 and bf16 outputs on the GPU.

compare._float_stats_torch takes about twenty elementwise kernels and seven host
synchronizations per 64 Mi-element chunk (each temporary a full fp32 copy of the chunk);
on the H200 that was up to 0.8 s of a candidate's 2 s under the GPU slot for a 4 GiB
output (11 trials). This kernel reads the reference and the candidate once and writes one
row of partial results per block; a few small reductions and one copy to the host finish
it. The arithmetic is compare's, in fp32: |c - r|, the excess over atol + rtol*|r|, the
relative error over max(|r|, max(atol, 1e-12)), with non-finite elements zeroed as there.
The compiler may fuse rtol*|r| + atol into one rounding (an FMA), so an excess within an
ulp of zero may fall on the other side of the bound than in the torch path.

Runs in the supervisor only, on tensors it owns; the kernel is the harness's own code.
"""

import torch
import triton
import triton.language as tl

BLOCK = 4096

# The dtypes this path handles (computed in fp32, like the torch path's `wide`).
DTYPES = (torch.float32, torch.float16, torch.bfloat16)


@triton.jit(do_not_specialize=["n"])
def _stats_kernel(r_ptr, c_ptr, n, atol, rtol, rel_floor,
                  max_abs_ptr, max_rel_ptr, worst_ptr, worst_idx_ptr, n_bad_ptr,
                  bad_cnt_ptr, bad_first_ptr, mism_first_ptr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid.to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    inb = offs < n
    r = tl.load(r_ptr + offs, mask=inb, other=0.0).to(tl.float32)
    c = tl.load(c_ptr + offs, mask=inb, other=0.0).to(tl.float32)
    r_nan = r != r
    c_nan = c != c
    r_fin = (~r_nan) & (tl.abs(r) != float("inf"))
    c_fin = (~c_nan) & (tl.abs(c) != float("inf"))
    bad = inb & r_fin & (~c_fin)
    same = (r_nan & c_nan) | (r == c)
    mism = inb & (~r_fin) & (~same)
    both = r_fin & c_fin
    rf = tl.where(both, r, 0.0)
    cf = tl.where(both, c, 0.0)
    abs_err = tl.abs(cf - rf)
    excess = abs_err - (atol + rtol * tl.abs(rf))
    rel = abs_err / tl.maximum(tl.abs(rf), rel_floor)
    excess = tl.where(inb, excess, -float("inf"))
    abs_err = tl.where(inb, abs_err, 0.0)
    rel = tl.where(inb, rel, 0.0)
    k = tl.argmax(excess, axis=0, tie_break_left=True)
    worst = tl.max(excess, axis=0)
    tl.store(max_abs_ptr + pid, tl.max(abs_err, axis=0))
    tl.store(max_rel_ptr + pid, tl.max(rel, axis=0))
    tl.store(worst_ptr + pid, worst)
    tl.store(worst_idx_ptr + pid, pid.to(tl.int64) * BLOCK + k)
    tl.store(n_bad_ptr + pid, tl.sum((excess > 0).to(tl.int32), axis=0))
    tl.store(bad_cnt_ptr + pid, tl.sum(bad.to(tl.int32), axis=0))
    tl.store(bad_first_ptr + pid, tl.min(tl.where(bad, offs, n), axis=0))
    tl.store(mism_first_ptr + pid, tl.min(tl.where(mism, offs, n), axis=0))


def float_stats(r, c, atol, rtol):
    """compare._float_stats_torch's dict for `r` and `c` (same shape, a dtype of DTYPES,
    one device) from one kernel launch and one copy to the host."""
    rflat = r.detach().reshape(-1).contiguous()
    cflat = c.detach().reshape(-1).contiguous()
    n = rflat.numel()
    blocks = triton.cdiv(n, BLOCK)
    dev = rflat.device
    f32 = dict(dtype=torch.float32, device=dev)
    i64 = dict(dtype=torch.int64, device=dev)
    i32 = dict(dtype=torch.int32, device=dev)
    max_abs, max_rel, worst = (torch.empty(blocks, **f32) for _ in range(3))
    worst_idx, bad_first, mism_first = (torch.empty(blocks, **i64) for _ in range(3))
    n_bad, bad_cnt = (torch.empty(blocks, **i32) for _ in range(2))
    _stats_kernel[(blocks,)](rflat, cflat, n, float(atol), float(rtol),
                             max(float(atol), 1e-12), max_abs, max_rel, worst, worst_idx,
                             n_bad, bad_cnt, bad_first, mism_first, BLOCK=BLOCK)
    b = int(torch.argmax(worst))  # the first block holding the largest excess
    k = worst_idx[b]
    got, want = cflat[k].float(), rflat[k].float()
    fin = torch.isfinite(got) & torch.isfinite(want)
    row = torch.stack([
        max_abs.max().double(), max_rel.max().double(), worst[b].double(), k.double(),
        n_bad.sum().double(), bad_cnt.sum().double(), bad_first.min().double(),
        mism_first.min().double(), torch.where(fin, got, 0.0).double(),
        torch.where(fin, want, 0.0).double()]).tolist()
    (m_abs, m_rel, w, k, nb, nbad, bad0, mism0, got, want) = row
    return {"bad_nonfinite": int(nbad),
            "bad_nonfinite_first": int(bad0) if nbad else None,
            "ref_mismatch_first": int(mism0) if int(mism0) < n else None,
            "max_abs": m_abs, "max_rel": m_rel, "worst_flat": int(k), "worst_excess": w,
            "worst_got": got, "worst_want": want, "n_bad": int(nb)}
