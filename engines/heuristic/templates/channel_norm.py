# kagent-template: channel_norm
# BatchNorm (training: batch statistics, updating the running ones; inference: running
# statistics), GroupNorm and InstanceNorm over (N, C, *) inputs. The input is viewed as
# P = N * C planes of HW = prod(shape[2:]) contiguous elements. Normalize kernel (all):
# grid (cdiv(P, BLOCK_P) * cdiv(HW, BLOCK),); each program owns BLOCK_P planes x BLOCK
# contiguous elements and writes y = x * scale + shift in fp32: one read, one write. With
# running statistics (BatchNorm inference; InstanceNorm built with track_running_stats=True,
# in eval mode) it computes scale = weight / sqrt(running_var + eps) and shift = bias -
# running_mean * scale per plane inside the kernel. BatchNorm on batch statistics (training
# mode) first runs a batch stats kernel, grid (cdiv(C, BLOCK_C), SPLIT_R): each program
# streams one slice of the N * HW elements of BLOCK_C channels in [BLOCK_C, BLOCK_R] tiles
# keeping a per-lane Welford (mean, M2, count), merged across lanes at once (Chan's
# formula for many groups); a merge kernel combines each channel's SPLIT_R partials the
# same way, in a fixed order, into per-channel
# scale and shift and updates running_mean / running_var in place with the momentum
# (running_var with the unbiased variance), as torch does. GroupNorm, and InstanceNorm on
# the input's own statistics (GroupNorm with one channel per group: G = C), first compute
# statistics: a group of (n, g) is one contiguous run of (C / G) * HW elements; the stats
# kernel, grid (N * G, SPLIT_R), gives each program one slice of a group, which it streams
# in BLOCK_R chunks keeping a per-lane Welford (mean, M2, count), merged across lanes with
# Chan's formula; a merge kernel combines the SPLIT_R partials of each group in a fixed
# order (no atomics: reproducible) into per-(n, c) scale and shift.
import torch
import torch.nn as nn
import triton
import triton.language as tl


@triton.jit
def _welford_combine(mean_a, m2_a, n_a, mean_b, m2_b, n_b):
    # Chan et al.: merge two (mean, M2, count) summaries; empty ones (count 0) are neutral.
    n = n_a + n_b
    w_b = tl.where(n > 0, n_b / tl.maximum(n, 1.0), 0.0)
    delta = mean_b - mean_a
    return mean_a + delta * w_b, m2_a + m2_b + delta * delta * n_a * w_b, n


@triton.jit
def channel_norm_kernel(x_ptr, y_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, scale_ptr, shift_ptr,
                        P, C, HW, num_hw_blocks, eps,
                        NORM: tl.constexpr, HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                        BLOCK_P: tl.constexpr, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    rows = (pid // num_hw_blocks) * BLOCK_P + tl.arange(0, BLOCK_P)
    cols = (pid % num_hw_blocks) * BLOCK + tl.arange(0, BLOCK)
    rmask = rows < P
    if NORM == "batch":   # running statistics (BatchNorm, or InstanceNorm in eval mode)
        c = rows % C
        mean = tl.load(rm_ptr + c, mask=rmask, other=0.0).to(tl.float32)
        var = tl.load(rv_ptr + c, mask=rmask, other=1.0).to(tl.float32)
        scale = 1.0 / tl.sqrt(var + eps)
        if HAS_W:
            scale = scale * tl.load(w_ptr + c, mask=rmask, other=1.0).to(tl.float32)
        shift = -mean * scale
        if HAS_B:
            shift = shift + tl.load(b_ptr + c, mask=rmask, other=0.0).to(tl.float32)
    elif NORM == "channel":   # per-channel scale and shift (BatchNorm, batch statistics)
        c = rows % C
        scale = tl.load(scale_ptr + c, mask=rmask, other=0.0)
        shift = tl.load(shift_ptr + c, mask=rmask, other=0.0)
    else:
        scale = tl.load(scale_ptr + rows, mask=rmask, other=0.0)
        shift = tl.load(shift_ptr + rows, mask=rmask, other=0.0)
    offs = rows[:, None].to(tl.int64) * HW + cols[None, :]
    mask = rmask[:, None] & (cols < HW)[None, :]
    x = tl.load(x_ptr + offs, mask=mask, other=0.0).to(tl.float32)
    y = x * scale[:, None] + shift[:, None]
    tl.store(y_ptr + offs, y.to(y_ptr.dtype.element_ty), mask=mask)


@triton.jit
def channel_norm_stats_kernel(x_ptr, part_ptr, L, CHUNK, NUM_PARTS, SPLIT_R,
                              BLOCK_R: tl.constexpr):
    group = tl.program_id(0)
    part = tl.program_id(1)
    start = part * CHUNK
    n = tl.maximum(tl.minimum(CHUNK, L - start), 0)   # elements of this slice
    ptr = x_ptr + group.to(tl.int64) * L + start
    offs = tl.arange(0, BLOCK_R)
    mean = tl.zeros([BLOCK_R], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_R], dtype=tl.float32)
    # Full chunks: every lane has seen i + 1 elements, so the Welford step is a multiply.
    n_full = n // BLOCK_R
    for i in range(0, n_full):
        x = tl.load(ptr + i * BLOCK_R + offs).to(tl.float32)
        delta = x - mean
        mean += delta * (1.0 / (i + 1))
        m2 += delta * (x - mean)
    # The tail: lanes past the slice keep their summary.
    idx = n_full * BLOCK_R + offs
    tmask = idx < n
    x = tl.load(ptr + idx, mask=tmask, other=0.0).to(tl.float32)
    cnt = n_full.to(tl.float32) + tmask.to(tl.float32)
    delta = x - mean
    mean += tl.where(tmask, delta / tl.maximum(cnt, 1.0), 0.0)
    m2 += tl.where(tmask, delta * (x - mean), 0.0)
    g_mean, g_m2, g_n = tl.reduce((mean, m2, cnt), 0, _welford_combine)
    out = group * SPLIT_R + part
    tl.store(part_ptr + out, g_mean)
    tl.store(part_ptr + NUM_PARTS + out, g_m2)
    tl.store(part_ptr + 2 * NUM_PARTS + out, g_n)


@triton.jit
def channel_norm_merge_kernel(part_ptr, w_ptr, b_ptr, scale_ptr, shift_ptr, P, C, CPG, G,
                              NUM_PARTS, SPLIT_R, eps,
                              HAS_W: tl.constexpr, HAS_B: tl.constexpr,
                              BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr):
    rows = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)   # planes n * C + c
    rmask = rows < P
    c = rows % C
    group = (rows // C) * G + c // CPG
    s = tl.arange(0, BLOCK_S)
    offs = group[:, None] * SPLIT_R + s[None, :]
    mask = rmask[:, None] & (s < SPLIT_R)[None, :]
    mean = tl.load(part_ptr + offs, mask=mask, other=0.0)
    m2 = tl.load(part_ptr + NUM_PARTS + offs, mask=mask, other=0.0)
    cnt = tl.load(part_ptr + 2 * NUM_PARTS + offs, mask=mask, other=0.0)
    mean, m2, cnt = tl.reduce((mean, m2, cnt), 1, _welford_combine)
    scale = 1.0 / tl.sqrt(m2 / tl.maximum(cnt, 1.0) + eps)
    if HAS_W:
        scale = scale * tl.load(w_ptr + c, mask=rmask, other=1.0).to(tl.float32)
    shift = -mean * scale
    if HAS_B:
        shift = shift + tl.load(b_ptr + c, mask=rmask, other=0.0).to(tl.float32)
    tl.store(scale_ptr + rows, scale, mask=rmask)
    tl.store(shift_ptr + rows, shift, mask=rmask)


@triton.jit
def _welford_merge(mean, m2, cnt, AXIS: tl.constexpr):
    # Every (mean, M2, count) summary along AXIS merged at once: the count-weighted mean,
    # and M2 plus each summary's count times its squared distance to it (Chan et al.
    # for many groups). Empty summaries (count 0) add nothing.
    n = tl.sum(cnt, AXIS)
    mu = tl.sum(cnt * mean, AXIS) / tl.maximum(n, 1.0)
    d = mean - tl.expand_dims(mu, AXIS)
    return mu, tl.sum(m2 + cnt * d * d, AXIS), n


@triton.jit
def batch_stats_kernel(x_ptr, part_ptr, C, HW, M, CHUNK, NUM_PARTS, SPLIT_R,
                       BLOCK_C: tl.constexpr, BLOCK_R: tl.constexpr):
    # Channels cb * BLOCK_C ..: the elements j = n * HW + hw (M = N * HW of them) of slice
    # `part`, at n * C * HW + c * HW + hw.
    cs = tl.program_id(0) * BLOCK_C + tl.arange(0, BLOCK_C)
    part = tl.program_id(1)
    start = part * CHUNK
    end = tl.minimum(start + CHUNK, M)
    cmask = cs < C
    offs = tl.arange(0, BLOCK_R)
    mean = tl.zeros([BLOCK_C, BLOCK_R], dtype=tl.float32)
    m2 = tl.zeros([BLOCK_C, BLOCK_R], dtype=tl.float32)
    cnt = tl.zeros([BLOCK_C, BLOCK_R], dtype=tl.float32)
    for j0 in range(start, end, BLOCK_R):
        j = j0 + offs
        n = j // HW
        addr = (n.to(tl.int64) * C * HW + (j - n * HW))[None, :] + cs.to(tl.int64)[:, None] * HW
        m = cmask[:, None] & (j < end)[None, :]
        x = tl.load(x_ptr + addr, mask=m, other=0.0).to(tl.float32)
        cnt += m.to(tl.float32)
        delta = x - mean
        mean += tl.where(m, delta / tl.maximum(cnt, 1.0), 0.0)
        m2 += tl.where(m, delta * (x - mean), 0.0)
    c_mean, c_m2, c_n = _welford_merge(mean, m2, cnt, 1)
    out = cs * SPLIT_R + part
    tl.store(part_ptr + out, c_mean, mask=cmask)
    tl.store(part_ptr + NUM_PARTS + out, c_m2, mask=cmask)
    tl.store(part_ptr + 2 * NUM_PARTS + out, c_n, mask=cmask)


@triton.jit
def batch_merge_kernel(part_ptr, w_ptr, b_ptr, rm_ptr, rv_ptr, scale_ptr, shift_ptr, C,
                       NUM_PARTS, SPLIT_R, eps, factor,
                       HAS_W: tl.constexpr, HAS_B: tl.constexpr, UPDATE: tl.constexpr,
                       BLOCK_M: tl.constexpr, BLOCK_S: tl.constexpr):
    # Per channel: the SPLIT_R partials merged in order; scale, shift; running statistics
    # r = (1 - factor) * r + factor * batch (the variance unbiased: M2 / (count - 1)).
    c = tl.program_id(0) * BLOCK_M + tl.arange(0, BLOCK_M)
    cmask = c < C
    s = tl.arange(0, BLOCK_S)
    offs = c[:, None] * SPLIT_R + s[None, :]
    mask = cmask[:, None] & (s < SPLIT_R)[None, :]
    mean = tl.load(part_ptr + offs, mask=mask, other=0.0)
    m2 = tl.load(part_ptr + NUM_PARTS + offs, mask=mask, other=0.0)
    cnt = tl.load(part_ptr + 2 * NUM_PARTS + offs, mask=mask, other=0.0)
    mean, m2, cnt = _welford_merge(mean, m2, cnt, 1)
    scale = 1.0 / tl.sqrt(m2 / tl.maximum(cnt, 1.0) + eps)
    if HAS_W:
        scale = scale * tl.load(w_ptr + c, mask=cmask, other=1.0).to(tl.float32)
    shift = -mean * scale
    if HAS_B:
        shift = shift + tl.load(b_ptr + c, mask=cmask, other=0.0).to(tl.float32)
    tl.store(scale_ptr + c, scale, mask=cmask)
    tl.store(shift_ptr + c, shift, mask=cmask)
    if UPDATE:
        rm = tl.load(rm_ptr + c, mask=cmask, other=0.0).to(tl.float32)
        rv = tl.load(rv_ptr + c, mask=cmask, other=0.0).to(tl.float32)
        rm = (1.0 - factor) * rm + factor * mean
        rv = (1.0 - factor) * rv + factor * (m2 / tl.maximum(cnt - 1.0, 1.0))
        tl.store(rm_ptr + c, rm.to(rm_ptr.dtype.element_ty), mask=cmask)
        tl.store(rv_ptr + c, rv.to(rv_ptr.dtype.element_ty), mask=cmask)


class ModelNew(nn.Module):
    def __init__(self, *args, **kwargs):
        super().__init__()
        # Built from the recorded op (CHANNELS, GROUPS, EPS, AFFINE, DIMS, STATS), not from
        # the constructor's arguments, whose order differs between problems (GroupNorm(G, C)
        # vs Model(num_features, num_groups)). The parameters carry the reference's names
        # so the harness loads its state_dict: MODULE=none holds weight / bias /
        # running_mean / running_var on the model itself (F.batch_norm / F.group_norm /
        # F.instance_norm references); any other MODULE holds an nn.BatchNorm{DIMS}d /
        # nn.GroupNorm / nn.InstanceNorm{DIMS}d under that name (self.bn = nn.BatchNorm2d(...),
        # self.inorm = nn.InstanceNorm2d(...) references). Without a matching state_dict,
        # the seed gives torch's initial values (ones, zeros, zeros, ones).
        # BatchNorm, STATS running: inference, the running statistics. STATS input, MODULE
        # none (F.batch_norm(training=True) on the model's own tensors): batch statistics,
        # the running buffers updated with MOMENTUM; an nn.BatchNorm{DIMS}d (MODULE bn)
        # follows its own mode as torch does: training normalizes with the batch's
        # statistics and updates the running ones (num_batches_tracked counted, MOMENTUM
        # or, with momentum None, a cumulative average), eval mode reads the running ones.
        # Otherwise running statistics are read
        # only: InstanceNorm with STATS=running is a layer built with track_running_stats=True
        # and put in eval mode, as the reference's was (torch reads the running statistics
        # only in eval mode; in training mode it would normalize with the input's statistics
        # and update the running ones, which forward refuses).
        norm, module = "{{NORM}}", "{{MODULE}}"
        channels, groups, eps, affine = {{CHANNELS}}, {{GROUPS}}, {{EPS}}, {{AFFINE}}
        dims, stats, momentum = {{DIMS}}, "{{STATS}}", {{MOMENTUM}}
        self.channels, self.groups, self.dims, self.momentum = channels, groups, dims, momentum
        self.running = norm == "batch" or (norm == "instance" and stats == "running")
        self.batch_stats = norm == "batch" and stats == "input"
        if module != "none":
            if norm == "batch":
                batch_norm = (nn.BatchNorm1d, nn.BatchNorm2d, nn.BatchNorm3d)[dims - 1]
                layer = batch_norm(channels, eps=eps, momentum=momentum, affine=affine)
            elif norm == "group":
                layer = nn.GroupNorm(groups, channels, eps=eps, affine=affine)
            else:
                instance_norm = (nn.InstanceNorm1d, nn.InstanceNorm2d, nn.InstanceNorm3d)[dims - 1]
                layer = instance_norm(channels, eps=eps, affine=affine,
                                      track_running_stats=self.running)
                if self.running:
                    layer.eval()
            setattr(self, module, layer)
        else:
            self.eps = eps
            if affine:
                self.weight = nn.Parameter(torch.ones(channels))
                self.bias = nn.Parameter(torch.zeros(channels))
            else:
                self.register_parameter("weight", None)
                self.register_parameter("bias", None)
            if self.running:
                self.register_buffer("running_mean", torch.zeros(channels))
                self.register_buffer("running_var", torch.ones(channels))

    def forward(self, x):
        norm = "{{NORM}}"
        layer = self._modules.get("{{MODULE}}", self)
        if norm == "instance" and layer is not self:
            # nn.InstanceNorm{d}d takes (N, C, *d) or one unbatched sample (C, *d).
            d = self.dims
            if x.dim() == d + 1:
                return self.forward(x.unsqueeze(0)).squeeze(0)
            if x.dim() != d + 2:
                raise ValueError(f"channel_norm: InstanceNorm{d}d takes {d + 1}-D or "
                                 f"{d + 2}-D input, got {tuple(x.shape)}")
            if self.running and layer.training:
                raise RuntimeError(
                    "channel_norm: InstanceNorm with track_running_stats=True in training "
                    "mode normalizes with the input's statistics and updates the running "
                    "ones; this kernel serves it in eval mode only (running statistics)")
        # Batch statistics: F.batch_norm(training=True) (MODULE none), or a module in
        # training mode (or without running statistics), as torch decides.
        batch_stats = self.batch_stats and (layer is self or layer.training or
                                            layer.running_mean is None)
        w, b = layer.weight, layer.bias
        eps = float(layer.eps)
        channels = layer.running_mean.numel() if norm == "batch" else self.channels
        if x.dim() < 2 or x.shape[1] != channels:
            raise ValueError(f"channel_norm: input {tuple(x.shape)} does not have the "
                             f"layer's {channels} channels in dim 1")
        # Non-contiguous (e.g. channels_last) inputs are copied to NCHW first; the output
        # is contiguous.
        x = x.contiguous()
        y = torch.empty_like(x)
        if x.numel() == 0:
            return y
        N, C = x.shape[0], x.shape[1]
        P = N * C
        HW = x.numel() // P
        num_warps = {{num_warps}}
        num_stages = {{num_stages}}  # the stats kernels' loops
        if batch_stats:
            scale, shift = self._batch_stats(x, layer, w, b, eps, N, C, HW, num_warps, num_stages)
            rm = rv = scale
        elif self.running:
            rm, rv = layer.running_mean, layer.running_var
            scale = shift = rm
        else:
            if norm == "instance":
                if HW == 1:   # as F.instance_norm: the variance of one element is 0
                    raise ValueError("channel_norm: expected more than 1 spatial element "
                                     f"when training, got input size {tuple(x.shape)}")
                G = C         # GroupNorm with one channel per group
            else:
                G = int(getattr(layer, "num_groups", self.groups))
            scale, shift = self._group_stats(x, w, b, eps, N, C, HW, G, num_warps, num_stages)
            rm = rv = scale
        BLOCK = min({{BLOCK}}, triton.next_power_of_2(HW))
        BLOCK_P = min({{BLOCK_P}}, triton.next_power_of_2(P), max(1, 32768 // BLOCK))
        num_hw_blocks = triton.cdiv(HW, BLOCK)
        grid = (triton.cdiv(P, BLOCK_P) * num_hw_blocks,)
        channel_norm_kernel[grid](
            x, y, w if w is not None else x, b if b is not None else x, rm, rv, scale, shift,
            P, C, HW, num_hw_blocks, eps,
            NORM="channel" if batch_stats else "batch" if self.running else "group",
            HAS_W=w is not None, HAS_B=b is not None, BLOCK_P=BLOCK_P, BLOCK=BLOCK, num_warps=num_warps)
        return y

    @staticmethod
    def _stats_blocks(n):
        """The stats kernels' BLOCK_R (elements of a run per chunk, at most n) and SPLIT_R
        (slices of a run, each at least a chunk), for runs of n elements."""
        BLOCK_R = min({{BLOCK_R}}, triton.next_power_of_2(n))
        SPLIT_R = min({{SPLIT_R}}, triton.cdiv(n, BLOCK_R))
        return BLOCK_R, SPLIT_R

    def _group_stats(self, x, w, b, eps, N, C, HW, G, num_warps, num_stages):
        """Per-(n, c) fp32 scale and shift from the statistics of each (n, group)."""
        if C % G != 0:
            raise ValueError(f"channel_norm: {C} channels do not split into {G} groups")
        L = (C // G) * HW
        BLOCK_R, SPLIT_R = self._stats_blocks(L)
        # Slices of whole chunks; trailing slices may be empty (neutral in the merge).
        chunk = triton.cdiv(triton.cdiv(L, SPLIT_R), BLOCK_R) * BLOCK_R
        num_parts = N * G * SPLIT_R
        parts = torch.empty(3 * num_parts, device=x.device, dtype=torch.float32)
        channel_norm_stats_kernel[(N * G, SPLIT_R)](
            x, parts, L, chunk, num_parts, SPLIT_R=SPLIT_R,
            BLOCK_R=BLOCK_R, num_warps=num_warps, num_stages=num_stages)
        P = N * C
        scale = torch.empty(P, device=x.device, dtype=torch.float32)
        shift = torch.empty(P, device=x.device, dtype=torch.float32)
        block_s = triton.next_power_of_2(SPLIT_R)
        block_m = min(triton.next_power_of_2(P), max(1, 2048 // block_s))
        channel_norm_merge_kernel[(triton.cdiv(P, block_m),)](
            parts, w if w is not None else parts, b if b is not None else parts, scale, shift,
            P, C, C // G, G, num_parts, SPLIT_R, eps,
            HAS_W=w is not None, HAS_B=b is not None, BLOCK_M=block_m, BLOCK_S=block_s)
        return scale, shift

    def _batch_stats(self, x, layer, w, b, eps, N, C, HW, num_warps, num_stages):
        """Per-channel fp32 scale and shift from the batch's statistics over N and the
        spatial dims; the running statistics updated in place as torch updates them."""
        M = N * HW
        if M <= 1:
            raise ValueError("Expected more than 1 value per channel when training, "
                             f"got input size {x.shape}")
        rm, rv = layer.running_mean, layer.running_var
        update = rm is not None and rv is not None and (layer is self or layer.training)
        factor = 0.0
        if update and layer is self:
            factor = float(self.momentum)
        elif update:
            if layer.num_batches_tracked is not None:
                layer.num_batches_tracked.add_(1)
            factor = (float(layer.momentum) if layer.momentum is not None
                      else 1.0 / float(layer.num_batches_tracked))
        BLOCK_C = min({{BLOCK_C}}, triton.next_power_of_2(C))
        BLOCK_R, SPLIT_R = self._stats_blocks(M)
        chunk = triton.cdiv(triton.cdiv(M, SPLIT_R), BLOCK_R) * BLOCK_R
        num_parts = C * SPLIT_R
        parts = torch.empty(3 * num_parts, device=x.device, dtype=torch.float32)
        batch_stats_kernel[(triton.cdiv(C, BLOCK_C), SPLIT_R)](
            x, parts, C, HW, M, chunk, num_parts, SPLIT_R,
            BLOCK_C=BLOCK_C, BLOCK_R=BLOCK_R, num_warps=num_warps, num_stages=num_stages)
        scale = torch.empty(C, device=x.device, dtype=torch.float32)
        shift = torch.empty(C, device=x.device, dtype=torch.float32)
        block_s = triton.next_power_of_2(SPLIT_R)
        block_m = min(triton.next_power_of_2(C), max(1, 2048 // block_s))
        batch_merge_kernel[(triton.cdiv(C, block_m),)](
            parts, w if w is not None else parts, b if b is not None else parts,
            rm if update else parts, rv if update else parts, scale, shift, C, num_parts,
            SPLIT_R, eps, factor, HAS_W=w is not None, HAS_B=b is not None, UPDATE=update,
            BLOCK_M=block_m, BLOCK_S=block_s)
        return scale, shift
