"""The eager chains of the GLU forms (the definition of their exact contract); also their ``torch``
backend.

Packed: ``h = x + bias`` (if any), then ``act(h[..., :D]) * h[..., D:]``. Split:
``act(a) * b``. Eager rounds ``x + bias`` and ``act(a)`` to the storage dtype before the
product (a fused ``close`` kernel does not: that is the difference its tolerance covers).
With ``out``, the result is copied into it and ``out`` is returned. An FP8 ``out_dtype``
(``silu_and_mul``, ``gelu_tanh_and_mul``): that result, then core's row-wise FP8 quantization
(``quantize_fp8_torch``), returned as ``(codes, scale)``.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from sgl_diffusion_core import quantize_fp8_torch


def _finish(y: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return y.contiguous()
    out.copy_(y)
    return out


def _finish_or_quantize(y: torch.Tensor, out: torch.Tensor | None, out_dtype: torch.dtype | None):
    return _finish(y, out) if out_dtype is None else quantize_fp8_torch(y, out_dtype)


def silu_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                 out_dtype: torch.dtype | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    h = x if bias is None else x + bias
    D = h.shape[-1] // 2
    return _finish_or_quantize(F.silu(h[..., :D]) * h[..., D:], out, out_dtype)


def gelu_tanh_and_mul(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
                      out_dtype: torch.dtype | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    h = x if bias is None else x + bias
    D = h.shape[-1] // 2
    return _finish_or_quantize(F.gelu(h[..., :D], approximate="tanh") * h[..., D:], out, out_dtype)


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
    if geom.fp8 is not None:  # packed GLU forms only
        packed, fp8 = _PACKED[geom.act], geom.fp8_dtype

        def run_fp8(x, bias, out, *_):
            return quantize_fp8_torch(packed(x, bias=bias), fp8)

        return run_fp8
    if geom.packed:
        packed = _PACKED[geom.act]

        def run(x, bias, out):
            return packed(x, bias=bias, out=out)
    else:
        split = _SPLIT[geom.act]

        def run(a, b, out):
            return split(a, b, out=out)

    return run
