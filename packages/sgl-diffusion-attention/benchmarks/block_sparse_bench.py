"""Benchmark cases of ``block_sparse_attention`` at the video shapes of the attention issues (bf16, Dh 128):
Wan2.1-14B 720p (``[1, 75600, 40, 128]``, latent grid 21 x 45 x 80, no text in self-attention) and
HunyuanVideo 720p (``[1, 119056, 24, 128]``: grid 33 x 45 x 80 and 256 text tokens after the video),
each with ``video_block_map`` maps of 4 x 4 x 4 tiles, a few windows and blocks of 64 and 128 tokens, in
the model's token order and (``-tiles`` cases) in tile order.

Providers: ``sgl_diffusion`` (the op: its triton kernel on a GPU), ``attention(dense)`` (the dense
``attention`` op, its own backend choice), ``attention(triton)`` (the dense Triton kernel the sparse
one derives from: its TFLOP/s over ``dense_flops`` is the bar for ours over ``flops``) and
``sdpa(dense)`` (PyTorch's default SDPA without a mask). Attention is compute bound: each case
carries the map's ``density``, ``flops = 4 * B * H * Dh * (query-key pairs the map keeps)`` (the
work of ``sgl_diffusion``) and ``dense_flops = 4 * B * H * Dh * S^2`` (the work of the dense
providers), in ``extra``; the bytes are those of q, k, v and the output.
The check compares the first 4096 queries with the fp32 definition at the declared tolerance.
"""

from __future__ import annotations

from collections.abc import Iterator

import torch

from sgl_diffusion_core import REGISTRY, bench, testing

OP = "attention.block_sparse_attention"
# name -> (B, H, Dh, grid (T, H, W), text tokens, tile, window in tiles, block)
CASES: dict[str, tuple] = {
    "wan-720p-w3x3x3-b128": (1, 40, 128, (21, 45, 80), 0, (4, 4, 4), (3, 3, 3), 128),
    "wan-720p-w3x5x5-b128": (1, 40, 128, (21, 45, 80), 0, (4, 4, 4), (3, 5, 5), 128),
    "wan-720p-w3x3x3-b64": (1, 40, 128, (21, 45, 80), 0, (4, 4, 4), (3, 3, 3), 64),
    "hunyuan-720p-w3x3x3-b128": (1, 24, 128, (33, 45, 80), 256, (4, 4, 4), (3, 3, 3), 128),
    "hunyuan-720p-w3x5x5-b128": (1, 24, 128, (33, 45, 80), 256, (4, 4, 4), (3, 5, 5), 128),
    # the sequence in tile order (video_tile_order): a 64-token block is one tile (the gather is not timed)
    "wan-720p-w3x3x5-tiles": (1, 40, 128, (21, 45, 80), 0, (4, 4, 4), (3, 3, 5), 64),
    "hunyuan-720p-w3x3x3-tiles": (1, 24, 128, (33, 45, 80), 256, (4, 4, 4), (3, 3, 3), 64),
}
CHECK_QUERIES = 4096


def kept_pairs(block_map, Sq: int, Sk: int) -> int:
    """Query-key pairs the map keeps: rows of each query block times keys of each listed key block."""
    bm, bn = block_map.block
    mask = block_map.block_mask().double()
    rows = torch.full((mask.shape[0],), float(bm), dtype=torch.float64, device=mask.device)
    rows[-1] = Sq - bm * (mask.shape[0] - 1)
    keys = torch.full((mask.shape[1],), float(bn), dtype=torch.float64, device=mask.device)
    keys[-1] = Sk - bn * (mask.shape[1] - 1)
    return int(rows @ mask @ keys)


def _sdpa(q, k, v):
    return torch.nn.functional.scaled_dot_product_attention(q.transpose(1, 2), k.transpose(1, 2),
                                                            v.transpose(1, 2)).transpose(1, 2)


def block_sparse_attention_cases(device: torch.device, dtype: torch.dtype = torch.bfloat16,
                                 names: list[str] | None = None) -> Iterator[bench.BenchCase]:
    from sgl_diffusion_attention import (
        BlockMap,
        attention,
        block_sparse_attention,
        block_sparse_attention_reference,
        video_block_map,
    )

    close = next(s.contract for s in REGISTRY.specs(OP) if s.backend == "triton")
    for name in names or list(CASES):
        if name not in CASES:
            raise ValueError(f"unknown block_sparse_attention bench case {name!r}; known: {', '.join(CASES)}")
        B, H, Dh, grid, text, tile, window, blk = CASES[name]
        S = grid[0] * grid[1] * grid[2] + text
        block_map = video_block_map(grid, tile=tile, window=window, text_tokens=text, block=blk, device=device,
                                    tile_order=name.endswith("-tiles"))
        g = torch.Generator(device=device).manual_seed(0)
        q, k, v = (torch.randn(B, S, H, Dh, device=device, dtype=dtype, generator=g) for _ in range(3))
        head = BlockMap(block_map.kv_blocks[: CHECK_QUERIES // blk], block_map.kv_counts[: CHECK_QUERIES // blk],
                        block_map.block, block_map.n_kv_blocks)

        def check(q=q, k=k, v=v, block_map=block_map, head=head):
            got = block_sparse_attention(q, k, v, block_map, backend="triton")[:, :CHECK_QUERIES]
            ref = block_sparse_attention_reference(q[:, :CHECK_QUERIES].float(), k.float(), v.float(), head)
            atol, rtol = close.tolerance(dtype)
            testing.assert_close(got.float(), ref, atol=atol, rtol=rtol)

        pairs = kept_pairs(block_map, S, S)
        yield bench.BenchCase(
            name=name, shape=f"[{B}, {S}, {H}, {Dh}] grid={grid} text={text} tile={tile} window={window} block={blk}",
            dtype=str(dtype).removeprefix("torch."), bytes=bench.tensor_bytes(q, k, v, q),
            providers={
                "sgl_diffusion": lambda a=(q, k, v, block_map): block_sparse_attention(*a),
                "attention(dense)": lambda a=(q, k, v): attention(*a),
                "attention(triton)": lambda a=(q, k, v): attention(*a, backend="triton"),
                "sdpa(dense)": lambda a=(q, k, v): _sdpa(*a),
            },
            check=check,
            extra={"flops": 4 * B * H * Dh * pairs, "dense_flops": 4 * B * H * Dh * S * S,
                   "density": block_map.density(), "pair_density": pairs / (S * S)},
        )
