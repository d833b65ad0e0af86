"""The eager chains of the pointwise activations (the definition of their exact contract); also
their ``torch`` backend.

``F.silu(x + bias)``, ``F.gelu(x + bias, approximate="tanh")``, ``F.gelu(x + bias)``: eager
rounds ``x + bias`` to the promoted storage dtype before the activation, and the
activation (fp32 opmath on CUDA) once after it. With ``out``, the result is copied into it and
``out`` is returned.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def _finish(y: torch.Tensor, out: torch.Tensor | None) -> torch.Tensor:
    if out is None:
        return y.contiguous()
    out.copy_(y)
    return out


def silu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.silu(x if bias is None else x + bias), out)


def gelu_tanh(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.gelu(x if bias is None else x + bias, approximate="tanh"), out)


def gelu(x: torch.Tensor, *, bias: torch.Tensor | None = None, out: torch.Tensor | None = None) -> torch.Tensor:
    return _finish(F.gelu(x if bias is None else x + bias), out)


_CHAINS = {"silu": silu, "gelu_tanh": gelu_tanh, "gelu": gelu}


def prepare(geom, x, bias, out):
    """The ``torch`` backend's runner ``(x, bias, out) -> result``: the eager chain of ``geom.act``."""
    chain = _CHAINS[geom.act]

    def run(x, bias, out):
        return chain(x, bias=bias, out=out)

    return run
