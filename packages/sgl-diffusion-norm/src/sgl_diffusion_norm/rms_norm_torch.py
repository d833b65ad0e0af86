"""The eager chain of ``rms_norm`` (its exact contract; ``_row_norm_torch``) and its ``torch`` backend."""

from __future__ import annotations

from ._row_norm_torch import norm_chain


def rms_norm(x, weight=None, bias=None, *, eps=1e-6):
    return norm_chain("rms", x, None, None, weight, bias, eps)


def prepare(geom, x, weight, bias):
    """The ``torch`` backend's runner: the eager chain itself."""

    def run(x, weight, bias, eps, scale_offset):
        return norm_chain("rms", x, None, None, weight, bias, eps)

    return run
