"""The eager chain of ``indexed_gated_residual`` / ``indexed_gated_residual_`` (the definition of their exact
contract); also their ``torch`` backend."""

from __future__ import annotations

import torch

from ._indexed_torch import gather_rows, guard_index, poison_rows


def indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
    guard: bool = False,
) -> torch.Tensor:
    """``residual + gate_table[b, index] * update`` (in place: ``residual.add_(...)``); ``guard`` as in
    ``indexed_scale_shift``: False is the bare chain, True writes NaN rows for out-of-range tokens."""
    B, S = residual.shape[0], residual.shape[1]
    ok = None
    if guard:
        index, ok = guard_index(index, gate_table.shape[-2])
    t1 = gather_rows(gate_table, index, B, S) * update
    out = residual.add_(t1) if inplace else residual + t1
    if ok is not None:
        poison_rows(out, ok)
    return out if inplace else out.contiguous()


def prepare(geom, residual, update, gate_table, index):
    """The ``torch`` backend's runner: the chain, guarded (an out-of-range token's row is NaN)."""
    inplace = geom.inplace

    def run(residual, update, gate_table, index):
        return indexed_gated_residual(residual, update, gate_table, index, inplace=inplace, guard=True)

    return run
