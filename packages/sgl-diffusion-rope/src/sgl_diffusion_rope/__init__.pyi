# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__

def apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...

def apply_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def rope_3d(
    x: torch.Tensor,
    grid_thw: tuple[int, int, int] | None = None,
    axes_dim: tuple[int, int, int] = (44, 42, 42),
    *,
    theta: float = 10000.0,
    pos_ids: torch.Tensor | None = None,
    interleaved: bool = True,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
    backend: str | None = None,
) -> torch.Tensor: ...

def qk_norm_rope(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    norm: str = 'rms',
    eps: float = 1e-06,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool | None = None,
    layout: str = 'bshd',
    out_layout: str | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def apply_rope_reference(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
) -> torch.Tensor: ...

def can_use_apply_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def apply_rope_qk_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_rope_3d(
    x: torch.Tensor,
    grid_thw: tuple[int, int, int] | None = None,
    axes_dim: tuple[int, int, int] = (44, 42, 42),
    *,
    theta: float = 10000.0,
    pos_ids: torch.Tensor | None = None,
    interleaved: bool = True,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
    backend: str | None = None,
) -> bool: ...

def rope_3d_reference(
    x: torch.Tensor,
    grid_thw: tuple[int, int, int] | None = None,
    axes_dim: tuple[int, int, int] = (44, 42, 42),
    *,
    theta: float = 10000.0,
    pos_ids: torch.Tensor | None = None,
    interleaved: bool = True,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = 'bshd',
) -> torch.Tensor: ...

def can_use_qk_norm_rope(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    norm: str = 'rms',
    eps: float = 1e-06,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool | None = None,
    layout: str = 'bshd',
    out_layout: str | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def qk_norm_rope_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    norm: str = 'rms',
    eps: float = 1e-06,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool | None = None,
    layout: str = 'bshd',
    out_layout: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

__all__ = [
    "__version__",
    "apply_rope",
    "apply_rope_qk",
    "apply_rope_qk_reference",
    "apply_rope_reference",
    "can_use_apply_rope",
    "can_use_apply_rope_qk",
    "can_use_qk_norm_rope",
    "can_use_rope_3d",
    "qk_norm_rope",
    "qk_norm_rope_reference",
    "rope_3d",
    "rope_3d_reference",
]
