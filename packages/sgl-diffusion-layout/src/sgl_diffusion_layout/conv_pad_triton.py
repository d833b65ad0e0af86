"""Triton backend of ``causal_conv3d_cat_pad``: ``F.pad(torch.cat([cache_x, x], dim=2), padding)``
in one pass, written in x's memory format.

Two kernels, one launch rule (``_ROW_RULE``, ``_TILE_BYTES``) in data:

``_cat_pad_rows_kernel`` (channels_last_3d x and a cache whose ``(w, c)`` rows are packed,
the Wan VAE case): every output row ``(b, t, h)`` is ``[LO_W*C zeros] + one packed input
row of W*C elements + [zeros]``, or a whole zero row: a flat 1-D copy with a shift of
``LO_W*C`` elements. The grid is 1-D, a row's tiles adjacent (programs that run side by
side stream neighbouring bytes); offsets are passed in units of ``VEC`` elements (16 bytes
when ``C`` and every row stride allow it) so that loads and stores are 16-byte vectors.

``_cat_pad_kernel`` (everything else: contiguous x, strided views): one program per
output row tile (contiguous: row ``(b, c, t)``, a ``[BA, BN]`` tile of ``(h, w)``;
channels_last_3d: ``(b, t, h)``, a tile of ``(w, c)``), on a 1-D grid with a row's tiles
adjacent, the row decomposed once per program.

In both the source frame (cache or x, or padding) is a per-program scalar choice; padded
positions are written as zeros in the same pass. Negative padding crops, as in ``F.pad``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2, tensor_platform

from .copy_triton import CopyConfig

_TILE_BYTES = 8192  # 16 KB tiles spilled registers on sm_90 (two address tensors per element)
# the flat row kernel: bytes per program and per thread (the activation kernels' H200 sweep:
# 2 KB per program, 32 B per thread streamed at 96-98% of copy where 16 KB tiles reached 90%)
_ROW_RULE = {"tile_bytes": 2048, "thread_bytes": 32}


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
    v = tl.load(src + s, mask=(s >= 0) & (s < wc) & (e < L), other=0.0, eviction_policy="evict_first")
    tl.store(OUT + r * L + e, v, mask=e < L)


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
        v = tl.load(src_a + (nn * sn)[None, :], mask=a_ok[:, None] & n_ok[None, :], other=0.0,
                    eviction_policy="evict_first")
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
    warp = 64 if plat == "hip" else 32
    block = _ROW_RULE["tile_bytes"] // elem_bytes
    L = A * N
    block = min(block, max(vec, next_pow2(L)))
    warps = max(1, min(8, block * elem_bytes // (_ROW_RULE["thread_bytes"] * warp)))
    nt = triton.cdiv(L, block)
    rows = shape[0] * R1 * R2
    args = (nt, R1, R2, TC, TX, HI, LO_T, LO_H, LO_W * CI // vec, WI * CI // vec, L // vec,
            xb // vec, xt // vec, xh // vec, cb // vec, ct // vec, ch // vec)
    return (rows * nt,), {"BLOCK": block, "VEC": vec}, warps, args


def _prep(geom, x, cache_x):
    cl, shape, scalars, (R1, R2, A, N) = geom
    plat = tensor_platform(x.device)
    rows = shape[0] * R1 * R2
    launch = None
    args = scalars
    if rows and A and N:
        fast = _row_launch(cl, shape, scalars, x.element_size(), plat)
        if fast is not None:
            grid, const, warps, args = fast
            launch = PreparedLaunch(_cat_pad_rows_kernel, grid, const, device=x.device, n_ptrs=3,
                                    options={"num_warps": warps, "num_stages": 1})
        else:
            cfg = CopyConfig.from_heuristic(A, N, x.element_size(), plat, _TILE_BYTES)
            nta = triton.cdiv(A, cfg.bm)
            sv = _store_vec(N, x.element_size())
            args = (R1, R2, A, N // sv, nta, *scalars[4:])
            launch = PreparedLaunch(_cat_pad_kernel, (rows * nta,),
                                    {"BA": cfg.bm, "BN": cfg.bn, "CL": cl, "SV": sv}, device=x.device, n_ptrs=3,
                                    options=cfg.launch_options())
    fmt = torch.channels_last_3d if cl else torch.contiguous_format
    dtype, device = x.dtype, x.device
    has_cache = cache_x is not None

    def run(x, cache_x, padding):
        out = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        if launch is not None:
            launch(x, cache_x if has_cache else x, out, *args)
        return out

    return run


def causal_conv3d_cat_pad(x, cache_x, padding, *, geom):
    return _prep(geom, x, cache_x)(x, cache_x, padding)


causal_conv3d_cat_pad.prepare = _prep


def aot_causal_conv3d_cat_pad(platform: str = "cuda"):
    """Wan VAE 3x3x3 causal conv at 720p: contiguous [1, 96, T, 240, 416] (the tile kernel)
    and channels_last_3d C 96..384 (the flat row kernel; the tile kernel for other strides)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for dt, nm in names.items():
        for cl, (A, N) in ((False, (242, 418)), (True, (418, 96)), (True, (210, 384))):
            cfg = CopyConfig.from_heuristic(A, N, dt.itemsize, platform, _TILE_BYTES)
            sig = {"X": f"*{nm}", "CACHE": f"*{nm}", "OUT": f"*{nm}"}
            for n in ("R1", "R2", "A", "N_S", "NTA", "TC", "TX", "HI", "WI", "CI", "LO_T", "LO_H", "LO_W",
                      "xc", "xt", "xh", "xw", "cc", "ct", "ch", "cw"):
                sig[n] = "i32"
            sig.update({"xb": "i64", "cb": "i64", "BA": "constexpr", "BN": "constexpr", "CL": "constexpr",
                        "SV": "constexpr"})
            sig = {n: sig[n] for n in _cat_pad_kernel.arg_names}
            sv = _store_vec(N, dt.itemsize)
            out.append(AotVariant(
                name=f"causal_conv3d_cat_pad[{nm},{'cl3d' if cl else 'contig'},A={A},N={N},ba={cfg.bm},"
                     f"bn={cfg.bn},sv={sv},w={cfg.num_warps}]",
                kernel=_cat_pad_kernel, signature=sig,
                constexprs={"BA": cfg.bm, "BN": cfg.bn, "CL": cl, "SV": sv},
                num_warps=cfg.num_warps, options={"enable_fp_fusion": False},
            ))
        for C, H, W in ((96, 240, 416), (384, 120, 208), (5, 6, 19)):
            geom_scalars = (2 + 1 + 0, H + 2, W + 2, C, 2, 1, H, W, C, 2, 1, 1,
                            H * W * C, 1, H * W * C, W * C, C, 2 * H * W * C, 1, H * W * C, W * C, C)
            _, const, warps, _ = _row_launch(True, (1, C, 3, H + 2, W + 2), geom_scalars, dt.itemsize, platform)
            sig = {"X": f"*{nm}", "CACHE": f"*{nm}", "OUT": f"*{nm}"}
            for n in ("NT", "TO", "HO", "TC", "TX", "HI", "LO_T", "LO_H", "SHIFT_V", "WC_V", "L_V",
                      "xt_v", "xh_v", "ct_v", "ch_v"):
                sig[n] = "i32"
            sig.update({"xb_v": "i64", "cb_v": "i64", "BLOCK": "constexpr", "VEC": "constexpr"})
            sig = {n: sig[n] for n in _cat_pad_rows_kernel.arg_names}
            out.append(AotVariant(
                name=f"causal_conv3d_cat_pad_rows[{nm},cl3d,C={C},W={W},block={const['BLOCK']},"
                     f"vec={const['VEC']},w={warps}]",
                kernel=_cat_pad_rows_kernel, signature=sig, constexprs=const,
                num_warps=warps, options={"enable_fp_fusion": False},
            ))
    return out
