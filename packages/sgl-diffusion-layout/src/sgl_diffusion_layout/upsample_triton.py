"""Triton backend of ``nearest_upsample`` (integer factors): ``out[..., i, j] = x[..., i // f, j // g]``.

One program per output row tile in memory order (contiguous: row ``(n, c[, d])`` with an
``(h, w)`` tile; channels_last(_3d): ``(n[, d], h)`` with a ``(w, c)`` tile), on a 1-D grid
with a row's tiles adjacent (programs that run side by side stream neighbouring bytes; a
2-D ``(rows, tiles)`` grid put them a row apart); the source row is found
with one scalar division per program, and inside the tile the factors are ``constexpr``
(a power of two is a shift). The host checked once per signature that eager's float index
formula equals ``i // f`` at these sizes (``upsample_api``).
"""

from __future__ import annotations

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform

from .copy_triton import CopyConfig

_TILE_BYTES = 8192  # 16 KB tiles spilled registers on sm_90 (channels_last variants)


@triton.jit(do_not_specialize=["R1", "R2", "A", "NTA"])
def _upsample_kernel(
    X, OUT,
    R1, R2, A, N, NTA,
    s0, s1, s2, sa, sn,
    F1: tl.constexpr, F2: tl.constexpr, FA: tl.constexpr, FN: tl.constexpr,
    BA: tl.constexpr, BN: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)  # 1-D grid: (row, tile of A), a row's tiles adjacent
    ta = pid % NTA
    r = pid // NTA
    r2 = r % R2
    q = r // R2
    r1 = q % R1
    r0 = q // R1
    src_row = X + (r0 * s0 + (r1 // F1) * s1 + (r2 // F2) * s2)
    out_row = OUT + r * A * N
    a = ta * BA + tl.arange(0, BA)
    a_ok = (a < A)[:, None]
    src_a = src_row + (a // FA)[:, None] * sa
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        mask = a_ok & (n < N)[None, :]
        if FN == 2:  # contiguous 2x (the VAE case): read BN/2 contiguous values, interleave each twice
            nh = n0 // 2 + tl.arange(0, BN // 2)
            vh = tl.load(src_a + (nh.to(tl.int64) * sn)[None, :], mask=a_ok & (nh < N // 2)[None, :])
            v = tl.reshape(tl.join(vh, vh), [BA, BN])
        else:
            v = tl.load(src_a + ((n // FN).to(tl.int64) * sn)[None, :], mask=mask)  # int64: any view strides
        tl.store(out_row + a[:, None] * N + n[None, :], v, mask=mask)


def _prep(geom, x):
    shape, fmt, sizes, strides, factors = geom
    R0, R1, R2, A, N = sizes
    plat = tensor_platform(x.device)
    cfg = CopyConfig.from_heuristic(A, N, x.element_size(), plat, _TILE_BYTES)
    rows = R0 * R1 * R2
    launch = None
    if rows and A and N:
        F1, F2, FA, FN = factors
        nta = triton.cdiv(A, cfg.bm)
        launch = PreparedLaunch(
            _upsample_kernel, (rows * nta,),
            {"F1": F1, "F2": F2, "FA": FA, "FN": FN, "BA": cfg.bm, "BN": cfg.bn},
            device=x.device, n_ptrs=2, options=cfg.launch_options())
    scalars = (R1, R2, A, N, triton.cdiv(A, cfg.bm), *strides)
    dtype, device = x.dtype, x.device

    def run(x, scale_factor, mode="nearest"):
        out = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        if launch is not None:
            launch(x, out, *scalars)
        return out

    return run


def nearest_upsample(x, scale_factor, mode="nearest", *, geom):
    return _prep(geom, x)(x, scale_factor, mode)


nearest_upsample.prepare = _prep


def aot_nearest_upsample(platform: str = "cuda"):
    """2x spatial upsampling of VAE decoders: contiguous and channels_last, 4-D (2-D images) and 5-D (video)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    # (label, (A, N), (F1, F2, FA, FN))
    cases = (("4d-contig", (480, 832), (1, 1, 2, 2)), ("4d-cl", (832, 384), (1, 2, 2, 1)),
             ("5d-contig", (480, 832), (1, 1, 2, 2)), ("5d-cl-t2", (832, 384), (2, 2, 2, 1)))
    for dt, nm in names.items():
        for label, (A, N), (F1, F2, FA, FN) in cases:
            cfg = CopyConfig.from_heuristic(A, N, dt.itemsize, platform, _TILE_BYTES)
            sig = {"X": f"*{nm}", "OUT": f"*{nm}"}
            sig.update({n: "i32" for n in ("R1", "R2", "A", "N", "NTA", "s1", "s2", "sa", "sn")})
            sig["s0"] = "i64"
            const = {"F1": F1, "F2": F2, "FA": FA, "FN": FN, "BA": cfg.bm, "BN": cfg.bn}
            sig.update({n: "constexpr" for n in const})
            out.append(AotVariant(
                name=f"nearest_upsample[{nm},{label},A={A},N={N},ba={cfg.bm},bn={cfg.bn},w={cfg.num_warps}]",
                kernel=_upsample_kernel, signature=sig, constexprs=const, num_warps=cfg.num_warps,
                options={"enable_fp_fusion": False},
            ))
    return out
