"""The row-norm family: ``layer_norm``, ``rms_norm``, ``ln_modulate``, ``rms_modulate``. Public entry points.

Validation, predicates, backend selection and the custom-op registrations live here;
kernels live in ``row_norm_triton.py`` (close) and ``row_norm_exact_triton.py`` (exact,
behind a ``BitExactFusionGate``), the eager chains in ``row_norm_torch.py``.

Backends per op, in selection order: ``triton`` (contract ``close``: fp32 statistics, one
rounding), ``triton_exact`` (contract ``exact``, trusted per call signature only after the
gate saw it match the eager chain; otherwise the eager chain runs), ``torch`` (the eager
chain itself, exact). ``exact=None`` follows ``OpDef.default_exact``: exact for all four ops
(specs.py: on an H200 the public ops run at 89-114% of copy and the gate verified every
signature of the GPU lane); ``exact=False`` asks for the fastest backend whatever its contract.
An explicit ``backend=`` with ``exact=None`` runs that backend under its own contract
(``exact=True`` with a close backend raises).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    BitExactFusionGate,
    Dispatcher,
    InputDesc,
    ModLayout,
    RowGeometry,
    describe_rows,
    is_compiling,
    mod_layout,
    register_custom_op,
    resolve_target,
    select_impl,
)

_HALF = (torch.bfloat16, torch.float16)
OPS = {
    "layer_norm": ("norm.layer_norm", "layer", False),
    "rms_norm": ("norm.rms_norm", "rms", False),
    "ln_modulate": ("norm.ln_modulate", "layer", True),
    "rms_modulate": ("norm.rms_modulate", "rms", True),
}
# One gate per op: the exact Triton kernels are trusted per call signature only after matching eager.
GATES: dict[str, BitExactFusionGate] = {op: BitExactFusionGate(op) for op, _, _ in OPS.values()}


def exact_gate(op_id: str) -> BitExactFusionGate:
    """The ``BitExactFusionGate`` of an op's exact Triton kernel (inspect ``.states()``, ``.reset()``)."""
    return GATES[op_id]


@dataclass(frozen=True)
class Chain:
    """The dtype eager gives every intermediate of an op's chain (exact kernels round to them)."""

    p: torch.dtype  # LayerNorm affine parameters as eager uses them (x's dtype)
    c: torch.dtype  # rms: the normalized value is cast to this before `* weight`
    a: torch.dtype  # after `* weight`
    n: torch.dtype  # after `+ bias`: the norm's result
    t1: torch.dtype | None  # scale_offset + scale
    t2: torch.dtype | None  # n * t1
    t3: torch.dtype | None  # t2 + shift
    out: torch.dtype


def chain_dtypes(norm: str, x: torch.dtype, scale, shift, weight, bias) -> Chain:
    dt = lambda t: None if t is None else t.dtype  # noqa: E731
    w, b = dt(weight), dt(bias)
    if norm == "layer":
        p = c = a = n = x  # the affine parameters are cast to x's dtype (row_norm_torch)
    else:
        p = torch.float32
        if w is not None:
            c = w if w in _HALF else torch.float32
            a = torch.promote_types(c, w)
        else:
            c = a = x
        n = a if b is None else torch.promote_types(a, b)
    if scale is None:
        return Chain(p, c, a, n, None, None, None, n)
    t1 = scale.dtype
    t2 = torch.promote_types(n, t1)
    t3 = t2 if shift is None else torch.promote_types(t2, shift.dtype)
    return Chain(p, c, a, n, t1, t2, t3, x)


@dataclass(frozen=True)
class Geometry:
    """Everything a backend needs beyond the tensors, computed once per call signature."""

    op: str
    norm: str  # "layer" | "rms"
    x: RowGeometry
    scale: ModLayout | None
    shift: ModLayout | None
    chain: Chain
    platform: str | None


def describe_row_norm(
    op: str,
    x: torch.Tensor,
    scale: torch.Tensor | None = None,
    shift: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
) -> InputDesc:
    """Validate the arguments of one op of the family and describe them for backend selection."""
    op_id, norm, modulated = OPS[op]
    others = {"scale": scale, "shift": shift, "weight": weight, "bias": bias}
    desc, g = describe_rows("x", x, others, required=("scale",) if modulated else ())
    if g is None:
        return desc
    problems = desc.problems
    if not modulated and (scale is not None or shift is not None):
        problems.append(f"{op} takes no scale or shift")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != (g.D,) or (g.D > 1 and t.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [D] = [{g.D}] tensor, got shape {list(t.shape)} "
                            f"strides {list(t.stride())}")
    sc = mod_layout("scale", scale, g, problems) if scale is not None else None
    sh = mod_layout("shift", shift, g, problems) if shift is not None else None
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in (sc, sh) if lay is not None))
    geom = None
    if not problems:
        geom = Geometry(op_id, norm, g, sc, sh, chain_dtypes(norm, x.dtype, scale, shift, weight, bias),
                        desc.platform)
    desc.info = {"geom": geom, "empty": x.numel() == 0}
    return desc


def describe_layer_norm(x, weight=None, bias=None, **_):
    """``describe`` of ``norm.layer_norm`` (see :func:`describe_row_norm`)."""
    return describe_row_norm("layer_norm", x, None, None, weight, bias)


def describe_rms_norm(x, weight=None, bias=None, **_):
    """``describe`` of ``norm.rms_norm``."""
    return describe_row_norm("rms_norm", x, None, None, weight, bias)


def describe_ln_modulate(x, scale, shift=None, *, weight=None, bias=None, **_):
    """``describe`` of ``norm.ln_modulate``."""
    return describe_row_norm("ln_modulate", x, scale, shift, weight, bias)


def describe_rms_modulate(x, scale, shift=None, *, weight=None, **_):
    """``describe`` of ``norm.rms_modulate``."""
    return describe_row_norm("rms_modulate", x, scale, shift, weight, None)


# --- dispatch ------------------------------------------------------------------------------------
# Every runner takes (x, scale, shift, weight, bias, eps, scale_offset), whatever the op.


def _empty(geom: Geometry):
    def run(x, scale, shift, weight, bias, eps, scale_offset, _shape=geom.x.shape, _dt=geom.chain.out):
        return torch.empty(_shape, dtype=_dt, device=x.device)

    return run


def _bind(fn, geom: Geometry):
    """A torch-backend function (the eager chain) as a runner."""
    from .row_norm_torch import norm_chain

    norm = geom.norm

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        return norm_chain(norm, x, scale, shift, weight, bias, eps, scale_offset)

    return run


def _dispatcher(op: str) -> Dispatcher:
    return Dispatcher(OPS[op][0], lambda *t: describe_row_norm(op, *t), bind=_bind, empty=_empty)


_DISPATCH = {op: _dispatcher(op) for op in OPS}


def _run(op, x, scale, shift, weight, bias, eps, scale_offset, exact, backend):
    if is_compiling():
        return _CUSTOM[op](x, scale, shift, weight, bias, float(eps), float(scale_offset), backend, exact)
    plan = _DISPATCH[op].plan((x, scale, shift, weight, bias), backend, exact)
    return plan(x, scale, shift, weight, bias, eps, scale_offset)


def _can_use(op, x, scale, shift, weight, bias, exact, backend) -> bool:
    try:
        select_impl(OPS[op][0], describe_row_norm(op, x, scale, shift, weight, bias), backend=backend, exact=exact)
        return True
    except Exception:
        return False


# --- public ops ----------------------------------------------------------------------------------


def layer_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``F.layer_norm(x, (D,), weight, bias, eps)`` over the last dim.

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    weight, bias: optional contiguous ``[D]``, any float dtype (the eager chain casts them to x's dtype).
    exact: ``None``/``True``: ``torch.equal`` to ``F.layer_norm`` on the same device (an exact
        kernel verified per call signature by a ``BitExactFusionGate``, else eager itself);
        ``False``: fp32 statistics and one rounding (contract ``close``), the fastest path.
    backend: ``None`` (best for the inputs and ``exact``), ``"triton"``, ``"triton_exact"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x, in x's dtype.
    """
    return _run("layer_norm", x, None, None, weight, bias, eps, 1.0, exact, backend)


def rms_norm(
    x: torch.Tensor,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-6,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``x * rsqrt(mean(x.float()**2, -1) + eps) [* weight] [+ bias]`` (the diffusers ``RMSNorm``).

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    weight, bias: optional contiguous ``[D]``, any float dtype. The result dtype is eager's:
        x's dtype without a weight; the weight's dtype with one (``promote(weight, bias)``
        with a bias), e.g. fp32 for an fp32 weight on bf16 x, as diffusers returns.
    exact, backend: as in :func:`layer_norm`.
    """
    return _run("rms_norm", x, None, None, weight, bias, eps, 1.0, exact, backend)


def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``LayerNorm(x)[* weight + bias] * (scale_offset + scale) + shift`` in one pass, in x's dtype.

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    scale, shift: broadcast per channel ``[D]``; per sample ``[B, D]`` or ``[B, 1, D]``
        (B may be 1); per token ``[B, S, D]`` (``[N, D]`` for 2-D x), strided views allowed
        (e.g. a chunk of a ``[B, S, 6*D]`` projection); per frame ``[B, F, 1, D]`` with
        ``S = F * L``: frame ``f`` covers tokens ``f*L .. (f+1)*L - 1``. Last dim contiguous;
        any float dtype. ``shift=None`` means no shift.
    weight, bias: optional LayerNorm affine, contiguous ``[D]``.
    exact: ``None``/``True``: ``torch.equal`` to the eager chain
        ``(F.layer_norm(x, (D,), weight, bias, eps) * (scale_offset + scale) + shift).to(x.dtype)``
        on the same device (gated exact kernel, else eager); ``False``: fp32 statistics and
        one final rounding (contract ``close``, tolerances in the registry spec).
    backend: ``None`` (best for the inputs and ``exact``), ``"triton"``, ``"triton_exact"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x. Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    return _run("ln_modulate", x, scale, shift, weight, bias, eps, scale_offset, exact, backend)


def rms_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``(rms_norm(x, weight) * (scale_offset + scale) + shift).to(x.dtype)`` in one pass.

    Same layouts and arguments as :func:`ln_modulate` (RMSNorm takes no bias here).
    """
    return _run("rms_modulate", x, scale, shift, weight, None, eps, scale_offset, exact, backend)


def can_use_layer_norm(x, weight=None, bias=None, *, eps=1e-6, exact=None, backend=None) -> bool:
    """Whether ``layer_norm`` can serve these arguments (never raises, never allocates)."""
    return _can_use("layer_norm", x, None, None, weight, bias, exact, backend)


def can_use_rms_norm(x, weight=None, bias=None, *, eps=1e-6, exact=None, backend=None) -> bool:
    """Whether ``rms_norm`` can serve these arguments (never raises, never allocates)."""
    return _can_use("rms_norm", x, None, None, weight, bias, exact, backend)


def can_use_ln_modulate(x, scale, shift=None, *, weight=None, bias=None, eps=1e-6, scale_offset=1.0,
                        exact=None, backend=None) -> bool:
    """Whether ``ln_modulate`` can serve these arguments (never raises, never allocates)."""
    return _can_use("ln_modulate", x, scale, shift, weight, bias, exact, backend)


def can_use_rms_modulate(x, scale, shift=None, *, weight=None, eps=1e-6, scale_offset=1.0, exact=None,
                         backend=None) -> bool:
    """Whether ``rms_modulate`` can serve these arguments (never raises, never allocates)."""
    return _can_use("rms_modulate", x, scale, shift, weight, None, exact, backend)


def _chain(norm, x, scale=None, shift=None, weight=None, bias=None, eps=1e-6, scale_offset=1.0):
    fn = resolve_target("sgl_diffusion_norm.row_norm_torch:norm_chain")
    return fn(norm, x, scale, shift, weight, bias, eps, scale_offset)


def close_spec(norm, x, scale=None, shift=None, weight=None, bias=None, eps=1e-6, scale_offset=1.0,
               out_dtype=None):
    """The close contract's formula (fp32 math, fp64 for fp64 inputs, one rounding), for tests."""
    fn = resolve_target("sgl_diffusion_norm.row_norm_torch:norm_spec")
    return fn(norm, x, scale, shift, weight, bias, eps, scale_offset, out_dtype)


def layer_norm_reference(x, weight=None, bias=None, *, eps=1e-6):
    """The eager chain (the ``torch`` backend): the definition of the exact contract."""
    return _chain("layer", x, None, None, weight, bias, eps)


def rms_norm_reference(x, weight=None, bias=None, *, eps=1e-6):
    """The eager chain (the ``torch`` backend): the definition of the exact contract."""
    return _chain("rms", x, None, None, weight, bias, eps)


def ln_modulate_reference(x, scale, shift=None, *, weight=None, bias=None, eps=1e-6, scale_offset=1.0):
    """The eager chain (the ``torch`` backend): the definition of the exact contract."""
    return _chain("layer", x, scale, shift, weight, bias, eps, scale_offset)


def rms_modulate_reference(x, scale, shift=None, *, weight=None, eps=1e-6, scale_offset=1.0):
    """The eager chain (the ``torch`` backend): the definition of the exact contract."""
    return _chain("rms", x, scale, shift, weight, None, eps, scale_offset)


# --- custom ops: the path torch.compile traces ---------------------------------------------------


def _custom(op: str):
    def impl(x, scale, shift, weight, bias, eps, scale_offset, backend=None, exact=None):
        plan = _DISPATCH[op].plan((x, scale, shift, weight, bias), backend, exact)
        return plan(x, scale, shift, weight, bias, eps, scale_offset)

    def fake(x, scale, shift, weight, bias, eps, scale_offset, backend=None, exact=None):
        _DISPATCH[op].validate(x, scale, shift, weight, bias)
        out = chain_dtypes(OPS[op][1], x.dtype, scale, shift, weight, bias).out
        return torch.empty(x.shape, dtype=out, device=x.device)

    return register_custom_op(
        op,
        impl,
        fake,
        schema="(Tensor x, Tensor? scale, Tensor? shift, Tensor? weight, Tensor? bias, float eps, "
        "float scale_offset, str? backend=None, bool? exact=None) -> Tensor",
    )


_CUSTOM = {op: _custom(op) for op in OPS}
