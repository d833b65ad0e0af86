"""The Triton kernels of ``group_norm_silu`` (``group_norm_silu_triton`` holds their launch rule and
launcher). A group spans ``Cg = C / G`` channels x every spatial position (millions of elements at
VAE sizes), so the op takes two passes over x and three launches:

1. statistics: ``_gn_stats_kernel`` (tiles ``[BLOCK_C, BLOCK_P]`` of whole groups of channels x
   positions) or, on channels_last x with dense rows, ``_gn_stats_rows_kernel`` (steps of whole
   channel rows); each program accumulates, per channel, the sums of ``x - K`` and ``(x - K)^2``
   over a span of positions with ``K`` the channel's first value in the span (shifted sums: no
   cancellation for data far from 0), combines the channels of each group (equal counts: mean of
   means, M2 + n * spread of the means) and writes one ``(mean, M2)`` partial per (sample, group,
   span) in fp32;
2. ``_gn_finalize_kernel``: one program per (sample, group) combines its partials into
   ``(mean, rstd)`` (and, for the rows apply, per-channel mean and ``rstd * weight``);
3. apply, ``(x - mean) * rstd * weight + bias``, SiLU, one rounding (ties to even), in x's memory
   format: ``_gn_apply_flat_kernel`` (contiguous x), ``_gn_apply_rows_kernel`` (channels_last x with
   dense rows) or ``_gn_apply_kernel`` (tiles of whole groups: other strides).

x is addressed as ``[B, C, P]`` with strides ``(sb, sc, sp)``; Triton specializes the unit stride,
so contiguous x and channels_last(_3d) each get coalesced 16-byte accesses. Offsets are int64.
"""

from __future__ import annotations

import triton
import triton.language as tl

from sgl_diffusion_core import triton_math


# L2 on the two passes over x (H200, bf16, % of the two-pass bound at C = 192 / 96 / 384,
# docs/benchmarks/gn_order_probe_h200.json): the statistics pass
# loads x with evict_last, the apply pass loads it with no hint and walks its programs last first, so it
# starts on the end of x the statistics pass left in L2. channels_last 90.6 / 89.1 / 89.5% against
# 87.8 / 88.2-88.6 / 87.7-88.3% with evict_first on both passes in program order; contiguous 94.0-94.1 /
# 93.2 / 92.4-92.5% against 93.8 / 92.8 / 92.1%. Most of the channels_last gain is the apply loads'
# hint dropped (90.4 / 88.8 / 89.1% alone); the order alone moved nothing (87.8 / 88.1 / 87.8%).
# The tile apply kernel (_gn_apply_kernel: strided x) follows the same rule, untimed: no bench case
# reaches it on the GPU (the CPU lane runs it).
@triton.jit
def _last_first():
    """This program's index counted from the grid's end: program 0 takes the last tile."""
    return (tl.num_programs(0) - 1 - tl.program_id(0)).to(tl.int64)


@triton.jit(do_not_specialize=["n_span", "iters"])
def _gn_stats_kernel(
    X, PART,
    C, P, G, n_cblk, n_span, iters, sb, sc, sp,
    CG: tl.constexpr, GPB: tl.constexpr, GPB_P2: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    span = pid % n_span
    rest = pid // n_span
    cb = rest % n_cblk
    b = rest // n_cblk
    c_loc = tl.arange(0, BLOCK_C)
    g_loc = c_loc // CG
    c = cb * (GPB * CG) + c_loc
    cmask = (c_loc < GPB * CG) & (c < C)
    x_rows = X + b * sb + c.to(tl.int64)[:, None] * sc
    span_len = iters * BLOCK_P
    p0 = span * span_len
    k = tl.load(x_rows + p0 * sp, mask=cmask[:, None], other=0.0).to(tl.float32)  # [BLOCK_C, 1]
    s1 = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    for i in tl.range(0, iters):
        p = p0 + i * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
        mask = cmask[:, None] & (p < P)[None, :]
        x = tl.load(x_rows + (p * sp)[None, :], mask=mask, other=0.0, eviction_policy="evict_last")
        d = tl.where(mask, x.to(tl.float32) - k, 0.0)
        s1 += d
        s2 += d * d
    n = tl.minimum(P - p0, span_len).to(tl.float32)  # positions of this span (>= 1)
    S1 = tl.sum(s1, axis=1)
    S2 = tl.sum(s2, axis=1)
    mean_c = tl.sum(k, axis=1) + S1 / n
    m2_c = tl.maximum(S2 - S1 * (S1 / n), 0.0)
    j = tl.arange(0, GPB_P2)
    onehot = (g_loc[:, None] == j[None, :]) & cmask[:, None]
    mean_g = tl.sum(tl.where(onehot, mean_c[:, None], 0.0), axis=0) / CG
    dev = tl.where(onehot, mean_c[:, None] - mean_g[None, :], 0.0)
    m2_g = tl.sum(tl.where(onehot, m2_c[:, None], 0.0), axis=0) + n * tl.sum(dev * dev, axis=0)
    g = cb * GPB + j
    gmask = (j < GPB) & (g < G)
    out = PART + ((b * G + g) * n_span + span) * 2
    tl.store(out, mean_g, mask=gmask)
    tl.store(out + 1, m2_g, mask=gmask)


@triton.jit
def _gn_rows_tile(X, b, sb, i, p0, p_end, c, k_raw, C: tl.constexpr, ROWS: tl.constexpr, CMASK: tl.constexpr):
    """Raw ``[ROWS, len(c)]`` tile ``i`` of a span of positions starting at ``p0`` (dense rows of C
    channels). Positions at or past ``p_end`` (and channels past C when ``CMASK``) read as the
    shift ``k_raw`` (their difference from it is 0: no mask in the accumulation)."""
    p = p0 + i * ROWS + tl.arange(0, ROWS).to(tl.int64)
    mask = (p < p_end)[:, None]
    if CMASK:
        mask = mask & (c < C)[None, :]
    return tl.load(X + b * sb + (p * C)[:, None] + c[None, :], mask=mask, other=k_raw[None, :],
                   eviction_policy="evict_last")


@triton.jit
def _gn_rows_group_sums(mean_c, m2_c, c, C: tl.constexpr, CG: tl.constexpr, G_P2: tl.constexpr):
    """Per-group sums over one channel tile ``c``: ``(sum mean_c, sum m2_c)`` and the channel means
    as ``[len(c), G_P2]`` one-hot columns (for the spread of the means around the group's)."""
    j = tl.arange(0, G_P2)
    onehot = ((c // CG)[:, None] == j[None, :]) & (c < C)[:, None]
    return (tl.sum(tl.where(onehot, mean_c[:, None], 0.0), axis=0),
            tl.sum(tl.where(onehot, m2_c[:, None], 0.0), axis=0), onehot)


@triton.jit(do_not_specialize=["n_span", "iters"])
def _gn_stats_rows_kernel(
    X, PART,
    P, n_span, iters, sb,
    C: tl.constexpr, G: tl.constexpr, CG: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_C2: tl.constexpr,
    G_P2: tl.constexpr, ROWS: tl.constexpr,
):
    """channels_last x with dense rows: the program of (sample, span) reads ``iters`` steps of
    ``ROWS`` positions x all channels (the loads of step i + 1 issued before step i is
    accumulated) with shifted sums per channel (K: the channel's value at the span's first
    position), combines the channels of each group (equal counts) and writes v1's partials
    ``PART[((b * G + g) * n_span + span) * 2 + {0, 1}] = (mean, M2)``. The channels are one tile
    ``[ROWS, BLOCK_C]`` (``BLOCK_C2 == 0``) or two, ``BLOCK_C`` + ``BLOCK_C2`` wide (C = 384: 256 + 128,
    no masked lanes); the channel axis is the tiles' contiguous one, so the accumulation needs no
    data movement between threads."""
    TWO: tl.constexpr = BLOCK_C2 > 0
    pid = tl.program_id(0).to(tl.int64)
    span = pid % n_span
    b = pid // n_span
    span_len = iters * ROWS
    p0 = span * span_len
    p_end = tl.minimum(P, p0 + span_len)
    x0 = X + b * sb + p0 * C
    ca = tl.arange(0, BLOCK_C)
    MA: tl.constexpr = BLOCK_C > C
    ka = tl.load(x0 + ca, mask=ca < C, other=0.0)
    s1a = tl.zeros([ROWS, BLOCK_C], dtype=tl.float32)
    s2a = tl.zeros([ROWS, BLOCK_C], dtype=tl.float32)
    xa = _gn_rows_tile(X, b, sb, 0, p0, p_end, ca, ka, C, ROWS, MA)
    if TWO:
        cb = BLOCK_C + tl.arange(0, BLOCK_C2)
        MB: tl.constexpr = BLOCK_C + BLOCK_C2 > C
        kb = tl.load(x0 + cb, mask=cb < C, other=0.0)
        s1b = tl.zeros([ROWS, BLOCK_C2], dtype=tl.float32)
        s2b = tl.zeros([ROWS, BLOCK_C2], dtype=tl.float32)
        xb = _gn_rows_tile(X, b, sb, 0, p0, p_end, cb, kb, C, ROWS, MB)
    # the next step's loads issued before this step is accumulated (unrolling the loop 2 / 4 / 8
    # times instead measured -10 to +7 points, vae_norm_sweep_h200.json)
    for i in tl.range(0, iters):
        na = _gn_rows_tile(X, b, sb, i + 1, p0, p_end, ca, ka, C, ROWS, MA)
        d = xa.to(tl.float32) - ka.to(tl.float32)[None, :]
        s1a += d
        s2a += d * d
        xa = na
        if TWO:
            nb = _gn_rows_tile(X, b, sb, i + 1, p0, p_end, cb, kb, C, ROWS, MB)
            d = xb.to(tl.float32) - kb.to(tl.float32)[None, :]
            s1b += d
            s2b += d * d
            xb = nb
    n = (p_end - p0).to(tl.float32)  # positions of this span (>= 1)
    S1 = tl.sum(s1a, axis=0)
    mean_a = ka.to(tl.float32) + S1 / n
    m2_a = tl.maximum(tl.sum(s2a, axis=0) - S1 * (S1 / n), 0.0)
    sum_mean, sum_m2, oh_a = _gn_rows_group_sums(mean_a, m2_a, ca, C, CG, G_P2)
    if TWO:
        S1 = tl.sum(s1b, axis=0)
        mean_b = kb.to(tl.float32) + S1 / n
        m2_b = tl.maximum(tl.sum(s2b, axis=0) - S1 * (S1 / n), 0.0)
        sm_b, s2_b, oh_b = _gn_rows_group_sums(mean_b, m2_b, cb, C, CG, G_P2)
        sum_mean += sm_b
        sum_m2 += s2_b
    mean_g = sum_mean / CG
    dev = tl.where(oh_a, mean_a[:, None] - mean_g[None, :], 0.0)
    spread = tl.sum(dev * dev, axis=0)
    if TWO:
        dev = tl.where(oh_b, mean_b[:, None] - mean_g[None, :], 0.0)
        spread += tl.sum(dev * dev, axis=0)
    m2_g = sum_m2 + n * spread
    j = tl.arange(0, G_P2)
    out = PART + ((b * G + j) * n_span + span) * 2
    tl.store(out, mean_g, mask=j < G)
    tl.store(out + 1, m2_g, mask=j < G)


@triton.jit(do_not_specialize=["P", "n_span", "span_len", "G", "half", "eps"])
def _gn_finalize_kernel(PART, STATS, W, COEF, P, n_span, span_len, G, half, eps, CG: tl.constexpr,
                        BLOCK_S: tl.constexpr, COEF_OUT: tl.constexpr = False,
                        HAS_W: tl.constexpr = False, CG_P2: tl.constexpr = 1):
    """One program per (sample, group) combines its ``n_span`` partials (each over ``CG`` channels),
    ``BLOCK_S`` at a time with the exact two-pass formula over the block, then block to block with
    Chan's update. Writes ``STATS[bg] = (mean, rstd)``; with ``COEF_OUT`` also, per
    channel ``c`` of the group, ``COEF[b * C + c] = mean`` and ``COEF[half + b * C + c] = rstd *
    weight[c]`` (``half = B * C``; the same fp32 product the apply kernels form), for the rows apply."""
    bg = tl.program_id(0).to(tl.int64)
    n_ent = n_span
    weight = CG * 1.0
    base = PART + bg * n_ent * 2
    n_tot = tl.zeros([], dtype=tl.float32)
    mean = tl.zeros([], dtype=tl.float32)
    m2 = tl.zeros([], dtype=tl.float32)
    for s0 in tl.range(0, n_ent, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        m = s < n_ent
        mu = tl.load(base + s * 2, mask=m, other=0.0)
        q = tl.load(base + s * 2 + 1, mask=m, other=0.0)
        sp = (s % n_span).to(tl.int64)
        cnt = tl.where(m, weight * tl.minimum(P - sp * span_len, span_len).to(tl.float32), 0.0)
        n_b = tl.sum(cnt, axis=0)
        mean_b = tl.sum(cnt * mu, axis=0) / n_b
        d = tl.where(m, mu - mean_b, 0.0)
        m2_b = tl.sum(q, axis=0) + tl.sum(cnt * d * d, axis=0)
        n_new = n_tot + n_b
        delta = mean_b - mean
        mean = mean + delta * (n_b / n_new)
        m2 = m2 + m2_b + delta * delta * (n_tot * (n_b / n_new))
        n_tot = n_new
    rstd = 1.0 / tl.sqrt(m2 / n_tot + eps)
    tl.store(STATS + bg * 2, mean)
    tl.store(STATS + bg * 2 + 1, rstd)
    if COEF_OUT:
        j = tl.arange(0, CG_P2)
        jm = j < CG
        a = tl.zeros([CG_P2], dtype=tl.float32) + rstd
        if HAS_W:
            a = a * tl.load(W + (bg % G) * CG + j, mask=jm, other=0.0).to(tl.float32)
        tl.store(COEF + bg * CG + j, tl.zeros([CG_P2], dtype=tl.float32) + mean, mask=jm)
        tl.store(COEF + half + bg * CG + j, a, mask=jm)


@triton.jit(do_not_specialize=["n_pblk"])
def _gn_apply_kernel(
    X, W, BIAS, STATS, Y,
    C, P, G, n_cblk, n_pblk, sb, sc, sp, osb, osc, osp,
    CG: tl.constexpr, GPB: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    pid = _last_first()
    pb = pid % n_pblk
    rest = pid // n_pblk
    cb = rest % n_cblk
    b = rest // n_cblk
    c_loc = tl.arange(0, BLOCK_C)
    c = cb * (GPB * CG) + c_loc
    cmask = (c_loc < GPB * CG) & (c < C)
    p = pb * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    mask = cmask[:, None] & (p < P)[None, :]
    st = STATS + (b * G + c // CG) * 2
    mean = tl.load(st, mask=cmask, other=0.0, eviction_policy="evict_last")
    a = tl.load(st + 1, mask=cmask, other=0.0, eviction_policy="evict_last")
    if HAS_W:
        a = a * tl.load(W + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    c64 = c.to(tl.int64)
    x = tl.load(X + b * sb + c64[:, None] * sc + (p * sp)[None, :], mask=mask, other=0.0).to(tl.float32)
    y = (x - mean[:, None]) * a[:, None]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
    if SILU:
        y = tl.where(mask, y, 0.0)  # masked lanes hold -mean * rstd, which exp() could overflow on
        y = triton_math.silu(y, FAST)
    tl.store(Y + b * osb + c64[:, None] * osc + (p * osp)[None, :], triton_math.narrow(y, Y.dtype.element_ty),
             mask=mask)


@triton.jit
def _gn_affine(y, HAS_BIAS: tl.constexpr, shift, SILU: tl.constexpr, FAST: tl.constexpr):
    if HAS_BIAS:
        y = y + shift
    if SILU:
        y = triton_math.silu(y, FAST)
    return y


@triton.jit(do_not_specialize=["n_pblk"])
def _gn_apply_flat_kernel(
    X, W, BIAS, STATS, Y,
    C, P, G, n_pblk, sb, sc, osb, osc,
    CG: tl.constexpr, BLOCK: tl.constexpr,
    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """Contiguous x (``sp == 1``): program ``(row, block)`` normalizes ``BLOCK`` consecutive positions
    of one channel row ``(b, c)``, whose mean, rstd, weight and bias are four scalar loads: a 1-D
    elementwise pass with 16-byte accesses and no per-element index math beyond the offset."""
    pid = _last_first()
    row = pid // n_pblk
    pb = pid - row * n_pblk
    b = row // C
    c = row - b * C
    st = STATS + (b * G + c // CG) * 2
    mean = tl.load(st)
    a = tl.load(st + 1)
    if HAS_W:
        a = a * tl.load(W + c).to(tl.float32)
    shift = tl.load(BIAS + c).to(tl.float32) if HAS_BIAS else 0.0
    p = pb * BLOCK + tl.arange(0, BLOCK)
    mask = p < P
    x = tl.load(X + b * sb + c * sc + p, mask=mask, other=0.0).to(tl.float32)
    y = _gn_affine((x - mean) * a, HAS_BIAS, shift, SILU, FAST)
    tl.store(Y + b * osb + c * osc + p, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit
def _gn_cols_coef(BIAS, COEF, bc, half, c, C: tl.constexpr, HAS_BIAS: tl.constexpr, CMASK: tl.constexpr):
    """The per-channel mean, scale and shift of one channel tile ``c`` of the sample (``COEF[bc + c]``
    and ``COEF[half + bc + c]`` with ``bc = b * C``, ``half = B * C``, written by the finalize kernel:
    contiguous fp32 vectors), each ``[1, len(c)]``."""
    if CMASK:
        cmask = c < C
        mean = tl.load(COEF + bc + c, mask=cmask, other=0.0)
        a = tl.load(COEF + half + bc + c, mask=cmask, other=0.0)
        shift = tl.load(BIAS + c, mask=cmask, other=0.0).to(tl.float32) if HAS_BIAS else mean
    else:
        mean = tl.load(COEF + bc + c)
        a = tl.load(COEF + half + bc + c)
        shift = tl.load(BIAS + c).to(tl.float32) if HAS_BIAS else mean
    return mean[None, :], a[None, :], shift[None, :]


@triton.jit
def _gn_cols_load(X, x_rows, pmask, c, C: tl.constexpr, CMASK: tl.constexpr):
    mask = pmask[:, None]
    if CMASK:
        mask = mask & (c < C)[None, :]
    return tl.load(X + x_rows[:, None] + c[None, :], mask=mask, other=0.0)


@triton.jit
def _gn_cols_store(Y, x, y_rows, pmask, c, mean, a, shift, C: tl.constexpr, HAS_BIAS: tl.constexpr,
                   SILU: tl.constexpr, FAST: tl.constexpr, CMASK: tl.constexpr):
    mask = pmask[:, None]
    if CMASK:
        mask = mask & (c < C)[None, :]
    y = _gn_affine((x.to(tl.float32) - mean) * a, HAS_BIAS, shift, SILU, FAST)
    tl.store(Y + y_rows[:, None] + c[None, :], triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["n_prog", "iters"])
def _gn_apply_rows_kernel(
    X, BIAS, COEF, Y,
    P, n_prog, iters, sb, osb, half,
    C: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_C2: tl.constexpr, ROWS: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """channels_last x with dense rows (``sc == 1``, ``sp == C``): program ``(b, j)`` normalizes
    ``iters`` steps of ``ROWS`` positions of sample ``b`` (the loads of step i + 1 issued before
    step i is normalized and stored), all channels, as one tile ``[ROWS, BLOCK_C]`` (``BLOCK_C2 ==
    0``) or two (``BLOCK_C`` + ``BLOCK_C2`` channels: no masked lanes at C = 96 / 192 / 384). The
    per-channel mean, scale (rstd x weight) and bias are loaded once per program (the scale
    precomputed per sample by the finalize kernel: contiguous vector loads, not gathers by group)."""
    TWO: tl.constexpr = BLOCK_C2 > 0
    pid = _last_first()
    b = pid // n_prog
    p0 = (pid - b * n_prog) * iters * ROWS
    p_end = tl.minimum(P, p0 + iters * ROWS)
    r = tl.arange(0, ROWS).to(tl.int64)
    ca = tl.arange(0, BLOCK_C)
    MA: tl.constexpr = BLOCK_C > C
    mean_a, a_a, sh_a = _gn_cols_coef(BIAS, COEF, b * C, half, ca, C, HAS_BIAS, MA)
    p = p0 + r
    xa = _gn_cols_load(X, b * sb + p * C, p < p_end, ca, C, MA)
    if TWO:
        cb = BLOCK_C + tl.arange(0, BLOCK_C2)
        MB: tl.constexpr = BLOCK_C + BLOCK_C2 > C
        mean_b, a_b, sh_b = _gn_cols_coef(BIAS, COEF, b * C, half, cb, C, HAS_BIAS, MB)
        xb = _gn_cols_load(X, b * sb + p * C, p < p_end, cb, C, MB)
    for i in tl.range(0, iters):
        p = p0 + i * ROWS + r
        pn = p + ROWS
        na = _gn_cols_load(X, b * sb + pn * C, pn < p_end, ca, C, MA)
        _gn_cols_store(Y, xa, b * osb + p * C, p < p_end, ca, mean_a, a_a, sh_a, C, HAS_BIAS, SILU, FAST, MA)
        xa = na
        if TWO:
            nb = _gn_cols_load(X, b * sb + pn * C, pn < p_end, cb, C, MB)
            _gn_cols_store(Y, xb, b * osb + p * C, p < p_end, cb, mean_b, a_b, sh_b, C, HAS_BIAS, SILU, FAST, MB)
            xb = nb
