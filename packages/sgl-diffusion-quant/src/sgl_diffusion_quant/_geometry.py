"""Validation shared by the quant ops (no backend, no Triton): the FP8 dtype argument, the row layout."""

from __future__ import annotations

import torch

from sgl_diffusion_core import vendor

from . import _specs as S


def fp8_name(dtype: object, problems: list[str], what: str = "dtype") -> str | None:
    """The format name of an FP8 dtype the ops store, or None (with the reason in ``problems``)."""
    name = S.FP8_NAMES.get(dtype) if isinstance(dtype, torch.dtype) else None
    if name is None:
        problems.append(f"{what} is {dtype}; expected one of {', '.join(f'torch.{n}' for n in S.FP8_DTYPES)}")
    return name


def row_stride(x: torch.Tensor) -> int | None:
    """The one stride between consecutive rows of ``x`` (``[..., D]``, last dim contiguous) when its
    leading dims collapse into a single dim, else None."""
    lead = [(n, s) for n, s in zip(x.shape[:-1], x.stride()[:-1]) if n != 1]
    if not lead:
        return x.shape[-1]
    for (_, s_out), (n_in, s_in) in zip(lead, lead[1:]):
        if s_out != s_in * n_in:
            return None
    return lead[-1][1]


def linear_device_problem(platform: str, arch: object, fmt: str) -> str | None:
    """Why a GPU cannot run an FP8 linear layer in format ``fmt``, or None (the CPU runs the reference)."""
    if vendor.fp8_native(platform, arch, fmt):
        return None
    if platform == "cuda":
        return (f"device sm_{arch} does not compute in {fmt} (FP8 GEMMs: float8_e4m3fn on sm_89 and newer); "
                "fp8_linear_reference computes the same result in fp32 on any device")
    if platform == "hip":
        return (f"device {arch} does not compute in {fmt} (gfx942: float8_e4m3fnuz, gfx950: float8_e4m3fn); "
                "fp8_linear_reference computes the same result in fp32 on any device")
    return f"fp8_linear runs on CUDA, ROCm and the CPU (reference), not on {platform}"
