# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__
from .fp8_layer import FP8Linear as FP8Linear
from .fp8_layer import InputCodes as InputCodes

def fp8_linear(
    x_fp8: torch.Tensor,
    x_scale: torch.Tensor,
    w_fp8: torch.Tensor,
    w_scale: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    epilogue: str | None = None,
    residual: torch.Tensor | None = None,
    gate: torch.Tensor | None = None,
    accumulate: str = 'fp32',
    backend: str | None = None,
) -> torch.Tensor: ...

def quantize_fp8(
    x: torch.Tensor,
    *,
    granularity: str = 'row',
    dtype: torch.dtype = torch.float8_e4m3fn,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_fp8_linear(
    x_fp8: torch.Tensor,
    x_scale: torch.Tensor,
    w_fp8: torch.Tensor,
    w_scale: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    epilogue: str | None = None,
    residual: torch.Tensor | None = None,
    gate: torch.Tensor | None = None,
    accumulate: str = 'fp32',
    backend: str | None = None,
) -> bool: ...

def fp8_linear_reference(
    x_fp8: torch.Tensor,
    x_scale: torch.Tensor,
    w_fp8: torch.Tensor,
    w_scale: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    out_dtype: torch.dtype = torch.bfloat16,
    epilogue: str | None = None,
    residual: torch.Tensor | None = None,
    gate: torch.Tensor | None = None,
    accumulate: str = 'fp32',
) -> torch.Tensor: ...

def can_use_quantize_fp8(
    x: torch.Tensor,
    *,
    granularity: str = 'row',
    dtype: torch.dtype = torch.float8_e4m3fn,
    backend: str | None = None,
) -> bool: ...

def quantize_fp8_reference(
    x: torch.Tensor,
    *,
    granularity: str = 'row',
    dtype: torch.dtype = torch.float8_e4m3fn,
) -> tuple[torch.Tensor, torch.Tensor]: ...

__all__ = [
    "FP8Linear",
    "InputCodes",
    "__version__",
    "can_use_fp8_linear",
    "can_use_quantize_fp8",
    "fp8_linear",
    "fp8_linear_reference",
    "quantize_fp8",
    "quantize_fp8_reference",
]
