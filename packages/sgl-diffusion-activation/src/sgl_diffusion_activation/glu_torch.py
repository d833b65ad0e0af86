"""The eager chains of the GLU forms (the definition of their exact contract); also their ``torch``
backend.

Packed: ``h = x + bias`` (if any), then ``act(h[..., :D]) * h[..., D:]``. Split:
``act(a) * b``. Eager rounds ``x + bias`` and ``act(a)`` to the storage dtype before the
product (a fused ``close`` kernel does not: that is the difference its tolerance covers).
With ``out``, the result is copied into it and ``out`` is returned.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _finish(y: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return y.contiguous()
    out.copy_(y)
    return out


def silu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    h = x if bias is None else x + bias
    D = h.shape[-1] // 2
    return _finish(F.silu(h[..., :D]) * h[..., D:], out)


def gelu_tanh_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None,
                      out: torch.Tensor | None = None) -> torch.Tensor:
    h = x if bias is None else x + bias
    D = h.shape[-1] // 2
    return _finish(F.gelu(h[..., :D], approximate="tanh") * h[..., D:], out)


def gelu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None,
                 out: torch.Tensor | None = None) -> torch.Tensor:
    h = x if bias is None else x + bias
    D = h.shape[-1] // 2
    return _finish(F.gelu(h[..., :D]) * h[..., D:], out)


def silu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.silu(a) * b, out)


def gelu_tanh_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.gelu(a, approximate="tanh") * b, out)


def gelu_mul(a: torch.Tensor, b: torch.Tensor, *, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.gelu(a) * b, out)


_PACKED = {"silu": silu_and_mul, "gelu_tanh": gelu_tanh_and_mul, "gelu": gelu_and_mul}
_SPLIT = {"silu": silu_mul, "gelu_tanh": gelu_tanh_mul, "gelu": gelu_mul}


def prepare(geom, first, second, out):
    """The ``torch`` backend's runner: packed ``(x, bias, out)`` or split ``(a, b, out)``, the eager
    chain of ``geom.act``."""
    if geom.packed:
        packed = _PACKED[geom.act]

        def run(x, bias, out):
            return packed(x, bias=bias, out=out)
    else:
        split = _SPLIT[geom.act]

        def run(a, b, out):
            return split(a, b, out=out)

    return run
