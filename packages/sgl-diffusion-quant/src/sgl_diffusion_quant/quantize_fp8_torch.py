"""The eager reference of ``quantize_fp8`` (the definition of its contract); also its ``torch`` backend.

Row-wise: ``amax = max|x|`` over the last dim in fp32, ``scale = max(amax, 1e-12) / fp8_max``,
``x_fp8 = clamp(x / scale, -fp8_max, fp8_max).to(fp8)`` (round to nearest, ties to even).
Tensor-wise: the same with one amax over the whole tensor. ``x ~= x_fp8.float() * scale``.
"""

from __future__ import annotations

import torch

from . import _specs as S


def quantize_fp8(x: torch.Tensor, *, granularity: str = "row",
                 dtype: torch.dtype = torch.float8_e4m3fn) -> tuple[torch.Tensor, torch.Tensor]:
    fmax = S.FP8_MAX[S.FP8_NAMES[dtype]]
    xf = x.float()
    if granularity == "row":
        amax = xf.abs().amax(dim=-1, keepdim=True) if x.shape[-1] else xf.new_zeros((*x.shape[:-1], 1))
    else:
        amax = xf.abs().amax() if x.numel() else xf.new_zeros(())
    scale = amax.clamp_min(S.MIN_AMAX) / fmax
    q = (xf / scale).clamp(-fmax, fmax).to(dtype)
    return q.contiguous(), scale.contiguous()


def prepare(geom, x):
    """The ``torch`` backend's runner ``(x) -> (x_fp8, scale)``."""
    granularity, dtype = geom.granularity, geom.dtype

    def run(x, *_):
        return quantize_fp8(x, granularity=granularity, dtype=dtype)

    return run
