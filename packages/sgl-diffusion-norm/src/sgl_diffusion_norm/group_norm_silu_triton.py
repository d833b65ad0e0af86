"""Launch rule and launcher of ``group_norm_silu``'s Triton kernels (CUDA and ROCm; CPU under
``TRITON_INTERPRET=1``); the kernels are in ``_group_norm_kernels_triton.py``: statistics, finalize
and apply, three launches over two passes of x.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math, warp_size, warps_for

from ._channels import split_channels
from ._group_norm_kernels_triton import (
    _gn_apply_flat_kernel,
    _gn_apply_kernel,
    _gn_apply_rows_kernel,
    _gn_finalize_kernel,
    _gn_stats_kernel,
    _gn_stats_rows_kernel,
)


@dataclass(frozen=True)
class GroupConfig:
    """The statistics tiles (``gpb`` whole groups per channel block of ``block_c`` channels x
    ``block_p`` positions; ``stats_rows > 0``: the rows statistics kernel, steps of that many
    positions x all channels) and the apply pass: ``apply_flat > 0`` the flat kernel on contiguous x
    (positions per program, one channel row each), ``apply_rows > 0`` the rows kernel on
    channels_last x with dense rows (positions per step, ``apply_iters`` steps per program), else
    the tile kernel over the statistics tiles."""

    gpb: int  # groups per channel block
    block_c: int  # channel block: next_pow2(gpb * Cg)
    block_p: int
    num_warps: int
    stats_programs: int = 2048  # how many programs the statistics pass aims for
    finalize_block: int = 1024  # partials combined per step of the finalize kernel
    apply_warps: int = 0
    fast: bool | None = False  # SiLU's fast-math forms (None: by the output dtype, triton_math.fast_level)
    apply_flat: int = 0
    apply_rows: int = 0
    stats_rows: int = 0
    # the rows kernels' channel tiles: False, one tile of next_pow2(C) channels (C = 96 / 192 / 384:
    # a quarter of its lanes masked); True, two dense power-of-two tiles (``split_channels``:
    # 64 + 32, 128 + 64, 256 + 128)
    split: bool = False
    # the rows apply: steps of ``apply_rows`` positions per program (the next step's loads in flight)
    apply_iters: int = 1

    def launch_options(self, platform: str) -> dict:
        return {"num_warps": self.num_warps, "num_stages": 1}

    def apply_launch_options(self, platform: str) -> dict:
        return {"num_warps": self.apply_warps or self.num_warps, "num_stages": 1}

    @classmethod
    def from_heuristic(cls, C: int, G: int, elem_bytes: int, channels_last: bool, platform: str,
                       arch: int | str | None = None) -> GroupConfig:
        """The launch rule, :func:`_v2_config`: 87.2 / 90.4 / 89.7% of the two-pass bound at
        c96-cl / c192-cl / c384-cl and 91.7-93.8% contiguous (H200, bf16:
        docs/benchmarks/group_norm_silu_bench_h200.json)."""
        return _v2_config(C, G, elem_bytes, channels_last, platform)


# Elements per tile and the stats programs to aim for (a few waves on 132 SMs); not tuned by a
# sweep on hardware.
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
    """The statistics tiles (the base of :func:`_v2_config`, and the whole rule where it keeps them):
    whole groups of channels x positions, 4096 elements, two 16-byte accesses per thread."""
    warp = warp_size(platform)
    Cg = max(C // max(G, 1), 1)
    if channels_last:  # whole channel rows when they fit: one contiguous run per position
        gpb = G if next_pow2(C) <= 1024 else max(1, 1024 // Cg)
    else:  # ~16 channels of whole groups, 256-position runs each
        gpb = max(1, min(G, 16 // Cg))
    block_c = next_pow2(gpb * Cg)
    block_p = max(1, _TILE // block_c)
    warps = warps_for(block_c * block_p * elem_bytes, 16 * 2, warp)
    if platform == "cpu":
        return GroupConfig(gpb, block_c, block_p, warps, _INTERPRETER_STATS_PROGRAMS, _INTERPRETER_FINALIZE_BLOCK)
    return GroupConfig(gpb, block_c, block_p, warps, _STATS_PROGRAMS, _FINALIZE_BLOCK)


# the apply pass: bytes of x per program (the flat kernel: one channel row's run; the rows kernel:
# positions x padded channels), four 16-byte accesses per thread
_APPLY_BYTES = 8192
_APPLY_ACCESSES = 4
_APPLY_MAX_C = 4096  # channels_last with wider rows keeps the statistics tiles for both passes
# the statistics on channels_last x: bytes of x per step of the rows kernel (positions x padded
# channels) and warps. H200 sweep (bf16, docs/benchmarks/vae_norm_sweep_h200.json, %
# of the two-pass bound at C = 192 / 96 / 384): 8 KB x 4 warps 81.8 / 77.0 / 68.2%, 16 KB x 8
# warps 76.4 / 72.8 / 66.4%, the statistics tiles 71.3 / 71.5 / 59.5%
_STATS_ROWS_BYTES = 8192
_STATS_THREAD_BYTES = 64
# ... at least 16 positions per step (C = 384: 16 KB steps, 8 warps, 78.8% against 72.4% with 8 KB
# and 4 warps, docs/benchmarks/vae_norm_sweep_h200.json; C = 96 / 192 keep 32 / 16 positions)
_STATS_MIN_ROWS = 16
# ... and programs: fewer, longer programs amortize each program's group combination (H200,
# docs/benchmarks/vae_norm_sweep_h200.json: 512 programs 85.3 / 81.0 / 72.7% at C = 192 / 96 / 384,
# 1024 84.3 / 79.9 / 71.3%, 2048 82.2 / 77.2 / 68.3%, 4096 77.6 / 72.5 / 63.0%; the loop
# unrolled 2 / 4 / 8 times: mixed, -10 to +7 points). With two dense channel tiles
# the best count is one wave of 2048 warps in all (C = 384, 8
# warps: 256 programs 77.8-83.3% against 512 74.2-79.0%; C = 96 / 192, 4 warps: 512 programs
# 79.3-85.9% against 256 70.6-75.7%)
_STATS_ROWS_WARPS = 2048
# the rows apply: steps of 2 KB (positions x padded channels, one warp) and 4 steps per
# program, the next step's loads issued first. H200 sweeps at C = 192 / 96 / 384: one 8 KB step per
# program 79.3 / 79.8 / 74.2%, four 4 KB steps 85.3-86.2 / 82.1-83.0 / 80.9-81.9%
# four 2 KB steps 87.5 / 83.9 / 86.7% against 86.3 / 83.2 / 86.3% for 4 KB (with the
# statistics at one wave; docs/benchmarks/vae_norm_sweep_h200.json)
_APPLY_ROWS_BYTES = 2048
_APPLY_ITERS = 4
# the two dense channel tiles only where the smaller one's rows are at least this many bytes: at
# C = 96 (64 + 32 channels, 64-byte rows) one padded tile of 128 measured 86.3 / 86.4% against
# 83.3 / 82.8% (Triton's / torch's ptxas, SiLU's fast form); at C = 192 / 384
# (rows of 128 / 256 bytes) the dense tiles lead by 10-13 points (docs/benchmarks/vae_norm_sweep_h200.json)
_SPLIT_MIN_BYTES = 128


@functools.cache
def _v2_config(C: int, G: int, elem_bytes: int, channels_last: bool, platform: str) -> GroupConfig:
    """The launch rule. Contiguous x: the statistics tiles, then :func:`_gn_apply_flat_kernel`.
    channels_last x with dense rows: :func:`_gn_stats_rows_kernel` and :func:`_gn_apply_rows_kernel`,
    a position's channels as two dense channel tiles (``split``) except where the smaller dense tile
    has rows under 128 bytes (C = 96 in bf16: one padded tile), one wave of statistics warps and four
    2 KB apply steps per program (the constants above). Other strides: the statistics tiles for both
    passes. SiLU takes its fast forms for 16-bit outputs (``fast=None``). Why: the tile apply kernel
    ran at 38% (contiguous) / 45% (channels_last) of DRAM bandwidth and the statistics tiles at 28%
    on channels_last (Nsight Compute, H200, bf16, C = 384); the sweeps behind the constants are in
    docs/benchmarks/vae_norm_sweep_h200.json."""
    warp = warp_size(platform)
    base = _group_config(C, G, elem_bytes, channels_last, platform)
    if channels_last and next_pow2(C) > _APPLY_MAX_C:  # one register tile per position: bounded
        return base
    if channels_last:
        rows = max(1, _APPLY_ROWS_BYTES // (next_pow2(C) * elem_bytes))
        warps = warps_for(rows * next_pow2(C) * elem_bytes, 16 * _APPLY_ACCESSES, warp)
        row_bytes = next_pow2(C) * elem_bytes
        srows = max(_STATS_MIN_ROWS, _STATS_ROWS_BYTES // row_bytes) if next_pow2(C) <= 1024 else 0
        swarps = warps_for(srows * row_bytes, _STATS_THREAD_BYTES, warp)
        programs = max(1, _STATS_ROWS_WARPS // swarps) if srows and platform != "cpu" else base.stats_programs
        return dataclasses.replace(base, apply_rows=rows, apply_warps=warps, fast=None, stats_rows=srows,
                                   num_warps=swarps if srows else base.num_warps, stats_programs=programs,
                                   split=split_channels(C)[1] * elem_bytes >= _SPLIT_MIN_BYTES,
                                   apply_iters=_APPLY_ITERS)
    block = _APPLY_BYTES // elem_bytes
    return dataclasses.replace(base, apply_flat=block, apply_warps=warps_for(_APPLY_BYTES, 16 * _APPLY_ACCESSES, warp),
                               fast=None)


def channel_tiles(C: int, split: bool) -> tuple[int, int]:
    """The rows kernels' channel tiles ``(BLOCK_C, BLOCK_C2)``: one tile of ``next_pow2(C)``
    channels (``BLOCK_C2 == 0``), or with ``split`` the two power-of-two tiles of
    ``split_channels`` (384 -> 256 + 128); a power-of-two C stays one tile."""
    if not split:
        return next_pow2(max(C, 1)), 0
    a, b = split_channels(C)
    return (a, 0) if a == C else (a, b)


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


def _stats_launch(geom, cfg: GroupConfig, plat, device, n_cblk: int):
    """The statistics pass: ``(launch, its scalar arguments, rows per step, steps, spans)``.

    Rows of all channels per program where the rows are dense and C fits one tile, channel
    blocks otherwise."""
    from sgl_diffusion_core import PreparedLaunch

    g, G, Cg = geom.x, geom.G, geom.Cg
    if cfg.stats_rows and g.dense_rows and next_pow2(g.C) <= 1024:
        stats_block = cfg.stats_rows
        iters = max(1, -(-(g.B * -(-g.P // stats_block)) // cfg.stats_programs))
        n_span = -(-g.P // (iters * stats_block))
        ca, cb = channel_tiles(g.C, cfg.split)
        stats = PreparedLaunch(
            _gn_stats_rows_kernel, (g.B * n_span,),
            {"C": g.C, "G": G, "CG": Cg, "BLOCK_C": ca, "BLOCK_C2": cb, "G_P2": next_pow2(G), "ROWS": stats_block},
            device=device, n_ptrs=2, options=cfg.launch_options(plat),
        )
        stats_args = (g.P, n_span, iters, g.sb)
    else:
        stats_block = cfg.block_p
        iters, n_span = stats_split(geom, cfg, n_cblk)
        stats = PreparedLaunch(
            _gn_stats_kernel, (g.B * n_cblk * n_span,),
            {"CG": Cg, "GPB": cfg.gpb, "GPB_P2": next_pow2(cfg.gpb), "BLOCK_C": cfg.block_c,
             "BLOCK_P": cfg.block_p},
            device=device, n_ptrs=2, options=cfg.launch_options(plat),
        )
        stats_args = (g.C, g.P, G, n_cblk, n_span, iters, g.sb, g.sc, g.sp)
    return stats, stats_args, stats_block, iters, n_span


def prepare(geom, x, weight, bias, *, config: GroupConfig | None = None):
    """A runner ``(x, weight, bias, num_groups, eps, silu) -> out`` for one call signature."""
    from sgl_diffusion_core import PreparedLaunch

    g, G, Cg = geom.x, geom.G, geom.Cg
    cfg = config or config_for(geom, x.dtype, x.device)
    plat = tensor_platform(x.device)
    coef_out = False  # the rows apply reads per-channel (mean, rstd * weight) the finalize kernel writes
    affine = {"HAS_W": weight is not None, "HAS_BIAS": bias is not None, "SILU": geom.silu,
              "FAST": triton_math.fast_level(x.dtype, plat, cfg.fast)}
    n_cblk = -(-G // cfg.gpb)
    n_pblk = -(-g.P // cfg.block_p)
    stats, stats_args, stats_block, iters, n_span = _stats_launch(geom, cfg, plat, x.device, n_cblk)
    n_part = g.B * G * n_span * 2
    if cfg.apply_flat and g.sp == 1 and not g.channels_last:
        a_pblk = -(-g.P // cfg.apply_flat)
        apply = PreparedLaunch(
            _gn_apply_flat_kernel, (g.B * g.C * a_pblk,), {"CG": Cg, "BLOCK": cfg.apply_flat, **affine},
            device=x.device, n_ptrs=5, options=cfg.apply_launch_options(plat),
        )
        apply_args = (g.C, g.P, G, a_pblk, g.sb, g.sc, g.out_sb, g.out_sc)
    elif cfg.apply_rows and g.dense_rows:
        a_iters = max(1, min(cfg.apply_iters, -(-g.P // cfg.apply_rows)))
        a_prog = -(-g.P // (cfg.apply_rows * a_iters))
        ca, cb = channel_tiles(g.C, cfg.split)
        coef_out = True
        apply = PreparedLaunch(
            _gn_apply_rows_kernel, (g.B * a_prog,),
            {"C": g.C, "BLOCK_C": ca, "BLOCK_C2": cb, "ROWS": cfg.apply_rows,
             **{k: v for k, v in affine.items() if k != "HAS_W"}},
            device=x.device, n_ptrs=4, options=cfg.apply_launch_options(plat),
        )
        apply_args = (g.P, a_prog, a_iters, g.sb, g.out_sb, g.B * g.C)
    else:
        apply = PreparedLaunch(
            _gn_apply_kernel, (g.B * n_cblk * n_pblk,),
            {"CG": Cg, "GPB": cfg.gpb, "BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, **affine},
            device=x.device, n_ptrs=5, options=cfg.launch_options(plat),
        )
        apply_args = (g.C, g.P, G, n_cblk, n_pblk, g.sb, g.sc, g.sp, g.out_sb, g.out_sc, g.out_sp)
    finalize = PreparedLaunch(
        _gn_finalize_kernel, (g.B * G,),
        {"CG": Cg, "BLOCK_S": min(cfg.finalize_block, next_pow2(n_span)), "COEF_OUT": coef_out,
         "HAS_W": weight is not None, "CG_P2": next_pow2(Cg)},
        device=x.device, n_ptrs=4, options={"num_warps": 4, "num_stages": 1},
    )
    shape, strides, dtype, device = g.shape, g.out_strides, x.dtype, x.device
    span_len = iters * stats_block

    def run(x, weight, bias, num_groups, eps, silu):
        part = torch.empty(n_part, dtype=torch.float32, device=device)
        st = torch.empty(g.B * G * 2, dtype=torch.float32, device=device)
        out = torch.empty_strided(shape, strides, dtype=dtype, device=device)
        stats(x, part, *stats_args)
        w = x if weight is None else weight
        if coef_out:
            coef = torch.empty(2 * g.B * g.C, dtype=torch.float32, device=device)
            finalize(part, st, w, coef, g.P, n_span, span_len, G, g.B * g.C, eps)
            apply(x, x if bias is None else bias, coef, out, *apply_args)
        else:
            finalize(part, st, w, st, g.P, n_span, span_len, G, 0, eps)
            apply(x, w, x if bias is None else bias, st, out, *apply_args)
        return out

    return run



# what a VAE launch sees as multiples of 16: aligned tensors, P = T * H * W, C * P, C = 96 ...
_DIVISIBLE = ("X", "PART", "W", "BIAS", "STATS", "Y", "P", "sb", "sc", "sp", "osb", "osc", "osp")


# why a build's loads are narrower than 128 bits (AotVariant.narrow_loads; the ROCm lanes check it)
_NARROW_TILES = ("the general tile kernel (channels_last views whose rows are not dense): Triton does not "
                 "vectorize its channel tile, masked against the runtime channel count; dense rows take the rows "
                 "kernels, which load 128 bits")
_NARROW_ROWS = "rows of fewer than 8 channels hold no whole 16-byte vector"


def _variant(name: str, kernel, sig: dict, const: dict, warps: int, narrow: str = ""):
    from sgl_diffusion_core import AotVariant

    sig.update({n: "constexpr" for n in const})
    return AotVariant(name=name, kernel=kernel, signature=sig, constexprs=const, num_warps=warps,
                      options={"enable_fp_fusion": True},
                      divisible_by_16=tuple(n for n in _DIVISIBLE if n in kernel.arg_names), narrow_loads=narrow)


def _tile_variants(dt: str, cfg: GroupConfig, C: int, G: int, cl: bool, affine: dict, tag: str) -> list:
    """The statistics tiles kernel and the tile apply kernel of one configuration."""
    sig = {"X": f"*{dt}", "PART": "*fp32"}
    sig.update({n: "i32" for n in ("C", "P", "G", "n_cblk", "n_span", "iters", "sb", "sc", "sp")})
    const = {"CG": C // G, "GPB": cfg.gpb, "GPB_P2": next_pow2(cfg.gpb), "BLOCK_C": cfg.block_c,
             "BLOCK_P": cfg.block_p, ("sc" if cl else "sp"): 1}
    narrow = _NARROW_TILES if cl else ""
    out = [_variant(f"group_norm_silu.stats[{tag},w={cfg.num_warps}]", _gn_stats_kernel, sig, const, cfg.num_warps,
                    narrow)]
    sig = {"X": f"*{dt}", "W": f"*{dt}", "BIAS": f"*{dt}", "STATS": "*fp32", "Y": f"*{dt}"}
    sig.update({n: "i32" for n in ("C", "P", "G", "n_cblk", "n_pblk", "sb", "sc", "sp", "osb", "osc", "osp")})
    const = {"CG": C // G, "GPB": cfg.gpb, "BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, **affine,
             **{n: 1 for n in (("sc", "osc") if cl else ("sp", "osp"))}}
    out.append(_variant(f"group_norm_silu.apply[{tag},w={cfg.num_warps}]", _gn_apply_kernel, sig, const,
                        cfg.num_warps, narrow))
    return out


def _rule_variants(dt: str, cfg: GroupConfig, C: int, G: int, cl: bool, affine: dict, tag: str) -> list:
    """The rule's apply kernel on contiguous x (flat) / channels_last x with dense rows (rows, and
    its statistics kernel)."""
    warps = cfg.apply_launch_options("cuda")["num_warps"]
    if not cl:
        sig = {"X": f"*{dt}", "W": f"*{dt}", "BIAS": f"*{dt}", "STATS": "*fp32", "Y": f"*{dt}"}
        sig.update({n: "i32" for n in ("C", "P", "G", "n_pblk", "sb", "sc", "osb", "osc")})
        const = {"CG": C // G, "BLOCK": cfg.apply_flat, **affine}
        return [_variant(f"group_norm_silu.apply[{tag},flat {cfg.apply_flat},w={warps}]", _gn_apply_flat_kernel,
                         sig, const, warps)]
    ca, cb = channel_tiles(C, cfg.split)
    sig = {"X": f"*{dt}", "BIAS": f"*{dt}", "COEF": "*fp32", "Y": f"*{dt}"}
    sig.update({n: "i32" for n in ("P", "n_prog", "iters", "sb", "osb", "half")})
    const = {"C": C, "BLOCK_C": ca, "BLOCK_C2": cb, "ROWS": cfg.apply_rows,
             **{k: v for k, v in affine.items() if k != "HAS_W"}}
    narrow = _NARROW_ROWS if C < 8 else ""
    out = [_variant(f"group_norm_silu.apply[{tag},rows {cfg.apply_rows}x{ca}+{cb},w={warps}]",
                    _gn_apply_rows_kernel, sig, const, warps, narrow)]
    if cfg.stats_rows:
        sig = {"X": f"*{dt}", "PART": "*fp32", "P": "i32", "n_span": "i32", "iters": "i32", "sb": "i32"}
        const = {"C": C, "G": G, "CG": C // G, "BLOCK_C": ca, "BLOCK_C2": cb, "G_P2": next_pow2(G),
                 "ROWS": cfg.stats_rows}
        out.append(_variant(f"group_norm_silu.stats[{tag},rows={cfg.stats_rows}x{ca}+{cb},w={cfg.num_warps}]",
                            _gn_stats_rows_kernel, sig, const, cfg.num_warps, narrow))
    return out


def aot_variants(platform: str = "cuda"):
    """VAE configurations (C = 96, 192, 384, 512 with 32 groups; C=6 / 3 groups) in both memory
    formats and bf16/fp16/fp32: the rule's statistics and apply kernels (the statistics tiles on
    contiguous x, the flat / rows apply, the rows statistics), the tile kernels of strided x, and the
    finalize kernel with and without the rows apply's coefficients."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        # SiLU's fast-math level of a launch of this dtype (triton_math.fast_level)
        fast = 0 if dt == "fp32" else (2 if platform == "cuda" else 1)
        for C, G in ((96, 32), (192, 32), (384, 32), (512, 32), (6, 3)):
            for cl in (False, True):
                layout = "channels_last" if cl else "contiguous"
                base = _group_config(C, G, esize, cl, platform)
                tiles = {"HAS_W": True, "HAS_BIAS": True, "SILU": True, "FAST": fast}
                out += _tile_variants(dt, base, C, G, cl, tiles, f"tiles,{dt},C={C},G={G},{layout},"
                                      f"tile={base.block_c}x{base.block_p}")
                rule = _v2_config(C, G, esize, cl, platform)
                out += _rule_variants(dt, rule, C, G, cl, tiles, f"rule,{dt},C={C},G={G},{layout}")
        for Cg in (3, 6, 12, 2):
            sig = {"PART": "*fp32", "STATS": "*fp32", "W": f"*{dt}", "COEF": "*fp32", "P": "i32", "n_span": "i32",
                   "span_len": "i32", "G": "i32", "half": "i32", "eps": "fp32"}
            for coef in (False, True):  # the rows apply's coefficients or not
                if dt != "bf16" and not coef:  # only the coefficients depend on x's dtype (the weight's)
                    continue
                const = {"CG": Cg, "COEF_OUT": coef, "HAS_W": coef, "CG_P2": next_pow2(Cg), "BLOCK_S": _FINALIZE_BLOCK}
                out.append(AotVariant(name=f"group_norm_silu.finalize[{dt},Cg={Cg},coef={coef}]",
                                      kernel=_gn_finalize_kernel, signature={**sig, **{n: "constexpr" for n in const}},
                                      constexprs=const, num_warps=4, options={"enable_fp_fusion": True}))
    return out
