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
