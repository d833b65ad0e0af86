"""Ulysses / USP layouts are torch.equal to their eager chains on every backend, and the
pack -> exchange -> unpack pipeline reproduces a single-process computation.

Grid: H=8 heads divides every world size tested (1, 2, 4, 8); Dh=16 (one 16-wide tile) and
Dh=40 (masked tail, not a power of two); S=6 with B=2 so rows mix batch and sequence;
views of a fused QKV projection (q, k, v share strides: one launch) and q, k, v with
different strides (one launch each).
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_layout as lay
from sgl_diffusion_core import UnsupportedInputError, testing

OP = "layout.ulysses_pack_qkv"
WORLDS = [1, 2, 4, 8]


def rnd(*shape, dtype=torch.bfloat16, device="cpu"):
    return torch.randn(*shape).to(dtype).to(device)


def qkv_views(B, S, H, Dh, dtype, device):
    proj = rnd(B, S, 3, H, Dh + 3, dtype=dtype, device=device)  # padded head dim: strided rows
    return proj[:, :, 0, :, :Dh], proj[:, :, 1, :, 1:Dh + 1], proj[:, :, 2, :, 3:Dh + 3]


@pytest.mark.parametrize("world", WORLDS)
@pytest.mark.parametrize("Dh", [16, 40])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_pack_unpack_match_eager(backend, device, world, Dh, dtype):
    torch.manual_seed(world)
    q, k, v = qkv_views(2, 6, 8, Dh, dtype, device)
    buf = lay.ulysses_pack_qkv(q, k, v, world, backend=backend)
    assert buf.is_contiguous() and buf.shape == (world, 12, 8 // world, 3 * Dh)
    testing.assert_exact(buf, lay.ulysses_pack_qkv_reference(q, k, v, world))
    outs = lay.ulysses_unpack_qkv(buf, world, 2, backend=backend)
    for got, ref in zip(outs, lay.ulysses_unpack_qkv_reference(buf, world, 2)):
        assert got.is_contiguous()
        testing.assert_exact(got, ref)


def test_pack_separate_strides(backend, device):
    """q contiguous, k a permuted [B, H, S, Dh] view, v a strided slice: three launches."""
    torch.manual_seed(0)
    q = rnd(2, 5, 4, 24, device=device)
    k = rnd(2, 4, 5, 24, device=device).transpose(1, 2)
    v = rnd(2, 5, 4, 48, device=device)[..., 8:32]
    testing.assert_exact(lay.ulysses_pack_qkv(q, k, v, 2, backend=backend), lay.ulysses_pack_qkv_reference(q, k, v, 2))


def test_world1_round_trip(backend, device):
    torch.manual_seed(1)
    q, k, v = qkv_views(3, 7, 5, 16, torch.float16, device)
    back = lay.ulysses_unpack_qkv(lay.ulysses_pack_qkv(q, k, v, 1, backend=backend), 1, 3, backend=backend)
    for got, want in zip(back, (q, k, v)):
        testing.assert_exact(got, want.contiguous())


def exchange(sends):
    """all_to_all_single with equal splits, simulated: rank r receives chunk r of every rank."""
    W = len(sends)
    return [torch.stack([sends[w][r] for w in range(W)]) for r in range(W)]


@pytest.mark.parametrize("world", WORLDS)
def test_simulated_exchange_matches_single_process(backend, device, world):
    torch.manual_seed(world + 10)
    B, Sl, H, Dh = 2, (3 if world <= 2 else 1), 8, 16  # interpreter time grows with world**2
    full = [rnd(B, world * Sl, H, Dh, device=device) for _ in range(3)]
    sends = [lay.ulysses_pack_qkv(*(t[:, r * Sl:(r + 1) * Sl] for t in full), world, backend=backend)
             for r in range(world)]
    hl = H // world
    for r, recv in enumerate(exchange(sends)):
        got = lay.ulysses_unpack_qkv(recv, world, B, backend=backend)
        for g, t in zip(got, full):
            testing.assert_exact(g, t[:, :, r * hl:(r + 1) * hl].contiguous())
    # the attention output goes back: rank r holds heads r*hl.. of the full sequence
    o = rnd(B, world * Sl, H, Dh, device=device)
    sends = [lay.ulysses_pack_out(o[:, :, r * hl:(r + 1) * hl], world, backend=backend) for r in range(world)]
    for r, recv in enumerate(exchange(sends)):
        testing.assert_exact(lay.ulysses_unpack_out(recv, world, B, backend=backend),
                             o[:, r * Sl:(r + 1) * Sl].contiguous())


@pytest.mark.parametrize("world", WORLDS)
def test_out_pair_match_eager(backend, device, world):
    torch.manual_seed(3)
    o = rnd(2, 4 * world, 3, 20, device=device).transpose(0, 1).contiguous().transpose(0, 1)  # batch-strided
    testing.assert_exact(lay.ulysses_pack_out(o, world, backend=backend), lay.ulysses_pack_out_reference(o, world))
    buf = rnd(world, 8, 3, 20, device=device)
    testing.assert_exact(lay.ulysses_unpack_out(buf, world, 2, backend=backend),
                         lay.ulysses_unpack_out_reference(buf, world, 2))


@pytest.mark.parametrize("world", WORLDS)
def test_usp_merge_split(backend, device, world):
    torch.manual_seed(4)
    x = rnd(world, 5, 2, 3, 24, device=device)
    y = lay.usp_merge_heads(x, backend=backend)
    testing.assert_exact(y, x.permute(2, 1, 0, 3, 4).contiguous())
    y4 = y.view(2, 5, world * 3, 24)
    testing.assert_exact(lay.usp_split_heads(y4, world, backend=backend), x)
    ys = rnd(2, 5, 2 * world * 3, 24, device=device)[:, :, ::2]  # strided heads
    testing.assert_exact(lay.usp_split_heads(ys, world, backend=backend), lay.usp_split_heads_reference(ys, world))
    xs = rnd(world, 5, 2, 3, 30, device=device)[..., 2:26]
    testing.assert_exact(lay.usp_merge_heads(xs, backend=backend), lay.usp_merge_heads_reference(xs))


def test_empty(backend, device):
    q = rnd(2, 0, 4, 16, device=device)
    buf = lay.ulysses_pack_qkv(q, q, q, 2, backend=backend)
    assert buf.shape == (2, 0, 2, 48)
    assert all(t.shape == (2, 0, 2, 16) for t in lay.ulysses_unpack_qkv(buf, 2, 2, backend=backend))
    assert lay.usp_merge_heads(rnd(2, 0, 1, 2, 8, device=device), backend=backend).shape == (1, 0, 2, 2, 8)


@pytest.mark.parametrize("H,world", [(6, 4), (5, 2), (24, 16)])
def test_heads_not_divisible(backend, device, H, world):
    q = rnd(1, 4, H, 8, device=device)
    with pytest.raises(UnsupportedInputError, match=f"number of heads {H} is not divisible by world_size {world}"):
        lay.ulysses_pack_qkv(q, q, q, world, backend=backend)
    with pytest.raises(UnsupportedInputError, match="not divisible"):
        lay.usp_split_heads(q, world, backend=backend)
    assert not lay.can_use_ulysses_pack_qkv(q, q, q, world, backend=backend)
    assert lay.can_use_ulysses_pack_qkv(q, q, q, 1, backend=backend)


def test_bad_inputs(backend, device):
    q = rnd(1, 4, 4, 8, device=device)
    with pytest.raises(UnsupportedInputError, match="world_size must be >= 1"):
        lay.ulysses_pack_qkv(q, q, q, 0, backend=backend)
    with pytest.raises(UnsupportedInputError, match="one shape"):
        lay.ulysses_pack_qkv(q, q, q[:, :3], 1, backend=backend)
    with pytest.raises(UnsupportedInputError, match="one dtype"):
        lay.ulysses_pack_qkv(q, q, q.float(), 1, backend=backend)
    with pytest.raises(UnsupportedInputError, match="last dim must be contiguous"):
        lay.ulysses_pack_qkv(q, q, rnd(1, 4, 8, 4, device=device).transpose(2, 3), 1, backend=backend)
    buf = rnd(2, 6, 2, 24, device=device)
    with pytest.raises(UnsupportedInputError, match="expected world_size = 4"):
        lay.ulysses_unpack_qkv(buf, 4, 1, backend=backend)
    with pytest.raises(UnsupportedInputError, match="not batch"):
        lay.ulysses_unpack_qkv(buf, 2, 4, backend=backend)
    with pytest.raises(UnsupportedInputError, match="sequence length 5 is not divisible"):
        lay.ulysses_pack_out(rnd(1, 5, 2, 8, device=device), 2, backend=backend)
    with pytest.raises(UnsupportedInputError, match="dtype torch.int32"):
        lay.usp_merge_heads(torch.zeros(1, 1, 1, 1, 4, dtype=torch.int32, device=device), backend=backend)


def test_compile_fullgraph(backend, device):
    q, k, v = qkv_views(1, 4, 4, 16, torch.bfloat16, device)

    def f(q, k, v):
        buf = lay.ulysses_pack_qkv(q, k, v, 2, backend=backend)
        return lay.ulysses_unpack_qkv(buf, 2, 1, backend=backend)

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(q, k, v)
    for g, want in zip(got, f(q, k, v)):
        testing.assert_exact(g, want)


def test_world1_results_never_alias_the_input(backend, device):
    """With W=1 and B=1 the permutations are trivial; results are still new tensors (a custom
    op's output may not alias its input), eager and under torch.compile."""
    x = rnd(1, 4, 1, 2, 16, device=device)
    y = rnd(1, 4, 2, 16, device=device)
    outs = [lay.usp_merge_heads(x, backend=backend), lay.usp_split_heads(y, 1, backend=backend),
            lay.ulysses_pack_out(y, 1, backend=backend), lay.ulysses_unpack_out(y.view(1, 4, 2, 16), 1, 1,
                                                                                  backend=backend)]
    for o in outs:
        assert o.untyped_storage().data_ptr() not in (x.untyped_storage().data_ptr(), y.untyped_storage().data_ptr())

    def f(x, y):
        return lay.usp_merge_heads(x, backend=backend), lay.ulysses_pack_out(y, 1, backend=backend)

    got = torch.compile(f, fullgraph=True, backend="aot_eager")(x, y)
    testing.assert_exact(got[0], x.permute(2, 1, 0, 3, 4).contiguous())
    testing.assert_exact(got[1], y.reshape(1, 4, 2, 16))


def test_row_blocks_with_a_partial_last_block(backend, device):
    """Small head tiles (1 head x 16) take 512 sequence rows per program: S=700 gives two
    row blocks, the second partly masked."""
    torch.manual_seed(5)
    q, k, v = (rnd(1, 700, 2, 16, device=device) for _ in range(3))
    buf = lay.ulysses_pack_qkv(q, k, v, 2, backend=backend)
    testing.assert_exact(buf, lay.ulysses_pack_qkv_reference(q, k, v, 2))
    got = lay.ulysses_unpack_qkv(buf, 2, 1, backend=backend)
    for g, want in zip(got, lay.ulysses_unpack_qkv_reference(buf, 2, 1)):
        testing.assert_exact(g, want)
    y = rnd(1, 700, 2, 16, device=device)
    testing.assert_exact(lay.usp_split_heads(y, 2, backend=backend), lay.usp_split_heads_reference(y, 2))
