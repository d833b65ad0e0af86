import torch

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
