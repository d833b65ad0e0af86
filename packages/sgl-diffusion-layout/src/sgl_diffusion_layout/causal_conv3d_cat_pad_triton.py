"""Triton backend of ``causal_conv3d_cat_pad``: ``F.pad(torch.cat([cache_x, x], dim=2), padding)``
in one pass, written in x's memory format.

Four kernels, their launch rules (``_ROW_RULE``, ``_WORDS_RULE``, ``_FLAT_RULE``, ``_TILE_BYTES``)
in data; ``launches`` applies them, in this order:

``_cat_pad_rows_kernel`` (channels_last_3d x and a cache whose ``(w, c)`` rows are packed,
the Wan VAE case): every output row ``(b, t, h)`` is ``[LO_W*C zeros] + one packed input
row of W*C elements + [zeros]``, or a whole zero row: a flat 1-D copy with a shift of
``LO_W*C`` elements. The grid is 1-D, a row's tiles adjacent (programs that run side by
side stream neighbouring bytes); offsets are passed in units of ``VEC`` elements (16 bytes
when ``C`` and every row stride allow it) so that loads and stores are 16-byte vectors.

``_cat_pad_words_kernel`` (16-bit contiguous x and a cache whose ``(h, w)`` planes are packed,
even ``W`` and even output rows, 4-byte aligned tensors, checked per call; the Wan VAE case):
x, cache and output read as 32-bit words (details in its docstring); a program writes 8
consecutive output rows of one channel, across frame boundaries. One H200 (bf16, Wan-VAE C 96 /
384, ``docs/benchmarks/cat_pad_sweep_h200.json``): 90.3 / 87.9% of copy at the rule, where the
flat kernel below measured 77.1 / 79.8%. Unaligned tensors take the flat kernel.

``_cat_pad_flat_kernel`` (contiguous x and a cache whose ``(h, w)`` planes are packed, the
frame strides, ``H*W`` and the output size multiples of a vector of at least
``min_vec_bytes``; output rows of at least one vector): with ``W + pads`` odd (Wan's 416 + 2)
output rows start at odd element offsets, so a per-row tile can store only narrow pieces.
Instead an output frame ``r`` owns the aligned output vectors ``[ceil(r*L), ceil((r+1)*L))``
(``L`` its size; its last vector may hold up to VEC-1 elements of frame ``r + 1``), cut
into chunks of ``BLOCK`` elements, one per program on a ``(chunk, t, b*C + c)`` grid. A
program loads the aligned superset of the source span its chunk consumes (of frame ``r``
and of frame ``r + 1``'s first row) with 16-byte vector loads into one register tensor of
``S`` lanes, computes each output element's lane (one fp32 row division per output vector,
exact for rows below 2**20 elements; a bit test per element; padding reads a lane that is
always 0) and rearranges with ``tl.gather`` (through shared memory), then writes the chunk
with 16-byte vector stores (sm_90 SASS: LDG.E.128 and STG.E.128 only, no spills). One H200
(bf16, Wan-VAE C 96 / 384, docs/benchmarks/cat_pad_sweep_h200.json): 77.1 / 79.8% of copy,
held back by about 18 instructions and a shared-memory round trip (the gather) per element.

``_cat_pad_kernel`` (everything else: strided views, narrow vectors): one program per
output row tile (contiguous: row ``(b, c, t)``, a ``[BA, BN]`` tile of ``(h, w)``;
channels_last_3d: ``(b, t, h)``, a tile of ``(w, c)``), on a 1-D grid with a row's tiles
adjacent, the row decomposed once per program.

In all of them the source frame (cache or x, or padding) is a per-program scalar choice;
padded positions are written as zeros in the same pass. Negative padding crops, as in ``F.pad``.
The source loads take the default L2 policy: with ``evict_first`` the four Wan-VAE bench cases ran
2.2-3.5 points of copy slower (H200, bf16: docs/benchmarks/hint_ab_h200.json).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2, tensor_platform, warp_size, warps_for

from ._copy_triton import CopyConfig

_TILE_BYTES = 8192  # 16 KB tiles spilled registers on sm_90 (two address tensors per element)
# the flat row kernel: bytes per program and per thread; small programs keep the row's tiles
# streaming side by side (Wan-VAE channels_last_3d at 100% of copy: docs/benchmarks/hint_ab_h200.json)
_ROW_RULE = {"tile_bytes": 2048, "thread_bytes": 32}
# the contiguous flat kernel (docs/benchmarks/cat_pad_sweep_h200.json): bytes per program and per
# thread; taken when its vectors reach ``min_vec_bytes``, a chunk keeps at least
# ``min_fill`` of the lanes after the span margin, and the output row is at most ``max_row``
# elements (the fp32 row division is exact while row + lanes < 2**21)
_FLAT_RULE = {"tile_bytes": 8192, "thread_bytes": 128, "min_vec_bytes": 8, "min_fill": 0.5, "max_row": 1 << 20}


@triton.jit(do_not_specialize=["NT", "TO", "HO", "TC", "TX", "HI"])
def _cat_pad_rows_kernel(
    X, CACHE, OUT,
    NT, TO, HO, TC, TX, HI, LO_T, LO_H,
    SHIFT_V, WC_V, L_V,
    xb_v, xt_v, xh_v,
    cb_v, ct_v, ch_v,
    BLOCK: tl.constexpr, VEC: tl.constexpr,
):
    # program -> (output row r = (b, t, h), tile of the row): a row's tiles are adjacent
    pid = tl.program_id(0).to(tl.int64)
    tile = pid % NT
    r = pid // NT
    h_o = r % HO
    q = r // HO
    t_o = q % TO
    b = q // TO
    ts = t_o - LO_T
    hs = h_o - LO_H
    h_ok = (hs >= 0) & (hs < HI)
    from_c = h_ok & (ts >= 0) & (ts < TC)  # the row comes from the cache ...
    from_x = h_ok & (ts >= TC) & (ts < TC + TX)  # ... or from x (else it is all padding)
    # offsets in units of VEC elements: the compiler sees multiples of 16 bytes
    src = X + (b * xb_v + (ts - TC) * xt_v + hs * xh_v) * VEC
    if from_c:
        src = CACHE + (b * cb_v + ts * ct_v + hs * ch_v) * VEC
    wc = tl.where(from_c | from_x, WC_V * VEC, 0)  # source elements of this row (0: a zero row)
    L = L_V * VEC
    e = tile * BLOCK + tl.arange(0, BLOCK)
    s = e - SHIFT_V * VEC
    v = tl.load(src + s, mask=(s >= 0) & (s < wc) & (e < L), other=0.0)
    tl.store(OUT + r * L + e, v, mask=e < L)


@triton.jit
def _rows_before(q, INV_WO):
    """``q // WO`` for ``0 <= q < 2**21`` (``INV_WO``: ``1 / WO`` rounded to fp32): the
    quotient of ``(q + 0.5) * INV_WO`` is off by less than ``0.5 / WO`` from ``(q + 0.5) / WO``,
    which lies at least ``0.5 / WO`` from an integer."""
    return ((q.to(tl.float32) + 0.5) * INV_WO).to(tl.int32)


@triton.jit
def _src_before(h, w, LO_H, LO_W, HI, WI):
    """Source elements of a frame plane consumed before output position ``(h, w)`` (clamped:
    the index of the next consumed source element)."""
    c = tl.minimum(tl.maximum(w - LO_W, 0), WI)
    return tl.minimum(tl.maximum((h - LO_H) * WI + c, 0), HI * WI)


@triton.jit
def _vec_bits(lo, n, VEC: tl.constexpr):
    """Bit ``m`` set for the elements ``m`` of a vector in ``[lo, lo + n)`` (``n >= 0``)."""
    return (1 << tl.minimum(tl.maximum(lo + n, 0), VEC)) - (1 << tl.minimum(tl.maximum(lo, 0), VEC))


@triton.jit(do_not_specialize=["TO", "HO", "WO", "TC", "TX", "HI", "WI", "LO_T", "LO_H", "LO_W", "L", "SEG1_V",
                               "xc_v", "xt_v", "cc_v", "ct_v"])
def _cat_pad_flat_kernel(
    X, CACHE, OUT,
    TO, HO, WO, TC, TX, HI, WI, LO_T, LO_H, LO_W, L, SEG1_V, INV_WO,
    xc_v, xt_v, cc_v, ct_v,
    BLOCK: tl.constexpr, S: tl.constexpr, VEC: tl.constexpr,
):
    """The flat kernel of the module docstring; long: its sources and straddling vector resolve in one pass."""
    # grid (chunk j, t_o, b*C + c): output frame r = (b*C + c)*TO + t_o owns the output vectors
    # [ceil(r*L), ceil((r+1)*L)) (ceil to VEC elements), so its last vector may end with up to
    # VEC-1 elements of frame r + 1 (row 0)
    j = tl.program_id(0)
    t_o = tl.program_id(1)
    bc = tl.program_id(2)
    r = bc * TO + t_o
    rl = r * L  # wraps in int32: only its low bits are used
    d0 = (0 - rl) & (VEC - 1)  # ceil(r*L) - r*L
    d1 = (0 - rl - L) & (VEC - 1)  # ceil((r+1)*L) - (r+1)*L
    p0 = d0 + j * BLOCK  # the chunk's first element, in frame coordinates
    n_live = tl.minimum((L + d1 - p0) // VEC, BLOCK // VEC) * VEC  # <= 0: a spare chunk
    out = OUT + ((r.to(tl.int64) * L + d0) // VEC + j * (BLOCK // VEC)) * VEC
    h_first = p0 // WO
    w_first = p0 - h_first * WO
    # the source plane spans the chunk consumes: [lo0, g_end0) of frame r for output positions
    # [p0, pos0), [lo1, g_end1) of frame r + 1 for [0, pos1)
    pos_end = p0 + tl.maximum(n_live, 0)
    pos0 = tl.minimum(pos_end, L)
    pos1 = tl.maximum(pos_end - L, 0)
    h_e = h_first + _rows_before(pos0 - p0 + w_first, INV_WO)
    lo0 = _src_before(h_first, w_first, LO_H, LO_W, HI, WI)
    g_end0 = _src_before(h_e, pos0 - h_e * WO, LO_H, LO_W, HI, WI)
    lo1 = _src_before(h_first * 0, h_first * 0, LO_H, LO_W, HI, WI)
    g_end1 = _src_before(h_first * 0, pos1, LO_H, LO_W, HI, WI)  # pos1 < VEC <= WO: row 0
    # the frames' sources (cache, x, or none: padding), chosen once per program
    ts0 = t_o - LO_T
    last_t = t_o + 1 == TO
    bc1 = bc + last_t.to(tl.int32)
    ts1 = tl.where(last_t, 0, t_o + 1) - LO_T
    has0 = (ts0 >= 0) & (ts0 < TC + TX) & (n_live > 0)
    has1 = (ts1 >= 0) & (ts1 < TC + TX) & (n_live > 0) & (pos1 > 0)
    a0 = lo0 // VEC * VEC
    a1 = lo1 // VEC * VEC
    n0 = tl.where(has0, (g_end0 + VEC - 1) // VEC * VEC - a0, 0)
    n1 = tl.where(has1, (g_end1 + VEC - 1) // VEC * VEC - a1, 0)
    # offsets in units of VEC elements (the compiler sees 16-byte multiples), int64 products
    ts0 = ts0.to(tl.int64)
    ts1 = ts1.to(tl.int64)
    src0 = X + (bc.to(tl.int64) * xc_v + (ts0 - TC) * xt_v) * VEC + a0
    if ts0 < TC:
        src0 = CACHE + (bc.to(tl.int64) * cc_v + ts0 * ct_v) * VEC + a0
    src1 = X + (bc1.to(tl.int64) * xc_v + (ts1 - TC) * xt_v) * VEC + a1
    if ts1 < TC:
        src1 = CACHE + (bc1.to(tl.int64) * cc_v + ts1 * ct_v) * VEC + a1
    # both spans in one register tensor, lanes [0, split) frame r and [split, S) frame r + 1;
    # the host keeps n0 <= split and n1 <= S - split - VEC, so lane S - 1 is always 0 (the
    # lane padded outputs read). Two masked loads, not one through a pointer select (Triton
    # proves only half the vector width through a select of pointers).
    split = S - SEG1_V * VEC
    k = tl.arange(0, S)
    k1 = k - split
    span = tl.load(src0 + k, mask=k < n0, other=0.0)
    span = tl.load(src1 + k1, mask=(k1 >= 0) & (k1 < n1), other=span)
    # per output vector [NV, 1] (one fp32 row division per vector): the vector's first element
    # is in row hA of frame r at column w0; from element cB = WO - w0 on it is in row hA + 1,
    # which is row 0 of frame r + 1 when hA + 1 == HO (VEC <= WO: at most one row change).
    # Rows with a source: [LO_H, r_end) of frame r, row 0 of frame r + 1 when ok1.
    r_len = tl.where(has0, tl.maximum(tl.minimum(LO_H + HI, HO) - LO_H, 0), 0)
    ok1 = has1 & (LO_H <= 0) & (LO_H + HI > 0)
    cl0 = tl.maximum(LO_W, 0)  # the output columns with a source: [cl0, cl0 + n_cols)
    n_cols = tl.maximum(tl.minimum(LO_W + WI, WO) - cl0, 0)
    offA0 = -LO_H * WI - LO_W - a0  # lane of output (h, w) of frame r: h * WI + w + offA0
    offB1 = -LO_H * WI - LO_W - a1 + split - WO  # lane of (0, w) of frame r + 1: w + WO + offB1
    NV: tl.constexpr = S // VEC
    q0 = w_first + tl.arange(0, NV)[:, None] * VEC
    hr = _rows_before(q0, INV_WO)
    w0 = q0 - hr * WO
    hA = h_first + hr
    nxt = hA + 1 == HO
    okA = (hA - LO_H).to(tl.uint32) < r_len.to(tl.uint32)
    okB = ((hA + 1 - LO_H).to(tl.uint32) < r_len.to(tl.uint32)) | (nxt & ok1)
    # spare vectors (past the chunk) may name lanes past the span: clamped (a live vector's
    # valid lanes are below split, so the clamp never moves them)
    offA = hA * WI + w0 + offA0
    offB = tl.minimum(tl.where(nxt, w0 + offB1, offA + WI - WO), S - VEC)
    offA = tl.minimum(offA, S - VEC)
    bitsA = _vec_bits(cl0 - w0, tl.where(okA, n_cols, 0), VEC)
    bitsB = _vec_bits(WO - w0 + cl0, tl.where(okB, n_cols, 0), VEC)
    # per element m of the vector: a bit test (row A, row B, or padding: lane S - 1)
    bit = 1 << tl.arange(0, VEC)[None, :]
    lane = tl.where((bitsB & bit) != 0, offB, offA) + tl.arange(0, VEC)[None, :]
    lane = tl.where(((bitsA | bitsB) & bit) != 0, lane, S - 1)
    v = tl.gather(span, tl.reshape(lane, (S,)), 0)
    i = tl.arange(0, S)
    tl.store(out + i, v, mask=i < n_live)


@triton.jit(do_not_specialize=["TO", "HO", "TC", "TX", "HI", "LO_T", "LO_H", "zero"])
def _cat_pad_words_kernel(
    X, CACHE, OUT,
    TO, HO, TC, TX, HI, LO_T, LO_H,
    xc_w, xt_w, cc_w, ct_w, zero,
    WI: tl.constexpr, WOW: tl.constexpr, LO_W: tl.constexpr, ROWS: tl.constexpr, BLOCK_W: tl.constexpr,
    SPAN: tl.constexpr,
):
    """16-bit contiguous x with even ``W`` and even output rows, read and written as 32-bit words
    (two elements each): program ``(h block, t_o, b*C + c)`` writes ``ROWS`` output rows of
    ``WOW`` words. With ``LO_W`` odd every output word straddles two source words: its low half is
    the high half of source word ``j - (LO_W + 1) / 2``, its high half the low half of the next
    one (a funnel shift of two loads, ``LO_W`` even: one load); the second load of a word reads
    what the neighbouring lane's first load read (an L1 hit). Every access is a 4-byte one: the
    output rows (``WOW`` odd at Wan's 418 elements) allow no wider stores, and ``zero`` (a runtime
    0 added to every base offset) hides the source rows' 16-byte alignment from the compiler, so
    loads and stores share one register layout (with a vectorized load, sm_90 SASS moved the
    whole tile through shared memory between them; without it, 344 instructions for 16 words per
    thread and no shared memory). Padding rows and frames read nothing. Strides in words.

    ``SPAN``: program ``(block, b*C + c)`` writes ``ROWS`` consecutive of the ``TO * HO`` rows of one
    output channel, each row's frame, source tensor and source row taken per row: no program is
    left with a frame's last few rows (Wan-VAE C = 384: 122 rows per frame, 16 programs of 8)."""
    x32 = X.to(tl.pointer_type(tl.uint32), bitcast=True)
    c32 = CACHE.to(tl.pointer_type(tl.uint32), bitcast=True)
    o32 = OUT.to(tl.pointer_type(tl.uint32), bitcast=True)
    if SPAN:
        bc = tl.program_id(1).to(tl.int64)
        r = tl.program_id(0) * ROWS + tl.arange(0, ROWS)  # output row of the channel (TO * HO < 2**31)
        t_o = r // HO
        h_o = r - t_o * HO
        ts = t_o - LO_T
        has = (ts >= 0) & (ts < TC + TX)  # rows past the last frame: ts >= TC + TX
        src = tl.where(ts < TC, c32 + bc * cc_w + ts.to(tl.int64) * ct_w,
                       x32 + bc * xc_w + (ts - TC).to(tl.int64) * xt_w)[:, None] + zero
        out_row = bc * TO * HO + r.to(tl.int64)
        live = t_o < TO
    else:
        hb = tl.program_id(0)
        t_o = tl.program_id(1)
        bc = tl.program_id(2).to(tl.int64)
        ts = t_o - LO_T
        has = (ts >= 0) & (ts < TC + TX)
        src = x32 + bc * xc_w + (ts - TC).to(tl.int64) * xt_w + zero
        if ts < TC:
            src = c32 + bc * cc_w + ts.to(tl.int64) * ct_w + zero
        h_o = hb * ROWS + tl.arange(0, ROWS)
        out_row = (bc * TO + t_o) * HO + h_o.to(tl.int64)
        live = h_o < HO
    hs = h_o - LO_H
    row_ok = ((hs >= 0) & (hs < tl.where(has, HI, 0)))[:, None]
    j = tl.arange(0, BLOCK_W)[None, :]
    row = src + (tl.where(row_ok, hs[:, None], 0) * (WI // 2)).to(tl.int64)
    if LO_W % 2 == 1:
        e0 = 2 * j - LO_W  # source element of the word's low half
        ok_a = row_ok & (e0 >= 0) & (e0 < WI) & (j < WOW)
        ok_b = row_ok & (e0 + 1 >= 0) & (e0 + 1 < WI) & (j < WOW)
        b = tl.load(row + (j - (LO_W + 1) // 2 + 1), mask=ok_b, other=0)
        a = tl.load(row + (j - (LO_W + 1) // 2), mask=ok_a, other=0)
        word = (a >> 16) | (b << 16)
    else:
        w = j - LO_W // 2
        word = tl.load(row + w, mask=row_ok & (w >= 0) & (w < WI // 2) & (j < WOW), other=0)
    tl.store(o32 + out_row[:, None] * WOW + j, word, mask=live[:, None] & (j < WOW))


@triton.jit(do_not_specialize=["R1", "R2", "A", "TC", "TX", "HI", "WI", "NTA"])
def _cat_pad_kernel(
    X, CACHE, OUT,
    R1, R2, A, N_S, NTA,
    TC, TX, HI, WI, CI,
    LO_T, LO_H, LO_W,
    xb, xc, xt, xh, xw,
    cb, cc, ct, ch, cw,
    BA: tl.constexpr, BN: tl.constexpr, CL: tl.constexpr, SV: tl.constexpr,
):
    N = N_S * SV  # the output row length, passed in units of SV: SV-wide stores
    pid = tl.program_id(0).to(tl.int64)  # 1-D grid: (row, tile of A), a row's tiles adjacent
    ta = pid % NTA
    r = pid // NTA
    r2 = r % R2
    q = r // R2
    r1 = q % R1
    b = q // R1
    if CL:  # memory order (b, t, h | w, c)
        t_o = r1
        h_o = r2
        c_o = r1 * 0
    else:  # memory order (b, c, t | h, w)
        c_o = r1
        t_o = r2
        h_o = r1 * 0
    ts = t_o - LO_T
    from_c = (ts >= 0) & (ts < TC)  # the frame comes from the cache ...
    from_x = (ts >= TC) & (ts < TC + TX)  # ... or from x (else it is padding)
    tc = tl.where(from_c, ts, 0)
    tx = tl.where(from_x, ts - TC, 0)
    a = ta * BA + tl.arange(0, BA)
    out_row = OUT + r * A * N
    if CL:
        hs = h_o - LO_H
        h_ok = (hs >= 0) & (hs < HI)
        from_c = from_c & h_ok
        from_x = from_x & h_ok
        hs = tl.where(h_ok, hs, 0)
        ai = a - LO_W
        a_ok = (ai >= 0) & (ai < WI) & (a < A)
        x_base = b * xb + tx * xt + hs * xh
        c_base = b * cb + tc * ct + hs * ch
        sa = tl.where(from_c, cw, xw)
        sn = tl.where(from_c, cc, xc)
    else:
        ai = a - LO_H
        a_ok = (ai >= 0) & (ai < HI) & (a < A)
        x_base = b * xb + c_o * xc + tx * xt
        c_base = b * cb + c_o * cc + tc * ct
        sa = tl.where(from_c, ch, xh)
        sn = tl.where(from_c, cw, xw)
    # the frame's source chosen once per program: one load per element (padding reads nothing)
    src = X + x_base
    if from_c:
        src = CACHE + c_base
    src_a = src + (tl.where(a_ok, ai, 0).to(tl.int64) * sa)[:, None]  # int64 products: any view strides
    # per-program source choice folded into the row mask (a vector op, no scalar-vector mix)
    a_ok = a_ok & (a < tl.where(from_c | from_x, A, 0))
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        st_mask = (a < A)[:, None] & (n < N)[None, :]
        if CL:
            n_ok = n < CI
            nn = n.to(tl.int64)
        else:
            wsn = n - LO_W
            n_ok = (wsn >= 0) & (wsn < WI)
            nn = tl.where(n_ok, wsn, 0).to(tl.int64)
        v = tl.load(src_a + (nn * sn)[None, :], mask=a_ok[:, None] & n_ok[None, :], other=0.0)
        tl.store(out_row + a[:, None] * N + n[None, :], v, mask=st_mask)


def _store_vec(N, elem_bytes):
    """The tile kernel's store width in elements: the largest power of 2 up to 16 bytes dividing
    the output row length (Wan's contiguous W + 2 = 418: 2, 4-byte stores instead of 2-byte)."""
    return min(max(1, 16 // elem_bytes), N & -N) if N else 1


def _row_vec(C, strides, elem_bytes):
    """Elements per 16-byte vector when ``C`` and every row stride are multiples of it, else 1."""
    vec = max(1, 16 // elem_bytes)
    while vec > 1 and (C % vec or any(st % vec for st in strides)):
        vec //= 2
    return vec


def _row_launch(cl, shape, scalars, elem_bytes, plat):
    """The flat row kernel's launch and its scalars, or None where it does not apply (rows
    of x or of the cache not packed ``(w, c)`` runs)."""
    R1, R2, A, N, TC, TX, HI, WI, CI, LO_T, LO_H, LO_W = scalars[:12]
    xb, xc, xt, xh, xw, cb, cc, ct, ch, cw = scalars[12:]
    if not cl or xc != 1 or xw != CI or (TC and (cc != 1 or cw != CI)):
        return None
    if not TC:  # no cache: its strides are x's (never read)
        cb, ct, ch = xb, xt, xh
    vec = _row_vec(CI, (xb, xt, xh, cb, ct, ch), elem_bytes)
    warp = warp_size(plat)
    block = _ROW_RULE["tile_bytes"] // elem_bytes
    L = A * N
    block = min(block, max(vec, next_pow2(L)))
    warps = warps_for(block * elem_bytes, _ROW_RULE["thread_bytes"], warp)
    nt = triton.cdiv(L, block)
    rows = shape[0] * R1 * R2
    args = (nt, R1, R2, TC, TX, HI, LO_T, LO_H, LO_W * CI // vec, WI * CI // vec, L // vec,
            xb // vec, xt // vec, xh // vec, cb // vec, ct // vec, ch // vec)
    return (rows * nt,), {"BLOCK": block, "VEC": vec}, warps, args


def _frame_strides(B, C, T, H, W, strides):
    """``(b*C + c, t)`` strides of a tensor whose ``(h, w)`` planes are packed, or None."""
    sb, sc, st, sh, sw = strides
    if (W > 1 and sw != 1) or (H > 1 and sh != W):
        return None
    if C == 1:
        sc = sb
    elif B > 1 and sb != C * sc:
        return None
    return sc if B * C > 1 else 0, st if T > 1 else 0


def _flat_geometry(S, VEC, WO, cropw):
    """Lanes of the frame-r+1 segment (in VECs, one spare: the zero lane) and the chunk length
    in elements. The frame-r span holds at most ``BLOCK + rows * cropw`` source elements
    (``cropw``: columns a row crop skips between output rows) plus two VECs of alignment
    slack; the frame-r+1 tail (VEC-1 output elements of row 0) at most ``VEC - 1 + cropw``."""
    seg1 = triton.cdiv(VEC - 1 + cropw + 2 * VEC - 2, VEC) + 1
    margin0 = triton.cdiv(2 * VEC - 2 + (S // WO + 1) * cropw, VEC) * VEC
    return seg1, S - seg1 * VEC - margin0


def _flat_launch(cl, shape, scalars, elem_bytes, plat):
    """The contiguous flat kernel's launch and its scalars, or None where it does not apply
    (planes not packed, vectors under ``min_vec_bytes``, rows shorter than a vector or over
    ``max_row``, a crop too wide for the span margin, int32 plane offsets or grid limits)."""
    R1, R2, A, N, TC, TX, HI, WI, CI, LO_T, LO_H, LO_W = scalars[:12]
    if cl:
        return None
    B = shape[0]
    xs = _frame_strides(B, CI, TX, HI, WI, scalars[12:17])
    cs = _frame_strides(B, CI, TC, HI, WI, scalars[17:22]) if TC else xs
    S = _FLAT_RULE["tile_bytes"] // elem_bytes
    # int32 plane offsets: rows h * WI (spare vectors reach S rows past the frame), the grid
    if (xs is None or cs is None or N > _FLAT_RULE["max_row"] or (A + HI + S + 2) * (N + WI + 2) >= 2**31
            or max(R2, B * R1) >= 2**16 or B * R1 * R2 >= 2**31):
        return None
    L = A * N
    vec = max(1, 16 // elem_bytes)
    while vec > 1 and any(v % vec for v in (HI * WI, B * R1 * R2 * L, *xs, *cs)):
        vec //= 2
    if vec * elem_bytes < _FLAT_RULE["min_vec_bytes"] or N < vec:
        return None
    cropw = max(0, -LO_W) + max(0, LO_W + WI - N)
    seg1, block = _flat_geometry(S, vec, N, cropw)
    if block < _FLAT_RULE["min_fill"] * S:
        return None
    nj = triton.cdiv(L + vec - 1, block)
    warp = warp_size(plat)
    warps = warps_for(S * elem_bytes, _FLAT_RULE["thread_bytes"], warp)
    inv_wo = float(torch.tensor(1.0 / N, dtype=torch.float32).item())
    args = (R2, A, N, TC, TX, HI, WI, LO_T, LO_H, LO_W, L, seg1, inv_wo,
            xs[0] // vec, xs[1] // vec, cs[0] // vec, cs[1] // vec)
    return (nj, R2, B * R1), {"BLOCK": block, "S": S, "VEC": vec}, warps, args


# the 16-bit word kernel: output rows per program (fewer where a tile would pass max_tile_words),
# words per thread, and span (a program's rows run across frame boundaries: a frame's 122 output rows
# at Wan-VAE C = 384 leave every 16th program of frame tiles 2 of its 8 rows). H200 sweep (bf16, C 96 /
# 384, % of copy, docs/benchmarks/cat_pad_sweep_h200.json): the rule 90.3 / 87.9%, 1024 words x 32 per
# thread with span 90.6 / 89.9%, 2048 x 64 93.7 / 83.4%, the flat kernel 77.1 / 79.8%.
_WORDS_RULE = {"rows": 8, "max_tile_words": 4096, "thread_words": 64, "span": True}


def _words_launch(cl, shape, scalars, elem_bytes, plat, span=None):
    """The 16-bit word kernel's launch and its scalars, or None where it does not apply: x (and
    the cache) contiguous-format planes, 16-bit elements, even input and output rows, even frame
    strides (4-byte aligned rows given a 4-byte aligned base: checked per call)."""
    R1, R2, A, N, TC, TX, HI, WI, CI, LO_T, LO_H, LO_W = scalars[:12]
    if cl or elem_bytes != 2 or WI % 2 or N % 2 or WI < 2 or N < 2:
        return None
    B = shape[0]
    xs = _frame_strides(B, CI, TX, HI, WI, scalars[12:17])
    cs = _frame_strides(B, CI, TC, HI, WI, scalars[17:22]) if TC else xs
    if xs is None or cs is None or any(v % 2 for v in (*xs, *cs)) or max(R2, B * R1) >= 2**16:
        return None
    wow = N // 2
    block_w = next_pow2(wow)
    rows = max(1, min(_WORDS_RULE["rows"], _WORDS_RULE["max_tile_words"] // block_w))
    warp = warp_size(plat)
    warps = warps_for(rows * block_w, _WORDS_RULE["thread_words"], warp)
    args = (R2, A, TC, TX, HI, LO_T, LO_H, xs[0] // 2, xs[1] // 2, cs[0] // 2, cs[1] // 2, 0)
    span = bool(_WORDS_RULE.get("span") if span is None else span) and R2 * A + rows < 2**31
    const = {"WI": WI, "WOW": wow, "LO_W": LO_W, "ROWS": rows, "BLOCK_W": block_w, "SPAN": span}
    if span:
        return (triton.cdiv(R2 * A, rows), B * R1), const, warps, args
    return (triton.cdiv(A, rows), R2, B * R1), const, warps, args


def launches(geom, x, cache_x):
    """``(preferred, preferred_args, element, element_args)`` of one call signature, by the rules
    above: the flat row kernel, else the 16-bit word kernel (``preferred``, for 4-byte aligned
    tensors) over the contiguous flat kernel or the tile kernel (``element``, which serves the
    rest). ``None`` launches: nothing to write (or no word kernel)."""
    cl, shape, scalars, (R1, R2, A, N) = geom
    plat = tensor_platform(x.device)
    es = x.element_size()
    if not (shape[0] * R1 * R2 and A and N):
        return None, scalars, None, scalars
    word_launch = None
    word_args = scalars
    fast = _row_launch(cl, shape, scalars, es, plat)
    if fast is not None:
        grid, const, warps, args = fast
        return None, scalars, PreparedLaunch(_cat_pad_rows_kernel, grid, const, device=x.device, n_ptrs=3,
                                             options={"num_warps": warps, "num_stages": 1}), args
    wl = _words_launch(cl, shape, scalars, es, plat)
    if wl is not None:
        grid, const, warps, word_args = wl
        word_launch = PreparedLaunch(_cat_pad_words_kernel, grid, const, device=x.device, n_ptrs=3,
                                     options={"num_warps": warps, "num_stages": 1}, fp_fusion=False)
    flat = _flat_launch(cl, shape, scalars, es, plat)
    if flat is not None:
        grid, const, warps, args = flat
        launch = PreparedLaunch(_cat_pad_flat_kernel, grid, const, device=x.device, n_ptrs=3,
                                options={"num_warps": warps, "num_stages": 1}, fp_fusion=False)
    else:
        cfg = CopyConfig.from_heuristic(A, N, es, plat, _TILE_BYTES)
        nta = triton.cdiv(A, cfg.bm)
        sv = _store_vec(N, es)
        args = (R1, R2, A, N // sv, nta, *scalars[4:])
        launch = PreparedLaunch(_cat_pad_kernel, (shape[0] * R1 * R2 * nta,),
                                {"BA": cfg.bm, "BN": cfg.bn, "CL": cl, "SV": sv}, device=x.device, n_ptrs=3,
                                options=cfg.launch_options())
    return word_launch, word_args, launch, args


def prepare(geom, x, cache_x):
    """A runner for one call signature: ``(x, cache_x, padding) -> out``."""
    word_launch, word_args, launch, args = launches(geom, x, cache_x)
    cl, shape = geom[0], geom[1]
    fmt = torch.channels_last_3d if cl else torch.contiguous_format
    dtype, device = x.dtype, x.device
    has_cache = cache_x is not None

    def run(x, cache_x, padding):
        out = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        c = cache_x if has_cache else x
        # the word kernel reads and writes 32-bit words: 4-byte aligned tensors only (an address
        # property, checked per call); anything else takes the element kernel
        if word_launch is not None and not ((x.data_ptr() | c.data_ptr() | out.data_ptr()) & 3):
            word_launch(x, c, out, *word_args)
        elif launch is not None:
            launch(x, c, out, *args)
        return out

    return run


def _aot(kernel, name, sig, const, warps, **kw):
    from sgl_diffusion_core import AotVariant

    sig = {n: sig.get(n, "constexpr" if n in const else "i32") for n in kernel.arg_names}
    return AotVariant(name=name, kernel=kernel, signature=sig, constexprs=const, num_warps=warps,
                      options={"enable_fp_fusion": False}, **kw)


def _wan_scalars(C, H, W, lo_w=1):
    """The geometry scalars of Wan's contiguous [1, C, 21, H, W] with 2 cache frames and pads of 1."""
    T, HW = 21, H * W
    return (C, 2 + T, H + 2, W + 2, 2, T, H, W, C, 0, 1, lo_w,
            C * T * HW, T * HW, HW, W, 1, C * 2 * HW, 2 * HW, HW, W, 1)


def aot_causal_conv3d_cat_pad(platform: str = "cuda"):
    """Wan VAE 3x3x3 causal conv at 720p: contiguous [1, C, 21, H, W] + 2 cache frames (the
    word kernel, 16-bit; the contiguous flat kernel; the tile kernel for strided views) and
    channels_last_3d C 96..384 (the flat row kernel; the tile kernel for other strides)."""
    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for dt, nm in names.items():
        ptrs = {"X": f"*{nm}", "CACHE": f"*{nm}", "OUT": f"*{nm}"}
        for cl, (A, N) in ((False, (242, 418)), (True, (418, 96)), (True, (210, 384))):
            cfg = CopyConfig.from_heuristic(A, N, dt.itemsize, platform, _TILE_BYTES)
            sv = _store_vec(N, dt.itemsize)
            const = {"BA": cfg.bm, "BN": cfg.bn, "CL": cl, "SV": sv}
            out.append(_aot(_cat_pad_kernel, f"causal_conv3d_cat_pad[{nm},{'cl3d' if cl else 'contig'},A={A},N={N},"
                            f"ba={cfg.bm},bn={cfg.bn},sv={sv},w={cfg.num_warps}]",
                            {**ptrs, "xb": "i64", "cb": "i64"}, const, cfg.num_warps))
        for C, H, W in ((96, 240, 416), (384, 120, 208), (5, 6, 19)):
            geom_scalars = (2 + 1 + 0, H + 2, W + 2, C, 2, 1, H, W, C, 2, 1, 1,
                            H * W * C, 1, H * W * C, W * C, C, 2 * H * W * C, 1, H * W * C, W * C, C)
            _, const, warps, _ = _row_launch(True, (1, C, 3, H + 2, W + 2), geom_scalars, dt.itemsize, platform)
            out.append(_aot(_cat_pad_rows_kernel, f"causal_conv3d_cat_pad_rows[{nm},cl3d,C={C},W={W},"
                            f"block={const['BLOCK']},vec={const['VEC']},w={warps}]",
                            {**ptrs, "xb_v": "i64", "cb_v": "i64"}, const, warps))
        for C, H, W in ((96, 240, 416), (384, 120, 208)):
            shape = (1, C, 23, H + 2, W + 2)
            _, const, warps, _ = _flat_launch(False, shape, _wan_scalars(C, H, W), dt.itemsize, platform)
            out.append(_aot(_cat_pad_flat_kernel, f"causal_conv3d_cat_pad_flat[{nm},contig,C={C},W={W},"
                            f"block={const['BLOCK']},S={const['S']},vec={const['VEC']},w={warps}]",
                            {**ptrs, "INV_WO": "fp32"}, const, warps, divisible_by_16=("X", "CACHE", "OUT")))
        if dt.itemsize != 2:
            continue
        # the word kernel: the rule's builds (span) at Wan's pads and an even left pad, one of frame tiles
        for C, H, W, lo_w, span in ((96, 240, 416, 1, True), (384, 120, 208, 1, True), (96, 240, 416, 2, True),
                                    (384, 120, 208, 1, False)):
            shape = (1, C, 23, H + 2, W + 2)
            _, const, warps, _ = _words_launch(False, shape, _wan_scalars(C, H, W, lo_w), 2, platform, span=span)
            out.append(_aot(_cat_pad_words_kernel, f"causal_conv3d_cat_pad_words[{nm},contig,C={C},W={W},"
                            f"lo_w={lo_w},rows={const['ROWS']},block_w={const['BLOCK_W']},span={int(span)},w={warps}]",
                            ptrs, const, warps, divisible_by_16=("X", "CACHE", "OUT", "xc_w", "xt_w", "cc_w", "ct_w"),
                            narrow_loads="32-bit words: padded rows (418 elements at Wan) allow no wider stores"))
    return out
