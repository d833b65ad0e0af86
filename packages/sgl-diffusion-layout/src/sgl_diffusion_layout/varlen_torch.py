"""The eager chains of the varlen layout ops (the definition of their exact contract); also their
``torch`` backend (``prepare_<op>``).

The chains are bare (``guard=False``, the ``*_reference`` functions: eager indexing raises on a
bad index on CPU). The backend runs them with ``guard=True``, serving unchecked calls
(``check_index=False``, ``torch.compile``, CUDA graph capture) as the Triton backend does: an
out-of-range index reads nothing and gives NaN rows, no host sync. With valid indices both give
the same bits.
"""

from __future__ import annotations

import torch

_NAN = float("nan")


def build_varlen_meta(mask: torch.Tensor):
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
                    *, guard: bool = False):
    B, S, H, Dh = q.shape
    ok = None
    if guard:  # an index outside [0, B*S) reads row 0 and its rows become NaN
        ok = (indices >= 0) & (indices < B * S)
        indices = torch.where(ok, indices, 0)
    outs = tuple(t.reshape(B * S, H, Dh).index_select(0, indices) for t in (q, k, v))
    if ok is not None:
        for o in outs:
            o.masked_fill_(~ok[:, None, None], _NAN)
    return outs


def inverse_map(indices: torch.Tensor, rows: int) -> torch.Tensor:
    """``inverse[indices[r]] = r``, ``-1`` elsewhere (``rows`` entries, int64), with no host sync.

    An index outside ``[0, rows)`` lands nowhere; the token it names has no row of the result
    that could show it, so every entry becomes ``-2`` (out of range for the scatter: every
    row NaN) instead of the token being dropped silently.
    """
    ok = (indices >= 0) & (indices < rows)
    inv = torch.full((rows + 1,), -1, dtype=torch.int64, device=indices.device)  # entry `rows`: a sink
    inv[torch.where(ok, indices, rows)] = torch.arange(indices.shape[0], dtype=torch.int64, device=indices.device)
    return torch.where(ok.all(), inv[:rows], -2)


def varlen_scatter(out: torch.Tensor, inverse_or_indices: torch.Tensor, batch: int, seqlen: int,
                   *, guard: bool = False) -> torch.Tensor:
    n, H, Dh = out.shape
    idx = inverse_or_indices
    rows = batch * seqlen
    res = torch.zeros(rows, H, Dh, dtype=out.dtype, device=out.device)
    if idx.numel() != rows:  # the indices of the valid tokens: res[idx[r]] = out[r]
        if not guard:
            res.index_copy_(0, idx, out)
            return res.view(batch, seqlen, H, Dh)
        idx = inverse_map(idx, rows)
    # the inverse map: res[p] = out[idx[p]] where idx[p] >= 0 (-1: padding)
    ok = None
    if guard:  # an entry outside [-1, n) reads nothing and its row becomes NaN
        ok = (idx >= -1) & (idx < n)
        idx = torch.where(ok, idx, -1)
    dest = torch.nonzero(idx >= 0, as_tuple=False).flatten()
    res.index_copy_(0, dest, out.index_select(0, idx.index_select(0, dest)))
    if ok is not None:
        res.masked_fill_(~ok[:, None, None], _NAN)
    return res.view(batch, seqlen, H, Dh)


def prepare_build_varlen_meta(geom, mask):
    """The runner: the chain (``max_seqlen`` as a 0-d int64 tensor for the custom op, ``geom.max_as_tensor``)."""
    if not geom.max_as_tensor:
        return build_varlen_meta

    def run(mask):
        idx, cu, mx, inv = build_varlen_meta(mask)
        return idx, cu, torch.tensor(mx, dtype=torch.int64), inv

    return run


def prepare_varlen_pack_qkv(geom, q, k, v, indices):
    def run(q, k, v, indices):
        return varlen_pack_qkv(q, k, v, indices, guard=True)

    return run


def prepare_varlen_scatter(geom, out, inverse_or_indices):
    def run(out, inverse_or_indices, batch, seqlen):
        return varlen_scatter(out, inverse_or_indices, batch, seqlen, guard=True)

    return run
