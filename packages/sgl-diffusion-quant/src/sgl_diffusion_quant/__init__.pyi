# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__

def quantize_fp8(
    x: torch.Tensor,
    *,
    granularity: str = 'row',
    dtype: torch.dtype = torch.float8_e4m3fn,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

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
    "__version__",
    "can_use_quantize_fp8",
    "quantize_fp8",
    "quantize_fp8_reference",
]
