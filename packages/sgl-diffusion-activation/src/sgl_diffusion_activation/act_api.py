"""Unary activations ``silu``, ``gelu_tanh``, ``gelu`` with an optional fused bias. Public entry points.

Kernels live in ``act_triton.py`` (contract ``close``: fp32 math, one rounding), the eager
chains in ``act_torch.py`` (the ``torch`` backend, contract ``exact``).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc

from .common import ElementwiseOp
from .geometry import describe_elementwise


def describe_unary(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``silu`` / ``gelu_tanh`` / ``gelu`` and describe them for backend selection."""
    return describe_elementwise({"x": x}, bias=bias, out=out)


def _describe(x, bias, out):
    return describe_unary(x, bias=bias, out=out)


_silu = ElementwiseOp("silu", _describe, second="bias", torch_module="act_torch")
_gelu_tanh = ElementwiseOp("gelu_tanh", _describe, second="bias", torch_module="act_torch")
_gelu = ElementwiseOp("gelu", _describe, second="bias", torch_module="act_torch")

_ARGS = """
    x: ``[..., D]`` bf16 | fp16 | fp32, last dim contiguous, any leading strides (views).
    bias: optional ``[D]``, contiguous, any float dtype (the result has eager's promoted dtype).
    out: optional preallocated result (``x``'s shape and the result dtype; last dim contiguous,
        any row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: fp32 math, one
        rounding, tolerances in the registry) or ``"torch"`` (the eager chain, ``exact``).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """


def silu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
         backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _silu(x, bias, out, backend, exact)


def gelu_tanh(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
              backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _gelu_tanh(x, bias, out, backend, exact)


def gelu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
         backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _gelu(x, bias, out, backend, exact)


silu.__doc__ = "``F.silu(x + bias)``: ``s * sigmoid(s)`` with ``s = x + bias``.\n" + _ARGS
gelu_tanh.__doc__ = ("``F.gelu(x + bias, approximate='tanh')``: ``0.5 * s * (1 + tanh(sqrt(2/pi) * (s + 0.044715 "
                     "* s**3)))``.\n" + _ARGS)
gelu.__doc__ = "``F.gelu(x + bias)``: ``0.5 * s * (1 + erf(s / sqrt(2)))``.\n" + _ARGS


def can_use_silu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``silu`` can serve these arguments (never raises, never allocates)."""
    return _silu.can_use(x, bias, out, backend, exact)


def can_use_gelu_tanh(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                      backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``gelu_tanh`` can serve these arguments (never raises, never allocates)."""
    return _gelu_tanh.can_use(x, bias, out, backend, exact)


def can_use_gelu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``gelu`` can serve these arguments (never raises, never allocates)."""
    return _gelu.can_use(x, bias, out, backend, exact)


def silu_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The eager chain ``F.silu(x + bias)`` itself (the ``torch`` backend): the exact contract's definition."""
    return _silu.reference(x, bias)


def gelu_tanh_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The eager chain ``F.gelu(x + bias, approximate="tanh")`` itself (the ``torch`` backend)."""
    return _gelu_tanh.reference(x, bias)


def gelu_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The eager chain ``F.gelu(x + bias)`` itself (the ``torch`` backend)."""
    return _gelu.reference(x, bias)
