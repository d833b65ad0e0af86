"""The binned path of ``rasterize`` (Triton; CUDA and ROCm, CPU under ``TRITON_INTERPRET=1``): faces sorted into
screen bins, then one program per bin resolves its pixels from its own face list, without atomics on pixels.

After ``rasterize_triton``'s setup (with ``BINNED``: per face, the screen-aligned ``TILE_W x TILE_H`` bins its
box overlaps) and a ``cumsum`` of those counts, nothing leaves the device:

1. ``_bin_kernel``, persistent, one lane per (face, bin) pair: the pair's face by binary search in the cumsum,
   ``slot = atomic_add(count[bin], 1)``, the face written to ``list[bin, slot]`` when ``slot < CAP``. A pair
   past the bin's capacity is never dropped: its face is marked for the per-face path (``OVER[face]`` = the
   tiles of its box), which ``rasterize_triton._raster_kernel`` then runs, with ``atomic_min`` into the key
   buffer, for the marked faces only (no work where nothing overflowed).
2. ``_bin_raster_kernel``, one program per bin, one lane per pixel: the running minimum key starts from the
   key buffer where the bin overflowed (the overflowed faces' fragments are there) and from "none"
   elsewhere, then takes ``CHUNK`` listed faces per step (their setups and pixel boxes gathered as vectors,
   the ``[CHUNK, pixels]`` fragment keys of the pixels inside each face's box reduced with a minimum over the
   faces), and the winner is resolved in place (``rasterize_triton._resolve_store``). A bin is wider than the
   boxes of its small faces; the pixels between are never tested, as on the per-face path and in the
   reference, where a sliver's rounded edge values could otherwise cover them.

The minimum of the keys ``ordered(z/w) << 32 | face`` is what the per-face path and the reference compute, in
any order, so the result is the same bit for bit; the fragment arithmetic is ``_edge_values``'s.
"""

from __future__ import annotations

import triton
import triton.language as tl

from sgl_diffusion_core import AotVariant

from .rasterize_triton import _NARROW, BIN_BLOCK, BIN_WARPS, TILE_H, TILE_W, _edge_values, _resolve_store


@triton.jit(do_not_specialize=["BF", "F", "NBX", "NBY", "CAP", "steps", "P"])
def _bin_kernel(CUM, FI, BCNT, BLIST, OVER, BF, F, NBX, NBY, CAP, steps, P,
                TILE_W: tl.constexpr, TILE_H: tl.constexpr, BLOCK: tl.constexpr):
    """Persistent over the (face, bin) pairs, ``BLOCK`` pairs per step; a lane finds its face by a
    ``steps``-step binary search in the cumsum of the per-face bin counts."""
    pid = tl.program_id(0)
    total = tl.load(CUM + BF - 1)
    lanes = tl.arange(0, BLOCK)
    start = (pid * BLOCK).to(tl.int64)
    step = P.to(tl.int64) * BLOCK
    for base in range(start, total, step):
        item = base + lanes
        m = item < total
        lo = tl.zeros([BLOCK], dtype=tl.int64)
        hi = tl.zeros([BLOCK], dtype=tl.int64) + (BF - 1)
        for _ in range(steps):  # the first face whose pairs end after `item`
            mid = (lo + hi) // 2
            left = tl.load(CUM + mid, mask=m, other=0) > item
            hi = tl.where(left, mid, hi)
            lo = tl.where(left, lo, tl.minimum(mid + 1, hi))
        f = lo
        fbeg = tl.load(CUM + tl.maximum(f - 1, 0), mask=m & (f > 0), other=0)
        local = (item - fbeg).to(tl.int32)
        xl = tl.load(FI + f * 4, mask=m, other=0)
        yl = tl.load(FI + f * 4 + 1, mask=m, other=0)
        xh = tl.load(FI + f * 4 + 2, mask=m, other=0)
        yh = tl.load(FI + f * 4 + 3, mask=m, other=0)
        bx0 = xl // TILE_W
        nbx = xh // TILE_W - bx0 + 1
        by = yl // TILE_H + local // nbx
        bx = bx0 + local % nbx
        f32 = f.to(tl.int32)  # B * F < 2**31 (the setup's lane index); a 32-bit division
        b = f32 // F
        face = f32 - b * F
        bin = (b.to(tl.int64) * NBY + by) * NBX + bx
        slot = tl.atomic_add(BCNT + bin, 1, mask=m)
        fits = m & (slot < CAP)
        tl.store(BLIST + bin * CAP + slot, face, mask=fits)
        tiles = ((xh - xl) // TILE_W + 1).to(tl.int64) * ((yh - yl) // TILE_H + 1)
        tl.store(OVER + f, tiles, mask=m & ~fits)


@triton.jit(do_not_specialize=["F", "H", "W", "NBX", "NBY", "CAP", "pr_sb", "pr_sh", "pr_sw"])
def _bin_raster_kernel(FS, BCNT, BLIST, PX, PY, PRIOR, KEYS, FID, BARY, DEPTH, F, H, W, NBX, NBY, CAP,
                       pr_sb, pr_sh, pr_sw, eps, HAS_PRIOR: tl.constexpr, NV: tl.constexpr,
                       TILE_W: tl.constexpr, TILE_H: tl.constexpr, CHUNK: tl.constexpr):
    """One program per bin (``TILE_W x TILE_H`` pixels), ``CHUNK`` listed faces per step."""
    pid = tl.program_id(0)
    per_image = NBX * NBY
    b = pid // per_image
    rem = pid - b * per_image
    by = rem // NBX
    bx = rem - by * NBX
    offs = tl.arange(0, TILE_W * TILE_H)
    row = by * TILE_H + offs // TILE_W
    col = bx * TILE_W + offs % TILE_W
    inside = (row < H) & (col < W)
    b64 = b.to(tl.int64)
    pix = b64 * H * W + row * W + col
    px = tl.load(PX + col, mask=inside, other=0.0)
    py = tl.load(PY + row, mask=inside, other=0.0)
    if HAS_PRIOR:
        pr = tl.load(PRIOR + b64 * pr_sb + row * pr_sh + col * pr_sw, mask=inside, other=0.0)
    n = tl.load(BCNT + pid)
    best = tl.full([TILE_W * TILE_H], 0x7FFFFFFFFFFFFFFF, tl.int64)
    if n > CAP:  # overflowed: the faces that did not fit were rasterized into KEYS
        best = tl.load(KEYS + pix, mask=inside, other=0x7FFFFFFFFFFFFFFF)
    listed = tl.minimum(n, CAP)
    lst = BLIST + pid.to(tl.int64) * CAP
    ks = tl.arange(0, CHUNK)
    for j in range(0, listed, CHUNK):
        fm = (j + ks) < listed
        face = tl.load(lst + j + ks, mask=fm, other=0)
        S = FS + (b64 * F + face) * 16
        # the pixels of the face's box only (clipped to the image; empty for a masked face): a bin also holds
        # pixels beyond it, where a sliver's edge values can round to "covered"; the per-face path and the
        # reference never test those. The box is packed in the setup's last two words (NFS).
        xs = tl.where(fm, tl.load(S + 14, mask=fm, other=0.0).to(tl.int32, bitcast=True), -1)  # -1: lo 65535, hi -1
        ys = tl.where(fm, tl.load(S + 15, mask=fm, other=0.0).to(tl.int32, bitcast=True), -1)
        xl = xs & 0xFFFF
        yl = ys & 0xFFFF
        boxed = (((col[None, :] - xl[:, None]).to(tl.uint32) <= ((xs >> 16) - xl).to(tl.uint32)[:, None])
                 & ((row[None, :] - yl[:, None]).to(tl.uint32) <= ((ys >> 16) - yl).to(tl.uint32)[:, None]))
        a0 = tl.load(S, mask=fm, other=0.0)[:, None]
        b0 = tl.load(S + 1, mask=fm, other=0.0)[:, None]
        c0 = tl.load(S + 2, mask=fm, other=0.0)[:, None]
        a1 = tl.load(S + 3, mask=fm, other=0.0)[:, None]
        b1 = tl.load(S + 4, mask=fm, other=0.0)[:, None]
        c1 = tl.load(S + 5, mask=fm, other=0.0)[:, None]
        a2 = tl.load(S + 6, mask=fm, other=0.0)[:, None]
        b2 = tl.load(S + 7, mask=fm, other=0.0)[:, None]
        c2 = tl.load(S + 8, mask=fm, other=0.0)[:, None]
        det = tl.load(S + 9, mask=fm, other=1.0)[:, None]
        sgn = tl.load(S + 10, mask=fm, other=0.0)[:, None]
        z0 = tl.load(S + 11, mask=fm, other=0.0)[:, None]
        z1 = tl.load(S + 12, mask=fm, other=0.0)[:, None]
        z2 = tl.load(S + 13, mask=fm, other=0.0)[:, None]
        q0, q1, q2, qs, num = _edge_values(a0, b0, c0, a1, b1, c1, a2, b2, c2, z0, z1, z2, px[None, :],
                                           py[None, :])
        cov = boxed & (q0 * sgn >= 0) & (q1 * sgn >= 0) & (q2 * sgn >= 0) & (qs != 0)
        depth = tl.math.div_rn(num, det) + 0.0
        cov = cov & (depth == depth)
        if HAS_PRIOR:
            cov = cov & ~(depth > pr[None, :] + eps)
        bits = depth.to(tl.int32, bitcast=True)
        key = ((bits ^ ((bits >> 31) & 0x7FFFFFFF)).to(tl.int64) << 32) | face.to(tl.int64)[:, None]
        key = tl.where(cov, key, 0x7FFFFFFFFFFFFFFF)
        best = tl.minimum(best, tl.min(key, axis=0))
    _resolve_store(best, pix, inside, b64, row, col, FS, PX, PY, FID, BARY, DEPTH, F, NV)


def bin_variants(prior: bool, nv: bool, with_binning: bool, chunk: int):
    """The AOT builds of the binned path's kernels: the binning kernel (``with_binning``) and the binned raster kernel
    with / without a depth prior, separate outputs / nvdiffrast layout, ``chunk`` faces per step."""
    out = []
    if with_binning:
        sig = {"CUM": "*i64", "FI": "*i32", "BCNT": "*i32", "BLIST": "*i32", "OVER": "*i64",
               **{n: "i32" for n in ("BF", "F", "NBX", "NBY", "CAP", "steps", "P")},
               "TILE_W": "constexpr", "TILE_H": "constexpr", "BLOCK": "constexpr"}
        out.append(AotVariant(
            name=f"rasterize_bin[tile={TILE_W}x{TILE_H},block={BIN_BLOCK}]", kernel=_bin_kernel, signature=sig,
            constexprs={"TILE_W": TILE_W, "TILE_H": TILE_H, "BLOCK": BIN_BLOCK}, num_warps=4,
            options={"enable_fp_fusion": False}, divisible_by_16=("CUM", "FI", "BCNT", "BLIST", "OVER"),
            narrow_loads=_NARROW))
    sig = {"FS": "*fp32", "BCNT": "*i32", "BLIST": "*i32", "PX": "*fp32", "PY": "*fp32", "PRIOR": "*fp32",
           "KEYS": "*i64", "FID": "*i32" if not nv else "*fp32", "BARY": "*fp32", "DEPTH": "*fp32",
           **{n: "i32" for n in ("F", "H", "W", "NBX", "NBY", "CAP", "pr_sb", "pr_sh", "pr_sw")}, "eps": "fp32",
           "HAS_PRIOR": "constexpr", "NV": "constexpr", "TILE_W": "constexpr", "TILE_H": "constexpr",
           "CHUNK": "constexpr"}
    out.append(AotVariant(
        name=f"rasterize_bin_raster[prior={int(prior)},nv={int(nv)},tile={TILE_W}x{TILE_H},chunk={chunk},"
             f"w={BIN_WARPS}]",
        kernel=_bin_raster_kernel, signature=sig,
        constexprs={"HAS_PRIOR": prior, "NV": nv, "TILE_W": TILE_W, "TILE_H": TILE_H, "CHUNK": chunk},
        num_warps=BIN_WARPS, options={"enable_fp_fusion": False},
        divisible_by_16=("FS", "BCNT", "BLIST", "PX", "PY", "PRIOR", "KEYS", "FID", "BARY", "DEPTH"),
        narrow_loads=_NARROW))
    return out
