"""The eager chain of ``scale_shift`` (the definition of its exact contract); also its ``torch`` backend."""

from __future__ import annotations

import torch

from sgl_diffusion_core import broadcast_view, row_geometry


def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
) -> torch.Tensor:
    g = row_geometry("x", x, [])
    x3 = x.unsqueeze(0) if g.is_2d else x
    # per-frame tensors are expanded to per-token rows: every element sees the same values
    # and the same ops as on x viewed as [B, F, L, D]
    y = x3 * (scale_offset + broadcast_view(scale, g))
    if shift is not None:
        y = y + broadcast_view(shift, g)
    return (y.squeeze(0) if g.is_2d else y).contiguous()


def prepare(geom, x, scale, shift):
    """The ``torch`` backend's runner: the eager chain itself."""

    def run(x, scale, shift, scale_offset):
        return scale_shift(x, scale, shift, scale_offset=scale_offset)

    return run
