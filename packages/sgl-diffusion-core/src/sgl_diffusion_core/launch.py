"""Launch configuration as typed data; the one place that computes block sizes and warps.

Row kernels (one program per row of a ``[rows, D]`` problem) read a whole row into
registers when it fits (``chunks == 1``) or loop over it in ``block``-wide chunks
(statistics pass, then an output pass that re-reads the row from cache).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

# Measured on one H200 (see docs/benchmarks): (D, elem_bytes) -> (block, num_warps).
# Entries override the generic rule below for shapes where it was beaten.
_CUDA_TUNED: dict[tuple[int, int], tuple[int, int]] = {}


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


@dataclass(frozen=True)
class RowConfig:
    block: int  # elements per chunk (power of two)
    chunks: int  # chunks per row; 1 = whole row in registers
    num_warps: int
    num_stages: int = 1

    @classmethod
    def from_heuristic(cls, n_cols: int, elem_bytes: int, platform: str, arch: int | str | None = None) -> RowConfig:
        return _row_config(n_cols, elem_bytes, platform, arch)


@functools.cache
def _row_config(n_cols: int, elem_bytes: int, platform: str, arch: int | str | None) -> RowConfig:
    warp = 64 if platform == "hip" else 32
    tuned = _CUDA_TUNED.get((n_cols, elem_bytes)) if platform == "cuda" else None
    if tuned is not None:
        block, warps = tuned
    else:
        # Whole row in registers up to 8192 columns (16 fp32 values per thread at 16 warps).
        block = min(next_pow2(max(n_cols, 1)), 8192)
        # ~16 bytes of input per thread per chunk gives 128-bit accesses; at most 16 warps.
        threads = max(warp, min(block * elem_bytes // 16, 512 if warp == 32 else 1024))
        warps = max(1, min(16, threads // warp))
        if block * elem_bytes >= 8192 and warps < 8 and warp == 32:
            warps = 8
    chunks = -(-max(n_cols, 1) // block)
    return RowConfig(block=block, chunks=chunks, num_warps=warps)
