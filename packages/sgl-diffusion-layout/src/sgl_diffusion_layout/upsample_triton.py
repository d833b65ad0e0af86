"""Triton backend of ``nearest_upsample`` (integer factors): ``out[..., i, j] = x[..., i // f, j // g]``.

Default (``_replicate_kernel``): one program per *input* row tile; it loads the tile once
(contiguous 2x: half a row, interleaved with itself in registers) and stores it at every
output position it feeds, the row factors and the tile factor as constexpr loops (5-D 2x:
eight output values per loaded one, two planes x two rows x two columns), so every input
byte is read once, by one program, and each program writes 16-32 KB.

The row variant (``UpsampleConfig(replicate=False)``, for sweeps): one program per output
row tile in memory order (contiguous: row ``(n, c[, d])`` with an ``(h, w)`` tile;
channels_last(_3d): ``(n[, d], h)`` with a ``(w, c)`` tile), on a 1-D grid with a row's
tiles adjacent; it loads a source row once per output row that repeats it (twice per row
pair, and again for the next plane at a 5-D time factor). Both find the source row with
scalar divisions per program, and inside the tile the factors are ``constexpr``
(a power of two is a shift). The host checked once per signature that eager's float index
formula equals ``i // f`` at these sizes (``upsample_api``).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform

from .copy_triton import CopyConfig

_TILE_BYTES = 8192  # 16 KB tiles spilled registers on sm_90 (channels_last variants)


@dataclass(frozen=True)
class UpsampleConfig:
    """``[ba, bn]`` tile: ``ba`` rows of the tiled dim (input rows with ``replicate``, else output
    rows), ``bn`` output elements of the contiguous dim per chunk."""

    ba: int
    bn: int
    num_warps: int
    replicate: bool = True

    @classmethod
    def from_heuristic(cls, A: int, N: int, factors: tuple[int, int, int, int], elem_bytes: int, platform: str,
                       replicate: bool = True) -> UpsampleConfig:
        """``CopyConfig``'s tile rule over the rows a program loads (``A // FA`` input rows with
        ``replicate``), at most 8 KB of registers per tile; a replicated tile is stored
        ``F1 * F2 * FA`` times and is capped so that a program writes at most 32 KB (5-D 2x:
        4 KB tiles; 8 KB ones spilled registers on sm_90 where the pointers are not aligned)."""
        F1, F2, FA, _ = factors
        tile = max(2048, min(_TILE_BYTES, 32768 // (F1 * F2 * FA))) if replicate else _TILE_BYTES
        base = CopyConfig.from_heuristic(A // FA if replicate else A, N, elem_bytes, platform, tile)
        return cls(base.bm, base.bn, base.num_warps, replicate)

    def launch_options(self) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}


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


@triton.jit(do_not_specialize=["R1", "R2", "A", "NTA", "R1I", "R2I"])
def _replicate_kernel(
    X, OUT,
    R1, R2, A, N, NTA, R1I, R2I,
    s0, s1, s2, sa, sn,
    F1: tl.constexpr, F2: tl.constexpr, FA: tl.constexpr, FN: tl.constexpr,
    BA: tl.constexpr, BN: tl.constexpr,
):
    # 1-D grid over (input row (r0, r1i, r2i), tile of BA input rows of A), a row's tiles adjacent;
    # R1I = R1 // F1, R2I = R2 // F2 input rows; four scalar divisions per program
    pid = tl.program_id(0).to(tl.int64)
    ta = pid % NTA
    r = pid // NTA
    r2i = r % R2I
    q = r // R2I
    r1i = q % R1I
    r0 = q // R1I
    src_row = X + (r0 * s0 + r1i * s1 + r2i * s2)
    plane = A.to(tl.int64) * N
    out_row = OUT + ((r0 * R1 + r1i * F1) * R2 + r2i * F2) * plane  # output row (r0, r1i*F1, r2i*F2)
    ai = ta * BA + tl.arange(0, BA)  # input rows of A
    a_ok = (ai < A // FA)[:, None]
    src_a = src_row + ai.to(tl.int64)[:, None] * sa
    for n0 in range(0, N, BN):
        n = n0 + tl.arange(0, BN)
        mask = a_ok & (n < N)[None, :]
        if FN == 2:  # contiguous 2x: read BN/2 values, interleave each twice
            nh = n0 // 2 + tl.arange(0, BN // 2)
            vh = tl.load(src_a + (nh.to(tl.int64) * sn)[None, :], mask=a_ok & (nh < N // 2)[None, :],
                         eviction_policy="evict_first")
            v = tl.reshape(tl.join(vh, vh), [BA, BN])
        else:
            v = tl.load(src_a + ((n // FN).to(tl.int64) * sn)[None, :], mask=mask, eviction_policy="evict_first")
        # the loaded tile feeds F1 x F2 output rows and FA rows of A in each
        for i1 in tl.static_range(F1):
            for i2 in tl.static_range(F2):
                dst = out_row + (i1 * R2 + i2) * plane
                for ia in tl.static_range(FA):
                    tl.store(dst + ((ai * FA + ia) * N)[:, None] + n[None, :], v, mask=mask)


def _prep(geom, x, config: UpsampleConfig | None = None):
    shape, fmt, sizes, strides, factors = geom
    R0, R1, R2, A, N = sizes
    F1, F2, FA, FN = factors
    plat = tensor_platform(x.device)
    cfg = config or UpsampleConfig.from_heuristic(A, N, factors, x.element_size(), plat)
    const = {"F1": F1, "F2": F2, "FA": FA, "FN": FN, "BA": cfg.ba, "BN": cfg.bn}
    launch = None
    if cfg.replicate:  # over input rows: R1 // F1, R2 // F2, A // FA (integer factors divide them)
        rows, nta = R0 * (R1 // F1) * (R2 // F2), triton.cdiv(A // FA, cfg.ba)
        scalars = (R1, R2, A, N, nta, R1 // F1, R2 // F2, *strides)
        kernel = _replicate_kernel
    else:
        rows, nta = R0 * R1 * R2, triton.cdiv(A, cfg.ba)
        scalars = (R1, R2, A, N, nta, *strides)
        kernel = _upsample_kernel
    if rows and A and N:
        launch = PreparedLaunch(kernel, (rows * nta,), const, device=x.device, n_ptrs=2,
                                options=cfg.launch_options())
    dtype, device = x.dtype, x.device

    def run(x, scale_factor, mode="nearest"):
        out = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        if launch is not None:
            launch(x, out, *scalars)
        return out

    return run


def nearest_upsample(x, scale_factor, mode="nearest", *, geom, config: UpsampleConfig | None = None):
    return _prep(geom, x, config)(x, scale_factor, mode)


nearest_upsample.prepare = _prep


def aot_nearest_upsample(platform: str = "cuda"):
    """2x spatial upsampling of VAE decoders: contiguous and channels_last, 4-D (2-D images) and 5-D (video)."""
    from sgl_diffusion_core import AotVariant

    names = {torch.bfloat16: "bf16", torch.float16: "fp16", torch.float32: "fp32"}
    out = []
    # (label, (A, N), (F1, F2, FA, FN))
    cases = (("4d-contig", (480, 832), (1, 1, 2, 2)), ("4d-cl", (832, 384), (1, 2, 2, 1)),
             ("5d-contig", (480, 832), (1, 2, 2, 2)), ("5d-cl-t2", (832, 384), (2, 2, 2, 1)),
             ("4d-contig-bench", (240, 416), (1, 1, 2, 2)), ("5d-cl-bench", (416, 192), (2, 2, 2, 1)))
    for dt, nm in names.items():
        for label, (A, N), (F1, F2, FA, FN) in cases:
            for replicate in (True, False):
                cfg = UpsampleConfig.from_heuristic(A, N, (F1, F2, FA, FN), dt.itemsize, platform, replicate)
                sig = {"X": f"*{nm}", "OUT": f"*{nm}"}
                ints = ("R1", "R2", "A", "N", "NTA") + (("R1I", "R2I") if replicate else ()) + ("s1", "s2", "sa", "sn")
                sig.update({n: "i32" for n in ints})
                sig["s0"] = "i64"
                sig = {n: sig[n] for n in (_replicate_kernel if replicate else _upsample_kernel).arg_names
                       if n in sig}
                const = {"F1": F1, "F2": F2, "FA": FA, "FN": FN, "BA": cfg.ba, "BN": cfg.bn}
                sig.update({n: "constexpr" for n in const})
                sig["sn"] = "constexpr"  # 1 in both formats: the launch specializes it (vector loads)
                const["sn"] = 1
                kname = "replicate" if replicate else "row"
                out.append(AotVariant(
                    name=f"nearest_upsample:{kname}[{nm},{label},A={A},N={N},ba={cfg.ba},bn={cfg.bn},"
                         f"w={cfg.num_warps}]",
                    kernel=_replicate_kernel if replicate else _upsample_kernel, signature=sig, constexprs=const,
                    num_warps=cfg.num_warps, options={"enable_fp_fusion": False},
                ))
    return out
