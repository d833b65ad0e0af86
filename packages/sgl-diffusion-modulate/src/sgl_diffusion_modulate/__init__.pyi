# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from sgl_diffusion_core import IndexOutOfRangeError as IndexOutOfRangeError

from .__about__ import __version__ as __version__

def gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def gated_residual_(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor: ...

def indexed_gated_residual_(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor: ...

def indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor: ...

def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> torch.Tensor: ...

def can_use_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    inplace: bool = False,
    backend: str | None = None,
) -> bool: ...

def gated_residual_reference(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    inplace: bool = False,
) -> torch.Tensor: ...

def can_use_indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
    backend: str | None = None,
) -> bool: ...

def indexed_gated_residual_reference(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
) -> torch.Tensor: ...

def can_use_indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> bool: ...

def indexed_scale_shift_reference(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
) -> torch.Tensor: ...

def can_use_scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> bool: ...

def scale_shift_reference(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
) -> torch.Tensor: ...

__all__ = [
    "IndexOutOfRangeError",
    "__version__",
    "can_use_gated_residual",
    "can_use_indexed_gated_residual",
    "can_use_indexed_scale_shift",
    "can_use_scale_shift",
    "gated_residual",
    "gated_residual_",
    "gated_residual_reference",
    "indexed_gated_residual",
    "indexed_gated_residual_",
    "indexed_gated_residual_reference",
    "indexed_scale_shift",
    "indexed_scale_shift_reference",
    "scale_shift",
    "scale_shift_reference",
]
