"""``gated_residual_norm_modulate``: gated residual, then norm + adaLN modulation, in one pass. Public entry points.

Kernel: ``row_norm_triton.py`` (``HAS_RES``); eager chain: ``row_norm_torch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    same_rows,
    select_impl,
)

from .row_norm_api import Chain, chain_dtypes

OP = "norm.gated_residual_norm_modulate"
NORMS = ("layer", "rms")


@dataclass(frozen=True)
class Geometry:
    norm: str
    residual: RowGeometry
    update: RowGeometry
    gate: ModLayout | None
    scale: ModLayout
    shift: ModLayout | None
    t1: torch.dtype  # gate * update
    sum: torch.dtype  # residual + t1 (then cast to residual's dtype)
    chain: Chain  # the norm + modulate chain on the new residual


def describe_gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = "layer",
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    **_,
) -> InputDesc:
    """Validate the arguments of ``gated_residual_norm_modulate`` and describe them for backend selection."""
    others = {"update": update, "gate": gate, "scale": scale, "shift": shift, "weight": weight, "bias": bias}
    desc, r = describe_rows("residual", residual, others, required=("update", "scale"))
    if norm not in NORMS:
        desc.problems.append(f"norm must be one of {NORMS}, got {norm!r}")
    if r is None:
        return desc
    problems = desc.problems
    u = same_rows("update", update, r, problems)
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != (r.D,) or (r.D > 1 and t.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [D] = [{r.D}] tensor, got shape {list(t.shape)} "
                            f"strides {list(t.stride())}")
    lays = {n: (mod_layout(n, t, r, problems) if t is not None else None)
            for n, t in (("gate", gate), ("scale", scale), ("shift", shift))}
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in lays.values() if lay is not None))
    geom = None
    if not problems:
        t1 = update.dtype if gate is None else torch.promote_types(gate.dtype, update.dtype)
        geom = Geometry(norm, r, u, lays["gate"], lays["scale"], lays["shift"], t1,
                        torch.promote_types(residual.dtype, t1),
                        chain_dtypes(norm, residual.dtype, scale, shift, weight, bias))
    desc.info = {"geom": geom, "empty": residual.numel() == 0}
    return desc


def _empty(geom: Geometry):
    def run(residual, update, gate, scale, shift, weight, bias, eps, scale_offset):
        mk = lambda: torch.empty(geom.residual.shape, dtype=residual.dtype, device=residual.device)  # noqa: E731
        return mk(), mk()

    return run


def _bind(fn, geom: Geometry):
    norm = geom.norm

    def run(residual, update, gate, scale, shift, weight, bias, eps, scale_offset):
        return fn(residual, update, gate, scale, shift, norm=norm, weight=weight, bias=bias, eps=eps,
                  scale_offset=scale_offset, geom=geom)

    return run


def _dispatcher(norm: str) -> Dispatcher:
    def describe(residual, update, gate, scale, shift, weight, bias):
        return describe_gated_residual_norm_modulate(residual, update, gate, scale, shift, norm=norm, weight=weight,
                                                     bias=bias)

    return Dispatcher(OP, describe, bind=_bind, empty=_empty)


_DISPATCH = {n: _dispatcher(n) for n in NORMS}


def _plan(norm, tensors, backend, exact):
    d = _DISPATCH.get(norm)
    if d is None:  # describe() names the problem
        d = _DISPATCH["layer"]
        select_impl(OP, describe_gated_residual_norm_modulate(*tensors[:5], norm=norm), backend=backend, exact=exact)
    return d.plan(tensors, backend, exact)


def gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    norm: str = "layer",
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """``new = residual + gate * update``; ``out = norm(new)[* weight + bias] * (scale_offset + scale) + shift``.

    Returns ``(out, new_residual)``, both new contiguous tensors in residual's dtype.
    ``new_residual`` is ``torch.equal`` to the eager ``(residual + gate * update).to(residual.dtype)``
    on every backend (``gate * update`` rounded to ``promote(gate, update)``, the sum to
    ``promote(residual, gate * update)``, then to residual's dtype; no FMA). ``out`` is
    ``close`` on ``triton`` (fp32 statistics of the rounded new residual, one rounding) and
    exact on ``torch`` (the eager ``ln_modulate`` / ``rms_modulate`` chain on ``new_residual``).

    residual, update: ``[B, S, D]`` or ``[N, D]``, same shape, bf16 | fp16 | fp32, last dim
        contiguous, any row strides (each its own).
    gate, scale, shift: per channel ``[D]``; per sample ``[B, D]`` / ``[B, 1, D]``; per token
        ``[B, S, D]`` (strided views allowed); per frame ``[B, F, 1, D]`` with ``S = F * L``.
        ``gate=None``: a gate of 1; ``shift=None``: no shift.
    norm: ``"layer"`` (LayerNorm, optional weight and bias) or ``"rms"`` (RMSNorm, diffusers chain).
    exact: ``None``/``False``: the fastest backend (``out`` close); ``True``: the eager chain.
    backend: ``None``, ``"triton"`` or ``"torch"``.
    """
    if is_compiling():
        return _custom_op(residual, update, gate, scale, shift, weight, bias, norm, float(eps), float(scale_offset),
                          backend, exact)
    tensors = (residual, update, gate, scale, shift, weight, bias)
    return _plan(norm, tensors, backend, exact)(*tensors, eps, scale_offset)


def can_use_gated_residual_norm_modulate(residual, update, gate, scale, shift=None, *, norm="layer", weight=None,
                                         bias=None, eps=1e-6, scale_offset=1.0, exact=None, backend=None) -> bool:
    """Whether ``gated_residual_norm_modulate`` can serve these arguments (never raises, never allocates)."""
    try:
        desc = describe_gated_residual_norm_modulate(residual, update, gate, scale, shift, norm=norm, weight=weight,
                                                     bias=bias)
        select_impl(OP, desc, backend=backend, exact=exact)
        return True
    except Exception:
        return False


def gated_residual_norm_modulate_reference(residual, update, gate, scale, shift=None, *, norm="layer", weight=None,
                                           bias=None, eps=1e-6, scale_offset=1.0):
    """The eager chain (the ``torch`` backend): the definition of the exact contract."""
    fn = resolve_target("sgl_diffusion_norm.row_norm_torch:gated_residual_norm_modulate")
    return fn(residual, update, gate, scale, shift, norm=norm, weight=weight, bias=bias, eps=eps,
              scale_offset=scale_offset)


def _op_impl(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset, backend=None, exact=None):
    tensors = (residual, update, gate, scale, shift, weight, bias)
    out, new = _plan(norm, tensors, backend, exact)(*tensors, eps, scale_offset)
    return out, new


def _op_fake(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset, backend=None, exact=None):
    if norm in _DISPATCH:
        _DISPATCH[norm].validate(residual, update, gate, scale, shift, weight, bias)
    mk = lambda: torch.empty(residual.shape, dtype=residual.dtype, device=residual.device)  # noqa: E731
    return mk(), mk()


_custom_op = register_custom_op(
    "gated_residual_norm_modulate",
    _op_impl,
    _op_fake,
    schema="(Tensor residual, Tensor update, Tensor? gate, Tensor scale, Tensor? shift, Tensor? weight, "
    "Tensor? bias, str norm, float eps, float scale_offset, str? backend=None, bool? exact=None) -> (Tensor, Tensor)",
)
