"""``rms_norm``: ``x * rsqrt(mean(x.float()**2) + eps) [* weight] [+ bias]`` (diffusers ``RMSNorm``).

Backends (``_row_norm.backends``): ``_row_norm_triton`` (close), ``_row_norm_exact_triton``
(exact, behind its gate) and ``rms_norm_torch`` (the eager chain).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc, Op, UnsupportedInputError, is_compiling

from . import _row_norm as R


def describe_rms_norm(x, weight=None, bias=None, **_) -> InputDesc:
    """Validate the arguments of ``rms_norm`` and describe them for backend selection."""
    return R.describe_row_norm("rms_norm", x, None, None, weight, bias)


RMS_NORM = Op(
    "norm.rms_norm",
    distribution=R.DISTRIBUTION,
    summary="x * rsqrt(mean(x.float()**2) + eps) [* weight] [+ bias] (diffusers RMSNorm)",
    describe=describe_rms_norm,
    n_tensors=3,
    reference=".rms_norm_torch:rms_norm",
    backends=R.backends("rms_norm", R.RMS_TOL, "aot_variants_rms_norm"),
    default_exact=True,
    empty=R.empty_result,
    bench=f"{R.BENCH}:rms_norm_cases",
)


@RMS_NORM.entry
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
    exact, backend: as in :func:`layer_norm` (``layer_norm.py``).
    """
    if is_compiling():
        return _custom_op(x, None, None, weight, bias, float(eps), 1.0, backend, exact)
    return RMS_NORM.plan((x, weight, bias), backend, exact)(x, weight, bias, eps, 1.0)


can_use_rms_norm = RMS_NORM.can_use
rms_norm_reference = RMS_NORM.reference


def _fake(x, scale, shift, weight, bias, eps, scale_offset, backend=None, exact=None):
    if scale is not None or shift is not None:
        raise UnsupportedInputError("norm.rms_norm: unsupported input:\n  - rms_norm takes no scale or shift")
    RMS_NORM.validate(x, weight, bias)
    return R.fake_result("rms_norm", x, None, None, weight, bias)


_custom_op = RMS_NORM.custom_op("rms_norm", fake=_fake, schema=R.SCHEMA, tensors=(0, 3, 4))
