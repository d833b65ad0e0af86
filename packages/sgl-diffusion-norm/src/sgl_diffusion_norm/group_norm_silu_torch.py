"""The executable spec of ``group_norm_silu``: GroupNorm (+ SiLU) as an fp32 eager chain
(contract ``exact``: this chain *is* the definition).

::

    y = F.group_norm(x.float(), num_groups, weight.float(), bias.float(), eps)
    y = F.silu(y)            # when silu=True
    y = y.to(x.dtype)        # one rounding, in x's memory format (contiguous or channels_last(_3d))

The VAE's own chain ``F.silu(F.group_norm(x, ...))`` in bf16 rounds twice (after the norm and
after the SiLU); it is the benchmarks' ``eager`` provider and stays within the ``close``
tolerance of this chain (tested). Same signature as the public op; also the backend on every
platform without a faster one, through :func:`prepare`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F

from ._channels import output_like


def group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
) -> torch.Tensor:
    y = F.group_norm(x.float(), num_groups, None if weight is None else weight.float(),
                     None if bias is None else bias.float(), eps)
    if silu:
        y = F.silu(y)
    return output_like(x).copy_(y)


def prepare(geom, x, weight, bias):
    """The ``torch`` backend's runner ``(x, weight, bias, num_groups, eps, silu)``: the eager chain."""
    G, silu = geom.G, geom.silu

    def run(x, weight, bias, _num_groups, eps, _silu):
        return group_norm_silu(x, G, weight, bias, eps=eps, silu=silu)

    return run
