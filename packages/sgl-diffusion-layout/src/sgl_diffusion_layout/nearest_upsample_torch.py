"""The eager chain of ``nearest_upsample`` (the definition of its exact contract); also its ``torch`` backend."""

from __future__ import annotations

import torch
import torch.nn.functional as F


def nearest_upsample(x: torch.Tensor, scale_factor, mode: str = "nearest") -> torch.Tensor:
    return F.interpolate(x, scale_factor=scale_factor, mode=mode)


def prepare(geom, x):
    """The ``torch`` backend's runner: the eager chain itself."""
    return nearest_upsample
