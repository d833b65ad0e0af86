"""Triton kernels of ``rasterize`` and ``uv_rasterize`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

Two paths: the per-face path, which ``RasterConfig.from_heuristic`` picks, and the binned path, which only
``backend="triton_binned"`` runs (``triton_perface`` forces the first); neither synchronizes with the host.

The per-face path, three launches and one ``cumsum``:

1. ``_setup_kernel``, one lane per (sample, face): the rows of adj(M), det, sign, z, validity and a
   pixel bounding box (one pixel wider than the projected triangle, clipped to the image); the
   number of ``TILE_W x TILE_H`` tiles the box spans (0 for a skipped face). A face with an
   index outside ``[0, N)`` is skipped: its vertices are never read.
2. ``torch.cumsum`` of the tile counts: work item ``i`` is one tile of one face.
3. ``_raster_kernel``, persistent: program ``p`` of ``P`` takes a contiguous slice of the work items,
   finds its first face by binary search in the cumsum and walks forward. Per item, one lane per
   pixel of the tile: the homogeneous edge values, coverage, depth, the optional depth prior, the
   64-bit key ``ordered(z/w) << 32 | face``; a plain load of the pixel's key skips fragments that
   already lose, the rest go through ``atomic_min``. The result is the minimum key whatever the
   order, so it is deterministic.
4. ``_resolve_kernel``, one lane per pixel: the winner's barycentrics and z/w recomputed from its setup.

The binned path (``rasterize_bins_triton``): the same setup counting screen-aligned bins instead of
tiles, a binning kernel that writes per-bin face lists, the per-face raster kernel for the faces that
did not fit a full bin (nothing to do when none), then one program per bin that reduces its faces'
keys in registers and resolves in place: no pixel atomics and no resolve pass.

Why tiles of the bounding box as work items: a thread (or program) per face leaves the few
large faces of a mesh running long after the small ones finish; here a large face is many
items spread over all programs and the load is even. Its weak side is many small faces: a program
walks its items one after another. Cost model at 2048^2 (the H200 targets of 0.5 / 1 / 3 ms for
40k / 200k / 1M faces): the key buffer is 32 MiB (a fill and one read in the resolve), fragments
are about H*W times the depth complexity atomics, minus the early rejects; per face the setup reads
12 floats and writes 22 words. The binned path spends one atomic per (face, bin) pair and evaluates
every pixel of a bin against each of its faces, 16 faces per step (8 on AMD). Measured on an H100 at 2048^2
(``docs/benchmarks/rasterize_bench_h100.json``), the per-face path is the faster one at every size there.

Numerics match the reference bit for bit: the same fp32 operations in the same order, built without
FMA contraction (``enable_fp_fusion=False``) and with correctly rounded divisions (``div_rn``); the
pixel centres come from the same fp64-rounded tables.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform

from ._mesh import pixel_centres, uv_to_clip

# why the compile lanes see no 128-bit loads here (AotVariant.narrow_loads)
_NARROW = "records gathered at data-dependent addresses (vertex and face indices, bin lists), at runtime strides"
KEY_NONE = torch.iinfo(torch.int64).max
# words of one face's setup: fp32 A0 B0 C0 A1 B1 C1 A2 B2 C2 det sgn z0 z1 z2, then the pixel box as two int32 words
# (bit patterns in the fp32 tensor) x_lo | x_hi << 16 and y_lo | y_hi << 16 (sides at most 16384 pixels)
NFS = 16


@triton.jit(do_not_specialize=["BF", "F", "N", "H", "W", "p_sb", "p_sn", "p_sc", "t_sf", "t_sk"])
def _setup_kernel(POS, TRI, FS, FI, CNT, BF, F, N, H, W, p_sb, p_sn, p_sc, t_sf, t_sk, half_w, half_h,
                  FLIP: tl.constexpr, TILE_W: tl.constexpr, TILE_H: tl.constexpr, BINNED: tl.constexpr,
                  BLOCK: tl.constexpr):
    """One lane per (sample, face); long: the whole per-face setup is one pass over the face's vertices.
    ``CNT``: the ``TILE_W x TILE_H`` tiles of the face's box (per-face path), or with ``BINNED`` the
    screen-aligned bins of that size the box overlaps."""
    offs = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    m = offs < BF
    b = offs // F
    f = offs - b * F
    i0 = tl.load(TRI + f * t_sf, mask=m, other=0)
    i1 = tl.load(TRI + f * t_sf + t_sk, mask=m, other=0)
    i2 = tl.load(TRI + f * t_sf + 2 * t_sk, mask=m, other=0)
    ok = m & (i0 >= 0) & (i0 < N) & (i1 >= 0) & (i1 < N) & (i2 >= 0) & (i2 < N)
    base = POS + b.to(tl.int64) * p_sb
    v0 = base + tl.where(ok, i0, 0).to(tl.int64) * p_sn
    v1 = base + tl.where(ok, i1, 0).to(tl.int64) * p_sn
    v2 = base + tl.where(ok, i2, 0).to(tl.int64) * p_sn
    x0 = tl.load(v0, mask=ok, other=0.0)
    y0 = tl.load(v0 + p_sc, mask=ok, other=0.0)
    z0 = tl.load(v0 + 2 * p_sc, mask=ok, other=0.0)
    w0 = tl.load(v0 + 3 * p_sc, mask=ok, other=0.0)
    x1 = tl.load(v1, mask=ok, other=0.0)
    y1 = tl.load(v1 + p_sc, mask=ok, other=0.0)
    z1 = tl.load(v1 + 2 * p_sc, mask=ok, other=0.0)
    w1 = tl.load(v1 + 3 * p_sc, mask=ok, other=0.0)
    x2 = tl.load(v2, mask=ok, other=0.0)
    y2 = tl.load(v2 + p_sc, mask=ok, other=0.0)
    z2 = tl.load(v2 + 2 * p_sc, mask=ok, other=0.0)
    w2 = tl.load(v2 + 3 * p_sc, mask=ok, other=0.0)
    # rows of adj(M): r0 = v1 x v2, r1 = v2 x v0, r2 = v0 x v1 over (x, y, w)
    a0 = y1 * w2 - w1 * y2
    b0 = w1 * x2 - x1 * w2
    c0 = x1 * y2 - y1 * x2
    a1 = y2 * w0 - w2 * y0
    b1 = w2 * x0 - x2 * w0
    c1 = x2 * y0 - y2 * x0
    a2 = y0 * w1 - w0 * y1
    b2 = w0 * x1 - x0 * w1
    c2 = x0 * y1 - y0 * x1
    d0 = (x0 * a0 + y0 * b0) + w0 * c0
    d1 = (x1 * a1 + y1 * b1) + w1 * c1
    d2 = (x2 * a2 + y2 * b2) + w2 * c2
    same = ((d0 > 0) & (d1 > 0) & (d2 > 0)) | ((d0 < 0) & (d1 < 0) & (d2 < 0))
    ok = ok & (w0 > 0) & (w1 > 0) & (w2 > 0) & same
    ws0 = tl.where(ok, w0, 1.0)
    ws1 = tl.where(ok, w1, 1.0)
    ws2 = tl.where(ok, w2, 1.0)
    c_0 = (x0 / ws0 + 1.0) * half_w - 0.5
    c_1 = (x1 / ws1 + 1.0) * half_w - 0.5
    c_2 = (x2 / ws2 + 1.0) * half_w - 0.5
    if FLIP:
        r_0 = (1.0 - y0 / ws0) * half_h - 0.5
        r_1 = (1.0 - y1 / ws1) * half_h - 0.5
        r_2 = (1.0 - y2 / ws2) * half_h - 0.5
    else:
        r_0 = (y0 / ws0 + 1.0) * half_h - 0.5
        r_1 = (y1 / ws1 + 1.0) * half_h - 0.5
        r_2 = (y2 / ws2 + 1.0) * half_h - 0.5
    wf = W * 1.0
    hf = H * 1.0
    lo_c = tl.floor(tl.minimum(tl.maximum(tl.minimum(tl.minimum(c_0, c_1), c_2), -2.0), wf + 1.0)) - 1.0
    hi_c = tl.ceil(tl.minimum(tl.maximum(tl.maximum(tl.maximum(c_0, c_1), c_2), -2.0), wf + 1.0)) + 1.0
    lo_r = tl.floor(tl.minimum(tl.maximum(tl.minimum(tl.minimum(r_0, r_1), r_2), -2.0), hf + 1.0)) - 1.0
    hi_r = tl.ceil(tl.minimum(tl.maximum(tl.maximum(tl.maximum(r_0, r_1), r_2), -2.0), hf + 1.0)) + 1.0
    ok = ok & (lo_c <= wf - 1.0) & (hi_c >= 0.0) & (lo_r <= hf - 1.0) & (hi_r >= 0.0)
    xl = tl.where(ok, tl.maximum(lo_c, 0.0), 0.0).to(tl.int32)
    yl = tl.where(ok, tl.maximum(lo_r, 0.0), 0.0).to(tl.int32)
    xh = tl.where(ok, tl.minimum(hi_c, wf - 1.0), 0.0).to(tl.int32)
    yh = tl.where(ok, tl.minimum(hi_r, hf - 1.0), 0.0).to(tl.int32)
    if BINNED:
        n = (xh // TILE_W - xl // TILE_W + 1).to(tl.int64) * (yh // TILE_H - yl // TILE_H + 1)
    else:
        n = ((xh - xl) // TILE_W + 1).to(tl.int64) * ((yh - yl) // TILE_H + 1)
    tl.store(CNT + offs, tl.where(ok, n, 0), mask=m)
    o = offs.to(tl.int64)
    tl.store(FI + o * 4, xl, mask=m)
    tl.store(FI + o * 4 + 1, yl, mask=m)
    tl.store(FI + o * 4 + 2, xh, mask=m)
    tl.store(FI + o * 4 + 3, yh, mask=m)
    s = FS + o * 16
    tl.store(s, a0, mask=m)
    tl.store(s + 1, b0, mask=m)
    tl.store(s + 2, c0, mask=m)
    tl.store(s + 3, a1, mask=m)
    tl.store(s + 4, b1, mask=m)
    tl.store(s + 5, c1, mask=m)
    tl.store(s + 6, a2, mask=m)
    tl.store(s + 7, b2, mask=m)
    tl.store(s + 8, c2, mask=m)
    tl.store(s + 9, d0, mask=m)
    tl.store(s + 10, tl.where(d0 > 0, 1.0, -1.0), mask=m)
    tl.store(s + 11, z0, mask=m)
    tl.store(s + 12, z1, mask=m)
    tl.store(s + 13, z2, mask=m)
    tl.store(s + 14, (xl | (xh << 16)).to(tl.float32, bitcast=True), mask=m)
    tl.store(s + 15, (yl | (yh << 16)).to(tl.float32, bitcast=True), mask=m)


@triton.jit
def _load_setup(S, mask):
    """The face setups ``(a0, b0, c0, a1, b1, c1, a2, b2, c2, det, z0, z1, z2)`` at the block of pointers ``S``
    (the resolve kernel's gather; det 1 where masked)."""
    return (tl.load(S, mask=mask, other=0.0), tl.load(S + 1, mask=mask, other=0.0),
            tl.load(S + 2, mask=mask, other=0.0), tl.load(S + 3, mask=mask, other=0.0),
            tl.load(S + 4, mask=mask, other=0.0), tl.load(S + 5, mask=mask, other=0.0),
            tl.load(S + 6, mask=mask, other=0.0), tl.load(S + 7, mask=mask, other=0.0),
            tl.load(S + 8, mask=mask, other=0.0), tl.load(S + 9, mask=mask, other=1.0),
            tl.load(S + 11, mask=mask, other=0.0), tl.load(S + 12, mask=mask, other=0.0),
            tl.load(S + 13, mask=mask, other=0.0))


@triton.jit
def _load_face(S):
    """One face's setup as scalars (the raster kernel's per-item read), in ``_load_setup``'s order."""
    return (tl.load(S), tl.load(S + 1), tl.load(S + 2), tl.load(S + 3), tl.load(S + 4), tl.load(S + 5),
            tl.load(S + 6), tl.load(S + 7), tl.load(S + 8), tl.load(S + 9), tl.load(S + 11), tl.load(S + 12),
            tl.load(S + 13))


@triton.jit
def _edge_values(a0, b0, c0, a1, b1, c1, a2, b2, c2, z0, z1, z2, px, py):
    """``(q0, q1, q2, qs, num)``: the homogeneous edge values of pixels ``(px, py)``, their sum and ``q . z``."""
    q0 = (a0 * px + b0 * py) + c0
    q1 = (a1 * px + b1 * py) + c1
    q2 = (a2 * px + b2 * py) + c2
    qs = (q0 + q1) + q2
    num = (q0 * z0 + q1 * z1) + q2 * z2
    return q0, q1, q2, qs, num


@triton.jit(do_not_specialize=["BF", "F", "H", "W", "pr_sb", "pr_sh", "pr_sw", "P"])
def _raster_kernel(FS, FI, CUM, PX, PY, PRIOR, KEYS, BF, F, H, W, pr_sb, pr_sh, pr_sw, eps, P,
                   HAS_PRIOR: tl.constexpr, TILE_W: tl.constexpr, TILE_H: tl.constexpr):
    """Persistent: a contiguous slice of the (face, tile) work items per program; long: the binary search,
    the walk over faces and the per-pixel fragment test are one loop nest."""
    pid = tl.program_id(0)
    total = tl.load(CUM + BF - 1)
    chunk = (total + P - 1) // P
    start = pid * chunk
    end = tl.minimum(start + chunk, total)
    lo = pid * 0
    hi = BF - 1
    while lo < hi:  # the first face whose items end after `start`
        mid = (lo + hi) // 2
        left = tl.load(CUM + mid) > start
        hi = tl.where(left, mid, hi)
        lo = tl.where(left, lo, mid + 1)
    f = lo
    fend = tl.load(CUM + f)
    fbeg = tl.where(f > 0, tl.load(CUM + tl.maximum(f - 1, 0)), 0)
    offs = tl.arange(0, TILE_W * TILE_H)
    dx = offs % TILE_W
    dy = offs // TILE_W
    for item in range(start, end):
        while item >= fend:
            f += 1
            fbeg = fend
            fend = tl.load(CUM + f)
        local = (item - fbeg).to(tl.int32)
        xl = tl.load(FI + f.to(tl.int64) * 4)
        yl = tl.load(FI + f.to(tl.int64) * 4 + 1)
        xh = tl.load(FI + f.to(tl.int64) * 4 + 2)
        yh = tl.load(FI + f.to(tl.int64) * 4 + 3)
        ntx = (xh - xl) // TILE_W + 1
        ty = local // ntx
        col = xl + (local - ty * ntx) * TILE_W + dx
        row = yl + ty * TILE_H + dy
        inside = (col <= xh) & (row <= yh)
        px = tl.load(PX + col, mask=inside, other=0.0)
        py = tl.load(PY + row, mask=inside, other=0.0)
        S = FS + f.to(tl.int64) * 16
        sgn = tl.load(S + 10)
        a0, b0, c0, a1, b1, c1, a2, b2, c2, det, z0, z1, z2 = _load_face(S)
        q0, q1, q2, qs, num = _edge_values(a0, b0, c0, a1, b1, c1, a2, b2, c2, z0, z1, z2, px, py)
        cov = inside & (q0 * sgn >= 0) & (q1 * sgn >= 0) & (q2 * sgn >= 0) & (qs != 0)
        depth = tl.math.div_rn(num, det) + 0.0
        cov = cov & (depth == depth)
        b = f // F
        face = f - b * F
        if HAS_PRIOR:
            pr = tl.load(PRIOR + b.to(tl.int64) * pr_sb + row * pr_sh + col * pr_sw, mask=cov, other=0.0)
            cov = cov & ~(depth > pr + eps)
        bits = depth.to(tl.int32, bitcast=True)
        key = ((bits ^ ((bits >> 31) & 0x7FFFFFFF)).to(tl.int64) << 32) | face.to(tl.int64)
        pix = b.to(tl.int64) * H * W + row * W + col
        cur = tl.load(KEYS + pix, mask=cov, other=0)
        cov = cov & (key < cur)
        tl.atomic_min(KEYS + pix, key, mask=cov)


@triton.jit
def _resolve_store(key, offs, m, b, row, col, FS, PX, PY, FID, BARY, DEPTH, F, NV: tl.constexpr):
    """The pixels ``offs`` (sample ``b``, ``row``, ``col``; ``m`` the valid lanes) from their minimum keys: the
    winning face's barycentrics and z/w, or the background (shared by the resolve and the binned kernel)."""
    hit = m & (key != 0x7FFFFFFFFFFFFFFF)
    face = tl.where(hit, key & 0xFFFFFFFF, 0)
    px = tl.load(PX + col, mask=m, other=0.0)
    py = tl.load(PY + row, mask=m, other=0.0)
    a0, b0, c0, a1, b1, c1, a2, b2, c2, det, z0, z1, z2 = _load_setup(FS + (b * F + face) * 16, hit)
    q0, q1, q2, qs, num = _edge_values(a0, b0, c0, a1, b1, c1, a2, b2, c2, z0, z1, z2, px, py)
    qs = tl.where(hit, qs, 1.0)
    u = tl.where(hit, tl.math.div_rn(q0, qs), 0.0)
    v = tl.where(hit, tl.math.div_rn(q1, qs), 0.0)
    t = tl.where(hit, tl.math.div_rn(q2, qs), 0.0)
    depth = tl.math.div_rn(num, det) + 0.0
    if NV:
        tl.store(DEPTH + offs * 4, u, mask=m)
        tl.store(DEPTH + offs * 4 + 1, v, mask=m)
        tl.store(DEPTH + offs * 4 + 2, tl.where(hit, depth, 0.0), mask=m)
        tl.store(DEPTH + offs * 4 + 3, tl.where(hit, (face + 1).to(tl.float32), 0.0), mask=m)
    else:
        tl.store(FID + offs, tl.where(hit, face + 1, 0).to(tl.int32), mask=m)
        tl.store(BARY + offs * 3, u, mask=m)
        tl.store(BARY + offs * 3 + 1, v, mask=m)
        tl.store(BARY + offs * 3 + 2, t, mask=m)
        tl.store(DEPTH + offs, tl.where(hit, depth, float("inf")), mask=m)


@triton.jit(do_not_specialize=["n_pix", "F", "H", "W"])
def _resolve_kernel(KEYS, FS, PX, PY, FID, BARY, DEPTH, n_pix, F, H, W, NV: tl.constexpr, BLOCK: tl.constexpr):
    """One lane per pixel: the winning face's barycentrics and z/w, or the background."""
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n_pix
    key = tl.load(KEYS + offs, mask=m, other=0x7FFFFFFFFFFFFFFF)
    hw = H * W
    b = offs // hw
    rem = offs - b * hw
    row = rem // W
    col = rem - row * W
    _resolve_store(key, offs, m, b, row, col, FS, PX, PY, FID, BARY, DEPTH, F, NV)


# Launch settings of the per-face path: 128 faces per setup program, 8x8-pixel tiles on one warp (two pixels per
# lane on NVIDIA, one wavefront of 64 lanes on AMD), 64 persistent programs per multiprocessor, 256 pixels per
# resolve program with 4 warps. Why so many programs: a program's work items are a chain of dependent loads
# (face record, pixel keys, atomic), so the kernel is bound by memory latency, not bandwidth, and more programs
# in flight hide it. Swept on an H100 at 2048^2 over tiles 8x4 / 8x8 / 16x8 / 16x16, 1-4 warps and 8-64 programs
# per multiprocessor (spheres of 40k / 200k / 1M faces): 8 programs of 8x8 on 2 warps took 544 / 992 / 2616 us,
# 64 programs of 8x8 on one warp 269 / 461 / 1109 us, within 3% of the fastest setting at each size (16x16 tiles
# on 4 warps took 262 / 448 us at 40k / 200k but 1617 at 1M; docs/benchmarks/rasterize_sweep_h100.json).
SETUP_BLOCK = 128
TILE_W = 8
TILE_H = 8
RASTER_WARPS = 1
PROGRAMS_PER_SM = 64
RESOLVE_BLOCK = 256
# the binned path (rasterize_bins_triton): 8x8-pixel bins, 16 faces per step over 4 warps (8 fragments per
# thread) on NVIDIA, 8 on AMD (with 16, the builds for gfx942 / gfx950 need more than the 106 scalar registers a
# wave has and spill them), 256 (face, bin) pairs per step of the binning kernel
BIN_CHUNK = {"cuda": 16, "hip": 8}
BIN_WARPS = 4
BIN_BLOCK = 256
# under the interpreter (CPU tests) each work item costs host time, so tiles and bins are 16x16 there; the
# 8x8 GPU tile runs on CPU only where a test pins it (make_runner's config argument)
INTERPRETER_TILE = (16, 16)
INTERPRETER_PROGRAMS = 2
# faces listed per bin: 32x the mean (face, bin) pairs a bin would get if faces spread evenly, a power of two
# in [64, 512], and the whole list at most 2**26 entries (256 MiB); pairs past it take the per-face path
CAP_PER_MEAN = 32
CAP_RANGE = (64, 512)
LIST_ENTRIES = 2**26


@dataclass(frozen=True)
class RasterConfig:
    """How one call signature of ``rasterize`` / ``uv_rasterize`` runs on the GPU.

    binned: the binned path (``rasterize_bins_triton``) or the per-face path (``_raster_kernel``).
    tile: ``(TILE_W, TILE_H)``, the per-face path's tile of a face's box and the binned path's screen bin.
    cap: faces listed per bin (binned path); a bin's further faces take the per-face path.
    programs: persistent programs of ``_raster_kernel`` and ``_bin_kernel``.
    chunk: faces per step of the binned raster kernel (``BIN_CHUNK``).
    """

    binned: bool
    tile: tuple[int, int]
    cap: int
    programs: int
    chunk: int = BIN_CHUNK["cuda"]

    @classmethod
    def from_heuristic(cls, B: int, F: int, H: int, W: int, device: torch.device,
                       path: str | None = None) -> RasterConfig:
        """The rule: the per-face path; ``path`` (``"binned"`` / ``"perface"``) forces one. Why: on an H100 at
        2048^2 the binned path is 2-16x slower than the per-face path for spheres of 40k / 200k / 1M faces
        (``docs/benchmarks/rasterize_bench_h100.json``): its per-bin lists and the evaluation of every pixel
        of a bin against each listed face cost more than the per-face path's atomics on meshes of small
        faces."""
        if path not in (None, "binned", "perface"):
            raise ValueError(f"path must be None, 'binned' or 'perface', got {path!r}")
        binned = path == "binned"
        tile = (TILE_W, TILE_H) if device.type == "cuda" else INTERPRETER_TILE
        n_bins = triton.cdiv(H, tile[1]) * triton.cdiv(W, tile[0])
        chunk = BIN_CHUNK.get(tensor_platform(device), BIN_CHUNK["cuda"])
        return cls(binned, tile, bin_capacity(F, n_bins, B), persistent_programs(device), chunk)


def bin_capacity(F: int, n_bins: int, B: int = 1) -> int:
    """Faces listed per bin: ``CAP_PER_MEAN`` x the mean (face, bin) pairs per bin (``F / n_bins`` for ``n_bins``
    bins per sample), a power of two in ``CAP_RANGE``, at most ``LIST_ENTRIES / (B * n_bins)`` (at least 1)."""
    lo, hi = CAP_RANGE
    cap = min(hi, max(lo, 1 << max(0, (CAP_PER_MEAN * F // max(n_bins, 1)) - 1).bit_length()))
    while cap > 1 and cap * B * n_bins > LIST_ENTRIES:
        cap //= 2
    return cap


def persistent_programs(device: torch.device) -> int:
    """Programs of the persistent kernels: ``PROGRAMS_PER_SM`` per multiprocessor on a GPU, 2 under the
    interpreter."""
    if device.type != "cuda":
        return INTERPRETER_PROGRAMS
    return PROGRAMS_PER_SM * torch.cuda.get_device_properties(device).multi_processor_count


def make_runner(B, N, F, H, W, flip_y, nv, pos_strides, tri_strides, prior_strides, device, config=None):
    """``run(pos, tri, prior, eps)`` for one call signature (prior_strides None: no depth prior; config: a
    ``RasterConfig``, default ``RasterConfig.from_heuristic``)."""
    BF = B * F
    cfg = config or RasterConfig.from_heuristic(B, F, H, W, device)
    tw, th = cfg.tile
    P = cfg.programs
    px, py = pixel_centres(H, W, flip_y, device)
    has_prior = prior_strides is not None
    setup = PreparedLaunch(_setup_kernel, (triton.cdiv(max(BF, 1), SETUP_BLOCK),),
                           {"FLIP": bool(flip_y), "TILE_W": tw, "TILE_H": th, "BINNED": cfg.binned,
                            "BLOCK": SETUP_BLOCK},
                           n_ptrs=5, options={"num_warps": 4}, fp_fusion=False, device=device)
    raster = PreparedLaunch(_raster_kernel, (P,), {"HAS_PRIOR": has_prior, "TILE_W": tw, "TILE_H": th},
                            n_ptrs=7, options={"num_warps": RASTER_WARPS}, fp_fusion=False, device=device)
    n_pix = B * H * W
    resolve = PreparedLaunch(_resolve_kernel, (triton.cdiv(max(n_pix, 1), RESOLVE_BLOCK),),
                             {"NV": bool(nv), "BLOCK": RESOLVE_BLOCK}, n_ptrs=7, options={"num_warps": 4},
                             fp_fusion=False, device=device)
    setup_ints = (BF, F, N, H, W, *pos_strides, *tri_strides, 0.5 * W, 0.5 * H)
    raster_ints = (BF, F, H, W, *(prior_strides or (0, 0, 0)))
    nbx, nby = triton.cdiv(W, tw), triton.cdiv(H, th)
    n_bins = B * nbx * nby
    if cfg.binned:
        from .rasterize_bins_triton import _bin_kernel, _bin_raster_kernel

        binning = PreparedLaunch(_bin_kernel, (P,), {"TILE_W": tw, "TILE_H": th, "BLOCK": BIN_BLOCK}, n_ptrs=5,
                                 options={"num_warps": 4}, fp_fusion=False, device=device)
        bin_raster = PreparedLaunch(_bin_raster_kernel, (max(n_bins, 1),),
                                    {"HAS_PRIOR": has_prior, "NV": bool(nv), "TILE_W": tw, "TILE_H": th,
                                     "CHUNK": cfg.chunk},
                                    n_ptrs=10, options={"num_warps": BIN_WARPS}, fp_fusion=False, device=device)
        bin_ints = (BF, F, nbx, nby, cfg.cap, max(BF, 1).bit_length(), P)
        tile_ints = (F, H, W, nbx, nby, cfg.cap, *(prior_strides or (0, 0, 0)))

    def outputs():
        if nv:
            out = torch.empty(B, H, W, 4, dtype=torch.float32, device=device)
            return out, (out, out, out)
        face_id = torch.empty(B, H, W, dtype=torch.int32, device=device)
        bary = torch.empty(B, H, W, 3, dtype=torch.float32, device=device)
        depth = torch.empty(B, H, W, dtype=torch.float32, device=device)
        return (face_id, bary, depth), (face_id, bary, depth)

    def run(pos, tri, prior, eps):
        keys = torch.full((n_pix,), KEY_NONE, dtype=torch.int64, device=device)
        result, outs = outputs()
        if BF > 0:
            fs = torch.empty(BF, NFS, dtype=torch.float32, device=device)
            fi = torch.empty(BF, 4, dtype=torch.int32, device=device)
            cnt = torch.empty(BF, dtype=torch.int64, device=device)
            setup(pos, tri, fs, fi, cnt, *setup_ints)
            cum = torch.cumsum(cnt, 0)
            pr = prior if has_prior else keys
            if not cfg.binned:
                raster(fs, fi, cum, px, py, pr, keys, *raster_ints, float(eps), P)
                resolve(keys, fs, px, py, *outs, n_pix, F, H, W)
                return result
            bcnt = torch.zeros(n_bins, dtype=torch.int32, device=device)
            blist = torch.empty(n_bins * cfg.cap, dtype=torch.int32, device=device)
            over = torch.zeros(BF, dtype=torch.int64, device=device)
            binning(cum, fi, bcnt, blist, over, *bin_ints)
            # the faces of pairs past a bin's capacity, whole, through the per-face path (no work when none)
            raster(fs, fi, torch.cumsum(over, 0), px, py, pr, keys, *raster_ints, float(eps), P)
            bin_raster(fs, bcnt, blist, px, py, pr, keys, *outs, *tile_ints, float(eps))
            return result
        fs = torch.zeros(1, NFS, dtype=torch.float32, device=device)
        resolve(keys, fs, px, py, *outs, n_pix, F, H, W)
        return result

    return run


def prepare(geom, pos, tri, depth_prior, path=None):
    """A runner of ``rasterize`` for one call signature: ``(pos, tri, depth_prior, eps) -> outputs``; ``path``
    forces the binned or the per-face path (``RasterConfig.from_heuristic``)."""
    ps = pos.stride()
    pos_strides = (ps[0], ps[1], ps[2]) if geom.batched else (0, ps[0], ps[1])
    prior_strides = None
    if geom.has_prior:
        st = depth_prior.stride()
        prior_strides = (st[0], st[1], st[2]) if geom.prior_batched else (0, st[0], st[1])
    cfg = RasterConfig.from_heuristic(geom.B, geom.F, geom.H, geom.W, pos.device, path)
    run = make_runner(geom.B, geom.N, geom.F, geom.H, geom.W, geom.flip_y, geom.nvdiffrast_layout, pos_strides,
                      tuple(tri.stride()), prior_strides, pos.device, cfg)

    def runner(pos, tri, depth_prior, eps, *_):
        return run(pos, tri, depth_prior, eps)

    return runner


def prepare_binned(geom, pos, tri, depth_prior):
    """The ``triton_binned`` backend: ``prepare`` with the binned path forced."""
    return prepare(geom, pos, tri, depth_prior, "binned")


def prepare_perface(geom, pos, tri, depth_prior):
    """The ``triton_perface`` backend: ``prepare`` with the per-face path forced."""
    return prepare(geom, pos, tri, depth_prior, "perface")


def prepare_uv(geom, uv, uv_tri):
    """A runner of ``uv_rasterize``: ``rasterize`` of ``(2u - 1, 2v - 1, 0, 1)``, one sample."""
    run = make_runner(1, geom.N, geom.F, geom.H, geom.W, False, False, (0, 4, 1), tuple(uv_tri.stride()), None,
                      uv.device)

    def runner(uv, uv_tri, *_):
        face_id, bary, _ = run(uv_to_clip(uv), uv_tri, None, 0.0)
        return face_id[0], bary[0]

    return runner


def _setup_variant(flip: bool, binned: bool):
    from sgl_diffusion_core import AotVariant

    ints = ("BF", "F", "N", "H", "W", "p_sb", "p_sn", "p_sc", "t_sf", "t_sk")
    sig = {"POS": "*fp32", "TRI": "*i32", "FS": "*fp32", "FI": "*i32", "CNT": "*i64", **{n: "i32" for n in ints},
           "half_w": "fp32", "half_h": "fp32", "FLIP": "constexpr", "TILE_W": "constexpr", "TILE_H": "constexpr",
           "BINNED": "constexpr", "BLOCK": "constexpr"}
    return AotVariant(
        name=f"rasterize_setup[flip={int(flip)},binned={int(binned)},block={SETUP_BLOCK}]", kernel=_setup_kernel,
        signature=sig, constexprs={"FLIP": flip, "TILE_W": TILE_W, "TILE_H": TILE_H, "BINNED": binned,
                                   "BLOCK": SETUP_BLOCK},
        num_warps=4, options={"enable_fp_fusion": False}, divisible_by_16=("POS", "TRI", "FS", "FI", "CNT"),
        narrow_loads=_NARROW)


def _raster_variant(prior: bool):
    from sgl_diffusion_core import AotVariant

    sig = {"FS": "*fp32", "FI": "*i32", "CUM": "*i64", "PX": "*fp32", "PY": "*fp32", "PRIOR": "*fp32",
           "KEYS": "*i64", **{n: "i32" for n in ("BF", "F", "H", "W", "pr_sb", "pr_sh", "pr_sw")},
           "eps": "fp32", "P": "i32", "HAS_PRIOR": "constexpr", "TILE_W": "constexpr", "TILE_H": "constexpr"}
    return AotVariant(
        name=f"rasterize_raster[prior={int(prior)},tile={TILE_W}x{TILE_H},w={RASTER_WARPS}]",
        kernel=_raster_kernel, signature=sig, constexprs={"HAS_PRIOR": prior, "TILE_W": TILE_W, "TILE_H": TILE_H},
        num_warps=RASTER_WARPS, options={"enable_fp_fusion": False},
        divisible_by_16=("FS", "FI", "CUM", "PX", "PY", "PRIOR", "KEYS"), narrow_loads=_NARROW)


def _resolve_variant(nv: bool):
    from sgl_diffusion_core import AotVariant

    sig = {"KEYS": "*i64", "FS": "*fp32", "PX": "*fp32", "PY": "*fp32", "FID": "*i32" if not nv else "*fp32",
           "BARY": "*fp32", "DEPTH": "*fp32", **{n: "i32" for n in ("n_pix", "F", "H", "W")},
           "NV": "constexpr", "BLOCK": "constexpr"}
    return AotVariant(
        name=f"rasterize_resolve[nv={int(nv)},block={RESOLVE_BLOCK}]", kernel=_resolve_kernel, signature=sig,
        constexprs={"NV": nv, "BLOCK": RESOLVE_BLOCK}, num_warps=4, options={"enable_fp_fusion": False},
        divisible_by_16=("KEYS", "FS", "PX", "PY", "FID", "BARY", "DEPTH"), narrow_loads=_NARROW)


def _perface_variants():
    return [*(_setup_variant(f, False) for f in (False, True)), *(_raster_variant(p) for p in (False, True)),
            *(_resolve_variant(nv) for nv in (False, True))]


def _binned_variants(platform: str):
    from .rasterize_bins_triton import bin_variants

    out = [*(_setup_variant(f, True) for f in (False, True)), *(_raster_variant(p) for p in (False, True))]
    for prior in (False, True):
        for nv in (False, True):
            out += bin_variants(prior, nv, with_binning=not prior and not nv, chunk=BIN_CHUNK[platform])
    return out


def aot_variants(platform: str = "cuda"):
    """The GPU launch rule's builds (the per-face path): setup (flip_y off / on), the raster kernel (with / without
    a depth prior), resolve (separate outputs / nvdiffrast layout): 6 builds."""
    return _perface_variants()


def aot_variants_binned(platform: str = "cuda"):
    """The ``triton_binned`` backend's builds (``aot_variants``' binned path) under its own names."""
    return [replace(v, name="binned_" + v.name) for v in _binned_variants(platform)]


def aot_variants_perface(platform: str = "cuda"):
    """The ``triton_perface`` backend's builds (``aot_variants``' per-face path) under its own names."""
    return [replace(v, name="perface_" + v.name) for v in _perface_variants()]


def aot_variants_uv(platform: str = "cuda"):
    """``uv_rasterize`` launches ``rasterize``'s kernels with flip_y off, no prior and separate outputs, on the
    rule's path: those builds again under uv_rasterize's names (the compile tool wants distinct names per backend)."""
    keep = ("rasterize_setup[flip=0", "rasterize_raster[prior=0", "rasterize_resolve[nv=0")
    return [replace(v, name="uv_" + v.name) for v in aot_variants(platform) if v.name.startswith(keep)]
