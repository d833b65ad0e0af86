"""core's FP8 definition (quantize_fp8_torch) and the FP8 result check (testing.assert_fp8_close)."""

from __future__ import annotations

import pytest
import torch

from sgl_diffusion_core import quantize_fp8_torch, testing, vendor


@pytest.mark.parametrize("dtype", [torch.float8_e4m3fn, torch.float8_e4m3fnuz])
def test_quantize_rows_and_tensor(dtype):
    x = torch.tensor([[1.0, -2.0, 0.5], [0.0, 0.0, 0.0], [1000.0, 1.0, -3.0]])
    fmax = vendor.FP8_MAX[str(dtype).removeprefix("torch.")]
    q, s = quantize_fp8_torch(x, dtype)
    assert q.dtype == dtype and s.shape == (3, 1) and s.dtype == torch.float32
    assert s[0, 0] == torch.tensor(2.0) / fmax and s[1, 0] == torch.tensor(vendor.FP8_MIN_AMAX) / fmax
    assert q[0, 1].float() == -fmax and bool((q[1].float() == 0).all())  # amax -> +-fp8_max; zero row -> 0
    qt, st = quantize_fp8_torch(x, dtype, "tensor")
    assert st.shape == () and st == torch.tensor(1000.0) / fmax and qt[2, 0].float() == fmax


def test_assert_fp8_close_passes_one_ulp_and_fails_beyond():
    fp8 = torch.float8_e4m3fn
    q, s = quantize_fp8_torch(torch.linspace(-3, 3, 64).reshape(2, 32), fp8)
    tol, ftol = (1e-2, 2.0**-6), (2.0**-9, 2.0**-3)
    testing.assert_fp8_close(q, s, q, s, tolerance=tol, fp8_tolerance=ftol)
    bits = q.view(torch.uint8).clone()
    bits[0, 20] += 1  # one FP8 ulp (the code's magnitude one step up)
    testing.assert_fp8_close(bits.view(fp8), s, q, s, tolerance=tol, fp8_tolerance=ftol)
    bits[0, 20] += 2  # three ulps
    with pytest.raises(AssertionError, match="FP8 result not close"):
        testing.assert_fp8_close(bits.view(fp8), s, q, s, tolerance=tol, fp8_tolerance=ftol)
    with pytest.raises(AssertionError, match="not close"):  # a scale off by more than rtol
        testing.assert_fp8_close(q, s * 1.05, q, s, tolerance=tol, fp8_tolerance=ftol)
