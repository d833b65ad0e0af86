"""The eager reference of ``quantize_fp8`` (the definition of its contract); also its ``torch`` backend.

The definition is core's (``sgl_diffusion_core.fp8``, shared with the norms' FP8 results): row-wise
``scale = max(amax, 1e-12) / fp8_max``, ``x_fp8 = clamp(x / scale, +-fp8_max).to(fp8)``, ties to even;
tensor-wise with one amax over the whole tensor.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import quantize_fp8_torch


def quantize_fp8(x: torch.Tensor, *, granularity: str = "row",
                 dtype: torch.dtype = torch.float8_e4m3fn) -> tuple[torch.Tensor, torch.Tensor]:
    return quantize_fp8_torch(x, dtype, granularity)


def prepare(geom, x):
    """The ``torch`` backend's runner ``(x) -> (x_fp8, scale)``."""
    granularity, dtype = geom.granularity, geom.dtype

    def run(x, *_):
        return quantize_fp8(x, granularity=granularity, dtype=dtype)

    return run
