"""Triton kernel of ``interpolate`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

One program per block of ``BLOCK_P`` pixels; it reads the face ids and barycentrics once, gathers the
three vertex indices of each pixel's face and then, per block of ``BLOCK_C`` channels, the three
attribute rows, and writes ``(b0 * a0 + b1 * a1) + b2 * a2`` (no FMA contraction: equal to the reference).
Out-of-range face or vertex indices give 0 and are never dereferenced.
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2

# why the compile lanes see no 128-bit loads here (AotVariant.narrow_loads)
_NARROW = "attributes gathered at the vertices of each pixel's face (data-dependent rows), at runtime strides"


@triton.jit(do_not_specialize=["n_pix", "HW", "N", "C", "F", "a_sb", "a_sn", "a_sc", "t_sf", "t_sk"])
def _interpolate_kernel(ATTR, FID, BARY, TRI, OUT, n_pix, HW, N, C, F, a_sb, a_sn, a_sc, t_sf, t_sk,
                        BLOCK_P: tl.constexpr, BLOCK_C: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK_P + tl.arange(0, BLOCK_P)
    m = offs < n_pix
    fid = tl.load(FID + offs, mask=m, other=0)
    hit = m & (fid > 0) & (fid <= F)
    f = tl.where(hit, fid - 1, 0)
    i0 = tl.load(TRI + f * t_sf, mask=hit, other=0)
    i1 = tl.load(TRI + f * t_sf + t_sk, mask=hit, other=0)
    i2 = tl.load(TRI + f * t_sf + 2 * t_sk, mask=hit, other=0)
    hit = hit & (i0 >= 0) & (i0 < N) & (i1 >= 0) & (i1 < N) & (i2 >= 0) & (i2 < N)
    b0 = tl.load(BARY + offs * 3, mask=hit, other=0.0)[:, None]
    b1 = tl.load(BARY + offs * 3 + 1, mask=hit, other=0.0)[:, None]
    b2 = tl.load(BARY + offs * 3 + 2, mask=hit, other=0.0)[:, None]
    base = ATTR + (offs // HW) * a_sb
    r0 = (base + tl.where(hit, i0, 0).to(tl.int64) * a_sn)[:, None]
    r1 = (base + tl.where(hit, i1, 0).to(tl.int64) * a_sn)[:, None]
    r2 = (base + tl.where(hit, i2, 0).to(tl.int64) * a_sn)[:, None]
    for c0 in range(0, C, BLOCK_C):
        cols = c0 + tl.arange(0, BLOCK_C)
        cm = (cols < C)[None, :]
        lm = hit[:, None] & cm
        a0 = tl.load(r0 + cols[None, :] * a_sc, mask=lm, other=0.0)
        a1 = tl.load(r1 + cols[None, :] * a_sc, mask=lm, other=0.0)
        a2 = tl.load(r2 + cols[None, :] * a_sc, mask=lm, other=0.0)
        v = (b0 * a0 + b1 * a1) + b2 * a2
        tl.store(OUT + offs[:, None] * C + cols[None, :], tl.where(lm, v, 0.0), mask=m[:, None] & cm)


# The launch rule: 128 pixels per program, channels in blocks of up to 8 (UV, normals, colours: 2-4
# channels fit one block), 4 warps. Not yet swept on hardware.
BLOCK_P = 128
MAX_BLOCK_C = 8
NUM_WARPS = 4


def block_c(C: int) -> int:
    return min(MAX_BLOCK_C, max(2, next_pow2(C)))


def prepare(geom, attr, face_id, bary, tri):
    """A runner for one call signature: ``(attr, face_id, bary, tri) -> out``."""
    n_pix = geom.B * geom.H * geom.W
    launch = PreparedLaunch(_interpolate_kernel, (triton.cdiv(n_pix, BLOCK_P),),
                            {"BLOCK_P": BLOCK_P, "BLOCK_C": block_c(geom.C)}, n_ptrs=5,
                            options={"num_warps": NUM_WARPS}, fp_fusion=False, device=attr.device)
    ints = (n_pix, geom.H * geom.W, geom.N, geom.C, geom.F, *geom.attr_strides, *tri.stride())
    shape, device = (geom.B, geom.H, geom.W, geom.C), attr.device

    def run(attr, face_id, bary, tri, *_):
        out = torch.empty(shape, dtype=torch.float32, device=device)
        launch(attr, face_id, bary, tri, out, *ints)
        return out

    return run


def aot_variants(platform: str = "cuda"):
    """Channel blocks 4 and 8: 2 builds."""
    from sgl_diffusion_core import AotVariant

    ints = ("n_pix", "HW", "N", "C", "F", "a_sb", "a_sn", "a_sc", "t_sf", "t_sk")
    out = []
    for bc in (4, 8):
        sig = {"ATTR": "*fp32", "FID": "*i32", "BARY": "*fp32", "TRI": "*i32", "OUT": "*fp32",
               **{n: "i32" for n in ints}, "BLOCK_P": "constexpr", "BLOCK_C": "constexpr"}
        out.append(AotVariant(name=f"interpolate[fp32,c={bc},p={BLOCK_P},w={NUM_WARPS}]", kernel=_interpolate_kernel,
                              signature=sig, constexprs={"BLOCK_P": BLOCK_P, "BLOCK_C": bc}, num_warps=NUM_WARPS,
                              options={"enable_fp_fusion": False},
                              divisible_by_16=("ATTR", "FID", "BARY", "TRI", "OUT"), narrow_loads=_NARROW))
    return out
