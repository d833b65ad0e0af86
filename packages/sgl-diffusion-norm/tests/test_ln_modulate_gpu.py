"""GPU lane: production shapes (docs/design.md), CUDA graphs, inductor, > 2^31 elements.

Shapes: FLUX [1, 4608, 3072], Wan-720p [1, 75600, 5120] and HunyuanVideo [1, 118800, 3072]
per sample; Wan per token (strided chunk of a [1, S, 6*D] projection) and per frame (21 frames).
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, explain, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

OP = "norm.ln_modulate"


def _tol(dtype):
    return next(s for s in REGISTRY.specs(OP) if s.backend == "triton").contract.tolerance(dtype)


def _inputs(B, S, D, layout, dtype=torch.bfloat16, F=21):
    dev = "cuda"
    x = torch.randn(B, S, D, device=dev, dtype=dtype)
    if layout == "per-sample":
        mod = torch.randn(B, 6, D, device=dev, dtype=dtype)
        return x, mod[:, 1:2], mod[:, 0:1]
    if layout == "per-token":
        proj = torch.randn(B, S, 6 * D, device=dev, dtype=dtype)
        return x, proj[..., D:2 * D], proj[..., :D]
    return x, torch.randn(B, F, 1, D, device=dev, dtype=dtype), torch.randn(B, F, 1, D, device=dev, dtype=dtype)


@pytest.mark.parametrize(
    "B,S,D,layout",
    [
        (1, 4608, 3072, "per-sample"),
        (1, 75600, 5120, "per-sample"),
        (1, 118800, 3072, "per-sample"),
        (1, 75600, 5120, "per-token"),
        (1, 75600, 5120, "per-frame"),
        (2, 4096 + 333, 2432, "per-sample"),
        (1, 1024, 2240, "per-token"),
        (1, 32760, 1536, "per-frame"),
    ],
)
def test_production_shapes(B, S, D, layout):
    torch.manual_seed(0)
    x, sc, sh = _inputs(B, S, D, layout)
    out = norm.ln_modulate(x, sc, sh, exact=False)
    atol, rtol = _tol(x.dtype)
    testing.assert_close(out, norm.ln_modulate_reference(x, sc, sh), atol=atol, rtol=rtol)


def test_chooses_triton_on_gpu():
    x, sc, sh = _inputs(1, 16, 3072, "per-sample")
    from sgl_diffusion_core import explain

    assert explain(OP, x, sc, sh, exact=False).chosen == "triton"
    assert explain(OP, x, sc, sh).chosen == "triton_exact"  # exact by default (_row_norm.py)
    assert explain(OP, x, sc, sh, exact=True).chosen == "triton_exact"


def test_more_than_2_31_elements():
    """int64 offsets: 2^31 + 5120*k elements (4.3 GB in bf16); checked on the last rows against the spec."""
    D = 5120
    S = (2**31) // D + 3
    x = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    sc = torch.randn(1, 1, D, device="cuda", dtype=torch.bfloat16)
    out = norm.ln_modulate(x, sc, exact=False)
    tail = slice(S - 64, S)
    atol, rtol = _tol(x.dtype)
    testing.assert_close(out[:, tail], norm.ln_modulate_reference(x[:, tail].contiguous(), sc), atol=atol, rtol=rtol)
    testing.assert_close(out[:, :64], norm.ln_modulate_reference(x[:, :64].contiguous(), sc), atol=atol, rtol=rtol)


def test_cuda_graph_capture():
    x, sc, sh = _inputs(1, 4608, 3072, "per-sample")
    norm.ln_modulate(x, sc, sh)  # warm: compile + plan
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        norm.ln_modulate(x, sc, sh)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out = norm.ln_modulate(x, sc, sh)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, norm.ln_modulate(x, sc, sh))


def test_inductor_fullgraph_and_cudagraphs():
    import torch._dynamo

    def block(x, mod):
        shift, scale = mod.chunk(2, dim=1)
        return norm.ln_modulate(x, scale, shift) * 2.0

    torch._dynamo.reset()
    x = torch.randn(1, 4608, 3072, device="cuda", dtype=torch.bfloat16)
    mod = torch.randn(1, 2, 3072, device="cuda", dtype=torch.bfloat16)
    ref = block(x, mod)
    for mode in (None, "reduce-overhead"):
        compiled = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = compiled(x, mod)
        testing.assert_exact(out, ref)


def test_opcheck_cuda():
    x, sc, sh = _inputs(2, 33, 384, "per-sample")
    torch.library.opcheck(torch.ops.sgl_diffusion.ln_modulate.default, (x, sc, sh, None, None, 1e-6, 1.0, None))


@pytest.mark.skipif(torch.cuda.device_count() < 2, reason="needs two GPUs")
def test_tensors_on_a_device_that_is_not_current():
    """Triton launches on the current device; the op must follow the tensors instead."""
    assert torch.cuda.current_device() == 0
    x, sc, sh = (t.to("cuda:1") for t in _inputs(1, 4608, 3072, "per-sample"))
    for _ in range(2):  # first call: JIT path; second: the prepared direct path
        out = norm.ln_modulate(x, sc, sh)
        atol, rtol = _tol(x.dtype)
        testing.assert_close(out, norm.ln_modulate_reference(x, sc, sh), atol=atol, rtol=rtol)
    assert out.device == x.device


def _device_fp8() -> torch.dtype:
    """The FP8 format this GPU stores (core's ``device_fp8_dtype``); skips where it stores none."""
    from sgl_diffusion_core import device_fp8_dtype

    fmt = device_fp8_dtype(torch.device("cuda"))
    if fmt is None:
        pytest.skip("this GPU stores no FP8 format the kernel writes (NVIDIA sm_89+, AMD gfx942 / gfx950)")
    return fmt


def _check_fp8(op_id, q, s, rq, rs, x_dtype):
    contract = next(sp for sp in REGISTRY.specs(op_id) if sp.backend == "triton").contract
    testing.assert_fp8_close(q, s, rq, rs, tolerance=contract.tolerance(x_dtype),
                             fp8_tolerance=contract.tolerance(rq.dtype))


@pytest.mark.parametrize("name", ["ln_modulate", "rms_modulate"])
@pytest.mark.parametrize("B,S,D,layout", [(1, 4608, 3072, "per-sample"), (1, 75600, 5120, "per-sample"),
                                          (1, 75600, 5120, "per-token"), (2, 4096, 2240, "per-sample")])
def test_fp8_result_production_shapes(name, B, S, D, layout):
    """The FP8 result of the triton backend against the chain then row-wise quantization (the contract:
    dequantized values within x's tolerance plus one FP8 ulp; scales within x's rtol)."""
    fp8 = _device_fp8()
    fn, ref = getattr(norm, name), getattr(norm, f"{name}_reference")
    x, sc, sh = _inputs(B, S, D, layout)
    q, s = fn(x, sc, sh, out_dtype=fp8)
    assert explain(fn, x, sc, sh, out_dtype=fp8).chosen == "triton"
    rq, rs = ref(x, sc, sh, out_dtype=fp8)
    _check_fp8(f"norm.{name}", q, s, rq, rs, x.dtype)


@pytest.mark.parametrize("B,S,D", [(1, 4608, 3072), (1, 75600, 5120)])
def test_fp8_result_gated_production_shapes(B, S, D):
    """gated_residual_norm_modulate's FP8 out at FLUX / Wan shapes: new residual bit-exact, out within the FP8
    contract against the chain then row-wise quantization."""
    fp8 = _device_fp8()
    r, sc, sh = _inputs(B, S, D, "per-sample")
    u, gate = torch.randn_like(r), sc * 0.5
    fn, ref = norm.gated_residual_norm_modulate, norm.gated_residual_norm_modulate_reference
    q, s, new = fn(r, u, gate, sc, sh, out_dtype=fp8)
    rq, rs, rnew = ref(r, u, gate, sc, sh, out_dtype=fp8)
    testing.assert_exact(new, rnew)
    _check_fp8("norm.gated_residual_norm_modulate", q, s, rq, rs, r.dtype)
