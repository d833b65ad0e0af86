"""Launch rules of the close row-norm kernel (``_row_norm_triton``): the block, chunks, warps and register
cap of a row (:func:`width_config`, :func:`gated_config`), of an FP8 result (:func:`fp8_config`,
:func:`gated_fp8_config`), and whether a build takes the row width as a constant (:func:`width_constant`).
Each rule's docstring gives the measurement behind it (files under docs/benchmarks/).
"""

from __future__ import annotations

import torch

from sgl_diffusion_core import RowConfig, device_arch, next_pow2, tensor_platform


def config_for(D: int, rows: int, dtype: torch.dtype, device: torch.device) -> RowConfig:
    """Launch rule of the four norms (:func:`width_config`) at x's element size and row count."""
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    return width_config(D, dtype.itemsize, plat, arch, n_rows=rows)


# the widths :func:`width_config`'s own rule was swept at; narrower and wider rows keep the core row rule
_SWEPT_D = (1152, 6144)
_MANY_ROWS = 16384  # as the core row rule: from here a launch has enough programs for small chunks


def width_config(D: int, elem_bytes: int, platform: str, arch: int | str | None = None,
                 n_rows: int | None = None) -> RowConfig:
    """Launch rule of the four norms (close kernel). bf16 / fp16 rows of 1152-6144 columns on CUDA:

    * below 16384 rows, a row whose power-of-two block wastes at most 1/16 of it (1920, 2048, 3840, 4096)
      is held whole, 32 values per thread; below 3072 columns, half that block and a smaller tile where
      they pad at most 1/16 (1152 = 1024 + 128, 1536, 2240 = 2048 + 256, 2304-2560), 16 values per thread
      in the first; other rows in 512-wide chunks on one warp, unrolled, below 3072, 1024-wide on 4 warps up
      to 5120, 2048 above. Two tiles against 512-wide chunks, one H100, ln_modulate x 4096, B 1 / 2, % of copy:
      2240 96.2 / 98.4 vs 91.7 / 89.8, 2432 98.1 / 103.3 vs 88.1 / 92.0, 1152 88.7 / 94.7 vs 91.5 / 90.9;
    * from 16384 rows, the widest of 512 / 1024 / 2048 that the row fills at least 1.875 times (two
      chunks, the second at least 7/8 full), 16 values per thread.

    Swept on one H100 (bf16 ``ln_modulate``, ``rms_modulate``, 13 DiT widths x B 1, 2 x 4096 / 32760 tokens,
    up to 23 launches each): worst case 72 -> 83% of copy, mean 90 -> 95% (before the two tiles). fp32 rows,
    ROCm and other widths keep ``RowConfig.from_heuristic`` (the H200 rule the sweep started from)."""
    if platform != "cuda" or elem_bytes != 2 or not _SWEPT_D[0] <= D <= _SWEPT_D[1]:
        return RowConfig.from_heuristic(D, elem_bytes, platform, arch, n_rows=n_rows)
    full = next_pow2(D)
    if n_rows is not None and n_rows < _MANY_ROWS:
        if full <= 4096 and 16 * D >= 15 * full:
            return RowConfig(block=full, chunks=1, num_warps=full // 1024)
        head, tail = _two_tiles(D)  # held as two tiles: 1152 = 1024 + 128
        if D < 3072 and tail and 16 * D >= 15 * (head + tail):
            return RowConfig(block=head, chunks=1, num_warps=head // 512, tail=tail)
        block = 512 if D < 3072 else 1024 if D <= 5120 else 2048
        warps = 1 if block == 512 else 4
    else:
        block = 2048
        while block > 512 and 8 * D < 15 * block:
            block //= 2
        warps = block // 512
    chunks = -(-D // block)
    unroll = chunks if block == 512 and chunks > 1 else None
    return RowConfig(block=block, chunks=chunks, num_warps=warps, unroll=unroll)


def gated_config(D: int, elem_bytes: int, platform: str, n_rows: int | None = None) -> RowConfig:
    """Launch rule of ``gated_residual_norm_modulate``: the row rule with 4 warps and, at 4+ chunks,
    chunks twice as wide, fully unrolled and uncapped.

    The gated pass holds residual, update and gate per element, so the row rule's launch (2 warps,
    1024-wide chunks, at D=5120 unrolled under an 80-register cap) spills on sm_90: 284 B (LayerNorm) /
    2850 B (RMSNorm) per thread at D=5120, 28 B at D=3072. Measured on one H200, bf16 (% of a same-run
    copy): Wan (75600 x 5120) 2048 x 3 with 4 warps and unroll 3 93.7% (row rule 81.7%, 1024 x 5 with 4
    warps 89.2%, 8 warps 81.8%); HunyuanVideo (118800 x 3072) 1024 x 3 with 4 warps 98.0% (row rule
    96.4%, 8 warps 74.0%). A whole row in registers (FLUX, few rows) keeps the row rule (100.1%). ROCm
    keeps the row rule (compiled, not measured). The op at these shapes with this rule:
    docs/benchmarks/gated_residual_norm_modulate_bench_h200.json."""
    base = RowConfig.from_heuristic(D, elem_bytes, platform, n_rows=n_rows)
    if platform != "cuda" or base.chunks == 1:
        return base
    block = base.block * 2 if base.chunks >= 4 else base.block
    chunks = -(-max(D, 1) // block)
    return RowConfig(block=block, chunks=chunks, num_warps=4, unroll=chunks if block > base.block else None)


_FP8_HELD = 4096  # the widest FP8 row held in one power-of-two block (fp32, 32 values per thread at 4 warps)
_FP8_HELD_TAIL = 6144  # CUDA: wider rows held as a 4096 block and a tail tile up to this width
_FP8_CHUNK = 1024  # wider FP8 rows: chunks of this many columns, 2 warps (16 values per thread)
_FP8_VALUES = 2560  # CUDA, rows of 2049-6144 columns held with a tail: warps for at most 80 values per thread
_GATED_FP8_VALUES = 1280  # CUDA, the gated op's rows of 4097-8192 columns: 40 values per thread and stream


def fp8_config(D: int, base: RowConfig, platform: str = "cuda") -> RowConfig:
    """Launch rule of an FP8 result (``out_dtype``): the row in registers (:func:`_fp8_held`; read once, its
    codes following its amax): one block up to 4096 columns, on CUDA a 4096 block and a tail up to 6144;
    wider rows in 1024-wide chunks, 2 warps, no register cap (``base``'s 80-register cap spilled 2120
    bytes per thread on sm_90 at D = 5120). ROCm keeps :func:`gated_fp8_config` (not measured there).
    One H100, ``ln_modulate``, % of copy (docs/benchmarks/fp8_norm_sweep_h100.json): 75600 x 5120 held at
    2 / 4 warps 96.8 / 88.6%, chunks 66.9%; 32760 x 6144 at 4 / 8 warps 92.1 / 74.1%, chunks 64.8%; 3072 at
    2 / 4 warps 74.9 / 66.6% (4608 rows), 94.0 / 78.8% (119056); 32760 x 2240 at 1 / 2 / 4 warps 91.2 /
    87.5 / 68.9%. Hence above 2048 columns at most 80 values per thread; at or below, at least 4 warps. At the
    rule (fp8_norm_sweep_h100.json): 32760 x 4096 on 2 warps 92.1% (4 / 8: 91.1 / 69.4%), ``rms_modulate``
    75600 x 5120 99.6% (4 warps 98.1%). Not measured: 3840, H200."""
    if platform == "hip":
        return gated_fp8_config(D, base, platform)
    if D <= _FP8_HELD or (platform == "cuda" and D <= _FP8_HELD_TAIL):
        return _fp8_held(D, platform, values=_FP8_VALUES)
    return RowConfig(block=_FP8_CHUNK, chunks=-(-D // _FP8_CHUNK), num_warps=2)


def _fp8_held(D: int, platform: str, values: int | None = None) -> RowConfig:
    """The row in registers: one power-of-two block, on CUDA :func:`_two_tiles` where they split it (3072 =
    2048 + 1024; sm_90, FLUX: 1096 -> 928 instructions per thread, 77 -> 70 registers; ROCm's builds with a tail
    are not compiled in the lanes). Warps: at least 4, one per 1024 columns of the block; with ``values``
    (CUDA, above 2048 columns): enough for at most ``values / 32`` values per thread."""
    block = next_pow2(max(D, 1))
    warps = max(4, block // 1024)
    if values and platform == "cuda" and D > 2048:
        warps = next_pow2(-(-D // values))
    head, tail = _two_tiles(D) if platform == "cuda" else (block, 0)
    return RowConfig(block=head, chunks=1, num_warps=warps, tail=tail)


def _two_tiles(D: int) -> tuple[int, int]:
    """``(half the power-of-two block, the power of two past it)`` where that is smaller, else ``(block, 0)``."""
    block = next_pow2(max(D, 1))
    return (block // 2, next_pow2(D - block // 2)) if 4 * D <= 3 * block else (block, 0)


def gated_fp8_config(D: int, base: RowConfig, platform: str = "cuda") -> RowConfig:
    """``gated_residual_norm_modulate`` with an FP8 result: the row held up to 8192 columns (1024-wide chunks
    spill 24 bytes per thread on sm_90 at 5120), above 4096 on CUDA with warps for at most 40 values per
    thread and stream; wider rows ``base``'s chunks without its register cap and unrolling. One H100, % of copy
    (fp8_norm_sweep_h100.json): 75600 x 5120 on 8 / 4 / 2 / 1 warps 91.0 / 97.1 / 96.4 / 89.8%; 4608 x
    3072 at the rule 85.7%, one 4096 block 88.7% (one row count, not taken). Other widths not measured."""
    if D <= 2 * _FP8_HELD:
        return _fp8_held(D, platform, values=_GATED_FP8_VALUES if D > _FP8_HELD else None)
    return RowConfig(block=base.block, chunks=base.chunks, num_warps=base.num_warps)


def width_constant(D: int, cfg: RowConfig, rows: int) -> int:
    """The kernel's ``WIDTH``: ``D`` (one build per width, partial chunks' masks fold), or 0 (``D`` read at
    run time) for a row of 1152-6144 columns in full chunks from 16384 rows, which streams through L1 twice
    (wider rows keep the constant: at 16384 columns, 1024 x 16 unrolled under an 80-register cap, the
    run-time width spills on sm_90).

    There the constant-width build ran slower (one H100, bf16, 32760 rows x B 1 / 2, % of copy, constant vs run-time
    width, same run): ``layer_norm`` 3072 (1024 x 3) 87.9 / 85.8 vs 94.4 / 93.6, 6144 (2048 x 3) 87.7 / 86.4 vs 94.8
    / 94.2; ``ln_modulate`` 3072 92.7 / 91.5 vs 94.4 / 94.0; 4096 (2048 x 2) equal (in the width suites, 1536 and
    2048 within 2 points); a partial last chunk gained from the constant (``layer_norm`` 2240: 97.5 / 98.6 vs 88.7 /
    93.0). At 4096 rows the modulated ops ran faster with the constant (``ln_modulate`` 5120 / 6144 B 1: 95 / 93 vs
    87 / 86%, ``rms_modulate`` 96 / 94 vs 91 / 91%; ``layer_norm`` 6144 the other way, 93 vs 99%):
    row_norm_width_sweep_h100.json, *_widths_h100.json."""
    full_chunks = cfg.chunks > 1 and D % cfg.block == 0
    return 0 if rows >= _MANY_ROWS and full_chunks and _SWEPT_D[0] <= D <= _SWEPT_D[1] else D
