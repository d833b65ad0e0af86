"""LayerNorm's statistics in eager's order, for the exact row-norm kernel (``_row_norm_exact_triton``).

ATen's ``vectorized_layer_norm_kernel`` (``layer_norm_kernel.cu``): 128 threads (4 warps of 32;
ROCm: wavefronts of 64) per row, thread ``t`` owning 4 consecutive elements of every
``4 * NT``-wide chunk, each running Welford's online update (``cuWelfordOnlineSum``: count as a
float, ``mean += delta * (1/count)``, ``m2 += delta * (x - new_mean)``); then the warp tree
(offsets 16, 8, ..., 1, lane ``i`` combining with ``i + offset``: ``cuWelfordCombine``), then
the warps halving through shared memory. The counts, and so every combine's ``1 / count``,
``nA`` and ``nB``, follow from ``D`` alone: they are compile-time constants, computed in fp32 as
eager does (:func:`tree_segments`) and chosen per thread by selects on its index (a partial last
chunk gives a few distinct values per level). nvcc contracts the ``a * b + c`` of these updates
into FMAs; each is ``tl.fma`` here (the one instruction nvcc emits).
"""

from __future__ import annotations

import math

import triton
import triton.language as tl

from sgl_diffusion_core import triton_math


@triton.jit
def _halves(x, R: tl.constexpr, N: tl.constexpr):
    """``[R, N]`` -> its lower and upper halves along the last dim, each ``[R, N // 2]``."""
    return tl.split(tl.permute(tl.reshape(x, [R, 2, N // 2]), (0, 2, 1)))


@triton.jit
def _row_halves(x, N: tl.constexpr, C: tl.constexpr):
    """``[N, C]`` -> its lower and upper halves along the first dim, each ``[N // 2, C]``."""
    return tl.split(tl.permute(tl.reshape(x, [2, N // 2, C]), (1, 2, 0)))


@triton.jit
def _combine(mb, ma, sb, sa, idx, F: tl.constexpr, V: tl.constexpr, WARP: tl.constexpr, NWARP: tl.constexpr,
             H: tl.constexpr, INTER: tl.constexpr):
    """One combine of the tree as ``cuWelfordCombine(dataB, dataA)``: ``mean = nA * meanA + nB * meanB``,
    ``m2 = m2A + m2B + delta * delta * countA * nB``, with the coefficients of level ``H`` at ``idx``
    (:func:`_level_coefs`)."""
    na, nb, ca = _level_coefs(idx, F, V, WARP, NWARP, H, INTER)
    delta = mb - ma
    mean = tl.fma(na, ma, nb * mb)
    m2 = tl.fma((delta * delta) * ca, nb, sa + sb)
    return mean, m2


@triton.jit
def _merge_cols(m, s, F: tl.constexpr, V: tl.constexpr, WARP: tl.constexpr, NWARP: tl.constexpr, N: tl.constexpr):
    """An inter-warp level on ``[1, N]`` per-warp statistics: warp group ``j`` (``dataB``, warps ``j, j + N,
    ...``) with group ``j + N/2`` (``dataA``)."""
    mb, ma = _halves(m, 1, N)
    sb, sa = _halves(s, 1, N)
    return _combine(mb, ma, sb, sa, tl.arange(0, N // 2)[None, :], F, V, WARP, NWARP, N // 2, True)


@triton.jit
def _level_coefs(idx, F: tl.constexpr, V: tl.constexpr, WARP: tl.constexpr, NWARP: tl.constexpr, H: tl.constexpr,
                 INTER: tl.constexpr):
    """``(nA, nB, countA)`` of one level of the combine tree for the combines at ``idx`` (the thread's
    index ``warp * WARP + lane``, or an inter-warp level's group index): compile-time constants
    (:func:`tree_segments`), one value where every combine of the level is alike (every chunk full),
    else a select per run of equal combines."""
    NSEG: tl.constexpr = _tree_seg(F, V, WARP, NWARP, H, INTER, -1, 0)
    LAST: tl.constexpr = NSEG - 1
    na = tl.full([], _tree_seg(F, V, WARP, NWARP, H, INTER, LAST, 1), tl.float32)
    nb = tl.full([], _tree_seg(F, V, WARP, NWARP, H, INTER, LAST, 2), tl.float32)
    ca = tl.full([], _tree_seg(F, V, WARP, NWARP, H, INTER, LAST, 3), tl.float32)
    # the runs last to first (run NSEG - 2 - kk): each select covers the indices below its end
    for kk in tl.static_range(NSEG - 1):
        here = idx < _tree_seg(F, V, WARP, NWARP, H, INTER, NSEG - 2 - kk, 0)
        na = tl.where(here, _tree_seg(F, V, WARP, NWARP, H, INTER, NSEG - 2 - kk, 1), na)
        nb = tl.where(here, _tree_seg(F, V, WARP, NWARP, H, INTER, NSEG - 2 - kk, 2), nb)
        ca = tl.where(here, _tree_seg(F, V, WARP, NWARP, H, INTER, NSEG - 2 - kk, 3), ca)
    return na, nb, ca


@triton.jit
def _welford_step(m, s, v, ok, rc):
    """``cuWelfordOnlineSum`` for the threads whose element is valid (``rc = 1 / new_count``)."""
    delta = v - m
    nm = tl.fma(delta, rc, m)
    ns = tl.fma(delta, v - nm, s)
    return tl.where(ok, nm, m), tl.where(ok, ns, s)


@triton.jit
def _slot(x_row, base, lane4, ii, D):
    """Vector slot ``ii`` of every thread (elements ``base + 4t + ii``) as fp32, and its mask."""
    offs = base + lane4 + ii
    ok = offs < D
    return triton_math.widen(tl.load(x_row + offs, mask=ok, other=0.0, eviction_policy="evict_last")), ok


@triton.jit
def thread_of_row(NT: tl.constexpr, LAYER: tl.constexpr):
    """The eager thread ``[NT]`` of each row of a LayerNorm tile. ``LAYER`` 1: row ``r`` is thread ``r``.
    ``LAYER`` 2 (a one-warp program of 128 threads holding a row without a partial chunk): row ``r`` is thread
    ``32 * ((r % 32) // 8) + 8 * (r // 32) + r % 8``. A one-warp tile keeps rows ``p, p + 32, p + 64,
    p + 96`` in lane ``p``'s registers, so lane ``p`` then holds lanes ``p % 8 + 8j`` of eager's warp
    ``p // 8``: the tree's offsets 16 and 8 combine registers, and the rest are 5 shuffle levels on one
    value per lane (:func:`_one_warp_tree`); sm_90, ``ln_modulate`` at 1536 columns: 1160 -> 1032
    instructions. Not for a partial last chunk: its valid threads would then be lanes, not registers,
    whose masks no longer fold at compile time (1152 columns: 984 -> 1096). Not for rows read twice: each
    warp access then covers four 64-byte pieces, and one H100 measured ``ln_modulate`` at 2560 x 32760
    91 -> 83% of copy (``layer_norm`` 95 -> 87%; 2048: 94 -> 92%) with it."""
    r = tl.arange(0, NT)
    if LAYER == 2:
        return 32 * ((r % 32) // 8) + 8 * (r // 32) + r % 8
    else:
        return r


@triton.jit
def vec_offsets(K: tl.constexpr, NT: tl.constexpr, LAYER: tl.constexpr):
    """Element offsets ``[NT, 4]`` of LayerNorm's chunk ``K``: thread ``t`` owns ``4t .. 4t+3``, row ``r``
    of the tile being thread :func:`thread_of_row`."""
    return K * 4 * NT + thread_of_row(NT, LAYER)[:, None] * 4 + tl.arange(0, 4)[None, :]


@triton.jit
def vec_load(x_row, D, K: tl.constexpr, NT: tl.constexpr, FULL: tl.constexpr, POLICY: tl.constexpr,
             LAYER: tl.constexpr):
    """LayerNorm's chunk ``K`` of the row, raw, one ``[NT, 4]`` vector load (unmasked for the
    ``FULL`` leading chunks, which lie inside the row)."""
    offs = vec_offsets(K, NT, LAYER)
    if K < FULL:
        return tl.load(x_row + offs, eviction_policy=POLICY)
    else:
        return tl.load(x_row + offs, mask=offs < D, other=0.0, eviction_policy=POLICY)


@triton.jit
def welford_chunk(m, s, raw, D, K: tl.constexpr, NT: tl.constexpr, FULL: tl.constexpr, LAYER: tl.constexpr):
    """The Welford steps of chunk ``K`` (raw ``[NT, 4]``), split into the four slots in registers;
    1 / count is a compile-time constant (Python's double quotient rounded to fp32: the correctly
    rounded fp32 quotient, double rounding being innocuous for a division). Chunks below ``FULL``
    lie inside the row: no select on the element's validity."""
    EVEN: tl.constexpr = K < FULL
    base = K * 4 * NT
    lane4 = thread_of_row(NT, LAYER) * 4
    p, q = tl.split(tl.reshape(triton_math.widen(raw), [NT, 2, 2]))
    v0, v2 = tl.split(p)
    v1, v3 = tl.split(q)
    m, s = _welford_slot(m, s, v0, base + lane4 < D, _const_rcp(K * 4 + 1), EVEN)
    m, s = _welford_slot(m, s, v1, base + lane4 + 1 < D, _const_rcp(K * 4 + 2), EVEN)
    m, s = _welford_slot(m, s, v2, base + lane4 + 2 < D, _const_rcp(K * 4 + 3), EVEN)
    return _welford_slot(m, s, v3, base + lane4 + 3 < D, _const_rcp(K * 4 + 4), EVEN)


@triton.jit
def layer_stats(x_row, D, RCP, WARP: tl.constexpr, NWARP: tl.constexpr, CHUNKS: tl.constexpr,
                UNROLL: tl.constexpr, VEC: tl.constexpr, FULL: tl.constexpr, F: tl.constexpr, V: tl.constexpr,
                LAYER: tl.constexpr, PWARPS: tl.constexpr):
    """The row's ``(mean, m2)`` read from memory in eager's order: ``VEC``, one vector load per
    chunk (the chunks unrolled at compile time; the ``FULL`` leading ones unmasked); otherwise a
    loop over the chunks (unmasked where every chunk is full)."""
    EVEN: tl.constexpr = FULL >= CHUNKS
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
            m, s = welford_chunk(m, s, vec_load(x_row, D, k, NT, FULL, "evict_last", LAYER), D, k, NT, FULL, LAYER)
    else:
        for k in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
            base = k * 4 * NT
            # 1 / new_count, the same for every thread with a valid element: from a host table of
            # correctly rounded reciprocals (eager's `1.f / count` is an IEEE division); four
            # strided loads (one per vector slot): the four together read each cache line once
            v, ok = _slot(x_row, base, lane4, 0, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 0), EVEN)
            v, ok = _slot(x_row, base, lane4, 1, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 1), EVEN)
            v, ok = _slot(x_row, base, lane4, 2, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 2), EVEN)
            v, ok = _slot(x_row, base, lane4, 3, D)
            m, s = _welford_slot(m, s, v, ok, tl.load(RCP + k * 4 + 3), EVEN)
    return welford_tree(m, s, F, V, WARP, NWARP, LAYER, PWARPS)


@triton.jit
def _shfl_merge(m, s, lane, g, F: tl.constexpr, V: tl.constexpr, H: tl.constexpr, WARP: tl.constexpr,
                NWARP: tl.constexpr):
    """One intra-warp level as eager's ``WARP_SHFL_DOWN``: ``[NWARP, WARP]`` partial statistics,
    lane ``i`` combining with lane ``i + H`` (a warp-local ``tl.gather``; lanes past the warp
    keep their own value, like the shuffle's clamp, and only lanes below ``H`` feed lane 0); the
    coefficients of thread ``g``'s combine: :func:`_level_coefs`."""
    src = tl.where(lane + H < WARP, lane + H, lane)
    return _combine(m, tl.gather(m, src, axis=1), s, tl.gather(s, src, axis=1), g, F, V, WARP, NWARP, H, False)


@triton.jit
def _merge_rows(m, s, F: tl.constexpr, V: tl.constexpr, WARP: tl.constexpr, NWARP: tl.constexpr, N: tl.constexpr):
    """An inter-warp level on ``[N, WARP]`` statistics, a warp group per row (every lane combines;
    lane 0's are the groups' statistics)."""
    mb, ma = _row_halves(m, N, WARP)
    sb, sa = _row_halves(s, N, WARP)
    return _combine(mb, ma, sb, sa, tl.arange(0, N // 2)[:, None], F, V, WARP, NWARP, N // 2, True)


@triton.jit
def _lane_merge(m, s, src, idx, F: tl.constexpr, V: tl.constexpr, H: tl.constexpr, INTER: tl.constexpr):
    """A level on ``[1, 32]`` statistics of a one-warp program: lane ``p`` (``dataB``) combining with lane
    ``src`` (``dataA``, a warp-local gather: a shuffle), the coefficients at ``idx``."""
    return _combine(m, tl.gather(m, src, axis=1), s, tl.gather(s, src, axis=1), idx, F, V, 32, 4, H, INTER)


@triton.jit
def _one_warp_tree(m, s, F: tl.constexpr, V: tl.constexpr):
    """:func:`welford_tree` of a one-warp program whose tiles are in :func:`thread_of_row`'s ``LAYER`` 2
    order: row ``32j + 8w + i`` is lane ``8j + i`` of eager's warp ``w``. The same combines as eager's,
    in its order; only lane 0's are read (the other lanes' results feed nothing, as in eager)."""
    m = tl.reshape(m, [4, 32])  # [j, 8w + i]
    s = tl.reshape(s, [4, 32])
    p = tl.arange(0, 32)[None, :]
    w = p // 8
    i = p % 8
    # offset 16: lanes 8j + i (j = 0, 1) with lanes 8(j + 2) + i, in registers
    mb, ma = _row_halves(m, 4, 32)
    sb, sa = _row_halves(s, 4, 32)
    m, s = _combine(mb, ma, sb, sa, 32 * w + 8 * tl.arange(0, 2)[:, None] + i, F, V, 32, 4, 16, False)
    # offset 8: lane i with lane 8 + i, in registers
    mb, ma = _row_halves(m, 2, 32)
    sb, sa = _row_halves(s, 2, 32)
    g = 32 * w + i
    m, s = _combine(mb, ma, sb, sa, g, F, V, 32, 4, 8, False)
    # offsets 4, 2, 1 within each group of 8 lanes (eager's warp), then warp w with w + 2 and w + 1
    m, s = _lane_merge(m, s, tl.where(i + 4 < 8, p + 4, p), g, F, V, 4, False)
    m, s = _lane_merge(m, s, tl.where(i + 2 < 8, p + 2, p), g, F, V, 2, False)
    m, s = _lane_merge(m, s, tl.where(i + 1 < 8, p + 1, p), g, F, V, 1, False)
    m, s = _lane_merge(m, s, tl.where(p + 16 < 32, p + 16, p), w, F, V, 2, True)
    m, s = _lane_merge(m, s, tl.where(p + 8 < 32, p + 8, p), w, F, V, 1, True)
    first = p == 0  # lane 0: a sum of its value and zeros
    return tl.sum(tl.reshape(tl.where(first, m, 0.0), [32]), axis=0), tl.sum(
        tl.reshape(tl.where(first, s, 0.0), [32]), axis=0)


@triton.jit
def welford_tree(m, s, F: tl.constexpr, V: tl.constexpr, WARP: tl.constexpr, NWARP: tl.constexpr,
                 LAYER: tl.constexpr, PWARPS: tl.constexpr):
    """Per-thread ``[WARP * NWARP]`` partial statistics -> the row's ``(mean, m2)`` in eager's tree
    order. The row: ``F`` full chunks, then ``V`` elements of a partial one (:func:`tree_segments`).
    ``PWARPS``: the program's physical warps (eager's warp ``y`` in physical warp ``y % PWARPS``);
    ``LAYER`` 2: a one-warp program's order (:func:`thread_of_row`, :func:`_one_warp_tree`)."""
    if LAYER == 2:
        return _one_warp_tree(m, s, F, V)
    m = tl.reshape(m, [NWARP, WARP])
    s = tl.reshape(s, [NWARP, WARP])
    # intra-warp: offsets WARP/2 .. 1, lane i combining with lane i + offset (warp-local gathers, as
    # eager's shuffles), then the inter-warp levels
    lane = tl.zeros([NWARP, WARP], tl.int32) + tl.arange(0, WARP)[None, :]
    g = lane + (tl.zeros([NWARP, WARP], tl.int32) + tl.arange(0, NWARP)[:, None]) * WARP
    if WARP >= 64:
        m, s = _shfl_merge(m, s, lane, g, F, V, 32, WARP, NWARP)
    m, s = _shfl_merge(m, s, lane, g, F, V, 16, WARP, NWARP)
    m, s = _shfl_merge(m, s, lane, g, F, V, 8, WARP, NWARP)
    m, s = _shfl_merge(m, s, lane, g, F, V, 4, WARP, NWARP)
    m, s = _shfl_merge(m, s, lane, g, F, V, 2, WARP, NWARP)
    m, s = _shfl_merge(m, s, lane, g, F, V, 1, WARP, NWARP)
    # inter-warp: warp y combines with warp y + offset, offsets NWARP/2 .. 1; while both lie in one
    # physical warp's registers, on [N, WARP] rows (every lane; lane 0's are read)
    if NWARP >= 8 and PWARPS < 8:
        m, s = _merge_rows(m, s, F, V, WARP, NWARP, 8)
    if NWARP >= 4 and PWARPS < 4:
        m, s = _merge_rows(m, s, F, V, WARP, NWARP, 4)
    if NWARP >= 2 and PWARPS < 2:
        m, s = _merge_rows(m, s, F, V, WARP, NWARP, 2)
    # lane 0 of each warp group left holds its statistics (a sum of one value and zeros); the rest of the
    # levels across physical warps, on [1, R]
    R: tl.constexpr = PWARPS if PWARPS < NWARP else NWARP
    first = tl.arange(0, WARP)[None, :] == 0
    m = tl.reshape(tl.sum(tl.where(first, m, 0.0), axis=1), [1, R])
    s = tl.reshape(tl.sum(tl.where(first, s, 0.0), axis=1), [1, R])
    if R >= 8:
        m, s = _merge_cols(m, s, F, V, WARP, NWARP, 8)
    if R >= 4:
        m, s = _merge_cols(m, s, F, V, WARP, NWARP, 4)
    if R >= 2:
        m, s = _merge_cols(m, s, F, V, WARP, NWARP, 2)
    return tl.sum(tl.reshape(m, [1]), axis=0), tl.sum(tl.reshape(s, [1]), axis=0)


@triton.jit
def _const_rcp(N: tl.constexpr):
    """``1 / N`` for a compile-time count, as an fp32 scalar (Python's double quotient rounded to
    nearest fp32: the correctly rounded fp32 quotient)."""
    return tl.full([], 1.0 / N, tl.float32)


@triton.jit
def _welford_slot(m, s, v, ok, rc, EVEN: tl.constexpr):
    """A Welford step; ``EVEN``: every element of the row is valid (``D`` a multiple of the
    chunk), so no select on ``ok``."""
    if EVEN:
        delta = v - m
        nm = tl.fma(delta, rc, m)
        return nm, tl.fma(delta, v - nm, s)
    else:
        return _welford_step(m, s, v, ok, rc)



@triton.jit
def hold_welford(m, s, t, D, K0: tl.constexpr, NT: tl.constexpr, N: tl.constexpr, FULL: tl.constexpr,
                 LAYER: tl.constexpr):
    """The Welford steps of the held chunks, chunk after chunk (eager's order)."""
    if N == 1:
        return welford_chunk(m, s, t, D, K0, NT, FULL, LAYER)
    else:
        lo, hi = tl.split(t)
        m, s = hold_welford(m, s, lo, D, K0, NT, N // 2, FULL, LAYER)
        return hold_welford(m, s, hi, D, K0 + N // 2, NT, N // 2, FULL, LAYER)




@triton.constexpr_function
def _f32(x):
    """``x`` (a positive normal value) rounded to the nearest fp32 value, ties to even."""
    mant, exp = math.frexp(x)
    return math.ldexp(round(math.ldexp(mant, 24)), exp - 24)


@triton.constexpr_function
def tree_segments(F, V, warp, nwarp, H, inter, _memo={}):  # noqa: B006 (the memo of the compile-time calls)
    """The combine coefficients of one level of LayerNorm's reduction tree (``_shfl_merge`` /
    ``_welford_merge``) as runs ``(end, nA, nB, countA)``: the combines at indices below ``end`` (and
    from the previous run's end) share those values. The row: ``F`` full ``4 * warp * nwarp``-wide
    chunks, then ``V`` elements of a partial one, so thread ``t`` counts ``4 * F + clamp(V - 4t, 0, 4)``
    elements. Intra-warp level ``H`` (``inter`` False): index ``warp_index * warp + lane``; lane
    ``i < H`` combines its lanes ``i + 2Hk`` (``dataB``) with lanes ``i + H + 2Hk`` (``dataA``); lanes
    from ``H`` on feed nothing and join the run before them. Inter-warp level ``H`` (``inter``): index
    ``j < H`` combines warp group ``j`` (warps ``j + 2Hk``) with group ``j + H``. As
    ``cuWelfordCombine``: ``coef = 1 / (countA + countB)`` (IEEE fp32; Python's double quotient
    rounded to fp32 is that value), ``nA = countA * coef``, ``nB = countB * coef`` rounded to fp32
    (exact products in double, then rounded); an empty pair gives zeros. A compile-time function
    (Triton's dependency tracking allows it no helper but other such functions), memoized."""
    key = (F, V, warp, nwarp, H, bool(inter))
    if key in _memo:
        return _memo[key]
    # [(first thread, stride, how many)] of dataB and dataA per combine, or None where it feeds nothing
    sides = []
    if inter:
        per = nwarp // (2 * H)  # warps per group
        for j in range(H):
            sides.append(((j * warp, 2 * H * warp, per), ((j + H) * warp, 2 * H * warp, per)))
    else:
        for w in range(nwarp):
            for i in range(warp):
                n = warp // (2 * H)
                sides.append(((w * warp + i, 2 * H, n), (w * warp + i + H, 2 * H, n)) if i < H else None)
    runs = []
    for idx, side in enumerate(sides):
        if side is None:  # joins the run before it
            runs[-1][0] = idx + 1
            continue
        counts = []
        for first, stride, n in side:
            # every thread of the group (a warp group counts each of its warps' threads)
            width = warp if inter else 1
            c = 0
            for k in range(n):
                for t in range(first + stride * k, first + stride * k + width):
                    c += 4 * F + min(max(V - 4 * t, 0), 4)
            counts.append(c)
        cb, ca = counts
        if ca + cb == 0:
            v = [0.0, 0.0, 0.0]
        else:
            coef = _f32(1.0 / (ca + cb))
            v = [_f32(ca * coef) if ca else 0.0, _f32(cb * coef) if cb else 0.0, float(ca)]
        if runs and runs[-1][1:] == v:
            runs[-1][0] = idx + 1
        else:
            runs.append([idx + 1, *v])
    _memo[key] = tuple(tuple(r) for r in runs)
    return _memo[key]


@triton.constexpr_function
def _tree_seg(F, V, WARP, NWARP, H, INTER, K, FIELD):
    """Field ``FIELD`` (0 end, 1 nA, 2 nB, 3 countA) of run ``K`` of :func:`tree_segments`; ``K = -1``:
    the number of runs."""
    runs = tree_segments(F, V, WARP, NWARP, H, INTER)
    return len(runs) if K < 0 else runs[K][FIELD]
