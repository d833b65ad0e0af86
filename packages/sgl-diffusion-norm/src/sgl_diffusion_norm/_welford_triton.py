"""LayerNorm's statistics in eager's order, for the exact row-norm kernel (``_row_norm_exact_triton``).

ATen's ``vectorized_layer_norm_kernel`` (``layer_norm_kernel.cu``): 128 threads (4 warps of 32;
ROCm: wavefronts of 64) per row, thread ``t`` owning 4 consecutive elements of every
``4 * NT``-wide chunk, each running Welford's online update (``cuWelfordOnlineSum``: count as a
float, ``mean += delta * (1/count)``, ``m2 += delta * (x - new_mean)``); then the warp tree
(offsets 16, 8, ..., 1, lane ``i`` combining with ``i + offset``: ``cuWelfordCombine``), then
the warps halving through shared memory. The counts, and so every combine's ``1 / count``,
``nA`` and ``nB``, follow from ``D`` alone and come from a host table computed in fp32 as eager
does (:func:`welford_tree_table`). nvcc contracts the ``a * b + c`` of these updates into FMAs;
each is ``tl.fma`` here (the one instruction nvcc emits).
"""

from __future__ import annotations

import functools

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import triton_math


@triton.jit
def _halves(x, R: tl.constexpr, N: tl.constexpr):
    """``[R, N]`` -> its lower and upper halves along the last dim, each ``[R, N // 2]``."""
    return tl.split(tl.permute(tl.reshape(x, [R, 2, N // 2]), (0, 2, 1)))


@triton.jit
def _welford_merge(m, s, TAB, OFF: tl.constexpr, R: tl.constexpr, N: tl.constexpr):
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
    mean = tl.fma(na, ma, nb * mb)
    m2 = tl.fma((delta * delta) * ca, nb, sa + sb)
    return mean, m2


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
def vec_offsets(K: tl.constexpr, NT: tl.constexpr):
    """Element offsets ``[NT, 4]`` of LayerNorm's chunk ``K``: thread ``t`` owns ``4t .. 4t+3``."""
    return K * 4 * NT + tl.arange(0, NT)[:, None] * 4 + tl.arange(0, 4)[None, :]


@triton.jit
def vec_load(x_row, D, K: tl.constexpr, NT: tl.constexpr, FULL: tl.constexpr, POLICY: tl.constexpr):
    """LayerNorm's chunk ``K`` of the row, raw, one ``[NT, 4]`` vector load (unmasked for the
    ``FULL`` leading chunks, which lie inside the row)."""
    offs = vec_offsets(K, NT)
    if K < FULL:
        return tl.load(x_row + offs, eviction_policy=POLICY)
    else:
        return tl.load(x_row + offs, mask=offs < D, other=0.0, eviction_policy=POLICY)


@triton.jit
def welford_chunk(m, s, raw, D, K: tl.constexpr, NT: tl.constexpr, FULL: tl.constexpr):
    """The Welford steps of chunk ``K`` (raw ``[NT, 4]``), split into the four slots in registers;
    1 / count is a compile-time constant (Python's double quotient rounded to fp32: the correctly
    rounded fp32 quotient, double rounding being innocuous for a division). Chunks below ``FULL``
    lie inside the row: no select on the element's validity."""
    EVEN: tl.constexpr = K < FULL
    base = K * 4 * NT
    lane4 = tl.arange(0, NT) * 4
    p, q = tl.split(tl.reshape(triton_math.widen(raw), [NT, 2, 2]))
    v0, v2 = tl.split(p)
    v1, v3 = tl.split(q)
    m, s = _welford_slot(m, s, v0, base + lane4 < D, _const_rcp(K * 4 + 1), EVEN)
    m, s = _welford_slot(m, s, v1, base + lane4 + 1 < D, _const_rcp(K * 4 + 2), EVEN)
    m, s = _welford_slot(m, s, v2, base + lane4 + 2 < D, _const_rcp(K * 4 + 3), EVEN)
    return _welford_slot(m, s, v3, base + lane4 + 3 < D, _const_rcp(K * 4 + 4), EVEN)


@triton.jit
def layer_stats(x_row, D, RCP, TAB, WARP: tl.constexpr, NWARP: tl.constexpr, CHUNKS: tl.constexpr,
                UNROLL: tl.constexpr, VEC: tl.constexpr, FULL: tl.constexpr):
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
            m, s = welford_chunk(m, s, vec_load(x_row, D, k, NT, FULL, "evict_last"), D, k, NT, FULL)
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
    return welford_tree(m, s, TAB, WARP, NWARP, 4 * CHUNKS if EVEN else 0)


@triton.jit
def _shfl_merge(m, s, lane, wrp, TAB, OFF: tl.constexpr, H: tl.constexpr, WARP: tl.constexpr,
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
    mean = tl.fma(na, ma, nb * m)
    m2 = tl.fma((delta * delta) * ca, nb, sa + s)
    return mean, m2


@triton.jit
def welford_tree(m, s, TAB, WARP: tl.constexpr, NWARP: tl.constexpr, UNIFORM: tl.constexpr = 0):
    """Per-thread ``[WARP * NWARP]`` partial statistics -> the row's ``(mean, m2)`` in eager's tree order."""
    m = tl.reshape(m, [NWARP, WARP])
    s = tl.reshape(s, [NWARP, WARP])
    # intra-warp: offsets WARP/2 .. 1, lane i combining with lane i + offset (warp-local gathers, as
    # eager's shuffles); the table holds the levels in this order (level N at NWARP * (WARP - N)),
    # then the inter-warp levels
    lane = tl.zeros([NWARP, WARP], tl.int32) + tl.arange(0, WARP)[None, :]
    wrp = tl.zeros([NWARP, WARP], tl.int32) + tl.arange(0, NWARP)[:, None]
    if WARP >= 64:
        m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 64), 32, WARP, UNIFORM)
    m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 32), 16, WARP, UNIFORM)
    m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 16), 8, WARP, UNIFORM)
    m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 8), 4, WARP, UNIFORM)
    m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 4), 2, WARP, UNIFORM)
    m, s = _shfl_merge(m, s, lane, wrp, TAB, NWARP * (WARP - 2), 1, WARP, UNIFORM)
    # lane 0 of each warp holds the warp's statistics (a sum of one value and zeros)
    m = tl.sum(tl.where(lane == 0, m, 0.0), axis=1)[:, None]
    s = tl.sum(tl.where(lane == 0, s, 0.0), axis=1)[:, None]
    # inter-warp: warp y combines with warp y + offset, offsets NWARP/2 .. 1
    m = tl.reshape(m, [1, NWARP])
    s = tl.reshape(s, [1, NWARP])
    B: tl.constexpr = NWARP * (WARP - 1)
    if NWARP >= 8:
        m, s = _welford_merge(m, s, TAB, B + NWARP - 8, 1, 8)
    if NWARP >= 4:
        m, s = _welford_merge(m, s, TAB, B + NWARP - 4, 1, 4)
    if NWARP >= 2:
        m, s = _welford_merge(m, s, TAB, B + NWARP - 2, 1, 2)
    mean = tl.sum(tl.reshape(m, [1]), axis=0)
    m2 = tl.sum(tl.reshape(s, [1]), axis=0)
    return mean, m2


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
def hold_welford(m, s, t, D, K0: tl.constexpr, NT: tl.constexpr, N: tl.constexpr, FULL: tl.constexpr):
    """The Welford steps of the held chunks, chunk after chunk (eager's order)."""
    if N == 1:
        return welford_chunk(m, s, t, D, K0, NT, FULL)
    else:
        lo, hi = tl.split(t)
        m, s = hold_welford(m, s, lo, D, K0, NT, N // 2, FULL)
        return hold_welford(m, s, hi, D, K0 + N // 2, NT, N // 2, FULL)




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
