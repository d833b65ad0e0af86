"""Triton device helpers shared by the indexed variants of the modulate kernels (imports Triton).

An indexed op picks, for token ``(b, s)``, the row ``index[b, s]`` of a ``[K, D]`` table.
The kernels never read outside a table and never return a plausible-looking value for a
bad index: :func:`table_row` clamps the row it reads to 0 and reports whether the index
was in range, and :func:`poison` turns the result of an out-of-range token into NaN. The
host checks the index in eager calls (one reduction and one sync per index tensor and
version; see ``sgl_diffusion_core.check_index_range``); under ``torch.compile``, CUDA graph
capture, ``check_index=False`` or a write the version counter cannot see, this is the guard.
"""

from __future__ import annotations

import triton
import triton.language as tl


@triton.jit
def table_row(IDX, b, s, i_sb, i_ss, K):
    """``(row, ok)``: the table row token ``(b, s)`` reads (0 when its index is out of
    ``[0, K)``) and whether its index was in range. ``b`` and ``s`` are int64."""
    k = tl.load(IDX + b * i_sb + s * i_ss).to(tl.int64)
    ok = (k >= 0) & (k < K)
    return tl.where(ok, k, 0), ok


@triton.jit
def poison(y, ok):
    """``y`` (fp32) where the token's index was in range, NaN elsewhere."""
    return tl.where(ok, y, float("nan"))


INDEX_ARGS = ("i_sb", "i_ss", "K")  # the kernels' index arguments (AOT signatures)


def index_scalars(ix) -> tuple[int, int, int]:
    """``(i_sb, i_ss, K)`` kernel arguments of an ``IndexLayout`` (placeholders without one)."""
    return (0, 0, 1) if ix is None else (ix.sb, ix.ss, ix.K)
