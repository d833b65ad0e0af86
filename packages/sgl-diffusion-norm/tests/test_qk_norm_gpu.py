"""GPU lane of qk_norm: production shapes (docs/design.md), CUDA graphs, inductor, > 2^31 elements.

Shapes: Wan-720p q/k [1, 75600, 40, 128], HunyuanVideo [1, 118800, 24, 128] (separate tensors and
views of a fused QKV projection), FLUX [1, 4608, 24, 128], SD3 [1, 4429, 38, 64], LTX-2 GQA-like
k with fewer heads, odd head sizes.
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

OP = "norm.qk_norm"


def _tol(dtype):
    return next(s for s in REGISTRY.specs(OP) if s.backend == "triton").contract.tolerance(dtype)


def _check(outs, refs):
    for a, b in zip(outs, refs):
        atol, rtol = _tol(b.dtype)
        testing.assert_close(a, b, atol=atol, rtol=rtol)


@pytest.mark.parametrize(
    "B,S,H,Hk,D,layout",
    [
        (1, 75600, 40, 40, 128, "separate"),
        (1, 118800, 24, 24, 128, "separate"),
        (1, 118800, 24, 24, 128, "qkv"),
        (1, 4608, 24, 24, 128, "qkv"),
        (2, 4429, 38, 38, 64, "separate"),
        (1, 32640, 32, 8, 128, "separate"),
        (1, 4096, 12, 12, 72, "qkv"),
        (1, 4096, 16, 16, 80, "separate"),
        (1, 4096, 10, 10, 100, "separate"),
        (1, 4096, 8, 8, 256, "qkv"),
    ],
)
@pytest.mark.parametrize("kind", ["rms", "layer"])
def test_production_shapes(B, S, H, Hk, D, layout, kind):
    torch.manual_seed(0)
    dt = torch.bfloat16
    if layout == "qkv":
        v = torch.randn(B, S, 3 * H * D, device="cuda", dtype=dt).view(B, S, 3, H, D)
        q, k = v[:, :, 0], v[:, :, 1]
    else:
        q = torch.randn(B, S, H, D, device="cuda", dtype=dt)
        k = torch.randn(B, S, Hk, D, device="cuda", dtype=dt)
    w = torch.rand(D, device="cuda", dtype=dt) + 0.5
    _check(norm.qk_norm(q, k, w, w, norm=kind), norm.qk_norm_reference(q, k, w, w, norm=kind))
    expect = norm.qk_norm(q, k, w, w, norm=kind)
    qo, ko = norm.qk_norm(q, k, w, w, norm=kind, inplace=True)
    testing.assert_exact(qo, expect[0])
    testing.assert_exact(ko, expect[1])


def test_chooses_triton_on_gpu():
    q = torch.randn(1, 16, 24, 128, device="cuda", dtype=torch.bfloat16)
    assert explain(OP, q, q).chosen == "triton"
    assert explain(OP, q, q, exact=True).chosen == "torch"


def test_more_than_2_31_elements():
    """int64 offsets: q has 2^31 + 3*40*128 elements (4.3 GB bf16); k is small (shapes may differ)."""
    H, D = 40, 128
    S = (2**31) // (H * D) + 3
    q = torch.randn(1, S, H, D, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 16, H, D, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(D, device="cuda", dtype=torch.bfloat16) + 0.5
    qo, ko = norm.qk_norm(q, k, w, w)
    for sl in (slice(S - 64, S), slice(0, 64)):
        ref = norm.qk_norm_reference(q[:, sl].contiguous(), k, w, w)
        _check((qo[:, sl], ko), ref)
    del qo, ko
    norm.qk_norm(q, k, w, w, inplace=True)  # in place: the output offsets are int64 too
    tail = q[:, S - 8:].clone()
    assert torch.isfinite(tail.float()).all()


def test_cuda_graph_capture():
    q = torch.randn(1, 4608, 24, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 4608, 24, 128, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(128, device="cuda", dtype=torch.bfloat16)
    norm.qk_norm(q, k, w, w)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        norm.qk_norm(q, k, w, w)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = norm.qk_norm(q, k, w, w)
    q.copy_(torch.randn_like(q))
    g.replay()
    torch.cuda.synchronize()
    expect = norm.qk_norm(q, k, w, w)
    testing.assert_exact(out[0], expect[0])
    testing.assert_exact(out[1], expect[1])


@pytest.mark.parametrize("inplace", [False, True])
def test_inductor_fullgraph_and_cudagraphs(inplace):
    import torch._dynamo

    B, S, H, D = 1, 4608, 24, 128

    def block(qkv, w):
        q, k, v = qkv.view(B, S, 3, H, D).unbind(2)
        q, k = norm.qk_norm(q, k, w, w, inplace=inplace)
        return q * 2.0 + k

    torch._dynamo.reset()
    qkv = torch.randn(B, S, 3 * H * D, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(D, device="cuda", dtype=torch.bfloat16)
    ref = block(qkv.clone(), w)
    for mode in (None, "reduce-overhead"):
        compiled = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = compiled(qkv.clone(), w)
        testing.assert_exact(out, ref)


def test_opcheck_cuda():
    q = torch.randn(2, 33, 8, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(2, 33, 2, 128, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(128, device="cuda", dtype=torch.bfloat16)
    torch.library.opcheck(torch.ops.sgl_diffusion.qk_norm.default, (q, k, w, w, "rms", 1e-6, None, None))
    torch.library.opcheck(torch.ops.sgl_diffusion.qk_norm_.default, (q.clone(), k.clone(), w, None, "layer", 1e-6,
                                                                      None, None))
