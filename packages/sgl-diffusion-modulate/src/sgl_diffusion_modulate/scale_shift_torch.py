"""The eager chain of ``scale_shift`` (the definition of its exact contract); also the CPU backend."""

from __future__ import annotations

import torch

from sgl_diffusion_core import broadcast_view, row_geometry


def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    geom: object = None,
) -> torch.Tensor:
    g = row_geometry("x", x, [])
    x3 = x.unsqueeze(0) if g.is_2d else x
    # per-frame tensors are expanded to per-token rows: every element sees the same values
    # and the same ops as on x viewed as [B, F, L, D]
    y = x3 * (scale_offset + broadcast_view(scale, g))
    if shift is not None:
        y = y + broadcast_view(shift, g)
    return (y.squeeze(0) if g.is_2d else y).contiguous()


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


def indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    geom: object = None,
    guard: bool = True,
) -> torch.Tensor:
    """``x * (scale_offset + scale_table[b, index]) + shift_table[b, index]``; ``guard=False`` is the
    bare chain (the definition; raises on a bad index), ``guard=True`` the backend: out-of-range
    tokens give NaN rows, valid ones the same bits."""
    B, S = x.shape[0], x.shape[1]
    ok = None
    if guard:
        index, ok = guard_index(index, scale_table.shape[-2])
    y = x * (scale_offset + gather_rows(scale_table, index, B, S))
    if shift_table is not None:
        y = y + gather_rows(shift_table, index, B, S)
    if ok is not None:
        poison_rows(y, ok)
    return y.contiguous()
