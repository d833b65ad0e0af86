"""``gated_residual_norm_modulate``: gated residual, then norm + adaLN modulation, in one pass.

Backends: ``_row_norm_triton`` (``prepare_gated``: the row-norm kernel with ``HAS_RES``; contract
``close`` for ``out``, the new residual bit-exact) and ``gated_residual_norm_modulate_torch``
(the eager chain, exact). Not exact by default: no exact kernel computes ``out``.
"""

from __future__ import annotations

from dataclasses import dataclass

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
    same_rows,
)

from . import _row_norm as R

NORMS = ("layer", "rms")


@dataclass(frozen=True)
class Geometry:
    """Rows of residual and update, the modulation layouts, and the eager chain's dtypes."""

    norm: str
    residual: RowGeometry
    update: RowGeometry
    gate: ModLayout | None
    scale: ModLayout
    shift: ModLayout | None
    t1: torch.dtype  # gate * update
    sum: torch.dtype  # residual + t1 (then cast to residual's dtype)
    chain: R.Chain  # the norm + modulate chain on the new residual
    fp8: str | None = None  # out_dtype's FP8 format, else None

    @property
    def fp8_dtype(self) -> torch.dtype | None:
        return None if self.fp8 is None else getattr(torch, self.fp8)


def describe_gated_residual_norm_modulate(
    residual: torch.Tensor,
    update: torch.Tensor,
    gate: torch.Tensor | None,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    norm: str = "layer",
    out_dtype: torch.dtype | None = None,
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
    R.param_problems(r.D, weight, bias, problems)
    lays = {n: (mod_layout(n, t, r, problems) if t is not None else None)
            for n, t in (("gate", gate), ("scale", scale), ("shift", shift))}
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in lays.values() if lay is not None))
    fp8 = R.fp8_format("gated_residual_norm_modulate", True, out_dtype, desc, problems)
    geom = None
    if not problems:
        t1 = update.dtype if gate is None else torch.promote_types(gate.dtype, update.dtype)
        geom = Geometry(norm, r, u, lays["gate"], lays["scale"], lays["shift"], t1,
                        torch.promote_types(residual.dtype, t1),
                        R.chain_dtypes(norm, residual.dtype, scale, shift, weight, bias), fp8)
    desc.info = {"geom": geom, "empty": residual.numel() == 0}
    return desc


def empty_result(geom: Geometry):
    """The runner of an empty input: two new empty tensors shaped like residual."""
    shape = geom.residual.shape
    if geom.fp8 is not None:
        fp8 = geom.fp8_dtype

        def run_fp8(residual, *_):
            return (torch.empty(shape, dtype=fp8, device=residual.device),
                    torch.empty((*shape[:-1], 1), dtype=torch.float32, device=residual.device),
                    torch.empty(shape, dtype=residual.dtype, device=residual.device))

        return run_fp8

    def run(residual, *_):
        mk = lambda: torch.empty(shape, dtype=residual.dtype, device=residual.device)  # noqa: E731
        return mk(), mk()

    return run


GATED_RESIDUAL_NORM_MODULATE = Op(
    "norm.gated_residual_norm_modulate",
    distribution=R.DISTRIBUTION,
    summary="new = residual + gate * update (bit-exact); out = norm(new) * (scale_offset + scale) + shift",
    describe=describe_gated_residual_norm_modulate,
    n_tensors=7,
    reference=".gated_residual_norm_modulate_torch:gated_residual_norm_modulate",
    backends=[
        Backend("triton", "._row_norm_triton:prepare_gated", R.TRITON_FP8_CAPS,
                Contract.close({**R.MOD_TOL, **R.FP8_TOL}), priority=10,
                notes="new_residual bit-exact to eager (rounded per op, no FMA); out close (fp32 statistics, "
                "one rounding)" + R.FP8_NOTE, aot="aot_variants_gated", executed_on=R.EXECUTED_TRITON),
        Backend("flydsl", "._row_norm_flydsl:prepare_gated", R.FLYDSL_CAPS, Contract.close(R.MOD_TOL), priority=4,
                notes="new_residual bit-exact to eager (rounded per op, no FMA); out close. " + R.FLYDSL_NOTE,
                aot="flydsl_variants_gated", compiled_for=R.FLYDSL_TARGETS),
        Backend("torch", ".gated_residual_norm_modulate_torch", R.TORCH_FP8_CAPS, Contract.exact(),
                notes="the eager chain itself: gated_residual, then the norm + modulate chain",
                executed_on=R.EXECUTED_TORCH),
    ],
    default_exact=False,
    empty=empty_result,
    bench=f"{R.BENCH}:gated_residual_norm_modulate_cases",
)


@GATED_RESIDUAL_NORM_MODULATE.entry
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
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor] | tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
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
    out_dtype: ``None`` or an FP8 dtype: ``out`` quantized per row in the same pass, returned as
        ``(codes, scale, new_residual)`` (as ``ln_modulate``'s ``out_dtype``; the reference is the
        eager chain, then the row-wise quantization of its ``out``).
    exact: ``None``/``False``: the fastest backend (``out`` close); ``True``: the eager chain.
    backend: ``None``, ``"triton"`` or ``"torch"``.
    """
    tensors = (residual, update, gate, scale, shift, weight, bias)
    if out_dtype is not None:
        if is_compiling():
            return _fp8_op(*tensors, norm, out_dtype, float(eps), float(scale_offset), backend, exact)
        run = GATED_RESIDUAL_NORM_MODULATE.plan(tensors, backend, exact, (("norm", norm), ("out_dtype", out_dtype)))
        return run(*tensors, norm, out_dtype, eps, scale_offset)
    if is_compiling():
        return _custom_op(residual, update, gate, scale, shift, weight, bias, norm, float(eps), float(scale_offset),
                          backend, exact)
    run = GATED_RESIDUAL_NORM_MODULATE.plan(tensors, backend, exact, (("norm", norm),))
    return run(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset)


can_use_gated_residual_norm_modulate = GATED_RESIDUAL_NORM_MODULATE.can_use
gated_residual_norm_modulate_reference = GATED_RESIDUAL_NORM_MODULATE.reference


def _fake(residual, update, gate, scale, shift, weight, bias, norm, eps, scale_offset, backend=None, exact=None):
    if norm in NORMS:
        GATED_RESIDUAL_NORM_MODULATE.validate(residual, update, gate, scale, shift, weight, bias,
                                              options=(("norm", norm),))
    mk = lambda: torch.empty(residual.shape, dtype=residual.dtype, device=residual.device)  # noqa: E731
    return mk(), mk()


_custom_op = GATED_RESIDUAL_NORM_MODULATE.custom_op(
    "gated_residual_norm_modulate", fake=_fake, keyed=("norm",),
    schema="(Tensor residual, Tensor update, Tensor? gate, Tensor scale, Tensor? shift, Tensor? weight, "
    "Tensor? bias, str norm, float eps, float scale_offset, str? backend=None, bool? exact=None) -> (Tensor, Tensor)",
)


def _fake_fp8(residual, update, gate, scale, shift, weight, bias, norm, out_dtype, eps, scale_offset, backend=None,
              exact=None):
    if norm in NORMS:
        GATED_RESIDUAL_NORM_MODULATE.validate(residual, update, gate, scale, shift, weight, bias,
                                              options=(("norm", norm), ("out_dtype", out_dtype)))
    codes, scales = R.fake_result_fp8(residual, out_dtype)
    return codes, scales, torch.empty(residual.shape, dtype=residual.dtype, device=residual.device)


_fp8_op = GATED_RESIDUAL_NORM_MODULATE.custom_op(
    "gated_residual_norm_modulate_fp8", fake=_fake_fp8, keyed=("norm", "out_dtype"),
    schema="(Tensor residual, Tensor update, Tensor? gate, Tensor scale, Tensor? shift, Tensor? weight, "
    "Tensor? bias, str norm, ScalarType out_dtype, float eps, float scale_offset, str? backend=None, "
    "bool? exact=None) -> (Tensor, Tensor, Tensor)",
)
