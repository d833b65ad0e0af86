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
def can_use_silu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def silu_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor: ...
def gelu_tanh(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_gelu_tanh(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def gelu_tanh_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor: ...
def gelu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_gelu(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def gelu_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor: ...
def silu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_silu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def silu_and_mul_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor: ...
def gelu_tanh_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_gelu_tanh_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def gelu_tanh_and_mul_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor: ...
def gelu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_gelu_and_mul(
    x: torch.Tensor,
    *,
    bias: torch.Tensor | None = None,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def gelu_and_mul_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor: ...
def silu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_silu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def silu_mul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor: ...
def gelu_tanh_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_gelu_tanh_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def gelu_tanh_mul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor: ...
def gelu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> torch.Tensor: ...
def can_use_gelu_mul(
    a: torch.Tensor,
    b: torch.Tensor,
    *,
    out: torch.Tensor | None = None,
    backend: str | None = None,
    exact: bool | None = None,
) -> bool: ...
def gelu_mul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor: ...
