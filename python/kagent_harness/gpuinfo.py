"""Mode `gpuinfo`: the device's properties (proto GpuSpec fields) and, on request,
measured ceilings: device-to-device copy bandwidth and bf16 matmul throughput."""

import shutil
import subprocess

import torch


def _nvidia_smi_clocks(index):
    """(max SM clock MHz, max memory clock MHz) from nvidia-smi, or (0, 0)."""
    if not shutil.which("nvidia-smi"):
        return 0.0, 0.0
    try:
        out = subprocess.run(["nvidia-smi", f"--id={index}",
                              "--query-gpu=clocks.max.sm,clocks.max.mem",
                              "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=20).stdout
        sm, mem = [float(x) for x in out.strip().splitlines()[0].split(",")]
        return sm, mem
    except (OSError, ValueError, IndexError, subprocess.TimeoutExpired):
        return 0.0, 0.0


def _median_ms(fn, reps):
    times = []
    for _ in range(reps):
        s = torch.cuda.Event(enable_timing=True)
        e = torch.cuda.Event(enable_timing=True)
        torch.cuda.synchronize()
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e))
    times.sort()
    return times[len(times) // 2]


def measure_ceilings(log):
    """Copy bandwidth (bytes/s, read + write) over 2 GiB and bf16 matmul FLOP/s (8192^3)."""
    n = 1 << 30  # 1 Gi bf16 elements = 2 GiB per buffer
    src = torch.empty(n, dtype=torch.bfloat16, device="cuda").fill_(1)
    dst = torch.empty_like(src)
    for _ in range(3):
        dst.copy_(src)
    ms = _median_ms(lambda: dst.copy_(src), 20)
    bw = 2.0 * src.numel() * src.element_size() / (ms * 1e-3)
    log.add(f"copy: {ms:.3f} ms for 2 x {src.numel() * 2 >> 20} MiB -> {bw / 1e12:.2f} TB/s")
    del src, dst
    m = 8192
    a = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    b = torch.randn(m, m, dtype=torch.bfloat16, device="cuda")
    for _ in range(3):
        a @ b
    ms = _median_ms(lambda: a @ b, 20)
    flops = 2.0 * m * m * m / (ms * 1e-3)
    log.add(f"bf16 matmul {m}^3: {ms:.3f} ms -> {flops / 1e12:.1f} TFLOP/s")
    return bw, {"bf16": flops}


def _pci_bus_id(p):
    """domain:bus:device.function of the device, or "" where torch does not say."""
    try:
        return "%04x:%02x:%02x.0" % (int(p.pci_domain_id), int(p.pci_bus_id),
                                     int(p.pci_device_id))
    except (AttributeError, TypeError, ValueError):
        return ""


def gpu_info(measure, log):
    if not torch.cuda.is_available():
        return {"ok": False, "reason": "no CUDA device visible", "name": "", "measured": False}
    idx = torch.cuda.current_device()
    p = torch.cuda.get_device_properties(idx)
    sm_clock = float(getattr(p, "clock_rate", 0) or 0) / 1000.0  # kHz -> MHz when present
    mem_clock = float(getattr(p, "memory_clock_rate", 0) or 0) / 1000.0
    if not sm_clock or not mem_clock:
        s, m = _nvidia_smi_clocks(idx)
        sm_clock = sm_clock or s
        mem_clock = mem_clock or m
    res = {
        "ok": True,
        "name": p.name,
        "arch": f"sm_{p.major}{p.minor}",
        "compute_capability": f"{p.major}.{p.minor}",
        "sm_count": int(p.multi_processor_count),
        "memory_bytes": int(p.total_memory),
        "l2_bytes": int(getattr(p, "L2_cache_size", 0) or 0),
        "sm_clock_mhz": sm_clock,
        "mem_clock_mhz": mem_clock,
        "max_threads_per_sm": int(getattr(p, "max_threads_per_multi_processor", 0) or 0),
        "registers_per_sm": int(getattr(p, "regs_per_multiprocessor", 0) or 0),
        "shared_memory_per_sm_bytes": int(getattr(p, "shared_memory_per_multiprocessor", 0)
                                          or 0),
        "measured": False,
        "peak_dram_bytes_per_second": 0.0,
        "peak_flops": {},
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        # NVML's name for the same device ("0000:19:00.0"), so that a worker reading
        # NVML (its busy-time meter) picks this GPU whatever CUDA's device order is.
        "pci_bus_id": _pci_bus_id(p),
    }
    if measure:
        bw, flops = measure_ceilings(log)
        res.update(measured=True, peak_dram_bytes_per_second=bw, peak_flops=flops)
    return res
