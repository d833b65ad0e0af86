"""The eager chain of ``gated_residual_norm_modulate`` (``_row_norm_torch.gated_chain``: the definition of
its exact contract); also its ``torch`` backend."""

from __future__ import annotations

from ._row_norm_torch import gated_chain


def gated_residual_norm_modulate(residual, update, gate, scale, shift=None, *, norm="layer", weight=None, bias=None,
                                 eps=1e-6, scale_offset=1.0):
    return gated_chain(residual, update, gate, scale, shift, norm, weight, bias, eps, scale_offset)


def prepare(geom, residual, update, gate, scale, shift, weight, bias):
    """The ``torch`` backend's runner: the eager chain itself."""
    norm = geom.norm

    def run(residual, update, gate, scale, shift, weight, bias, _norm, eps, scale_offset):
        return gated_chain(residual, update, gate, scale, shift, norm, weight, bias, eps, scale_offset)

    return run
