"""quantize_fp8 on the CPU lane: every runnable backend against the reference (the Triton backends
under the interpreter), the conversion at every FP8 rounding boundary, saturation, zero and
non-finite rows, bad input, empty input and torch.compile."""

import pytest
import torch

from sgl_diffusion_core import UnsupportedInputError, testing
from sgl_diffusion_quant import can_use_quantize_fp8, quantize_fp8, quantize_fp8_reference

OP = "quant.quantize_fp8"
FORMATS = {torch.float8_e4m3fn: 448.0, torch.float8_e4m3fnuz: 240.0}


def _contract(backend):
    from sgl_diffusion_core import REGISTRY

    return next(s.contract for s in REGISTRY.specs(OP) if s.backend == backend)


def _formats(backend, device):
    """The FP8 formats a backend serves on this device: both on the CPU, the GPU's own for triton."""
    return [dt for dt in FORMATS if can_use_quantize_fp8(torch.ones(2, 4, device=device), dtype=dt, backend=backend)]


def _check(backend, x, granularity, dtype):
    q, s = quantize_fp8(x, granularity=granularity, dtype=dtype, backend=backend)
    qr, sr = quantize_fp8_reference(x, granularity=granularity, dtype=dtype)
    c = _contract(backend)
    assert q.dtype == dtype and q.shape == x.shape and q.is_contiguous()
    assert s.dtype == torch.float32 and s.shape == sr.shape
    testing.assert_close(s, sr, atol=c.tolerance("float32")[0], rtol=c.tolerance("float32")[1])
    atol, rtol = c.tolerance(dtype)
    testing.assert_close(q.float(), qr.float(), atol=atol, rtol=rtol)
    return q, s




def test_formats_served(backend, device):
    """Both formats on the CPU (torch; the interpreter); a GPU's Triton kernels its own format only."""
    assert len(_formats(backend, device)) == (1 if backend == "triton" and device.type != "cpu" else 2)


# D=1 and 37: one masked block; 3000: a non-power-of-two single block; 9000: the chunked path
# (rows over 8192 columns); rows scaled 1e-3 .. 1e3 so every row has its own scale.
@pytest.mark.parametrize("D", [1, 37, 3000, 9000])
@pytest.mark.parametrize("granularity", ["row", "tensor"])
def test_matches_reference(backend, device, D, granularity):
    g = torch.Generator().manual_seed(D)
    x = (torch.randn(4, D, generator=g) * torch.logspace(-3, 3, 4)[:, None]).to(torch.bfloat16).to(device)
    for dtype in _formats(backend, device):
        _check(backend, x, granularity, dtype)


@pytest.mark.parametrize("src", [torch.float16, torch.float32])
def test_source_dtypes_and_strided_rows(backend, device, src):
    for dtype in _formats(backend, device):
        _strided(backend, device, src, dtype)


def _strided(backend, device, src, dtype):
    g = torch.Generator().manual_seed(1)
    buf = testing.log_uniform(2, 3, 3 * 40, dtype=src, generator=g).to(device)
    x = buf[..., 40:80]  # the middle third of a fused projection: row stride 120, leading dims collapse
    for granularity in ("row", "tensor"):
        q, s = _check(backend, x, granularity, dtype)
        assert s.shape == ((2, 3, 1) if granularity == "row" else ())


def test_every_rounding_boundary(backend, device):
    """With the format's largest value in the tensor, the tensor-wise scale is exactly 1, so the codes
    are the conversion of the inputs themselves: every FP8 value, every midpoint between neighbours
    (ties go to the even code) and the fp32 values just beside each midpoint, both signs."""
    for dtype in _formats(backend, device):
        _boundaries(backend, device, dtype)


def _boundaries(backend, device, dtype):
    fmax = FORMATS[dtype]
    codes = torch.arange(256, dtype=torch.uint8).view(dtype).float()
    vals = codes[codes.isfinite() & (codes >= 0)].unique().sort().values.double()
    mids = (vals[:-1] + vals[1:]) / 2
    mids32 = mids.float()
    assert torch.equal(mids32.double(), mids)  # midpoints of E4M3 values are exact in fp32
    up = torch.nextafter(mids32, torch.tensor(float("inf")))
    down = torch.nextafter(mids32, torch.tensor(0.0))
    pos = torch.cat([vals.float(), mids32, up, down, torch.tensor([fmax])])
    x = torch.cat([pos, -pos]).to(device)
    q, s = quantize_fp8(x, granularity="tensor", dtype=dtype, backend=backend)
    assert s.item() == 1.0
    expected = x.cpu().to(dtype)
    testing.assert_exact(q.cpu().view(torch.uint8), expected.view(torch.uint8))


def test_saturation_and_zero_rows(backend, device):
    for dtype in _formats(backend, device):
        _saturation_and_zero_rows(backend, device, dtype)


def _saturation_and_zero_rows(backend, device, dtype):
    fmax = FORMATS[dtype]
    x = torch.zeros(3, 64)
    x[0] = torch.linspace(-7.3, 7.3, 64)
    x[2, 5] = -1e-30  # below MIN_AMAX: quantized with scale 1e-12 / fp8_max, to zero
    q, s = quantize_fp8(x.to(device), dtype=dtype, backend=backend)
    q, s = q.cpu().float(), s.cpu()
    assert q[0].abs().max().item() == fmax and q[0, 0].item() == -fmax
    assert s[1].item() == s[2].item() == pytest.approx(1e-12 / fmax, rel=1e-6)
    assert q[1:].abs().max().item() == 0.0
    assert torch.isfinite(q).all()


def test_non_finite_row(backend, device):
    for dtype in _formats(backend, device):
        _non_finite_row(backend, device, dtype)


def _non_finite_row(backend, device, dtype):
    x = torch.randn(3, 33, generator=torch.Generator().manual_seed(3))
    x[1, 7] = float("nan")
    q, s = quantize_fp8(x.to(device), dtype=dtype, backend=backend)
    qr, sr = quantize_fp8_reference(x, dtype=dtype)
    assert s[1].isnan().item() and q[1].float().isnan().all()
    testing.assert_exact(q.cpu().view(torch.uint8)[[0, 2]], qr.view(torch.uint8)[[0, 2]])


def test_empty_rows(backend, device):
    for dtype in _formats(backend, device):
        _empty_rows(backend, device, dtype)


def _empty_rows(backend, device, dtype):
    q, s = quantize_fp8(torch.empty(0, 3, 16, device=device), dtype=dtype, backend=backend)
    assert q.shape == (0, 3, 16) and q.dtype == dtype and s.shape == (0, 3, 1)


@pytest.mark.parametrize(("kwargs", "x", "why"), [
    ({}, torch.ones(4, 8, dtype=torch.int32), "expected bfloat16, float16 or float32"),
    ({"dtype": torch.float8_e5m2}, torch.ones(4, 8), "torch.float8_e4m3fn"),
    ({"dtype": torch.bfloat16}, torch.ones(4, 8), "torch.float8_e4m3fnuz"),
    ({}, torch.ones(4, 0), "empty last dim"),
    ({"granularity": "column"}, torch.ones(4, 8), "'row' or 'tensor'"),
    ({}, torch.ones(()), "0-d"),
    ({}, torch.ones(8, 4).t(), "stride"),
])
def test_bad_input(kwargs, x, why):
    with pytest.raises(UnsupportedInputError, match=why):
        quantize_fp8(x, **kwargs)
    assert not can_use_quantize_fp8(x, **kwargs)


def test_irregular_rows_go_to_torch():
    x = torch.randn(4, 6, 8)[:, ::2].transpose(0, 1)  # leading strides that do not collapse
    assert not can_use_quantize_fp8(x, backend="triton")
    q, s = quantize_fp8(x)
    qr, sr = quantize_fp8_reference(x)
    testing.assert_exact(q.view(torch.uint8), qr.view(torch.uint8))


def test_compile_fullgraph():
    x = torch.randn(5, 24)

    @torch.compile(fullgraph=True, backend="aot_eager")
    def f(x):
        q, s = quantize_fp8(x, granularity="row", backend="torch")
        return q.float() * s

    qr, sr = quantize_fp8_reference(x)
    testing.assert_exact(f(x), qr.float() * sr)
