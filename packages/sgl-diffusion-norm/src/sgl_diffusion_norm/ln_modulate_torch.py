"""The executable spec of ``ln_modulate``: eager PyTorch, fp32 math, one final rounding.

Same signature as the public op (``geom`` is accepted and ignored). Also the backend on
every platform without a faster one (CPU, MPS, XPU).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _broadcast(t: torch.Tensor, x3: torch.Tensor, x_was_2d: bool) -> torch.Tensor:
    """View a modulation tensor so that it broadcasts against ``x3 = [B, S, D]`` (fp32)."""
    B, S, D = x3.shape
    t = t.float()
    if t.dim() == 1:
        return t
    if x_was_2d:  # [N, D] per token or [1, D]
        return t.unsqueeze(0)
    if t.dim() == 2:  # [B, D]
        return t.unsqueeze(1)
    if t.dim() == 3:  # [B, 1, D] or [B, S, D]
        return t
    # [B, F, 1, D]: frame f covers tokens f*L .. (f+1)*L - 1
    Fr = t.shape[1]
    return t.expand(t.shape[0], Fr, S // Fr, D).reshape(t.shape[0], S, D)


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
    x2d = x.dim() == 2
    x3 = x.unsqueeze(0) if x2d else x
    D = x3.shape[-1]
    y = F.layer_norm(
        x3.float(),
        (D,),
        None if weight is None else weight.float(),
        None if bias is None else bias.float(),
        eps,
    )
    y = y * (scale_offset + _broadcast(scale, x3, x2d))
    if shift is not None:
        y = y + _broadcast(shift, x3, x2d)
    y = y.to(x.dtype)
    return (y.squeeze(0) if x2d else y).contiguous()
