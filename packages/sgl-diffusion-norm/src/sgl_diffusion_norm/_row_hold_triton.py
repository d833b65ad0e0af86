"""The output chain of the exact row-norm kernel and the row held in registers (``_row_norm_exact_triton``),
and RMSNorm's statistics in eager's order.

RMSNorm (``x.float().pow(2).mean(-1)``; ATen ``Reduce.cuh``, ``MeanOps``): thread ``t`` of a
warp-row owns 4 consecutive elements of every ``4 * LANES``-wide chunk (4 accumulators, one per
vector slot, summed in sequence over the chunks, then combined as ``((a0 + a1) + a2) + a3``); then
``block_x_reduce``: halving through shared memory while more than a warp, then the warp shuffle
tree (CUDA: decreasing offsets, halving again; ROCm: increasing offsets, adjacent pairs).
"""

from __future__ import annotations

import triton
import triton.language as tl

from sgl_diffusion_core import triton_math

from ._welford_triton import vec_load, vec_offsets


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
def sum_squares(x_rows, rmask, D, R: tl.constexpr, LANES: tl.constexpr, WARP: tl.constexpr,
                 CHUNKS: tl.constexpr, UNROLL: tl.constexpr):
    """Sums of squares of ``R`` rows (``x_rows``: ``[R, 1]`` pointers), each in eager's order: the 4
    accumulators of each lane add the squares of one chunk after another (one contiguous ``4 * LANES``
    block per row and chunk: 8-byte vector loads for bf16, kept in cache for the output pass that
    reads it again), then :func:`lane_total`."""
    cols = tl.arange(0, 4 * LANES)[None, :]
    acc = tl.zeros([R, 4 * LANES], tl.float32)
    for k in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
        offs = k * 4 * LANES + cols
        v = triton_math.widen(tl.load(x_rows + offs, mask=rmask & (offs < D), other=0.0,
                                      eviction_policy="evict_last"))
        acc += v * v
    return lane_total(acc, R, LANES, WARP)


@triton.jit
def lane_total(acc, R: tl.constexpr, LANES: tl.constexpr, WARP: tl.constexpr):
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
def _hold_leaf(rmask, D, K: tl.constexpr, CH: tl.constexpr, LAYER: tl.constexpr, FULL: tl.constexpr):
    """Element offsets and mask of chunk ``K`` (LayerNorm's ``FULL`` leading chunks lie inside the
    row: an all-true mask the compiler drops)."""
    if LAYER:
        offs = vec_offsets(K, CH // 4, LAYER)
        if K < FULL:
            return offs, tl.full([CH // 4, 4], 1, tl.int1)
        else:
            return offs, offs < D
    else:
        offs = K * CH + tl.arange(0, CH)[None, :]
        return offs, rmask & (offs < D)


@triton.jit
def hold_load(x_rows, rmask, D, K0: tl.constexpr, CH: tl.constexpr, N: tl.constexpr, LAYER: tl.constexpr,
               FULL: tl.constexpr):
    """Chunks ``K0 .. K0 + N - 1`` (``N`` a power of two), raw, as a join tree."""
    if N == 1:
        if LAYER:
            return vec_load(x_rows, D, K0, CH // 4, FULL, "evict_first", LAYER)
        else:
            offs, mask = _hold_leaf(rmask, D, K0, CH, LAYER, FULL)
            return tl.load(x_rows + offs, mask=mask, other=0.0, eviction_policy="evict_first")
    else:
        return tl.join(hold_load(x_rows, rmask, D, K0, CH, N // 2, LAYER, FULL),
                       hold_load(x_rows, rmask, D, K0 + N // 2, CH, N // 2, LAYER, FULL))


@triton.jit
def hold_squares(acc, t, N: tl.constexpr):
    """``acc`` plus the squares of the held chunks, one chunk after another in chunk order."""
    if N == 1:
        v = triton_math.widen(t)  # not the output pass's widen_bits: the compiler would hold one fp32 copy
        return acc + v * v
    else:
        lo, hi = tl.split(t)
        return hold_squares(hold_squares(acc, lo, N // 2), hi, N // 2)



@triton.jit
def hold_emit(t, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset,
               K0: tl.constexpr, CH: tl.constexpr, N: tl.constexpr, LAYER: tl.constexpr, FULL: tl.constexpr,
               HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr,
               P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr, N_DT: tl.constexpr,
               T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
               ROUND_OFFSET: tl.constexpr):
    """The output chain of the held chunks ``K0 .. K0 + N - 1``."""
    if N == 1:
        offs, mask = _hold_leaf(rmask, D, K0, CH, LAYER, FULL)
        emit(triton_math.widen_bits(t), offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset,
              0 if LAYER else 1, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
              ROUND_OFFSET)
    else:
        lo, hi = tl.split(t)
        hold_emit(lo, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, K0, CH, N // 2, LAYER,
                   FULL, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
                   ROUND_OFFSET)
        hold_emit(hi, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, K0 + N // 2, CH, N // 2,
                   LAYER, FULL, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT,
                   ROUND_OFFSET)


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
def mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0: tl.constexpr, CH: tl.constexpr, N: tl.constexpr,
              LAYER: tl.constexpr, FULL: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr,
              HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr):
    """The output chain's operands (:func:`_emit_loads`) of chunks ``K0 .. K0 + N - 1``, four join trees."""
    if N == 1:
        offs, mask = _hold_leaf(rmask, D, K0, CH, LAYER, FULL)
        return _emit_loads(offs, mask, W, BIAS, sc_row, sh_row, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS)
    else:
        a = mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0, CH, N // 2, LAYER, FULL, HAS_SCALE, HAS_SHIFT, HAS_W,
                      HAS_BIAS)
        b = mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0 + N // 2, CH, N // 2, LAYER, FULL, HAS_SCALE, HAS_SHIFT,
                      HAS_W, HAS_BIAS)
        return tl.join(a[0], b[0]), tl.join(a[1], b[1]), tl.join(a[2], b[2]), tl.join(a[3], b[3])


@triton.jit
def emit_ahead(t1, t2, t3, first, first_x, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row,
                scale_offset, CH: tl.constexpr, CHUNKS: tl.constexpr, HOLD1: tl.constexpr, HOLD2: tl.constexpr,
                HOLD3: tl.constexpr, G: tl.constexpr, REREAD: tl.constexpr, LAYER: tl.constexpr, FULL: tl.constexpr,
                HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr,
                P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr, N_DT: tl.constexpr,
                T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
                ROUND_OFFSET: tl.constexpr, K0: tl.constexpr = 0):
    """The output chain of chunks ``K0 .. CHUNKS - 1`` with its loads issued one group of ``G`` chunks
    ahead of the chunks they serve (``first``: the first group's operands, :func:`mod_tree`): the
    operands, and with ``REREAD`` x itself (``first_x``: the first group's chunks, read again from
    L1 / L2), else the held row's chunks (``t1``, ``t2``, ``t3``). Chunks left over after the whole
    groups (fewer than ``G``) follow as groups of the largest power of two that fits, each loaded
    while the group before it is written (19 chunks in groups of 4: 4 x 4, 2, 1). A store may alias
    any load, so the compiler never moves a later chunk's loads above an earlier chunk's store:
    without this each chunk waits for its own loads (sm_90 Nsight Compute, exact rms_modulate at FLUX
    held: 71% of the kernel's stall samples on the output chain's operand loads)."""
    NG: tl.constexpr = (CHUNKS - K0) // G
    REM: tl.constexpr = CHUNKS - K0 - NG * G
    # the leftover chunks' first group: the largest power of two up to 16 in REM (the rest in later groups)
    P: tl.constexpr = 16 if REM >= 16 else (8 if REM >= 8 else (4 if REM >= 4 else (2 if REM >= 2 else 1)))
    KT: tl.constexpr = K0 + NG * G
    tl.static_assert(NG > 0, "a group of operands ahead is at most the chunks left")
    ops_n = first
    xs_n = first_x
    for g in tl.static_range(NG):
        ops = ops_n
        xs = xs_n
        if g + 1 < NG:
            if REREAD:
                xs_n = hold_load(x_row, rmask, D, K0 + (g + 1) * G, CH, G, LAYER, FULL)
            ops_n = mod_tree(rmask, D, W, BIAS, sc_row, sh_row, K0 + (g + 1) * G, CH, G, LAYER, FULL, HAS_SCALE,
                              HAS_SHIFT, HAS_W, HAS_BIAS)
        elif REM > 0:
            if REREAD:
                xs_n = hold_load(x_row, rmask, D, KT, CH, P, LAYER, FULL)
            ops_n = mod_tree(rmask, D, W, BIAS, sc_row, sh_row, KT, CH, P, LAYER, FULL, HAS_SCALE, HAS_SHIFT,
                              HAS_W, HAS_BIAS)
        for j in tl.static_range(G):
            offs, mask = _hold_leaf(rmask, D, K0 + g * G + j, CH, LAYER, FULL)
            if REREAD:
                v = triton_math.widen_bits(_tree_leaf(xs, j, G))
            else:
                v = triton_math.widen_bits(_held_chunk(t1, t2, t3, K0 + g * G + j, HOLD1, HOLD2, HOLD3))
            _emit_apply(v, offs, mask, mean, rstd, _tree_leaf(ops[0], j, G), _tree_leaf(ops[1], j, G),
                        _tree_leaf(ops[2], j, G), _tree_leaf(ops[3], j, G), y_row, scale_offset, 0 if LAYER else 1,
                        HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)
    if REM > 0:
        emit_ahead(t1, t2, t3, ops_n, xs_n, x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row,
                    scale_offset, CH, CHUNKS, HOLD1, HOLD2, HOLD3, P, REREAD, LAYER, FULL, HAS_SCALE, HAS_SHIFT,
                    HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET, KT)


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
                ROUND_OFFSET: tl.constexpr):
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
            h = tl.fma(w, t, bb)
        elif HAS_W:
            h = w * t
        elif HAS_BIAS:
            h = tl.fma(rstd, xc, bb)
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
def emit(v, offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset,
          NORM: tl.constexpr, HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr,
          HAS_BIAS: tl.constexpr, P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr,
          N_DT: tl.constexpr, T1: tl.constexpr, T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr,
          ROUND_OFFSET: tl.constexpr):
    """The output chain on fp32 elements ``v`` at ``offs`` (any shape), stored to ``y_row``."""
    w, bb, sc, sh = _emit_loads(offs, mask, W, BIAS, sc_row, sh_row, HAS_SCALE, HAS_SHIFT, HAS_W, HAS_BIAS)
    _emit_apply(v, offs, mask, mean, rstd, w, bb, sc, sh, y_row, scale_offset, NORM, HAS_SCALE, HAS_SHIFT, HAS_W,
                HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)


@triton.jit
def reread_emit(x_row, rmask, D, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, CHUNKS: tl.constexpr,
                 CH: tl.constexpr, UNROLL: tl.constexpr, REVERSE: tl.constexpr, NORM: tl.constexpr,
                 HAS_SCALE: tl.constexpr, HAS_SHIFT: tl.constexpr, HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr,
                 P_DT: tl.constexpr, C_DT: tl.constexpr, A_DT: tl.constexpr, N_DT: tl.constexpr, T1: tl.constexpr,
                 T2: tl.constexpr, T3: tl.constexpr, OUT: tl.constexpr, ROUND_OFFSET: tl.constexpr):
    """The output chain of the row's ``CHUNKS`` chunks (``[R, CH]`` tiles), x read again. ``REVERSE``: last
    chunk first, so the chunks the statistics pass read last (the likeliest still in L1 / L2) come first."""
    cols = tl.arange(0, CH)[None, :]
    for kk in tl.range(0, CHUNKS, loop_unroll_factor=UNROLL):
        if REVERSE:
            k = CHUNKS - 1 - kk
        else:
            k = kk
        offs = k * CH + cols
        mask = rmask & (offs < D)
        v = triton_math.widen(tl.load(x_row + offs, mask=mask, other=0.0, eviction_policy="evict_first"))
        emit(v, offs, mask, mean, rstd, W, BIAS, sc_row, sh_row, y_row, scale_offset, NORM, HAS_SCALE, HAS_SHIFT,
              HAS_W, HAS_BIAS, P_DT, C_DT, A_DT, N_DT, T1, T2, T3, OUT, ROUND_OFFSET)
