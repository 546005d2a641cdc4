"""tests/gpu/gemm_sweep.py's error measure on the CPU: the tolerance is the sweep's dtype's
when the measure runs (session 30: bound at import, the bf16 sweep measured with fp32's
rtol and reported exactly rounded bf16 products as 1.7 tolerances off)."""
import pytest

from conftest import gpu_script

torch = pytest.importorskip("torch")


@pytest.fixture
def sweep():
    mod = gpu_script("gemm_sweep")
    yield mod
    mod.ATOL, mod.RTOL = mod.default_tolerance("float32")


def test_the_measure_uses_the_dtype_set_after_import(sweep):
    ref = torch.tensor([100.0, -260.0], dtype=torch.float64)
    c = torch.tensor([100.0, -261.0], dtype=torch.float64)
    # fp32's tolerance: 1e-4 + 1e-4 x 260 = 0.0261 against a difference of 1.
    assert sweep.excess(c, ref) == pytest.approx(1.0 / (1e-4 + 1e-4 * 260.0))
    sweep.ATOL, sweep.RTOL = sweep.default_tolerance("bfloat16")
    # bf16's: 1e-2 + 1e-2 x 260 = 2.61 against a difference of 1.
    assert sweep.excess(c, ref) == pytest.approx(1.0 / (1e-2 + 1e-2 * 260.0))
    # An explicit atol (the gate's, scaled by the reference's rms) still takes the rtol.
    assert sweep.excess(c, ref, atol=0.5) == pytest.approx(1.0 / (0.5 + 1e-2 * 260.0))


def test_an_exactly_rounded_bf16_product_is_well_inside_the_bf16_gate(sweep):
    # What an H100 showed for 4099 x 2949 x 3001 (cuBLAS, gemm_sm90_bf16 and exact
    # rounding alike: 0.31 of the gate); here on fewer rows, on the CPU.
    sweep.ATOL, sweep.RTOL = sweep.default_tolerance("bfloat16")
    g = torch.Generator().manual_seed(1234)
    a = torch.randn(64, 2949, generator=g).to(torch.bfloat16)
    b = torch.randn(2949, 301, generator=g).to(torch.bfloat16)
    ref64 = a.double() @ b.double()
    rounded = ref64.to(torch.bfloat16)
    atol = sweep.ATOL * max(1.0, ref64.pow(2).mean().sqrt().item())
    assert sweep.excess(rounded, ref64, atol=atol) < 0.5
