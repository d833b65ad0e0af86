"""The eager chains of the GLU family (the definition of their exact contract); also the CPU backend.

Packed: ``h = x + bias`` (if any), then ``act(h[..., :D]) * h[..., D:]``. Split:
``act(a) * b``. Eager rounds ``x + bias`` and ``act(a)`` to the storage dtype before the
product (a fused ``close`` kernel does not: that is the difference its tolerance covers).
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

_ACTS = {
    "silu": F.silu,
    "gelu_tanh": lambda t: F.gelu(t, approximate="tanh"),
    "gelu": F.gelu,
}


def _finish(y: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return y.contiguous()
    out.copy_(y)
    return out


def _packed(act: str):
    f = _ACTS[act]

    def fn(x: torch.Tensor, bias: torch.Tensor | None = None, out: torch.Tensor | None = None, *,
           geom: object = None) -> torch.Tensor:
        h = x if bias is None else x + bias
        D = h.shape[-1] // 2
        return _finish(f(h[..., :D]) * h[..., D:], out)

    fn.__name__ = fn.__qualname__ = f"{act}_and_mul"
    return fn


def _split(act: str):
    f = _ACTS[act]

    def fn(a: torch.Tensor, b: torch.Tensor, out: torch.Tensor | None = None, *,
           geom: object = None) -> torch.Tensor:
        return _finish(f(a) * b, out)

    fn.__name__ = fn.__qualname__ = f"{act}_mul"
    return fn


silu_and_mul = _packed("silu")
gelu_tanh_and_mul = _packed("gelu_tanh")
gelu_and_mul = _packed("gelu")
silu_mul = _split("silu")
gelu_tanh_mul = _split("gelu_tanh")
gelu_mul = _split("gelu")
