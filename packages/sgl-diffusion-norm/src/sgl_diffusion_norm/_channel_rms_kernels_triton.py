"""The Triton kernels of ``channel_rms_norm`` (``channel_rms_norm_triton`` holds their launch rules
and launcher): the chunk kernel (one tile, a two-pass chunked slab or a slab held in registers), the
streaming kernel (two register tiles per tile, the next tiles' loads in flight) and the rows kernel
(channels_last x with dense rows). fp32 math, one rounding with ties to even; offsets int64."""

from __future__ import annotations

import triton
import triton.language as tl

from sgl_diffusion_core import triton_math


@triton.jit
def _finish(x, inv, G, BIAS, c, cmask, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr):
    """:func:`_affine_silu` with chunk rows ``c``'s gamma / bias loaded here (the bias load after the
    multiply, as the chunk kernel was measured: loading it first reorders their sm_90 SASS)."""
    g = tl.load(G + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = x * inv[None, :] * g[:, None]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
    if SILU:
        y = triton_math.silu(y, FAST)
    return y


@triton.jit
def _affine_silu(x, inv, g, bias, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr):
    """``x * inv * g (+ bias)``, then SiLU if asked, in fp32: the output chain of every kernel here
    (``inv`` broadcast over the channels, ``g`` / ``bias`` over the positions; ``bias`` unused
    without ``HAS_BIAS``)."""
    y = x * inv * g
    if HAS_BIAS:
        y = y + bias
    if SILU:
        y = triton_math.silu(y, FAST)
    return y


@triton.jit(do_not_specialize=["n_pblk", "eps"])
def _channel_rms_kernel(
    X, G, BIAS, Y,
    C, P, n_pblk, sb, sc, sp, osb, osc, osp, scale, eps,
    BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, CHUNKS: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
    PREFETCH: tl.constexpr = False, HOLD: tl.constexpr = False, OPS_AHEAD: tl.constexpr = False,
):
    """``BLOCK_P`` positions of one sample, all channels: one tile (``CHUNKS == 1``); a slab of 2 or 3
    chunks held in registers (``HOLD``; ``OPS_AHEAD``: each chunk's gamma / bias loaded a chunk ahead
    and SiLU's fast exponent as its own FMA, the cluster rule's form); or a statistics pass over the
    chunks, then an output pass re-reading them (``PREFETCH``: chunk k + 1's loads issued before
    chunk k is stored). Long because the three forms share the program's setup and its tail."""
    pid = tl.program_id(0).to(tl.int64)
    b = pid // n_pblk
    p = (pid - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    pmask = p < P
    x_base = X + b * sb
    y_base = Y + b * osb
    x_p = (p * sp)[None, :]
    y_p = (p * osp)[None, :]
    if CHUNKS == 1:
        x = _chunk_load(x_base, x_p, pmask, C, sc, 0, BLOCK_C, "evict_first", False)
        inv = scale / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), eps)
        _chunk_store(x, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 0, BLOCK_C, HAS_BIAS, SILU, FAST)
    elif HOLD:
        # the slab as 2 or 3 register tiles of raw values (half a register per bf16 value): one read,
        # statistics and output from registers. The loads carry no L2 eviction hint
        # (docs/benchmarks/channel_hint_probe_h200.json)
        x0 = _chunk_load(x_base, x_p, pmask, C, sc, 0, BLOCK_C, "", True)
        x1 = _chunk_load(x_base, x_p, pmask, C, sc, 1, BLOCK_C, "", True)
        acc = _sq(x0) + _sq(x1)
        if CHUNKS > 2:
            x2 = _chunk_load(x_base, x_p, pmask, C, sc, 2, BLOCK_C, "", True)
            acc += _sq(x2)
        if OPS_AHEAD:
            # gamma / bias of chunk 0 with the slab's loads, of chunk k + 1 before chunk k's store:
            # no chunk waits for its own operands after a store they might alias
            g0, b0 = _chunk_ops(G, BIAS, C, 0, BLOCK_C, HAS_BIAS)
        inv = scale / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        if OPS_AHEAD:
            g1, b1 = _chunk_ops(G, BIAS, C, 1, BLOCK_C, HAS_BIAS)
            _chunk_store_ops(x0, g0, b0, y_base, y_p, pmask, inv, Y, C, osc, 0, BLOCK_C, HAS_BIAS, SILU, FAST,
                             SILU and FAST > 0)
            if CHUNKS > 2:
                g2, b2 = _chunk_ops(G, BIAS, C, 2, BLOCK_C, HAS_BIAS)
            _chunk_store_ops(x1, g1, b1, y_base, y_p, pmask, inv, Y, C, osc, 1, BLOCK_C, HAS_BIAS, SILU, FAST,
                             SILU and FAST > 0)
            if CHUNKS > 2:
                _chunk_store_ops(x2, g2, b2, y_base, y_p, pmask, inv, Y, C, osc, 2, BLOCK_C, HAS_BIAS, SILU, FAST,
                                 SILU and FAST > 0)
        else:
            _chunk_store(x0, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 0, BLOCK_C, HAS_BIAS, SILU, FAST)
            _chunk_store(x1, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 1, BLOCK_C, HAS_BIAS, SILU, FAST)
            if CHUNKS > 2:
                _chunk_store(x2, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 2, BLOCK_C, HAS_BIAS, SILU, FAST)
    else:
        acc = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
        for k in tl.range(0, CHUNKS):
            xk = _chunk_load(x_base, x_p, pmask, C, sc, k, BLOCK_C, "evict_last", False)
            acc += xk * xk
        inv = scale / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        if PREFETCH:  # chunk k + 1's loads in flight while chunk k is normalized and stored
            xk = _chunk_load(x_base, x_p, pmask, C, sc, 0, BLOCK_C, "evict_first", False)
            for k in tl.range(0, CHUNKS):
                xn = _chunk_load(x_base, x_p, pmask, C, sc, k + 1, BLOCK_C, "evict_first", False)
                _chunk_store(xk, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, k, BLOCK_C, HAS_BIAS, SILU, FAST)
                xk = xn
        else:
            for k in tl.range(0, CHUNKS):
                xk = _chunk_load(x_base, x_p, pmask, C, sc, k, BLOCK_C, "evict_first", False)
                _chunk_store(xk, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, k, BLOCK_C, HAS_BIAS, SILU, FAST)


@triton.jit
def _chunk_load(x_base, x_p, pmask, C, sc, k, BLOCK_C: tl.constexpr, EVICT: tl.constexpr, RAW: tl.constexpr):
    """Channel chunk ``k`` as fp32 (``RAW``: as stored); rows past C read nothing. The statistics
    pass keeps its chunks in L1 / L2 (``EVICT="evict_last"``) for the output pass's re-read; the held
    slab's single read takes no hint (``EVICT=""``).
    (Triton 3.6 cannot take a string constexpr from a default: every caller passes both.)"""
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (c < C)[:, None] & pmask[None, :]
    x = tl.load(x_base + c.to(tl.int64)[:, None] * sc + x_p, mask=mask, other=0.0, eviction_policy=EVICT)
    return x if RAW else x.to(tl.float32)


@triton.jit
def _sq(x):
    x = x.to(tl.float32)
    return x * x


@triton.jit
def _chunk_store(x, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, k, BLOCK_C: tl.constexpr,
                 HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr):
    """Normalize channel chunk ``k`` (fp32, or raw values held since the statistics pass: widened
    through their bits, so the compiler keeps them packed instead of holding fp32 copies; sm_90,
    hold 32 x 128 x 3 at C = 96 / 128 x 32 x 3 at C = 384: 105 / 64 registers against 167 / 90,
    measured without SiLU's fast form) and store it."""
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    y = _finish(triton_math.widen_held(x), inv, G, BIAS, c, cmask, HAS_BIAS, SILU, FAST)
    tl.store(y_base + c.to(tl.int64)[:, None] * osc + y_p, triton_math.narrow(y, Y.dtype.element_ty),
             mask=cmask[:, None] & pmask[None, :])


@triton.jit
def _chunk_ops(G, BIAS, C, k, BLOCK_C: tl.constexpr, HAS_BIAS: tl.constexpr):
    """Channel chunk ``k``'s gamma and bias as stored, as ``[BLOCK_C, 1]`` tiles (bias: gamma again when
    there is none). Loaded in the 2-D layout they are used in: a 1-D load converted to it across the
    CTAs of a 4-warp cluster does not compile in Triton 3.6."""
    c = (k * BLOCK_C + tl.arange(0, BLOCK_C))[:, None]
    g = tl.load(G + c, mask=c < C, other=0.0, eviction_policy="evict_last")
    if HAS_BIAS:
        return g, tl.load(BIAS + c, mask=c < C, other=0.0, eviction_policy="evict_last")
    else:
        return g, g


@triton.jit
def _chunk_store_ops(x, g, bias, y_base, y_p, pmask, inv, Y, C, osc, k, BLOCK_C: tl.constexpr,
                     HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr, FOLD: tl.constexpr):
    """:func:`_chunk_store` with the chunk's gamma and bias loaded by the caller (``_chunk_ops``).
    ``FOLD`` (SiLU with its fast forms only): the exponent from its own FMA (see the body)."""
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    if FOLD:
        # SiLU's exponent -log2(e) * y as its own FMA over per-channel constants (one multiply per
        # value fewer, and the exponent does not wait for y)
        a = triton_math.widen_held(x) * inv[None, :]
        gf = g.to(tl.float32)
        if HAS_BIAS:
            bf = bias.to(tl.float32)
            y = tl.fma(a, gf, bf)
            t = tl.fma(a, gf * -1.4426950408889634, bf * -1.4426950408889634)
        else:
            y = a * gf
            t = a * (gf * -1.4426950408889634)
        y = y * triton_math.fast_rcp(1.0 + triton_math.fast_exp2(t, FAST), FAST)
    else:
        y = _affine_silu(triton_math.widen_held(x), inv[None, :], g.to(tl.float32), bias.to(tl.float32), HAS_BIAS,
                         SILU, FAST)
    tl.store(y_base + c.to(tl.int64)[:, None] * osc + y_p, triton_math.narrow(y, Y.dtype.element_ty),
             mask=(c < C)[:, None] & pmask[None, :])


@triton.jit
def _stream_load(X, t, t_end, n_pblk, C, P, sb, sc, sp, c, BLOCK_P: tl.constexpr):
    """Tile ``t`` (sample ``t // n_pblk``, positions block ``t % n_pblk``), rows ``c``: raw values;
    nothing is read when ``t >= t_end``."""
    b = t // n_pblk
    p = (t - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    mask = (c < C)[:, None] & (p < tl.where(t < t_end, P, 0))[None, :]
    ptr = X + b * sb + c.to(tl.int64)[:, None] * sc + (p * sp)[None, :]
    return tl.load(ptr, mask=mask, other=0.0, eviction_policy="evict_first")


@triton.jit
def _stream_store(Y, y, t, t_end, n_pblk, C, P, osb, osc, osp, c, BLOCK_P: tl.constexpr):
    b = t // n_pblk
    p = (t - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    mask = (c < C)[:, None] & (p < tl.where(t < t_end, P, 0))[None, :]
    ptr = Y + b * osb + c.to(tl.int64)[:, None] * osc + (p * osp)[None, :]
    tl.store(ptr, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["n_pblk", "n_tiles", "iters", "eps"])
def _channel_rms_stream_kernel(
    X, G, BIAS, Y,
    C, P, n_pblk, n_tiles, iters, sb, sc, sp, osb, osc, osp, scale, eps,
    BLOCK_C: tl.constexpr, BLOCK_C2: tl.constexpr, BLOCK_P: tl.constexpr, AHEAD: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """Tiles ``pid * iters ..`` (flattened over samples and position blocks). All channels of a
    tile are held as two register tiles, rows ``[0, BLOCK_C)`` and ``[BLOCK_C, BLOCK_C + BLOCK_C2)``
    (C = 96 -> 64 + 32: no masked lanes), so the statistics and the output come from one read.
    The loads of the tile ``AHEAD`` (1 or 2) ahead are issued before the current tile is reduced,
    normalized and stored: ``AHEAD`` tiles of loads stay in flight per program (raw values cost half
    a register per bf16 element) instead of a load / reduce / store sequence."""
    t = tl.program_id(0).to(tl.int64) * iters
    t_end = tl.minimum(t + iters, n_tiles)
    ca = tl.arange(0, BLOCK_C)
    cb = BLOCK_C + tl.arange(0, BLOCK_C2)
    ga = tl.load(G + ca, mask=ca < C, other=0.0).to(tl.float32)
    gb = tl.load(G + cb, mask=cb < C, other=0.0).to(tl.float32)
    if HAS_BIAS:
        ba = tl.load(BIAS + ca, mask=ca < C, other=0.0).to(tl.float32)
        bb = tl.load(BIAS + cb, mask=cb < C, other=0.0).to(tl.float32)
    else:
        ba = ga
        bb = gb
    xa = _stream_load(X, t, t_end, n_pblk, C, P, sb, sc, sp, ca, BLOCK_P)
    xb = _stream_load(X, t, t_end, n_pblk, C, P, sb, sc, sp, cb, BLOCK_P)
    if AHEAD == 2:
        na = _stream_load(X, t + 1, t_end, n_pblk, C, P, sb, sc, sp, ca, BLOCK_P)
        nb = _stream_load(X, t + 1, t_end, n_pblk, C, P, sb, sc, sp, cb, BLOCK_P)
    for _ in tl.range(0, iters):
        # issue the loads of tile t + AHEAD, then reduce, normalize and store tile t
        ma = _stream_load(X, t + AHEAD, t_end, n_pblk, C, P, sb, sc, sp, ca, BLOCK_P)
        mb = _stream_load(X, t + AHEAD, t_end, n_pblk, C, P, sb, sc, sp, cb, BLOCK_P)
        fa = xa.to(tl.float32)
        fb = xb.to(tl.float32)
        ss = tl.sum(fa * fa, axis=0) + tl.sum(fb * fb, axis=0)
        inv = scale / tl.maximum(tl.sqrt(ss), eps)
        ya = _affine_silu(fa, inv[None, :], ga[:, None], ba[:, None], HAS_BIAS, SILU, FAST)
        _stream_store(Y, ya, t, t_end, n_pblk, C, P, osb, osc, osp, ca, BLOCK_P)
        yb = _affine_silu(fb, inv[None, :], gb[:, None], bb[:, None], HAS_BIAS, SILU, FAST)
        _stream_store(Y, yb, t, t_end, n_pblk, C, P, osb, osc, osp, cb, BLOCK_P)
        if AHEAD == 2:
            xa = na
            xb = nb
            na = ma
            nb = mb
        else:
            xa = ma
            xb = mb
        t += 1


@triton.jit(do_not_specialize=["n_rows", "eps"])
def _channel_rms_rows_kernel(
    X, G, BIAS, Y,
    n_rows, P, sb, osb, scale, eps,
    C: tl.constexpr, BLOCK_C: tl.constexpr, ROWS: tl.constexpr, DENSE: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr,
):
    """channels_last x whose positions are rows of C contiguous values (``sc == 1``, ``sp == C``):
    a ``[ROWS, BLOCK_C]`` tile of ``ROWS`` consecutive positions (flattened over samples), reduced
    along its contiguous axis in registers, like ``qk_norm``'s heads: no layout change of the tile
    between the reduction and the store. ``DENSE``: the samples follow each other too (``B == 1``
    or ``sb == P * C``), so position ``r`` of the flattened index sits at ``r * C`` in x and y
    (no 64-bit division per row)."""
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS).to(tl.int64)
    if DENSE:
        x_row = r * C
        y_row = r * C
    else:
        b = r // P
        p = r - b * P
        x_row = b * sb + p * C
        y_row = b * osb + p * C
    c = tl.arange(0, BLOCK_C)
    cmask = c < C
    mask = (r < n_rows)[:, None] & cmask[None, :]
    x = tl.load(X + x_row[:, None] + c[None, :], mask=mask, other=0.0).to(tl.float32)
    inv = scale / tl.maximum(tl.sqrt(tl.sum(x * x, axis=1)), eps)
    g = tl.load(G + c, mask=cmask, other=0.0).to(tl.float32)
    y = x * inv[:, None] * g[None, :]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0).to(tl.float32)[None, :]
    if SILU:
        y = triton_math.silu(y, FAST)
    tl.store(Y + y_row[:, None] + c[None, :], triton_math.narrow(y, Y.dtype.element_ty), mask=mask)
