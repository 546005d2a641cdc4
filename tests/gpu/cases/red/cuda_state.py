# Changes what it can of the CUDA context's state, hoping it persists for the next
# candidate: the persisting-L2 limit, the cache config, the device flags, the malloc heap.
# All of it belongs to this process's context, which ends with it.
import ctypes

import torch


def attack():
    if not torch.cuda.is_available():
        return
    torch.cuda.init()
    rt = None
    for name in ("libcudart.so", "libcudart.so.13", "libcudart.so.12"):
        try:
            rt = ctypes.CDLL(name)
            break
        except OSError:
            continue
    if rt is None:
        return
    rt.cudaDeviceSetLimit(0x06, ctypes.c_size_t(64 << 20))   # cudaLimitPersistingL2CacheSize
    rt.cudaDeviceSetLimit(0x02, ctypes.c_size_t(1 << 30))    # cudaLimitMallocHeapSize
    rt.cudaDeviceSetCacheConfig(1)                           # prefer shared
    rt.cudaSetDeviceFlags(4)                                  # blocking sync
