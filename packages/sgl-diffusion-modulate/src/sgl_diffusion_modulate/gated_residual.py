"""``gated_residual`` / ``gated_residual_``: ``residual + gate * update``, bit-exact to the eager chain.

Backends: ``_gated_residual_triton`` (shared with ``indexed_gated_residual``) and
``gated_residual_torch`` (the eager chain, the definition of the contract).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from sgl_diffusion_core import (
    Backend,
    Contract,
    InputDesc,
    ModLayout,
    Op,
    RowGeometry,
    describe_rows,
    is_compiling,
    mod_layout,
    rows_disjoint,
    same_rows,
)

from . import _specs as S


@dataclass(frozen=True)
class Geometry:
    residual: RowGeometry
    update: RowGeometry
    gate: ModLayout | None
    t1: torch.dtype  # gate * update
    out: torch.dtype  # residual + t1 (residual's own dtype when in place)
    inplace: bool
    # indexed_gated_residual: where token (b, s) finds its gate-table row (an
    # ``_indexed.IndexLayout``; gate: ss = stride between table rows, L = 1)
    index: Any = None


def chain_dtypes(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None, inplace: bool
) -> tuple[torch.dtype, torch.dtype]:
    """``(t1, out)``: the dtypes eager gives ``gate * update`` and the sum (residual's own in place)."""
    t1 = update.dtype if gate is None else torch.promote_types(gate.dtype, update.dtype)
    # eager `residual += t1` rounds to residual's dtype; allowed by torch's casting rules
    return t1, (residual.dtype if inplace else torch.promote_types(residual.dtype, t1))


def inplace_problem(residual: torch.Tensor, r: RowGeometry) -> str | None:
    """Why ``residual`` cannot be written in place (rows that alias), or None."""
    if rows_disjoint((r.B, r.S), (r.sb, r.ss), r.D):
        return None
    return (f"residual (strides {list(residual.stride())}) has rows that share memory (an expanded "
            "view?): an in-place write would alias itself")


def describe_gated_residual(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, inplace: bool = False
) -> InputDesc:
    """Validate the arguments of ``gated_residual`` / ``gated_residual_`` for backend selection."""
    desc, r = describe_rows("residual", residual, {"update": update, "gate": gate}, required=("update",))
    if r is None:
        return desc
    problems = desc.problems
    u = same_rows("update", update, r, problems)
    gl = mod_layout("gate", gate, r, problems) if gate is not None else None
    t1, out = chain_dtypes(residual, update, gate, inplace)
    alias = inplace_problem(residual, r) if inplace else None
    if alias:
        problems.append(alias)
    layouts = (gl.tag,) if gl is not None else ()
    desc.layouts = layouts
    desc.info = {"geom": Geometry(r, u, gl, t1, out, inplace) if not problems else None,
                 "empty": residual.numel() == 0}
    return desc


def empty_result(geom: Geometry):
    """The runner of an empty input: residual itself in place, else a new empty result."""

    def run(residual, *_):
        if geom.inplace:
            return residual
        return torch.empty(geom.residual.shape, dtype=geom.out, device=residual.device)

    return run


GATED_RESIDUAL = Op(
    "modulate.gated_residual",
    distribution=S.DISTRIBUTION,
    summary="residual + gate * update (or in place into residual), bit-exact to the eager chain",
    describe=describe_gated_residual,
    n_tensors=3,
    reference=".gated_residual_torch:gated_residual",
    backends=[
        Backend("triton", "._gated_residual_triton", S.TRITON_CAPS, Contract.exact(), priority=10,
                notes=S.TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".gated_residual_torch", S.TORCH_CAPS, Contract.exact(), notes=S.TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    default_exact=True,
    empty=empty_result,
    bench=f"{S.BENCH}:gated_residual_cases",
)
_INPLACE = (("inplace", True),)


@GATED_RESIDUAL.entry
def gated_residual(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, backend: str | None = None
) -> torch.Tensor:
    """``residual + gate * update``, ``torch.equal`` to that eager chain (contract ``exact``).

    ``gate * update`` is rounded to ``promote(gate, update)``, the sum to
    ``promote(residual, gate * update)`` (the result dtype); no fused multiply-add.

    residual, update: ``[B, S, D]`` or ``[N, D]``, same shape, bf16 | fp16 | fp32, last dim
        contiguous, any row strides (each its own).
    gate: per channel ``[D]``; per sample ``[B, D]`` / ``[B, 1, D]``; per token ``[B, S, D]``
        (strided views allowed); per frame ``[B, F, 1, D]`` with ``S = F * L``; or ``None``
        for a gate of 1 (``residual + update``).
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like residual.
    """
    if is_compiling():
        return _custom_op(residual, update, gate, backend)
    return GATED_RESIDUAL.plan((residual, update, gate), backend)(residual, update, gate)


@GATED_RESIDUAL.entry(options=dict(_INPLACE))
def gated_residual_(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, backend: str | None = None
) -> torch.Tensor:
    """In place: ``residual += gate * update`` (eager ``residual.add_(gate * update)``); returns residual.

    The sum is rounded to ``residual.dtype``. Same layouts as :func:`gated_residual`;
    residual keeps its strides.
    """
    if is_compiling():
        _custom_op_inplace(residual, update, gate, backend)
        return residual
    return GATED_RESIDUAL.plan((residual, update, gate), backend, None, _INPLACE)(residual, update, gate)


# ``inplace=True`` asks about ``gated_residual_``
can_use_gated_residual = GATED_RESIDUAL.can_use
gated_residual_reference = GATED_RESIDUAL.reference


def _fake(residual, update, gate, backend):
    GATED_RESIDUAL.validate(residual, update, gate)
    return torch.empty(residual.shape, dtype=chain_dtypes(residual, update, gate, False)[1], device=residual.device)


def _fake_inplace(residual, update, gate, backend):
    GATED_RESIDUAL.validate(residual, update, gate, options=_INPLACE)


_custom_op = GATED_RESIDUAL.custom_op(
    "gated_residual", fake=_fake,
    schema="(Tensor residual, Tensor update, Tensor? gate, str? backend) -> Tensor",
)
_custom_op_inplace = GATED_RESIDUAL.custom_op(
    "gated_residual_", fake=_fake_inplace, options=dict(_INPLACE), mutates_args=("residual",),
    schema="(Tensor(a!) residual, Tensor update, Tensor? gate, str? backend) -> ()",
)
