def cutlass_include_dir():
    """The CUTLASS/CuTe headers of the installed nvidia-cutlass wheel
    (cutlass_library/source/include)."""
    spec = importlib.util.find_spec("cutlass_library")
    if spec is None or not spec.submodule_search_locations:
        raise ImportError("the CUTLASS headers are missing: pip install nvidia-cutlass==4.2.0.0")
    include = os.path.join(list(spec.submodule_search_locations)[0], "source", "include")
    for header in (("cutlass", "gemm", "device", "gemm.h"), ("cute", "tensor.hpp")):
        if not os.path.isfile(os.path.join(include, *header)):
            raise ImportError(f"no CUTLASS headers under {include} (nvidia-cutlass wheel)")
    return include


def cutlass_include_paths():
    """The CUTLASS/CuTe headers and CUTLASS's utilities beside them
    (tools/util/include: cutlass/util/packed_stride.hpp, which the 3.x convolutions use)."""
    include = cutlass_include_dir()
    util = os.path.normpath(os.path.join(include, "..", "tools", "util", "include"))
    return [include, util] if os.path.isdir(util) else [include]


def extension_name(prefix, cuda_source, cpp_source, cuda_cflags):
    """The extension's name: `prefix` and a hash of its sources and flags, so that
    identical renders share one build directory and different ones never do."""
    text = "\0".join([cuda_source, cpp_source] + list(cuda_cflags))
    return prefix + hashlib.sha256(text.encode()).hexdigest()[:16]


def load_cutlass_extension(prefix, cuda_source, cpp_source, cuda_cflags, functions=("gemm",)):
    """Builds the module's extension at import (load_inline; its `functions`, by default
    `gemm`) against the CUTLASS headers, or finds it built."""
    return load_inline(name=extension_name(prefix, cuda_source, cpp_source, cuda_cflags),
                       cpp_sources=cpp_source, cuda_sources=cuda_source, functions=list(functions),
                       extra_cuda_cflags=cuda_cflags,
                       extra_include_paths=cutlass_include_paths(), verbose=False)
