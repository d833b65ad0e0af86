"""video_block_map, block_map_from_mask and token_mask against masks built here from their definitions.

The video maps are checked with ``torch.equal`` against the block reduction of a token mask built
by brute force from token coordinates (small grids, text first and last, tiles that do not divide
the grid, odd and even windows, unequal query and key blocks), and at Wan 720p's grid
(21, 45, 80) against a per-block reduction (a token mask of 75600^2 does not fit).
"""

from __future__ import annotations

import pytest
import torch

import sgl_diffusion_attention as attn


def _sees(a: int, c: int, n: int, w: int) -> bool:
    """Along one axis of n tiles: query tile a's window of min(w, n) tiles, centred, kept inside the grid."""
    span = min(w, n)
    first = min(max(a - (w - 1) // 2, 0), n - span)
    return first <= c < first + span


def _tiles(grid, tile):
    T, H, W = grid
    coords = [(t // tile[0], h // tile[1], w // tile[2]) for t in range(T) for h in range(H) for w in range(W)]
    return coords, [-(-g // s) for g, s in zip(grid, tile)]


def brute_token_mask(grid, tile, window, text, text_first):
    coords, n = _tiles(grid, tile)
    nv = len(coords)
    off = text if text_first else 0
    S = nv + text
    seen = {}
    m = torch.zeros(S, S, dtype=torch.bool)
    for i, a in enumerate(coords):
        for j, c in enumerate(coords):
            key = (a, c)
            if key not in seen:
                seen[key] = all(_sees(a[x], c[x], n[x], window[x]) for x in range(3))
            m[off + i, off + j] = seen[key]
    text_rows = range(0, text) if text_first else range(nv, S)
    for t in text_rows:
        m[t, :] = True
        m[:, t] = True
    return m


def reduce_blocks(m: torch.Tensor, bm: int, bn: int) -> torch.Tensor:
    Sq, Sk = m.shape
    nq, nk = -(-Sq // bm), -(-Sk // bn)
    padded = torch.zeros(nq * bm, nk * bn, dtype=torch.bool)
    padded[:Sq, :Sk] = m
    return padded.view(nq, bm, nk, bn).any(3).any(1)


CASES = [  # grid, tile, window, text tokens, text first, (block_m, block_n)
    ((3, 4, 8), (1, 2, 4), (1, 1, 1), 0, False, (16, 16)),
    ((3, 4, 8), (1, 2, 4), (1, 1, 3), 5, True, (16, 16)),
    ((5, 4, 8), (1, 2, 4), (3, 1, 1), 5, False, (16, 32)),  # a key block per frame
    ((5, 7, 9), (2, 3, 4), (2, 1, 3), 0, False, (16, 16)),  # partial tiles on every axis, an even window
    ((5, 7, 9), (2, 3, 4), (1, 3, 1), 19, True, (32, 16)),  # text spanning two blocks
    ((2, 6, 20), (1, 4, 4), (1, 1, 2), 3, False, (16, 16)),  # a block holds several tiles of one row
]


@pytest.mark.parametrize("grid,tile,window,text,first,block", CASES)
def test_video_block_map_equals_brute_force(grid, tile, window, text, first, block):
    bm, bn = block
    m = attn.video_block_map(grid, tile=tile, window=window, text_tokens=text, text_first=first, block=block)
    tokens = brute_token_mask(grid, tile, window, text, first)
    expected = reduce_blocks(tokens, bm, bn)
    assert 0 < int(expected.sum()) < expected.numel()  # neither empty nor dense: the case tells something
    assert torch.equal(m.block_mask(), expected)
    S = tokens.shape[0]
    tm = attn.token_mask(m, S, S)
    assert torch.equal(tm, expected.repeat_interleave(bm, 0)[:S].repeat_interleave(bn, 1)[:, :S])
    assert bool((tm | ~tokens).all())  # the block mask contains the token rule's mask
    assert m.kv_blocks.dtype == torch.int32 and m.kv_counts.dtype == torch.int32 and m.kv_blocks.is_contiguous()


@pytest.mark.parametrize("grid,tile,window,text,first,block", CASES)
def test_tile_order_map_equals_brute_force_in_tile_order(grid, tile, window, text, first, block):
    """tile_order=True: the map of the sequence permuted by video_tile_order is the block reduction of the
    token rule's mask, permuted the same way on both axes."""
    bm, bn = block
    order = attn.video_tile_order(grid, tile=tile, text_tokens=text, text_first=first)
    S = order.numel()
    assert torch.equal(torch.sort(order).values, torch.arange(S))  # a permutation
    tokens = brute_token_mask(grid, tile, window, text, first)[order][:, order]
    m = attn.video_block_map(grid, tile=tile, window=window, text_tokens=text, text_first=first, block=block,
                             tile_order=True)
    assert torch.equal(m.block_mask(), reduce_blocks(tokens, bm, bn))


def test_tile_order_lists_tiles_in_order():
    """A 2 x 3 x 5 grid in 1 x 2 x 2 tiles (partial along H and W), text first: tile by tile, each tile's
    tokens row-major; the inverse puts the sequence back."""
    grid, tile = (2, 3, 5), (1, 2, 2)
    order = attn.video_tile_order(grid, tile=tile, text_tokens=2, text_first=True)
    assert order[:2].tolist() == [0, 1]
    T, H, W = grid
    want = []
    for t in range(T):
        for a in range(0, H, 2):
            for b in range(0, W, 2):
                want += [2 + (t * H + h) * W + w for h in range(a, min(a + 2, H)) for w in range(b, min(b + 2, W))]
    assert order[2:].tolist() == want
    x = torch.randn(1, order.numel(), 3)
    assert torch.equal(x[:, order][:, order.argsort()], x)
    assert attn.video_tile_order(grid, tile=tile, text_tokens=2)[-2:].tolist() == [30, 31]  # text last


def test_tile_order_makes_the_map_as_sparse_as_the_window():
    """Wan 720p's latent (21, 45, 80) in 4 x 4 x 4 tiles with blocks of 64 tokens: in tile order each full
    tile is a block, so the map's density is close to the windowed fraction of tiles; in the model's order
    a block is a strip of one row and touches many more tiles."""
    grid, tile, window = (21, 45, 80), (4, 4, 4), (3, 3, 5)
    tiled = attn.video_block_map(grid, tile=tile, window=window, block=64, tile_order=True)
    model = attn.video_block_map(grid, tile=tile, window=window, block=64)
    n = [-(-g // s) for g, s in zip(grid, tile)]
    fraction = 1.0
    for g, w in zip(n, window):
        fraction *= min(w, g) / g
    assert tiled.density() < 1.3 * fraction < model.density()


def test_video_block_map_wan_720p_grid():
    """Wan 720p's (21, 45, 80) with 4^3 tiles (partial along T and H) and text last: query block i lists
    key block j iff a tile of i's tokens sees a tile of j's tokens (tile pairs from the per-axis rule
    over all 1440^2 pairs), or either block holds text."""
    grid, tile, window, text, blk = (21, 45, 80), (4, 4, 4), (3, 3, 5), 512, 128
    m = attn.video_block_map(grid, tile=tile, window=window, text_tokens=text, block=blk)
    n = [-(-g // s) for g, s in zip(grid, tile)]
    idx = [torch.arange(g) // s for g, s in zip(grid, tile)]
    tid = ((idx[0][:, None, None] * n[1] + idx[1][None, :, None]) * n[2] + idx[2][None, None, :]).flatten()
    sees = [torch.tensor([[_sees(a, c, n[x], window[x]) for c in range(n[x])] for a in range(n[x])])
            for x in range(3)]
    tile_sees = (sees[0][:, None, None, :, None, None] & sees[1][None, :, None, None, :, None]
                 & sees[2][None, None, :, None, None, :]).reshape(n[0] * n[1] * n[2], -1)
    nv = tid.numel()
    nb = -(-(nv + text) // blk)
    holds = torch.zeros(nb, tile_sees.shape[0], dtype=torch.bool)  # block b holds a token of tile t
    holds[torch.arange(nv) // blk, tid] = True
    pairs = holds.float() @ tile_sees.float() @ holds.float().T
    expected = pairs > 0
    expected[nv // blk:] = True  # blocks holding text
    expected[:, nv // blk:] = True
    assert torch.equal(m.block_mask(), expected)
    assert 0.05 < m.density() < 0.5


@pytest.mark.parametrize("block", [16, (16, 32)])
def test_block_map_from_mask(block):
    g = torch.Generator().manual_seed(0)
    mask = torch.rand(9, 6, generator=g) < 0.4
    mask[3] = False  # a query block with no key block
    mask[5] = True
    m = attn.block_map_from_mask(mask, block=block)
    assert torch.equal(m.block_mask(), mask)
    assert m.kv_blocks.shape == (9, 6) and m.n_kv_blocks == 6 and m.n_q_blocks == 9
    assert m.block == ((16, 16) if block == 16 else (16, 32))
    for i in range(9):
        listed = m.kv_blocks[i, : m.kv_counts[i]].tolist()
        assert listed == torch.nonzero(mask[i]).flatten().tolist()
        assert bool((m.kv_blocks[i, m.kv_counts[i]:] == -1).all())
    assert m.density() == pytest.approx(float(mask.float().mean()))


def test_block_map_from_empty_mask():
    m = attn.block_map_from_mask(torch.zeros(4, 3, dtype=torch.bool), block=32)
    assert m.kv_blocks.shape == (4, 1) and bool((m.kv_blocks == -1).all()) and bool((m.kv_counts == 0).all())
    assert m.density() == 0.0
    assert not bool(attn.token_mask(m, 100, 70).any())


def test_token_mask_lengths():
    m = attn.block_map_from_mask(torch.eye(3, dtype=torch.bool), block=(16, 32))
    tm = attn.token_mask(m, 40, 70)
    assert tm.shape == (40, 70)
    assert bool(tm[15, 31]) and not bool(tm[16, 31]) and bool(tm[16, 32]) and bool(tm[39, 69])
    with pytest.raises(ValueError, match="40 queries and 100 keys need 3 x 4"):
        attn.token_mask(m, 40, 100)


@pytest.mark.parametrize("kwargs,fragment", [
    ({"grid": (3, 0, 4)}, "grid must be three positive ints"),
    ({"grid": (3, 4)}, "grid must be three positive ints"),
    ({"tile": (1, 2, -1)}, "tile must be three positive ints"),
    ({"window": (1, 1, 0)}, "window must be three positive ints"),
    ({"block": 24}, "block_m must be a power of two in [16, 256]"),
    ({"block": (16, 8)}, "block_n must be a power of two in [16, 256]"),
    ({"block": (16, 16, 16)}, "block must be an int or a pair"),
    ({"text_tokens": -1}, "text_tokens must be a non-negative int"),
    ({"text_first": 1}, "text_first must be a bool"),
])
def test_video_block_map_bad_arguments(kwargs, fragment):
    args = {"grid": (2, 4, 4), "window": (1, 1, 1), **kwargs}
    with pytest.raises(ValueError) as info:
        attn.video_block_map(args.pop("grid"), **args)
    assert fragment in str(info.value)


def test_block_map_from_mask_bad_arguments():
    with pytest.raises(ValueError, match="2-D bool tensor"):
        attn.block_map_from_mask(torch.ones(3, 3))
    with pytest.raises(ValueError, match="2-D bool tensor"):
        attn.block_map_from_mask(torch.ones(2, 3, 3, dtype=torch.bool))
    with pytest.raises(ValueError, match="block_m must be a power of two"):
        attn.block_map_from_mask(torch.ones(3, 3, dtype=torch.bool), block=(48, 16))
