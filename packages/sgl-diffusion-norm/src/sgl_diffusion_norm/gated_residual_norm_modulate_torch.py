"""The eager chain of ``gated_residual_norm_modulate`` (``_row_norm_torch.gated_chain``: the definition of
its exact contract); also its ``torch`` backend."""

from __future__ import annotations

from ._row_norm_torch import gated_chain, quantize_rows


def gated_residual_norm_modulate(residual, update, gate, scale, shift=None, *, norm="layer", weight=None, bias=None,
                                 eps=1e-6, scale_offset=1.0, out_dtype=None):
    out, new = gated_chain(residual, update, gate, scale, shift, norm, weight, bias, eps, scale_offset)
    return (out, new) if out_dtype is None else (*quantize_rows(out, out_dtype), new)


def prepare(geom, residual, update, gate, scale, shift, weight, bias):
    """The ``torch`` backend's runner: the eager chain itself."""
    norm = geom.norm
    if geom.fp8 is not None:  # out_dtype=FP8: the chain, then the row-wise quantization of its out
        fp8 = geom.fp8_dtype

        def run_fp8(residual, update, gate, scale, shift, weight, bias, _norm, out_dtype, eps, scale_offset):
            out, new = gated_chain(residual, update, gate, scale, shift, norm, weight, bias, eps, scale_offset)
            return (*quantize_rows(out, fp8), new)

        return run_fp8

    def run(residual, update, gate, scale, shift, weight, bias, _norm, eps, scale_offset):
        return gated_chain(residual, update, gate, scale, shift, norm, weight, bias, eps, scale_offset)

    return run
