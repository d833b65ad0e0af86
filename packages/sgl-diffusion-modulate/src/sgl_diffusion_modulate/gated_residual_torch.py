"""The eager chain of ``gated_residual`` / ``gated_residual_`` (the definition of their exact contract); also their
``torch`` backend."""

from __future__ import annotations

import torch

from sgl_diffusion_core import broadcast_view, row_geometry


def gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    inplace: bool = False,
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


def prepare(geom, residual, update, gate):
    """The ``torch`` backend's runner: the eager chain itself (in place when ``geom.inplace``)."""
    inplace = geom.inplace

    def run(residual, update, gate):
        return gated_residual(residual, update, gate, inplace=inplace)

    return run
