"""The executable spec of ``qk_norm``: the eager PyTorch chain, op by op (contract ``exact``).

RMS (the diffusers ``RMSNorm`` chain, with the output kept in ``x.dtype``)::

    n = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)   # fp32
    weight is None:            y = n.to(x.dtype)
    weight bf16 / fp16:        y = (n.to(weight.dtype) * weight).to(x.dtype)
    weight fp32:               y = (n * weight).to(x.dtype)

(diffusers returns ``weight.dtype`` / fp32 in the last two cases; the trailing cast, a no-op
when ``weight.dtype == x.dtype``, keeps q and k in their own dtype so ``inplace`` is possible.)

Layer: ``y = F.layer_norm(x, (Dh,), weight, None, eps)`` (with ``weight`` cast to ``x.dtype``
first when the dtypes differ: eager ``layer_norm`` wants one dtype on every platform).

Same signature as the public op; also the backend on every platform without a faster one
(CPU, MPS, XPU), through :func:`prepare`.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F


def rms_chain(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    n = x * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + eps)
    if weight is None:
        return n.to(x.dtype)
    if weight.dtype in (torch.float16, torch.bfloat16):
        n = n.to(weight.dtype)
    return (n * weight).to(x.dtype)


def layer_chain(x: torch.Tensor, weight: torch.Tensor | None, eps: float) -> torch.Tensor:
    if weight is not None and weight.dtype != x.dtype:
        weight = weight.to(x.dtype)
    return F.layer_norm(x, (x.shape[-1],), weight, None, eps)


def qk_norm(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None = None,
    k_weight: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    inplace: bool = False,
) -> tuple[torch.Tensor, torch.Tensor]:
    chain = rms_chain if norm == "rms" else layer_chain
    qo = chain(q, q_weight, eps)
    ko = chain(k, k_weight, eps)
    if inplace:
        q.copy_(qo)
        k.copy_(ko)
        return q, k
    return qo.contiguous(), ko.contiguous()


def prepare(geom, q, k, q_weight, k_weight):
    """The ``torch`` backend's runner ``(q, k, q_weight, k_weight, norm, eps)``: the eager chain."""
    norm, inplace = geom.norm, geom.inplace

    def run(q, k, q_weight, k_weight, _norm, eps):
        return qk_norm(q, k, q_weight, k_weight, norm=norm, eps=eps, inplace=inplace)

    return run
