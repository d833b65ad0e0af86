"""Block maps of ``block_sparse_attention``: which key blocks each query block attends to.

A :class:`BlockMap` is a compressed-row list over blocks of consecutive tokens: query block ``i``
(tokens ``i * block_m .. (i + 1) * block_m - 1``) attends to the key blocks
``kv_blocks[i, :kv_counts[i]]`` (tokens ``j * block_n .. (j + 1) * block_n - 1`` of block ``j``),
sorted, each once; the rest of the row is padding (-1). It is what the Triton kernel walks, and
every builder here runs on the tensors' device with torch ops (one host sync: the row width).

``video_block_map`` builds the map of sliding-tile attention over a ``(T, H, W)`` latent grid
whose tokens are in the model's order (row-major ``T, H, W``, text before or after) or in tile order
(``video_tile_order``: each 3-D tile's tokens consecutive, so that a block of a tile's size is one
tile and the map is as sparse as the window); the token-level rule it reduces to blocks is written
in its docstring. ``block_map_from_mask`` builds
a map from any boolean ``[n_q_blocks, n_kv_blocks]`` mask; ``token_mask`` expands a map to the
``[Sq, Sk]`` boolean mask under which dense attention equals ``block_sparse_attention``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

ALSO_EXPORTS = ("BlockMap", "video_block_map", "video_tile_order", "block_map_from_mask", "token_mask")


def _pow2_block(name: str, b: object) -> int:
    if isinstance(b, bool) or not isinstance(b, int) or b < 16 or b > 256 or b & (b - 1):
        raise ValueError(f"{name} must be a power of two in [16, 256] (a Triton dot tile), got {b!r}")
    return b


def block_pair(block: object) -> tuple[int, int]:
    """``(block_m, block_n)`` from an int (both) or a pair, validated."""
    pair = (block, block) if isinstance(block, int) and not isinstance(block, bool) else block
    if not isinstance(pair, (tuple, list)) or len(pair) != 2:
        raise ValueError(f"block must be an int or a pair (block_m, block_n), got {block!r}")
    return _pow2_block("block_m", pair[0]), _pow2_block("block_n", pair[1])


@dataclass(frozen=True, eq=False)
class BlockMap:
    """Key blocks per query block, compressed-row.

    kv_blocks: ``[n_q_blocks, width]`` int32, contiguous: row ``i`` lists the key blocks of query
        block ``i`` in increasing order in its first ``kv_counts[i]`` entries, then -1.
    kv_counts: ``[n_q_blocks]`` int32, in ``[0, width]``: a query block with no key block gets
        output 0 and lse -inf.
    block: ``(block_m, block_n)``, tokens per query block and per key block (powers of two, 16..256).
    n_kv_blocks: key blocks in all, ``cdiv(Sk, block_n)``.
    """

    kv_blocks: torch.Tensor
    kv_counts: torch.Tensor
    block: tuple[int, int]
    n_kv_blocks: int

    @property
    def n_q_blocks(self) -> int:
        return self.kv_counts.shape[0]

    def block_mask(self) -> torch.Tensor:
        """The ``[n_q_blocks, n_kv_blocks]`` boolean mask this map lists."""
        mask = torch.zeros(self.n_q_blocks, self.n_kv_blocks + 1, dtype=torch.bool, device=self.kv_counts.device)
        cols = torch.where(self.kv_blocks >= 0, self.kv_blocks.long(), self.n_kv_blocks)
        mask.scatter_(1, cols, True)
        return mask[:, : self.n_kv_blocks]

    def density(self) -> float:
        """Listed blocks over all blocks (a host sync)."""
        total = self.n_q_blocks * self.n_kv_blocks
        return float(self.kv_counts.sum()) / total if total else 0.0


def block_map_from_mask(mask_blocks: torch.Tensor, *, block: int | tuple[int, int] = 64) -> BlockMap:
    """The :class:`BlockMap` of a boolean ``[n_q_blocks, n_kv_blocks]`` mask (True: attend), on its device.

    ``block``: tokens per query and key block (an int for both, or ``(block_m, block_n)``).
    """
    bm, bn = block_pair(block)
    if not isinstance(mask_blocks, torch.Tensor) or mask_blocks.dtype != torch.bool or mask_blocks.dim() != 2:
        got = (f"{mask_blocks.dtype} of shape {list(mask_blocks.shape)}" if isinstance(mask_blocks, torch.Tensor)
               else type(mask_blocks).__name__)
        raise ValueError(f"mask_blocks must be a 2-D bool tensor [n_q_blocks, n_kv_blocks], got {got}")
    nq, nk = mask_blocks.shape
    counts = mask_blocks.sum(1, dtype=torch.int32)
    width = max(1, int(counts.max()) if nq else 0)
    cols = torch.arange(nk, device=mask_blocks.device, dtype=torch.int32).expand(nq, nk)
    key = torch.where(mask_blocks, cols, nk + cols)  # listed columns first, in order
    order = torch.sort(key, dim=1).values[:, :width] if nk else key.new_empty(nq, 0)
    if order.shape[1] < width:
        order = torch.cat([order, order.new_full((nq, width - order.shape[1]), nk)], dim=1)
    kv_blocks = torch.where(order < nk, order, -1).to(torch.int32).contiguous()
    return BlockMap(kv_blocks, counts.contiguous(), (bm, bn), nk)


def token_mask(block_map: BlockMap, seqlen_q: int, seqlen_k: int) -> torch.Tensor:
    """The ``[seqlen_q, seqlen_k]`` boolean mask (True: attend) of a map: query token ``i`` attends to key
    token ``j`` iff block ``i // block_m`` lists block ``j // block_n``. Dense attention under this mask
    is ``block_sparse_attention`` with the map."""
    check_map_lengths(block_map, seqlen_q, seqlen_k)
    bm, bn = block_map.block
    m = block_map.block_mask()
    return m.repeat_interleave(bm, 0)[:seqlen_q].repeat_interleave(bn, 1)[:, :seqlen_k]


def check_map_lengths(block_map: object, seqlen_q: int, seqlen_k: int) -> None:
    if not isinstance(block_map, BlockMap):
        raise ValueError(f"block_map must be a BlockMap, got {type(block_map).__name__}")
    bm, bn = block_map.block
    want = (-(-seqlen_q // bm), -(-seqlen_k // bn))
    if (block_map.n_q_blocks, block_map.n_kv_blocks) != want:
        raise ValueError(f"the map has {block_map.n_q_blocks} query x {block_map.n_kv_blocks} key blocks of "
                         f"{bm} x {bn} tokens; {seqlen_q} queries and {seqlen_k} keys need {want[0]} x {want[1]}")


def _triple(name: str, value: object) -> tuple[int, int, int]:
    if (not isinstance(value, (tuple, list)) or len(value) != 3
            or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in value)):
        raise ValueError(f"{name} must be three positive ints (T, H, W), got {value!r}")
    return tuple(value)


def _window_matrix(n_tiles: int, w: int, device) -> torch.Tensor:
    """``[n_tiles, n_tiles]`` float: query tile ``a`` sees key tile ``c`` along one axis."""
    span = min(w, n_tiles)
    a = torch.arange(n_tiles, device=device)
    start = (a - (w - 1) // 2).clamp(0, n_tiles - span)
    return ((a[None, :] >= start[:, None]) & (a[None, :] < start[:, None] + span)).float()


def _tile_membership(grid, tile, n_tiles, pos: torch.Tensor, S: int, block: int, device) -> torch.Tensor:
    """``[cdiv(S, block), n_tiles]`` float: block ``b`` holds a video token of tile ``t`` (``pos``: the
    sequence position of each video token, by its row-major index)."""
    T, H, W = grid
    tt, th, tw = tile
    nh, nw = n_tiles[1], n_tiles[2]
    idx = [torch.arange(n, device=device) for n in grid]
    tid = ((idx[0] // tt)[:, None, None] * nh + (idx[1] // th)[None, :, None]) * nw + (idx[2] // tw)[None, None, :]
    member = torch.zeros(-(-S // block), n_tiles[0] * nh * nw, device=device)
    member[pos // block, tid.flatten()] = 1.0
    return member


def video_tile_order(
    grid: tuple[int, int, int],
    *,
    tile: tuple[int, int, int] = (4, 4, 4),
    text_tokens: int = 0,
    text_first: bool = False,
    device: torch.device | str | None = None,
) -> torch.Tensor:
    """The permutation of a joint sequence into tile order: ``x[:, order]`` (int64 ``[S]``) lists the video
    tokens tile by tile (tiles in row-major ``(t, h, w)`` order of tile coordinates, each tile's tokens
    in row-major order; a partial tile at the grid's end holds fewer tokens), the text tokens staying
    first or last. ``order.argsort()`` is its inverse (``y[:, order.argsort()]`` puts tile-order
    tokens back in the model's order). A gather: exact for any dtype."""
    grid, tile = _triple("grid", grid), _triple("tile", tile)
    _check_text(text_tokens, text_first)
    device = torch.device("cpu") if device is None else torch.device(device)
    video = _video_tile_order(grid, tile, device)
    text = torch.arange(text_tokens, device=device)
    if text_first:
        return torch.cat([text, video + text_tokens])
    return torch.cat([video, text + video.numel()])


def _video_tile_order(grid, tile, device) -> torch.Tensor:
    """The model-order index of each video token, in tile order."""
    T, H, W = grid
    tt, th, tw = tile
    nh, nw = -(-H // th), -(-W // tw)
    t, h, w = (torch.arange(n, device=device) for n in grid)
    tid = ((t // tt)[:, None, None] * nh + (h // th)[None, :, None]) * nw + (w // tw)[None, None, :]
    local = ((t % tt)[:, None, None] * th + (h % th)[None, :, None]) * tw + (w % tw)[None, None, :]
    return torch.argsort((tid * (tt * th * tw) + local).flatten())


def _check_text(text_tokens: object, text_first: object) -> None:
    if isinstance(text_tokens, bool) or not isinstance(text_tokens, int) or text_tokens < 0:
        raise ValueError(f"text_tokens must be a non-negative int, got {text_tokens!r}")
    if not isinstance(text_first, bool):
        raise ValueError(f"text_first must be a bool, got {text_first!r}")


def video_block_map(
    grid: tuple[int, int, int],
    *,
    tile: tuple[int, int, int] = (4, 4, 4),
    window: tuple[int, int, int],
    text_tokens: int = 0,
    text_first: bool = False,
    block: int | tuple[int, int] = 64,
    tile_order: bool = False,
    device: torch.device | str | None = None,
) -> BlockMap:
    """The block map of sliding-tile attention over a ``(T, H, W)`` latent grid.

    The sequence is ``T * H * W`` video tokens in row-major ``(t, h, w)`` order (``tile_order=True``: in
    the order of :func:`video_tile_order` with the same ``tile``), with ``text_tokens`` text tokens
    before them (``text_first=True``) or after them. Token rule:

    - video token ``(t, h, w)`` lies in tile ``(t // tile[0], h // tile[1], w // tile[2])``; a grid that
      a tile does not divide ends in partial tiles (``cdiv(T, tile[0])`` tiles along T, and so on);
    - along each axis with ``n`` tiles, query tile ``a`` sees the ``min(window, n)`` consecutive key
      tiles centred on it (``a - (window - 1) // 2`` first), shifted inwards at the grid's edges, so
      that every query tile sees the same number of tiles; a video query attends to a video key when
      the key's tile is seen along all three axes;
    - a text token attends to every token and is attended by every token.

    Block map: query block ``i`` (tokens ``i * block_m ..``, in the sequence's order: a block may span
    several tiles, rows and frames, and text) lists key block ``j`` iff some query token of block ``i``
    attends to some key token of block ``j`` under the rule above: the blocks the token mask touches.
    ``block_sparse_attention`` with this map computes, for each query, the attention over every key of
    the blocks its block lists, i.e. dense attention under ``token_mask(map, S, S)``, which contains the
    token rule's mask (a query also sees the other keys of those blocks).

    window: ``(wt, wh, ww)`` in tiles per axis (positive ints; ``>= cdiv(T, tile[0])`` etc. is dense
        along that axis). block: tokens per query and key block (an int, or ``(block_m, block_n)``).
    device: where the map is built and lives (default: the CPU); put it on q's device.
    """
    grid, tile, window = _triple("grid", grid), _triple("tile", tile), _triple("window", window)
    bm, bn = block_pair(block)
    _check_text(text_tokens, text_first)
    if not isinstance(tile_order, bool):
        raise ValueError(f"tile_order must be a bool, got {tile_order!r}")
    device = torch.device("cpu") if device is None else torch.device(device)
    n_tiles = tuple(-(-g // t) for g, t in zip(grid, tile))
    n_video = grid[0] * grid[1] * grid[2]
    S = n_video + text_tokens
    first = text_tokens if text_first else 0
    # the sequence position of each video token (model order: its row-major index)
    pos = torch.arange(n_video, device=device)
    if tile_order:
        pos = torch.argsort(_video_tile_order(grid, tile, device))
    pos = pos + first
    member_q = _tile_membership(grid, tile, n_tiles, pos, S, bm, device)
    member_k = _tile_membership(grid, tile, n_tiles, pos, S, bn, device)
    seen = member_q.view(-1, *n_tiles)  # dilate each query block's tiles by the window, one axis at a time
    for axis, (n, w) in enumerate(zip(n_tiles, window)):
        seen = torch.movedim(torch.movedim(seen, axis + 1, -1) @ _window_matrix(n, w, device), -1, axis + 1)
    mask = (seen.reshape(seen.shape[0], -1) @ member_k.T) > 0
    if text_tokens:
        t0, t1 = (0, text_tokens) if text_first else (n_video, S)
        mask[t0 // bm:(t1 - 1) // bm + 1] = True
        mask[:, t0 // bn:(t1 - 1) // bn + 1] = True
    return block_map_from_mask(mask, block=(bm, bn))
