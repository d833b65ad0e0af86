"""GPU lane: production shapes (docs/design.md) against the reference on the same GPU within the
declared contracts, the hardware fp8 conversion at every rounding boundary, more than 2**31 elements,
backend selection, CUDA graphs and inductor, and the devices / formats that must be refused."""

from __future__ import annotations

import pytest
import torch
import torch.nn.functional as F

from sgl_diffusion_core import REGISTRY, UnsupportedInputError, device_arch, explain, tensor_platform, testing
from sgl_diffusion_quant import fp8_linear, fp8_linear_reference, quantize_fp8, quantize_fp8_reference
from sgl_diffusion_quant._specs import FAST_ACCUM_EXTRA_ERROR

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

DEV = torch.device("cuda")
QUANT_SHAPES = {"flux_hidden": (4608, 3072), "flux_mlp": (4608, 12288), "wan_hidden": (75600, 5120),
                "wan_ffn": (75600, 13824)}
# (tokens, N, K, epilogue); "odd": partial row and column tiles, a K tail of 8 (and K % 16 != 0: scaled_mm refuses)
LINEAR_SHAPES = {"flux_mlp_in": (4608, 12288, 3072, "gelu_tanh"), "flux_mlp_out": (4608, 3072, 12288, "gated_residual"),
                 "wan_attn_out": (32760, 5120, 5120, None), "odd": (1000, 2240, 2440, "gated_residual")}


def _platform():
    plat = tensor_platform(DEV)
    return plat, device_arch(plat, DEV.index)


def _fp8():
    """``(format, its Triton backend)`` of this GPU, or a skip naming why it has none."""
    plat, arch = _platform()
    if plat == "hip" and arch == "gfx942":
        return torch.float8_e4m3fnuz, "triton"
    if (plat == "hip" and arch == "gfx950") or (plat == "cuda" and arch >= 89):
        return torch.float8_e4m3fn, "triton"
    pytest.skip(f"{arch} has no FP8 format the ops compute in (test_refuses_device_without_fp8 covers it)")


def _tol(op, backend, dtype):
    return next(s for s in REGISTRY.specs(op) if s.backend == backend).contract.tolerance(dtype)


def _close_on_device(out, ref, atol, rtol):
    """The tolerance checked on the GPU; the offending rows go through ``testing.assert_close`` for its report."""
    a, e = out.float(), ref.float()
    bad = ((a - e).abs() > atol + rtol * e.abs()) & ~(a.isnan() & e.isnan())
    if bool(bad.any()):
        rows = bad.reshape(-1, bad.shape[-1]).any(-1).nonzero().flatten()[:64]
        testing.assert_close(a.reshape(-1, a.shape[-1])[rows], e.reshape(-1, e.shape[-1])[rows], atol=atol, rtol=rtol)


@pytest.mark.parametrize("granularity", ["row", "tensor"])
@pytest.mark.parametrize("case", list(QUANT_SHAPES))
def test_quantize_production(case, granularity):
    fp8, backend = _fp8()
    N, D = QUANT_SHAPES[case]
    x = (torch.randn(N, D, device=DEV) * torch.logspace(-2, 2, N, device=DEV)[:, None]).to(torch.bfloat16)
    q, s = quantize_fp8(x, granularity=granularity, dtype=fp8, backend=backend)
    qr, sr = quantize_fp8_reference(x, granularity=granularity, dtype=fp8)
    _close_on_device(s.reshape(-1, 1), sr.reshape(-1, 1), *_tol("quant.quantize_fp8", backend, "float32"))
    _close_on_device(q.float(), qr.float(), *_tol("quant.quantize_fp8", backend, fp8))


def test_hardware_conversion_every_rounding_boundary():
    """Tensor-wise with the format's largest value present: scale 1, the codes are the hardware
    conversion of every FP8 value, every midpoint (ties to even) and its fp32 neighbours; equal to
    torch's conversion on the CPU."""
    fp8, backend = _fp8()
    fmax = torch.finfo(fp8).max
    vals = torch.arange(256, dtype=torch.uint8).view(fp8).float()
    vals = vals[vals.isfinite() & (vals >= 0)].unique().sort().values
    mids = ((vals[:-1].double() + vals[1:].double()) / 2).float()
    pos = torch.cat([vals, mids, torch.nextafter(mids, torch.tensor(float("inf"))),
                     torch.nextafter(mids, torch.tensor(0.0)), torch.tensor([fmax])])
    x = torch.cat([pos, -pos])
    q, s = quantize_fp8(x.to(DEV), granularity="tensor", dtype=fp8, backend=backend)
    assert s.item() == 1.0
    testing.assert_exact(q.cpu().view(torch.uint8), x.to(fp8).view(torch.uint8))


def test_quantize_beyond_int32_offsets():
    """2.2e9 elements (row offsets past 2**31): the last rows against the reference."""
    fp8, backend = _fp8()
    x = torch.empty(160_000, 13824, device=DEV, dtype=torch.bfloat16).normal_()
    q, s = quantize_fp8(x, dtype=fp8, backend=backend)
    qr, sr = quantize_fp8_reference(x[-512:], dtype=fp8)
    testing.assert_exact(s[-512:], sr)
    testing.assert_exact(q[-512:].view(torch.uint8), qr.view(torch.uint8))


def _linear_problem(M, N, K, epilogue, fp8, seed=0):
    g = torch.Generator(device=DEV).manual_seed(seed)
    x = torch.randn(1, M, K, device=DEV, dtype=torch.bfloat16, generator=g)
    w = (torch.randn(N, K, device=DEV, generator=g) / K**0.5).to(torch.bfloat16)
    bias = torch.randn(N, device=DEV, dtype=torch.bfloat16, generator=g)
    xq, xs = quantize_fp8(x, dtype=fp8)
    wq, ws = quantize_fp8(w, dtype=fp8)
    kw = {"epilogue": epilogue}
    if epilogue == "gated_residual":
        kw["residual"] = torch.randn(1, M, N, device=DEV, dtype=torch.bfloat16, generator=g)
        kw["gate"] = torch.randn(1, 1, N, device=DEV, dtype=torch.bfloat16, generator=g)
    return (xq, xs, wq, ws, bias), kw, x, w


@pytest.mark.parametrize("case", list(LINEAR_SHAPES))
def test_fp8_linear_production(case):
    fp8, backend = _fp8()
    M, N, K, epilogue = LINEAR_SHAPES[case]
    args, kw, x, w = _linear_problem(M, N, K, epilogue, fp8)
    y = fp8_linear(*args, **kw, backend=backend)
    yr = fp8_linear_reference(*args, **kw)
    _close_on_device(y, yr, *_tol("quant.fp8_linear", backend, torch.bfloat16))
    # against the bf16 layer it replaces: FP8 operands keep the output's direction
    ref = F.linear(x.float(), w.float(), args[4].float())
    if epilogue == "gelu_tanh":
        ref = F.gelu(ref, approximate="tanh")
    elif epilogue == "gated_residual":
        ref = kw["residual"].float() + kw["gate"].float() * ref
    assert F.cosine_similarity(y.float().flatten(), ref.flatten(), dim=0).item() > 0.99


@pytest.mark.parametrize("case", list(LINEAR_SHAPES))
def test_scaled_mm_production(case):
    fp8, _ = _fp8()
    M, N, K, epilogue = LINEAR_SHAPES[case]
    args, kw, _, _ = _linear_problem(M, N, K, epilogue, fp8)
    if tensor_platform(DEV) != "cuda" or _platform()[1] < 90 or K % 16 or N % 16 or epilogue is not None:
        with pytest.raises(UnsupportedInputError):
            fp8_linear(*args, **kw, backend="scaled_mm")
        return
    y = fp8_linear(*args, **kw, backend="scaled_mm")
    _close_on_device(y, fp8_linear_reference(*args, **kw), *_tol("quant.fp8_linear", "scaled_mm", torch.bfloat16))


@pytest.mark.parametrize("case", list(LINEAR_SHAPES))
def test_fast_accumulation_production(case):
    """accumulate="fast" through the default backend and the Triton GEMM: its distance to the bf16 layer
    the FP8 one replaces (mean absolute error) at most FAST_ACCUM_EXTRA_ERROR above the fp32-summed
    result's, which the FP8 rounding of the operands dominates."""
    fp8, backend = _fp8()
    M, N, K, epilogue = LINEAR_SHAPES[case]
    args, kw, x, w = _linear_problem(M, N, K, epilogue, fp8)
    ref = F.linear(x.float(), w.float(), args[4].float())
    if epilogue == "gelu_tanh":
        ref = F.gelu(ref, approximate="tanh")
    elif epilogue == "gated_residual":
        ref = kw["residual"].float() + kw["gate"].float() * ref
    base = (fp8_linear_reference(*args, **kw).float() - ref).abs().mean().item()
    for b in dict.fromkeys((None, backend)):
        err = (fp8_linear(*args, **kw, accumulate="fast", backend=b).float() - ref).abs().mean().item()
        assert err <= base * (1 + FAST_ACCUM_EXTRA_ERROR), (b, err, base)


def test_default_selection():
    """A plain product of 2e11+ FLOPs goes to cuBLAS (scaled_mm) on CUDA sm_90+, a smaller one and an
    epilogue to the Triton GEMM; explain names what the plan runs."""
    fp8, backend = _fp8()
    args, kw, _, _ = _linear_problem(4096, 4096, 8192, None, fp8)
    plain = "scaled_mm" if tensor_platform(DEV) == "cuda" and _platform()[1] >= 90 else backend
    assert explain(fp8_linear, *args, **kw).chosen == plain
    assert explain(fp8_linear, *args, **kw, accumulate="fast").chosen == plain
    args, kw, _, _ = _linear_problem(256, 512, 512, None, fp8)
    ex = explain(fp8_linear, *args, **kw)
    assert ex.chosen == backend
    if plain == "scaled_mm":
        assert "host time" in " ".join(ex.notes)
    args, kw, _, _ = _linear_problem(4096, 4096, 8192, "gelu_tanh", fp8)
    assert explain(fp8_linear, *args, **kw).chosen == backend


def test_cuda_graph_and_compile():
    fp8, backend = _fp8()
    args, kw, x, _ = _linear_problem(512, 1024, 768, "gated_residual", fp8)

    def layer(x):
        xq, xs = quantize_fp8(x, dtype=fp8)
        return fp8_linear(xq, xs, *args[2:], **kw)

    eager = layer(x)
    layer(x)  # plans built outside the capture
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        captured = layer(x)
    graph.replay()
    testing.assert_exact(captured, eager)
    torch._dynamo.reset()
    compiled = torch.compile(layer, fullgraph=True)
    testing.assert_exact(compiled(x), eager)


def test_refuses_format_the_device_does_not_compute_in():
    """The other FP8 format: quantize_fp8 goes to the torch backend (the Triton kernel converts to the
    device's own format only), fp8_linear refuses."""
    plat, arch = _platform()
    other = torch.float8_e4m3fn if (plat, arch) == ("hip", "gfx942") else torch.float8_e4m3fnuz
    xb = torch.randn(8, 64, device=DEV, dtype=torch.bfloat16)
    assert explain(quantize_fp8, xb, dtype=other).chosen == "torch"
    testing.assert_exact(quantize_fp8(xb, dtype=other)[0].view(torch.uint8),
                         quantize_fp8_reference(xb, dtype=other)[0].view(torch.uint8))
    x = torch.ones(4, 32, device=DEV).to(other)
    w = torch.ones(16, 32, device=DEV).to(other)
    with pytest.raises(UnsupportedInputError, match="does not compute in"):
        fp8_linear(x, torch.ones((), device=DEV), w, torch.ones(16, 1, device=DEV))


def test_refuses_device_without_fp8():
    plat, arch = _platform()
    if (plat == "cuda" and arch >= 89) or (plat == "hip" and arch in ("gfx942", "gfx950")):
        pytest.skip(f"{arch} computes in FP8; the refusal needs a GPU that does not (sm_80, gfx90a)")
    x = torch.ones(4, 32, device=DEV).to(torch.float8_e4m3fn)
    w = torch.ones(16, 32, device=DEV).to(torch.float8_e4m3fn)
    with pytest.raises(UnsupportedInputError, match="does not compute in"):
        fp8_linear(x, torch.ones((), device=DEV), w, torch.ones(16, 1, device=DEV))
