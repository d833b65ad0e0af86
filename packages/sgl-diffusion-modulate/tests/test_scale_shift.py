"""scale_shift is torch.equal to the eager chain x * (scale_offset + scale) + shift, on every backend.

Grid: D=1 (degenerate), 7 and 1000 (masked tails), 96, 3072 (two column tiles at bf16, the
second masked), 5000 (three tiles). Values span many magnitudes so that products and sums
hit rounding boundaries; exact ties are covered by round_to's own test in core.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_modulate as mod
from sgl_diffusion_core import UnsupportedInputError, explain, testing

OP = "modulate.scale_shift"
DTYPES = [torch.bfloat16, torch.float16, torch.float32]


rnd = testing.log_uniform


def check(backend, x, scale, shift=None, **kw):
    out = mod.scale_shift(x, scale, shift, backend=backend, **kw)
    ref = mod.scale_shift_reference(x, scale, shift, **kw)
    assert out.is_contiguous() and out.shape == x.shape
    testing.assert_exact(out, ref)
    return out


@pytest.mark.parametrize("D", [1, 7, 96, 1000, 3072, 5000])
@pytest.mark.parametrize("dtype", DTYPES)
def test_per_sample(backend, device, D, dtype):
    torch.manual_seed(D)
    x = rnd(2, 3, D, dtype=dtype, device=device)
    m = rnd(2, 6, D, dtype=dtype, device=device, scale=0.3)  # adaLN chunks: views [B, 1, D]
    check(backend, x, m[:, 1:2], m[:, 0:1])


@pytest.mark.parametrize(
    "layout", ["channel", "sample2d", "sample3d", "sample-b1", "token-strided", "frame", "frame-b1"]
)
@pytest.mark.parametrize("dtype", DTYPES)
def test_layouts(backend, device, layout, dtype):
    torch.manual_seed(1)
    B, S, D = 2, 6, 130
    x = rnd(B, S, D, dtype=dtype, device=device)

    def r(*shape):
        return rnd(*shape, dtype=dtype, device=device, scale=0.5)

    if layout == "channel":
        sc, sh = r(D), r(D)
    elif layout == "sample2d":
        sc, sh = r(B, D), r(B, D)
    elif layout == "sample3d":
        sc, sh = r(B, 1, D), r(B, 1, D)
    elif layout == "sample-b1":
        sc, sh = r(1, 1, D), r(1, D)
    elif layout == "token-strided":
        proj = r(B, S, 6 * D)
        sc, sh = proj[..., D:2 * D], proj[..., 3 * D:4 * D]
    elif layout == "frame":
        sc, sh = r(B, 3, 1, D), r(B, 3, 1, D)
    else:
        sc, sh = r(1, 2, 1, D), r(B, 2, 1, D)
    check(backend, x, sc, sh)
    check(backend, x, sc, None, scale_offset=0.0)
    check(backend, x, sc, sh, scale_offset=0.1)  # not representable: rounded to fp32 like eager's scalar


@pytest.mark.parametrize(
    "xdt,mdt",
    [(torch.bfloat16, torch.float32), (torch.float16, torch.float32), (torch.bfloat16, torch.float16),
     (torch.float32, torch.bfloat16)],
)
def test_type_promotion(backend, device, xdt, mdt):
    """bf16 x with fp32 (Wan) modulation: eager promotes to fp32, and so must we, bit for bit."""
    torch.manual_seed(2)
    x = rnd(1, 5, 256, dtype=xdt, device=device)
    sc = rnd(1, 1, 256, dtype=mdt, device=device, scale=0.2)
    sh = rnd(1, 1, 256, dtype=mdt, device=device)
    out = check(backend, x, sc, sh)
    assert out.dtype == torch.promote_types(xdt, mdt)
    # mixed shift dtype: x*(1+scale) in promote(x, scale), then promoted again with shift
    check(backend, x, sc, sh.to(torch.float32 if mdt != torch.float32 else torch.bfloat16))


def test_x_views_2d_and_specials(backend, device):
    torch.manual_seed(3)
    D = 64
    big = rnd(3, 10, 2 * D + 5, dtype=torch.bfloat16, device=device)
    x = big[:, 1:8, 3:3 + D]
    check(backend, x, rnd(3, D, dtype=torch.bfloat16, device=device))
    x2 = rnd(9, 2 * D, dtype=torch.float16, device=device)[:, :D]
    check(backend, x2, rnd(9, D, dtype=torch.float16, device=device), rnd(D, dtype=torch.float16, device=device))
    check(backend, x2, rnd(1, D, dtype=torch.float16, device=device))
    special = torch.tensor([0.0, -0.0, float("inf"), float("-inf"), float("nan"), 3e38, -3e38, 1e-40])
    xs = special.repeat(8).reshape(1, 8, 8).to(device)
    check(backend, xs, special.flip(0).to(device), special.to(device))
    check(backend, xs.to(torch.bfloat16), special.flip(0).to(device).to(torch.bfloat16))


def test_overflow_to_inf_matches(backend, device):
    """Large bf16 products overflow to inf in eager; the kernel must round the same way."""
    x = torch.full((1, 2, 16), 3.0e38, device=device).to(torch.bfloat16)
    check(backend, x, torch.full((16,), 2.0, device=device).to(torch.bfloat16))


@pytest.mark.parametrize("shape", [(0, 64), (2, 0, 64), (0, 3, 64)])
def test_empty(backend, device, shape):
    x = torch.randn(shape, device=device).to(torch.bfloat16)
    out = mod.scale_shift(x, torch.randn(64, device=device), backend=backend)
    assert out.shape == x.shape and out.dtype == torch.float32  # bf16 * fp32 promotes


def _unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        mod.scale_shift(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not mod.can_use_scale_shift(*args, **kw)


def test_unsupported(device):
    x = torch.randn(2, 4, 32, device=device)
    sc = torch.randn(2, 1, 32, device=device)
    _unsupported("dtype torch.int64", x.long(), sc)
    _unsupported("does not broadcast", x, torch.randn(3, 1, 32, device=device))
    _unsupported("S divisible by F", x, torch.randn(2, 3, 1, 32, device=device))
    _unsupported("last dim must be contiguous", torch.randn(2, 4, 64, device=device)[..., ::2], sc)
    _unsupported("must be a torch.Tensor", x, 2.0)
    _unsupported("all tensors must be on one device", x, sc.to("meta" if device.type == "cpu" else "cpu"))
    _unsupported("unknown backend", x, sc, backend="nope")
    assert mod.can_use_scale_shift(x, sc)


def test_exact_by_default(device):
    e = explain(OP, torch.randn(1, 2, 8, device=device), torch.randn(8, device=device))
    assert e.chosen is not None
    assert all(v.contract == "exact" for v in e.verdicts)


def test_opcheck(backend, device):
    x = rnd(2, 3, 40, dtype=torch.bfloat16, device=device)
    sc = rnd(2, 1, 40, dtype=torch.bfloat16, device=device)
    torch.library.opcheck(torch.ops.sgl_diffusion.scale_shift.default, (x, sc, rnd(40, device=device), 1.0, backend))
    torch.library.opcheck(torch.ops.sgl_diffusion.scale_shift.default, (x, sc, None, 0.0, backend))


def test_compile_fullgraph(backend, device):
    import torch._dynamo

    def block(x, m):
        shift, scale = m.chunk(2, dim=1)
        return mod.scale_shift(x, scale, shift, backend=backend) * 2

    torch._dynamo.reset()
    x = rnd(2, 5, 48, dtype=torch.bfloat16, device=device)
    m = rnd(2, 2, 48, dtype=torch.bfloat16, device=device)
    assert torch._dynamo.explain(block)(x, m).graph_break_count == 0
    testing.assert_exact(torch.compile(block, fullgraph=True, backend="aot_eager")(x, m), block(x, m))
