"""Self-contained workloads for recording ncu / CUPTI fixtures without the harness.

Run on a GPU machine with torch and triton:

    python3 fixture_workload.py CASE [--cupti]

Each case warms up outside any NVTX range (so Triton compilation and cuBLAS heuristics
are not profiled), then runs the "candidate" forward once inside an NVTX push/pop range
named ``kagent_candidate`` -- the same range the harness's profile mode uses, so
``ncu --nvtx --nvtx-include "kagent_candidate/"`` captures exactly those kernels.

With --cupti, calls kagent_cupti_mark("candidate_begin"/"candidate_end") and
kagent_cupti_flush() from libkagent_cupti.so (already injected via CUDA_INJECTION64_PATH,
or loaded from $KAGENT_CUPTI_LIB).

Cases:
  triton_add      one Triton kernel: z = x + y, 16M fp32 (memory bound)
  triton_matvec   one Triton kernel: y = A @ x, A 8192 x 8192 bf16, one row per program
  torch_mm_bf16   cuBLAS bf16 GEMM 4096^3 (tensor cores)
  multi           three kernels: Triton add, torch relu, torch sum
  empty           nothing launched inside the range
"""
import ctypes
import os
import sys

import torch
import triton
import triton.language as tl


@triton.jit
def _add_kernel(x_ptr, y_ptr, z_ptr, n, BLOCK: tl.constexpr):
    pid = tl.program_id(0)
    offs = pid * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(z_ptr + offs, tl.load(x_ptr + offs, mask=mask) + tl.load(y_ptr + offs, mask=mask),
             mask=mask)


@triton.jit
def _matvec_row_kernel(a_ptr, x_ptr, y_ptr, n_cols, stride_row, BLOCK: tl.constexpr):
    row = tl.program_id(0)
    acc = tl.zeros([BLOCK], dtype=tl.float32)
    for start in range(0, n_cols, BLOCK):
        cols = start + tl.arange(0, BLOCK)
        mask = cols < n_cols
        a = tl.load(a_ptr + row * stride_row + cols, mask=mask, other=0.0)
        x = tl.load(x_ptr + cols, mask=mask, other=0.0)
        acc += a.to(tl.float32) * x.to(tl.float32)
    tl.store(y_ptr + row, tl.sum(acc, axis=0).to(tl.bfloat16))


def _add(x, y):
    z = torch.empty_like(x)
    n = x.numel()
    _add_kernel[(triton.cdiv(n, 1024),)](x, y, z, n, BLOCK=1024)
    return z


def _matvec(a, x):
    y = torch.empty(a.shape[0], device=a.device, dtype=a.dtype)
    _matvec_row_kernel[(a.shape[0],)](a, x, y, a.shape[1], a.stride(0), BLOCK=1024)
    return y


def build(case):
    dev = "cuda"
    if case == "triton_add":
        x = torch.randn(1 << 24, device=dev)
        y = torch.randn(1 << 24, device=dev)
        return lambda: _add(x, y)
    if case == "triton_matvec":
        a = torch.randn(8192, 8192, device=dev, dtype=torch.bfloat16)
        x = torch.randn(8192, device=dev, dtype=torch.bfloat16)
        return lambda: _matvec(a, x)
    if case == "torch_mm_bf16":
        a = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        b = torch.randn(4096, 4096, device=dev, dtype=torch.bfloat16)
        return lambda: a @ b
    if case == "multi":
        x = torch.randn(1 << 22, device=dev)
        y = torch.randn(1 << 22, device=dev)
        return lambda: torch.relu(_add(x, y)).sum()
    if case == "empty":
        return lambda: None
    raise SystemExit(f"unknown case {case}")


def main():
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    case = sys.argv[1]
    use_cupti = "--cupti" in sys.argv[2:]
    lib = None
    if use_cupti:
        path = os.environ.get("KAGENT_CUPTI_LIB") or os.environ.get("CUDA_INJECTION64_PATH")
        lib = ctypes.CDLL(path)
        lib.kagent_cupti_mark.argtypes = [ctypes.c_char_p]
    fn = build(case)
    for _ in range(3):
        fn()
    torch.cuda.synchronize()
    if lib is not None:
        lib.kagent_cupti_mark(b"candidate_begin")
    torch.cuda.nvtx.range_push("kagent_candidate")
    fn()
    torch.cuda.synchronize()
    torch.cuda.nvtx.range_pop()
    if lib is not None:
        lib.kagent_cupti_mark(b"candidate_end")
        rc = lib.kagent_cupti_flush()
        print(f"kagent_cupti_flush -> {rc}")
    print(f"{case}: ok")


if __name__ == "__main__":
    main()
