"""FP8 results of ``gelu_tanh``, ``silu_and_mul`` and ``gelu_tanh_and_mul`` (``out_dtype``): the Triton
row kernel (CPU lane: the interpreter) against the eager chain then row-wise quantization, within the
op's close tolerance plus one FP8 code; the reference itself is that chain and that quantization;
selection, refusals and the compile path."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_activation as act
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, quantize_fp8_torch, testing

FP8 = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)
OPS = {"gelu_tanh": False, "silu_and_mul": True, "gelu_tanh_and_mul": True}


def _fns(name):
    return getattr(act, name), getattr(act, f"{name}_reference")


def _check(name, got, want, dtype):
    contract = next(s for s in REGISTRY.specs(f"activation.{name}") if s.backend == "triton").contract
    testing.assert_fp8_close(*got, *want, tolerance=contract.tolerance(dtype),
                             fp8_tolerance=contract.tolerance(want[0].dtype))


@pytest.mark.parametrize("name", list(OPS))
@pytest.mark.parametrize("fp8", FP8)
@pytest.mark.parametrize("D,bias", [(1, False), (40, True), (200, False), (700, True)])
def test_triton_fp8_result(name, fp8, D, bias):
    """One register tile (D up to the tile) and, with the tile narrowed to 64 columns, the chunked rows
    (amax pass, then codes) of the same kernel."""
    fn, ref = _fns(name)
    torch.manual_seed(D)
    width = 2 * D if OPS[name] else D
    x = (torch.randn(2, 3, width) * 3).to(torch.bfloat16)
    x[0, 1] = 0.0  # an all-zero row: the smallest scale, every code 0
    b = torch.randn(width).to(torch.bfloat16) if bias else None
    want = ref(x, bias=b, out_dtype=fp8)
    _check(name, fn(x, bias=b, out_dtype=fp8, backend="triton"), want, x.dtype)
    geom = testing.geometry(fn, x, bias=b, out_dtype=fp8)
    got = testing.backend_prepare(fn, "triton")(geom, x, b, None, fp8_block=64)(x, b, None)
    _check(name, got, want, x.dtype)


@pytest.mark.parametrize("name", list(OPS))
def test_held_row_with_a_tail_tile(name):
    """The CUDA rule's held row of a power-of-two tile and a tail tile (12288 = 8192 + 4096), pinned under
    the interpreter at 96 = 64 + 32 columns; a tail that does not complete the row is refused."""
    fn, ref = _fns(name)
    rule = testing.backend_module(fn, "triton")._act_fp8_triton.row_config
    assert rule(12288) == (8192, 1, 16, 4096) and rule(12288, platform="hip") == (16384, 1, 16, 0)
    assert rule(13824) == (16384, 1, 16, 0)  # the rest past 8192 needs an 8192 tile: one 16384 tile
    with pytest.raises(ValueError, match="does not complete"):
        rule(96, tail=16)
    torch.manual_seed(96)
    width = 2 * 96 if OPS[name] else 96
    x = (torch.randn(2, 3, width) * 3).to(torch.bfloat16)
    b = torch.randn(width).to(torch.bfloat16)
    for fp8 in FP8:
        geom = testing.geometry(fn, x, bias=b, out_dtype=fp8)
        got = testing.backend_prepare(fn, "triton")(geom, x, b, None, fp8_tail=32)(x, b, None)
        _check(name, got, ref(x, bias=b, out_dtype=fp8), x.dtype)


@pytest.mark.parametrize("name", list(OPS))
def test_reference_is_the_chain_then_quantized(name):
    fn, ref = _fns(name)
    x = torch.randn(4, 2 * 48 if OPS[name] else 48).to(torch.bfloat16)
    for fp8 in FP8:
        want = quantize_fp8_torch(ref(x), fp8)
        for got in (ref(x, out_dtype=fp8), fn(x, out_dtype=fp8, backend="torch"), fn(x, out_dtype=fp8)):
            assert torch.equal(got[0].view(torch.uint8), want[0].view(torch.uint8)) and torch.equal(got[1], want[1])


def test_selection_refusals_and_empty():
    x = torch.randn(2, 3, 64).to(torch.bfloat16)
    fp8 = torch.float8_e4m3fn
    with pytest.raises(UnsupportedInputError, match="out_dtype=torch.float16 is not supported"):
        act.silu_and_mul(x, out_dtype=torch.float16)
    with pytest.raises(UnsupportedInputError, match="out= is not supported with an FP8 out_dtype"):
        act.gelu_tanh(x, out=torch.empty_like(x), out_dtype=fp8)
    ex = explain(act.gelu_tanh_and_mul, x, out_dtype=fp8)
    assert ex.chosen == "torch"  # on the CPU: the reference; Triton runs there in the interpreter only
    reasons = {v.backend: " ".join(v.reasons) for v in ex.verdicts}
    assert "interpreter" in reasons["triton"] and "fp8" not in reasons["triton"]
    q, s = act.silu_and_mul(x[:, :0], out_dtype=fp8)
    assert q.shape == (2, 0, 32) and q.dtype == fp8 and s.shape == (2, 0, 1) and s.dtype == torch.float32
    # rows over more leading dims than the kernel indexes: the reference serves them, Triton refuses
    odd = torch.randn(2, 3, 4, 5, 2, 64).to(torch.bfloat16)[:, ::2, :, ::2, :, :]
    assert not act.can_use_gelu_tanh(odd, out_dtype=fp8, backend="triton")
    got = act.gelu_tanh(odd, out_dtype=fp8)
    want = quantize_fp8_torch(act.gelu_tanh_reference(odd), fp8)
    assert torch.equal(got[0].view(torch.uint8), want[0].view(torch.uint8)) and torch.equal(got[1], want[1])


def test_compile_fullgraph():
    fp8 = torch.float8_e4m3fn

    def mlp(h):
        q, s = act.gelu_tanh_and_mul(h, out_dtype=fp8)
        return q.float() * s

    x = torch.randn(3, 64).to(torch.bfloat16)
    got = torch.compile(mlp, fullgraph=True, backend="aot_eager")(x)
    q, s = act.gelu_tanh_and_mul_reference(x, out_dtype=fp8)
    testing.assert_exact(got, q.float() * s)
