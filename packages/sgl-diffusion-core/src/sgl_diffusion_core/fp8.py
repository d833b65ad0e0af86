"""FP8 quantization in torch, written once: the definition of ``quantize_fp8`` (sgl-diffusion-quant)
and of the FP8 results of the row norms (sgl-diffusion-norm's ``out_dtype``).

Row-wise: ``amax = max|x|`` over the last dim in fp32, ``scale = max(amax, 1e-12) / fp8_max``,
``codes = clamp(x / scale, -fp8_max, fp8_max).to(fp8)`` (round to nearest, ties to even).
Tensor-wise: the same with one amax over the whole tensor. ``x ~= codes.float() * scale``.
The formats' facts (``fp8_max`` and the rest) are in :mod:`sgl_diffusion_core.vendor`.
"""

from __future__ import annotations

import torch

from . import vendor


def quantize_fp8_torch(x: torch.Tensor, dtype: torch.dtype,
                       granularity: str = "row") -> tuple[torch.Tensor, torch.Tensor]:
    """``(codes, scale)`` of ``x`` in FP8 ``dtype``: scale ``[..., 1]`` (``"row"``) or ``[]`` (``"tensor"``), fp32."""
    fmax = vendor.FP8_MAX[str(dtype).removeprefix("torch.")]
    xf = x.float()
    if granularity == "row":
        amax = xf.abs().amax(dim=-1, keepdim=True) if x.shape[-1] else xf.new_zeros((*x.shape[:-1], 1))
    else:
        amax = xf.abs().amax() if x.numel() else xf.new_zeros(())
    # IEEE division on every device: ATen divides by a Python scalar as a multiplication by its
    # reciprocal on CUDA (one fp32 ulp off for most amax); a 0-dim tensor on x's device is divided
    scale = amax.clamp_min(vendor.FP8_MIN_AMAX) / amax.new_full((), fmax)
    return (xf / scale).clamp(-fmax, fmax).to(dtype).contiguous(), scale.contiguous()
