"""Triton kernel for ``channel_rms_norm`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

x is seen as ``[B, C, P]`` (the spatial dims merged, stride ``sp``; channel stride ``sc``). One
program owns ``BLOCK_P`` spatial positions of one sample and all C channels: a 2-D tile
``[BLOCK_C, BLOCK_P]`` per channel chunk, reduced along axis 0 (the channels).

* contiguous x (``sp == 1``, channels strided by P): tiles of 32 channels x 128 positions, so
  every channel row is a 256-byte contiguous run (bf16) and loads coalesce along the spatial
  dim. More channels than one chunk: a statistics pass accumulating squares in a 2-D fp32
  register tile (one cross-warp reduction at the end), then an output pass that re-reads the
  slab (``C x 128`` values, still in L1/L2).
* channels_last(_3d) (``sc == 1``): all channels of a position are one contiguous run; the
  tile is ``[next_pow2(C), 4096 / next_pow2(C)]``, a single pass from registers.

Triton specializes a stride equal to 1, so one kernel serves both layouts with the vectorized
accesses of each. fp32 math (``sqrt(C) / max(||x||, eps)``, SiLU as ``y / (1 + exp(-y))``), one
rounding with ties to even (``triton_math.narrow``). Offsets are int64.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math


@dataclass(frozen=True)
class ChannelConfig:
    block_c: int
    block_p: int
    chunks: int
    num_warps: int

    def launch_options(self, platform: str) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}

    @classmethod
    def from_heuristic(cls, C: int, elem_bytes: int, channels_last: bool, platform: str,
                       arch: int | str | None = None) -> ChannelConfig:
        return _channel_config(C, elem_bytes, channels_last, platform)


# Elements per tile (8 KB of bf16).
_TILE = 4096
# contiguous layout, chunked path: bytes of one program's [C, BLOCK_P] slab
_SLAB_BYTES = 32768
# channels_last rows wider than this are processed in chunks (two passes) instead of one tile
_MAX_ROW = 2048


@functools.cache
def _channel_config(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """Launch rule, from a sweep on one H200 (session 3, bf16, Wan-VAE shapes; tools/gpu/
    channel_rms_norm_sweep.py, docs/benchmarks/channel_rms_norm_sweep_h200.json):

    * contiguous: the two-pass slab of the first rule (8 warps) stays. At C = 96 (32 channels x
      128 positions x 3 chunks) it was the best of 13 tiles, 68.3% of copy; at C = 384 its
      128 x 32 x 3 slab ran 66.9% in the session's bench, the sweep's 32 x 128 x 12 58.1%. One
      pass over a whole ``[next_pow2(C), BLOCK_P]`` register tile reached 61.0% / 54.6% at best.
    * channels_last: one tile of whole channel rows with 4 warps (four 16-byte accesses per
      thread): 74.1% at C = 96, 75.0% at C = 384; the 8 warps of the first rule gave 64.3% / 62.1%.
    """
    warp = 64 if platform == "hip" else 32
    full = next_pow2(max(C, 1))
    if channels_last:
        block_c = min(full, _MAX_ROW)
        block_p = max(1, _TILE // block_c)
    else:
        # runs of up to 256 bytes per channel, and a slab (C x block_p, re-read by the output
        # pass) of at most ~32 KB so the slabs of all resident programs stay in L2
        block_p = max(32, min(256 // elem_bytes, next_pow2(_SLAB_BYTES // (max(C, 1) * elem_bytes) + 1) // 2))
        block_c = min(full, max(1, _TILE // block_p))
    chunks = -(-max(C, 1) // block_c)
    per_thread = 4 if channels_last else 2  # 16-byte accesses per thread
    warps = max(1, min(8, block_c * block_p * elem_bytes // (16 * warp * per_thread)))
    return ChannelConfig(block_c=block_c, block_p=block_p, chunks=chunks, num_warps=warps)


@triton.jit
def _finish(x, inv, G, BIAS, c, cmask, HAS_BIAS: tl.constexpr, SILU: tl.constexpr):
    g = tl.load(G + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = x * inv[None, :] * g[:, None]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
    if SILU:
        y = y / (1.0 + tl.exp(-y))
    return y


@triton.jit(do_not_specialize=["n_pblk", "eps"])
def _channel_rms_kernel(
    X, G, BIAS, Y,
    C, P, n_pblk, sb, sc, sp, osb, osc, osp, scale, eps,
    BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, CHUNKS: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    b = pid // n_pblk
    p = (pid - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    pmask = p < P
    x_base = X + b * sb
    y_base = Y + b * osb
    x_p = (p * sp)[None, :]
    y_p = (p * osp)[None, :]
    if CHUNKS == 1:
        c = tl.arange(0, BLOCK_C)
        cmask = c < C
        mask = cmask[:, None] & pmask[None, :]
        c64 = c.to(tl.int64)
        x = tl.load(x_base + c64[:, None] * sc + x_p, mask=mask, other=0.0, eviction_policy="evict_first")
        x = x.to(tl.float32)
        inv = scale / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), eps)
        y = _finish(x, inv, G, BIAS, c, cmask, HAS_BIAS, SILU)
        tl.store(y_base + c64[:, None] * osc + y_p, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)
    else:
        acc = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
        for k in tl.range(0, CHUNKS):
            c = k * BLOCK_C + tl.arange(0, BLOCK_C)
            mask = (c < C)[:, None] & pmask[None, :]
            x = tl.load(x_base + c.to(tl.int64)[:, None] * sc + x_p, mask=mask, other=0.0,
                        eviction_policy="evict_last").to(tl.float32)
            acc += x * x
        inv = scale / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        for k in tl.range(0, CHUNKS):
            c = k * BLOCK_C + tl.arange(0, BLOCK_C)
            cmask = c < C
            mask = cmask[:, None] & pmask[None, :]
            c64 = c.to(tl.int64)
            x = tl.load(x_base + c64[:, None] * sc + x_p, mask=mask, other=0.0,
                        eviction_policy="evict_first").to(tl.float32)
            y = _finish(x, inv, G, BIAS, c, cmask, HAS_BIAS, SILU)
            tl.store(y_base + c64[:, None] * osc + y_p, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


def config_for(geom, dtype: torch.dtype, device: torch.device) -> ChannelConfig:
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    return ChannelConfig.from_heuristic(geom.C, dtype.itemsize, geom.channels_last, plat, arch)


def prepare(geom, x, gamma, bias, silu=False, config: ChannelConfig | None = None):
    """A runner ``(x, gamma, bias, eps, silu) -> out`` for one call signature (``silu`` is fixed
    by the plan: the API keeps one plan cache per value)."""
    from sgl_diffusion_core import PreparedLaunch

    cfg = config or config_for(geom, x.dtype, x.device)
    n_pblk = -(-geom.P // cfg.block_p)
    launch_silu = bool(silu)
    launches = {}
    scalars = (geom.C, geom.P, n_pblk, geom.sb, geom.sc, geom.sp, geom.out_sb, geom.out_sc, geom.out_sp,
               float(geom.C) ** 0.5)

    def launch_for(s: bool):
        lf = launches.get(s)
        if lf is None:
            lf = launches[s] = PreparedLaunch(
                _channel_rms_kernel,
                (geom.B * n_pblk,),
                {"BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, "CHUNKS": cfg.chunks,
                 "HAS_BIAS": bias is not None, "SILU": s},
                device=x.device,
                n_ptrs=4,
                options=cfg.launch_options(tensor_platform(x.device)),
            )
        return lf

    launch_for(launch_silu)
    shape, strides, dtype, device = geom.shape, geom.out_strides, x.dtype, x.device

    def run(x, gamma, bias, eps, silu):
        out = torch.empty_strided(shape, strides, dtype=dtype, device=device)
        launch_for(bool(silu))(x, gamma, x if bias is None else bias, out, *scalars, eps)
        return out

    return run


def channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
    geom,
    config: ChannelConfig | None = None,
) -> torch.Tensor:
    """Launch the kernel once. ``geom`` comes from ``describe_channel_rms_norm`` (validated inputs)."""
    return prepare(geom, x, gamma, bias, silu, config)(x, gamma, bias, eps, silu)


channel_rms_norm.prepare = prepare


def aot_variants(platform: str = "cuda"):
    """Wan-VAE channel counts (96, 192, 384, 768; 1024 for HunyuanVideo) in both memory formats,
    bf16/fp16/fp32, with SiLU and bias (the resblock form) and without."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for C in (96, 192, 384, 768, 1024):
            for cl in (False, True):
                cfg = _channel_config(C, esize, cl, platform)
                full = C != 768
                idx = "i64" if C == 1024 else "i32"
                sig = {n: f"*{dt}" for n in ("X", "G", "BIAS", "Y")}
                sig.update({n: idx for n in ("C", "P", "n_pblk", "sb", "sc", "sp", "osb", "osc", "osp")})
                sig.update({"scale": "fp32", "eps": "fp32"})
                sig.update({n: "constexpr" for n in ("BLOCK_C", "BLOCK_P", "CHUNKS", "HAS_BIAS", "SILU")})
                # the specialization a real launch gets: the unit stride of the layout
                sig["sc" if cl else "sp"] = "constexpr"
                sig["osc" if cl else "osp"] = "constexpr"
                const = {"BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, "CHUNKS": cfg.chunks,
                         "HAS_BIAS": full, "SILU": full, ("sc" if cl else "sp"): 1, ("osc" if cl else "osp"): 1}
                name = (f"channel_rms_norm[{dt},C={C},{'channels_last' if cl else 'contiguous'},"
                        f"tile={cfg.block_c}x{cfg.block_p}x{cfg.chunks},w={cfg.num_warps},silu={full},{idx}]")
                out.append(AotVariant(name=name, kernel=_channel_rms_kernel, signature=sig, constexprs=const,
                                      num_warps=cfg.num_warps, num_stages=1, options={"enable_fp_fusion": True}))
    return out
