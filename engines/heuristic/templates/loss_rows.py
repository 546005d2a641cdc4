# kagent-template: loss_rows
# Row-wise losses reduced to a scalar: cross-entropy over class logits (B, C) with integer
# targets, 1 - cosine similarity between the rows of two (B, D) inputs, and the triplet
# margin loss of (anchor, positive, negative) rows. Grid (B,): each program streams its
# row in BLOCK chunks in fp32 (an online max and rescaled sum for the log-sum-exp; dot
# product and squared norms for the cosine; squared distances for the triplet) and writes
# the row's loss and weight (0 for an ignored target); a one-program kernel adds them in
# order and divides.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def row_loss_kernel(a_ptr, b_ptr, c_ptr, t_ptr, loss_ptr, w_ptr, C, stride_a, stride_b,
                    stride_c, eps, margin, ignore_index, BLOCK: tl.constexpr,
                    LOSS: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    offs = tl.arange(0, BLOCK)
    a_row = a_ptr + row * stride_a
    if LOSS == "cross_entropy":
        m = tl.full([BLOCK], float("-inf"), tl.float32)
        s = tl.zeros([BLOCK], dtype=tl.float32)
        for c0 in range(0, C, BLOCK):
            mask = c0 + offs < C
            x = tl.load(a_row + c0 + offs, mask=mask, other=float("-inf")).to(tl.float32)
            m_new = tl.maximum(m, x)
            live = m_new > float("-inf")
            safe = tl.where(live, m_new, 0.0)
            s = tl.where(live, s * tl.exp(m - safe) + tl.exp(x - safe), 0.0)
            m = m_new
        mx = tl.max(m, axis=0)
        total = tl.sum(tl.where(m > float("-inf"), s * tl.exp(m - mx), 0.0), axis=0)
        lse = mx + tl.log(total)
        tgt = tl.load(t_ptr + row).to(tl.int64)
        valid = tgt != ignore_index
        xt = tl.load(a_row + tl.where(valid, tgt, 0)).to(tl.float32)
        loss = tl.where(valid, lse - xt, 0.0)
        weight = tl.where(valid, 1.0, 0.0)
    elif LOSS == "triplet_margin":
        # max(margin + |a - p + eps| - |a - n + eps|, 0), like torch.triplet_margin_loss (p=2).
        b_row = b_ptr + row * stride_b
        c_row = c_ptr + row * stride_c
        dp = tl.zeros([BLOCK], dtype=tl.float32)
        dn = tl.zeros([BLOCK], dtype=tl.float32)
        for c0 in range(0, C, BLOCK):
            mask = c0 + offs < C
            x = tl.load(a_row + c0 + offs, mask=mask, other=0.0).to(tl.float32)
            y = tl.load(b_row + c0 + offs, mask=mask, other=0.0).to(tl.float32)
            z = tl.load(c_row + c0 + offs, mask=mask, other=0.0).to(tl.float32)
            u = x - y + eps
            v = x - z + eps
            dp += tl.where(mask, u * u, 0.0)
            dn += tl.where(mask, v * v, 0.0)
        loss = tl.maximum(margin + tl.sqrt(tl.sum(dp, axis=0)) - tl.sqrt(tl.sum(dn, axis=0)), 0.0)
        weight = 1.0
    else:  # cosine_similarity: 1 - x.y / (max(|x|, eps) * max(|y|, eps))
        b_row = b_ptr + row * stride_b
        dot = tl.zeros([BLOCK], dtype=tl.float32)
        na = tl.zeros([BLOCK], dtype=tl.float32)
        nb = tl.zeros([BLOCK], dtype=tl.float32)
        for c0 in range(0, C, BLOCK):
            mask = c0 + offs < C
            x = tl.load(a_row + c0 + offs, mask=mask, other=0.0).to(tl.float32)
            y = tl.load(b_row + c0 + offs, mask=mask, other=0.0).to(tl.float32)
            dot += x * y
            na += x * x
            nb += y * y
        nx = tl.maximum(tl.sqrt(tl.sum(na, axis=0)), eps)
        ny = tl.maximum(tl.sqrt(tl.sum(nb, axis=0)), eps)
        loss = 1.0 - tl.sum(dot, axis=0) / (nx * ny)
        weight = 1.0
    tl.store(loss_ptr + row, loss)
    tl.store(w_ptr + row, weight)


@triton.jit
def row_loss_final_kernel(loss_ptr, w_ptr, out_ptr, B, BLOCK_F: tl.constexpr):
    offs = tl.arange(0, BLOCK_F)
    acc = tl.zeros([BLOCK_F], dtype=tl.float32)
    wacc = tl.zeros([BLOCK_F], dtype=tl.float32)
    for r0 in range(0, B, BLOCK_F):
        mask = r0 + offs < B
        acc += tl.load(loss_ptr + r0 + offs, mask=mask, other=0.0)
        wacc += tl.load(w_ptr + r0 + offs, mask=mask, other=0.0)
    # A mean over no valid target is nan, like torch.
    tl.store(out_ptr, (tl.sum(acc, axis=0) / tl.sum(wacc, axis=0)).to(out_ptr.dtype.element_ty))


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        loss = "{{LOSS}}"
        self.eps = float(kwargs.get("eps", 1e-6 if loss == "triplet_margin" else 1e-8))
        self.ignore_index = int(kwargs.get("ignore_index", -100))
        # nn.TripletMarginLoss(margin=1.0, p=2.0, ...): KernelBench passes the margin first.
        self.margin = float(kwargs.get("margin", args[0] if args and loss == "triplet_margin" else 1.0))
        if loss == "triplet_margin" and (kwargs.get("p", 2) != 2 or kwargs.get("swap", False)):
            raise NotImplementedError("loss_rows: triplet margin with p=2 and swap=False only")

    def forward(self, a, b, *rest):
        loss = "{{LOSS}}"
        c = a
        if loss == "cross_entropy":
            if b.dtype.is_floating_point or a.dim() != 2:
                raise NotImplementedError("loss_rows: cross_entropy needs (B, C) logits and class indices")
            t = b.contiguous()
            b = a
        else:
            if loss == "triplet_margin":
                c = rest[0]
            if a.dim() != 2 or a.shape != b.shape or a.shape != c.shape:
                raise NotImplementedError(f"loss_rows: {loss} of (B, D) inputs along dim 1")
            t = a
        a = a if a.stride(-1) == 1 else a.contiguous()
        b = b if b.stride(-1) == 1 else b.contiguous()
        c = c if c.stride(-1) == 1 else c.contiguous()
        B, C = a.shape
        out = torch.empty((), device=a.device, dtype=a.dtype)
        losses = torch.empty(B, device=a.device, dtype=torch.float32)
        weights = torch.empty(B, device=a.device, dtype=torch.float32)
        BLOCK = min({{BLOCK}}, triton.next_power_of_2(C))
        row_loss_kernel[(B,)](
            a, b, c, t, losses, weights, C, a.stride(0), b.stride(0), c.stride(0), self.eps,
            self.margin, self.ignore_index,
            BLOCK=BLOCK, LOSS=loss, num_warps={{num_warps}}, num_stages={{num_stages}})
        row_loss_final_kernel[(1,)](losses, weights, out, B, BLOCK_F=1024)
        return out
