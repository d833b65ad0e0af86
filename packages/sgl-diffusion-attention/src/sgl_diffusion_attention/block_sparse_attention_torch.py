"""The definition of ``block_sparse_attention`` (its ``torch`` backend and the reference).

Dense attention in fp32 under the map's token mask (``token_mask``): query ``i`` attends to key ``j``
iff query block ``i // block_m`` lists key block ``j // block_n``; scores of other keys are -inf, a
query with no key gets output 0 and lse -inf; one rounding to q's dtype. The mask is built per query
chunk of ``attention_torch``'s loop from the map's block mask, so production shapes fit a GPU.
"""

from __future__ import annotations

import torch

from .attention_torch import _dense
from .block_map import block_pair, check_map_lengths


def block_sparse_attention(q, k, v, block_map, *, block=None, scale=None, return_lse=False):
    check_map_lengths(block_map, q.shape[1], k.shape[1])
    if block is not None and block_pair(block) != block_map.block:
        raise ValueError(f"block={block!r} differs from the map's blocks {block_map.block}")
    bm, bn = block_map.block
    Sk = k.shape[1]
    blocks = block_map.block_mask().to(q.device)

    def keep_rows(s0: int, s1: int) -> torch.Tensor:
        rows = blocks[torch.arange(s0, s1, device=q.device) // bm]
        return rows.repeat_interleave(bn, 1)[:, :Sk]

    scale = q.shape[-1] ** -0.5 if scale is None else float(scale)
    o, lse = _dense(*(t.transpose(1, 2) for t in (q, k, v)), scale, None, keep_rows)
    o = o.transpose(1, 2).to(q.dtype).contiguous()
    return (o, lse) if return_lse else o


def prepare(geom, q, k, v, kv_blocks, kv_counts):
    """The ``torch`` backend's runner: the definition itself."""
    from .block_map import BlockMap

    scale, want_lse, block, n_kv = geom.scale, geom.return_lse, geom.block, geom.n_kv_blocks

    def run(q, k, v, kv_blocks, kv_counts, *_):
        return block_sparse_attention(q, k, v, BlockMap(kv_blocks, kv_counts, block, n_kv), scale=scale,
                                      return_lse=want_lse)

    return run
