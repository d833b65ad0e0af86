"""Triton kernel of the row-norm family, contract ``exact``, behind a ``BitExactFusionGate``: the
``triton_exact`` backend of ``layer_norm``, ``rms_norm``, ``ln_modulate`` and ``rms_modulate``. Its launch
rules (eager's thread layout, the build choices): ``_row_norm_exact_triton_rule``.

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
)

from ._row_hold_triton import (
    emit_ahead,
    hold_emit,
    hold_load,
    hold_squares,
    lane_total,
    mod_tree,
    reread_emit,
    sum_squares,
)
from ._row_norm_exact_triton_rule import hold_tiles as hold_tiles  # reachable with the backend (tests)
from ._row_norm_exact_triton_rule import launch_constants, mean_factor
from ._row_norm_exact_triton_rule import reduce_lanes as reduce_lanes  # reachable with the backend (tests)
from ._row_norm_torch import norm_chain
from ._welford_triton import hold_welford, layer_stats, welford_tree
from ._welford_triton import tree_segments as tree_segments  # the tree's constants, reachable with the backend

TL_DTYPES = triton_math.TL_DTYPES
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
                        scale_offset, CH, CHUNKS, HOLD1, HOLD2, HOLD3, MOD_AHEAD, False, False, False,
                        HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)
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
        reread_emit(x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, CHUNKS, CH,
                     UNROLL_OUT, REVERSE_OUT, NORM, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1,
                     T2, T3, OUT, ROUND_OFFSET)


def _split_options(const: dict) -> tuple[dict, dict]:
    """The kernel's constexprs and its Triton launch options (warps, stages, the register cap)."""
    const = dict(const)
    maxnreg = const.pop("MAXNREG", None)
    warps = const.pop("WARPS", None)
    if const["NORM"] == 1:  # eager's warp-row per row (spread over WARPS warps), ROWS rows per program
        warps = max(1, const["LANES"] * const["NWARP"] // const["WARP"]) * const["ROWS"] * (warps or 1)
    else:
        warps = warps or const["NWARP"]
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
