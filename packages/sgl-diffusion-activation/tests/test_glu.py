"""The GLU forms (``glu.py``: silu / gelu_tanh / gelu ``_and_mul`` packed and ``_mul`` split) on every
runnable backend (CPU lane: Triton interpreter), checked against the eager chain within the
declared contract and against the fp64 oracle (``act_checks.py``); the two Triton kernels
(flat over contiguous rows, (row, column tile) over strided ones) give the same bits.
"""

from __future__ import annotations

import pytest
import torch
from act_checks import DTYPES, UNARY, packed, rnd, spec, split
from act_oracle import check_fp64, tail_values

import sgl_diffusion_activation as act
from sgl_diffusion_core import UnsupportedInputError, explain, testing, triton_interpret

OP = "activation.silu_and_mul"


@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("D", [1, 7, 96, 1000, 3000])
def test_packed(backend, device, name, dtype, D):
    torch.manual_seed(D)
    x = rnd(3, 2 * D, dtype=dtype, device=device)
    packed(name, backend, x)
    split(name, backend, x[:, :D], x[:, D:])  # two strided views: each with its own row stride

@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_glu_bias(backend, device, name, dtype):
    """The linear's bias fused in fp32. The eager chain rounds x + bias first; the declared tolerance
    covers that for gates |b| up to ~30 (README, contracts), so the gates here are randn-sized."""
    torch.manual_seed(5)
    D = 200
    x = (torch.randn(2, 3, 2 * D, device=device) * 3).to(dtype)
    packed(name, backend, x, bias=torch.randn(2 * D, device=device).to(dtype))
    packed(name, backend, x, bias=torch.randn(2 * D, device=device))  # fp32 bias: the result promotes

@pytest.mark.parametrize("name", UNARY)
@pytest.mark.parametrize("dtype", DTYPES)
def test_glu_tails(backend, device, name, dtype):
    """Tail and special pre-activations. Against eager, gates are randn-sized: eager's own error in
    its cancelling tails (1 + tanh, 1 + erf) is ~|a * b| * 2**-22, past the fp32 tolerance once
    |a * b| > ~50, where the kernel is the accurate one. The fp64 oracle also gets gates up to e**4."""
    torch.manual_seed(6)
    a = tail_values(dtype, device)
    a = a[a.isinf().logical_not()].reshape(1, -1)  # +-inf: see test_unary_tails_and_specials
    b = torch.randn(*a.shape, device=device).to(dtype)
    split(name, backend, a, b)
    packed(name, backend, torch.cat([a, b], dim=-1))
    if spec(f"{name}_mul", backend).contract.kind == "close":
        big = rnd(*a.shape, dtype=dtype, device=device)
        check_fp64(getattr(act, f"{name}_mul")(a, big, backend=backend), name, a, big)

def test_exact_request(device):
    """exact=True is served by the eager chain (torch); the close triton backend refuses it."""
    x = rnd(3, 64, dtype=torch.bfloat16, device=device)
    testing.assert_exact(act.silu_and_mul(x, exact=True), act.silu_and_mul_reference(x))
    e = explain("activation.silu_and_mul", x, exact=True)
    assert e.chosen == "torch"
    verdicts = {v.backend: v for v in e.verdicts}
    assert not verdicts["triton"].ok and any("exact" in r for r in verdicts["triton"].reasons)
    if device.type == "cuda" or triton_interpret():
        with pytest.raises(UnsupportedInputError, match="exact=True was requested"):
            act.silu_and_mul(x, backend="triton", exact=True)

def test_same_signature_different_alignment(backend, device):
    """Equal shapes and strides, one view 16-byte aligned and one not, share a cached plan."""
    D = 256
    big = rnd(5, 2 * D + 8, dtype=torch.bfloat16, device=device)
    aligned, shifted = big[:, :2 * D], big[:, 1:2 * D + 1]
    assert aligned.stride() == shifted.stride() and shifted.data_ptr() % 16 != 0
    for x in (aligned, shifted, aligned, shifted):
        packed("silu", backend, x)

def test_eager_call_skips_custom_op_dispatch(device, monkeypatch):
    x = torch.randn(2, 16, device=device)
    calls = []
    op = torch.ops.sgl_diffusion.silu_and_mul
    monkeypatch.setattr(torch.ops.sgl_diffusion, "silu_and_mul", lambda *a: calls.append(a) or op(*a), raising=False)
    act.silu_and_mul(x)
    assert calls == []

@pytest.mark.parametrize("D", [1, 7, 24, 96, 1000])
def test_glu_flat_and_tile_kernels_agree(backend, device, D):
    """Rows that coalesce to one dim take the flat kernel (one flat output index, programs spanning
    rows), rows over two strided dims the (row, column tile) one. The same values through both
    give the same bits, including where a flat program covers the end of one row and the start of
    the next."""
    from sgl_diffusion_core import testing as T

    torch.manual_seed(D)
    for dt, pad in ((torch.bfloat16, 0), (torch.float32, 3)):
        x = rnd(4, 9, 2 * D + pad, dtype=dt, device=device)[..., pad:pad + 2 * D]  # rows: one dim
        tiled = torch.empty(4, 10, 2 * D, dtype=dt, device=device)[:, :9]  # rows: two dims
        tiled.copy_(x)
        assert T.geometry(act.silu_and_mul, x).rows.ndim == 1
        assert T.geometry(act.silu_and_mul, tiled).rows.ndim == 2
        flat = packed("silu", backend, x)
        testing.assert_exact(packed("silu", backend, tiled), flat)
        testing.assert_exact(split("silu", backend, tiled[..., :D], tiled[..., D:]), flat)


def test_glu_flat_kernel_offsets_widen_at_2_pow_31():
    """The flat kernel indexes in int32 while every offset it forms stays below 2**31, in int64
    from there (Wan's FFN input, 75600 x 27648, is 2.09e9 elements: just under)."""

    pytest.importorskip("triton")
    K = testing.backend_module(act.silu_and_mul, "triton")  # _glu_triton

    assert not K._flat_wide(75600, 13824, (27648, 27648, 13824), 13824, 1024)
    assert K._flat_wide(80000, 13824, (27648, 27648, 13824), 13824, 1024)
    assert K._flat_wide(2**31 // 64, 64, (64, 64, 64), 0, 1024)  # the output index itself
    assert not K._flat_wide(1000, 64, (128, 128, 64), 64, 1024)
