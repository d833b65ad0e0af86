"""FP8 quantization in torch, written once: the definition of ``quantize_fp8`` (sgl-diffusion-quant)
and of the FP8 results of the ops that feed a linear layer (the ``out_dtype`` of the modulated
norms and of the activations), with what those ops share: the layout tags their descriptions carry,
the tolerance of one FP8 code, and the check of an ``out_dtype`` argument.

Row-wise: ``amax = max|x|`` over the last dim in fp32, ``scale = max(amax, 1e-12) / fp8_max``,
``codes = clamp(x / scale, -fp8_max, fp8_max).to(fp8)`` (round to nearest, ties to even).
Tensor-wise: the same with one amax over the whole tensor. ``x ~= codes.float() * scale``.
The formats' facts (``fp8_max`` and the rest) are in :mod:`sgl_diffusion_core.vendor`.
"""

from __future__ import annotations

import torch

from . import vendor
from .platform import device_arch, tensor_platform

# An op's description tags an FP8 result with one of these, so that only the backends that write
# FP8 serve it: a kernel in the formats the device stores (FP8_OUT), the torch reference in both.
FP8_OUT = "fp8-out"
FP8_OUT_FOREIGN = "fp8-out (a format this device does not store)"
# One FP8 code either side, per format: (the subnormal step, the relative spacing of 3 mantissa bits);
# a close FP8 result's tolerance adds this to the tolerance of the values it quantizes.
FP8_TOL: dict[str, tuple[float, float]] = {fmt: (vendor.FP8_TINY[fmt], 2.0**-3) for fmt in vendor.FP8_MAX}


def device_fp8_dtype(device: torch.device | str) -> torch.dtype | None:
    """The FP8 format a device stores and multiplies: ``float8_e4m3fn`` on NVIDIA sm_89+, AMD gfx950
    and the CPU (torch, the interpreter); ``float8_e4m3fnuz`` on AMD gfx942; None elsewhere."""
    device = torch.device(device)
    if device.type == "cuda" and device.index is None:
        device = torch.device("cuda", torch.cuda.current_device())
    platform = tensor_platform(device)
    arch = device_arch(platform, device.index) if platform in ("cuda", "hip") else None
    for fmt in (vendor.E4M3FN, vendor.E4M3FNUZ):
        if vendor.fp8_native(platform, arch, fmt):
            return getattr(torch, fmt)
    return None


def fp8_result_format(op: str, out_dtype: object, platform: str | None, arch: object,
                      problems: list[str]) -> tuple[str | None, str | None]:
    """``(format, layout tag)`` of an op's ``out_dtype`` argument: ``(None, None)`` for the default
    result; a problem naming the formats when ``out_dtype`` is not an FP8 dtype."""
    if out_dtype is None:
        return None, None
    fmt = str(out_dtype).removeprefix("torch.")
    if fmt not in vendor.FP8_MAX:
        problems.append(f"out_dtype={out_dtype} is not supported: {op} writes FP8 (torch.float8_e4m3fn, "
                        "torch.float8_e4m3fnuz) or its default dtype (None)")
        return None, None
    return fmt, FP8_OUT if vendor.fp8_native(platform or "", arch, fmt) else FP8_OUT_FOREIGN


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
