"""``ln_modulate``: ``LayerNorm(x) [* weight + bias] * (scale_offset + scale) + shift`` in one pass.

Backends (``_row_norm.backends``): ``_row_norm_triton`` (close), ``_row_norm_exact_triton``
(exact, behind its gate) and ``ln_modulate_torch`` (the eager chain).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc, Op, is_compiling

from . import _row_norm as R


def describe_ln_modulate(x, scale, shift=None, weight=None, bias=None, out_dtype=None, **_) -> InputDesc:
    """Validate the arguments of ``ln_modulate`` and describe them for backend selection."""
    return R.describe_row_norm("ln_modulate", x, scale, shift, weight, bias, out_dtype)


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
    out_dtype: torch.dtype | None = None,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor | tuple[torch.Tensor, torch.Tensor]:
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
    out_dtype: ``None`` (the result in x's dtype) or ``torch.float8_e4m3fn`` / ``torch.float8_e4m3fnuz``:
        the result quantized per row in the same pass, returned as ``(codes, scale)`` with
        ``scale`` fp32 ``[..., 1]`` and ``codes * scale ~= result``, the input ``fp8_linear`` takes.
        Its reference is the eager chain, then ``quantize_fp8``'s row-wise quantization
        (``scale = max(amax, 1e-12) / fp8_max``, codes saturated to ``+-fp8_max``, ties to even);
        ``exact=None`` means close here (tolerances: core's ``FP8_TOL``, one FP8 ulp), ``True``
        runs that reference. The ``triton`` backend writes the formats the device stores (sm_89+
        and gfx950: e4m3fn; gfx942: e4m3fnuz), the ``torch`` backend both anywhere.
    backend: ``None`` (best for the inputs and ``exact``), ``"triton"``, ``"triton_exact"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x (FP8: the pair above). Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    if out_dtype is not None:
        return R.fp8_call(LN_MODULATE, _fp8_op, (x, scale, shift, weight, bias), out_dtype, eps, scale_offset, exact,
                          backend)
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


def _fake_fp8(x, scale, shift, weight, bias, out_dtype, eps, scale_offset, backend=None, exact=None):
    LN_MODULATE.validate(x, scale, shift, weight, bias, options=(("out_dtype", out_dtype),))
    return R.fake_result_fp8(x, out_dtype)


_fp8_op = LN_MODULATE.custom_op("ln_modulate_fp8", fake=_fake_fp8, schema=R.SCHEMA_FP8, keyed=("out_dtype",))
