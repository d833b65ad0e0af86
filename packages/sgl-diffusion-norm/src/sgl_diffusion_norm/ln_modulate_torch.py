"""The eager chain of ``ln_modulate`` (its exact contract; ``_row_norm_torch``) and its ``torch`` backend."""

from __future__ import annotations

from ._row_norm_torch import norm_chain, quantize_rows


def ln_modulate(x, scale, shift=None, *, weight=None, bias=None, eps=1e-6, scale_offset=1.0, out_dtype=None):
    y = norm_chain("layer", x, scale, shift, weight, bias, eps, scale_offset)
    return y if out_dtype is None else quantize_rows(y, out_dtype)


def prepare(geom, x, scale, shift, weight, bias):
    """The ``torch`` backend's runner: the eager chain itself."""

    if geom.fp8 is not None:  # out_dtype=FP8: the chain, then its row-wise quantization
        fp8 = geom.fp8_dtype

        def run_fp8(x, scale, shift, weight, bias, out_dtype, eps, scale_offset):
            return quantize_rows(norm_chain("layer", x, scale, shift, weight, bias, eps, scale_offset), fp8)

        return run_fp8

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        return norm_chain("layer", x, scale, shift, weight, bias, eps, scale_offset)

    return run
