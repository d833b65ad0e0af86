"""The fp32 spec of the row norms' close contract: fp32 math (fp64 for fp64 inputs), one final
rounding; what a close kernel computes, and, on fp64 inputs, the oracle of the tests."""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_diffusion_core import broadcast_view, row_geometry


def norm_spec(norm: str, x, scale=None, shift=None, weight=None, bias=None, eps=1e-6, scale_offset=1.0,
              out_dtype: torch.dtype | None = None) -> torch.Tensor:
    """``norm(x) [* weight] [+ bias] [* (scale_offset + scale) + shift]`` in fp32 (fp64 when x is
    fp64), rounded once to ``out_dtype`` (default x's dtype)."""
    acc = torch.float64 if x.dtype == torch.float64 else torch.float32
    g = row_geometry("x", x, [])
    xf = (x.unsqueeze(0) if g.is_2d else x).to(acc)
    if norm == "layer":
        h = F.layer_norm(xf, (g.D,), None, None, eps)
    else:
        h = xf * torch.rsqrt(xf.pow(2).mean(-1, keepdim=True) + eps)
    if weight is not None:
        h = h * weight.to(acc)
    if bias is not None:
        h = h + bias.to(acc)
    if scale is not None:
        h = h * (scale_offset + broadcast_view(scale.to(acc), g))
        if shift is not None:
            h = h + broadcast_view(shift.to(acc), g)
    y = h.to(out_dtype or x.dtype)
    return (y.squeeze(0) if g.is_2d else y).contiguous()
