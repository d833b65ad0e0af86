"""Triton kernels for ``group_norm_silu`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

A group spans ``Cg = C / G`` channels x every spatial position (millions of elements at VAE
sizes), so the op takes two passes over x and three small launches:

1. ``_gn_stats_kernel``: each program reads ``iters`` tiles ``[BLOCK_C, BLOCK_P]`` (whole
   groups of channels x positions) of one span of positions, accumulating per channel the sums
   of ``x - K`` and ``(x - K)^2`` with ``K`` the channel's first value in the span (shifted sums:
   no cancellation for data far from 0). At the end it turns them into per-channel mean and M2,
   combines the channels of each group (equal counts: mean of means, M2 + n * spread of the
   means) and writes one ``(mean, M2)`` partial per (sample, group, span) in fp32.
2. ``_gn_finalize_kernel``: one program per (sample, group) combines its partials, BLOCK_S at a
   time with the exact two-pass formula over the block, then block to block with Chan's update,
   and writes ``(mean, rstd)``.
3. ``_gn_apply_kernel``: ``(x - mean) * rstd * weight + bias``, SiLU, one rounding (ties to even),
   in x's memory format.

Both heavy kernels address x as ``[B, C, P]`` with strides ``(sb, sc, sp)``; Triton specializes
the unit stride, so contiguous x (``sp == 1``: 256-position runs per channel) and
channels_last(_3d) (``sc == 1``: whole channel rows) each get coalesced 16-byte accesses from
one kernel. Offsets are int64.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math


@dataclass(frozen=True)
class GroupConfig:
    gpb: int  # groups per channel block
    block_c: int  # next_pow2(gpb * Cg)
    block_p: int
    num_warps: int
    stats_programs: int = 2048  # how many programs the statistics pass aims for
    finalize_block: int = 1024  # partials combined per step of the finalize kernel

    def launch_options(self, platform: str) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}

    @classmethod
    def from_heuristic(cls, C: int, G: int, elem_bytes: int, channels_last: bool, platform: str,
                       arch: int | str | None = None) -> GroupConfig:
        return _group_config(C, G, elem_bytes, channels_last, platform)


# Elements per tile and the stats programs to aim for (a few waves on 132 SMs). Not tuned on
# hardware (written without a GPU): the first H200 run of the bench decides.
_TILE = 4096
_STATS_PROGRAMS = 2048
_FINALIZE_BLOCK = 1024
# Under the Triton interpreter (tensors on the CPU, a testing tool) the split aims much lower,
# so the CPU lane's small shapes run the multi-tile loop and several finalize steps (Chan's
# update between blocks of partials), which production shapes reach on the GPU.
_INTERPRETER_STATS_PROGRAMS = 4
_INTERPRETER_FINALIZE_BLOCK = 2


@functools.cache
def _group_config(C: int, G: int, elem_bytes: int, channels_last: bool, platform: str) -> GroupConfig:
    warp = 64 if platform == "hip" else 32
    Cg = max(C // max(G, 1), 1)
    if channels_last:  # whole channel rows when they fit: one contiguous run per position
        gpb = G if next_pow2(C) <= 1024 else max(1, 1024 // Cg)
    else:  # ~16 channels of whole groups, 256-position runs each
        gpb = max(1, min(G, 16 // Cg))
    block_c = next_pow2(gpb * Cg)
    block_p = max(1, _TILE // block_c)
    warps = max(1, min(8, block_c * block_p * elem_bytes // (16 * warp * 2)))
    if platform == "cpu":
        return GroupConfig(gpb, block_c, block_p, warps, _INTERPRETER_STATS_PROGRAMS, _INTERPRETER_FINALIZE_BLOCK)
    return GroupConfig(gpb, block_c, block_p, warps, _STATS_PROGRAMS, _FINALIZE_BLOCK)


@triton.jit(do_not_specialize=["n_span", "iters"])
def _gn_stats_kernel(
    X, PART,
    C, P, G, n_cblk, n_span, iters, sb, sc, sp,
    CG: tl.constexpr, GPB: tl.constexpr, GPB_P2: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    span = pid % n_span
    rest = pid // n_span
    cb = rest % n_cblk
    b = rest // n_cblk
    c_loc = tl.arange(0, BLOCK_C)
    g_loc = c_loc // CG
    c = cb * (GPB * CG) + c_loc
    cmask = (c_loc < GPB * CG) & (c < C)
    x_rows = X + b * sb + c.to(tl.int64)[:, None] * sc
    span_len = iters * BLOCK_P
    p0 = span * span_len
    k = tl.load(x_rows + p0 * sp, mask=cmask[:, None], other=0.0).to(tl.float32)  # [BLOCK_C, 1]
    s1 = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    for i in tl.range(0, iters):
        p = p0 + i * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
        mask = cmask[:, None] & (p < P)[None, :]
        x = tl.load(x_rows + (p * sp)[None, :], mask=mask, other=0.0, eviction_policy="evict_first")
        d = tl.where(mask, x.to(tl.float32) - k, 0.0)
        s1 += d
        s2 += d * d
    n = tl.minimum(P - p0, span_len).to(tl.float32)  # positions of this span (>= 1)
    S1 = tl.sum(s1, axis=1)
    S2 = tl.sum(s2, axis=1)
    mean_c = tl.sum(k, axis=1) + S1 / n
    m2_c = tl.maximum(S2 - S1 * (S1 / n), 0.0)
    j = tl.arange(0, GPB_P2)
    onehot = (g_loc[:, None] == j[None, :]) & cmask[:, None]
    mean_g = tl.sum(tl.where(onehot, mean_c[:, None], 0.0), axis=0) / CG
    dev = tl.where(onehot, mean_c[:, None] - mean_g[None, :], 0.0)
    m2_g = tl.sum(tl.where(onehot, m2_c[:, None], 0.0), axis=0) + n * tl.sum(dev * dev, axis=0)
    g = cb * GPB + j
    gmask = (j < GPB) & (g < G)
    out = PART + ((b * G + g) * n_span + span) * 2
    tl.store(out, mean_g, mask=gmask)
    tl.store(out + 1, m2_g, mask=gmask)


@triton.jit(do_not_specialize=["P", "n_span", "span_len", "eps"])
def _gn_finalize_kernel(PART, STATS, P, n_span, span_len, eps, CG: tl.constexpr, BLOCK_S: tl.constexpr):
    bg = tl.program_id(0).to(tl.int64)
    base = PART + bg * n_span * 2
    n_tot = tl.zeros([], dtype=tl.float32)
    mean = tl.zeros([], dtype=tl.float32)
    m2 = tl.zeros([], dtype=tl.float32)
    for s0 in tl.range(0, n_span, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        m = s < n_span
        mu = tl.load(base + s * 2, mask=m, other=0.0)
        q = tl.load(base + s * 2 + 1, mask=m, other=0.0)
        cnt = tl.where(m, CG * tl.minimum(P - s.to(tl.int64) * span_len, span_len).to(tl.float32), 0.0)
        n_b = tl.sum(cnt, axis=0)
        mean_b = tl.sum(cnt * mu, axis=0) / n_b
        d = tl.where(m, mu - mean_b, 0.0)
        m2_b = tl.sum(q, axis=0) + tl.sum(cnt * d * d, axis=0)
        n_new = n_tot + n_b
        delta = mean_b - mean
        mean = mean + delta * (n_b / n_new)
        m2 = m2 + m2_b + delta * delta * (n_tot * (n_b / n_new))
        n_tot = n_new
    rstd = 1.0 / tl.sqrt(m2 / n_tot + eps)
    tl.store(STATS + bg * 2, mean)
    tl.store(STATS + bg * 2 + 1, rstd)


@triton.jit(do_not_specialize=["n_pblk"])
def _gn_apply_kernel(
    X, W, BIAS, STATS, Y,
    C, P, G, n_cblk, n_pblk, sb, sc, sp, osb, osc, osp,
    CG: tl.constexpr, GPB: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr,
):
    pid = tl.program_id(0).to(tl.int64)
    pb = pid % n_pblk
    rest = pid // n_pblk
    cb = rest % n_cblk
    b = rest // n_cblk
    c_loc = tl.arange(0, BLOCK_C)
    c = cb * (GPB * CG) + c_loc
    cmask = (c_loc < GPB * CG) & (c < C)
    p = pb * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    mask = cmask[:, None] & (p < P)[None, :]
    st = STATS + (b * G + c // CG) * 2
    mean = tl.load(st, mask=cmask, other=0.0, eviction_policy="evict_last")
    a = tl.load(st + 1, mask=cmask, other=0.0, eviction_policy="evict_last")
    if HAS_W:
        a = a * tl.load(W + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    c64 = c.to(tl.int64)
    x = tl.load(X + b * sb + c64[:, None] * sc + (p * sp)[None, :], mask=mask, other=0.0,
                eviction_policy="evict_first").to(tl.float32)
    y = (x - mean[:, None]) * a[:, None]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
    if SILU:
        y = tl.where(mask, y, 0.0)  # masked lanes hold -mean * rstd, which exp() could overflow on
        y = y / (1.0 + tl.exp(-y))
    tl.store(Y + b * osb + c64[:, None] * osc + (p * osp)[None, :], triton_math.narrow(y, Y.dtype.element_ty),
             mask=mask)


def config_for(geom, dtype: torch.dtype, device: torch.device) -> GroupConfig:
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    return GroupConfig.from_heuristic(geom.x.C, geom.G, dtype.itemsize, geom.x.channels_last, plat, arch)


def stats_split(geom, cfg: GroupConfig, n_cblk: int) -> tuple[int, int]:
    """``(iters, n_span)``: tiles per stats program and spans per (sample, channel block)."""
    g = geom.x
    n_pblk = -(-g.P // cfg.block_p)
    iters = max(1, -(-(g.B * n_cblk * n_pblk) // cfg.stats_programs))
    return iters, -(-g.P // (iters * cfg.block_p))


def prepare(geom, x, weight, bias, config: GroupConfig | None = None):
    """A runner ``(x, weight, bias, num_groups, eps, silu) -> out`` for one call signature."""
    from sgl_diffusion_core import PreparedLaunch

    g, G, Cg = geom.x, geom.G, geom.Cg
    cfg = config or config_for(geom, x.dtype, x.device)
    plat = tensor_platform(x.device)
    n_cblk = -(-G // cfg.gpb)
    n_pblk = -(-g.P // cfg.block_p)
    iters, n_span = stats_split(geom, cfg, n_cblk)
    stats = PreparedLaunch(
        _gn_stats_kernel, (g.B * n_cblk * n_span,),
        {"CG": Cg, "GPB": cfg.gpb, "GPB_P2": next_pow2(cfg.gpb), "BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p},
        device=x.device, n_ptrs=2, options=cfg.launch_options(plat),
    )
    finalize = PreparedLaunch(
        _gn_finalize_kernel, (g.B * G,), {"CG": Cg, "BLOCK_S": min(cfg.finalize_block, next_pow2(n_span))},
        device=x.device, n_ptrs=2, options={"num_warps": 4, "num_stages": 1},
    )
    apply = PreparedLaunch(
        _gn_apply_kernel, (g.B * n_cblk * n_pblk,),
        {"CG": Cg, "GPB": cfg.gpb, "BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p,
         "HAS_W": weight is not None, "HAS_BIAS": bias is not None, "SILU": geom.silu},
        device=x.device, n_ptrs=5, options=cfg.launch_options(plat),
    )
    stats_args = (g.C, g.P, G, n_cblk, n_span, iters, g.sb, g.sc, g.sp)
    apply_args = (g.C, g.P, G, n_cblk, n_pblk, g.sb, g.sc, g.sp, g.out_sb, g.out_sc, g.out_sp)
    shape, strides, dtype, device = g.shape, g.out_strides, x.dtype, x.device
    span_len = iters * cfg.block_p

    def run(x, weight, bias, num_groups, eps, silu):
        part = torch.empty(g.B * G * n_span * 2, dtype=torch.float32, device=device)
        st = torch.empty(g.B * G * 2, dtype=torch.float32, device=device)
        out = torch.empty_strided(shape, strides, dtype=dtype, device=device)
        stats(x, part, *stats_args)
        finalize(part, st, g.P, n_span, span_len, eps)
        apply(x, x if weight is None else weight, x if bias is None else bias, st, out, *apply_args)
        return out

    return run


def group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
    geom,
    config: GroupConfig | None = None,
) -> torch.Tensor:
    """Launch the three kernels once. ``geom`` comes from ``describe_group_norm_silu``."""
    return prepare(geom, x, weight, bias, config)(x, weight, bias, num_groups, eps, silu)


group_norm_silu.prepare = prepare


def aot_variants(platform: str = "cuda"):
    """VAE configurations (C = 96, 192, 384, 512 with 32 groups; C=6 / 3 groups) in both memory
    formats and bf16/fp16/fp32: the three kernels of each."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for C, G in ((96, 32), (192, 32), (384, 32), (512, 32), (6, 3)):
            for cl in (False, True):
                cfg = _group_config(C, G, esize, cl, platform)
                Cg = C // G
                tag = f"{dt},C={C},G={G},{'channels_last' if cl else 'contiguous'},tile={cfg.block_c}x{cfg.block_p}"
                unit = ("sc", "osc") if cl else ("sp", "osp")
                sig = {"X": f"*{dt}", "PART": "*fp32"}
                sig.update({n: "i32" for n in ("C", "P", "G", "n_cblk", "n_span", "iters", "sb", "sc", "sp")})
                sig.update({n: "constexpr" for n in ("CG", "GPB", "GPB_P2", "BLOCK_C", "BLOCK_P")})
                sig[unit[0]] = "constexpr"
                const = {"CG": Cg, "GPB": cfg.gpb, "GPB_P2": next_pow2(cfg.gpb), "BLOCK_C": cfg.block_c,
                         "BLOCK_P": cfg.block_p, unit[0]: 1}
                out.append(AotVariant(name=f"group_norm_silu.stats[{tag},w={cfg.num_warps}]", kernel=_gn_stats_kernel,
                                      signature=sig, constexprs=const, num_warps=cfg.num_warps,
                                      options={"enable_fp_fusion": True}))
                sig = {"X": f"*{dt}", "W": f"*{dt}", "BIAS": f"*{dt}", "STATS": "*fp32", "Y": f"*{dt}"}
                sig.update({n: "i32" for n in ("C", "P", "G", "n_cblk", "n_pblk", "sb", "sc", "sp", "osb", "osc",
                                               "osp")})
                sig.update({n: "constexpr" for n in ("CG", "GPB", "BLOCK_C", "BLOCK_P", "HAS_W", "HAS_BIAS",
                                                     "SILU")})
                sig[unit[0]] = sig[unit[1]] = "constexpr"
                const = {"CG": Cg, "GPB": cfg.gpb, "BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, "HAS_W": True,
                         "HAS_BIAS": True, "SILU": True, unit[0]: 1, unit[1]: 1}
                out.append(AotVariant(name=f"group_norm_silu.apply[{tag},w={cfg.num_warps}]", kernel=_gn_apply_kernel,
                                      signature=sig, constexprs=const, num_warps=cfg.num_warps,
                                      options={"enable_fp_fusion": True}))
        for Cg in (3, 6, 12, 2):
            sig = {"PART": "*fp32", "STATS": "*fp32", "P": "i32", "n_span": "i32", "span_len": "i32", "eps": "fp32",
                   "CG": "constexpr", "BLOCK_S": "constexpr"}
            if dt == "bf16":  # the finalize kernel does not depend on x's dtype
                out.append(AotVariant(name=f"group_norm_silu.finalize[Cg={Cg}]", kernel=_gn_finalize_kernel,
                                      signature=sig, constexprs={"CG": Cg, "BLOCK_S": _FINALIZE_BLOCK}, num_warps=4,
                                      options={"enable_fp_fusion": True}))
    return out
