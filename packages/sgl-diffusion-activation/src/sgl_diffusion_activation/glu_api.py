"""The GLU family: ``act(a) * b`` for silu, gelu_tanh and gelu, packed or split. Public entry points.

Packed (``silu_and_mul(x)``): ``x`` is ``[..., 2*D]``, the output of one fused linear, with
``a = x[..., :D]`` and ``b = x[..., D:]``. Split (``silu_mul(a, b)``): two tensors.
Kernels live in ``glu_triton.py`` (contract ``close``), the eager chains in ``glu_torch.py``
(the ``torch`` backend, ``exact``).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc

from .common import ElementwiseOp
from .geometry import describe_elementwise


def describe_glu_packed(x: torch.Tensor, *, bias: torch.Tensor | None = None,
                        out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``*_and_mul`` and describe them for backend selection."""
    return describe_elementwise({"x": x}, bias=bias, out=out, packed=True)


def describe_glu_split(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None) -> InputDesc:
    """Validate the arguments of ``*_mul`` and describe them for backend selection."""
    if b is None:
        desc = describe_elementwise({"a": a}, out=out)
        desc.problems.append("b is required (got None)")
        return desc
    desc = describe_elementwise({"a": a, "b": b}, out=out)
    if not desc.problems and a.dtype != b.dtype:
        # eager rounds act(a) to a's dtype before a wider product: not a one-rounding fusion
        desc.problems.append(f"a ({a.dtype}) and b ({b.dtype}) must have one dtype")
        desc.info["geom"] = None
    return desc


def _packed(x, bias, out):
    return describe_glu_packed(x, bias=bias, out=out)


def _split(a, b, out):
    return describe_glu_split(a, b, out=out)


_OPS = {
    name: ElementwiseOp(name, _packed if name.endswith("_and_mul") else _split,
                        second="bias" if name.endswith("_and_mul") else "b", torch_module="glu_torch")
    for name in ("silu_and_mul", "gelu_tanh_and_mul", "gelu_and_mul", "silu_mul", "gelu_tanh_mul", "gelu_mul")
}
_silu_and_mul, _gelu_tanh_and_mul, _gelu_and_mul = (_OPS[n] for n in ("silu_and_mul", "gelu_tanh_and_mul",
                                                                       "gelu_and_mul"))
_silu_mul, _gelu_tanh_mul, _gelu_mul = (_OPS[n] for n in ("silu_mul", "gelu_tanh_mul", "gelu_mul"))

_COMMON = """
    out: optional preallocated ``[..., D]`` result in the result dtype (last dim contiguous, any
        row strides, e.g. a slice of a bigger buffer); returned.
    backend: ``None`` (best for the inputs), ``"triton"`` (contract ``close``: ``act(a) * b`` in
        fp32, rounded once; tolerances in the registry) or ``"torch"`` (the eager chain,
        ``exact``; eager rounds ``act(a)`` to the storage dtype before the product).
    exact: ``True`` asks for a result ``torch.equal`` to the eager chain (the torch backend);
        ``None``/``False``: the op's default, ``close``.

    Raises ``UnsupportedInputError`` naming every reason when no backend can serve the inputs.
    """
_PACKED = """
    x: ``[..., 2*D]`` bf16 | fp16 | fp32 (the output of one fused linear), last dim contiguous,
        any leading strides; ``a = x[..., :D]``, ``b = x[..., D:]``.
    bias: optional ``[2*D]`` (the bias of that linear), contiguous, added to x first.
""" + _COMMON
_SPLIT = """
    a, b: ``[..., D]``, same shape (no broadcasting) and dtype, bf16 | fp16 | fp32, last dim
        contiguous, each with its own leading strides.
""" + _COMMON


def silu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _silu_and_mul(x, bias, out, backend, exact)


def gelu_tanh_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                      backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _gelu_tanh_and_mul(x, bias, out, backend, exact)


def gelu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _gelu_and_mul(x, bias, out, backend, exact)


def silu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
             backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _silu_mul(a, b, out, backend, exact)


def gelu_tanh_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
                  backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _gelu_tanh_mul(a, b, out, backend, exact)


def gelu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
             backend: str | None = None, exact: bool | None = None) -> torch.Tensor:
    return _gelu_mul(a, b, out, backend, exact)


silu_and_mul.__doc__ = "``h = x + bias; F.silu(h[..., :D]) * h[..., D:]`` (SwiGLU).\n" + _PACKED
gelu_tanh_and_mul.__doc__ = "``h = x + bias; F.gelu(h[..., :D], approximate='tanh') * h[..., D:]`` (GeGLU).\n" + _PACKED
gelu_and_mul.__doc__ = "``h = x + bias; F.gelu(h[..., :D]) * h[..., D:]`` (GeGLU, erf form).\n" + _PACKED
silu_mul.__doc__ = "``F.silu(a) * b``.\n" + _SPLIT
gelu_tanh_mul.__doc__ = "``F.gelu(a, approximate='tanh') * b``.\n" + _SPLIT
gelu_mul.__doc__ = "``F.gelu(a) * b``.\n" + _SPLIT


def can_use_silu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                         backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``silu_and_mul`` can serve these arguments (never raises, never allocates)."""
    return _silu_and_mul.can_use(x, bias, out, backend, exact)


def can_use_gelu_tanh_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None,
                              out: torch.Tensor | None = None, backend: str | None = None,
                              exact: bool | None = None) -> bool:
    """Whether ``gelu_tanh_and_mul`` can serve these arguments (never raises, never allocates)."""
    return _gelu_tanh_and_mul.can_use(x, bias, out, backend, exact)


def can_use_gelu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                         backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``gelu_and_mul`` can serve these arguments (never raises, never allocates)."""
    return _gelu_and_mul.can_use(x, bias, out, backend, exact)


def can_use_silu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
                     backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``silu_mul`` can serve these arguments (never raises, never allocates)."""
    return _silu_mul.can_use(a, b, out, backend, exact)


def can_use_gelu_tanh_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
                          backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``gelu_tanh_mul`` can serve these arguments (never raises, never allocates)."""
    return _gelu_tanh_mul.can_use(a, b, out, backend, exact)


def can_use_gelu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None,
                     backend: str | None = None, exact: bool | None = None) -> bool:
    """Whether ``gelu_mul`` can serve these arguments (never raises, never allocates)."""
    return _gelu_mul.can_use(a, b, out, backend, exact)


def silu_and_mul_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The eager chain itself (the ``torch`` backend): the exact contract's definition."""
    return _silu_and_mul.reference(x, bias)


def gelu_tanh_and_mul_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The eager chain itself (the ``torch`` backend): the exact contract's definition."""
    return _gelu_tanh_and_mul.reference(x, bias)


def gelu_and_mul_reference(x: torch.Tensor, *, bias: torch.Tensor | None = None) -> torch.Tensor:
    """The eager chain itself (the ``torch`` backend): the exact contract's definition."""
    return _gelu_and_mul.reference(x, bias)


def silu_mul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The eager chain ``F.silu(a) * b`` itself (the ``torch`` backend)."""
    return _silu_mul.reference(a, b)


def gelu_tanh_mul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The eager chain ``F.gelu(a, approximate="tanh") * b`` itself (the ``torch`` backend)."""
    return _gelu_tanh_mul.reference(a, b)


def gelu_mul_reference(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """The eager chain ``F.gelu(a) * b`` itself (the ``torch`` backend)."""
    return _gelu_mul.reference(a, b)
