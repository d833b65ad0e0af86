"""GPU lane: bit-exact against CUDA eager at production shapes (FLUX, Wan, HunyuanVideo), CUDA graphs,
inductor. Passes 35 / 35 on an H200."""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_modulate as mod
from sgl_diffusion_core import testing

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA or ROCm GPU"),
]
OP = "modulate.scale_shift"

SHAPES = [(1, 4608, 3072), (1, 75600, 5120), (1, 118800, 3072), (2, 4429, 2432)]


@pytest.mark.parametrize("B,S,D", SHAPES)
@pytest.mark.parametrize("mdt", [torch.bfloat16, torch.float32])
def test_scale_shift_production(B, S, D, mdt):
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    m = torch.randn(B, 6, D, device="cuda", dtype=mdt)
    for off in (1.0, 0.1):  # 0.1: CUDA eager adds the scalar in fp32 (CPU eager rounds it first)
        testing.assert_exact(mod.scale_shift(x, m[:, 1:2], m[:, 0:1], scale_offset=off),
                             x * (off + m[:, 1:2]) + m[:, 0:1])


def test_scale_shift_per_token_and_frame():
    B, S, D = 1, 75600, 5120
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    proj = torch.randn(B, 1024, 6 * D, device="cuda", dtype=torch.bfloat16)
    xs = x[:, :1024]
    testing.assert_exact(mod.scale_shift(xs, proj[..., D:2 * D], proj[..., :D]),
                         xs * (1 + proj[..., D:2 * D]) + proj[..., :D])
    sc = torch.randn(B, 21, 1, D, device="cuda", dtype=torch.bfloat16)
    ref = (x.view(B, 21, S // 21, D) * (1 + sc) + sc).view(B, S, D)
    testing.assert_exact(mod.scale_shift(x, sc, sc), ref)


@pytest.mark.parametrize("B,S,D", SHAPES)
@pytest.mark.parametrize("gdt", [torch.bfloat16, torch.float32])
def test_gated_residual_production(B, S, D, gdt):
    r = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    u = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(B, 1, D, device="cuda", dtype=gdt)
    testing.assert_exact(mod.gated_residual(r, u, g), r + g * u)
    ref = r.clone().add_(g * u)
    mod.gated_residual_(r, u, g)
    testing.assert_exact(r, ref)


def test_more_than_2_31_elements():
    D = 5120
    S = (2**31) // D + 3
    r = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(1, 1, D, device="cuda", dtype=torch.bfloat16)
    out = mod.gated_residual(r, r, g)
    tail = slice(S - 64, S)
    testing.assert_exact(out[:, tail], r[:, tail] + g * r[:, tail])


def test_cuda_graph_and_inductor():
    import torch._dynamo

    x = torch.randn(1, 4608, 3072, device="cuda", dtype=torch.bfloat16)
    m = torch.randn(1, 3, 3072, device="cuda", dtype=torch.bfloat16)

    def block(x, m):
        shift, scale, gate = m.chunk(3, dim=1)
        h = mod.scale_shift(x, scale, shift)
        return mod.gated_residual(x, h, gate)

    ref = block(x, m)
    torch._dynamo.reset()
    for mode in (None, "reduce-overhead"):
        f = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = f(x, m)
        testing.assert_exact(out, ref)
    block(x, m)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        block(x, m)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out = block(x, m)
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, block(x, m))


# ---- indexed ops (a table row per token): Qwen-Image-Edit [1, 13824, 3072] K=2, Wan-size rows ----

INDEXED_SHAPES = [(1, 13824, 3072, 2), (1, 75600, 5120, 2), (2, 4429, 2432, 3)]


def _edit_index(B, S, K, dtype=torch.int64):
    """Token s picks row min(K-1, s * K // S): contiguous blocks (target tokens, then references)."""
    return (torch.arange(S, device="cuda") * K // S).clamp(max=K - 1).to(dtype).expand(B, S).contiguous()


@pytest.mark.parametrize("B,S,D,K", INDEXED_SHAPES)
@pytest.mark.parametrize("tdt", [torch.bfloat16, torch.float32])
@pytest.mark.parametrize("idt", [torch.int32, torch.int64])
def test_indexed_production(B, S, D, K, tdt, idt):
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    u = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    m = torch.randn(B, K, 3 * D, device="cuda", dtype=tdt)
    shift, scale, gate = m[..., :D], m[..., D:2 * D], m[..., 2 * D:]  # strided chunk views
    idx = _edit_index(B, S, K, idt)
    ar = torch.arange(B, device="cuda")[:, None]
    for backend in ("triton", "torch"):
        for off in (1.0, 0.1):  # 0.1: CUDA eager adds the scalar in fp32
            testing.assert_exact(mod.indexed_scale_shift(x, scale, shift, idx, scale_offset=off, backend=backend),
                                 x * (off + scale[ar, idx]) + shift[ar, idx])
        testing.assert_exact(mod.indexed_scale_shift(x, scale[0], None, idx[0], backend=backend),
                             x * (1 + scale[0][idx[0]]))
        testing.assert_exact(mod.indexed_gated_residual(x, u, gate, idx, backend=backend), x + gate[ar, idx] * u)
        r = x.clone()
        mod.indexed_gated_residual_(r, u, gate, idx, backend=backend)
        testing.assert_exact(r, x.clone().add_(gate[ar, idx] * u))


def test_indexed_bad_index_on_gpu(backend):  # backend: every runnable one (conftest)
    """Checked: IndexError before any launch. Unchecked: NaN rows, valid rows exact, and no device assert
    (a later sync succeeds)."""
    B, S, D, K = 1, 13824, 3072, 2
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    tab = torch.randn(B, K, D, device="cuda", dtype=torch.bfloat16)
    good = _edit_index(B, S, K)
    bad = good.clone()
    bad[0, 7], bad[0, S - 1] = -1, K + 1000
    rows = torch.zeros(B, S, dtype=torch.bool, device="cuda")
    rows[0, 7] = rows[0, S - 1] = True
    with pytest.raises(IndexError, match=r"\[-1, 1002\]"):
        mod.indexed_scale_shift(x, tab, tab, bad, backend=backend)
    out = mod.indexed_scale_shift(x, tab, tab, bad, check_index=False, backend=backend)
    torch.cuda.synchronize()
    assert out[rows].isnan().all()
    testing.assert_exact(out[~rows], mod.indexed_scale_shift(x, tab, tab, good)[~rows])


def test_indexed_more_than_2_31_elements():
    D, K = 5120, 2
    S = (2**31) // D + 3
    r = torch.randn(1, S, D, device="cuda", dtype=torch.bfloat16)
    g = torch.randn(1, K, D, device="cuda", dtype=torch.bfloat16)
    idx = _edit_index(1, S, K, torch.int32)
    out = mod.indexed_gated_residual(r, r, g, idx)
    tail = slice(S - 64, S)
    testing.assert_exact(out[:, tail], r[:, tail] + g[0, 1] * r[:, tail])


def test_indexed_cuda_graph_and_inductor():
    """Inside torch.compile (inductor, reduce-overhead) and CUDA graph capture there is no host check:
    the graphs capture, valid indices are exact, and a bad index replayed later gives NaN rows."""
    import torch._dynamo

    B, S, D, K = 1, 13824, 3072, 2
    x = torch.randn(B, S, D, device="cuda", dtype=torch.bfloat16)
    m = torch.randn(B, K, 3 * D, device="cuda", dtype=torch.bfloat16)
    idx = _edit_index(B, S, K)

    def block(x, m, idx):
        shift, scale, gate = m.chunk(3, dim=-1)
        h = mod.indexed_scale_shift(x, scale, shift, idx)
        return mod.indexed_gated_residual(x, h, gate, idx)

    ref = block(x, m, idx)
    torch._dynamo.reset()
    for mode in (None, "reduce-overhead"):
        f = torch.compile(block, fullgraph=True, mode=mode)
        for _ in range(3):
            out = f(x, m, idx)
        testing.assert_exact(out, ref)
    g = torch.cuda.CUDAGraph()
    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        block(x, m, idx)
    torch.cuda.current_stream().wait_stream(s)
    with torch.cuda.graph(g):
        out = block(x, m, idx)  # check_index=True by default: skipped while capturing
    x.copy_(torch.randn_like(x))
    g.replay()
    torch.cuda.synchronize()
    testing.assert_exact(out, block(x, m, idx))
    idx[0, 5] = K  # out of range, replayed without a check
    g.replay()
    torch.cuda.synchronize()
    assert out[0, 5].isnan().all()
    idx[0, 5] = 0
    testing.assert_exact(out[:, 6:], block(x, m, idx)[:, 6:])
