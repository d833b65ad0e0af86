"""The eager chain of ``rms_modulate`` (its exact contract; ``_row_norm_torch``) and its ``torch`` backend."""

from __future__ import annotations

from ._row_norm_torch import norm_chain


def rms_modulate(x, scale, shift=None, *, weight=None, eps=1e-6, scale_offset=1.0):
    return norm_chain("rms", x, scale, shift, weight, None, eps, scale_offset)


def prepare(geom, x, scale, shift, weight, bias):
    """The ``torch`` backend's runner: the eager chain itself (``bias``: the custom op's shared schema)."""

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        return norm_chain("rms", x, scale, shift, weight, bias, eps, scale_offset)

    return run
