"""GPU lane for layer_norm, rms_norm, ln_modulate, rms_modulate, gated_residual_norm_modulate (close kernels):
production shapes (docs/design.md), every DiT width at batch 1 and 2, CUDA graphs, inductor, > 2^31
elements.

Shapes: FLUX [1, 4608, 3072], Wan-720p [1, 75600, 5120], HunyuanVideo [1, 118800, 3072], per sample;
Wan per token (a strided chunk of a [1, S, 6*D] projection) and per frame (21 frames).
The exact kernels and their gate have their own GPU file (test_row_norm_exact_gpu.py).
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]

PROD = [(1, 4608, 3072), (1, 75600, 5120), (1, 118800, 3072)]


def _tol(op, dtype):
    return next(s for s in REGISTRY.specs(op) if s.backend == "triton").contract.tolerance(dtype)


def _mods(B, S, D, layout, dtype=torch.bfloat16, F=21):
    dev = "cuda"
    if layout == "per-sample":
        mod = torch.randn(B, 6, D, device=dev, dtype=dtype) * 0.5
        return mod[:, 1:2], mod[:, 0:1], mod[:, 2:3]
    if layout == "per-token":
        proj = torch.randn(B, S, 6 * D, device=dev, dtype=dtype) * 0.5
        return proj[..., D:2 * D], proj[..., :D], proj[..., 2 * D:3 * D]
    return tuple(torch.randn(B, F, 1, D, device=dev, dtype=dtype) * 0.5 for _ in range(3))


@pytest.mark.parametrize("B,S,D", PROD)
def test_plain_norms_production(B, S, D):
    torch.manual_seed(0)
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(D, device="cuda", dtype=torch.bfloat16)
    for fn, ref, op in ((norm.layer_norm, norm.layer_norm_reference, "norm.layer_norm"),
                        (norm.rms_norm, norm.rms_norm_reference, "norm.rms_norm")):
        atol, rtol = _tol(op, x.dtype)
        testing.assert_close(fn(x, w, exact=False), ref(x, w), atol=atol, rtol=rtol)


@pytest.mark.parametrize("B,S,D,layout", [(*s, "per-sample") for s in PROD]
                         + [(1, 75600, 5120, "per-token"), (1, 75600, 5120, "per-frame")])
def test_rms_modulate_and_gated_production(B, S, D, layout):
    torch.manual_seed(0)
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    sc, sh, gate = _mods(B, S, D, layout)
    w = torch.randn(D, device="cuda", dtype=torch.bfloat16)
    atol, rtol = _tol("norm.rms_modulate", x.dtype)
    out = norm.rms_modulate(x, sc, sh, weight=w, exact=False)
    testing.assert_close(out, norm.rms_modulate_reference(x, sc, sh, weight=w), atol=atol, rtol=rtol)
    del out
    u = torch.randn_like(x)
    for nrm in ("layer", "rms"):
        out, new = norm.gated_residual_norm_modulate(x, u, gate, sc, sh, norm=nrm)
        ref_out, ref_new = norm.gated_residual_norm_modulate_reference(x, u, gate, sc, sh, norm=nrm)
        testing.assert_exact(new, ref_new)
        atol, rtol = _tol("norm.gated_residual_norm_modulate", x.dtype)
        testing.assert_close(out, ref_out, atol=atol, rtol=rtol)
        del out, new, ref_out, ref_new


# every DiT width the launch rules serve (PixArt / Sana-0.6B to 6144), at classifier-free guidance's batch 2 too
DIT_WIDTHS = [1152, 1536, 1920, 2048, 2240, 2304, 2432, 2560, 3072, 3840, 4096, 5120, 6144]


@pytest.mark.parametrize("B", [1, 2])
@pytest.mark.parametrize("D", DIT_WIDTHS)
def test_every_dit_width_close_and_gated(D, B):
    """At every DiT width, batch 1 and 2, 4096 tokens, bf16, per-sample modulation: the close kernels of the
    four norms within their tolerances of eager, and ``gated_residual_norm_modulate`` (both norms): the new
    residual ``torch.equal`` to eager, the output within its tolerance."""
    torch.manual_seed(D + B)
    x = torch.randn(B, 4096, D, device="cuda", dtype=torch.bfloat16)
    sc, sh, gate = _mods(B, 4096, D, "per-sample")
    w = 1 + 0.1 * torch.randn(D, device="cuda", dtype=torch.bfloat16)
    for name, args, kw in (("layer_norm", (x, w), {}), ("rms_norm", (x, w), {}), ("ln_modulate", (x, sc, sh), {}),
                           ("rms_modulate", (x, sc, sh), {"weight": w})):
        atol, rtol = _tol(f"norm.{name}", x.dtype)
        got = getattr(norm, name)(*args, exact=False, **kw)
        testing.assert_close(got, getattr(norm, f"{name}_reference")(*args, **kw), atol=atol, rtol=rtol)
    u = torch.randn_like(x)
    atol, rtol = _tol("norm.gated_residual_norm_modulate", x.dtype)
    for nrm in ("layer", "rms"):
        out, new = norm.gated_residual_norm_modulate(x, u, gate, sc, sh, norm=nrm)
        ref_out, ref_new = norm.gated_residual_norm_modulate_reference(x, u, gate, sc, sh, norm=nrm)
        testing.assert_exact(new, ref_new)
        testing.assert_close(out, ref_out, atol=atol, rtol=rtol)


def test_close_is_chosen_on_gpu_when_exact_false():
    from sgl_diffusion_core import explain

    x = torch.randn(1, 16, 3072, device="cuda", dtype=torch.bfloat16)
    assert explain("norm.rms_norm", x, exact=False).chosen == "triton"
    sc = torch.randn(3072, device="cuda", dtype=torch.bfloat16)
    assert explain("norm.gated_residual_norm_modulate", x, x, None, sc).chosen == "triton"


def test_more_than_2_31_elements():
    """int64 offsets: 2^31 + 5120*k elements (4.3 GB per bf16 tensor); checked on the first and last rows."""
    D = 5120
    S = (2**31) // D + 3
    x = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    sc = torch.randn(1, 1, D, device="cuda", dtype=torch.bfloat16)
    atol, rtol = _tol("norm.rms_modulate", x.dtype)
    out = norm.rms_modulate(x, sc, exact=False)
    for sl in (slice(0, 64), slice(S - 64, S)):
        testing.assert_close(out[:, sl], norm.rms_modulate_reference(x[:, sl].contiguous(), sc), atol=atol, rtol=rtol)
    del out
    u = torch.zeros_like(x[:, :1]).expand(1, S, D)  # a stride-0 update: no second 4 GB input
    out, new = norm.gated_residual_norm_modulate(x, u, None, sc, norm="rms")
    for sl in (slice(0, 64), slice(S - 64, S)):
        ro, rn = norm.gated_residual_norm_modulate_reference(x[:, sl].contiguous(), u[:, sl], None, sc, norm="rms")
        testing.assert_exact(new[:, sl], rn)
        testing.assert_close(out[:, sl], ro, atol=atol, rtol=rtol)


def test_cuda_graph_capture():
    x = torch.randn(1, 4608, 3072, device="cuda", dtype=torch.bfloat16)
    sc, sh, gate = _mods(1, 4608, 3072, "per-sample")

    def step():
        h = norm.rms_modulate(x, sc, sh, exact=False)
        return norm.gated_residual_norm_modulate(x, h, gate, sc, sh)

    step()  # warm: compile + plan
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        step()
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out, new = step()
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    ref_out, ref_new = step()
    testing.assert_exact(out, ref_out)
    testing.assert_exact(new, ref_new)


def test_inductor_fullgraph_and_cudagraphs():
    import torch._dynamo

    def block(x, r, mod, w):
        shift, scale, gate = mod.chunk(3, dim=1)
        h = norm.rms_modulate(x, scale, shift, weight=w, exact=False)
        out, new = norm.gated_residual_norm_modulate(r, h, gate, scale, shift)
        return norm.layer_norm(out, exact=False) * 2.0 + norm.rms_norm(new, w, exact=False)

    torch._dynamo.reset()
    x = torch.randn(1, 4608, 3072, device="cuda", dtype=torch.bfloat16)
    r = torch.randn_like(x)
    mod = torch.randn(1, 3, 3072, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(3072, device="cuda", dtype=torch.bfloat16)
    ref = block(x, r, mod, w)
    for mode in (None, "reduce-overhead"):
        compiled = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = compiled(x, r, mod, w)
        testing.assert_exact(out, ref)


def test_opcheck_cuda():
    x = torch.randn(2, 33, 384, device="cuda", dtype=torch.bfloat16)
    sc, sh, gate = _mods(2, 33, 384, "per-sample")
    ops = torch.ops.sgl_diffusion
    torch.library.opcheck(ops.rms_modulate.default, (x, sc, sh, None, None, 1e-6, 1.0, None, False))
    torch.library.opcheck(ops.gated_residual_norm_modulate.default,
                          (x, x, gate, sc, sh, None, None, "layer", 1e-6, 1.0, None, None))
