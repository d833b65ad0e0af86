"""GPU lane: production shapes (docs/design.md) against CUDA eager, exact variants bit for bit,
torch.compile (inductor) and CUDA graphs, one tensor over 2^31 elements."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_rope as rope
from sgl_diffusion_core import REGISTRY, testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]
OP = "rope.apply_rope"

# (q shape, grid, axes, theta)
MODELS = {
    "wan": ((1, 75600, 40, 128), (21, 45, 80), (44, 42, 42), 10000.0),
    "hunyuan": ((1, 118800, 24, 128), (33, 45, 80), (16, 56, 56), 256.0),
}


def _table(grid, axes, theta):
    T, H, W = grid
    s = torch.arange(T * H * W, device="cuda")
    pos = torch.stack((s // (H * W), (s // W) % H, s % W), -1).double()
    axis = torch.tensor([a for a, d in enumerate(axes) for _ in range(d // 2)], device="cuda")
    f = torch.cat([1.0 / theta ** (torch.arange(0, d, 2, dtype=torch.float64, device="cuda") / d) for d in axes])
    ang = pos[:, axis] * f
    return ang.cos().float(), ang.sin().float()


def _rot(x, interleaved):
    if interleaved:
        return torch.stack((-x[..., 1::2], x[..., 0::2]), -1).flatten(-2)
    h = x.shape[-1] // 2
    return torch.cat((-x[..., h:], x[..., :h]), -1)


def _eager(x, cos, sin, interleaved):
    rep = (lambda t: t.repeat_interleave(2, -1)) if interleaved else (lambda t: torch.cat([t, t], -1))
    c, s = rep(cos)[None, :, None], rep(sin)[None, :, None]
    return x * c + _rot(x, interleaved) * s


@pytest.mark.parametrize("model", list(MODELS))
@pytest.mark.parametrize("interleaved", [True, False])
def test_apply_rope_production(model, interleaved):
    shape, grid, axes, theta = MODELS[model]
    q = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(shape, device="cuda", dtype=torch.bfloat16)
    cos, sin = _table(grid, axes, theta)
    want_q = _eager(q, cos, sin, interleaved).to(q.dtype)
    testing.assert_close(rope.apply_rope(q, cos, sin, interleaved=interleaved), want_q)
    # exact: the eager chain in fp32 (fp32 table) and in bf16 (bf16 table), bit for bit
    testing.assert_exact(rope.apply_rope(q, cos, sin, interleaved=interleaved, exact=True), want_q)
    cb, sb = cos.bfloat16(), sin.bfloat16()
    testing.assert_exact(rope.apply_rope(q, cb, sb, interleaved=interleaved, exact=True),
                         _eager(q, cb, sb, interleaved))
    qo, ko = rope.apply_rope_qk(q, k, cos, sin, interleaved=interleaved, exact=True)
    testing.assert_exact(qo, want_q)
    testing.assert_exact(ko, _eager(k, cos, sin, interleaved).to(k.dtype))
    # in kernel angles vs the fp64 table
    testing.assert_close(rope.rope_3d(q, grid, axes, theta=theta, interleaved=interleaved), want_q)


@pytest.mark.parametrize("model", list(MODELS))
def test_qk_norm_rope_production(model):
    shape, grid, axes, theta = MODELS[model]
    B, S, H, Dh = shape
    qkv = torch.randn(B, S, 3, H, Dh, device="cuda", dtype=torch.bfloat16)
    q, k = qkv[:, :, 0], qkv[:, :, 1]
    w = torch.rand(Dh, device="cuda", dtype=torch.bfloat16) + 0.5
    cos, sin = _table(grid, axes, theta)
    spec = next(s for s in REGISTRY.specs("rope.qk_norm_rope") if s.backend == "triton")
    tol = dict(zip(("atol", "rtol"), spec.contract.tolerance(torch.bfloat16)))
    qr, kr = rope.qk_norm_rope_reference(q, k, w, w, cos, sin, interleaved=True, inplace=False)
    qo, ko = rope.qk_norm_rope(q, k, w, w, cos, sin, interleaved=True, out_layout="bhsd")
    testing.assert_close(qo, qr.transpose(1, 2).contiguous(), **tol)
    testing.assert_close(ko, kr.transpose(1, 2).contiguous(), **tol)
    before_v = qkv[:, :, 2].clone()
    rope.qk_norm_rope(q, k, w, w, cos, sin, interleaved=True)  # in place into the QKV buffer
    testing.assert_close(q, qr, **tol)
    testing.assert_close(k, kr, **tol)
    testing.assert_exact(qkv[:, :, 2], before_v)


def test_more_than_2_31_elements():
    B, S, H, Dh = 1, (2**31) // (40 * 128) + 5, 40, 128
    x = torch.randn(B, S, H, Dh, device="cuda", dtype=torch.bfloat16)
    ang = torch.rand(S, Dh // 2, device="cuda") * 6
    cos, sin = ang.cos(), ang.sin()
    out = rope.apply_rope(x, cos, sin, interleaved=True, exact=True)
    tail = slice(S - 16, S)
    want = _eager(x[:, tail], cos[tail], sin[tail], True).to(x.dtype)
    testing.assert_exact(out[:, tail], want)


def test_compile_and_cuda_graph():
    import torch._dynamo

    q = torch.randn(1, 4096, 24, 128, device="cuda", dtype=torch.bfloat16)
    k = torch.randn(1, 4096, 24, 128, device="cuda", dtype=torch.bfloat16)
    w = torch.rand(128, device="cuda", dtype=torch.bfloat16) + 0.5
    ang = torch.rand(4096, 64, device="cuda") * 6
    cos, sin = ang.cos(), ang.sin()

    def attn_prep(q, k):
        q2, k2 = rope.qk_norm_rope(q, k, w, w, cos, sin, interleaved=True, out_layout="bhsd")
        return torch.nn.functional.scaled_dot_product_attention(q2, k2, k2)

    ref = attn_prep(q, k)
    torch._dynamo.reset()
    compiled = torch.compile(attn_prep, fullgraph=True)
    testing.assert_close(compiled(q, k), ref)
    # graph capture of an already planned signature
    static_q, static_k = q.clone(), k.clone()
    attn_prep(static_q, static_k)
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        attn_prep(static_q, static_k)
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    with torch.cuda.graph(g):
        out = attn_prep(static_q, static_k)
    static_q.copy_(k)
    static_k.copy_(q)
    g.replay()
    testing.assert_exact(out, attn_prep(k, q))
