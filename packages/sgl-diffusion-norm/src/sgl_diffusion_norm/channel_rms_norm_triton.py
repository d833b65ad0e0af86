"""Triton kernels for ``channel_rms_norm`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

x is seen as ``[B, C, P]`` (the spatial dims merged, stride ``sp``; channel stride ``sc``). The
launch rule (:meth:`ChannelConfig.from_heuristic`, :func:`config_for`) picks one of three kernels:

* the rows kernel: channels_last x whose positions are dense rows of C values; a tile of whole
  rows reduced along its contiguous axis;
* the streaming kernel: other channels_last views; all channels of a tile held as two register
  tiles, the next tiles' loads in flight while one is normalized;
* the chunk kernel (``_channel_rms_kernel``): contiguous x (the slab / mid / wide rules) and
  channels_last rows wider than the others take; one program owns ``BLOCK_P`` positions of one
  sample and all C channels, as ``[BLOCK_C, BLOCK_P]`` channel chunks reduced along axis 0 (one
  tile, two passes over a chunked slab, or a slab held in registers).

Triton specializes a stride equal to 1, so one kernel serves both layouts with the vectorized
accesses of each. fp32 math (``sqrt(C) / max(||x||, eps)``, SiLU as ``y / (1 + exp(-y))``), one
rounding with ties to even (``triton_math.narrow``). Offsets are int64.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch
import triton

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math, warp_size, warps_for

from ._channel_rms_kernels_triton import _channel_rms_kernel, _channel_rms_rows_kernel, _channel_rms_stream_kernel
from ._channels import split_channels


@dataclass(frozen=True)
class ChannelConfig:
    """``rows > 0``: the rows kernel, ``rows`` positions per program. ``stream=True``: the streaming
    kernel, one pass from a register tile of ``block_c + block_c2`` channels x ``block_p``
    positions, several tiles per program (about ``programs`` programs in all) with the next
    ``ahead`` tiles' loads issued before the current one is normalized and stored. Otherwise the
    chunk kernel: ``chunks`` chunks of ``block_c`` channels x ``block_p`` positions (more than one:
    a statistics pass, then an output pass that re-reads the slab, ``prefetch`` issuing chunk
    k + 1's loads before chunk k is stored; or ``hold``, the slab of 2 or 3 chunks read once and
    held in registers)."""

    block_c: int
    block_p: int
    chunks: int
    num_warps: int
    stream: bool = False
    block_c2: int = 1  # stream: rows of the second tile (masked rows past C cost no memory traffic)
    ahead: int = 1  # stream: tiles whose loads are in flight while one is normalized (1 or 2)
    programs: int = 0  # stream: the grid to aim for
    fast: bool | None = False  # SiLU's fast-math forms (None: by the output dtype, triton_math.fast_level)
    rows: int = 0  # > 0: the rows kernel (channels_last with dense rows), this many positions per program
    prefetch: bool = False
    hold: bool = False
    # hold on CUDA sm_90+ (the cluster rule): each program is a cluster of this many CTAs (Triton's
    # ``num_ctas``), which Triton 3.6 splits along the positions: the cluster's CTAs, launched
    # together, read one run of ``block_p`` positions per channel at the same time; each chunk's
    # gamma / bias are then loaded a chunk ahead and SiLU's fast exponent is its own FMA
    ctas: int = 1

    def launch_options(self, platform: str) -> dict:
        if self.ctas > 1:
            return {"num_warps": self.num_warps, "num_stages": 1, "num_ctas": self.ctas}
        return {"num_warps": self.num_warps, "num_stages": 1}

    def v1_constexprs(self) -> dict:
        """The tile constexprs of :func:`_channel_rms_kernel`."""
        if self.hold and not 2 <= self.chunks <= 3:
            raise ValueError(f"hold keeps 2 or 3 channel chunks in registers, not {self.chunks}")
        return {"BLOCK_C": self.block_c, "BLOCK_P": self.block_p, "CHUNKS": self.chunks,
                "PREFETCH": self.prefetch and self.chunks > 1, "HOLD": self.hold, "OPS_AHEAD": self.ctas > 1}

    @classmethod
    def from_heuristic(cls, C: int, elem_bytes: int, channels_last: bool, platform: str,
                       arch: int | str | None = None, dtype: str | None = None) -> ChannelConfig:
        """The launch rule: channels_last x the rows kernel (:func:`_rows_config`); contiguous x the
        chunk kernel under the slab (C <= 128), mid (C <= 384, a two-CTA cluster on CUDA sm_90+ for
        bf16: :func:`cluster_rule_applies`) or wide rule. ``dtype``: the torch dtype's name
        (``"bfloat16"``). Each rule beat the others measured at its channel counts (H200, bf16,
        Wan-VAE shapes: docs/benchmarks/vae_norm_sweep_h200.json); the rates at the bench shapes are
        in docs/benchmarks/channel_rms_norm_bench_h200.json."""
        if channels_last:
            return _rows_config(C, elem_bytes, platform)
        if C <= _SLAB_MAX_C:
            return _slab_config(C, elem_bytes, platform)
        if C <= _MID_MAX_C:
            cfg = _mid_config(C, elem_bytes, platform)
            if cfg.hold and dtype in _CLUSTER_DTYPES and platform == "cuda" and cluster_rule_applies(arch):
                cfg = _cluster(cfg)
            return cfg
        return _wide_config(C, elem_bytes, platform)


# Elements per tile (8 KB of bf16).
_TILE = 4096
# contiguous layout, chunked path: bytes of one program's [C, BLOCK_P] slab
_SLAB_BYTES = 32768
# channels_last rows wider than this are processed in chunks (two passes) instead of one tile
_MAX_ROW = 2048


@functools.cache
def _channel_config_v1(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """The chunk kernel's base tile, and the rule of channels_last rows no other kernel takes
    (wider than the rows / streaming tiles): contiguous x a two-pass slab of runs of up to 256
    bytes per channel and at most ~32 KB (the slabs of all resident programs stay in L2) on 8
    warps; channels_last x one tile of whole channel rows (chunks of 2048 channels) with four
    16-byte accesses per thread, against 8 warps 9.8-12.9 points slower (H200, bf16:
    docs/benchmarks/channel_rms_norm_sweep_h200.json)."""
    warp = warp_size(platform)
    full = next_pow2(max(C, 1))
    if channels_last:
        block_c = min(full, _MAX_ROW)
        block_p = max(1, _TILE // block_c)
    else:
        block_p = max(32, min(256 // elem_bytes, next_pow2(_SLAB_BYTES // (max(C, 1) * elem_bytes) + 1) // 2))
        block_c = min(full, max(1, _TILE // block_p))
    chunks = -(-max(C, 1) // block_c)
    per_thread = 4 if channels_last else 2  # 16-byte accesses per thread
    warps = warps_for(block_c * block_p * elem_bytes, 16 * per_thread, warp)
    return ChannelConfig(block_c=block_c, block_p=block_p, chunks=chunks, num_warps=warps)


# contiguous x with at most this many channels: the chunk kernel over 256-byte channel runs, 4
# warps, the output pass prefetching
_SLAB_MAX_C = 128
_SLAB_RUN_BYTES = 256
_SLAB_TILE_BYTES = 8192


@functools.cache
def _slab_config(C: int, elem_bytes: int, platform: str) -> ChannelConfig:
    """Contiguous x with up to 128 channels: chunks of ``[32, 256 bytes]`` (8 KB, four 16-byte
    accesses per thread: 4 warps on CUDA), the output pass issuing the next chunk's loads before it
    stores the current one, SiLU's fast forms for 16-bit outputs: the best tile of the sweep at
    C = 96, 92.4% of copy against 88.3% with the slab held in registers and 74.1% with neither
    (H200, bf16: docs/benchmarks/vae_norm_sweep_h200.json)."""
    warp = warp_size(platform)
    block_p = max(1, _SLAB_RUN_BYTES // elem_bytes)
    block_c = min(next_pow2(max(C, 1)), max(1, _SLAB_TILE_BYTES // (block_p * elem_bytes)))
    chunks = -(-max(C, 1) // block_c)
    warps = warps_for(block_c * block_p * elem_bytes, 16 * 4, warp)
    return ChannelConfig(block_c=block_c, block_p=block_p, chunks=chunks, num_warps=warps, fast=None,
                         prefetch=chunks > 1)


# contiguous x with more than 128 and at most this many channels: three chunks of 128-byte
# channel runs; from chunks of this many channels the slab is held in registers (hold), below it
# the output pass prefetches
_MID_MAX_C = 384
_MID_RUN_BYTES = 128
_MID_CHUNKS = 3
_MID_HOLD_ROWS = 128


@functools.cache
def _mid_config(C: int, elem_bytes: int, platform: str) -> ChannelConfig:
    """Contiguous x with 129 to 384 channels: 2 or 3 chunks of ``next_pow2(C / 3)`` channels x 128
    bytes, four 16-byte accesses per thread per chunk; with chunks of 128 channels (C > 192) the
    slab is read once and held in registers (``hold``), below that the output pass prefetches. Why:
    at C = 384 the held slab ran at 80.8-83.0% of copy against 73.2-75.8% prefetching and 66.3% for
    the base tile; at C = 192 prefetching 85.2% against 80.1% held (H200, bf16:
    docs/benchmarks/vae_norm_sweep_h200.json)."""
    warp = warp_size(platform)
    block_c = next_pow2(-(-max(C, 1) // _MID_CHUNKS))
    block_p = max(1, _MID_RUN_BYTES // elem_bytes)
    chunks = -(-max(C, 1) // block_c)
    warps = warps_for(block_c * block_p * elem_bytes, 16 * 4, warp)
    hold = block_c >= _MID_HOLD_ROWS
    return ChannelConfig(block_c=block_c, block_p=block_p, chunks=chunks, num_warps=warps, fast=None, hold=hold,
                         prefetch=not hold)


# the mid rule's held slab as a cluster of this many CTAs (ChannelConfig.ctas), on CUDA devices of at
# least this compute capability (thread-block clusters), with the Triton versions whose layout of a
# two-CTA tile was measured: Triton 3.6 splits the slab along the positions (each CTA reduces its own
# positions); Triton 3.9 splits it along the channels and reduces through distributed shared memory,
# a different kernel that compiles (sm_90) but was never timed, so it keeps one CTA per program
_CLUSTER_CTAS = 2
_CLUSTER_MIN_ARCH = 90
# bf16 only: the fp16 slab, whose output pass widens its held values by integer operations, takes
# 140-143 registers as a cluster (one CTA per SM) and runs slower than with one CTA
_CLUSTER_DTYPES = ("bfloat16",)
_CLUSTER_TRITON = ("3.6",)


def cluster_rule_applies(arch: int | str | None, triton_version: str | None = None) -> bool:
    """Whether the mid rule's held slab runs as a two-CTA cluster: a CUDA ``arch`` (``major * 10 +
    minor``) of at least 90 and a Triton whose ``major.minor`` is in ``_CLUSTER_TRITON``."""
    version = triton.__version__ if triton_version is None else triton_version
    return (isinstance(arch, int) and arch >= _CLUSTER_MIN_ARCH
            and ".".join(version.split(".")[:2]) in _CLUSTER_TRITON)


def _cluster(cfg: ChannelConfig) -> ChannelConfig:
    """The cluster rule: two CTAs per program, each holding the one-CTA rule's slab, so one 256-byte
    run per channel row reaches DRAM at once; gamma / bias a chunk ahead and SiLU's exponent as its
    own FMA. H200, bf16, C = 384: 85.3-85.7% of copy against 81.7-82.3% with one CTA
    (docs/benchmarks/channel_cluster_sweep_h200.json); its loads take no L2 hint, 2.4-3.1 points
    ahead of evict_first (docs/benchmarks/channel_hint_probe_h200.json)."""
    return dataclasses.replace(cfg, block_p=cfg.block_p * _CLUSTER_CTAS, ctas=_CLUSTER_CTAS)


@functools.cache
def _wide_config(C: int, elem_bytes: int, platform: str) -> ChannelConfig:
    """Contiguous x with more than 384 channels: the base tile, the output pass prefetching, SiLU's
    fast forms for 16-bit outputs (at C = 384: 73.2% of copy against the base tile's 66.3%, H200,
    bf16: docs/benchmarks/vae_norm_sweep_h200.json)."""
    return dataclasses.replace(_channel_config_v1(C, elem_bytes, False, platform), fast=None, prefetch=True)


# stream kernel: ~48 elements of a tile per thread and the loads of two tiles ahead in flight.
# sm_90, bf16, SiLU + bias, 16-byte accesses: 174-219 registers, no spills; with the resident
# programs that allows, ~48 KB of loads in flight per SM at C = 96 / 192 / 384
_STREAM_PER_THREAD = 48
_STREAM_AHEAD = 2
_STREAM_MAX_ROWS = 1024
_STREAM_PROGRAMS = 1056  # 132 SMs x 8: every resident program loops over several tiles
_INTERPRETER_STREAM_PROGRAMS = 1  # the CPU lane: every tile of a call in one program (the loop and its look-ahead)


@functools.cache
def _stream_config(C: int, elem_bytes: int, platform: str) -> ChannelConfig:
    """channels_last x whose positions are not dense rows (a channel slice): the streaming kernel,
    whose programs keep the next tiles' loads in flight while they reduce and store the current one
    (a chunk-kernel program has loads in flight only in its load phase), over whole channel rows
    split into two power-of-two tiles (no quarter of masked lanes at C = 96 / 192 / 384); two tiles
    ahead below 192 channel rows, one from there (H200, bf16: C = 192 / 384 81.9 / 80.3% of copy
    with one, 77.4 / 75.7% with two; C = 96 75.5% with two, 73.2% with one, and the base tile
    74.4%: docs/benchmarks/vae_norm_sweep_h200.json). Rows wider than 1024 channels take the base
    tile."""
    warp = warp_size(platform)
    a, b = split_channels(C)
    rows = a + b
    per_thread = _STREAM_PER_THREAD * 2 // elem_bytes
    if rows > _STREAM_MAX_ROWS or rows > per_thread * 8 * warp:
        return _channel_config_v1(C, elem_bytes, True, platform)
    block_p = next_pow2(per_thread * 4 * warp // rows + 1) // 2
    block_p = max(1, min(64, block_p))
    warps = next_pow2(warps_for(rows * block_p, per_thread, warp) + 1) // 2  # a power of two
    programs = _INTERPRETER_STREAM_PROGRAMS if platform == "cpu" else _STREAM_PROGRAMS
    ahead = 1 if rows >= 192 else _STREAM_AHEAD
    return ChannelConfig(block_c=a, block_p=block_p, chunks=1, num_warps=warps, stream=True, block_c2=b,
                         ahead=ahead, programs=programs)


# rows kernel: bytes of x per program (positions x padded channels), 16-byte accesses per thread
_ROWS_TILE_BYTES = 4096
_ROWS_ACCESSES = 4
_ROWS_MAX_C = 4096  # wider rows take the base tile (chunks of a position's channels)


@functools.cache
def _rows_config(C: int, elem_bytes: int, platform: str) -> ChannelConfig:
    """channels_last x: the rows kernel, ``rows`` positions per program, 4 KB of x (with the padded
    channels), four 16-byte accesses per thread, SiLU's fast forms for 16-bit outputs; rows of more
    than 4096 channels take the base tile. Why: the streaming and chunk kernels reduce along the
    tile's first axis and move the whole tile through shared memory, the rows tile reduces along its
    contiguous axis (as ``qk_norm`` does): 95.3-98.3% of copy at C = 96 and 384 (H200,
    bf16: docs/benchmarks/channel_rms_norm_bench_h200.json)."""
    block_c = next_pow2(max(C, 1))
    if block_c > _ROWS_MAX_C:  # one register tile per position: bounded
        return _channel_config_v1(C, elem_bytes, True, platform)
    warp = warp_size(platform)
    rows = max(1, min(256, _ROWS_TILE_BYTES // (block_c * elem_bytes)))
    warps = warps_for(rows * block_c * elem_bytes, 16 * _ROWS_ACCESSES, warp)
    return ChannelConfig(block_c=block_c, block_p=rows, chunks=1, num_warps=warps, rows=rows, fast=None)


def config_for(g, dtype: torch.dtype, device: torch.device) -> ChannelConfig:
    """The launch rule for x of geometry ``g`` (a ``ChannelGeometry``): :meth:`ChannelConfig.from_heuristic`,
    and the streaming kernel for channels_last views whose positions are not dense rows."""
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    cfg = ChannelConfig.from_heuristic(g.C, dtype.itemsize, g.channels_last, plat, arch,
                                       dtype=str(dtype).removeprefix("torch."))
    if cfg.rows and not g.dense_rows:
        cfg = _stream_config(g.C, dtype.itemsize, plat)
    return cfg


def prepare(geom, x, gamma, bias, *, config: ChannelConfig | None = None):
    """A runner ``(x, gamma, bias, eps, silu) -> out`` for one call signature (``silu`` is fixed by
    the plan: ``geom.silu``)."""
    from sgl_diffusion_core import PreparedLaunch

    g = geom.x
    cfg = config or config_for(g, x.dtype, x.device)
    n_pblk = -(-g.P // cfg.block_p)
    if cfg.rows and not g.dense_rows:
        raise ValueError("the rows kernel needs channels_last x whose positions are dense rows of C values")
    if cfg.rows:
        n_rows = g.B * g.P
        grid = (-(-n_rows // cfg.rows),)
        kernel = _channel_rms_rows_kernel
        dense = g.B == 1 or (g.sb == g.P * g.C and g.out_sb == g.P * g.C)
        consts = {"C": g.C, "BLOCK_C": next_pow2(g.C), "ROWS": cfg.rows, "DENSE": dense}
        scalars = (n_rows, g.P, g.sb, g.out_sb, float(g.C) ** 0.5)
    elif cfg.stream:
        n_tiles = g.B * n_pblk
        iters = max(1, -(-n_tiles // max(1, cfg.programs)))
        grid = (-(-n_tiles // iters),)
        kernel = _channel_rms_stream_kernel
        consts = {"BLOCK_C": cfg.block_c, "BLOCK_C2": cfg.block_c2, "BLOCK_P": cfg.block_p, "AHEAD": cfg.ahead}
        scalars = (g.C, g.P, n_pblk, n_tiles, iters, g.sb, g.sc, g.sp, g.out_sb, g.out_sc, g.out_sp,
                   float(g.C) ** 0.5)
    else:
        grid = (g.B * n_pblk,)
        kernel = _channel_rms_kernel
        consts = cfg.v1_constexprs()
        scalars = (g.C, g.P, n_pblk, g.sb, g.sc, g.sp, g.out_sb, g.out_sc, g.out_sp, float(g.C) ** 0.5)
    plat = tensor_platform(x.device)
    launch = PreparedLaunch(
        kernel,
        grid,
        {**consts, "HAS_BIAS": bias is not None, "SILU": geom.silu,
         "FAST": triton_math.fast_level(x.dtype, plat, cfg.fast)},
        device=x.device,
        n_ptrs=4,
        options=cfg.launch_options(plat),
    )
    shape, strides, dtype, device = g.shape, g.out_strides, x.dtype, x.device

    def run(x, gamma, bias, eps, silu):
        out = torch.empty_strided(shape, strides, dtype=dtype, device=device)
        launch(x, gamma, x if bias is None else bias, out, *scalars, eps)
        return out

    return run


# what a Wan-VAE launch sees as multiples of 16: aligned tensors, P = T * H * W, C * P, C = 96 ...
_DIVISIBLE = ("X", "G", "BIAS", "Y", "C", "P", "sb", "sc", "sp", "osb", "osc", "osp")
_NAMES = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}


def _tile_variant(dt: str, C: int, cl: bool, cfg: ChannelConfig, platform: str):
    """The streaming or chunk kernel of one configuration, with SiLU and bias (``C != 768``) or without."""
    from sgl_diffusion_core import AotVariant

    full = C != 768
    idx = "i64" if C == 1024 else "i32"
    sig = {n: f"*{dt}" for n in ("X", "G", "BIAS", "Y")}
    ints = ("C", "P", "n_pblk", "n_tiles", "iters") if cfg.stream else ("C", "P", "n_pblk")
    sig.update({n: idx for n in (*ints, "sb", "sc", "sp", "osb", "osc", "osp")})
    sig.update({"scale": "fp32", "eps": "fp32"})
    if cfg.stream:
        const = {"BLOCK_C": cfg.block_c, "BLOCK_C2": cfg.block_c2, "BLOCK_P": cfg.block_p, "AHEAD": cfg.ahead}
        tile = f"stream {cfg.block_c}+{cfg.block_c2}x{cfg.block_p} ahead {cfg.ahead}"
    else:
        const = cfg.v1_constexprs()
        tile = f"chunks {cfg.block_c}x{cfg.block_p}x{cfg.chunks}"
        tile += " prefetch" if const["PREFETCH"] else " hold" if cfg.hold else ""
        tile += f" ctas {cfg.ctas}" if cfg.ctas > 1 else ""
    fast = triton_math.fast_level(_NAMES[dt], platform, cfg.fast)
    const.update({"HAS_BIAS": full, "SILU": full, "FAST": fast})
    if fast:
        tile += f" fast {fast}"
    sig.update({n: "constexpr" for n in const})
    # the specialization a real launch gets: the unit stride of the layout
    unit = ("sc", "osc") if cl else ("sp", "osp")
    sig.update({n: "constexpr" for n in unit})
    const.update({n: 1 for n in unit})
    name = (f"channel_rms_norm[{dt},C={C},{'channels_last' if cl else 'contiguous'},"
            f"tile={tile},w={cfg.num_warps},silu={full},{idx}]")
    return AotVariant(name=name, kernel=_channel_rms_stream_kernel if cfg.stream else _channel_rms_kernel,
                      signature=sig, constexprs=const, num_warps=cfg.num_warps, num_stages=1,
                      options={"enable_fp_fusion": True, **({"num_ctas": cfg.ctas} if cfg.ctas > 1 else {})},
                      divisible_by_16=_DIVISIBLE, min_cuda_arch=90 if cfg.ctas > 1 else 0)


def aot_variants(platform: str = "cuda"):
    """Wan-VAE channel counts (96, 192, 384, 768; 1024 for HunyuanVideo) in both memory formats,
    bf16/fp16/fp32, with SiLU and bias (the resblock form) and without: every kernel the launch rule
    picks (contiguous: the slab / mid / wide rule and the cluster form of the mid rule's held slab;
    channels_last: the rows kernel, SiLU's precise and fast forms, and the streaming kernel of
    strided views)."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for C in (96, 192, 384, 768, 1024):
            idx = "i64" if C == 1024 else "i32"
            full = C != 768
            contiguous = ChannelConfig.from_heuristic(C, esize, False, platform)
            out.append(_tile_variant(dt, C, False, contiguous, platform))
            if platform == "cuda" and contiguous.hold and dt == "bf16":  # whatever Triton compiles the lane
                out.append(_tile_variant(dt, C, False, _cluster(contiguous), platform))
            out.append(_tile_variant(dt, C, True, _stream_config(C, esize, platform), platform))
            cfg = _rows_config(C, esize, platform)
            for fast in (0,) if dt == "fp32" else (0, 2 if platform == "cuda" else 1):
                sig = {n: f"*{dt}" for n in ("X", "G", "BIAS", "Y")}
                sig.update({n: idx for n in ("n_rows", "P", "sb", "osb")})
                sig.update({"scale": "fp32", "eps": "fp32"})
                const = {"C": C, "BLOCK_C": next_pow2(C), "ROWS": cfg.rows, "DENSE": True, "HAS_BIAS": full,
                         "SILU": full, "FAST": fast}
                sig.update({n: "constexpr" for n in const})
                name = (f"channel_rms_norm[{dt},C={C},channels_last,tile=rows {cfg.rows}x{next_pow2(C)},"
                        f"w={cfg.num_warps},silu={full},fast={const['FAST']},{idx}]")
                out.append(AotVariant(name=name, kernel=_channel_rms_rows_kernel, signature=sig, constexprs=const,
                                      num_warps=cfg.num_warps, num_stages=1, options={"enable_fp_fusion": True},
                                      divisible_by_16=("X", "G", "BIAS", "Y", "P", "sb", "osb")))
    return out
