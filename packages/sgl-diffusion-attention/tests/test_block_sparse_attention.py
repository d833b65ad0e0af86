"""block_sparse_attention against an fp64 masked-dense oracle, on every backend this lane runs (torch;
triton under the interpreter).

Shapes are small (S <= 101, Dh 32 / 64) so that the interpreter stays fast. The interpreter's kernel
tiles are 32 x 32 cut down to the map's blocks: maps of 16 x 16, 16 x 32 and 32 x 16 blocks give one
kernel tile per block and several key tiles per listed block; a pinned 16 x 16 launch on 32 x 32
blocks covers kernel tiles smaller than the blocks on both sides. Lengths that are not multiples of
the blocks (45, 70, 101) cross masked tail tiles. The tolerances are the ones the close backends
declare (output per dtype, lse 1e-3 absolute); the torch backend (the definition) is held to the same.
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn
from sgl_diffusion_core import REGISTRY, UnsupportedInputError, testing

OP = "attention.block_sparse_attention"
CLOSE = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")
NEG_INF = float("-inf")


def oracle(q, k, v, keep, scale=None):
    """``(o, lse)`` in fp64 of bshd operands under a ``[Sq, Sk]`` keep mask; GQA by repeating k/v heads;
    a query with no key: 0 and -inf."""
    qd, kd, vd = (t.double().transpose(1, 2) for t in (q, k, v))
    rep = qd.shape[1] // kd.shape[1]
    kd, vd = kd.repeat_interleave(rep, dim=1), vd.repeat_interleave(rep, dim=1)
    s = qd @ kd.transpose(-1, -2) * (q.shape[-1] ** -0.5 if scale is None else scale)
    s = s.masked_fill(~keep.cpu(), NEG_INF)
    lse = torch.logsumexp(s, dim=-1)
    p = torch.where(lse[..., None] == NEG_INF, 0.0, torch.exp(s - lse[..., None]))
    return (p @ vd).transpose(1, 2), lse


def expand(mask_blocks, bm, bn, Sq, Sk):
    return mask_blocks.repeat_interleave(bm, 0)[:Sq].repeat_interleave(bn, 1)[:, :Sk]


def close(actual, expected, dtype):
    atol, rtol = CLOSE.tolerance(dtype)
    testing.assert_close(actual.float(), expected.float(), atol=atol, rtol=rtol)


def close_lse(actual, expected):
    assert actual.dtype == torch.float32
    testing.assert_close(actual, expected.float(), atol=CLOSE.tolerance(torch.float32)[0], rtol=0.0)


def qkv(B, Sq, Sk, Hq, Hk, Dh, dtype, seed=0):
    g = torch.Generator().manual_seed(seed)
    return (torch.randn(B, Sq, Hq, Dh, generator=g).to(dtype), torch.randn(B, Sk, Hk, Dh, generator=g).to(dtype),
            torch.randn(B, Sk, Hk, Dh, generator=g).to(dtype))


def random_blocks(nq, nk, seed, density=0.4):
    mask = torch.rand(nq, nk, generator=torch.Generator().manual_seed(seed)) < density
    mask[0] = False  # a query block with no key block
    mask[-1, -1] = True  # the tail key block
    return mask


def check(backend, device, q, k, v, mask, block, scale=None):
    bm, bn = block
    m = attn.block_map_from_mask(mask.to(device), block=block)
    o, lse = attn.block_sparse_attention(q, k, v, m, scale=scale, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v, expand(mask, bm, bn, q.shape[1], k.shape[1]), scale)
    assert o.shape == q.shape and o.dtype == q.dtype and o.is_contiguous() and lse.shape == (
        q.shape[0], q.shape[2], q.shape[1])
    close(o, ref, q.dtype)
    close_lse(lse, ref_lse)
    testing.assert_exact(attn.block_sparse_attention(q, k, v, m, scale=scale, backend=backend), o)
    return o, lse


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16])
@pytest.mark.parametrize("Dh,Sq,Sk,block", [(32, 70, 45, (16, 16)), (64, 64, 70, (16, 32)), (32, 45, 96, (32, 16))])
def test_random_maps(backend, device, dtype, Dh, Sq, Sk, block):
    q, k, v = (t.to(device) for t in qkv(2, Sq, Sk, 2, 2, Dh, dtype))
    mask = random_blocks(-(-Sq // block[0]), -(-Sk // block[1]), seed=Sq + Sk)
    o, lse = check(backend, device, q, k, v, mask, block)
    assert torch.equal(o[:, : block[0]], torch.zeros_like(o[:, : block[0]]))  # the empty query block
    assert bool((lse[:, :, : block[0]] == NEG_INF).all())


@pytest.mark.parametrize("text,first", [(5, True), (11, False)])
def test_video_block_map(backend, device, text, first):
    """A 3 x 4 x 8 latent grid in 1 x 2 x 4 tiles with text first or last: the map of video_block_map."""
    grid, tile, window, block = (3, 4, 8), (1, 2, 4), (1, 1, 3), (16, 16)
    S = 96 + text
    m = attn.video_block_map(grid, tile=tile, window=window, text_tokens=text, text_first=first, block=block,
                             device=device)
    assert 0.2 < m.density() < 0.8
    q, k, v = (t.to(device) for t in qkv(1, S, S, 2, 2, 32, torch.bfloat16, seed=text))
    o, lse = attn.block_sparse_attention(q, k, v, m, return_lse=True, backend=backend)
    ref, ref_lse = oracle(q, k, v, attn.token_mask(m, S, S))
    close(o, ref, torch.bfloat16)
    close_lse(lse, ref_lse)


@pytest.mark.parametrize("unroll", [True, False])
def test_kernel_tiles_smaller_than_blocks(device, unroll):
    """A pinned 16 x 16 launch on a map of 32 x 32 blocks: two programs per query block, two key tiles
    per listed block (unrolled, or as a loop), the partial last block (75 keys) in masked tiles."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run on this lane (CPU without TRITON_INTERPRET=1)")
    q, k, v = (t.to(device) for t in qkv(2, 70, 75, 2, 1, 32, torch.float16, seed=7))
    mask = random_blocks(3, 3, seed=3, density=0.5)
    m = attn.block_map_from_mask(mask.to(device), block=32)
    geom = testing.geometry(OP, q, k, v, m, return_lse=True)
    cfg = testing.backend_module(OP, "triton").SparseConfig(16, 16, 4, 1, unroll=unroll)
    run = testing.backend_prepare(OP, "triton")(geom, q, k, v, m.kv_blocks, m.kv_counts, config=cfg)
    o, lse = run(q, k, v, m.kv_blocks, m.kv_counts)
    ref, ref_lse = oracle(q, k, v, expand(mask, 32, 32, 70, 75))
    close(o, ref, torch.float16)
    close_lse(lse, ref_lse)


@pytest.mark.parametrize("Hk", [1, 2])
def test_gqa_and_scale(backend, device, Hk):
    q, k, v = (t.to(device) for t in qkv(2, 40, 50, 4, Hk, 32, torch.float16, seed=Hk))
    check(backend, device, q, k, v, random_blocks(3, 4, seed=Hk, density=0.6), (16, 16), scale=0.3)


def test_fused_qkv_views(backend, device):
    fused = torch.randn(2, 48, 3, 2, 64, generator=torch.Generator().manual_seed(1)).to(torch.bfloat16).to(device)
    q, k, v = fused.unbind(2)
    assert not q.is_contiguous() and q.stride(-1) == 1
    check(backend, device, q, k, v, random_blocks(3, 3, seed=5, density=0.5), (16, 16))


def test_full_map_is_dense_attention(backend, device):
    q, k, v = (t.to(device) for t in qkv(1, 40, 40, 2, 2, 32, torch.bfloat16, seed=2))
    m = attn.block_map_from_mask(torch.ones(3, 3, dtype=torch.bool, device=device), block=16)
    o, lse = attn.block_sparse_attention(q, k, v, m, return_lse=True, backend=backend)
    ref, ref_lse = attn.attention(q, k, v, return_lse=True, backend="torch")
    close(o, ref.float(), torch.bfloat16)
    close_lse(lse, ref_lse)


def test_out_of_range_map_values_poison_their_rows(device):
    """Map values a GPU call does not check (an entry past the key blocks, a count past the width) give
    NaN rows for their query block only in the triton kernel (called below the CPU value check, as a
    GPU call runs); nothing is read outside k or v."""
    if "triton" not in testing.runnable_backends(OP, device):
        pytest.skip("the triton backend does not run on this lane (CPU without TRITON_INTERPRET=1)")
    q, k, v = (t.to(device) for t in qkv(1, 64, 40, 2, 2, 32, torch.bfloat16, seed=4))
    good = attn.block_map_from_mask(torch.ones(4, 3, dtype=torch.bool, device=device), block=16)
    # rows: valid; an entry past the key blocks; a count past the width; the partial block 2 listed first
    blocks = torch.tensor([[0, 1, 2], [0, 7, 2], [0, 1, 2], [2, 0, 1]], dtype=torch.int32, device=device)
    counts = torch.tensor([3, 3, 4, 3], dtype=torch.int32, device=device)
    geom = testing.geometry(OP, q, k, v, good, return_lse=True)
    run = testing.backend_prepare(OP, "triton")(geom, q, k, v, blocks, counts)
    o, lse = run(q, k, v, blocks, counts)
    assert bool(o[:, 16:].isnan().all()) and bool(lse[:, :, 16:].isnan().all())
    ref, ref_lse = oracle(q[:, :16], k, v, torch.ones(16, 40, dtype=torch.bool))
    close(o[:, :16], ref, torch.bfloat16)
    close_lse(lse[:, :, :16], ref_lse)


@pytest.mark.parametrize("B,Sq,Sk", [(0, 32, 32), (2, 0, 32), (2, 32, 0)])
def test_empty(backend, device, B, Sq, Sk):
    q, k, v = (t.to(device) for t in qkv(B, Sq, Sk, 2, 2, 32, torch.bfloat16))
    m = attn.block_map_from_mask(torch.zeros(-(-Sq // 16), -(-Sk // 16), dtype=torch.bool, device=device), block=16)
    o, lse = attn.block_sparse_attention(q, k, v, m, return_lse=True, backend=backend)
    assert o.shape == q.shape and lse.shape == (B, 2, Sq)
    if o.numel():
        assert bool((o == 0).all()) and bool((lse == NEG_INF).all())


def _unsupported(fragment, *args, **kw):
    with pytest.raises(UnsupportedInputError) as info:
        attn.block_sparse_attention(*args, **kw)
    assert fragment in str(info.value), str(info.value)
    assert not attn.can_use_block_sparse_attention(*args, **kw)


def test_bad_inputs(device):
    q, k, v = (t.to(device) for t in qkv(2, 40, 40, 4, 2, 32, torch.bfloat16))
    m = attn.block_map_from_mask(torch.ones(3, 3, dtype=torch.bool, device=device), block=16)
    _unsupported("block_map must be a BlockMap", q, k, v, torch.ones(3, 3, dtype=torch.bool))
    _unsupported("differs from the map's blocks (16, 16)", q, k, v, m, block=(32, 16))
    _unsupported("block_m must be a power of two", q, k, v, m, block=(12, 16))
    _unsupported("kv_counts must be a contiguous 1-D tensor of 2 values", q[:, :20], k, v, m)
    _unsupported("the map has 3 key blocks; Sk = 70 keys need 5", q, *qkv(2, 70, 70, 4, 2, 32, torch.bfloat16)[1:],
                 m)
    _unsupported("k/v have 3 heads, q has 4", q, k[:, :, :1].expand(2, 40, 3, 32), v[:, :, :1].expand(2, 40, 3, 32),
                 m)
    _unsupported("scale must be a finite number", q, k, v, m, scale=float("inf"))
    _unsupported("dtype float32 is not supported", q.float(), k.float(), v.float(), m, backend="triton")
    bad = attn.BlockMap(m.kv_blocks, torch.tensor([3, 4, 0], dtype=torch.int32), (16, 16), 3)
    _unsupported("kv_counts values must lie in [0, width=3]", q, k, v, bad)
    bad = attn.BlockMap(torch.tensor([[0, 2, 1]] * 3, dtype=torch.int32), m.kv_counts, (16, 16), 3)
    _unsupported("strictly increasing", q, k, v, bad)
    bad = attn.BlockMap(torch.tensor([[0, 1, 5]] * 3, dtype=torch.int32), m.kv_counts, (16, 16), 3)
    _unsupported("must lie in [0, 3)", q, k, v, bad)
    bad = attn.BlockMap(m.kv_blocks.long(), m.kv_counts, (16, 16), 3)
    _unsupported("kv_blocks must be a contiguous int32", q, k, v, bad)
    _unsupported("block_m must be a power of two", q, k, v, attn.BlockMap(m.kv_blocks, m.kv_counts, (20, 16), 3))


def test_map_values_checked_on_every_cpu_call():
    """A CPU map of the same shapes as one already served, with values out of range: refused (the plan
    is cached per shape, the CPU values are checked per call, before any backend runs)."""
    q, k, v = qkv(1, 32, 32, 2, 2, 32, torch.bfloat16)
    m = attn.block_map_from_mask(torch.ones(2, 2, dtype=torch.bool), block=16)
    attn.block_sparse_attention(q, k, v, m, backend="torch")
    bad = attn.BlockMap(torch.tensor([[0, 1], [1, 0]], dtype=torch.int32), m.kv_counts, (16, 16), 2)
    with pytest.raises(UnsupportedInputError, match="strictly increasing"):
        attn.block_sparse_attention(q, k, v, bad, backend="torch")


@pytest.mark.parametrize("return_lse", [False, True])
def test_compile_fullgraph(backend, device, return_lse):
    import torch._dynamo

    m = attn.block_map_from_mask(random_blocks(2, 2, seed=1, density=0.7).to(device), block=16)

    def block(q, k, v):
        res = attn.block_sparse_attention(q, k, v, m, return_lse=return_lse, backend=backend)
        return (res[0] if return_lse else res) * 2

    torch._dynamo.reset()
    q, k, v = (t.to(device) for t in qkv(2, 24, 24, 2, 2, 32, torch.bfloat16))
    assert torch._dynamo.explain(block)(q, k, v).graph_break_count == 0
    testing.assert_exact(torch.compile(block, fullgraph=True, backend="aot_eager")(q, k, v), block(q, k, v))


def test_opcheck(device):
    q, k, v = (t.to(device) for t in qkv(2, 20, 24, 2, 1, 32, torch.bfloat16))
    m = attn.block_map_from_mask(random_blocks(2, 2, seed=2, density=0.7).to(device), block=16)
    args = (q, k, v, m.kv_blocks, m.kv_counts, 16, 16, 2)
    torch.library.opcheck(torch.ops.sgl_diffusion.block_sparse_attention.default, (*args, None, "torch"))
    torch.library.opcheck(torch.ops.sgl_diffusion.block_sparse_attention_lse.default, (*args, 0.5, "torch"))


def test_explain_names_each_backend(device):
    from sgl_diffusion_core import explain

    q, k, v = (t.to(device) for t in qkv(1, 32, 32, 2, 2, 32, torch.float32))
    m = attn.block_map_from_mask(torch.ones(2, 2, dtype=torch.bool, device=device), block=16)
    e = explain(attn.block_sparse_attention, q, k, v, m)
    reasons = {vd.backend: " ".join(vd.reasons) for vd in e.verdicts}
    assert set(reasons) == {"triton", "torch"}
    assert "dtype float32 is not supported" in reasons["triton"] and reasons["torch"] == ""
    assert e.chosen == "torch"
