import torch

from .__about__ import __version__ as __version__

def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
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
    x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor | None = None, *, scale_offset: float = 1.0
) -> torch.Tensor: ...
def gated_residual(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, backend: str | None = None
) -> torch.Tensor: ...
def gated_residual_(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, backend: str | None = None
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
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, inplace: bool = False
) -> torch.Tensor: ...
