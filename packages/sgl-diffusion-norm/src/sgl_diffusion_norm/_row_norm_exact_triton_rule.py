"""Launch rules of the exact row-norm kernel (``_row_norm_exact_triton``): eager's thread layout, read
on the host like ATen's reduction config, and the build choices measured per width and row count (rows
per program, the held row, the register cap, loads ahead). None changes the arithmetic's order."""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import triton_math, warp_size

from ._row_hold_triton import hold_tiles

TL_DTYPES = triton_math.TL_DTYPES
_MAX_REDUCE_THREADS = 512  # ATen Reduce.cuh: max threads of a reduction block


def _last_pow2(n: int) -> int:
    return 1 << (max(n, 1).bit_length() - 1)


def reduce_lanes(rows: int, D: int, warp: int) -> tuple[int, bool]:
    """``block.x`` of ATen's reduction of ``[rows, D]`` fp32 over the last dim, and whether this
    kernel reproduces its order (vectorized input, one warp-row per output row)."""
    vectorized = D > 128 and D % 4 == 0
    dim0 = D // 4 if vectorized else D
    dim0_p2 = _last_pow2(dim0) if dim0 < _MAX_REDUCE_THREADS else _MAX_REDUCE_THREADS
    dim1_p2 = _last_pow2(rows) if rows < _MAX_REDUCE_THREADS else _MAX_REDUCE_THREADS
    width = min(dim0_p2, warp)
    height = min(dim1_p2, _MAX_REDUCE_THREADS // width)
    width = min(dim0_p2, _MAX_REDUCE_THREADS // height)
    per_thread = -(-D // width)
    split = per_thread >= height * 16 or per_thread >= 256
    return max(width, warp), vectorized and not split


def mean_factor(rows: int, D: int) -> float:
    """CUDA ``mean``'s factor: ``float(num_outputs) / numel`` in fp32."""
    f = torch.tensor(float(rows), dtype=torch.float32) / torch.tensor(float(rows * D), dtype=torch.float32)
    return float(f)


# raw bytes of x per thread up to which a row is held in registers, by x's element size: bf16 up to 384
# (RMSNorm D = 6144 on CUDA, 48 chunks: 118-128 sm_90 registers under the 128 cap, no spills, as Wan's 5120
# held in 101-118; read twice, 6144 ran at 51-85% of copy on the H200, docs/benchmarks/rms_norm_widths_h200.json
# and rms_modulate_widths_h200.json), fp32 up to 320 (2560 columns on CUDA)
_HOLD_BYTES = {2: 384, 4: 320}
_HOLD_MAXNREG = 128
_MANY_ROWS = 16384  # from here the rules treat a launch as many rows (RMSNorm's ROWS, REVERSE_OUT; LayerNorm's HOLD)
_FEW_WARPS_CHUNKS = 5  # CUDA LayerNorm rows of up to this many chunks run on fewer than 4 warps (WARPS)
# what tuning may override (GPU sweeps, tests pinning a path at small sizes): values the rules choose elsewhere.
# WARPS also spreads an RMSNorm row (eager's warp-row, 1 warp at the rules) over 2 or 4 warps, each thread then
# carrying 2 or 1 of a lane's 4 accumulators: the same bits (the reduction's combines are pairs and sequential
# chains, whichever thread holds them); sm_90 rms_norm held at 5120 columns in 62 / 64 registers against 108,
# at 6144 in 70 / 72 against 126, but each load and store narrows from 8 bytes to 4 / 2 (sm_90 SASS: LDG.E,
# LDG.E.U16 against LDG.E.64, the same count of instructions for half / a quarter of the bytes). No rule picks
# it: one H100, rms_norm 5120 x 4096 on 2 warps 92.8% of copy against the rule's 102.0%
# (row_norm_width_sweep_h100.json).
TUNABLE = ("UNROLL", "UNROLL_OUT", "ROWS", "REVERSE_OUT", "VEC", "FULL", "HOLD", "MOD_AHEAD", "MAXNREG", "WARPS")


def launch_constants(geom, weight, bias, platform: str, tuning: dict | None = None,
                     x_dtype: torch.dtype = torch.bfloat16) -> dict:
    """The kernel's constexprs for one call signature: eager's thread layout (``LANES``, ``WARP``,
    ``NWARP``, ``CHUNKS``), the chain's dtypes, and the build choices of the rules below (none
    changes the arithmetic's order; ``tuning`` overrides those in ``TUNABLE``). Measured on one
    H200, bf16, % of a same-run copy at FLUX / Wan / HunyuanVideo, every row ``torch.equal`` to
    eager (docs/benchmarks/exact_norm_sweep_h200.json; the ops at the rules:
    layer_norm_bench_h200.json, rms_norm_bench_h200.json, ln_modulate_bench_h200.json,
    rms_modulate_bench_h200.json):

    * ``UNROLL``: RMSNorm's chunk loops fully unrolled (77.2 / 92.0 / 94.9% against the compiler's
      71.9 / 84.4 / 91.0%); LayerNorm's Welford loop fully unrolled up to 6 chunks, by 2 above
      (full unrolling measured no gain at D = 5120). ``UNROLL_OUT``: LayerNorm's output loop fully
      unrolled up to 16 chunks, else as ``UNROLL``.
    * ``ROWS``: RMSNorm rows read twice take 2 rows per program below 16384 rows (FLUX's 4608
      one-warp programs fill 1.09 waves): rms_norm 77.7 -> 85.1%, rms_modulate 71.7 -> 81.1%;
      with many rows 2 per program lose 5-20 points. LayerNorm: 1 (one row per program).
    * ``REVERSE_OUT``: from 16384 rows RMSNorm rows read twice walk the output pass last chunk
      first, so the chunks read last are re-read first while in L2 (Wan 77.4 -> 80.3%).
    * ``VEC`` (LayerNorm up to 16 chunks: one vector load per chunk, split in registers, the chunks
      unrolled at compile time; an sm_90 build at 128 chunks took 69 s) and ``FULL`` (LayerNorm's
      leading chunks that lie inside the row, read, reduced and stored without masks; only a
      partial last chunk keeps them): without them the kernel was bound by instructions.
    * ``HOLD`` / ``MAXNREG`` / ``MOD_AHEAD``: :func:`_hold_rule`; ``OUT_AHEAD``: LayerNorm rows read
      twice load the output pass's next chunk ahead (HunyuanVideo ln_modulate 87.9 -> 89.3%).
    * ``WARPS`` (a launch option, not a constexpr): the warps a LayerNorm program runs on, 1, 2 or 4.
      The kernel's lanes stay eager's 4 x 32 (its order and bits), so with fewer warps each thread
      carries 4 / WARPS lanes and more rows are in flight per SM. CUDA rows of up to 3 chunks (1536
      columns) take 1 warp, of 4-5 chunks (2560) 1 from 16384 rows and 2 below, longer rows 4: one
      H100, bf16 ln_modulate, 4096 / 32760 rows, % of copy at 4 warps -> at the rule: 1152 46 / 42 ->
      53 / 68, 1536 75 / 80 -> 83 / 95, 2240 57 / 72 -> 59 / 90, 2432 60 / 77 -> 62 / 88; at 3072
      1 warp lost 6-11 points, 2 warps 0-9 (docs/benchmarks/exact_norm_sweep_h100.json). At 4096 rows
      the gains of 2 warps at 4-5 chunks are within the sweep's noise there (repeated configurations
      differed by up to 4 points). fp16 / fp32 rows and ROCm (which keeps 4) were not measured.
    """
    tuning = dict(tuning or {})
    unknown = set(tuning) - set(TUNABLE)
    if unknown:
        raise ValueError(f"not a tunable build choice of the exact row-norm kernel: {sorted(unknown)}")
    g, ch = geom.x, geom.chain
    warp = warp_size(platform)
    if geom.norm == "layer":
        lanes, nwarp = warp, 4  # ATen num_threads() = 4 warps
    else:
        lanes, nwarp = reduce_lanes(g.rows, g.D, warp)[0], 1
    chunks = max(1, triton.cdiv(g.D, 4 * lanes * nwarp if geom.norm == "layer" else 4 * lanes))
    unroll = chunks if geom.norm == "rms" or chunks <= 6 else 2
    f32 = tl.float32
    out = {
        "NORM": 0 if geom.norm == "layer" else 1, "HAS_SCALE": geom.scale is not None,
        "HAS_SHIFT": geom.shift is not None, "HAS_W": weight is not None, "HAS_BIAS": bias is not None,
        "P_DT": TL_DTYPES[ch.p], "C_DT": TL_DTYPES[ch.c], "A_DT": TL_DTYPES[ch.a], "N_DT": TL_DTYPES[ch.n],
        "T1": TL_DTYPES[ch.t1] if ch.t1 else f32, "T2": TL_DTYPES[ch.t2] if ch.t2 else f32,
        "T3": TL_DTYPES[ch.t3] if ch.t3 else f32, "OUT": TL_DTYPES[ch.out],
        "MEAN_DIV": platform == "cpu", "ROUND_OFFSET": platform == "cpu",
        "LANES": lanes, "WARP": warp, "NWARP": nwarp, "CHUNKS": chunks, "UNROLL": unroll,
        "UNROLL_OUT": chunks if geom.norm == "layer" and chunks <= 16 else unroll,
        "ROWS": 2 if geom.norm == "rms" and g.rows < _MANY_ROWS else 1,
        **dict(zip(("ROW_CHUNKS", "ROW_REST"), divmod(g.D, 4 * lanes * nwarp))),  # D: whole chunks, the rest
        "REVERSE_OUT": geom.norm == "rms" and g.rows >= _MANY_ROWS,
        "VEC": geom.norm == "layer" and chunks <= 16,
        **{f"{n}_FRAMES": lay is not None and lay.L > 1 for n, lay in (("SC", geom.scale), ("SH", geom.shift))},
        **{k: v for k, v in tuning.items() if k not in ("HOLD", "MOD_AHEAD", "MAXNREG")},
    }
    if "WARPS" in tuning and tuning["WARPS"] not in (1, 2, 4):
        raise ValueError(f"WARPS (a LayerNorm program's warps, the warps of an RMSNorm row) must be 1, 2 or 4, "
                         f"not {tuning['WARPS']!r}")
    # LayerNorm's full chunks (the layout after any override) drop their masks (Welford selects, loads,
    # stores); unmasked RMSNorm builds measured slower (rms_modulate at Wan 59.9 against 79.8%)
    full = min(out["CHUNKS"], g.D // (4 * out["WARP"] * out["NWARP"])) if out["NORM"] == 0 else 0
    out.setdefault("FULL", full)
    if not isinstance(out["FULL"], int) or isinstance(out["FULL"], bool) or not 0 <= out["FULL"] <= full:
        raise ValueError(f"FULL (chunks read without masks) must be an int from 0 to {full} here, not {out['FULL']!r}")
    if out["NORM"] == 0 and out["ROWS"] != 1:
        raise ValueError("the exact LayerNorm kernel reduces one row per program (ROWS=1)")
    if out["NORM"] == 0 and "WARPS" not in tuning and platform == "cuda" and out["CHUNKS"] <= _FEW_WARPS_CHUNKS:
        out["WARPS"] = 1 if out["CHUNKS"] <= 3 or g.rows >= _MANY_ROWS else 2
    _hold_rule(out, g.rows, x_dtype, platform, tuning)
    out["OUT_AHEAD"] = 1 if out["NORM"] == 0 and not out["HOLD1"] else 0
    return out


def _hold_rule(out: dict, rows: int, x_dtype: torch.dtype, platform: str, tuning: dict) -> None:
    """``HOLD1..3``, ``MAXNREG``, ``MOD_AHEAD`` (and ``ROWS``, ``REVERSE_OUT`` of held rows) into ``out``.

    The row is held in registers (read once, its chunks as at most three powers of two, counted up to
    such a count where they are not) where its raw chunks fit ``_HOLD_BYTES`` per thread (bf16 384, fp32
    320; fp16's two widenings merge into one held fp32 copy: 185-232 sm_90 registers): RMSNorm where eager
    gives a row one warp (16+ rows), one row per program (Nsight Compute had Wan's second read missing
    L2 half the time: rms_modulate Wan 80 -> 86%); LayerNorm from 8 chunks or below 16384 rows
    (ln_modulate FLUX 92 -> 99%, Wan 92 -> 97%; HunyuanVideo's 6 chunks at many rows lost 1-3 points
    held). RMSNorm rows held in more than 32 chunks are capped at 128 registers on CUDA (Wan 84.5 ->
    87.1%; at 24 chunks the cap cost 1.3 points), and so are every held RMSNorm row's below 16384 rows
    (one H100, bf16 rms_modulate at 4096 and 8192 rows of 1152-4096 columns: +0 to +11 points, e.g. D =
    4096 83 -> 94%, 2240 83 -> 90%; at 32760+ rows within a point either way:
    docs/benchmarks/row_norm_width_sweep_h100.json).
    Holding only a row's first 8-32 chunks (the rest read twice, under 48-96 registers) took 36.8-44.8 us
    at Wan's 5120 columns and 4096 rows, against 31.8 us held whole (one H100, rms_modulate:
    row_norm_width_sweep_h100.json).
    ``MOD_AHEAD``: held RMSNorm rows load the output chain's operands a group of 4 chunks ahead (2 for
    a modulated row of more than 32 chunks, where 4 spills), the chunks left over in the largest
    smaller groups (19 = 4 x 4 + 2 + 1). A store may alias any load, so the compiler never hoists
    them itself: without the groups the output pass waits on one L2 load per chunk (rms_modulate
    FLUX 80 -> 104%). One H100, bf16, 4096 rows: rms_norm 5120 / 6144 columns 89 -> 102%, 89 ->
    101% (8 ahead: 102%, 96%); rms_modulate 5120 / 6144 94 -> 104%, 93 -> 100%, 1152 (9 chunks) 89
    -> 101%, 2432 (19) 94 -> 99%, 2240 (18) at batch 2 94 -> 99%; at 32760 rows +1 to +2 points
    (row_norm_width_sweep_h100.json). LayerNorm none, and a tuning that asks for it is refused
    (within 1.3 points at FLUX / Wan / HunyuanVideo, within the noise at 1152-2432 columns:
    exact_norm_sweep_h100.json). Measurements: docs/benchmarks/rms_modulate_bench_h200.json,
    ln_modulate_bench_h200.json (the ops at these rules).
    """
    chunks = out["CHUNKS"]
    if out["NORM"] == 1 or out["VEC"]:
        # a held row counts its chunks up to the next count of at most three powers of two (RMSNorm at
        # 1920 columns: 15 -> 16, 3840: 30 -> 32); the extra chunks lie past the row, masked off
        # (no load, no store; zeros added to the sums, no Welford step): the same bits
        hold_chunks = next(c for c in range(chunks, 2 * chunks + 1) if hold_tiles(c))
        tiles = hold_tiles(hold_chunks)
    else:
        hold_chunks, tiles = chunks, None
    if "HOLD" in tuning:  # force the held row on (where the chunks split) or off
        want = tuning["HOLD"]
        if not isinstance(want, bool):
            raise ValueError(f"HOLD (the whole row held in registers, or x read twice) is True or False, not {want!r}")
        if want and tiles is None:
            raise ValueError("HOLD needs VEC (LayerNorm)")
    else:
        want = (tiles is not None and x_dtype in (torch.bfloat16, torch.float32)
                and hold_chunks * 4 * x_dtype.itemsize <= _HOLD_BYTES[x_dtype.itemsize]
                and (out["LANES"] == out["WARP"] if out["NORM"] == 1 else chunks >= 8 or rows < _MANY_ROWS))
    out["HOLD1"], out["HOLD2"], out["HOLD3"] = tiles if want and tiles else (0, 0, 0)
    held = out["HOLD1"] > 0
    if held:
        out["CHUNKS"] = hold_chunks
    if held:  # the output pass's chunk order concerns re-read rows only
        out["REVERSE_OUT"] = False
    if out["NORM"] == 1 and held and "ROWS" not in tuning:
        out["ROWS"] = 1
    if "MAXNREG" in tuning:
        out["MAXNREG"] = tuning["MAXNREG"]
    else:
        capped = platform == "cuda" and held and out["NORM"] == 1 and (out["CHUNKS"] > 32 or rows < _MANY_ROWS)
        out["MAXNREG"] = _HOLD_MAXNREG if capped else None
    modulated = out["HAS_SCALE"] or out["HAS_SHIFT"]
    ahead = tuning.get("MOD_AHEAD", 4 if out["CHUNKS"] <= 32 or not modulated else 2)
    if isinstance(ahead, bool) or not isinstance(ahead, int) or ahead < 0 or ahead & (ahead - 1):
        raise ValueError(f"MOD_AHEAD (chunks per group of prefetched operands) must be 0 or a power of two, "
                         f"not {ahead!r}")
    if out["NORM"] == 0 and tuning.get("MOD_AHEAD"):
        raise ValueError("MOD_AHEAD loads RMSNorm rows' operands ahead; a LayerNorm row has no such build choice")
    if out["NORM"] == 0 or not held or not (out["HAS_W"] or out["HAS_BIAS"] or out["HAS_SCALE"]):
        ahead = 0
    while ahead > out["CHUNKS"]:  # a group is at most the row; the chunks left over go in smaller groups
        ahead //= 2
    out["MOD_AHEAD"] = ahead
