import torch

from sgl_diffusion_core import BitExactFusionGate

from .__about__ import __version__ as __version__

def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...
def can_use_ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
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
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> torch.Tensor: ...

# --- per-head and VAE norms (qk_norm, channel_rms_norm, group_norm_silu) ---
def qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...
def can_use_qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
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
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]: ...
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
def group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...
def can_use_group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
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
    eps: float = 1e-5,
    silu: bool = True,
) -> torch.Tensor: ...
# ---- row-norm family ----
def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...
def can_use_layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...
def layer_norm_reference(
    x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, *, eps: float = 1e-6
) -> torch.Tensor: ...
def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...
def can_use_rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...
def rms_norm_reference(
    x: torch.Tensor, weight: torch.Tensor | None = None, bias: torch.Tensor | None = None, *, eps: float = 1e-6
) -> torch.Tensor: ...
def rms_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor: ...
def can_use_rms_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool: ...
def rms_modulate_reference(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> torch.Tensor: ...
def exact_gate(op_id: str) -> BitExactFusionGate: ...
def gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = "layer",
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...
def can_use_gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = "layer",
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
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
    norm: str = "layer",
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> tuple[torch.Tensor, torch.Tensor]: ...

# ---- end of the row-norm family ----
