"""fp8_linear on the CPU lane: every runnable backend against the reference (the Triton GEMM under
the interpreter, with 32 x 32 x 32 tiles so that the shapes below span several tiles and K steps),
each epilogue, row- and tensor-wise scales, the reference against bf16 nn.Linear, bad input,
empty input and torch.compile."""

import pytest
import torch
import torch.nn.functional as F

from sgl_diffusion_core import REGISTRY, UnsupportedInputError, explain, testing
from sgl_diffusion_quant import can_use_fp8_linear, fp8_linear, fp8_linear_reference, quantize_fp8

OP = "quant.fp8_linear"
FORMATS = (torch.float8_e4m3fn, torch.float8_e4m3fnuz)




def _formats(backend, device):
    """The FP8 formats a backend computes in on this device: both on the CPU, the GPU's own there."""
    x, s = torch.ones(2, 16, device=device), torch.ones((), device=device)
    return [dt for dt in FORMATS if can_use_fp8_linear(x.to(dt), s, x.to(dt), s, backend=backend)]


def _problem(B, S, K, N, dtype, device, seed=0, x_rowwise=True, w_rowwise=True, epilogue=None,
             out_dtype=torch.bfloat16):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(B, S, K, generator=g).to(torch.bfloat16)
    w = torch.randn(N, K, generator=g) / K**0.5
    xq, xs = quantize_fp8(x, dtype=dtype, granularity="row" if x_rowwise else "tensor")
    wq, ws = quantize_fp8(w, dtype=dtype, granularity="row" if w_rowwise else "tensor")
    kw = {"bias": torch.randn(N, generator=g).to(torch.bfloat16), "epilogue": epilogue, "out_dtype": out_dtype}
    if epilogue == "gated_residual":
        kw["residual"] = torch.randn(B, S, N, generator=g).to(out_dtype)
        kw["gate"] = torch.randn(B, 1, N, generator=g).to(torch.bfloat16)
    move = {k: v.to(device) if isinstance(v, torch.Tensor) else v for k, v in kw.items()}
    return (xq.to(device), xs.to(device), wq.to(device), ws.to(device)), move, x, w


def _check(backend, args, kw):
    y = fp8_linear(*args, **kw, backend=backend)
    yr = fp8_linear_reference(*[a.cpu() for a in args],
                              **{k: v.cpu() if isinstance(v, torch.Tensor) else v for k, v in kw.items()})
    spec = next(s for s in REGISTRY.specs(OP) if s.backend == backend)
    atol, rtol = spec.contract.tolerance(kw["out_dtype"])
    testing.assert_close(y.cpu(), yr, atol=atol, rtol=rtol)
    return y


# M = 2 x 37 rows (three 32-row tiles, the last partial), N = 72 (a partial column tile), K = 200
# (six full 32-deep steps and a tail of 8) and K = 64 (whole steps only: the unmasked K loop)
@pytest.mark.parametrize("epilogue", [None, "gelu_tanh", "gated_residual"])
@pytest.mark.parametrize("K", [64, 200])
def test_matches_reference(backend, device, epilogue, K):
    for dtype in _formats(backend, device):
        args, kw, _, _ = _problem(2, 37, K, 72, dtype, device, epilogue=epilogue)
        _check(backend, args, kw)


@pytest.mark.parametrize(("x_rowwise", "w_rowwise"), [(False, True), (True, False), (False, False)])
def test_tensor_scales(backend, device, x_rowwise, w_rowwise):
    for dtype in _formats(backend, device):
        args, kw, _, _ = _problem(1, 19, 48, 40, dtype, device, x_rowwise=x_rowwise, w_rowwise=w_rowwise)
        assert args[1].dim() == (3 if x_rowwise else 0)
        _check(backend, args, kw)


@pytest.mark.parametrize("out_dtype", [torch.float16, torch.float32])
def test_out_dtypes_and_channel_gate(backend, device, out_dtype):
    for dtype in _formats(backend, device):
        args, kw, _, _ = _problem(1, 5, 32, 24, dtype, device, epilogue="gated_residual", out_dtype=out_dtype)
        kw["gate"] = kw["gate"].reshape(-1)  # one gate per channel, [N]
        kw["bias"] = None
        y = _check(backend, args, kw)
        assert y.dtype == out_dtype and y.shape == (1, 5, 24)


def test_reference_tracks_bf16_linear():
    """FP8 row-wise quantization of both operands keeps a bf16 linear layer's output at cosine similarity
    above 0.999 (each operand carries ~2**-4 relative rounding, averaged over K = 512 products)."""
    args, kw, x, w = _problem(2, 64, 512, 256, torch.float8_e4m3fn, "cpu")
    y = fp8_linear_reference(*args, **kw).float()
    ref = F.linear(x.float(), w, kw["bias"].float())
    cos = F.cosine_similarity(y.flatten(), ref.flatten(), dim=0).item()
    assert cos > 0.999, cos


def test_strided_rows(backend, device):
    """x_fp8 rows that are views (row stride 2K) and a residual that is a slice of a wider buffer."""
    for dtype in _formats(backend, device):
        args, kw, _, _ = _problem(1, 7, 32, 16, dtype, device, epilogue="gated_residual")
        xq, xs, wq, ws = args
        wide = torch.zeros(1, 7, 64, dtype=torch.uint8, device=device).view(dtype)
        wide[..., :32] = xq
        res = torch.zeros(1, 7, 48, dtype=torch.bfloat16, device=device)
        res[..., 16:32] = kw["residual"]
        kw["residual"] = res[..., 16:32]
        _check(backend, (wide[..., :32], xs, wq, ws), kw)


def test_empty_rows(backend, device):
    for dtype in _formats(backend, device):
        x = torch.empty(0, 3, 16, device=device, dtype=dtype)
        w = torch.ones(8, 16, device=device).to(dtype)
        y = fp8_linear(x, torch.ones((), device=device), w, torch.ones(8, 1, device=device), backend=backend)
        assert y.shape == (0, 3, 8) and y.dtype == torch.bfloat16


def _bad_cases():
    e4, uz = torch.float8_e4m3fn, torch.float8_e4m3fnuz
    x, w = torch.ones(4, 16).to(e4), torch.ones(8, 16).to(e4)
    xs, ws = torch.ones(4, 1), torch.ones(8, 1)
    return [
        ((x, xs, torch.ones(8, 16, dtype=torch.bfloat16), ws), {}, "w_fp8 has dtype torch.bfloat16"),
        ((x, xs, w.to(torch.float32).to(uz), ws), {}, "w_fp8 has dtype torch.float8_e4m3fnuz"),
        ((torch.ones(4, 16), xs, w, ws), {}, "x_fp8's dtype is torch.float32"),
        ((x, torch.ones(4, 2), w, ws), {}, "x_scale has shape \\[4, 2\\]"),
        ((x, xs, w, torch.ones(7, 1)), {}, "w_scale has shape \\[7, 1\\]"),
        ((x, xs.double(), w, ws), {}, "x_scale is torch.float64"),
        ((x, xs, torch.ones(8, 12).to(e4), ws), {}, "expected \\[..., K\\] and \\[N, K\\]"),
        ((x, xs, w, ws), {"epilogue": "relu"}, "epilogue is 'relu'"),
        ((x, xs, w, ws), {"epilogue": "gated_residual"}, "needs residual and gate"),
        ((x, xs, w, ws), {"residual": torch.ones(4, 8)}, "belong to epilogue='gated_residual'"),
        ((x, xs, w, ws), {"epilogue": "gated_residual", "residual": torch.ones(4, 8, dtype=torch.bfloat16),
                          "gate": torch.ones(3)}, "gate has shape \\[3\\]"),
        ((x, xs, w, ws), {"out_dtype": torch.float8_e4m3fn}, "out_dtype is torch.float8_e4m3fn"),
        ((x, xs, w, ws, torch.ones(5)), {}, "bias must be a contiguous float tensor of shape \\[8\\]"),
    ]


@pytest.mark.parametrize(("args", "kwargs", "why"), _bad_cases())
def test_bad_input(args, kwargs, why):
    with pytest.raises(UnsupportedInputError, match=why):
        fp8_linear(*args, **kwargs)
    assert not can_use_fp8_linear(*args, **kwargs)


def test_selection_on_cpu():
    """On CPU tensors only the reference is auto-selected; scaled_mm names CUDA, the Triton GEMMs the
    interpreter."""
    args, kw, _, _ = _problem(1, 4, 32, 16, torch.float8_e4m3fn, "cpu")
    ex = explain(fp8_linear, *args, **kw)
    assert ex.chosen == "torch"
    reasons = {v.backend: " ".join(v.reasons) for v in ex.verdicts}
    assert "runs on cuda" in reasons["scaled_mm"]
    args, kw, _, _ = _problem(1, 4, 32, 16, torch.float8_e4m3fn, "cpu", epilogue="gated_residual")
    reasons = {v.backend: " ".join(v.reasons) for v in explain(fp8_linear, *args, **kw).verdicts}
    assert "fused epilogue" in reasons["scaled_mm"]
    assert "gated-residual" not in reasons["triton"]


def test_compile_fullgraph():
    args, kw, _, _ = _problem(1, 6, 32, 16, torch.float8_e4m3fn, "cpu", epilogue="gelu_tanh")

    @torch.compile(fullgraph=True, backend="aot_eager")
    def f(*a):
        return fp8_linear(*a, **kw, backend="torch") * 2

    testing.assert_exact(f(*args), fp8_linear_reference(*args, **kw) * 2)


def test_two_dim_input_and_flat_weight_scale(backend, device):
    """x_fp8 [M, K] with x_scale [M, 1], and w_scale given as [N] rather than [N, 1]."""
    for dtype in _formats(backend, device):
        args, kw, _, _ = _problem(1, 45, 96, 33, dtype, device, epilogue="gelu_tanh")
        xq, xs, wq, ws = args
        y = _check(backend, (xq[0], xs[0], wq, ws.reshape(-1)), kw)
        assert y.shape == (45, 33)


@pytest.mark.parametrize("bias_dtype", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("x_rowwise", [True, False])
@pytest.mark.parametrize("accumulate", ["fp32", "fast"])
def test_scaled_mm_runner(bias_dtype, x_rowwise, accumulate):
    """The scaled_mm backend's runner (scale broadcasting, a bf16 bias inside the product, another after)
    on torch's CPU implementation of torch._scaled_mm; the backend itself is offered on CUDA only."""
    args, kw, _, _ = _problem(2, 24, 64, 48, torch.float8_e4m3fn, "cpu", x_rowwise=x_rowwise)
    kw["bias"] = kw["bias"].to(bias_dtype)
    kw["accumulate"] = accumulate
    tensors = (*args[:4], kw["bias"], None, None)
    geom = testing.geometry(fp8_linear, *args, **kw)
    assert geom.fast_accum == (accumulate == "fast")
    y = testing.backend_prepare(OP, "scaled_mm")(geom, *tensors)(*tensors)
    spec = next(s for s in REGISTRY.specs(OP) if s.backend == "scaled_mm")
    atol, rtol = spec.contract.tolerance(torch.bfloat16)
    testing.assert_close(y, fp8_linear_reference(*args, **kw), atol=atol, rtol=rtol)


def test_accumulate_option(backend, device):
    """accumulate="fast" is served by every backend (the interpreter and the reference sum in fp32, so
    within the fp32 contract here; the GPU lane checks sm_90's fast sum at production shapes) and is
    part of the plan; any other value is refused by name."""
    for dtype in _formats(backend, device):
        args, kw, _, _ = _problem(1, 37, 200, 40, dtype, device, epilogue="gelu_tanh")
        _check(backend, args, {**kw, "accumulate": "fast"})
        with pytest.raises(UnsupportedInputError, match="accumulate is 'bf16'"):
            fp8_linear(*args, **kw, accumulate="bf16", backend=backend)


def test_tile_rule():
    """The launch rule's tiles: sm_90's fast sum in 128 x 256, the fp32 sum in 256 x 128 from 1000 such
    output tiles (else 128 x 128), 64-row tiles for short inputs, sm_89's tiles within its 99 KiB of
    shared memory."""
    cfg = testing.backend_module(fp8_linear, "triton").LinearConfig.from_heuristic
    fast = cfg(4608, 12288, "cuda", 90, fast=True)
    assert (fast.block_m, fast.block_n) == (128, 256)
    assert cfg(32760, 5120, "cuda", 90).block_m == 256
    assert cfg(4608, 3072, "cuda", 90).block_m == 128
    assert cfg(64, 3072, "cuda", 90, fast=True).block_m == 64
    for arch in (89, 90):
        for fast in (False, True):
            c = cfg(32760, 13824, "cuda", arch, fast)
            smem = c.num_stages * (c.block_m + c.block_n) * c.block_k
            assert smem <= (99 if arch == 89 else 227) * 1024, (arch, fast, c)


def test_size_chooser_on_described_inputs(monkeypatch):
    """The chooser behind backend=None on descriptions of CUDA sm_90 inputs (no GPU needed): scaled_mm
    from 2e11 FLOPs, the Triton GEMM below, and explain saying why."""
    import dataclasses

    from sgl_diffusion_core import eligible
    from sgl_diffusion_quant.fp8_linear import FP8_LINEAR as op

    chooser = op.chooser
    args, kw, _, _ = _problem(1, 8, 32, 16, torch.float8_e4m3fn, "cpu")
    desc = op.describe(*args, **kw)
    desc = dataclasses.replace(desc, platform="cuda", arch=90)
    assert [s.backend for s in eligible(OP, desc)][:2] == ["scaled_mm", "triton"]
    spec, settled = chooser.choose(OP, desc, (), None)
    assert spec.backend == "triton" and settled
    static = dataclasses.replace(explain(fp8_linear, *args, **kw), chosen="scaled_mm")
    ex = chooser.explain(OP, desc, None, static)
    assert ex.chosen == "triton" and "host time" in ex.notes[0]
    big = dataclasses.replace(desc.info["geom"], M=4096, N=4096, K=8192)
    desc_big = dataclasses.replace(desc, info={**desc.info, "geom": big})
    assert chooser.choose(OP, desc_big, (), None) is None  # the static priority: scaled_mm
    # without an eligible Triton GEMM a small product keeps cuBLAS (the static priority), never the reference
    import sys

    without = [s for s in eligible(OP, desc) if s.backend != "triton"]
    assert [s.backend for s in without] == ["scaled_mm", "torch"]
    monkeypatch.setattr(sys.modules[type(chooser).__module__], "eligible", lambda *a, **k: without)
    assert chooser.choose(OP, desc, (), None) is None
