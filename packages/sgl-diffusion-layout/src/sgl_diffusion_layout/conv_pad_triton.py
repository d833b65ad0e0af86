"""Triton backend of ``causal_conv3d_cat_pad``: ``F.pad(torch.cat([cache_x, x], dim=2), padding)``
in one pass, written in x's memory format.

One program per output row (contiguous: ``(b, c, t)``, a ``[BA, BN]`` tile of ``(h, w)``;
channels_last_3d: ``(b, t, h)``, a tile of ``(w, c)``), decomposed once per program. The
source frame (cache or x, or padding) is a per-program scalar choice; padded positions
are written as zeros in the same pass. Negative padding crops, as in ``F.pad``.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform

from .copy_triton import CopyConfig

_TILE_BYTES = 8192  # 16 KB tiles spilled registers on sm_90 (two address tensors per element)


@triton.jit(do_not_specialize=["R1", "R2", "A", "TC", "TX", "HI", "WI"])
def _cat_pad_kernel(
    X, CACHE, OUT,
    R1, R2, A, N,
    TC, TX, HI, WI, CI,
    LO_T, LO_H, LO_W,
    xb, xc, xt, xh, xw,
    cb, cc, ct, ch, cw,
    BA: tl.constexpr, BN: tl.constexpr, CL: tl.constexpr,
):
    r = tl.program_id(0).to(tl.int64)
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
    a = tl.program_id(1).to(tl.int64) * BA + tl.arange(0, BA)
    out_row = OUT + r * A * N
    if CL:
        hs = h_o - LO_H
        h_ok = (hs >= 0) & (hs < HI)
        from_c = from_c & h_ok
        from_x = from_x & h_ok
        hs = tl.where(h_ok, hs, 0)
        ws = a - LO_W
        a_ok = (ws >= 0) & (ws < WI) & (a < A)
        ws = tl.where(a_ok, ws, 0)
        x_a = X + (b * xb + tx * xt + hs * xh) + ws[:, None] * xw
        c_a = CACHE + (b * cb + tc * ct + hs * ch) + ws[:, None] * cw
    else:
        hs = a - LO_H
        a_ok = (hs >= 0) & (hs < HI) & (a < A)
        hs = tl.where(a_ok, hs, 0)
        x_a = X + (b * xb + c_o * xc + tx * xt) + hs[:, None] * xh
        c_a = CACHE + (b * cb + c_o * cc + tc * ct) + hs[:, None] * ch
    # per-program source choice folded into the row mask (a vector op, no scalar-vector mix)
    ax_ok = a_ok & (a < tl.where(from_x, A, 0))
    ac_ok = a_ok & (a < tl.where(from_c, A, 0))
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        st_mask = (a < A)[:, None] & (n < N)[None, :]
        if CL:
            n_ok = n < CI
            nn = n.to(tl.int64)  # int64 products: any view strides
        else:
            wsn = n - LO_W
            n_ok = (wsn >= 0) & (wsn < WI)
            nn = tl.where(n_ok, wsn, 0).to(tl.int64)
        xn = nn * (xc if CL else xw)
        cn = nn * (cc if CL else cw)
        # one of the two loads reads memory (the frame's source); padding reads nothing
        vx = tl.load(x_a + xn[None, :], mask=ax_ok[:, None] & n_ok[None, :], other=0.0,
                     eviction_policy="evict_first")
        vc = tl.load(c_a + cn[None, :], mask=ac_ok[:, None] & n_ok[None, :], other=0.0,
                     eviction_policy="evict_first")
        tl.store(out_row + a[:, None] * N + n[None, :], tl.where(from_c, vc, vx), mask=st_mask)


def _prep(geom, x, cache_x):
    cl, shape, scalars, (R1, R2, A, N) = geom
    plat = tensor_platform(x.device)
    cfg = CopyConfig.from_heuristic(A, N, x.element_size(), plat, _TILE_BYTES)
    rows = shape[0] * R1 * R2
    launch = None
    if rows and A and N:
        launch = PreparedLaunch(_cat_pad_kernel, (rows, triton.cdiv(A, cfg.bm)),
                                {"BA": cfg.bm, "BN": cfg.bn, "CL": cl}, device=x.device, n_ptrs=3,
                                options=cfg.launch_options())
    fmt = torch.channels_last_3d if cl else torch.contiguous_format
    dtype, device = x.dtype, x.device
    has_cache = cache_x is not None

    def run(x, cache_x, padding):
        out = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        if launch is not None:
            launch(x, cache_x if has_cache else x, out, *scalars)
        return out

    return run


def causal_conv3d_cat_pad(x, cache_x, padding, *, geom):
    return _prep(geom, x, cache_x)(x, cache_x, padding)


causal_conv3d_cat_pad.prepare = _prep


def aot_causal_conv3d_cat_pad(platform: str = "cuda"):
    """Wan VAE 3x3x3 causal conv at 720p: contiguous [1, 96, T, 240, 416] and channels_last_3d (C 96..384)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    for dt, nm in names.items():
        for cl, (A, N) in ((False, (242, 418)), (True, (418, 96)), (True, (210, 384))):
            cfg = CopyConfig.from_heuristic(A, N, dt.itemsize, platform, _TILE_BYTES)
            sig = {"X": f"*{nm}", "CACHE": f"*{nm}", "OUT": f"*{nm}"}
            for n in ("R1", "R2", "A", "N", "TC", "TX", "HI", "WI", "CI", "LO_T", "LO_H", "LO_W",
                      "xc", "xt", "xh", "xw", "cc", "ct", "ch", "cw"):
                sig[n] = "i32"
            sig.update({"xb": "i64", "cb": "i64", "BA": "constexpr", "BN": "constexpr", "CL": "constexpr"})
            out.append(AotVariant(
                name=f"causal_conv3d_cat_pad[{nm},{'cl3d' if cl else 'contig'},A={A},N={N},ba={cfg.bm},"
                     f"bn={cfg.bn},w={cfg.num_warps}]",
                kernel=_cat_pad_kernel, signature=sig, constexprs={"BA": cfg.bm, "BN": cfg.bn, "CL": cl},
                num_warps=cfg.num_warps, options={"enable_fp_fusion": False},
            ))
    return out
