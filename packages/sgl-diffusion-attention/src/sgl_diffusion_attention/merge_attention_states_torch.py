"""The definition of ``merge_attention_states`` (its ``torch`` backend and reference).

``lse = logaddexp(lse1, lse2)``; ``o = o1 * exp(lse1 - lse) + o2 * exp(lse2 - lse)`` in fp32,
rounded once to o1's dtype. A part whose lse is -inf (an empty key set) has weight 0 and its
output is not read into the sum (so its values, NaN or not, never reach the result); both
-inf give output 0 and lse -inf.
"""

from __future__ import annotations

import torch


def _per_token(w: torch.Tensor, layout: str) -> torch.Tensor:
    """An lse-shaped tensor (``[B, H, S]``, varlen ``[H, T]``) lined up with the o layout, plus a head-dim axis."""
    if layout == "bshd":
        return w.transpose(1, 2)[..., None]
    if layout == "bhsd":
        return w[..., None]
    return w.transpose(0, 1)[..., None]


def merge_attention_states(
    o1: torch.Tensor, lse1: torch.Tensor, o2: torch.Tensor, lse2: torch.Tensor, *, layout: str = "bshd"
) -> tuple[torch.Tensor, torch.Tensor]:
    neg_inf = float("-inf")
    lse = torch.logaddexp(lse1, lse2)
    terms = []
    for o, part in ((o1, lse1), (o2, lse2)):
        w = torch.where(part == neg_inf, 0.0, torch.exp(part - lse))
        wt = _per_token(w, layout)
        terms.append(torch.where(wt == 0, 0.0, wt * o.float()))
    return (terms[0] + terms[1]).to(o1.dtype).contiguous(), lse.contiguous()


def prepare(geom, o1, lse1, o2, lse2):
    """The ``torch`` backend's runner: the definition itself."""
    layout = geom.layout

    def run(o1, lse1, o2, lse2, *_):
        return merge_attention_states(o1, lse1, o2, lse2, layout=layout)

    return run
