# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__

def silu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...

def gelu_tanh(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def gelu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...

def silu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def gelu_tanh_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def gelu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...

def silu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...

def gelu_tanh_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...

def gelu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...

def can_use_silu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def silu_reference(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor: ...

def can_use_gelu_tanh(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def gelu_tanh_reference(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_gelu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def gelu_reference(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor: ...

def can_use_silu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def silu_and_mul_reference(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_gelu_tanh_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def gelu_tanh_and_mul_reference(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_gelu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def gelu_and_mul_reference(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
) -> torch.Tensor: ...

def can_use_silu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def silu_mul_reference(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor: ...

def can_use_gelu_tanh_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def gelu_tanh_mul_reference(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor: ...

def can_use_gelu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...

def gelu_mul_reference(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
) -> torch.Tensor: ...

__all__ = [
    "__version__",
    "can_use_gelu",
    "can_use_gelu_and_mul",
    "can_use_gelu_mul",
    "can_use_gelu_tanh",
    "can_use_gelu_tanh_and_mul",
    "can_use_gelu_tanh_mul",
    "can_use_silu",
    "can_use_silu_and_mul",
    "can_use_silu_mul",
    "gelu",
    "gelu_and_mul",
    "gelu_and_mul_reference",
    "gelu_mul",
    "gelu_mul_reference",
    "gelu_reference",
    "gelu_tanh",
    "gelu_tanh_and_mul",
    "gelu_tanh_and_mul_reference",
    "gelu_tanh_mul",
    "gelu_tanh_mul_reference",
    "gelu_tanh_reference",
    "silu",
    "silu_and_mul",
    "silu_and_mul_reference",
    "silu_mul",
    "silu_mul_reference",
    "silu_reference",
]
