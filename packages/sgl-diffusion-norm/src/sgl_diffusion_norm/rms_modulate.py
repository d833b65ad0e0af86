"""``rms_modulate``: ``(rms_norm(x, weight) * (scale_offset + scale) + shift).to(x.dtype)`` in one pass.

Backends (``_row_norm.backends``): ``_row_norm_triton`` (close), ``_row_norm_exact_triton``
(exact, behind its gate) and ``rms_modulate_torch`` (the eager chain).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc, Op, is_compiling

from . import _row_norm as R


def describe_rms_modulate(x, scale, shift=None, weight=None, bias=None, out_dtype=None, **_) -> InputDesc:
    """Validate the arguments of ``rms_modulate`` and describe them for backend selection (``bias``:
    only through the custom op's shared schema)."""
    return R.describe_row_norm("rms_modulate", x, scale, shift, weight, bias, out_dtype)


RMS_MODULATE = Op(
    "norm.rms_modulate",
    distribution=R.DISTRIBUTION,
    summary="RMSNorm(x) [* weight] * (scale_offset + scale) + shift",
    describe=describe_rms_modulate,
    n_tensors=5,
    reference=".rms_modulate_torch:rms_modulate",
    backends=R.backends("rms_modulate", R.MOD_TOL, "aot_variants_rms_modulate"),
    default_exact=True,
    empty=R.empty_result,
    bench=f"{R.BENCH}:rms_modulate_cases",
)


@RMS_MODULATE.entry
def rms_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
    """``(rms_norm(x, weight) * (scale_offset + scale) + shift).to(x.dtype)`` in one pass.

    Same layouts and arguments as :func:`ln_modulate` (``ln_modulate.py``; RMSNorm takes no bias here).
    """
    if out_dtype is not None:
        return R.fp8_call(RMS_MODULATE, _fp8_op, (x, scale, shift, weight, None), out_dtype, eps, scale_offset, exact,
                          backend)
    if is_compiling():
        return _custom_op(x, scale, shift, weight, None, float(eps), float(scale_offset), backend, exact)
    return RMS_MODULATE.plan((x, scale, shift, weight, None), backend, exact)(
        x, scale, shift, weight, None, eps, scale_offset)


can_use_rms_modulate = RMS_MODULATE.can_use
rms_modulate_reference = RMS_MODULATE.reference


def _fake(x, scale, shift, weight, bias, eps, scale_offset, backend=None, exact=None):
    RMS_MODULATE.validate(x, scale, shift, weight, bias)
    return R.fake_result("rms_modulate", x, scale, shift, weight, bias)


_custom_op = RMS_MODULATE.custom_op("rms_modulate", fake=_fake, schema=R.SCHEMA)


def _fake_fp8(x, scale, shift, weight, bias, out_dtype, eps, scale_offset, backend=None, exact=None):
    RMS_MODULATE.validate(x, scale, shift, weight, bias, options=(("out_dtype", out_dtype),))
    return R.fake_result_fp8(x, out_dtype)


_fp8_op = RMS_MODULATE.custom_op("rms_modulate_fp8", fake=_fake_fp8, schema=R.SCHEMA_FP8, keyed=("out_dtype",))
