"""``ln_modulate``: ``LayerNorm(x) [* weight + bias] * (scale_offset + scale) + shift`` in one pass.

Backends (``_row_norm.backends``): ``_row_norm_triton`` (close), ``_row_norm_exact_triton``
(exact, behind its gate) and ``ln_modulate_torch`` (the eager chain).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc, Op, is_compiling

from . import _row_norm as R


def describe_ln_modulate(x, scale, shift=None, weight=None, bias=None, **_) -> InputDesc:
    """Validate the arguments of ``ln_modulate`` and describe them for backend selection."""
    return R.describe_row_norm("ln_modulate", x, scale, shift, weight, bias)


LN_MODULATE = Op(
    "norm.ln_modulate",
    distribution=R.DISTRIBUTION,
    summary="LayerNorm(x) [* weight + bias] * (scale_offset + scale) + shift",
    describe=describe_ln_modulate,
    n_tensors=5,
    reference=".ln_modulate_torch:ln_modulate",
    backends=R.backends("ln_modulate", R.MOD_TOL, "aot_variants"),
    default_exact=True,
    empty=R.empty_result,
    bench=f"{R.BENCH}:ln_modulate_cases",
)


@LN_MODULATE.entry
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
    if is_compiling():
        return _custom_op(x, scale, shift, weight, bias, float(eps), float(scale_offset), backend, exact)
    return LN_MODULATE.plan((x, scale, shift, weight, bias), backend, exact)(
        x, scale, shift, weight, bias, eps, scale_offset)


can_use_ln_modulate = LN_MODULATE.can_use
ln_modulate_reference = LN_MODULATE.reference


def _fake(x, scale, shift, weight, bias, eps, scale_offset, backend=None, exact=None):
    LN_MODULATE.validate(x, scale, shift, weight, bias)
    return R.fake_result("ln_modulate", x, scale, shift, weight, bias)


_custom_op = LN_MODULATE.custom_op("ln_modulate", fake=_fake, schema=R.SCHEMA)
