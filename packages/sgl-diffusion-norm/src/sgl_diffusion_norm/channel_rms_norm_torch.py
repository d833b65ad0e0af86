"""The executable spec of ``channel_rms_norm``: the Wan-VAE RMS norm as an fp32 eager chain
(contract ``exact``: this chain *is* the definition).

::

    xf = x.float()
    y = F.normalize(xf, dim=1, eps=eps) * C**0.5 * gamma.float().view(C, 1, ...) [+ bias.float().view(C, 1, ...)]
    y = F.silu(y)            # when silu=True
    y = y.to(x.dtype)        # one rounding, in x's memory format (contiguous or channels_last(_3d))

The Wan VAE itself runs the same formula op by op in the storage dtype; in bf16 that chain
rounds after the norm, the division, each product, the sum and the SiLU, and lands up to ~8
bf16 units (2^-8 relative) away from the exact value (measured on random inputs), while this
chain is within one. The benchmarks' ``eager`` provider runs that storage-dtype chain.

Same signature as the public op; also the backend on every platform without a faster one,
through :func:`prepare`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._channels import output_like


def channel_view(t: torch.Tensor, x: torch.Tensor) -> torch.Tensor:
    """``[C]``, ``[C, 1, 1]`` or ``[C, 1, 1, 1]`` as a tensor broadcasting over x's dim 1."""
    return t.reshape(t.shape[0], *([1] * (x.dim() - 2)))


def channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
) -> torch.Tensor:
    C = x.shape[1]
    xf = x.float()
    y = F.normalize(xf, dim=1, eps=eps) * C**0.5 * channel_view(gamma.float(), x)
    if bias is not None:
        y = y + channel_view(bias.float(), x)
    if silu:
        y = F.silu(y)
    return output_like(x).copy_(y)


def prepare(geom, x, gamma, bias):
    """The ``torch`` backend's runner ``(x, gamma, bias, eps, silu)``: the eager chain."""
    silu = geom.silu

    def run(x, gamma, bias, eps, _silu):
        return channel_rms_norm(x, gamma, bias, eps=eps, silu=silu)

    return run
