"""Triton backend of ``nearest_upsample`` (integer factors): ``out[..., i, j] = x[..., i // f, j // g]``.

``_replicate_kernel``: one program per *input* row tile (contiguous: rows ``(n, c[, d])`` with
an ``(h, w)`` tile; channels_last(_3d): ``(n[, d], h)`` with a ``(w, c)`` tile); it loads the
tile once (contiguous 2x: half a row, interleaved with itself in registers) and stores it at
every output position it feeds, the row factors and the tile factor as constexpr loops (5-D
2x: eight output values per loaded one, two planes x two rows x two columns), so every input
byte is read once, by one program, and each program writes 16-32 KB. The source row is found
with scalar divisions per program, and inside the tile the factors are ``constexpr`` (a power
of two is a shift). The host checked once per signature that eager's float index formula
equals ``i // f`` at these sizes (``nearest_upsample.describe_nearest_upsample``).
Measured on one H200 (bf16, VAE decoder shapes: 89-95% of copy,
docs/benchmarks/nearest_upsample_bench_h200.json).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import PreparedLaunch, tensor_platform

from ._copy_triton import CopyConfig

_TILE_BYTES = 8192  # 16 KB tiles spilled registers on sm_90 (channels_last variants)


@dataclass(frozen=True)
class UpsampleConfig:
    """``[ba, bn]`` tile: ``ba`` input rows of the tiled dim, ``bn`` output elements of the
    contiguous dim per chunk."""

    ba: int
    bn: int
    num_warps: int

    @classmethod
    def from_heuristic(cls, A: int, N: int, factors: tuple[int, int, int, int], elem_bytes: int,
                       platform: str) -> UpsampleConfig:
        """``CopyConfig``'s tile rule over the ``A // FA`` input rows a program loads, at most 8 KB
        of registers per tile; a tile is stored ``F1 * F2 * FA`` times and is capped so that a
        program writes at most 32 KB (5-D 2x: 4 KB tiles; 8 KB ones spilled registers on sm_90
        where the pointers are not aligned)."""
        F1, F2, FA, _ = factors
        tile = max(2048, min(_TILE_BYTES, 32768 // (F1 * F2 * FA)))
        base = CopyConfig.from_heuristic(A // FA, N, elem_bytes, platform, tile)
        return cls(base.bm, base.bn, base.num_warps)

    def launch_options(self) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}


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


def prepare(geom, x, config: UpsampleConfig | None = None):
    """A runner for one call signature: ``(x, scale_factor, mode) -> out``. ``config``: the tile
    (default ``UpsampleConfig.from_heuristic``; a test or sweep passes others)."""
    shape, fmt, sizes, strides, factors = geom
    R0, R1, R2, A, N = sizes
    F1, F2, FA, FN = factors
    plat = tensor_platform(x.device)
    cfg = config or UpsampleConfig.from_heuristic(A, N, factors, x.element_size(), plat)
    const = {"F1": F1, "F2": F2, "FA": FA, "FN": FN, "BA": cfg.ba, "BN": cfg.bn}
    launch = None
    # over input rows: R1 // F1, R2 // F2, A // FA (integer factors divide them)
    rows, nta = R0 * (R1 // F1) * (R2 // F2), triton.cdiv(A // FA, cfg.ba)
    scalars = (R1, R2, A, N, nta, R1 // F1, R2 // F2, *strides)
    if rows and A and N:
        launch = PreparedLaunch(_replicate_kernel, (rows * nta,), const, device=x.device, n_ptrs=2,
                                options=cfg.launch_options())
    dtype, device = x.dtype, x.device

    def run(x, scale_factor, mode="nearest"):
        out = torch.empty(shape, dtype=dtype, device=device, memory_format=fmt)
        if launch is not None:
            launch(x, out, *scalars)
        return out

    return run


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
            cfg = UpsampleConfig.from_heuristic(A, N, (F1, F2, FA, FN), dt.itemsize, platform)
            sig = {"X": f"*{nm}", "OUT": f"*{nm}"}
            sig.update({n: "i32" for n in ("R1", "R2", "A", "N", "NTA", "R1I", "R2I", "s1", "s2", "sa", "sn")})
            sig["s0"] = "i64"
            sig = {n: sig[n] for n in _replicate_kernel.arg_names if n in sig}
            const = {"F1": F1, "F2": F2, "FA": FA, "FN": FN, "BA": cfg.ba, "BN": cfg.bn}
            sig.update({n: "constexpr" for n in const})
            sig["sn"] = "constexpr"  # 1 in both formats: the launch specializes it (vector loads)
            const["sn"] = 1
            out.append(AotVariant(
                name=f"nearest_upsample:replicate[{nm},{label},A={A},N={N},ba={cfg.ba},bn={cfg.bn},"
                     f"w={cfg.num_warps}]",
                kernel=_replicate_kernel, signature=sig, constexprs=const,
                num_warps=cfg.num_warps, options={"enable_fp_fusion": False},
            ))
    return out
