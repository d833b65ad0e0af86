"""The rope family: ``apply_rope``, ``apply_rope_qk``, ``rope_3d`` and ``qk_norm_rope``.

Four variants of one formula, the rotation of head_dim pairs by per-token angles:
``apply_rope`` rotates one tensor with a cos/sin table (or a complex ``freqs_cis``),
``apply_rope_qk`` rotates q and k in one launch, ``rope_3d`` computes the angles in the
kernel from video positions, ``qk_norm_rope`` normalizes each head first. Each is one
:class:`~sgl_diffusion_core.Op`; they share the validation (``_geometry.describe_rope``),
the Triton kernel (``_rope_triton``, backends ``triton`` and ``triton_exact``), the eager
chain (``rope_torch``, backend ``torch``) and one pair of custom ops for
``torch.compile`` (``torch.ops.sgl_diffusion.rope`` / ``rope_``, whose ``op`` argument
names the variant).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import Backend, Contract, InputDesc, Op, is_compiling, register_custom_op

from . import _specs as S
from ._geometry import aliasing, describe_rope, runner


def _table_options(interleaved, rotary_dim, inplace, layout) -> tuple:
    return (("interleaved", interleaved), ("rotary_dim", rotary_dim), ("inplace", bool(inplace)), ("layout", layout))


def _norm_options(interleaved, rotary_dim, inplace, layout, out_layout, norm) -> tuple:
    return (*_table_options(interleaved, rotary_dim, inplace, layout), ("out_layout", out_layout), ("norm", norm))


def _grid_options(grid_thw, axes_dim, theta, interleaved, rotary_dim, inplace, layout) -> tuple:
    return (("grid_thw", None if grid_thw is None else tuple(int(v) for v in grid_thw)),
            ("axes_dim", None if axes_dim is None else tuple(int(v) for v in axes_dim)), ("theta", float(theta)),
            *_table_options(interleaved, rotary_dim, inplace, layout))


def _norm_inplace(inplace: bool | None, layout: str, out_layout: str | None) -> bool:
    """``qk_norm_rope``'s ``inplace=None``: in place unless out_layout changes the layout."""
    return (out_layout is None or out_layout == layout) if inplace is None else bool(inplace)


def describe_apply_rope(x, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False,
                        layout="bshd") -> InputDesc:
    """Validate the arguments of ``apply_rope`` and describe them for backend selection."""
    return describe_rope(x, None, cos, sin, op="apply_rope", interleaved=interleaved, rotary_dim=rotary_dim,
                         inplace=bool(inplace), layout=layout)


def describe_apply_rope_qk(q, k, cos, sin=None, *, interleaved=None, rotary_dim=None, inplace=False,
                           layout="bshd") -> InputDesc:
    """Validate the arguments of ``apply_rope_qk`` and describe them for backend selection."""
    return describe_rope(q, k, cos, sin, op="apply_rope_qk", interleaved=interleaved, rotary_dim=rotary_dim,
                         inplace=bool(inplace), layout=layout)


def describe_rope_3d(x, grid_thw=None, axes_dim=(44, 42, 42), *, theta=10000.0, pos_ids=None, interleaved=True,
                     rotary_dim=None, inplace=False, layout="bshd") -> InputDesc:
    """Validate the arguments of ``rope_3d`` and describe them for backend selection."""
    return describe_rope(x, None, None, None, pos_ids, op="rope_3d", interleaved=interleaved,
                         rotary_dim=rotary_dim, inplace=bool(inplace), layout=layout, grid_thw=grid_thw,
                         axes_dim=axes_dim, theta=theta, angles="grid" if pos_ids is None else "pos")


def _describe_rope_3d_tensors(x, pos_ids, **options) -> InputDesc:
    """``describe_rope_3d`` as the plan calls it: its tensors ``(x, pos_ids)`` first."""
    return describe_rope_3d(x, pos_ids=pos_ids, **options)


def describe_qk_norm_rope(q, k, q_weight, k_weight, cos, sin=None, *, norm="rms", eps=1e-6, interleaved=None,
                          rotary_dim=None, inplace=None, layout="bshd", out_layout=None) -> InputDesc:
    """Validate the arguments of ``qk_norm_rope`` and describe them for backend selection (eps: ignored)."""
    return describe_rope(q, k, cos, sin, None, q_weight, k_weight, op="qk_norm_rope", interleaved=interleaved,
                         rotary_dim=rotary_dim, inplace=_norm_inplace(inplace, layout, out_layout), layout=layout,
                         out_layout=out_layout, norm=norm)


def empty_result(geom):
    """The runner of an empty input: q and k themselves in place, else new empty results."""

    def run(q, k, cos, sin, pos, q_weight, k_weight, eps):
        if geom.inplace:
            return q, k
        qo = torch.empty(geom.q_out.shape, dtype=geom.out, device=q.device)
        ko = None if k is None else torch.empty(geom.k_out.shape, dtype=geom.out, device=q.device)
        return qo, ko

    return runner(geom.op, run)


def _backends(triton_caps, tolerance=None, exact: bool = False, aot: str = "") -> list[Backend]:
    """``triton`` (close), ``triton_exact`` (for the ops with real-table exact mode) and ``torch``."""
    out = [Backend("triton", "._rope_triton", triton_caps, Contract.close(tolerance), priority=10,
                   notes=S.TRITON_NOTE, aot=f"aot_{aot}", executed_on=S.EXECUTED_TRITON)]
    if exact:
        out.append(Backend("triton_exact", "._rope_triton:prepare_exact", S.EXACT_CAPS, Contract.exact(),
                           priority=5, notes=S.EXACT_NOTE, aot=f"aot_{aot}_exact", executed_on=S.EXECUTED_TRITON))
    out.append(Backend("torch", ".rope_torch", S.TORCH_CAPS, Contract.exact(), notes=S.TORCH_NOTE,
                       executed_on=S.EXECUTED_TORCH))
    return out


APPLY_ROPE = Op(
    "rope.apply_rope",
    distribution=S.DISTRIBUTION,
    summary="RoPE of x with a cos/sin table or complex freqs_cis (rotate-half or interleaved, partial rotary)",
    describe=describe_apply_rope,
    n_tensors=3,
    reference=".rope_torch:apply_rope",
    backends=_backends(S.APPLY_ROPE_TRITON_CAPS, exact=True, aot="apply_rope"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:apply_rope_cases",
)
APPLY_ROPE_QK = Op(
    "rope.apply_rope_qk",
    distribution=S.DISTRIBUTION,
    summary="apply_rope on q and k in one launch",
    describe=describe_apply_rope_qk,
    n_tensors=4,
    reference=".rope_torch:apply_rope_qk",
    backends=_backends(S.APPLY_ROPE_TRITON_CAPS, exact=True, aot="apply_rope_qk"),
    default_exact=False,
    empty=empty_result,
    per_call=aliasing,
    bench=f"{S.BENCH}:apply_rope_qk_cases",
)
ROPE_3D = Op(
    "rope.rope_3d",
    distribution=S.DISTRIBUTION,
    summary="video RoPE, angles computed in the kernel from (t, h, w) grid positions or position ids",
    describe=describe_rope_3d,
    describe_tensors=_describe_rope_3d_tensors,
    n_tensors=2,
    reference=".rope_torch:rope_3d",
    backends=_backends(S.ROPE_3D_TRITON_CAPS, aot="rope_3d"),
    default_exact=False,
    empty=empty_result,
    bench=f"{S.BENCH}:rope_3d_cases",
)
QK_NORM_ROPE = Op(
    "rope.qk_norm_rope",
    distribution=S.DISTRIBUTION,
    summary="per-head RMS/LayerNorm then RoPE on q and k in one pass (optionally writing [B, H, S, Dh])",
    describe=describe_qk_norm_rope,
    n_tensors=6,
    reference=".rope_torch:qk_norm_rope",
    backends=_backends(S.QK_NORM_ROPE_TRITON_CAPS, S.QK_NORM_ROPE_TOLERANCE, aot="qk_norm_rope"),
    default_exact=False,
    empty=empty_result,
    per_call=aliasing,
    bench=f"{S.BENCH}:qk_norm_rope_cases",
)


@APPLY_ROPE.entry
def apply_rope(
    x: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = "bshd",
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """Rotary position embedding of ``x`` with a cos/sin table (or a complex ``freqs_cis``).

    x: ``[B, S, H, Dh]`` (``layout="bshd"``, any strides for B/S/H, e.g. a view of a fused
        QKV projection) or ``[B, H, S, Dh]`` (``layout="bhsd"``); head_dim contiguous;
        bf16 | fp16 | fp32.
    cos, sin: ``[S, r/2]`` (one angle per pair), ``[S, r]`` (one value per position, as
        diffusers' ``repeat_interleave`` / ``cat`` tables hold them) or ``[B, S, r/2 | r]``;
        fp32, bf16 or fp16. Or ``cos`` a complex64 ``freqs_cis`` ``[S, r/2]`` (or
        ``[B, S, r/2]``) with ``sin=None`` (pairs are adjacent: interleaved).
    interleaved: ``False`` rotates element j with j + r/2 (rotate-half: Llama, Cosmos);
        ``True`` rotates 2j with 2j + 1 (GPT-J pairs: Flux, Wan, HunyuanVideo in diffusers);
        ``None`` = False for real tables, True for a complex ``freqs_cis``.
    rotary_dim: r, the rotated leading part of head_dim (the tail passes through); None
        infers it from the table (width Dh -> one value per position, Dh/2 -> per pair).
    inplace: write into x (and return it).
    exact: ``None``/``False``: contract ``close`` (fp32 math, one rounding). ``True``:
        ``torch.equal`` to the eager chain ``(x * cos + rotate(x) * sin).to(x.dtype)`` with
        every op in the promoted dtype of x and the table and no FMA (real tables only;
        a complex table is served exactly by the ``torch`` backend, the chain itself).
    backend: ``None`` (best for the inputs), ``"triton"``, ``"triton_exact"`` or ``"torch"``.

    Returns a tensor shaped like x, contiguous in x's layout (x itself when in place).
    """
    if is_compiling():
        return _compiled("apply_rope", inplace, x, None, cos, sin, None, None, None, 0.0, exact, backend,
                         interleaved, rotary_dim, layout)[0]
    opts = _table_options(interleaved, rotary_dim, inplace, layout)
    return APPLY_ROPE.plan((x, cos, sin), backend, exact, opts)(x, cos, sin)


@APPLY_ROPE_QK.entry
def apply_rope_qk(
    q: torch.Tensor,
    k: torch.Tensor,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = "bshd",
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """:func:`apply_rope` on q and k in one launch (k may have another head count: GQA / MQA).

    q, k share batch, sequence length, head_dim and dtype; each keeps its own strides.
    Returns ``(q_out, k_out)``.
    """
    if is_compiling():
        return _compiled("apply_rope_qk", inplace, q, k, cos, sin, None, None, None, 0.0, exact, backend,
                         interleaved, rotary_dim, layout)
    opts = _table_options(interleaved, rotary_dim, inplace, layout)
    return APPLY_ROPE_QK.plan((q, k, cos, sin), backend, exact, opts)(q, k, cos, sin)


@ROPE_3D.entry
def rope_3d(
    x: torch.Tensor,
    grid_thw: tuple[int, int, int] | None = None,
    axes_dim: tuple[int, int, int] = (44, 42, 42),
    *,
    theta: float = 10000.0,
    pos_ids: torch.Tensor | None = None,
    interleaved: bool = True,
    rotary_dim: int | None = None,
    inplace: bool = False,
    layout: str = "bshd",
    backend: str | None = None,
) -> torch.Tensor:
    """Video RoPE with the angles computed in the kernel (no cos/sin table in memory).

    Each token's position is ``(t, h, w)``: from ``grid_thw = (T, H, W)`` (tokens in
    t-major order, ``s = (t * H + h) * W + w``; ``S == T * H * W``) or from explicit
    ``pos_ids`` ``[B, S, 3]`` / ``[S, 3]`` (ints or floats; Flux's text/image ids). The
    rotary dims split by ``axes_dim`` (t, h, w widths, each even): pair i of axis a (width d)
    turns by ``pos_a * theta ** (-2 i / d)``. ``axes_dim`` sums to head_dim, or, for a partial
    rotary, to ``rotary_dim``, which must then be given: the first ``rotary_dim`` dims of each
    head rotate and the rest pass through unchanged. A sum other than head_dim without
    ``rotary_dim`` raises ``UnsupportedInputError``. Defaults: Wan2.1 (Dh=128: 44/42/42, theta 1e4, pairs);
    HunyuanVideo uses ``axes_dim=(16, 56, 56), theta=256``; Flux ``(16, 56, 56)`` with
    ``pos_ids``. Contract ``close``: ``torch`` is the chain diffusers runs (fp64 table cast
    to fp32, then ``(x * cos + rotate(x) * sin).to(x.dtype)``).
    """
    opts = _grid_options(grid_thw, axes_dim, theta, interleaved, rotary_dim, inplace, layout)
    if is_compiling():
        return _compiled("rope_3d", inplace, x, None, None, None, pos_ids, None, None, 0.0, None, backend,
                         interleaved, rotary_dim, layout, grid_thw=opts[0][1], axes_dim=opts[1][1],
                         theta=opts[2][1], angles="grid" if pos_ids is None else "pos")[0]
    return ROPE_3D.plan((x, pos_ids), backend, None, opts)(x, pos_ids)


@QK_NORM_ROPE.entry
def qk_norm_rope(
    q: torch.Tensor,
    k: torch.Tensor,
    q_weight: torch.Tensor | None,
    k_weight: torch.Tensor | None,
    cos: torch.Tensor,
    sin: torch.Tensor | None = None,
    *,
    norm: str = "rms",
    eps: float = 1e-6,
    interleaved: bool | None = None,
    rotary_dim: int | None = None,
    inplace: bool | None = None,
    layout: str = "bshd",
    out_layout: str | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per-head norm over head_dim (``"rms"`` or ``"layer"``), then RoPE, for q and k in one pass.

    q, k, cos, sin, interleaved, rotary_dim, layout: as :func:`apply_rope_qk`. q_weight,
    k_weight: ``[Dh]`` or None. ``out_layout="bhsd"`` writes new ``[B, H, S, Dh]``
    tensors for attention. ``inplace``: None = in place unless out_layout changes the
    layout. Contract ``close`` (fp32 statistics and math, one rounding); ``exact=True`` is
    served by the ``torch`` backend, the eager chain itself (see ``rope_torch``).
    Returns ``(q_out, k_out)``.
    """
    inplace = _norm_inplace(inplace, layout, out_layout)
    if is_compiling():
        return _compiled("qk_norm_rope", inplace, q, k, cos, sin, None, q_weight, k_weight, float(eps), exact,
                         backend, interleaved, rotary_dim, layout, out_layout=out_layout, norm=norm)
    opts = _norm_options(interleaved, rotary_dim, inplace, layout, out_layout, norm)
    tensors = (q, k, q_weight, k_weight, cos, sin)
    return QK_NORM_ROPE.plan(tensors, backend, exact, opts)(*tensors, float(eps))


can_use_apply_rope = APPLY_ROPE.can_use
apply_rope_reference = APPLY_ROPE.reference
can_use_apply_rope_qk = APPLY_ROPE_QK.can_use
apply_rope_qk_reference = APPLY_ROPE_QK.reference
can_use_rope_3d = ROPE_3D.can_use
rope_3d_reference = ROPE_3D.reference
can_use_qk_norm_rope = QK_NORM_ROPE.can_use
qk_norm_rope_reference = QK_NORM_ROPE.reference


# --- custom ops (torch.compile): one functional and one in-place op serve the four variants ---

_SCHEMA_ARGS = ("Tensor? cos, Tensor? sin, Tensor? pos_ids, Tensor? q_weight, Tensor? k_weight, float eps, "
                "bool? exact, str? backend, str op, bool? interleaved, int? rotary_dim, str layout, "
                "str? out_layout, int[]? grid_thw, int[]? axes_dim, float theta, str? norm, str angles")


def _compiled(op, inplace, q, k, cos, sin, pos, qw, kw, eps, exact, backend, interleaved, rotary_dim, layout, *,
              out_layout=None, grid_thw=None, axes_dim=None, theta=10000.0, norm=None, angles="table"):
    """The traced call: ``rope_`` in place, else ``rope``; ``(q_out, k_out)``."""
    args = (q, k, cos, sin, pos, qw, kw, float(eps), exact, backend, op, interleaved, rotary_dim, layout,
            out_layout, None if grid_thw is None else list(grid_thw), None if axes_dim is None else list(axes_dim),
            float(theta), norm, angles)
    if inplace:
        _custom_op_inplace(*args)
        return (q, k)
    out = _custom_op(*args)
    return (out[0], out[1] if k is not None else None)


def _variant(op, q, k, cos, sin, pos, qw, kw, interleaved, rotary_dim, layout, out_layout, grid_thw, axes_dim,
             theta, norm, inplace) -> tuple[Op, tuple, tuple]:
    """``(Op, its plan's tensors, its plan's options)`` of the variant a custom-op call names."""
    if op == "apply_rope":
        return APPLY_ROPE, (q, cos, sin), _table_options(interleaved, rotary_dim, inplace, layout)
    if op == "apply_rope_qk":
        return APPLY_ROPE_QK, (q, k, cos, sin), _table_options(interleaved, rotary_dim, inplace, layout)
    if op == "rope_3d":
        opts = _grid_options(grid_thw, axes_dim, theta, interleaved, rotary_dim, inplace, layout)
        return ROPE_3D, (q, pos), opts
    opts = _norm_options(interleaved, rotary_dim, inplace, layout, out_layout, norm)
    return QK_NORM_ROPE, (q, k, qw, kw, cos, sin), opts


def _run(inplace, q, k, cos, sin, pos, qw, kw, eps, exact, backend, op, interleaved, rotary_dim, layout,
         out_layout, grid_thw, axes_dim, theta, norm, angles):
    definition, tensors, opts = _variant(op, q, k, cos, sin, pos, qw, kw, interleaved, rotary_dim, layout,
                                         out_layout, grid_thw, axes_dim, theta, norm, inplace)
    scalars = (eps,) if definition is QK_NORM_ROPE else ()
    out = definition.plan(tensors, backend, exact, opts)(*tensors, *scalars)
    return out if isinstance(out, tuple) else (out, None)


def _op_impl(q, k, *args):
    qo, ko = _run(False, q, k, *args)
    return [qo] if ko is None else [qo, ko]


def _op_inplace_impl(q, k, *args):
    _run(True, q, k, *args)


def _validate(inplace, q, k, cos, sin, pos, qw, kw, eps, exact, backend, op, interleaved, rotary_dim, layout,
              out_layout, grid_thw, axes_dim, theta, norm, angles):
    definition, tensors, opts = _variant(op, q, k, cos, sin, pos, qw, kw, interleaved, rotary_dim, layout,
                                         out_layout, grid_thw, axes_dim, theta, norm, inplace)
    definition.validate(*tensors, options=opts)
    return (out_layout or layout) != layout


def _op_fake(q, k, *args):
    transposed = _validate(False, q, k, *args)

    def like(x):
        shape = list(x.shape)
        if transposed:
            shape[1], shape[2] = shape[2], shape[1]
        return x.new_empty(shape)

    return [like(q)] if k is None else [like(q), like(k)]


def _op_inplace_fake(q, k, *args):
    _validate(True, q, k, *args)


_custom_op = register_custom_op("rope", _op_impl, _op_fake,
                                schema=f"(Tensor q, Tensor? k, {_SCHEMA_ARGS}) -> Tensor[]")
_custom_op_inplace = register_custom_op("rope_", _op_inplace_impl, _op_inplace_fake,
                                        schema=f"(Tensor(a!) q, Tensor(b!)? k, {_SCHEMA_ARGS}) -> ()",
                                        mutates_args=("q", "k"))
