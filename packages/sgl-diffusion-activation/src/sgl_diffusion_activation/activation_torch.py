"""The eager chains of the pointwise activations (the definition of their exact contract); also
their ``torch`` backend.

``F.silu(x + bias)``, ``F.gelu(x + bias, approximate="tanh")``, ``F.gelu(x + bias)``: eager
rounds ``x + bias`` to the promoted storage dtype before the activation, and the
activation (fp32 opmath on CUDA) once after it. With ``out``, the result is copied into it and
``out`` is returned. An FP8 ``out_dtype`` (``gelu_tanh``): that result, then core's row-wise FP8
quantization (``quantize_fp8_torch``), returned as ``(codes, scale)``.
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


def silu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.silu(x if bias is None else x + bias), out)


def gelu_tanh(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None,
              out_dtype: torch.dtype | None = None) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    y = F.gelu(x if bias is None else x + bias, approximate="tanh")
    return _finish(y, out) if out_dtype is None else quantize_fp8_torch(y, out_dtype)


def gelu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.gelu(x if bias is None else x + bias), out)


_CHAINS = {"silu": silu, "gelu_tanh": gelu_tanh, "gelu": gelu}


def prepare(geom, x, bias, out):
    """The ``torch`` backend's runner ``(x, bias, out) -> result``: the eager chain of ``geom.act``."""
    chain = _CHAINS[geom.act]
    if geom.fp8 is not None:
        fp8 = geom.fp8_dtype

        def run_fp8(x, bias, out, *_):
            return quantize_fp8_torch(chain(x, bias=bias), fp8)

        return run_fp8

    def run(x, bias, out):
        return chain(x, bias=bias, out=out)

    return run
