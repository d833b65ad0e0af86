"""Triton kernel of the row-norm family, contract ``exact``, behind a ``BitExactFusionGate``: the
``triton_exact`` backend of ``layer_norm``, ``rms_norm``, ``ln_modulate`` and ``rms_modulate``.

``torch.equal`` to the eager chain (``_row_norm_torch``) needs two things:

1. every elementwise step rounded where eager rounds (``triton_math.round_to``, no FMA
   contraction: the launch and the AOT variants use ``enable_fp_fusion=False``);
2. the statistics computed in eager's reduction order, which this kernel reproduces as far
   as we could read it from PyTorch's CUDA sources (below). Where the order is not
   reproduced the result may still match; the gate decides per call signature and falls
   back to eager (one ``FusionFallbackWarning``) when it does not.

RMSNorm (``x.float().pow(2).mean(-1)``; ATen ``Reduce.cuh``, ``MeanOps``; ``_row_hold_triton``):
the squares are rounded to fp32 (``pow`` is its own kernel); a reduction config of ``LANES``
threads per row (``block.x``; computed on the host like ``setReduceConfig`` /
``set_block_dimension``: 32 for 16+ rows) where thread ``t`` owns 4 consecutive elements of every
``4 * LANES``-wide chunk (``input_vectorized_thread_reduce_impl``); then ``block_x_reduce``: halving
through shared memory while more than a warp, then the warp shuffle tree, on CUDA with decreasing
offsets 16 .. 1 (PyTorch changed it from increasing offsets "for better numerics matching
Triton": releases before that change are not reproduced and fall back), on ROCm with increasing
offsets 1 .. 32; then ``sum * factor`` with ``factor = float(rows) / float(rows * D)`` in fp32
(CUDA ``mean``; CPU eager divides the sum by ``D``, which ``MEAN_DIV`` reproduces). Reproduced
when ``D > 128``, ``D % 4 == 0`` and one warp-row reduces a row (``ceil(D / LANES) < 256``; above
that ATen splits a row across warps, not reproduced). ``rsqrt`` is ``tl.math.rsqrt`` (libdevice
``rsqrtf``, as CUDA eager's).

LayerNorm (``F.layer_norm``; ATen ``vectorized_layer_norm_kernel``; ``_welford_triton``): per-thread
Welford over 4-element slots, the combine tree with its coefficients as compile-time constants of
``D`` (``ROW_CHUNKS``, ``ROW_REST``: fp64 divisions in the kernel held 136-141 registers on sm_90,
three programs per SM; coefficients loaded from a host table cost a load per tree level);
``var = m2 / D``; ``rstd = rsqrt(var + eps)``; output ``gamma * (rstd * (x - mean)) +
beta`` in fp32, rounded once to x's dtype. nvcc contracts ``a * b + c`` in that code into FMAs (it
compiles without ``--use_fast_math`` but with ``--fmad=true``); we assume the contraction LLVM's
DAG combiner makes (the left product of a sum of two products) and evaluate each such FMA with
``tl.fma`` (the one instruction nvcc emits; the kernel is otherwise built without contraction, and
its AOT variants carry ``explicit_fma``). Reproduced for the vectorized path only (``D % 4 == 0``,
16-byte aligned rows; the chain casts the affine parameters to x's dtype); other rows use other
kernels in ATen (not reproduced).
Neither is reproduced on CPU (eager's CPU kernels use their own orders): there the gate
verifies only inputs whose sums are exact in any order.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import (
    PreparedLaunch,
    UnsupportedInputError,
    call_signature,
    tensor_platform,
    triton_math,
    warp_size,
)

from ._row_hold_triton import (
    emit,
    emit_ahead,
    hold_emit,
    hold_load,
    hold_squares,
    hold_tiles,
    lane_total,
    mod_tree,
    sum_squares,
)
from ._row_norm_torch import norm_chain
from ._welford_triton import hold_welford, layer_stats, welford_tree
from ._welford_triton import tree_segments as tree_segments  # the tree's constants, reachable with the backend

TL_DTYPES = triton_math.TL_DTYPES
_MAX_REDUCE_THREADS = 512  # ATen Reduce.cuh: max threads of a reduction block
_MAX_ROWS = 2**31 - 1  # the kernel's row index is int32


@triton.jit
def _div(a, b, one):
    """``a / b`` correctly rounded to fp32 without an fp32 division: an fp64 division rounded to
    fp32 (innocuous double rounding: 53 >= 2 * 24 + 2). ``one`` is an fp64 1.0 loaded from
    memory: multiplying by it keeps LLVM from narrowing the division back to fp32, which on
    ROCm expands into Newton-Raphson FMAs (the exact lanes reject any FMA)."""
    return ((a * one) / (b * one)).to(tl.float32)


@triton.jit(do_not_specialize=["n_rows", "S", "sc_L", "sh_L", "eps", "scale_offset", "mean_factor", "d_float"])
def _row_norm_exact_kernel(
    X, SC, SH, W, BIAS, Y, ONE, RCP,
    n_rows, S, D,
    x_sb, x_ss,
    sc_sb, sc_ss, sc_L,
    sh_sb, sh_ss, sh_L,
    eps, scale_offset, mean_factor, d_float,
    NORM: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr,
    HAS_BIAS: tl.constexpr,
    P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr, N_DT: tl.constexpr,
    T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
    MEAN_DIV: tl.constexpr, ROUND_OFFSET: tl.constexpr,
    LANES: tl.constexpr, WARP: tl.constexpr, NWARP: tl.constexpr, CHUNKS: tl.constexpr,
    UNROLL: tl.constexpr, UNROLL_OUT: tl.constexpr, ROWS: tl.constexpr,
    REVERSE_OUT: tl.constexpr, VEC: tl.constexpr, FULL: tl.constexpr,
    HOLD1: tl.constexpr, HOLD2: tl.constexpr, HOLD3: tl.constexpr,
    MOD_AHEAD: tl.constexpr, OUT_AHEAD: tl.constexpr, ROW_CHUNKS: tl.constexpr, ROW_REST: tl.constexpr,
    SC_FRAMES: tl.constexpr, SH_FRAMES: tl.constexpr, PWARPS: tl.constexpr, UNIT_OFFSET: tl.constexpr,
):
    """One launch of the exact chain (the constants: :func:`launch_constants`). Long because the
    statistics (LayerNorm's Welford or RMSNorm's sum of squares, held row or not) and the output
    pass (held, loads ahead, or re-read) are branches of one kernel on constexprs, so that every
    build shares the one reading of eager's rounding points."""
    # D a compile-time constant (one build per width; the tree's constants need it): the masks of a partial last
    # chunk (and of RMSNorm's held chunks past the row) fold per register: lanes past the row do nothing.
    D = ROW_CHUNKS * (4 * WARP * NWARP if NORM == 0 else 4 * LANES) + ROW_REST
    # ROWS rows per program (RMSNorm: one warp each, [ROWS, 4 * LANES] tiles; LayerNorm: 1). Row indices are
    # divided in int32 (rows < 2**31, checked on the host; a 64-bit division is a ~70-instruction subroutine on
    # NVIDIA), a token's modulation row by L only where L > 1 (SC_FRAMES, SH_FRAMES); offsets are 64-bit.
    pid = tl.program_id(0)
    row = pid * ROWS + tl.arange(0, ROWS)[:, None]
    rmask = row < n_rows
    b = row // S
    s = row - b * S
    x_row = X + b.to(tl.int64) * x_sb + s.to(tl.int64) * x_ss
    y_row = Y + row.to(tl.int64) * D
    sc_row = SC + b.to(tl.int64) * sc_sb + (s // sc_L if SC_FRAMES else s).to(tl.int64) * sc_ss
    sh_row = SH + b.to(tl.int64) * sh_sb + (s // sh_L if SH_FRAMES else s).to(tl.int64) * sh_ss
    one64 = tl.load(ONE)  # fp64 1.0 (see _div)
    if UNIT_OFFSET:  # 1 + scale: the compiler adds the constant to packed bf16 pairs (exact: 1 is a bf16 value)
        scale_offset = 1.0
    # LayerNorm tiles' row order (_welford_triton.thread_of_row: 2 for a held row of full chunks on one warp);
    # RMSNorm 0
    ONE_WARP: tl.constexpr = PWARPS == 1 and WARP == 32 and NWARP == 4 and HOLD1 > 0 and ROW_REST == 0
    LAYER: tl.constexpr = (2 if ONE_WARP else 1) if NORM == 0 else 0
    if NORM == 0:
        NT: tl.constexpr = WARP * NWARP
        CH: tl.constexpr = 4 * NT
        b1 = pid // S  # ROWS == 1
        x1 = X + b1.to(tl.int64) * x_sb + (pid - b1 * S).to(tl.int64) * x_ss
        if HOLD1 > 0:
            # the row held in registers (VEC's chunks, HOLD1 + HOLD2 + HOLD3 == CHUNKS)
            t1 = hold_load(x1, rmask, D, 0, CH, HOLD1, LAYER, FULL)
            if HOLD2 > 0:
                t2 = hold_load(x1, rmask, D, HOLD1, CH, HOLD2, LAYER, FULL)
            if HOLD3 > 0:
                t3 = hold_load(x1, rmask, D, HOLD1 + HOLD2, CH, HOLD3, LAYER, FULL)
            m = tl.zeros([NT], tl.float32)
            s = tl.zeros([NT], tl.float32)
            m, s = hold_welford(m, s, t1, D, 0, NT, HOLD1, FULL, LAYER)
            if HOLD2 > 0:
                m, s = hold_welford(m, s, t2, D, HOLD1, NT, HOLD2, FULL, LAYER)
            if HOLD3 > 0:
                m, s = hold_welford(m, s, t3, D, HOLD1 + HOLD2, NT, HOLD3, FULL, LAYER)
            mean, m2 = welford_tree(m, s, ROW_CHUNKS, ROW_REST, WARP, NWARP, LAYER, PWARPS)
        else:
            mean, m2 = layer_stats(x1, D, RCP, WARP, NWARP, CHUNKS, UNROLL, VEC, FULL, ROW_CHUNKS, ROW_REST,
                                    LAYER, PWARPS)
        var = _div(m2, d_float, one64)
    else:
        CH: tl.constexpr = 4 * LANES
        if HOLD1 > 0:
            # the row held in registers: chunks HOLD1 + HOLD2 + HOLD3 == CHUNKS (powers of two)
            t1 = hold_load(x_row, rmask, D, 0, CH, HOLD1, False, 0)
            if HOLD2 > 0:
                t2 = hold_load(x_row, rmask, D, HOLD1, CH, HOLD2, False, 0)
            if HOLD3 > 0:
                t3 = hold_load(x_row, rmask, D, HOLD1 + HOLD2, CH, HOLD3, False, 0)
            acc = hold_squares(tl.zeros([ROWS, CH], tl.float32), t1, HOLD1)
            if HOLD2 > 0:
                acc = hold_squares(acc, t2, HOLD2)
            if HOLD3 > 0:
                acc = hold_squares(acc, t3, HOLD3)
            total = lane_total(acc, ROWS, LANES, WARP)
        else:
            total = sum_squares(x_row, rmask, D, ROWS, LANES, WARP, CHUNKS, UNROLL)
        mean = 0.0
        if MEAN_DIV:
            var = _div(total, d_float, one64)
        else:
            var = total * mean_factor
    rstd = tl.math.rsqrt(var + eps)
    if HOLD1 > 0:  # the output chain of the held row
        if NORM == 1:
            # rebuilt from scalars: Triton 3.6 otherwise carries the reduction's layout (lanes
            # replicated) into the output chain and converts every held chunk into it (168 instead of
            # 80 sm_90 registers at D = 3072)
            if ROWS == 1:
                rstd = tl.sum(tl.reshape(rstd, [1]), axis=0)
            else:
                rb = tl.zeros([ROWS, 1], tl.float32)
                for r in tl.static_range(ROWS):
                    # row r's value (a sum of it and zeros) put back by a select on a fresh arange,
                    # whose layout the output chain chooses
                    pick = tl.where(tl.arange(0, ROWS)[:, None] == r, rstd, 0.0)
                    r_val = tl.sum(tl.reshape(pick, [ROWS]), axis=0)
                    rb = tl.where(tl.arange(0, ROWS)[:, None] == r, r_val, rb)
                rstd = rb
        if MOD_AHEAD > 0:  # RMSNorm
            first = mod_tree(rmask, D, W, BIAS, sc_row, sh_row, 0, CH, MOD_AHEAD, False, False, HAS_SCALE, HAS_SHIFT,
                             HAS_W, HAS_BIAS)
            if HOLD2 == 0:
                t2 = t1
            if HOLD3 == 0:
                t3 = t1
            emit_ahead(t1, t2, t3, first, t1, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row,
                        scale_offset, CH, CHUNKS, HOLD1, HOLD2, HOLD3, MOD_AHEAD, False, False, False, HAS_SCALE,
                        HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)
        else:
            hold_emit(t1, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, 0, CH, HOLD1,
                       LAYER, FULL, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
                       ROUND_OFFSET)
            if HOLD2 > 0:
                hold_emit(t2, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, HOLD1, CH, HOLD2,
                           LAYER, FULL, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3,
                           OUT, ROUND_OFFSET)
            if HOLD3 > 0:
                hold_emit(t3, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, HOLD1 + HOLD2, CH,
                           HOLD3, LAYER, FULL, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1,
                           T2, T3, OUT, ROUND_OFFSET)
    elif OUT_AHEAD > 0:  # LayerNorm: the output pass reads x again, its loads a chunk ahead (forward order)
        first = mod_tree(rmask, D, W, BIAS, sc_row, sh_row, 0, CH, OUT_AHEAD, LAYER, FULL, HAS_SCALE, HAS_SHIFT,
                          HAS_W, HAS_BIAS)
        first_x = hold_load(x_row, rmask, D, 0, CH, OUT_AHEAD, LAYER, FULL)
        emit_ahead(first_x, first_x, first_x, first, first_x, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row,
                    y_row, scale_offset, CH, CHUNKS, 0, 0, 0, OUT_AHEAD, True, LAYER, FULL, HAS_SCALE, HAS_SHIFT,
                    HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)
    else:  # RMSNorm: the output pass reads x again
        cols = tl.arange(0, CH)[None, :]
        for kk in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL_OUT):
            # REVERSE_OUT: the output pass walks the chunks last to first, so the chunks the
            # statistics pass read last (the likeliest still in L1 / L2) are read again first
            if REVERSE_OUT:
                k = CHUNKS - 1 - kk
            else:
                k = kk
            offs = k * CH + cols
            mask = rmask & (offs < D)
            v = triton_math.widen(tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first"))
            emit(v, offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, NORM, HAS_SCALE, HAS_SHIFT,
                  HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)


# --- launch configuration: eager's own thread layout ---------------------------------------------
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
# what tuning may override (GPU sweeps, tests pinning a path at small sizes): values the rules choose elsewhere
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
    if "WARPS" in tuning and (out["NORM"] != 0 or tuning["WARPS"] not in (1, 2, 4)):
        raise ValueError(f"WARPS (a LayerNorm program's warps) must be 1, 2 or 4, not {tuning['WARPS']!r} for "
                         f"{geom.norm}")
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
    ``MOD_AHEAD``: held RMSNorm rows load the output chain's operands a group of
    4 chunks ahead (1 above 32 chunks), halved until it divides the chunks (a store may alias any
    load, so the compiler never hoists them itself: rms_modulate FLUX 80 -> 104%, Wan 87 -> 92% at
    1); LayerNorm none, and a tuning that asks for it is refused (within 1.3 points at FLUX / Wan /
    HunyuanVideo, within the noise at 1152-2432 columns: exact_norm_sweep_h100.json). Measurements:
    docs/benchmarks/rms_modulate_bench_h200.json, ln_modulate_bench_h200.json (the ops at these rules).
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
    ahead = tuning.get("MOD_AHEAD", 4 if out["CHUNKS"] <= 32 else 1)
    if isinstance(ahead, bool) or not isinstance(ahead, int) or ahead < 0 or ahead & (ahead - 1):
        raise ValueError(f"MOD_AHEAD (chunks per group of prefetched operands) must be 0 or a power of two, "
                         f"not {ahead!r}")
    if out["NORM"] == 0 and tuning.get("MOD_AHEAD"):
        raise ValueError("MOD_AHEAD loads RMSNorm rows' operands ahead; a LayerNorm row has no such build choice")
    if out["NORM"] == 0 or not held or not (out["HAS_W"] or out["HAS_BIAS"] or out["HAS_SCALE"]):
        ahead = 0
    while ahead > 1 and out["CHUNKS"] % ahead:
        ahead //= 2
    out["MOD_AHEAD"] = ahead


def _split_options(const: dict) -> tuple[dict, dict]:
    """The kernel's constexprs and its Triton launch options (warps, stages, the register cap)."""
    const = dict(const)
    maxnreg = const.pop("MAXNREG", None)
    warps = const.pop("WARPS", None) or const["NWARP"]
    if const["NORM"] == 1:  # one warp-row per row, ROWS rows per program
        warps = max(1, const["LANES"] * const["NWARP"] // const["WARP"]) * const["ROWS"]
    const["PWARPS"] = warps  # LayerNorm's tree: the levels within a physical warp run in registers
    return const, {"num_warps": warps, "num_stages": 1, **({"maxnreg": maxnreg} if maxnreg else {})}


def prepare_kernel(geom, x, scale, shift, weight, bias, tuning: dict | None = None):
    """The kernel alone, without the gate (tests, benchmarks): ``(x, scale, shift, weight, bias, eps,
    scale_offset) -> out``. ``tuning`` overrides build choices of :func:`launch_constants`."""
    g = geom.x
    if g.rows > _MAX_ROWS:  # also CUDA's launch grid limit where a program takes one row
        raise UnsupportedInputError(f"{g.rows} rows exceed the exact row-norm kernel's int32 row index ({_MAX_ROWS})")
    const = {**launch_constants(geom, weight, bias, tensor_platform(x.device), tuning, x.dtype), "UNIT_OFFSET": False}
    mods = tuple(v for lay in (geom.scale, geom.shift) for v in ((0, 0, 1) if lay is None else (lay.sb, lay.ss, lay.L)))
    scalars = (g.rows, g.S, g.D, g.sb, g.ss, *mods)
    factor = mean_factor(g.rows, g.D)
    d_float = float(g.D)  # the fp32 D eager divides by (exact below 2^24)
    one = torch.ones(1, dtype=torch.float64, device=x.device)
    # 1 / n for n = 1 .. 4 * CHUNKS, divided in fp32 on the host (IEEE, as eager's `1.f / count`)
    rcp = (1.0 / torch.arange(1, 4 * const["CHUNKS"] + 1, dtype=torch.float32)).to(x.device)
    const, options = _split_options(const)
    grid = (triton.cdiv(g.rows, const["ROWS"]),)
    launch = PreparedLaunch(_row_norm_exact_kernel, grid, const, device=x.device, n_ptrs=8, options=options,
                            fp_fusion=False)
    # the default scale_offset (1 + scale, as diffusers writes it) has its own build (compiled on first use)
    unit = launch if scale is None else PreparedLaunch(
        _row_norm_exact_kernel, grid, {**const, "UNIT_OFFSET": True, "ROUND_OFFSET": False}, device=x.device,
        n_ptrs=8, options=options, fp_fusion=False)
    shape, dtype, device = g.shape, geom.chain.out, x.device
    # a contiguous x of the result's dtype: empty_like is the cheaper allocation (host time)
    like = x.is_contiguous() and x.dtype == dtype

    def fused(x, scale, shift, weight, bias, eps, scale_offset):
        out = torch.empty_like(x) if like else torch.empty(shape, dtype=dtype, device=device)
        (unit if scale_offset == 1.0 else launch)(
            x, x if scale is None else scale, x if shift is None else shift, x if weight is None else weight,
            x if bias is None else bias, out, one, rcp, *scalars, eps, scale_offset, factor, d_float)
        return out

    return fused


def prepare(geom, x, scale, shift, weight, bias):
    """A runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out`` (``ln_modulate``,
    ``rms_modulate``): the fused kernel once the op's gate (``geom.gate``) verified this call
    signature, the eager chain otherwise."""
    fused = prepare_kernel(geom, x, scale, shift, weight, bias)
    gate, norm = geom.gate, geom.norm
    static = gate.key(call_signature(x, scale, shift, weight, bias))

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        # the eager path ATen takes depends on the 16-byte alignment of x: part of the signature
        sig = (static, not x.data_ptr() & 15, float(eps), float(scale_offset))
        if gate.is_verified(sig):
            return fused(x, scale, shift, weight, bias, eps, scale_offset)
        return gate.run(lambda: fused(x, scale, shift, weight, bias, eps, scale_offset),
                        lambda: norm_chain(norm, x, scale, shift, weight, bias, eps, scale_offset), sig=sig)

    return run


def prepare_norm(geom, x, weight, bias):
    """A runner ``(x, weight, bias, eps, scale_offset) -> out`` (``layer_norm``, ``rms_norm``;
    ``scale_offset`` unused), as :func:`prepare`."""
    fused = prepare_kernel(geom, x, None, None, weight, bias)
    gate, norm = geom.gate, geom.norm
    static = gate.key(call_signature(x, None, None, weight, bias))

    def run(x, weight, bias, eps, scale_offset):
        sig = (static, not x.data_ptr() & 15, float(eps), float(scale_offset))
        if gate.is_verified(sig):
            return fused(x, None, None, weight, bias, eps, scale_offset)
        return gate.run(lambda: fused(x, None, None, weight, bias, eps, scale_offset),
                        lambda: norm_chain(norm, x, None, None, weight, bias, eps), sig=sig)

    return run


# --- ahead-of-time compile variants ----------------------------------------------------------------


def aot_variants_layer_norm(platform: str = "cuda"):
    """layer_norm's exact kernel (see :func:`aot_variants`)."""
    return aot_variants(platform, norms=("layer",), modulation=(False,))


def aot_variants_rms_norm(platform: str = "cuda"):
    """rms_norm's exact kernel (see :func:`aot_variants`)."""
    return aot_variants(platform, norms=("rms",), modulation=(False,))


def aot_variants_ln_modulate(platform: str = "cuda"):
    """ln_modulate's exact kernel (see :func:`aot_variants`)."""
    return aot_variants(platform, norms=("layer",), modulation=(True,))


def aot_variants_rms_modulate(platform: str = "cuda"):
    """rms_modulate's exact kernel (see :func:`aot_variants`)."""
    return aot_variants(platform, norms=("rms",), modulation=(True,))


def aot_variants(platform: str = "cuda", norms=("layer", "rms"), modulation=(False, True)):
    """Exact kernels at FLUX / Wan widths (LayerNorm also SD3.5's 2432 in bf16), bf16 and fp32,
    with the platform's thread layout and production row counts; built without FMA contraction."""
    from types import SimpleNamespace

    from sgl_diffusion_core import RowGeometry

    from ._row_norm import chain_dtypes

    names = {torch.bfloat16: "bf16", torch.float32: "fp32"}
    out = []
    for dt in (torch.bfloat16, torch.float32):
        for D in (2432, 3072, 5120):
            for norm in norms:
                if D == 2432 and (norm != "layer" or dt != torch.bfloat16):
                    continue  # SD3.5's width: LayerNorm with a partial last chunk (the masked build)
                for modulated in modulation:
                    rows = 75600
                    mod = torch.empty(0, dtype=dt)
                    ch = chain_dtypes(norm, dt, mod if modulated else None, mod if modulated else None, mod, None)
                    lay = SimpleNamespace(sb=0, ss=0, L=1) if modulated else None
                    builds = []
                    # the launch rules at a video's rows (Wan) and at an image's (FLUX: 4608), which
                    # differ in REVERSE_OUT (RMSNorm), HOLD (LayerNorm) and, rows read twice, ROWS
                    for n in (rows, 4608):
                        geom = SimpleNamespace(x=RowGeometry(1, n, D, n * D, D, (1, n, D), False), chain=ch,
                                               norm=norm, scale=lay, shift=lay)
                        const = launch_constants(geom, mod, None, platform, x_dtype=dt)
                        if const not in builds:
                            builds.append(const)
                    for const in builds:
                        out += _aot_builds(const, names[dt], norm, D, modulated)
    return out


# pointers and extents a production launch sees as multiples of 16 (Triton's divisibility: 16-byte accesses)
_ALIGNED = ("X", "SC", "SH", "W", "BIAS", "Y", "ONE", "RCP", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sh_sb",
            "sh_ss")
# 16-bit rows: 4 elements per access are 8 bytes (fp32 rows load 128 bits)
_NARROW = ("each lane reads 4 consecutive elements per access, the per-thread layout of eager's row kernels that the "
           "bit-exact reduction order depends on; 4 16-bit elements are 8 bytes")


def _aot_builds(const: dict, dt: str, norm: str, D: int, modulated: bool) -> list:
    from sgl_diffusion_core import AotVariant

    sig = {n: f"*{dt}" for n in ("X", "SC", "SH", "W", "BIAS", "Y")}
    sig["ONE"] = "*fp64"
    sig["RCP"] = "*fp32"
    sig.update({n: "i32" for n in ("n_rows", "S", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sc_L", "sh_sb", "sh_ss",
                                   "sh_L")})
    sig.update({"eps": "fp32", "scale_offset": "fp32", "mean_factor": "fp32", "d_float": "fp32"})
    const, options = _split_options({**const, "UNIT_OFFSET": modulated})  # the default scale_offset's build
    warps = options.pop("num_warps")
    options.pop("num_stages")
    sig.update({n: "constexpr" for n in const})
    hold = const["HOLD1"] + const["HOLD2"] + const["HOLD3"]
    name = (f"row_norm_exact[{dt},{norm},D={D},modulated={modulated},lanes={const['LANES']}x{const['NWARP']},"
            f"chunks={const['CHUNKS']},rows={const['ROWS']},warps={warps},hold={'on' if hold else 'off'}"
            f"{',reverse_out' if const['REVERSE_OUT'] else ''}"
            f"{',mod_ahead=' + str(const['MOD_AHEAD']) if const['MOD_AHEAD'] else ''}"
            f"{',out_ahead=' + str(const['OUT_AHEAD']) if const['OUT_AHEAD'] else ''}"
            f"{',maxnreg=' + str(options['maxnreg']) if 'maxnreg' in options else ''}]")
    return [AotVariant(name=name, kernel=_row_norm_exact_kernel, signature=sig, constexprs=const,
                       num_warps=warps, options={"enable_fp_fusion": False, **options},
                       explicit_fma=const["NORM"] == 0, divisible_by_16=_ALIGNED,
                       narrow_loads="" if dt == "fp32" else _NARROW)]
