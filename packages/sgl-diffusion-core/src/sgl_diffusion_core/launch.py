"""Launch configuration as typed data; the one place that computes block sizes and warps.

Row kernels (one program per row of a ``[rows, D]`` problem) read a whole row into
registers when it fits (``chunks == 1``) or loop over it in ``block``-wide chunks
(statistics pass, then an output pass that re-reads the row from cache).
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from .vendor import warp_size


def next_pow2(n: int) -> int:
    return 1 << max(0, (n - 1).bit_length())


def warps_for(work: int, per_thread: int, warp: int, max_warps: int = 8) -> int:
    """Warps for a program tile: ``work`` (bytes, or any unit) at ``per_thread`` of it per thread,
    ``warp`` threads per warp (32 on CUDA, 64 on ROCm), clamped to ``[1, max_warps]``."""
    return max(1, min(max_warps, work // (per_thread * warp)))


@dataclass(frozen=True)
class RowConfig:
    block: int  # elements per chunk (power of two)
    chunks: int  # chunks per row; 1 = whole row in registers
    num_warps: int
    num_stages: int = 1
    max_registers: int | None = None  # CUDA only: cap registers per thread (Triton's maxnreg)
    unroll: int | None = None  # explicit unroll factor of the chunk loops; None = the compiler's choice
    tail: int = 0  # a row held whole (chunks == 1): a second tile of this many columns after ``block``
    # (a power of two below it; 0: none), so that 3072 columns are 2048 + 1024, not one 4096 block

    def launch_options(self, platform: str) -> dict:
        """Triton launch/compile options of this configuration for a platform."""
        opts: dict = {"num_warps": self.num_warps, "num_stages": self.num_stages}
        if self.max_registers is not None and platform == "cuda":
            opts["maxnreg"] = self.max_registers
        return opts

    @classmethod
    def from_heuristic(cls, n_cols: int, elem_bytes: int, platform: str, arch: int | str | None = None,
                       n_rows: int | None = None) -> RowConfig:
        return _row_config(n_cols, elem_bytes, platform, arch, n_rows is not None and n_rows < _FEW_ROWS)


# Below this many rows (FLUX: 4608) there are too few programs to hide latency with small
# chunks, and a whole power-of-two row in registers wins when it wastes no lanes.
_FEW_ROWS = 16384
# Bytes of one chunk: 1024 bf16 values. With 2 warps that is 16 values (2 x 16-byte loads)
# per thread per chunk, and many resident programs per SM keep enough loads in flight.
_CHUNK_BYTES = 2048


@functools.cache
def _row_config(n_cols: int, elem_bytes: int, platform: str, arch: int | str | None, few_rows: bool) -> RowConfig:
    """Rules measured on one H200 (bf16, docs/benchmarks/ln_modulate_tune_h200.json):

    * D=5120 x 75600 rows: 1024-wide chunks x 5 with 2 warps 92.0% of copy; the whole row in
      an 8192 block (37.5% masked lanes) 65% at best; 2048 x 3 84%.
    * D=3072 x 118800 rows: 1024 x 3 with 2 warps 96.6%; whole row (4096 block) 82%.
    * D=3072 x 4608 rows: whole row (4096 block, 25% masked) with 2 warps 86.3%; 1024 x 3 82%.
    * more warps per row always lost (8 warps: 60-70%, 16: 40-50%).
    * the compiler unrolls the chunk loops and hoists the loads: 185 registers per thread at
      5 chunks, so only ~5 programs fit an SM. A standalone sweep of the same kernel with an
      explicit ``tl.range(..., loop_unroll_factor=U)`` reached, at D=5120: U=5 + maxnreg=80
      98.8% of copy, U=5 + maxnreg=128 97.1%, U=1 + maxnreg=128 96.2%, U=2 uncapped 93.7%
      (docs/benchmarks/README.md). The cap alone, with the compiler's own unrolling, measured
      91.9% at Wan vs 91.6-92.5% without it, i.e. no change; so bf16/fp16 rows of 4+ chunks
      on CUDA get both: ``unroll=chunks`` and ``maxnreg=80``. At 3 chunks (D=3072) nothing
      beat the compiler's choice (the cap alone cost 0.7%), so those rows keep it.

    ROCm (64-wide wavefronts) reuses the same bytes per chunk with one wavefront per row;
    it is compiled in the compile lanes but was not measured on hardware.
    """
    n = max(n_cols, 1)
    warp = warp_size(platform)
    chunk = max(_CHUNK_BYTES // elem_bytes, 16)
    full = next_pow2(n)
    if n <= chunk or (few_rows and full * elem_bytes <= 4 * _CHUNK_BYTES):
        block = full
    else:
        block = chunk
    if block > chunk:
        # a whole wide row: 32 values per thread (2 warps measured equal to 4 at FLUX without
        # affine; with weight and bias the 2-warp build spills, the 4-warp one does not)
        warps = max(1, block // (32 * warp))
    else:
        # ~16 values per thread per chunk, at most 2 warps per row
        warps = max(1, min(2, block // (16 * warp)))
    chunks = -(-n // block)
    # measured for 2-byte dtypes only (fp32 rows spill twice as much under the cap: unmeasured)
    capped = platform == "cuda" and chunks >= 4 and elem_bytes == 2
    # the cap only pays together with fully unrolled chunk loops (sweep above: U=chunks + 80)
    return RowConfig(block=block, chunks=chunks, num_warps=warps, max_registers=80 if capped else None,
                     unroll=chunks if capped else None)


# The largest 1-D launch grid (CUDA's grid x dimension; also the int32 program id's range).
MAX_GRID = 2**31 - 1


@dataclass(frozen=True)
class TileConfig:
    """Elementwise row ops: one program per (row, ``block``-wide column tile), on a 1-D grid
    whose consecutive programs take consecutive tiles of a row (:meth:`grid`; in the kernel
    ``triton_math.program_tile``), so programs running side by side stream neighbouring bytes.
    Against a ``(rows, tiles)`` grid with rows fastest that gained 2.3-5.8 points of copy
    bandwidth for the activations and 3-5 for the modulate ops on the H200 (activation_tune_h200.json,
    indexed_order_sweep_h200.json)."""

    block: int
    num_warps: int

    @classmethod
    def from_heuristic(cls, n_cols: int, elem_bytes: int, platform: str) -> TileConfig:
        return _tile_config(n_cols, elem_bytes, platform)

    def grid(self, rows: int, n_cols: int) -> tuple[tuple[int], int]:
        """``((rows * tiles,), tiles)``: the 1-D launch grid over ``rows`` rows of ``n_cols`` and the
        column tiles per row. Raises ``UnsupportedInputError`` past :data:`MAX_GRID` programs (far
        beyond any tensor a GPU holds: several tiles per row need rows of at least 2 * block)."""
        tiles = -(-n_cols // self.block)
        if rows * tiles > MAX_GRID:
            from .errors import UnsupportedInputError

            raise UnsupportedInputError(f"{rows} rows x {tiles} column tiles exceed the launch grid ({MAX_GRID})")
        return (rows * tiles,), tiles

    def launch_options(self, platform: str) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}


@functools.cache
def _tile_config(n_cols: int, elem_bytes: int, platform: str) -> TileConfig:
    """4 KB of the widest operand per program with 2 warps (four 16-byte accesses per thread at bf16).

    Measured on one H200, bf16 (docs/benchmarks/modulate_tile_sweep_h200.json): with exact
    rounding done by the hardware conversion, 2048 x 2 warps was
    within 0.4 points of the best of 23 pairs everywhere: ``scale_shift`` 93.1% of copy at Wan
    (best 93.3%), ``gated_residual`` 94.3% at Wan (best 94.7%) and 96.5% at HunyuanVideo (best
    96.6%); 1024 x 2 was 0.4-1.4 points lower and 2048 x 8 (the first, unmeasured rule) 67-74%.
    On the 1-D grid the modulate kernels use (consecutive programs on consecutive tiles of a row;
    docs/benchmarks/indexed_order_sweep_h200.json) 2048 x 2 was within 0.1-1.3
    points of the best of 6 pairs at Wan and HunyuanVideo (``scale_shift`` 96.6% at Wan,
    ``gated_residual`` 97.8%, the indexed forms 94.8 / 97.1%).
    ROCm keeps the bytes with one 64-wide wavefront per 2 KB.
    """
    warp = warp_size(platform)
    block = min(next_pow2(max(n_cols, 1)), max(4096 // elem_bytes, 16))
    warps = max(1, min(2, block * elem_bytes // (32 * warp)))
    return TileConfig(block=block, num_warps=warps)
