"""Triton kernels of ``uv_inpaint`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

Per pyramid level one ``_push_kernel`` launch (one lane per coarse texel, channels as a second tile
axis), then per level one ``_pull_kernel`` launch back up, then ``iterations`` ``_diffuse_kernel`` launches for
``method="diffuse"``. The arithmetic is the reference's, in the same order, built without FMA contraction
and with correctly rounded divisions, so the two agree bit for bit. At 2048^2 x 3 channels the pyramid
moves about 3 x 50 MB (2 x 11 launches); the H200 design target is 5 ms (measured on an H100:
docs/benchmarks/uv_inpaint_bench_h100.json).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, next_pow2

# why the compile lanes see no 128-bit loads here (AotVariant.narrow_loads)
_NARROW = "texels read at runtime channel and row strides (any texture layout), the known-texel mask as bytes"


@triton.jit(do_not_specialize=["n", "h", "w", "hc", "wc", "C", "s_b", "s_h", "s_w", "s_c", "k_b", "k_h", "k_w"])
def _push_kernel(COL, KNOWN, OUT, OUTK, n, h, w, hc, wc, C, s_b, s_h, s_w, s_c, k_b, k_h, k_w,
                 BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    b = offs // (hc * wc)
    rem = offs - b * (hc * wc)
    i = rem // wc
    j = rem - i * wc
    cols = tl.arange(0, BLOCK_C)
    cm = (cols < C)[None, :]
    s = tl.zeros((BLOCK, BLOCK_C), dtype=tl.float32)
    cnt = tl.zeros((BLOCK,), dtype=tl.float32)
    for t in tl.static_range(4):
        r = 2 * i + t // 2
        c = 2 * j + t % 2
        inside = m & (r < h) & (c < w)
        k = tl.load(KNOWN + b * k_b + r * k_h + c * k_w, mask=inside, other=0) != 0
        v = tl.load(COL + (b * s_b + r * s_h + c * s_w)[:, None] + cols[None, :] * s_c, mask=k[:, None] & cm,
                    other=0.0)
        s = s + v
        cnt = cnt + tl.where(k, 1.0, 0.0)
    has = cnt > 0
    res = tl.math.div_rn(s, tl.where(has, cnt, 1.0)[:, None])
    tl.store(OUT + offs[:, None] * C + cols[None, :], tl.where(has[:, None], res, 0.0), mask=m[:, None] & cm)
    tl.store(OUTK + offs, has.to(tl.int8), mask=m)


@triton.jit(do_not_specialize=["n", "h", "w", "hc", "wc", "C", "s_b", "s_h", "s_w", "s_c", "k_b", "k_h", "k_w"])
def _pull_kernel(COL, KNOWN, COARSE, OUT, n, h, w, hc, wc, C, s_b, s_h, s_w, s_c, k_b, k_h, k_w,
                 BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    b = offs // (h * w)
    rem = offs - b * (h * w)
    i = rem // w
    j = rem - i * w
    cols = tl.arange(0, BLOCK_C)
    cm = (cols < C)[None, :]
    mm = m[:, None] & cm
    known = tl.load(KNOWN + b * k_b + i * k_h + j * k_w, mask=m, other=0) != 0
    r0 = (i + 1) // 2 - 1
    c0 = (j + 1) // 2 - 1
    r1 = tl.minimum(r0 + 1, hc - 1)
    c1 = tl.minimum(c0 + 1, wc - 1)
    r0 = tl.maximum(r0, 0)
    c0 = tl.maximum(c0, 0)
    wr1 = tl.where(i % 2 == 0, 0.75, 0.25)[:, None]
    wc1 = tl.where(j % 2 == 0, 0.75, 0.25)[:, None]
    wr0 = 1.0 - wr1
    wc0 = 1.0 - wc1
    base = COARSE + (b * hc * wc)[:, None] * C + cols[None, :]
    v00 = tl.load(base + (r0 * wc + c0)[:, None] * C, mask=mm, other=0.0)
    v01 = tl.load(base + (r0 * wc + c1)[:, None] * C, mask=mm, other=0.0)
    v10 = tl.load(base + (r1 * wc + c0)[:, None] * C, mask=mm, other=0.0)
    v11 = tl.load(base + (r1 * wc + c1)[:, None] * C, mask=mm, other=0.0)
    v = wr0 * (wc0 * v00 + wc1 * v01) + wr1 * (wc0 * v10 + wc1 * v11)
    own = tl.load(COL + (b * s_b + i * s_h + j * s_w)[:, None] + cols[None, :] * s_c, mask=mm & known[:, None],
                  other=0.0)
    tl.store(OUT + offs[:, None] * C + cols[None, :], tl.where(known[:, None], own, v), mask=mm)


@triton.jit(do_not_specialize=["n", "h", "w", "C", "k_b", "k_h", "k_w"])
def _diffuse_kernel(SRC, KNOWN, DST, n, h, w, C, k_b, k_h, k_w, BLOCK: tl.constexpr, BLOCK_C: tl.constexpr):
    offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
    m = offs < n
    b = offs // (h * w)
    rem = offs - b * (h * w)
    i = rem // w
    j = rem - i * w
    cols = tl.arange(0, BLOCK_C)
    mm = m[:, None] & (cols < C)[None, :]
    known = tl.load(KNOWN + b * k_b + i * k_h + j * k_w, mask=m, other=0) != 0
    base = SRC + (b * h * w)[:, None] * C + cols[None, :]
    up = tl.load(base + (tl.maximum(i - 1, 0) * w + j)[:, None] * C, mask=mm, other=0.0)
    down = tl.load(base + (tl.minimum(i + 1, h - 1) * w + j)[:, None] * C, mask=mm, other=0.0)
    left = tl.load(base + (i * w + tl.maximum(j - 1, 0))[:, None] * C, mask=mm, other=0.0)
    right = tl.load(base + (i * w + tl.minimum(j + 1, w - 1))[:, None] * C, mask=mm, other=0.0)
    own = tl.load(base + (i * w + j)[:, None] * C, mask=mm, other=0.0)
    v = (((up + down) + left) + right) * 0.25
    tl.store(DST + offs[:, None] * C + cols[None, :], tl.where(known[:, None], own, v), mask=mm)


# The launch rule: 256 texels per program, every channel in one tile (the op serves C <= 16), 4 warps.
# Not yet swept on hardware.
BLOCK = 256
NUM_WARPS = 4


def _launch(kernel, n, C, n_ptrs, device):
    return PreparedLaunch(kernel, (triton.cdiv(max(n, 1), BLOCK),), {"BLOCK": BLOCK, "BLOCK_C": next_pow2(C)},
                          n_ptrs=n_ptrs, options={"num_warps": NUM_WARPS}, fp_fusion=False, device=device)


def prepare(geom, texture, mask):
    """A runner for one call signature: ``(texture, mask) -> filled``."""
    B, H, W, C, dev = geom.B, geom.H, geom.W, geom.C, texture.device
    sizes = [(H, W)]
    while sizes[-1] != (1, 1):
        h, w = sizes[-1]
        sizes.append(((h + 1) // 2, (w + 1) // 2))
    pushes = [_launch(_push_kernel, B * hc * wc, C, 4, dev) for hc, wc in sizes[1:]]
    pulls = [_launch(_pull_kernel, B * h * w, C, 4, dev) for h, w in sizes[:-1]]
    diff = _launch(_diffuse_kernel, B * H * W, C, 3, dev)
    st = texture.stride()
    tex_strides = st if geom.batched else (0, *st)
    mst = mask.stride()
    mask_strides = mst if geom.mask_batched else (0, *mst)
    method, iterations, batched = geom.method, geom.iterations, geom.batched

    def run(texture, mask, *_):
        known0 = mask.view(torch.uint8) if mask.dtype == torch.bool else mask
        levels = [(texture, known0, tex_strides, mask_strides)]
        for (h, w), (hc, wc), push in zip(sizes[:-1], sizes[1:], pushes):
            col, known, s, k = levels[-1]
            out = torch.empty(B, hc, wc, C, dtype=torch.float32, device=dev)
            outk = torch.empty(B, hc, wc, dtype=torch.int8, device=dev)
            push(col, known, out, outk, B * hc * wc, h, w, hc, wc, C, *s, *k)
            levels.append((out, outk, (hc * wc * C, wc * C, C, 1), (hc * wc, wc, 1)))
        filled = torch.where(levels[-1][1][..., None] != 0, levels[-1][0], 0.0)
        for (col, known, s, k), (h, w), pull in reversed(list(zip(levels[:-1], sizes[:-1], pulls))):
            coarse, filled = filled, torch.empty(B, h, w, C, dtype=torch.float32, device=dev)
            pull(col, known, coarse, filled, B * h * w, h, w, coarse.shape[1], coarse.shape[2], C, *s, *k)
        if method == "diffuse":
            other = torch.empty_like(filled)
            for _ in range(iterations):
                diff(filled, known0, other, B * H * W, H, W, C, *mask_strides)
                filled, other = other, filled
        return filled if batched else filled[0]

    return run


def aot_variants(platform: str = "cuda"):
    """push, pull and diffuse at 3 and 4 channels (BLOCK_C 4): 3 builds."""
    from sgl_diffusion_core import AotVariant

    ints13 = ("n", "h", "w", "hc", "wc", "C", "s_b", "s_h", "s_w", "s_c", "k_b", "k_h", "k_w")
    const = {"BLOCK": "constexpr", "BLOCK_C": "constexpr"}
    sigs = {
        "push": (_push_kernel, {"COL": "*fp32", "KNOWN": "*u8", "OUT": "*fp32", "OUTK": "*i8",
                                **{n: "i32" for n in ints13}, **const}),
        "pull": (_pull_kernel, {"COL": "*fp32", "KNOWN": "*u8", "COARSE": "*fp32", "OUT": "*fp32",
                                **{n: "i32" for n in ints13}, **const}),
        "diffuse": (_diffuse_kernel, {"SRC": "*fp32", "KNOWN": "*u8", "DST": "*fp32",
                                      **{n: "i32" for n in ("n", "h", "w", "C", "k_b", "k_h", "k_w")}, **const}),
    }
    return [AotVariant(name=f"uv_inpaint_{k}[fp32,c=4,block={BLOCK}]", kernel=kern, signature=sig,
                       constexprs={"BLOCK": BLOCK, "BLOCK_C": 4}, num_warps=NUM_WARPS,
                       options={"enable_fp_fusion": False},
                       divisible_by_16=tuple(a for a, t in sig.items() if t.startswith("*")), narrow_loads=_NARROW)
            for k, (kern, sig) in sigs.items()]
