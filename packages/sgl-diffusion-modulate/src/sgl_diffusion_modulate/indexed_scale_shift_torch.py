"""The eager chain of ``indexed_scale_shift`` (the definition of its exact contract); also its ``torch`` backend."""

from __future__ import annotations

import torch

from ._indexed_torch import gather_rows, guard_index, poison_rows


def indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    guard: bool = False,
) -> torch.Tensor:
    """``x * (scale_offset + scale_table[b, index]) + shift_table[b, index]``; ``guard=False`` is the
    bare chain (the definition; raises on a bad index on CPU), ``guard=True`` the backend: out-of-range
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


def prepare(geom, x, scale_table, shift_table, index):
    """The ``torch`` backend's runner: the chain, guarded (an out-of-range token's row is NaN)."""

    def run(x, scale_table, shift_table, index, scale_offset):
        return indexed_scale_shift(x, scale_table, shift_table, index, scale_offset=scale_offset, guard=True)

    return run
