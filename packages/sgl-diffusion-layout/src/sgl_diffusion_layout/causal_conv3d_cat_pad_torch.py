"""The eager chain of ``causal_conv3d_cat_pad`` (the definition of its exact contract); also its
``torch`` backend."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def causal_conv3d_cat_pad(x: torch.Tensor, cache_x: torch.Tensor | None, padding) -> torch.Tensor:
    y = x if cache_x is None else torch.cat([cache_x, x], dim=2)
    out = F.pad(y, tuple(padding))
    if x.is_contiguous(memory_format=torch.channels_last_3d) and not x.is_contiguous():
        return out.contiguous(memory_format=torch.channels_last_3d)
    return out.contiguous()


def prepare(geom, x, cache_x):
    """The ``torch`` backend's runner: the eager chain itself."""
    return causal_conv3d_cat_pad
