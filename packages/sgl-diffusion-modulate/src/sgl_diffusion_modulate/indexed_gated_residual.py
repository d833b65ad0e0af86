"""``indexed_gated_residual`` / ``indexed_gated_residual_``: ``residual + gate_table[b, index] * update``, a
table row per token, bit-exact to the eager chain.

``gated_residual`` whose gate row for token ``(b, s)`` is ``gate_table[b, index[b, s]]``:
the same kernel (``_gated_residual_triton``), dtype rules and exact contract. How the index
is checked: ``_indexed.py``.
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Backend, Contract, InputDesc, Op, index_check_mode, is_compiling, same_rows

from . import _specs as S
from ._indexed import describe_indexed, validate_index
from .gated_residual import Geometry, chain_dtypes, empty_result, inplace_problem


def describe_indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
) -> InputDesc:
    """Validate the arguments of ``indexed_gated_residual`` / ``indexed_gated_residual_``."""
    others = {"update": update, "gate_table": gate_table}
    desc, r, lay, ix = describe_indexed("residual", residual, others, ("gate_table",), index)
    geom = None
    if r is not None:
        problems = desc.problems
        u = same_rows("update", update, r, problems)
        alias = inplace_problem(residual, r) if inplace else None
        if alias:
            problems.append(alias)
        if not problems:
            t1, out = chain_dtypes(residual, update, gate_table, inplace)
            geom = Geometry(r, u, lay["gate_table"], t1, out, inplace, index=ix)
    desc.info = {"geom": geom, "empty": isinstance(residual, torch.Tensor) and residual.numel() == 0}
    return desc


INDEXED_GATED_RESIDUAL = Op(
    "modulate.indexed_gated_residual",
    distribution=S.DISTRIBUTION,
    summary="residual + gate_table[b, index] * update (or in place), a table row per token, bit-exact",
    describe=describe_indexed_gated_residual,
    n_tensors=4,
    reference=".indexed_gated_residual_torch:indexed_gated_residual",
    backends=[
        Backend("triton", "._gated_residual_triton", S.INDEXED_TRITON_CAPS, Contract.exact(), priority=10,
                notes=S.TRITON_NOTE + S.INDEX_NOTE, aot="indexed_aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".indexed_gated_residual_torch", S.INDEXED_TORCH_CAPS, Contract.exact(),
                notes=S.TORCH_NOTE + S.TORCH_INDEX_NOTE, executed_on=S.EXECUTED_TORCH),
    ],
    default_exact=True,
    empty=empty_result,
    bench=f"{S.BENCH}:indexed_gated_residual_cases",
)
_INPLACE = (("inplace", True),)


@INDEXED_GATED_RESIDUAL.entry
def indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor:
    """``residual + gate_table[b, index[b, s]] * update``, ``torch.equal`` to that eager chain (contract
    ``exact``; the pick written ``gate_table[torch.arange(B)[:, None], index]``).

    Same rounding and dtypes as ``gated_residual``: ``gate * update`` in ``promote(gate_table,
    update)``, the sum in ``promote(residual, t1)``.

    residual, update: ``[B, S, D]``, same shape, bf16 | fp16 | fp32, last dim contiguous, any
        row strides (each its own).
    gate_table: ``[B, K, D]``, ``[1, K, D]`` or ``[K, D]``, K >= 1, strided views allowed, last
        dim contiguous.
    index, check_index: as in :func:`indexed_scale_shift` (unchecked, an out-of-range token's
        output row is NaN).
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like residual.
    """
    if is_compiling():
        index_check_mode(check_index, INDEXED_GATED_RESIDUAL.id)
        return _custom_op(residual, update, gate_table, index, backend)
    plan = INDEXED_GATED_RESIDUAL.plan((residual, update, gate_table, index), backend)
    validate_index(index, gate_table.shape[-2], INDEXED_GATED_RESIDUAL.id, check_index)
    return plan(residual, update, gate_table, index)


@INDEXED_GATED_RESIDUAL.entry(options=dict(_INPLACE))
def indexed_gated_residual_(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor:
    """In place: ``residual += gate_table[b, index[b, s]] * update`` (eager ``residual.add_(...)``);
    returns residual.

    The sum is rounded to ``residual.dtype``; residual keeps its strides. A checked call that
    raises has not written anything; unchecked, an out-of-range token's row of residual
    becomes NaN.
    """
    if is_compiling():
        index_check_mode(check_index, INDEXED_GATED_RESIDUAL.id)
        _custom_op_inplace(residual, update, gate_table, index, backend)
        return residual
    plan = INDEXED_GATED_RESIDUAL.plan((residual, update, gate_table, index), backend, None, _INPLACE)
    validate_index(index, gate_table.shape[-2], INDEXED_GATED_RESIDUAL.id, check_index)
    return plan(residual, update, gate_table, index)


# ``inplace=True`` asks about ``indexed_gated_residual_``; never reads the index values
can_use_indexed_gated_residual = INDEXED_GATED_RESIDUAL.can_use
# the chain unguarded: raises on a bad index on CPU
indexed_gated_residual_reference = INDEXED_GATED_RESIDUAL.reference


def _fake(residual, update, gate_table, index, backend):
    INDEXED_GATED_RESIDUAL.validate(residual, update, gate_table, index)
    out = chain_dtypes(residual, update, gate_table, False)[1]
    return torch.empty(residual.shape, dtype=out, device=residual.device)


def _fake_inplace(residual, update, gate_table, index, backend):
    INDEXED_GATED_RESIDUAL.validate(residual, update, gate_table, index, options=_INPLACE)


_custom_op = INDEXED_GATED_RESIDUAL.custom_op(
    "indexed_gated_residual", fake=_fake,
    schema="(Tensor residual, Tensor update, Tensor gate_table, Tensor index, str? backend) -> Tensor",
)
_custom_op_inplace = INDEXED_GATED_RESIDUAL.custom_op(
    "indexed_gated_residual_", fake=_fake_inplace, options=dict(_INPLACE), mutates_args=("residual",),
    schema="(Tensor(a!) residual, Tensor update, Tensor gate_table, Tensor index, str? backend) -> ()",
)
