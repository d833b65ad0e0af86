"""Indexed modulation: each token picks its row of a ``[K, D]`` table. Public entry points.

``indexed_scale_shift`` and ``indexed_gated_residual`` / ``indexed_gated_residual_`` are
``scale_shift`` and ``gated_residual`` whose modulation row for token ``(b, s)`` is
``table[b, index[b, s]]`` (image-edit models such as Qwen-Image-Edit modulate reference
and target tokens differently this way). They share those ops' kernels, dtype rules and
exact contract.

Index validation, the one data-dependent input problem (see the README):
- eager calls check ``index`` with one device reduction (``torch.aminmax``, one host
  sync) and raise :class:`IndexOutOfRangeError` naming the offending range before any
  kernel runs. The range found is remembered for that tensor and version, so an
  unmodified index is reduced once, not on every call (``check_index="always"``: every
  call); ``check_index=False`` skips the check;
- under ``torch.compile`` and CUDA graph capture a host sync is not allowed, so there is
  no check: every backend reads table row 0 for an out-of-range token (never out of
  bounds) and writes NaN over that token's whole output row (into ``residual`` itself for
  the in-place form). A valid token's result is the same bits either way.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    ModLayout,
    RowGeometry,
    check_index_range,
    describe_rows,
    index_check_mode,
    is_compiling,
    register_custom_op,
    resolve_target,
    same_rows,
    select_impl,
)
from sgl_diffusion_core import IndexOutOfRangeError as IndexOutOfRangeError  # re-exported (an index outside [0, K))

from . import gated_residual_api as _gr
from . import scale_shift_api as _ss
from .specs import INDEXED_LAYOUTS

OP_SCALE_SHIFT = "modulate.indexed_scale_shift"
OP_GATED_RESIDUAL = "modulate.indexed_gated_residual"
INDEX_DTYPES = (torch.int32, torch.int64)


@dataclass(frozen=True)
class IndexLayout:
    """Where token ``(b, s)`` finds its table row number: ``index + b*sb + s*ss``; tables have K rows."""

    sb: int
    ss: int
    K: int


def _table_layout(name: str, t: torch.Tensor, g: RowGeometry, problems: list[str]) -> tuple[ModLayout, int] | None:
    """A ``[B, K, D]`` / ``[1, K, D]`` / ``[K, D]`` table as a ``ModLayout`` (ss = row stride) and K."""
    shape = list(t.shape)
    want = f"[B, K, D] (B={g.B}), [1, K, D] or [K, D] with D={g.D}"
    if t.dim() not in (2, 3) or shape[-1] != g.D or (t.dim() == 3 and shape[0] not in (1, g.B)):
        problems.append(f"{name} of shape {shape} does not match x of shape {list(g.shape)}; expected {want}")
        return None
    if g.D > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got strides {list(t.stride())}")
        return None
    K = shape[-2]
    if K == 0:
        problems.append(f"{name} of shape {shape} has no rows (K=0): no index can pick one")
        return None
    per_sample = t.dim() == 3 and shape[0] == g.B and g.B > 1
    tag = INDEXED_LAYOUTS[0] if per_sample else INDEXED_LAYOUTS[1]
    return ModLayout(tag, t.stride(0) if per_sample else 0, t.stride(-2), 1), K


def _index_layout(index: object, g: RowGeometry, K: int, device: torch.device, problems: list[str]):
    if index is None:
        problems.append("index is required (got None)")
        return None
    if not isinstance(index, torch.Tensor):
        problems.append(f"index must be a torch.Tensor, got {type(index).__name__}")
        return None
    if index.device != device:
        problems.append(f"index is on {index.device}, x is on {device}: all tensors must be on one device")
    if index.dtype not in INDEX_DTYPES:
        problems.append(f"index has dtype {index.dtype}; expected torch.int32 or torch.int64")
    shape = list(index.shape)
    if index.dim() == 1 and shape == [g.S]:
        return IndexLayout(0, index.stride(0), K)
    if index.dim() == 2 and shape[1] == g.S and shape[0] in (1, g.B):
        return IndexLayout(index.stride(0) if shape[0] == g.B and g.B > 1 else 0, index.stride(1), K)
    problems.append(f"index of shape {shape} does not match x of shape {list(g.shape)}; "
                    f"expected [B, S] (B={g.B}, S={g.S}), [1, S] or [S]")
    return None


def _describe_indexed(name: str, x: object, others: dict[str, object], tables: tuple[str, ...], index: object):
    """Shared first half: x as ``[B, S, D]`` rows, the float operands, the tables (one K), the index.

    ``others`` are the float operands (``tables`` names those that are tables; the first is
    required). Returns ``(desc, g, layouts, ix)``; ``g`` is None when x itself is unusable.
    """
    required = tuple(n for n in others if n not in tables[1:])
    desc, g = describe_rows(name, x, others, required=required)
    if g is None:
        return desc, None, {}, None
    problems = desc.problems
    if g.is_2d:
        problems.append(f"{name} must be [B, S, D] for an indexed op, got shape {list(g.shape)}")
        return desc, None, {}, None
    layouts: dict[str, ModLayout] = {}
    ks: dict[str, int] = {}
    for tname in tables:
        t = others[tname]
        found = _table_layout(tname, t, g, problems) if t is not None else None
        if found is not None:
            layouts[tname], ks[tname] = found
    if len(set(ks.values())) > 1:
        problems.append("the tables must have the same number of rows K (one index picks from all), got "
                        + ", ".join(f"{n} K={k}" for n, k in ks.items()))
    K = next(iter(ks.values()), 1)
    ix = _index_layout(index, g, K, x.device, problems)
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in layouts.values()))
    return desc, g, layouts, ix


def describe_indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
) -> InputDesc:
    """Validate the arguments of ``indexed_scale_shift`` and describe them for backend selection."""
    tables = {"scale_table": scale_table, "shift_table": shift_table}
    desc, g, lay, ix = _describe_indexed("x", x, tables, tuple(tables), index)
    geom = None
    if g is not None and not desc.problems:
        dts = _ss.chain_dtypes(x, scale_table, shift_table)
        geom = _ss.Geometry(g, lay["scale_table"], lay.get("shift_table"), *dts,
                            round_offset=desc.platform == "cpu", index=ix)
    desc.info = {"geom": geom, "empty": isinstance(x, torch.Tensor) and x.numel() == 0}
    return desc


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
    desc, r, lay, ix = _describe_indexed("residual", residual, others, ("gate_table",), index)
    geom = None
    if r is not None:
        problems = desc.problems
        u = same_rows("update", update, r, problems)
        alias = _gr.inplace_problem(residual, r) if inplace else None
        if alias:
            problems.append(alias)
        if not problems:
            t1, out = _gr.chain_dtypes(residual, update, gate_table, inplace)
            geom = _gr.Geometry(r, u, lay["gate_table"], t1, out, inplace, index=ix)
    desc.info = {"geom": geom, "empty": isinstance(residual, torch.Tensor) and residual.numel() == 0}
    return desc


def validate_index(index: torch.Tensor, K: int, op: str, check_index: object = True) -> None:
    """Raise :class:`IndexOutOfRangeError` unless every index value lies in ``[0, K)``, as the
    op's ``check_index`` asks (``True``: one device reduction and host sync per index tensor
    and version, ``"always"``: per call, ``False``: none; see
    ``sgl_diffusion_core.check_index_range``); ``ValueError`` for another ``check_index``."""
    mode = index_check_mode(check_index, op)
    if mode is not None:
        check_index_range(index, 0, K, op, name="index", bound="K", meaning="rows of the table",
                          cache=mode == "cached")


def _bind_ss(fn, geom):
    def run(x, scale_table, shift_table, index, scale_offset):
        return fn(x, scale_table, shift_table, index, scale_offset=scale_offset, geom=geom)

    return run


def _empty_ss(geom):
    def run(x, scale_table, shift_table, index, scale_offset):
        return torch.empty(geom.x.shape, dtype=geom.out, device=x.device)

    return run


def _bind_gr(fn, geom):
    def run(residual, update, gate_table, index):
        return fn(residual, update, gate_table, index, inplace=geom.inplace, geom=geom)

    return run


def _empty_gr(geom):
    def run(residual, update, gate_table, index):
        if geom.inplace:
            return residual
        return torch.empty(geom.residual.shape, dtype=geom.out, device=residual.device)

    return run


def _describe_gr_inplace(residual, update, gate_table, index):
    return describe_indexed_gated_residual(residual, update, gate_table, index, inplace=True)


_dispatch_ss = Dispatcher(OP_SCALE_SHIFT, describe_indexed_scale_shift, bind=_bind_ss, empty=_empty_ss)
_dispatch_gr = Dispatcher(OP_GATED_RESIDUAL, describe_indexed_gated_residual, bind=_bind_gr, empty=_empty_gr)
_dispatch_gr_inplace = Dispatcher(OP_GATED_RESIDUAL, _describe_gr_inplace, bind=_bind_gr, empty=_empty_gr)


def indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    check_index: bool | str = True,
    backend: str | None = None,
) -> torch.Tensor:
    """``x * (scale_offset + scale_table[b, index[b, s]]) + shift_table[b, index[b, s]]``, ``torch.equal``
    to that eager chain (contract ``exact``; the pick written ``table[torch.arange(B)[:, None], index]``).

    Same rounding and dtypes as ``scale_shift`` (``scale_offset + row`` in the table's dtype,
    ``x * t1`` in ``promote(x, scale_table)``, ``+ shift`` in ``promote(t2, shift_table)``).

    x: ``[B, S, D]`` bf16 | fp16 | fp32, last dim contiguous, any row strides.
    scale_table, shift_table: ``[B, K, D]``, ``[1, K, D]`` or ``[K, D]`` (shared by the batch),
        K >= 1, same K; strided views allowed (e.g. chunks of a modulation projection), last
        dim contiguous. ``shift_table=None`` means no shift.
    index: ``[B, S]``, ``[1, S]`` or ``[S]`` (shared by the batch), int32 | int64, any strides;
        values in ``[0, K)`` (negative values are rejected, not wrapped).
    check_index: ``True`` (default): eager calls check the index and raise
        ``IndexOutOfRangeError`` (an ``UnsupportedInputError`` and an ``IndexError``) naming the
        range found. The check costs one device reduction (one host sync) the first time an
        index tensor is seen; the same tensor, unmodified (its version counter unchanged),
        is not reduced again, so a DiT's index pays it once, not once per block.
        ``"always"`` reduces on every call (for an index written where PyTorch's version
        counter cannot see it: ``.data``, NumPy / DLPack views, custom kernels, CUDA graph
        replay; ``sgl_diffusion_core.forget_index_checks()`` drops every remembered check).
        ``False`` skips the check; so do ``torch.compile`` and CUDA graph capture.
        Unchecked, an out-of-range token reads table row 0 (never out of bounds) and its output
        row is NaN.
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x.
    """
    if is_compiling():
        index_check_mode(check_index, OP_SCALE_SHIFT)
        return _custom_op_ss(x, scale_table, shift_table, index, float(scale_offset), backend)
    plan = _dispatch_ss.plan((x, scale_table, shift_table, index), backend)
    validate_index(index, scale_table.shape[-2], OP_SCALE_SHIFT, check_index)
    return plan(x, scale_table, shift_table, index, scale_offset)


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
        index_check_mode(check_index, OP_GATED_RESIDUAL)
        return _custom_op_gr(residual, update, gate_table, index, backend)
    plan = _dispatch_gr.plan((residual, update, gate_table, index), backend)
    validate_index(index, gate_table.shape[-2], OP_GATED_RESIDUAL, check_index)
    return plan(residual, update, gate_table, index)


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
        index_check_mode(check_index, OP_GATED_RESIDUAL)
        _custom_op_gr_inplace(residual, update, gate_table, index, backend)
        return residual
    plan = _dispatch_gr_inplace.plan((residual, update, gate_table, index), backend)
    validate_index(index, gate_table.shape[-2], OP_GATED_RESIDUAL, check_index)
    return plan(residual, update, gate_table, index)


def can_use_indexed_scale_shift(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> bool:
    """Whether ``indexed_scale_shift`` can serve these arguments (never raises, never allocates,
    never reads the index values: an out-of-range value is found by the call itself)."""
    try:
        select_impl(OP_SCALE_SHIFT, describe_indexed_scale_shift(x, scale_table, shift_table, index), backend=backend)
        return True
    except Exception:
        return False


def can_use_indexed_gated_residual(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
    backend: str | None = None,
) -> bool:
    """Whether ``indexed_gated_residual`` (``inplace=True``: ``indexed_gated_residual_``) can serve
    these arguments (never raises, never allocates, never reads the index values)."""
    try:
        desc = describe_indexed_gated_residual(residual, update, gate_table, index, inplace=inplace)
        select_impl(OP_GATED_RESIDUAL, desc, backend=backend)
        return True
    except Exception:
        return False


def indexed_scale_shift_reference(
    x: torch.Tensor,
    scale_table: torch.Tensor,
    shift_table: torch.Tensor | None,
    index: torch.Tensor,
    *,
    scale_offset: float = 1.0,
) -> torch.Tensor:
    """The eager chain itself, unguarded: the definition of the exact contract (raises on a bad index on CPU)."""
    fn = resolve_target("sgl_diffusion_modulate.scale_shift_torch:indexed_scale_shift")
    return fn(x, scale_table, shift_table, index, scale_offset=scale_offset, guard=False)


def indexed_gated_residual_reference(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate_table: torch.Tensor,
    index: torch.Tensor,
    *,
    inplace: bool = False,
) -> torch.Tensor:
    """The eager chain itself, unguarded: the definition of the exact contract (raises on a bad index on CPU)."""
    fn = resolve_target("sgl_diffusion_modulate.gated_residual_torch:indexed_gated_residual")
    return fn(residual, update, gate_table, index, inplace=inplace, guard=False)


def _op_ss_impl(x, scale_table, shift_table, index, scale_offset, backend):
    return _dispatch_ss.plan((x, scale_table, shift_table, index), backend)(
        x, scale_table, shift_table, index, scale_offset)


def _op_ss_fake(x, scale_table, shift_table, index, scale_offset, backend):
    _dispatch_ss.validate(x, scale_table, shift_table, index)
    return torch.empty(x.shape, dtype=_ss.chain_dtypes(x, scale_table, shift_table)[2], device=x.device)


def _op_gr_impl(residual, update, gate_table, index, backend):
    return _dispatch_gr.plan((residual, update, gate_table, index), backend)(residual, update, gate_table, index)


def _op_gr_fake(residual, update, gate_table, index, backend):
    _dispatch_gr.validate(residual, update, gate_table, index)
    out = _gr.chain_dtypes(residual, update, gate_table, False)[1]
    return torch.empty(residual.shape, dtype=out, device=residual.device)


def _op_gr_inplace_impl(residual, update, gate_table, index, backend):
    _dispatch_gr_inplace.plan((residual, update, gate_table, index), backend)(residual, update, gate_table, index)


def _op_gr_inplace_fake(residual, update, gate_table, index, backend):
    _dispatch_gr_inplace.validate(residual, update, gate_table, index)


_custom_op_ss = register_custom_op(
    "indexed_scale_shift",
    _op_ss_impl,
    _op_ss_fake,
    schema="(Tensor x, Tensor scale_table, Tensor? shift_table, Tensor index, float scale_offset, str? backend)"
           " -> Tensor",
)
_custom_op_gr = register_custom_op(
    "indexed_gated_residual",
    _op_gr_impl,
    _op_gr_fake,
    schema="(Tensor residual, Tensor update, Tensor gate_table, Tensor index, str? backend) -> Tensor",
)
_custom_op_gr_inplace = register_custom_op(
    "indexed_gated_residual_",
    _op_gr_inplace_impl,
    _op_gr_inplace_fake,
    schema="(Tensor(a!) residual, Tensor update, Tensor gate_table, Tensor index, str? backend) -> ()",
    mutates_args=("residual",),
)
