"""The eager chain of ``ln_modulate`` (its exact contract; ``_row_norm_torch``) and its ``torch`` backend."""

from __future__ import annotations

from ._row_norm_torch import norm_chain


def ln_modulate(x, scale, shift=None, *, weight=None, bias=None, eps=1e-6, scale_offset=1.0):
    return norm_chain("layer", x, scale, shift, weight, bias, eps, scale_offset)


def prepare(geom, x, scale, shift, weight, bias):
    """The ``torch`` backend's runner: the eager chain itself."""

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        return norm_chain("layer", x, scale, shift, weight, bias, eps, scale_offset)

    return run
