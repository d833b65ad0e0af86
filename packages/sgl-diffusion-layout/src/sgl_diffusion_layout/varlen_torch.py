"""The eager chains of the varlen layout ops (the definition of their exact contract); also the CPU backend."""

from __future__ import annotations

import torch


def build_varlen_meta(mask: torch.Tensor, *, geom: object = None):
    B, S = mask.shape
    indices = torch.nonzero(mask.reshape(-1), as_tuple=False).flatten()
    seqlens = mask.sum(dim=1, dtype=torch.int32)
    cu_seqlens = torch.zeros(B + 1, dtype=torch.int32, device=mask.device)
    torch.cumsum(seqlens, 0, out=cu_seqlens[1:])
    max_seqlen = int(seqlens.max()) if B else 0
    inverse = torch.full((B * S,), -1, dtype=torch.int64, device=mask.device)
    inverse[indices] = torch.arange(indices.numel(), device=mask.device)
    return indices, cu_seqlens, max_seqlen, inverse


def varlen_pack_qkv(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, indices: torch.Tensor,
                    *, geom: object = None):
    B, S, H, Dh = q.shape
    return tuple(t.reshape(B * S, H, Dh).index_select(0, indices) for t in (q, k, v))


def varlen_scatter(out: torch.Tensor, inverse_or_indices: torch.Tensor, batch: int, seqlen: int,
                   *, geom: object = None) -> torch.Tensor:
    n, H, Dh = out.shape
    idx = inverse_or_indices
    res = torch.zeros(batch * seqlen, H, Dh, dtype=out.dtype, device=out.device)
    if idx.numel() == batch * seqlen:  # the inverse map: res[p] = out[idx[p]] where idx[p] >= 0
        dest = torch.nonzero(idx >= 0, as_tuple=False).flatten()
        res.index_copy_(0, dest, out.index_select(0, idx.index_select(0, dest)))
    else:  # the indices of the valid tokens: res[idx[r]] = out[r]
        res.index_copy_(0, idx, out)
    return res.view(batch, seqlen, H, Dh)
