"""round_to: fp32 -> bf16/fp16 with ties to even, bit-identical to torch's casts (interpreter and GPU)."""

from __future__ import annotations

import pytest
import torch

triton = pytest.importorskip("triton", reason="Triton is an optional dependency of core")
tl = triton.language

from sgl_diffusion_core import triton_interpret, triton_math  # noqa: E402


@triton.jit
def _round_kernel(X, Y, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, triton_math.round_to(x, DTYPE), mask=mask)


def _device():
    if torch.cuda.is_available():
        return torch.device("cuda")
    if not triton_interpret():
        pytest.fail("no GPU and TRITON_INTERPRET is off: the kernel could not run (use the cpu lane)")
    return torch.device("cpu")


def _hard_values() -> torch.Tensor:
    """Random normals at many scales, exact ties for bf16 and fp16, specials and subnormals."""
    g = torch.Generator().manual_seed(0)
    vals = [torch.randn(4096, generator=g) * s for s in (1e-30, 1e-6, 1.0, 1e4, 1e30)]
    ones = torch.ones(256)
    # bf16 keeps 7 fraction bits: 1 + k/256 lies half-way between neighbours for odd k
    vals.append(ones + torch.arange(1, 512, 2)[:256] / 256.0)
    # fp16 keeps 10 fraction bits: 1 + k/2048 for odd k
    vals.append(ones + torch.arange(1, 512, 2)[:256] / 2048.0)
    vals.append(torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3.4e38, -3.4e38, 1e-45, 6e-8]))
    bits = torch.tensor([0x7F800001, 0x7FC00001, 0xFF800001, 0x00000001, 0x007FFFFF], dtype=torch.int64)
    vals.append(bits.to(torch.int32).view(torch.float32))  # NaN payloads, denormals
    return torch.cat(vals)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_round_to_matches_torch_cast(dtype):
    dev = _device()
    x = _hard_values().to(dev)
    y = torch.empty_like(x)
    tl_dtype = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}[dtype]
    _round_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), DTYPE=tl_dtype, BLOCK=1024)
    want = x.to(dtype).float()
    same = (y == want) | (y.isnan() & want.isnan())
    bad = (~same).nonzero().flatten()[:5].tolist()
    assert not bad, [(x[i].item(), y[i].item(), want[i].item()) for i in bad]


@triton.jit
def _widen_kernel(X, Y, n, BLOCK: tl.constexpr, HELD: tl.constexpr = False):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    x = tl.load(X + offs, mask=mask)
    tl.store(Y + offs, triton_math.widen_held(x) if HELD else triton_math.widen(x), mask=mask)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_widen_is_exact_including_subnormals(dtype):
    dev = _device()
    x = _hard_values().to(dtype).to(dev)
    y = torch.empty(x.shape, dtype=torch.float32, device=dev)
    _widen_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024)
    want = x.float()
    same = (y == want) | (y.isnan() & want.isnan())
    bad = (~same).nonzero().flatten()[:5].tolist()
    assert not bad, [(want[i].item(), y[i].item()) for i in bad]


@pytest.mark.parametrize("dtype", [torch.float16, torch.bfloat16, torch.float32])
def test_widen_held_is_exact(dtype):
    """widen_held (integer operations on the bits): every one of the 65536 fp16 / bf16 bit patterns
    (signed zeros, subnormals, infinities; NaN stays NaN) and fp32's hard values give the value of a
    plain conversion, bit for bit."""
    dev = _device()
    if dtype == torch.float32:
        x = _hard_values().to(dev)
    else:
        x = torch.arange(-(2**15), 2**15, dtype=torch.int32, device=dev).to(torch.int16).view(dtype)
    y = torch.empty(x.shape, dtype=torch.float32, device=dev)
    _widen_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), BLOCK=1024, HELD=True)
    want = x.float()
    nan = want.isnan()
    assert torch.equal(y.isnan(), nan)
    assert torch.equal(y[~nan].view(torch.int32), want[~nan].view(torch.int32))


@triton.jit
def _narrow_kernel(X, Y, n, DTYPE: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, triton_math.narrow(tl.load(X + offs, mask=mask), DTYPE), mask=mask)


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16, torch.float32])
def test_narrow_matches_torch_cast(dtype):
    dev = _device()
    x = _hard_values().to(dev)
    y = torch.empty(x.shape, dtype=dtype, device=dev)
    tl_dtype = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}[dtype]
    _narrow_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), DTYPE=tl_dtype, BLOCK=1024)
    want = x.to(dtype)
    same = (y == want) | (y.isnan() & want.isnan())
    bad = (~same).nonzero().flatten()[:5].tolist()
    assert not bad, [(x[i].item(), y[i].item(), want[i].item()) for i in bad]


@triton.jit
def _silu_kernel(X, Y, n, FAST: tl.constexpr, BLOCK: tl.constexpr):
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, triton_math.silu(tl.load(X + offs, mask=mask), FAST), mask=mask)


@pytest.mark.filterwarnings("ignore:overflow encountered:RuntimeWarning")  # the interpreter's numpy exp / exp2
@pytest.mark.filterwarnings("ignore:invalid value encountered:RuntimeWarning")  # NaN / -inf inputs
@pytest.mark.parametrize("fast", [0, 1, 2])
def test_silu_forms(fast):
    """``silu``'s precise and fast forms against fp64 ``y * sigmoid(y)``: within 4e-6 relative
    (the fast forms' few 2**-22), or -0 where ``sigmoid(y) < 2**-126`` (y under about -87.3,
    |value| about 1e-36 or less: PTX's flushing reciprocal gives 0 there); NaN for NaN and -inf,
    inf for inf. Level 2 (PTX) runs on a CUDA GPU only (where -87.34 gives -0 for -1.02e-36, which
    is why the bound is -87.3)."""
    dev = _device()
    if fast == 2 and dev.type != "cuda":
        pytest.skip("FAST = 2 is PTX inline assembly: CUDA GPUs only")
    g = torch.Generator().manual_seed(1)
    x = torch.cat([torch.randn(4096, generator=g) * s for s in (1e-3, 1.0, 8.0, 40.0)] +
                  [torch.linspace(-120.0, 120.0, 4801),
                   torch.tensor([0.0, -0.0, 1e-30, -1e-30, 88.0, -88.0, 1e30, -1e30])]).to(dev)
    y = torch.empty_like(x)
    _silu_kernel[(triton.cdiv(x.numel(), 1024),)](x, y, x.numel(), FAST=fast, BLOCK=1024)
    x64 = x.double()
    want = x64 * torch.sigmoid(x64)
    err = (y.double() - want).abs()
    tiny = torch.sigmoid(x64) < 2.0**-126
    ok = (err <= 4e-6 * want.abs()) | (tiny & (y == 0))
    bad = (~ok).nonzero().flatten()[:5].tolist()
    assert not bad, [(x[i].item(), y[i].item(), want[i].item()) for i in bad]
    specials = torch.tensor([float("nan"), float("-inf"), float("inf")], device=dev)
    out = torch.empty_like(specials)
    _silu_kernel[(1,)](specials, out, 3, FAST=fast, BLOCK=4)
    assert out[0].isnan() and out[1].isnan() and out[2].item() == float("inf"), out.tolist()


@triton.jit
def _e4m3_kernel(X, Y, n, BLOCK: tl.constexpr):
    offs = tl.arange(0, BLOCK)
    mask = offs < n
    tl.store(Y + offs, triton_math.round_to_e4m3(tl.load(X + offs, mask=mask, other=0.0)), mask=mask)


def test_round_to_e4m3_matches_torch_cast():
    """``round_to_e4m3`` on [0, 448]: every e4m3fn value, the midpoints between neighbours (ties to even),
    points just off them and random values give torch's fp32 -> e4m3fn -> fp32 values."""
    dev = _device()
    codes = torch.arange(0, 127, dtype=torch.uint8).view(torch.float8_e4m3fn).float()  # 0 .. 448, finite
    mids = (codes[:-1] + codes[1:]) / 2
    off = torch.cat([mids * (1 + 2**-20), mids * (1 - 2**-20)])
    rand = torch.rand(2048, generator=torch.Generator().manual_seed(1)) * 448
    small = torch.rand(512, generator=torch.Generator().manual_seed(2)) * 0.02
    x = torch.cat([codes, mids, off, rand, small]).clamp(0, 448).to(dev)
    y = torch.empty_like(x)
    _e4m3_kernel[(1,)](x, y, x.numel(), BLOCK=triton.next_power_of_2(x.numel()))
    want = x.cpu().to(torch.float8_e4m3fn).float().to(dev)
    bad = (y != want).nonzero().flatten()[:5].tolist()
    assert not bad, [(x[i].item(), y[i].item(), want[i].item()) for i in bad]
