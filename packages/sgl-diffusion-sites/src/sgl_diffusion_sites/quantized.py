"""``attention="int8"`` / ``"fp8"``: 8-bit attention after dense first steps.

Every mounted attention call of the model runs ``sgl_diffusion_attention.quantized_attention`` (``"int8"``:
int8 q and k, p @ v in v's dtype; ``"fp8"``: e4m3 q, k, p and v) with the call's ``kv_lens``, except in the
first ``dense_steps`` denoising steps (counted as ``steps`` does) and in the blocks ``dense_layers`` names,
which run dense attention: the peers found 8-bit attention needs the first steps dense. Where the op cannot
serve a call (a head dim or device its kernel refuses: its ``torch`` definition serves elsewhere) the dense
path runs.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

import sgl_diffusion_attention as _attention

from .steps import StepClock, check_dense_args

OP = "attention.quantized_attention"

# attention= -> (qk, pv) of quantized_attention
FORMATS = {"int8": ("int8", "bf16"), "fp8": ("fp8", "fp8")}


@dataclass
class Quantized(StepClock):
    """The policy and the per-run state of one mounted model's 8-bit attention."""

    qk: str
    pv: str
    dense_steps: int
    dense_layers: frozenset[int]
    step: int = -1
    quantized_calls: int = 0
    dense_calls: int = 0
    _timestep: float | None = None

    def pre_hook(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        """The model's forward pre-hook: the step of this call."""
        self.count_step(args, kwargs)

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor,
               kv_lens: torch.Tensor | None) -> torch.Tensor | None:
        """8-bit attention of ``[B, S, H, Dh]`` q, k, v, or None where the dense path serves this call (a
        dense step, inputs the op cannot serve: it keeps its ``can_use`` verdict per call signature)."""
        if self.step < self.dense_steps:
            self.dense_calls += 1
            return None
        kw = {"kv_lens": kv_lens, "qk": self.qk, "pv": self.pv}
        if not _attention.can_use_quantized_attention(q, k, v, **kw):
            self.dense_calls += 1
            return None
        self.quantized_calls += 1
        return _attention.quantized_attention(q, k, v, **kw)


def policy_for(attention: str, dense_steps: object, dense_layers: object, notes: list[str]) -> Quantized:
    """The policy of ``attention="int8"`` / ``"fp8"``; ``ValueError`` for bad ``dense_*`` arguments."""
    check_dense_args(dense_steps, dense_layers)
    qk, pv = FORMATS[attention]
    notes.append(f"attention={attention!r}: quantized_attention(qk={qk!r}, pv={pv!r}) after {dense_steps} dense "
                 "step(s)" + (f"; blocks {sorted(dense_layers)} keep dense attention" if dense_layers else ""))
    return Quantized(qk, pv, dense_steps, frozenset(dense_layers))
