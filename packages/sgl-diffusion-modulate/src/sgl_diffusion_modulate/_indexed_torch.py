"""Eager helpers of the indexed ops' chains: the per-token table pick and the out-of-range guard."""

from __future__ import annotations

import torch


def gather_rows(table: torch.Tensor, index: torch.Tensor, B: int, S: int) -> torch.Tensor:
    """``table[b, index[b, s]]`` for every token, ``[B, S, D]``: the eager per-token pick.

    table ``[B, K, D]``, ``[1, K, D]`` or ``[K, D]``; index ``[B, S]``, ``[1, S]`` or ``[S]``.
    """
    rows = table.expand(B, *table.shape[-2:])
    return rows[torch.arange(B, device=index.device)[:, None], index.expand(B, S)]


def guard_index(index: torch.Tensor, K: int) -> tuple[torch.Tensor, torch.Tensor]:
    """``(safe, ok)``: index with out-of-range entries replaced by 0, and where it was in range.

    No host sync: the backends use it where the index was not checked (``torch.compile``,
    CUDA graph capture, ``check_index=False``), so a bad index never reads out of bounds.
    """
    ok = (index >= 0) & (index < K)
    return torch.where(ok, index, 0), ok


def poison_rows(out: torch.Tensor, ok: torch.Tensor) -> None:
    """Write NaN, in place, into the rows of ``out`` (``[B, S, D]``) whose index was out of range."""
    out.masked_fill_(~ok[..., None], float("nan"))
