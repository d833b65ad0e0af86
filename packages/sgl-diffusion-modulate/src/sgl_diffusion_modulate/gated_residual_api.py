"""``gated_residual``: ``residual + gate * update``, bit-exact to the eager chain. Public entry points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    ModLayout,
    RowGeometry,
    describe_rows,
    is_compiling,
    mod_layout,
    register_custom_op,
    resolve_target,
    rows_disjoint,
    same_rows,
    select_impl,
)

if TYPE_CHECKING:
    from .indexed_api import IndexLayout

OP = "modulate.gated_residual"


@dataclass(frozen=True)
class Geometry:
    residual: RowGeometry
    update: RowGeometry
    gate: ModLayout | None
    t1: torch.dtype  # gate * update
    out: torch.dtype  # residual + t1 (residual's own dtype when in place)
    inplace: bool
    # indexed_gated_residual: where token (b, s) finds its gate-table row (gate: ss = stride
    # between table rows, L = 1)
    index: IndexLayout | None = None


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


def _empty(geom: Geometry):
    def run(residual, update, gate):
        if geom.inplace:
            return residual
        return torch.empty(geom.residual.shape, dtype=geom.out, device=residual.device)

    return run


def _bind(fn, geom: Geometry):
    def run(residual, update, gate):
        return fn(residual, update, gate, inplace=geom.inplace, geom=geom)

    return run


def _describe_out(residual, update, gate):
    return describe_gated_residual(residual, update, gate)


def _describe_inplace(residual, update, gate):
    return describe_gated_residual(residual, update, gate, inplace=True)


_dispatch = Dispatcher(OP, _describe_out, bind=_bind, empty=_empty)
_dispatch_inplace = Dispatcher(OP, _describe_inplace, bind=_bind, empty=_empty)


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
    return _dispatch.plan((residual, update, gate), backend)(residual, update, gate)


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
    return _dispatch_inplace.plan((residual, update, gate), backend)(residual, update, gate)


def can_use_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None = None,
    *,
    inplace: bool = False,
    backend: str | None = None,
) -> bool:
    """Whether ``gated_residual`` (``inplace=True``: ``gated_residual_``) can serve these arguments."""
    try:
        select_impl(OP, describe_gated_residual(residual, update, gate, inplace=inplace), backend=backend)
        return True
    except Exception:
        return False


def gated_residual_reference(
    residual: torch.Tensor, update: torch.Tensor, gate: torch.Tensor | None = None, *, inplace: bool = False
) -> torch.Tensor:
    """The eager chain itself (the ``torch`` backend): the definition of the exact contract."""
    fn = resolve_target("sgl_diffusion_modulate.gated_residual_torch:gated_residual")
    return fn(residual, update, gate, inplace=inplace)


def _op_impl(residual, update, gate, backend):
    return _dispatch.plan((residual, update, gate), backend)(residual, update, gate)


def _op_fake(residual, update, gate, backend):
    _dispatch.validate(residual, update, gate)
    return torch.empty(residual.shape, dtype=chain_dtypes(residual, update, gate, False)[1], device=residual.device)


def _op_inplace_impl(residual, update, gate, backend):
    _dispatch_inplace.plan((residual, update, gate), backend)(residual, update, gate)


def _op_inplace_fake(residual, update, gate, backend):
    _dispatch_inplace.validate(residual, update, gate)


_custom_op = register_custom_op(
    "gated_residual",
    _op_impl,
    _op_fake,
    schema="(Tensor residual, Tensor update, Tensor? gate, str? backend) -> Tensor",
)
_custom_op_inplace = register_custom_op(
    "gated_residual_",
    _op_inplace_impl,
    _op_inplace_fake,
    schema="(Tensor(a!) residual, Tensor update, Tensor? gate, str? backend) -> ()",
    mutates_args=("residual",),
)
