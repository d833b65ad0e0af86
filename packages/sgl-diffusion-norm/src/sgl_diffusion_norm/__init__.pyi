# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from sgl_diffusion_core import BitExactFusionGate

from .__about__ import __version__ as __version__

def channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...

def gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = 'layer',
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor] | tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-05,
    silu: bool = True,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...

def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-06,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...

def exact_gate(
    op_id: str,
) -> BitExactFusionGate: ...

def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = 'rms',
    eps: float = 1e-06,
    inplace: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def rms_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-06,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...

def can_use_channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def channel_rms_norm_reference(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
) -> torch.Tensor: ...

def can_use_gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = 'layer',
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def gated_residual_norm_modulate_reference(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = 'layer',
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
) -> tuple[torch.Tensor, torch.Tensor] | tuple[torch.Tensor, torch.Tensor, torch.Tensor]: ...

def can_use_group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-05,
    silu: bool = True,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def group_norm_silu_reference(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-05,
    silu: bool = True,
) -> torch.Tensor: ...

def can_use_layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-06,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def layer_norm_reference(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-06,
) -> torch.Tensor: ...

def can_use_ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def ln_modulate_reference(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = 'rms',
    eps: float = 1e-06,
    inplace: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def qk_norm_reference(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = 'rms',
    eps: float = 1e-06,
    inplace: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_rms_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def rms_modulate_reference(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-06,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]: ...

def can_use_rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-06,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...

def rms_norm_reference(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-06,
) -> torch.Tensor: ...

__all__ = [
    "__version__",
    "can_use_channel_rms_norm",
    "can_use_gated_residual_norm_modulate",
    "can_use_group_norm_silu",
    "can_use_layer_norm",
    "can_use_ln_modulate",
    "can_use_qk_norm",
    "can_use_rms_modulate",
    "can_use_rms_norm",
    "channel_rms_norm",
    "channel_rms_norm_reference",
    "exact_gate",
    "gated_residual_norm_modulate",
    "gated_residual_norm_modulate_reference",
    "group_norm_silu",
    "group_norm_silu_reference",
    "layer_norm",
    "layer_norm_reference",
    "ln_modulate",
    "ln_modulate_reference",
    "qk_norm",
    "qk_norm_reference",
    "rms_modulate",
    "rms_modulate_reference",
    "rms_norm",
    "rms_norm_reference",
]
