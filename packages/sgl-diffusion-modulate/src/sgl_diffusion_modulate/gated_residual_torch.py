"""The eager chain of ``gated_residual`` (the definition of its exact contract); also the CPU backend."""

from __future__ import annotations

import torch

from sgl_diffusion_core import broadcast_view, row_geometry

from .scale_shift_torch import gather_rows, guard_index, poison_rows


def gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    inplace: bool = False,
    geom: object = None,
) -> torch.Tensor:
    g = row_geometry("residual", residual, [])
    r3 = residual.unsqueeze(0) if g.is_2d else residual
    u3 = update.unsqueeze(0) if g.is_2d else update
    t1 = u3 if gate is None else broadcast_view(gate, g) * u3
    if inplace:
        r3.add_(t1)
        return residual
    out = r3 + t1
    return (out.squeeze(0) if g.is_2d else out).contiguous()


def indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
    geom: object = None,
    guard: bool = True,
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
