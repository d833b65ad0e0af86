"""Triton kernel of the row-norm family, contract ``exact``, behind a ``BitExactFusionGate``.

``torch.equal`` to the eager chain (``row_norm_torch``) needs two things:

1. every elementwise step rounded where eager rounds (``triton_math.round_to``, no FMA
   contraction: the launch and the AOT variants use ``enable_fp_fusion=False``);
2. the statistics computed in eager's reduction order, which this kernel reproduces as far
   as we could read it from PyTorch's CUDA sources (below). Where the order is not
   reproduced the result may still match; the gate decides per call signature and falls
   back to eager (one ``FusionFallbackWarning``) when it does not.

RMSNorm (``x.float().pow(2).mean(-1)``; ATen ``Reduce.cuh``, ``MeanOps``): the squares are
rounded to fp32 (``pow`` is its own kernel); a reduction config of ``LANES`` threads per row
(``block.x``; computed on the host like ``setReduceConfig`` / ``set_block_dimension``: 32 for
16+ rows) where thread ``t`` owns 4 consecutive elements of every ``4 * LANES``-wide chunk
(``input_vectorized_thread_reduce_impl``: 4 accumulators, one per vector slot, summed in
sequence over the chunks, then combined as ``((a0 + a1) + a2) + a3``); then ``block_x_reduce``:
halving through shared memory while more than a warp (``v[i] += v[i + n/2]``), then the warp
shuffle tree, on CUDA with decreasing offsets 16 .. 1 (halving again; PyTorch changed it from
increasing offsets "for better numerics matching Triton": releases before that change are not
reproduced and fall back), on ROCm with increasing offsets 1 .. 32 (adjacent pairs); then
``sum * factor`` with
``factor = float(rows) / float(rows * D)`` in fp32 (CUDA ``mean``; CPU eager divides the sum
by ``D``, which ``MEAN_DIV`` reproduces). Reproduced when ``D > 128``, ``D % 4 == 0`` and one
warp-row reduces a row (``ceil(D / LANES) < 256``; above that ATen splits a row across warps,
not reproduced). ``rsqrt`` is ``tl.math.rsqrt`` (libdevice ``rsqrtf``, as CUDA eager's).

LayerNorm (``F.layer_norm``; ATen ``layer_norm_kernel.cu``, ``vectorized_layer_norm_kernel``):
128 threads (4 warps of 32) per row, thread ``t`` owning 4 consecutive elements of every
512-wide chunk, each running Welford's online update (``cuWelfordOnlineSum``: count as a
float, ``mean += delta * (1/count)``, ``m2 += delta * (x - new_mean)``); then the warp tree
(offsets 16, 8, ..., 1, lane ``i`` combining with ``i + offset``: ``cuWelfordCombine``), then
the warps halving through shared memory; the counts, and so every combine's ``1 / count``,
``nA`` and ``nB``, follow from ``D`` alone and come from a host table computed in fp32 as eager
does (:func:`welford_tree_table`: fp64 divisions in the kernel instead hold 136-141 registers on
sm_90, three programs per SM; with the table, 64); ``var = m2 / D``;
``rstd = rsqrt(var + eps)``; output
``gamma * (rstd * (x - mean)) + beta`` in fp32, rounded once to x's dtype. nvcc contracts
``a * b + c`` in that code into FMAs (it compiles without ``--use_fast_math`` but with
``--fmad=true``); we assume the contraction LLVM's DAG combiner makes (the left product of a
sum of two products) and evaluate each such FMA with the hardware's FMA instruction (``tl.fma``:
the one instruction nvcc emits; the kernel is otherwise built without contraction, and its AOT
variants carry ``explicit_fma``). ``HW_FMA=False`` selects an emulation (an exact fp64
product plus one fp64 add rounded to fp32, which differs from a true FMA only when the fp64
sum lands exactly on an fp32 tie; 12-18% slower on the H200). Reproduced for the vectorized path only
(``D % 4 == 0``, 16-byte aligned rows; the chain casts the affine parameters to x's dtype);
other rows use other kernels in ATen (not reproduced).
Neither is reproduced on CPU (eager's CPU kernels use their own orders): there the gate
verifies only inputs whose sums are exact in any order.
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform, triton_math

TL_DTYPES = {torch.bfloat16: tl.bfloat16, torch.float16: tl.float16, torch.float32: tl.float32}
_MAX_REDUCE_THREADS = 512  # ATen Reduce.cuh: max threads of a reduction block


@triton.jit
def _fma(a, b, c, HW: tl.constexpr):
    """``a * b + c`` rounded once (nvcc's contraction). ``HW``: the hardware's fused multiply-add
    (``fma.rn.f32`` / ``v_fma_f32``, the instruction nvcc emits); otherwise an exact fp64
    product, an fp64 sum and one rounding to fp32, which differs from it only when the fp64 sum
    lands exactly on an fp32 tie and costs fp32 <-> fp64 conversions (a few per element)."""
    if HW:
        return tl.fma(a, b, c)
    else:
        return (a.to(tl.float64) * b.to(tl.float64) + c.to(tl.float64)).to(tl.float32)


@triton.jit
def _div(a, b, one):
    """``a / b`` correctly rounded to fp32 without an fp32 division: an fp64 division rounded to
    fp32 (innocuous double rounding: 53 >= 2 * 24 + 2). ``one`` is an fp64 1.0 loaded from
    memory: multiplying by it keeps LLVM from narrowing the division back to fp32, which on
    ROCm expands into Newton-Raphson FMAs (the exact lanes reject any FMA)."""
    return ((a * one) / (b * one)).to(tl.float32)


@triton.jit
def _halves(x, R: tl.constexpr, N: tl.constexpr):
    """``[R, N]`` -> its lower and upper halves along the last dim, each ``[R, N // 2]``."""
    return tl.split(tl.permute(tl.reshape(x, [R, 2, N // 2]), (0, 2, 1)))


@triton.jit
def _welford_merge(m, s, TAB, OFF: tl.constexpr, R: tl.constexpr, N: tl.constexpr, HW: tl.constexpr):
    """One level of the combine tree on ``[R, N]`` partial statistics: lane ``i`` (``dataB``)
    with lane ``i + N/2`` (``dataA``), as ``cuWelfordCombine(dataB, dataA)``:
    ``mean = nA * meanA + nB * meanB``, ``m2 = m2A + m2B + delta * delta * countA * nB``.

    The counts do not depend on the data (they follow from ``D`` and the thread layout), so
    ``nA = countA * (1 / count)``, ``nB`` and ``countA`` of every combine come from a host table
    (``TAB``: entries of four fp32, this level's from entry ``OFF``, computed in fp32
    as eager does, :func:`welford_tree_table`); an empty pair has ``nA = nB = countA = 0`` and
    gives eager's zeros. (The level's ``[R, N/2]`` loads also fix the layouts of the halving: with
    one scalar per level, for uniform counts, sm_90 went from 64 to 168 registers.)"""
    H: tl.constexpr = N // 2
    mb, ma = _halves(m, R, N)
    sb, sa = _halves(s, R, N)
    # entry i of the table is (nA, nB, countA, 0) at 4 * i: one 16-byte load per combine
    idx = OFF + tl.arange(0, R)[:, None, None] * H + tl.arange(0, H)[None, :, None]
    coef = tl.load(TAB + idx * 4 + tl.arange(0, 4)[None, None, :])
    even, odd = tl.split(tl.reshape(coef, [R, H, 2, 2]))  # the last axis: (nA, countA), (nB, 0)
    na, ca = tl.split(even)
    nb, _ = tl.split(odd)
    delta = mb - ma
    mean = _fma(na, ma, nb * mb, HW)
    m2 = _fma((delta * delta) * ca, nb, sa + sb, HW)
    return mean, m2


@triton.jit
def _welford_step(m, s, v, ok, rc, HW: tl.constexpr):
    """``cuWelfordOnlineSum`` for the threads whose element is valid (``rc = 1 / new_count``)."""
    delta = v - m
    nm = _fma(delta, rc, m, HW)
    ns = _fma(delta, v - nm, s, HW)
    return tl.where(ok, nm, m), tl.where(ok, ns, s)


@triton.jit
def _slot(x_row, base, lane4, ii, D):
    """Vector slot ``ii`` of every thread (elements ``base + 4t + ii``) as fp32, and its mask."""
    offs = base + lane4 + ii
    ok = offs < D
    return triton_math.widen(tl.load(x_row + offs, mask=ok, other=0.0, eviction_policy="evict_last")), ok


@triton.jit
def _vec_offsets(K: tl.constexpr, NT: tl.constexpr):
    """Element offsets ``[NT, 4]`` of LayerNorm's chunk ``K``: thread ``t`` owns ``4t .. 4t+3``."""
    return K * 4 * NT + tl.arange(0, NT)[:, None] * 4 + tl.arange(0, 4)[None, :]


@triton.jit
def _vec_load(x_row, D, K: tl.constexpr, NT: tl.constexpr, EVEN: tl.constexpr, POLICY: tl.constexpr):
    """LayerNorm's chunk ``K`` of the row, raw, one ``[NT, 4]`` vector load."""
    offs = _vec_offsets(K, NT)
    if EVEN:
        return tl.load(x_row + offs, eviction_policy=POLICY)
    else:
        return tl.load(x_row + offs, mask=offs < D, other=0.0, eviction_policy=POLICY)


@triton.jit
def _welford_chunk(m, s, raw, D, K: tl.constexpr, NT: tl.constexpr, EVEN: tl.constexpr, HW: tl.constexpr):
    """The Welford steps of chunk ``K`` (raw ``[NT, 4]``), split into the four slots in registers;
    1 / count is a compile-time constant (Python's double quotient rounded to fp32: the correctly
    rounded fp32 quotient, double rounding being innocuous for a division)."""
    base = K * 4 * NT
    lane4 = tl.arange(0, NT) * 4
    p, q = tl.split(tl.reshape(triton_math.widen(raw), [NT, 2, 2]))
    v0, v2 = tl.split(p)
    v1, v3 = tl.split(q)
    m, s = _welford_slot(m, s, v0, base + lane4 < D, _const_rcp(K * 4 + 1), EVEN, HW)
    m, s = _welford_slot(m, s, v1, base + lane4 + 1 < D, _const_rcp(K * 4 + 2), EVEN, HW)
    m, s = _welford_slot(m, s, v2, base + lane4 + 2 < D, _const_rcp(K * 4 + 3), EVEN, HW)
    return _welford_slot(m, s, v3, base + lane4 + 3 < D, _const_rcp(K * 4 + 4), EVEN, HW)


@triton.jit
def _layer_stats(x_row, D, RCP, TAB, WARP: tl.constexpr, NWARP: tl.constexpr, CHUNKS: tl.constexpr,
                 HW: tl.constexpr, UNROLL: tl.constexpr, VEC: tl.constexpr, EVEN: tl.constexpr,
                 TREE: tl.constexpr = 0):
    NT: tl.constexpr = WARP * NWARP
    lane4 = tl.arange(0, NT) * 4
    m = tl.zeros([NT], tl.float32)
    s = tl.zeros([NT], tl.float32)
    if VEC:
        # one [NT, 4] vector load per chunk, split into the four slots in registers; the chunks
        # unrolled at compile time, so 1 / count is a constant (Python's double quotient rounded
        # to fp32: the correctly rounded fp32 quotient, double rounding being innocuous for a
        # division)
        for k in tl.static_range(CHUNKS):
            m, s = _welford_chunk(m, s, _vec_load(x_row, D, k, NT, EVEN, "evict_last"), D, k, NT, EVEN, HW)
    else:
        for k in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
            base = k * 4 * NT
            # 1 / new_count, the same for every thread with a valid element: from a host table of
            # correctly rounded reciprocals (eager's `1.f / count` is an IEEE division); four
            # strided loads (one per vector slot): the four together read each cache line once
            v, ok = _slot(x_row, base, lane4, 0, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 0), EVEN, HW)
            v, ok = _slot(x_row, base, lane4, 1, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 1), EVEN, HW)
            v, ok = _slot(x_row, base, lane4, 2, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 2), EVEN, HW)
            v, ok = _slot(x_row, base, lane4, 3, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 3), EVEN, HW)
    return _welford_tree(m, s, TAB, WARP, NWARP, HW, TREE, 4 * CHUNKS if EVEN else 0)


@triton.jit
def _shfl_merge(m, s, lane, wrp, TAB, OFF: tl.constexpr, H: tl.constexpr, WARP: tl.constexpr, HW: tl.constexpr,
                UNIFORM: tl.constexpr):
    """One intra-warp level as eager's ``WARP_SHFL_DOWN``: ``[NWARP, WARP]`` partial statistics,
    lane ``i`` combining with lane ``i + H`` (a warp-local ``tl.gather``; lanes past the warp
    keep their own value, like the shuffle's clamp, and only lanes below ``H`` feed lane 0).
    ``UNIFORM > 0``: every thread counted ``UNIFORM`` elements (every chunk full), so both sides
    of every combine at this level count ``UNIFORM * WARP / (2 * H)`` and the coefficients are
    compile-time constants (fp32 products of constants, folded as IEEE fp32); otherwise they come
    from the host table, entry ``OFF + warp * H + lane`` (lanes from ``H`` read a valid entry they
    do not need)."""
    src = tl.where(lane + H < WARP, lane + H, lane)
    ma = tl.gather(m, src, axis=1)
    sa = tl.gather(s, src, axis=1)
    if UNIFORM > 0:
        CNT: tl.constexpr = UNIFORM * WARP // (2 * H)
        ca = tl.full([], CNT, tl.float32)
        na = ca * _const_rcp(2 * CNT)
        nb = na
    else:
        e = (OFF + wrp * H + (lane % H)) * 4
        na = tl.load(TAB + e)
        nb = tl.load(TAB + e + 1)
        ca = tl.load(TAB + e + 2)
    delta = m - ma
    mean = _fma(na, ma, nb * m, HW)
    m2 = _fma((delta * delta) * ca, nb, sa + s, HW)
    return mean, m2


@triton.jit
def _welford_tree(m, s, TAB, WARP: tl.constexpr, NWARP: tl.constexpr, HW: tl.constexpr, TREE: tl.constexpr = 0,
                  UNIFORM: tl.constexpr = 0):
    """Per-thread ``[WARP * NWARP]`` partial statistics -> the row's ``(mean, m2)`` in eager's tree order."""
    m = tl.reshape(m, [NWARP, WARP])
    s = tl.reshape(s, [NWARP, WARP])
    if TREE == 1:
        lane = tl.zeros([NWARP, WARP], tl.int32) + tl.arange(0, WARP)[None, :]
        wrp = tl.zeros([NWARP, WARP], tl.int32) + tl.arange(0, NWARP)[:, None]
        if WARP >= 64:
            m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 64), 32, WARP, HW, UNIFORM)
        m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 32), 16, WARP, HW, UNIFORM)
        m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 16), 8, WARP, HW, UNIFORM)
        m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 8), 4, WARP, HW, UNIFORM)
        m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 4), 2, WARP, HW, UNIFORM)
        m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 2), 1, WARP, HW, UNIFORM)
        # lane 0 of each warp holds the warp's statistics (a sum of one value and zeros)
        m = tl.sum(tl.where(lane == 0, m, 0.0), axis=1)[:, None]
        s = tl.sum(tl.where(lane == 0, s, 0.0), axis=1)[:, None]
    else:
        # intra-warp: offsets WARP/2 .. 1, lane i combining with lane i + offset; the table holds the
        # levels in this order (level N at NWARP * (WARP - N)), then the inter-warp levels
        if WARP >= 64:
            m, s = _welford_merge(m, s, TAB, NWARP * (WARP - 64), NWARP, 64, HW)
        m, s = _welford_merge(m, s, TAB, NWARP * (WARP - 32), NWARP, 32, HW)
        m, s = _welford_merge(m, s, TAB, NWARP * (WARP - 16), NWARP, 16, HW)
        m, s = _welford_merge(m, s, TAB, NWARP * (WARP - 8), NWARP, 8, HW)
        m, s = _welford_merge(m, s, TAB, NWARP * (WARP - 4), NWARP, 4, HW)
        m, s = _welford_merge(m, s, TAB, NWARP * (WARP - 2), NWARP, 2, HW)
    # inter-warp: warp y combines with warp y + offset, offsets NWARP/2 .. 1
    m = tl.reshape(m, [1, NWARP])
    s = tl.reshape(s, [1, NWARP])
    B: tl.constexpr = NWARP * (WARP - 1)
    if NWARP >= 8:
        m, s = _welford_merge(m, s, TAB, B + NWARP - 8, 1, 8, HW)
    if NWARP >= 4:
        m, s = _welford_merge(m, s, TAB, B + NWARP - 4, 1, 4, HW)
    if NWARP >= 2:
        m, s = _welford_merge(m, s, TAB, B + NWARP - 2, 1, 2, HW)
    mean = tl.sum(tl.reshape(m, [1]), axis=0)
    m2 = tl.sum(tl.reshape(s, [1]), axis=0)
    return mean, m2


@triton.jit
def _const_rcp(N: tl.constexpr):
    """``1 / N`` for a compile-time count, as an fp32 scalar (Python's double quotient rounded to
    nearest fp32: the correctly rounded fp32 quotient)."""
    return tl.full([], 1.0 / N, tl.float32)


@triton.jit
def _welford_slot(m, s, v, ok, rc, EVEN: tl.constexpr, HW: tl.constexpr):
    """A Welford step; ``EVEN``: every element of the row is valid (``D`` a multiple of the
    chunk), so no select on ``ok``."""
    if EVEN:
        delta = v - m
        nm = _fma(delta, rc, m, HW)
        return nm, _fma(delta, v - nm, s, HW)
    else:
        return _welford_step(m, s, v, ok, rc, HW)


@triton.jit
def _pair_sum(v, R: tl.constexpr, N: tl.constexpr):
    """Adjacent pairs: ``[R, N] -> [R, N // 2]``, ``v[:, 2i] + v[:, 2i+1]`` (one warp-shuffle level)."""
    return tl.sum(tl.reshape(v, [R, N // 2, 2]), axis=2)


@triton.jit
def _half_sum(v, R: tl.constexpr, N: tl.constexpr):
    """Halves: ``[R, N] -> [R, N // 2]``, ``v[:, i] + v[:, i + N/2]`` (one shared-memory level)."""
    return tl.sum(tl.reshape(v, [R, 2, N // 2]), axis=1)


@triton.jit
def _columns(x, R: tl.constexpr, NT: tl.constexpr):
    """``[R, 4 * NT]`` (thread t owns 4t .. 4t+3) -> its four vector slots, each ``[R, NT]``."""
    p, q = tl.split(tl.reshape(x, [R, NT, 2, 2]))
    c0, c2 = tl.split(p)
    c1, c3 = tl.split(q)
    return c0, c1, c2, c3


@triton.jit
def _sum_squares(x_rows, rmask, D, R: tl.constexpr, LANES: tl.constexpr, WARP: tl.constexpr,
                 CHUNKS: tl.constexpr, UNROLL: tl.constexpr):
    """Sums of squares of ``R`` rows (``x_rows``: ``[R, 1]`` pointers), each in eager's order."""
    # one contiguous 4 * LANES block per row and chunk (8-byte vector loads for bf16), 4 accumulators per lane
    cols = tl.arange(0, 4 * LANES)[None, :]
    acc = tl.zeros([R, 4 * LANES], tl.float32)
    for k in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
        offs = k * 4 * LANES + cols
        v = triton_math.widen(tl.load(x_rows + offs, mask=rmask & (offs < D), other=0.0,
                                      eviction_policy="evict_last"))
        acc += v * v
    return _lane_total(acc, R, LANES, WARP)


@triton.jit
def _lane_total(acc, R: tl.constexpr, LANES: tl.constexpr, WARP: tl.constexpr):
    """Eager's combine of the per-thread accumulators ``[R, 4 * LANES]`` (slot sums) into ``[R, 1]``."""
    a0, a1, a2, a3 = _columns(acc, R, LANES)
    t = ((a0 + a1) + a2) + a3
    # block_x_reduce: shared-memory halving down to one warp, then the shuffle tree: on CUDA with
    # decreasing offsets (16 .. 1: halving again), on ROCm increasing (1 .. 32: adjacent pairs)
    if LANES >= 512:
        t = _half_sum(t, R, 512)
    if LANES >= 256:
        t = _half_sum(t, R, 256)
    if LANES >= 128:
        t = _half_sum(t, R, 128)
    if WARP == 32:
        if LANES >= 64:
            t = _half_sum(t, R, 64)
        t = _half_sum(t, R, 32)
        t = _half_sum(t, R, 16)
        t = _half_sum(t, R, 8)
        t = _half_sum(t, R, 4)
        t = _half_sum(t, R, 2)
    else:
        t = _pair_sum(t, R, 64)
        t = _pair_sum(t, R, 32)
        t = _pair_sum(t, R, 16)
        t = _pair_sum(t, R, 8)
        t = _pair_sum(t, R, 4)
        t = _pair_sum(t, R, 2)
    return tl.reshape(t, [R, 1])


# --- the row held in registers (HOLD): one read of x ----------------------------------------------
# The row's chunks are loaded once, as a binary tree of ``tl.join``s (``[.., 2, .., 2]``: a pure
# register grouping, no data movement), kept raw (16-bit values stay packed: the statistics widen
# them with the conversion instruction, the output chain through their bits, two forms the compiler
# does not merge into one held fp32 copy), and walked twice by ``tl.split`` in chunk order: the
# statistics (RMSNorm: each slot's accumulator adds the chunks' squares one after another; LayerNorm:
# the Welford steps chunk after chunk; eager's orders) and the output chain. A chunk is RMSNorm's
# ``[ROWS, CH]`` tile or LayerNorm's ``[NT, 4]`` (``LAYER``: VEC's chunk, ``CH = 4 * NT``).


@triton.jit
def _hold_leaf(rmask, D, K: tl.constexpr, CH: tl.constexpr, LAYER: tl.constexpr, EVEN: tl.constexpr):
    """Element offsets and mask of chunk ``K``."""
    if LAYER:
        offs = _vec_offsets(K, CH // 4)
        if EVEN:
            return offs, tl.full([CH // 4, 4], 1, tl.int1)
        else:
            return offs, offs < D
    else:
        offs = K * CH + tl.arange(0, CH)[None, :]
        return offs, rmask & (offs < D)


@triton.jit
def _hold_load(x_rows, rmask, D, K0: tl.constexpr, CH: tl.constexpr, N: tl.constexpr, LAYER: tl.constexpr,
               EVEN: tl.constexpr):
    """Chunks ``K0 .. K0 + N - 1`` (``N`` a power of two), raw, as a join tree."""
    if N == 1:
        if LAYER:
            return _vec_load(x_rows, D, K0, CH // 4, EVEN, "evict_first")
        else:
            offs, mask = _hold_leaf(rmask, D, K0, CH, LAYER, EVEN)
            return tl.load(x_rows + offs, mask=mask, other=0.0, eviction_policy="evict_first")
    else:
        return tl.join(_hold_load(x_rows, rmask, D, K0, CH, N // 2, LAYER, EVEN),
                       _hold_load(x_rows, rmask, D, K0 + N // 2, CH, N // 2, LAYER, EVEN))


@triton.jit
def _hold_squares(acc, t, N: tl.constexpr):
    """``acc`` plus the squares of the held chunks, one chunk after another in chunk order."""
    if N == 1:
        v = triton_math.widen(t)  # not the output pass's widen_bits: the compiler would hold one fp32 copy
        return acc + v * v
    else:
        lo, hi = tl.split(t)
        return _hold_squares(_hold_squares(acc, lo, N // 2), hi, N // 2)


@triton.jit
def _hold_welford(m, s, t, D, K0: tl.constexpr, NT: tl.constexpr, N: tl.constexpr, EVEN: tl.constexpr,
                  HW: tl.constexpr):
    """The Welford steps of the held chunks, chunk after chunk (eager's order)."""
    if N == 1:
        return _welford_chunk(m, s, t, D, K0, NT, EVEN, HW)
    else:
        lo, hi = tl.split(t)
        m, s = _hold_welford(m, s, lo, D, K0, NT, N // 2, EVEN, HW)
        return _hold_welford(m, s, hi, D, K0 + N // 2, NT, N // 2, EVEN, HW)


@triton.jit
def _hold_emit(t, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset,
               K0: tl.constexpr, CH: tl.constexpr, N: tl.constexpr, LAYER: tl.constexpr, EVEN: tl.constexpr,
               HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr,
               P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr, N_DT: tl.constexpr,
               T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
               ROUND_OFFSET: tl.constexpr, HW_FMA: tl.constexpr):
    """The output chain of the held chunks ``K0 .. K0 + N - 1``."""
    if N == 1:
        offs, mask = _hold_leaf(rmask, D, K0, CH, LAYER, EVEN)
        _emit(triton_math.widen_bits(t), offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset,
              0 if LAYER else 1, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
              ROUND_OFFSET, HW_FMA)
    else:
        lo, hi = tl.split(t)
        _hold_emit(lo, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, K0, CH, N // 2, LAYER,
                   EVEN, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
                   ROUND_OFFSET, HW_FMA)
        _hold_emit(hi, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, K0 + N // 2, CH, N // 2,
                   LAYER, EVEN, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
                   ROUND_OFFSET, HW_FMA)


@triton.jit
def _tree_leaf(t, K: tl.constexpr, N: tl.constexpr):
    """Leaf ``K`` of a join tree of ``N`` leaves (a register grouping: no data movement)."""
    if N == 1:
        return t
    else:
        lo, hi = tl.split(t)
        if K < N // 2:
            return _tree_leaf(lo, K, N // 2)
        else:
            return _tree_leaf(hi, K - N // 2, N // 2)


@triton.jit
def _held_chunk(t1, t2, t3, K: tl.constexpr, HOLD1: tl.constexpr, HOLD2: tl.constexpr, HOLD3: tl.constexpr):
    """Chunk ``K`` of the held row (trees of ``HOLD1``, ``HOLD2``, ``HOLD3`` chunks)."""
    if K < HOLD1:
        return _tree_leaf(t1, K, HOLD1)
    elif K < HOLD1 + HOLD2:
        return _tree_leaf(t2, K - HOLD1, HOLD2)
    else:
        return _tree_leaf(t3, K - HOLD1 - HOLD2, HOLD3)


@triton.jit
def _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0: tl.constexpr, CH: tl.constexpr, N: tl.constexpr,
              LAYER: tl.constexpr, EVEN: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr,
              HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The output chain's operands (:func:`_emit_loads`) of chunks ``K0 .. K0 + N - 1``, four join trees."""
    if N == 1:
        offs, mask = _hold_leaf(rmask, D, K0, CH, LAYER, EVEN)
        return _emit_loads(offs, mask, W, BIAS, sc_row, sh_row, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS)
    else:
        a = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0, CH, N // 2, LAYER, EVEN, HAS_SCALE, HAS_SHIFT, HAS_W,
                      HAS_BIAS)
        b = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0 + N // 2, CH, N // 2, LAYER, EVEN, HAS_SCALE, HAS_SHIFT,
                      HAS_W, HAS_BIAS)
        return tl.join(a[0], b[0]), tl.join(a[1], b[1]), tl.join(a[2], b[2]), tl.join(a[3], b[3])


@triton.jit
def _emit_ahead(t1, t2, t3, first, first_x, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row,
                scale_offset, CH: tl.constexpr, CHUNKS: tl.constexpr, HOLD1: tl.constexpr, HOLD2: tl.constexpr,
                HOLD3: tl.constexpr, G: tl.constexpr, REREAD: tl.constexpr, LAYER: tl.constexpr, EVEN: tl.constexpr,
                HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr,
                P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr, N_DT: tl.constexpr,
                T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
                ROUND_OFFSET: tl.constexpr, HW_FMA: tl.constexpr):
    """The output chain with its loads issued one group of ``G`` chunks ahead of the chunks they
    serve (``first``: group 0's operands, :func:`_mod_tree`): the operands, and with ``REREAD`` x
    itself (``first_x``: group 0's chunks, read again from L1 / L2), else the held row's chunks
    (``t1``, ``t2``, ``t3``). A store may alias any load, so the compiler never moves a later
    chunk's loads above an earlier chunk's store: without this each chunk waits for its own loads
    (sm_90 Nsight Compute, exact rms_modulate at FLUX held: 71% of the kernel's stall samples on
    the output chain's operand loads)."""
    NG: tl.constexpr = CHUNKS // G
    ops_n = first
    xs_n = first_x
    for g in tl.static_range(NG):
        ops = ops_n
        xs = xs_n
        if g + 1 < NG:
            if REREAD:
                xs_n = _hold_load(x_row, rmask, D, (g + 1) * G, CH, G, LAYER, EVEN)
            ops_n = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, (g + 1) * G, CH, G, LAYER, EVEN, HAS_SCALE,
                              HAS_SHIFT, HAS_W, HAS_BIAS)
        for j in tl.static_range(G):
            offs, mask = _hold_leaf(rmask, D, g * G + j, CH, LAYER, EVEN)
            if REREAD:
                v = triton_math.widen_bits(_tree_leaf(xs, j, G))
            else:
                v = triton_math.widen_bits(_held_chunk(t1, t2, t3, g * G + j, HOLD1, HOLD2, HOLD3))
            _emit_apply(v, offs, mask, mean, rstd, _tree_leaf(ops[0], j, G), _tree_leaf(ops[1], j, G),
                        _tree_leaf(ops[2], j, G), _tree_leaf(ops[3], j, G), y_row, scale_offset, 0 if LAYER else 1,
                        HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET,
                        HW_FMA)


def hold_tiles(chunks: int) -> tuple[int, int, int] | None:
    """``chunks`` as at most three powers of two, largest first (``HOLD1..3``; 0: none), or None."""
    parts = [1 << b for b in range(chunks.bit_length() - 1, -1, -1) if chunks >> b & 1]
    return (*parts, 0, 0)[:3] if 0 < len(parts) <= 3 else None


@triton.jit
def _emit_loads(offs, mask, W, BIAS, sc_row, sh_row, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr,
                HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The output chain's per-element operands at ``offs``, raw: ``(weight, bias, scale, shift)``
    (zeros where absent, never read by :func:`_emit_apply`)."""
    none = tl.zeros(mask.shape, tl.float32)
    w, bb, sc, sh = none, none, none, none
    if HAS_W:
        w = tl.load(W + offs, mask=mask, other=0.0)
    if HAS_BIAS:
        bb = tl.load(BIAS + offs, mask=mask, other=0.0)
    if HAS_SCALE:
        sc = tl.load(sc_row + offs, mask=mask, other=0.0, eviction_policy="evict_last")
        if HAS_SHIFT:
            sh = tl.load(sh_row + offs, mask=mask, other=0.0, eviction_policy="evict_last")
    return w, bb, sc, sh


@triton.jit
def _emit_apply(v, offs, mask, mean, rstd, w_raw, b_raw, sc_raw, sh_raw, y_row, scale_offset,
                NORM: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr,
                HAS_BIAS: tl.constexpr, P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr,
                N_DT: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
                ROUND_OFFSET: tl.constexpr, HW_FMA: tl.constexpr):
    """The output chain on fp32 elements ``v`` at ``offs`` (any shape) with the operands of
    :func:`_emit_loads`, stored to ``y_row``."""
    if NORM == 0:
        xc = v - mean
        t = rstd * xc
        if HAS_W:
            w = triton_math.round_to(triton_math.widen(w_raw), P_DT)
        if HAS_BIAS:
            bb = triton_math.round_to(triton_math.widen(b_raw), P_DT)
        if HAS_W and HAS_BIAS:
            h = _fma(w, t, bb, HW_FMA)
        elif HAS_W:
            h = w * t
        elif HAS_BIAS:
            h = _fma(rstd, xc, bb, HW_FMA)
        else:
            h = t
        h = triton_math.round_to(h, N_DT)
    else:
        h = triton_math.round_to(v * rstd, C_DT)
        if HAS_W:
            h = triton_math.round_to(h * triton_math.widen(w_raw), A_DT)
        if HAS_BIAS:
            h = triton_math.round_to(h + triton_math.widen(b_raw), N_DT)
    if HAS_SCALE:
        off = scale_offset
        if ROUND_OFFSET:  # CPU eager rounds the Python scalar to scale's dtype first
            off = triton_math.round_to(off, T1)
        t1 = triton_math.round_to(off + triton_math.widen(sc_raw), T1)
        h = triton_math.round_to(h * t1, T2)
        if HAS_SHIFT:
            h = triton_math.round_to(h + triton_math.widen(sh_raw), T3)
    tl.store(y_row + offs, triton_math.narrow(h, OUT), mask=mask)


@triton.jit
def _emit(v, offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset,
          NORM: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr,
          HAS_BIAS: tl.constexpr, P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr,
          N_DT: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
          ROUND_OFFSET: tl.constexpr, HW_FMA: tl.constexpr):
    """The output chain on fp32 elements ``v`` at ``offs`` (any shape), stored to ``y_row``."""
    w, bb, sc, sh = _emit_loads(offs, mask, W, BIAS, sc_row, sh_row, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS)
    _emit_apply(v, offs, mask, mean, rstd, w, bb, sc, sh, y_row, scale_offset, NORM, HAS_SCALE, HAS_SHIFT, HAS_W,
                HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET, HW_FMA)


@triton.jit(do_not_specialize=["n_rows", "S", "sc_L", "sh_L", "eps", "scale_offset", "mean_factor", "d_float"])
def _row_norm_exact_kernel(
    X, SC, SH, W, BIAS, Y, ONE, RCP, TAB,
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
    HW_FMA: tl.constexpr, UNROLL: tl.constexpr, UNROLL_OUT: tl.constexpr, ROWS: tl.constexpr,
    REVERSE_OUT: tl.constexpr, VEC: tl.constexpr, EVEN: tl.constexpr, TREE: tl.constexpr = 0,
    HOLD1: tl.constexpr = 0, HOLD2: tl.constexpr = 0, HOLD3: tl.constexpr = 0,
    MOD_AHEAD: tl.constexpr = 0, MOD_EARLY: tl.constexpr = False, OUT_AHEAD: tl.constexpr = 0,
):
    # ROWS rows per program (RMSNorm: one warp each, [ROWS, 4 * LANES] tiles; LayerNorm: 1)
    row = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS)[:, None]
    rmask = row < n_rows
    b = row // S
    s = row - b * S
    x_row = X + b * x_sb + s * x_ss
    y_row = Y + row * D
    sc_row = SC + b * sc_sb + (s // sc_L) * sc_ss
    sh_row = SH + b * sh_sb + (s // sh_L) * sh_ss
    one64 = tl.load(ONE)  # fp64 1.0 (see _div)
    if NORM == 0:
        NT: tl.constexpr = WARP * NWARP
        CH: tl.constexpr = 4 * NT
        row1 = tl.program_id(0).to(tl.int64)  # ROWS == 1
        b1 = row1 // S
        x1 = X + b1 * x_sb + (row1 - b1 * S) * x_ss
        if HOLD1 > 0:
            # the row held in registers (VEC's chunks, HOLD1 + HOLD2 + HOLD3 == CHUNKS)
            t1 = _hold_load(x1, rmask, D, 0, CH, HOLD1, True, EVEN)
            if HOLD2 > 0:
                t2 = _hold_load(x1, rmask, D, HOLD1, CH, HOLD2, True, EVEN)
            if HOLD3 > 0:
                t3 = _hold_load(x1, rmask, D, HOLD1 + HOLD2, CH, HOLD3, True, EVEN)
            if MOD_AHEAD > 0 and MOD_EARLY:  # the output chain's first operands, in flight with x
                first = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, 0, CH, MOD_AHEAD, True, EVEN, HAS_SCALE,
                                  HAS_SHIFT, HAS_W, HAS_BIAS)
            m = tl.zeros([NT], tl.float32)
            s = tl.zeros([NT], tl.float32)
            m, s = _hold_welford(m, s, t1, D, 0, NT, HOLD1, EVEN, HW_FMA)
            if HOLD2 > 0:
                m, s = _hold_welford(m, s, t2, D, HOLD1, NT, HOLD2, EVEN, HW_FMA)
            if HOLD3 > 0:
                m, s = _hold_welford(m, s, t3, D, HOLD1 + HOLD2, NT, HOLD3, EVEN, HW_FMA)
            mean, m2 = _welford_tree(m, s, TAB, WARP, NWARP, HW_FMA, TREE, 4 * CHUNKS if EVEN else 0)
        else:
            mean, m2 = _layer_stats(x1, D, RCP, TAB, WARP, NWARP, CHUNKS, HW_FMA, UNROLL, VEC, EVEN, TREE)
        var = _div(m2, d_float, one64)
    else:
        CH: tl.constexpr = 4 * LANES
        if HOLD1 > 0:
            # the row held in registers: chunks HOLD1 + HOLD2 + HOLD3 == CHUNKS (powers of two)
            t1 = _hold_load(x_row, rmask, D, 0, CH, HOLD1, False, False)
            if HOLD2 > 0:
                t2 = _hold_load(x_row, rmask, D, HOLD1, CH, HOLD2, False, False)
            if HOLD3 > 0:
                t3 = _hold_load(x_row, rmask, D, HOLD1 + HOLD2, CH, HOLD3, False, False)
            if MOD_AHEAD > 0 and MOD_EARLY:
                first = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, 0, CH, MOD_AHEAD, False, False, HAS_SCALE,
                                  HAS_SHIFT, HAS_W, HAS_BIAS)
            acc = _hold_squares(tl.zeros([ROWS, CH], tl.float32), t1, HOLD1)
            if HOLD2 > 0:
                acc = _hold_squares(acc, t2, HOLD2)
            if HOLD3 > 0:
                acc = _hold_squares(acc, t3, HOLD3)
            total = _lane_total(acc, ROWS, LANES, WARP)
        else:
            total = _sum_squares(x_row, rmask, D, ROWS, LANES, WARP, CHUNKS, UNROLL)
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
                    r_val = tl.sum(tl.reshape(tl.where(tl.arange(0, ROWS)[:, None] == r, rstd, 0.0), [ROWS]), axis=0)
                    rb = tl.where(tl.arange(0, ROWS)[:, None] == r, r_val, rb)
                rstd = rb
        if MOD_AHEAD > 0:
            if not MOD_EARLY:
                first = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, 0, CH, MOD_AHEAD, NORM == 0, EVEN, HAS_SCALE,
                                  HAS_SHIFT, HAS_W, HAS_BIAS)
            if HOLD2 == 0:
                t2 = t1
            if HOLD3 == 0:
                t3 = t1
            _emit_ahead(t1, t2, t3, first, t1, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row,
                        scale_offset, CH, CHUNKS, HOLD1, HOLD2, HOLD3, MOD_AHEAD, False, NORM == 0, EVEN, HAS_SCALE,
                        HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET, HW_FMA)
        else:
            _hold_emit(t1, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, 0, CH, HOLD1,
                       NORM == 0, EVEN, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
                       ROUND_OFFSET, HW_FMA)
            if HOLD2 > 0:
                _hold_emit(t2, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, HOLD1, CH, HOLD2,
                           NORM == 0, EVEN, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3,
                           OUT, ROUND_OFFSET, HW_FMA)
            if HOLD3 > 0:
                _hold_emit(t3, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, HOLD1 + HOLD2, CH,
                           HOLD3, NORM == 0, EVEN, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1,
                           T2, T3, OUT, ROUND_OFFSET, HW_FMA)
    elif OUT_AHEAD > 0:  # the output pass reads x again, its loads a group of chunks ahead (forward order)
        first = _mod_tree(rmask, D, W, BIAS, sc_row, sh_row, 0, CH, OUT_AHEAD, NORM == 0, EVEN, HAS_SCALE, HAS_SHIFT,
                          HAS_W, HAS_BIAS)
        first_x = _hold_load(x_row, rmask, D, 0, CH, OUT_AHEAD, NORM == 0, EVEN)
        _emit_ahead(first_x, first_x, first_x, first, first_x, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row,
                    y_row, scale_offset, CH, CHUNKS, 0, 0, 0, OUT_AHEAD, True, NORM == 0, EVEN, HAS_SCALE, HAS_SHIFT,
                    HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET, HW_FMA)
    else:  # the output pass reads x again
        cols = tl.arange(0, CH)[None, :]
        for kk in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL_OUT):
            # REVERSE_OUT: the output pass walks the chunks last to first, so the chunks the
            # statistics pass read last (the likeliest still in L1 / L2) are read again first
            if REVERSE_OUT:
                k = CHUNKS - 1 - kk
            else:
                k = kk
            offs = k * CH + cols
            if NORM == 0 and EVEN:  # LayerNorm: one row per program, every chunk full: a constant mask
                mask = tl.full([1, CH], 1, tl.int1)
            else:
                mask = rmask & (offs < D)
            v = triton_math.widen(tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first"))
            _emit(v, offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, NORM, HAS_SCALE, HAS_SHIFT,
                  HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET, HW_FMA)


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


@functools.lru_cache(maxsize=64)
def welford_tree_table(D: int, warp: int, nwarp: int) -> torch.Tensor:
    """The combine coefficients of LayerNorm's reduction tree (see ``_welford_merge``), fp32 CPU
    tensor ``[4 * (NT - 1)]``: per combine ``(nA, nB, countA, 0)``; the combines by level in the
    kernel's order (intra-warp ``[nwarp, N/2]`` for N = warp .. 2, then inter-warp ``[1, N/2]``
    for N = nwarp .. 2), each row-major. Thread ``t`` of ``NT = warp * nwarp`` holds the
    elements ``4t .. 4t+3`` of every ``4 * NT``-wide chunk; its count is how many lie below
    ``D``. ``coef = 1 / count``, ``nA = countA * coef``, ``nB = countB * coef`` are rounded to
    fp32 at each step, as in ``cuWelfordCombine`` (IEEE fp32 division and products on the host)."""
    nt = warp * nwarp
    chunk = 4 * nt
    full, rest = divmod(D, chunk)
    t = torch.arange(nt)
    counts = (full * 4 + (rest - 4 * t).clamp(0, 4)).to(torch.float32)
    rows: list[list[torch.Tensor]] = [[], [], []]

    def level(c: torch.Tensor) -> torch.Tensor:
        half = c.shape[1] // 2
        cb, ca = c[:, :half], c[:, half:]
        total = ca + cb
        coef = torch.where(total > 0, 1.0 / torch.where(total > 0, total, torch.ones_like(total)), 0.0)
        for r, v in zip(rows, (ca * coef, cb * coef, ca)):
            r.append(v.reshape(-1))
        return total

    c = counts.reshape(nwarp, warp)
    while c.shape[1] > 1:
        c = level(c)
    c = c.reshape(1, nwarp)
    while c.shape[1] > 1:
        c = level(c)
    na, nb, ca = (torch.cat(r) for r in rows)
    return torch.stack([na, nb, ca, torch.zeros_like(ca)], dim=1).reshape(-1).to(torch.float32)


def mean_factor(rows: int, D: int) -> float:
    """CUDA ``mean``'s factor: ``float(num_outputs) / numel`` in fp32."""
    f = torch.tensor(float(rows), dtype=torch.float32) / torch.tensor(float(rows * D), dtype=torch.float32)
    return float(f)


# raw bytes of x per thread up to which a row is held in registers (RMSNorm bf16 D = 5120: 320)
_HOLD_BYTES = 320
_HOLD_MAXNREG = 128
_MANY_ROWS = 16384  # from here the rules treat a launch as many rows (RMSNorm's ROWS, REVERSE_OUT; LayerNorm's HOLD)


def launch_constants(geom, weight, bias, platform: str, tuning: dict | None = None,
                     x_dtype: torch.dtype = torch.bfloat16) -> dict:
    """The kernel's constexprs for one call signature: eager's thread layout (``LANES``, ``WARP``,
    ``NWARP``, ``CHUNKS``), the chain's dtypes, and build choices ``tuning`` may override (none
    changes the arithmetic's order): ``HW_FMA`` (the hardware FMA where nvcc contracts; else the
    fp64 emulation), ``UNROLL`` / ``UNROLL_OUT`` (unroll factors of the statistics loop and the
    output loop; None: the compiler's choice), ``ROWS`` (RMSNorm rows per program, a warp each),
    ``REVERSE_OUT`` (the output pass over the chunks last to first), ``VEC`` (LayerNorm: one vector
    load per chunk, the chunks unrolled at compile time; up to 16 chunks), ``EVEN`` (LayerNorm:
    every chunk full, no masks; derived from ``D``), ``TREE`` (LayerNorm: 1, the intra-warp
    combines as warp-local ``tl.gather``s; 0, halving through shared memory; the same order),
    ``HOLD`` (True / False: the row held in registers or read twice; default by the rule below;
    ``HOLD_BYTES`` moves its size limit), ``MOD_AHEAD`` / ``MOD_EARLY`` / ``OUT_AHEAD`` (loads
    issued ahead; the rules in the body), ``MAXNREG`` (CUDA's register cap, a launch option;
    None: uncapped) and ``WPR`` (RMSNorm's warps per row, a launch option; see ``_split_options``).

    The defaults are the rules measured on one H200 (bf16, % of a same-run copy at FLUX / Wan /
    HunyuanVideo, every row ``torch.equal`` to eager):

    * ``UNROLL``: RMSNorm's chunk loops fully unrolled, 77.2 / 92.0 / 94.9% (the compiler's choice
      71.9 / 84.4 / 91.0%); LayerNorm's Welford loop fully unrolled up to 6 chunks (D=3072: 35.1 /
      - / 26.4%), by 2 above (D=5120, where full unrolling measured no gain: 18.4%). ``HW_FMA``:
      12-18% faster than the fp64 emulation (docs/benchmarks/exact_norm_sweep_h200.json).
    * ``ROWS``: RMSNorm rows read twice take 2 rows per program below 16384 rows (FLUX's 4608
      one-warp programs fill 1.09 waves of 32 resident programs per SM): rms_norm 77.7 -> 85.1%,
      rms_modulate 71.7 -> 81.1% (4 rows: 83.3 / 82.5%); with many rows 2 per program lose 5-20
      points (docs/benchmarks/exact_norm_sweep2_h200.json).
    * ``REVERSE_OUT``: from 16384 rows RMSNorm rows read twice walk the output pass last chunk
      first, so the chunks the statistics pass read last are re-read first
      (docs/benchmarks/exact_norm_sweep_reverse_*_h200.json): rms_modulate Wan 77.4 -> 80.3%,
      rms_norm Wan 91.8 -> 92.9%, HunyuanVideo +0.1 / +0.5 points; at FLUX it lost 1.2-2.4 points.
      LayerNorm was not measured with it and keeps the forward order.
    * LayerNorm (docs/benchmarks/exact_norm_sweep_*s7*_h200.json; each step on top of the ones
      before, layer_norm from 35 / 18 / 26%): the combine coefficients from a host table (no fp64
      division, 64 registers instead of 136-141) 56 / 63 / 51%; ``EVEN`` (no masks in the Welford
      steps when every chunk is full) 64 / 68 / 56%; ``VEC`` (one vector load per chunk, split in
      registers) 71 / 77 / 67%; the chunks unrolled at compile time and the output loop fully
      unrolled (``UNROLL_OUT``) 75 / 90 / 74%; unmasked loads and stores 77 / 94 / 75% (ln_modulate
      70 / 87 / 65%); ``TREE`` 1 (sm_90: 856 -> 648 instructions per thread at D = 3072) 103 / 96 /
      99%, ln_modulate 92 / 92 / 87% (``exact_norm_sweep_s8_tree_h200.json``). Without ``VEC``
      Nsight Compute at Wan had SM throughput at 84% and DRAM at 48%: bound by instructions, not
      memory; keeping that kernel's row in registers measured 41% at Wan (102-134 registers).
    * Not in RMSNorm's rules: a persistent grid (39-85% against 79-95%) and a register cap of 48-64
      (rms_modulate at Wan 60% against 81%; ``exact_norm_sweep_s8_*_rejected_h200.json``).
    * ``HOLD`` (the row held in registers, one read of x; ``exact_norm_sweep_s11_hold*_h200.json``,
      ``exact_norm_sweep_s12_flux_*_h200.json``, Triton's and torch's ptxas): Nsight Compute had the
      second read of Wan's 10 KB rows missing L2 half the time. RMSNorm holds wherever eager gives a
      row one warp (``LANES == WARP``: from 16 rows at these widths; fewer rows spread a row over
      several warps, never measured held on a GPU), one row per program: rms_modulate Wan
      79.6-80.7 -> 84.3-87.6% (bench 85.7%; two rows per program 85.9 / 86.1%, bench 84.8%),
      HunyuanVideo 94.5% (two rows: 92.5%), rms_norm FLUX bench 89.5% (two rows: 84.5%); at FLUX the
      held row measured rms_modulate 85.9-88.4% against the re-read kernel's 81.7-85.7% and rms_norm
      89.4-92.7% against 84.6-87.7%, in all 12 pairs of three interleaved repeats under each ptxas.
      sm_90: 80 / 118 registers at D = 3072 / 5120 (Triton 3.9), 80 / 147 (3.6). LayerNorm holds from
      8 chunks or below 16384 rows: ln_modulate FLUX 92.1-93.1 -> 98.8-100.2%, Wan 92.1-92.4 ->
      96.6-96.7%, but HunyuanVideo 87.4-88.2 -> 85.7-86.7% and layer_norm there 99.7 -> 96.7% (40 ->
      48 registers at 6 chunks, fewer programs per SM).
    * ``MAXNREG``: RMSNorm rows held in more than 32 chunks are capped at 128 registers: Wan 84.5 ->
      87.1% under Triton's ptxas (87.1 / 87.2% under torch's); capped at D = 3072 HunyuanVideo lost
      1.3 points and FLUX 1-2 (``exact_norm_sweep_s11_cap_*_h200.json``).
    """
    g, ch = geom.x, geom.chain
    warp = 64 if platform == "hip" else 32
    if geom.norm == "layer":
        lanes, nwarp = warp, 4  # ATen num_threads() = 4 warps
        chunk = 4 * warp * nwarp
    else:
        lanes, _ = reduce_lanes(g.rows, g.D, warp)
        nwarp = 1
        chunk = 4 * lanes
    f32 = tl.float32
    chunks = max(1, triton.cdiv(g.D, chunk))
    unroll = chunks if geom.norm == "rms" or chunks <= 6 else 2
    out = {
        "NORM": 0 if geom.norm == "layer" else 1, "HAS_SCALE": geom.scale is not None,
        "HAS_SHIFT": geom.shift is not None, "HAS_W": weight is not None, "HAS_BIAS": bias is not None,
        "P_DT": TL_DTYPES[ch.p], "C_DT": TL_DTYPES[ch.c], "A_DT": TL_DTYPES[ch.a], "N_DT": TL_DTYPES[ch.n],
        "T1": TL_DTYPES[ch.t1] if ch.t1 else f32, "T2": TL_DTYPES[ch.t2] if ch.t2 else f32,
        "T3": TL_DTYPES[ch.t3] if ch.t3 else f32, "OUT": TL_DTYPES[ch.out],
        "MEAN_DIV": platform == "cpu", "ROUND_OFFSET": platform == "cpu",
        "LANES": lanes, "WARP": warp, "NWARP": nwarp, "CHUNKS": chunks,
        "HW_FMA": True, "UNROLL": unroll,
        "UNROLL_OUT": chunks if geom.norm == "layer" and chunks <= 16 else unroll,
        "ROWS": 2 if geom.norm == "rms" and g.rows < _MANY_ROWS else 1,
        "REVERSE_OUT": geom.norm == "rms" and g.rows >= _MANY_ROWS,
        # VEC unrolls the statistics at compile time: up to 16 chunks (D <= 8192 on CUDA); at
        # D = 65536 (128 chunks) one sm_90 build took 69 s, so wider rows keep the loop
        "VEC": geom.norm == "layer" and chunks <= 16,
        # LayerNorm's intra-warp combines as warp-local gathers (shuffles) instead of halving the
        # statistics through shared memory: 648 sm_90 instructions per thread at D = 3072, not 856
        "TREE": 1,
        **(tuning or {}),
    }
    # LayerNorm with every chunk full (the layout after any override): no masks (Welford selects,
    # loads, stores). Unmasked RMSNorm builds measured slower (rms_modulate at Wan 59.9% against
    # 79.8%, docs/benchmarks/exact_norm_sweep_s7_unmasked_h200.json), so EVEN is
    # LayerNorm's alone
    out.setdefault("EVEN", out["NORM"] == 0 and g.D == out["CHUNKS"] * 4 * out["WARP"] * out["NWARP"])
    # the row held in registers (one read of x, see _hold_load) where its raw chunks fit
    # (HOLD_BYTES per thread) and split into at most three powers of two; RMSNorm where a row is one
    # warp's; LayerNorm (VEC's chunks) only where it measured faster: wide rows (8+ chunks) or few rows
    hold_bytes = out.pop("HOLD_BYTES", _HOLD_BYTES)
    tiles = hold_tiles(out["CHUNKS"]) if out["NORM"] == 1 or out["VEC"] else None
    if "HOLD" in out:  # tuning: force the held row on (where the chunks split) or off
        want = out.pop("HOLD")
        if want and tiles is None:
            raise ValueError(f"HOLD needs {out['CHUNKS']} chunks as at most three powers of two"
                             f"{' and VEC (LayerNorm)' if out['NORM'] == 0 else ''}")
    else:
        # fp16 is not held: its two widenings are the same conversion, which the compiler merges
        # into one held fp32 copy (sm_90: 185-232 registers at D = 5120, against bf16's 108-118)
        want = (tiles is not None and x_dtype in (torch.bfloat16, torch.float32)
                and out["CHUNKS"] * 4 * x_dtype.itemsize <= hold_bytes
                and (out["LANES"] == out["WARP"] if out["NORM"] == 1 else out["CHUNKS"] >= 8 or g.rows < _MANY_ROWS))
    out["HOLD1"], out["HOLD2"], out["HOLD3"] = tiles if want and tiles else (0, 0, 0)
    if out["HOLD1"]:  # the output pass's chunk order concerns re-read rows only: one build per held row
        out["REVERSE_OUT"] = False
    if out["NORM"] == 1 and out["HOLD1"] and "ROWS" not in (tuning or {}):
        out["ROWS"] = 1  # RMSNorm's held rows: one per program (two measured no steadier, below)
    # a register cap (CUDA's maxnreg; not a constexpr: popped by the launch) on RMSNorm rows held
    # in more than 32 chunks: Triton 3.6's bundled ptxas builds the held Wan row (D = 5120) with 147
    # registers uncapped, 118 capped at 128 without spilling (Triton 3.9's: 118 either way), 13 -> 17
    # one-warp programs per SM; at 24 chunks (D = 3072) the cap measured 1.3 points slower
    if "MAXNREG" not in out:
        capped = platform == "cuda" and out["HOLD1"] and out["NORM"] == 1 and out["CHUNKS"] > 32
        out["MAXNREG"] = _HOLD_MAXNREG if capped else None
    if out["NORM"] == 0 and out["ROWS"] != 1:
        raise ValueError("the exact LayerNorm kernel reduces one row per program (ROWS=1)")
    # MOD_AHEAD (held rows): the output chain's operands (weight, bias, scale, shift) loaded a group
    # of this many chunks ahead of the chunks they serve, the group halved until it divides CHUNKS;
    # MOD_EARLY: the first group's loads issued with x's, before the statistics. The rule: RMSNorm 4
    # chunks up to 32 chunks, 1 above (the register-capped rows), LayerNorm none
    # (exact_norm_sweep_s13_ahead_*_h200.json, torch's ptxas, % of copy: rms_modulate FLUX 79.6-80.8
    # -> 104.2% at 4 (98-99% at 2, 91% at 1), HunyuanVideo 94.3 -> 96.7%, Wan 87.2 -> 91.7% at 1
    # (90% at 2, 85.5% at 4 under the 128-register cap); ln_modulate within 1.3 points either way)
    if "MOD_AHEAD" in out:
        ahead = out["MOD_AHEAD"]
    else:
        ahead = (4 if out["CHUNKS"] <= 32 else 1) if out["NORM"] == 1 else 0
    if isinstance(ahead, bool) or not isinstance(ahead, int) or ahead < 0 or ahead & (ahead - 1):
        raise ValueError(f"MOD_AHEAD (chunks per group of prefetched operands) must be 0 or a power of two, "
                         f"not {ahead!r}")
    if not out["HOLD1"] or not (out["HAS_W"] or out["HAS_BIAS"] or out["HAS_SCALE"]):
        ahead = 0
    while ahead > 1 and out["CHUNKS"] % ahead:
        ahead //= 2
    out["MOD_AHEAD"] = ahead
    out["MOD_EARLY"] = bool(out.get("MOD_EARLY", False)) and ahead > 0
    # OUT_AHEAD (rows read twice): the output pass's loads of x and of the operands a group of this
    # many chunks ahead (forward order: not with REVERSE_OUT), the group halved until it divides
    # CHUNKS. The rule: LayerNorm 1, RMSNorm none (its rows read twice, fp16 / wide fp32 / under 16
    # rows, were not measured with it). exact_norm_sweep_s13_out_ahead_torch_h200.json (HunyuanVideo,
    # 118800 rows of 6 chunks, torch's ptxas): ln_modulate 87.9 / 87.9% -> 89.3% at 1,
    # 88.8-88.9% at 2; layer_norm 100.3 / 99.9% -> 101.8% at 1, 102.0 / 102.0% at 2
    if "OUT_AHEAD" in out:
        again = out["OUT_AHEAD"]
        if isinstance(again, bool) or not isinstance(again, int) or again < 0 or again & (again - 1):
            raise ValueError(f"OUT_AHEAD (chunks per group of the output pass's loads) must be 0 or a power of "
                             f"two, not {again!r}")
        if again and out["REVERSE_OUT"]:
            raise ValueError("OUT_AHEAD walks the chunks forward: not with REVERSE_OUT")
    else:
        again = 1 if out["NORM"] == 0 and not out["REVERSE_OUT"] else 0
    if out["HOLD1"]:
        again = 0
    while again > 1 and out["CHUNKS"] % again:
        again //= 2
    out["OUT_AHEAD"] = again
    return out


def _split_options(const: dict) -> tuple[dict, dict]:
    """The kernel's constexprs and its Triton launch options (warps, stages, the register cap).
    ``WPR`` (RMSNorm, tuning only, default 1): warps per row. The arithmetic is elementwise on the
    ``[ROWS, 4 * LANES]`` accumulators and an explicit tree, so spreading a row over more warps
    changes which thread does what, never the order (sm_90, held row at D = 3072: 56 registers on
    2 warps against 80-92 on one). Measured on one H200 (bf16, rms_modulate / rms_norm
    at FLUX, Wan, HunyuanVideo; docs/benchmarks/exact_norm_sweep_s12_wpr_rejected_h200.json): two or
    four warps per row 52.9-96.7% of copy against the rule's 83.7-95.9%, slower in 16 of 18 cases
    and within noise in the other two (rms_modulate FLUX held on two warps 83.8 against 83.7%,
    rms_norm HunyuanVideo read twice on two warps 96.7 against 95.9%); kept as a tuning option
    (tested bit for bit), never chosen by the rule."""
    const = dict(const)
    maxnreg = const.pop("MAXNREG", None)
    wpr = const.pop("WPR", 1)
    if wpr not in (1, 2, 4) or (wpr > 1 and const["NORM"] != 1):
        raise ValueError(f"WPR (warps per row) must be 1, 2 or 4, and above 1 only for RMSNorm, not {wpr}")
    options = {"num_warps": _num_warps(const) * wpr, "num_stages": 1}
    if maxnreg:
        options["maxnreg"] = maxnreg
    return const, options


def _num_warps(const: dict) -> int:
    if const["NORM"] == 1:  # one warp-row per row, ROWS rows per program
        return max(1, const["LANES"] * const["NWARP"] // const["WARP"]) * const["ROWS"]
    return const["NWARP"]


def prepare(geom, x, scale, shift, weight, bias, tuning: dict | None = None):
    """A runner ``(x, scale, shift, weight, bias, eps, scale_offset) -> out``: the fused kernel once the
    op's gate verified this call signature, the eager chain otherwise. ``tuning`` overrides build
    choices of :func:`launch_constants` (GPU sweeps only)."""
    from sgl_diffusion_core import call_signature

    from .row_norm_api import exact_gate
    from .row_norm_torch import norm_chain

    g = geom.x
    plat = tensor_platform(x.device)
    const = launch_constants(geom, weight, bias, plat, tuning, x.dtype)
    mods = tuple(v for lay in (geom.scale, geom.shift) for v in ((0, 0, 1) if lay is None else (lay.sb, lay.ss, lay.L)))
    scalars = (g.rows, g.S, g.D, g.sb, g.ss, *mods)
    factor = mean_factor(g.rows, g.D)
    d_float = float(g.D)  # the fp32 D eager divides by (exact below 2^24)
    one = torch.ones(1, dtype=torch.float64, device=x.device)
    # 1 / n for n = 1 .. 4 * CHUNKS, divided in fp32 on the host (IEEE, as eager's `1.f / count`)
    rcp = (1.0 / torch.arange(1, 4 * const["CHUNKS"] + 1, dtype=torch.float32)).to(x.device)
    tab = welford_tree_table(g.D, const["WARP"], const["NWARP"]).to(x.device) if const["NORM"] == 0 else rcp
    const, options = _split_options(const)
    launch = PreparedLaunch(_row_norm_exact_kernel, (triton.cdiv(g.rows, const["ROWS"]),), const, device=x.device,
                            n_ptrs=9, options=options, fp_fusion=False)
    gate = exact_gate(geom.op)
    static = call_signature(x, scale, shift, weight, bias)
    shape, dtype, device, norm = g.shape, geom.chain.out, x.device, geom.norm

    def fused(x, scale, shift, weight, bias, eps, scale_offset):
        out = torch.empty(shape, dtype=dtype, device=device)
        launch(x, x if scale is None else scale, x if shift is None else shift, x if weight is None else weight,
               x if bias is None else bias, out, one, rcp, tab, *scalars, eps, scale_offset, factor, d_float)
        return out

    def run(x, scale, shift, weight, bias, eps, scale_offset):
        # the eager path ATen takes depends on the 16-byte alignment of x: part of the signature
        sig = (static, x.data_ptr() % 16 == 0, float(eps), float(scale_offset))
        return gate.run(lambda: fused(x, scale, shift, weight, bias, eps, scale_offset),
                        lambda: norm_chain(norm, x, scale, shift, weight, bias, eps, scale_offset), sig=sig)

    run.fused = fused  # the kernel alone, for tests and benchmarks
    return run


def row_norm_exact(x, scale=None, shift=None, weight=None, bias=None, *, eps=1e-6, scale_offset=1.0, geom):
    """Launch once through the gate. ``geom`` comes from ``describe_row_norm`` (validated inputs)."""
    return prepare(geom, x, scale, shift, weight, bias)(x, scale, shift, weight, bias, eps, scale_offset)


row_norm_exact.prepare = prepare


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

    from .row_norm_api import chain_dtypes

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


# pointers and the extents a production launch sees as multiples of 16 (Triton's divisibility
# specialization: the 16-byte accesses of the real build)
_ALIGNED = ("X", "SC", "SH", "W", "BIAS", "Y", "ONE", "RCP", "TAB", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sh_sb",
            "sh_ss")


def _aot_builds(const: dict, dt: str, norm: str, D: int, modulated: bool) -> list:
    from sgl_diffusion_core import AotVariant

    sig = {n: f"*{dt}" for n in ("X", "SC", "SH", "W", "BIAS", "Y")}
    sig["ONE"] = "*fp64"
    sig["RCP"] = "*fp32"
    sig["TAB"] = "*fp32"
    sig.update({n: "i32" for n in ("n_rows", "S", "D", "x_sb", "x_ss", "sc_sb", "sc_ss", "sc_L", "sh_sb", "sh_ss",
                                   "sh_L")})
    sig.update({"eps": "fp32", "scale_offset": "fp32", "mean_factor": "fp32", "d_float": "fp32"})
    const, options = _split_options(const)
    options.pop("num_warps")
    options.pop("num_stages")
    sig.update({n: "constexpr" for n in const})
    hold = const["HOLD1"] + const["HOLD2"] + const["HOLD3"]
    name = (f"row_norm_exact[{dt},{norm},D={D},modulated={modulated},lanes={const['LANES']}x{const['NWARP']},"
            f"chunks={const['CHUNKS']},rows={const['ROWS']},hold={'on' if hold else 'off'}"
            f"{',reverse_out' if const['REVERSE_OUT'] else ''}"
            f"{',mod_ahead=' + str(const['MOD_AHEAD']) if const['MOD_AHEAD'] else ''}"
            f"{',out_ahead=' + str(const['OUT_AHEAD']) if const['OUT_AHEAD'] else ''}"
            f"{',maxnreg=' + str(options['maxnreg']) if 'maxnreg' in options else ''}]")
    explicit = const["NORM"] == 0 and const["HW_FMA"]
    out = [AotVariant(name=name, kernel=_row_norm_exact_kernel, signature=sig, constexprs=const,
                      num_warps=_num_warps(const), options={"enable_fp_fusion": False, **options},
                      explicit_fma=explicit, divisible_by_16=_ALIGNED)]
    if explicit:
        # the same build with the fp64 emulation must hold no FMA at all: the compile lane's
        # no-contraction check still covers every other line of the kernel
        out.append(AotVariant(name=name[:-1] + ",fma=emulated]", kernel=_row_norm_exact_kernel, signature=sig,
                              constexprs={**const, "HW_FMA": False}, num_warps=_num_warps(const),
                              options={"enable_fp_fusion": False, **options}, divisible_by_16=_ALIGNED))
    return out
