"""The executable spec of ``ln_modulate``: eager PyTorch, fp32 math, one final rounding.

Same signature as the public op (``geom`` is accepted and ignored). Also the backend on
every platform without a faster one (CPU, MPS, XPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_diffusion_core import broadcast_view, row_geometry


def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    geom: object = None,
) -> torch.Tensor:
    g = row_geometry("x", x, [])
    x3 = x.unsqueeze(0) if g.is_2d else x
    D = g.D
    y = F.layer_norm(
        x3.float(),
        (D,),
        None if weight is None else weight.float(),
        None if bias is None else bias.float(),
        eps,
    )
    y = y * (scale_offset + broadcast_view(scale.float(), g))
    if shift is not None:
        y = y + broadcast_view(shift.float(), g)
    y = y.to(x.dtype)
    return (y.squeeze(0) if g.is_2d else y).contiguous()
