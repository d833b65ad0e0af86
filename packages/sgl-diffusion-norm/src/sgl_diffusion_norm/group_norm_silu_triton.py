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
   in x's memory format, its programs walked last first: the statistics pass (loads hinted
   evict_last) ends on the end of x, still in L2 when the apply pass (loads unhinted) starts.

Both heavy kernels address x as ``[B, C, P]`` with strides ``(sb, sc, sp)``; Triton specializes
the unit stride, so contiguous x (``sp == 1``: 256-position runs per channel) and
channels_last(_3d) (``sc == 1``: whole channel rows) each get coalesced 16-byte accesses from
one kernel. Offsets are int64.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math, warps_for

from .channel_rms_norm_triton import split_channels


@dataclass(frozen=True)
class GroupConfig:
    """``stream=False``: the v1 kernels (stats tiles of whole groups, ``gpb`` groups per
    channel block, combined per group in the kernel; one apply tile per program, the same tile).
    ``stream=True``: the streaming kernels: per-channel statistics partials (channel blocks of
    ``block_c`` channels need not hold whole groups; the finalize kernel combines the channels of a
    group), and an apply pass of ``apply_block_c x apply_block_p`` tiles, several per program
    (about ``apply_programs`` programs); both passes keep the loads of ``ahead`` tiles in flight
    while they work on the current one."""

    gpb: int  # groups per channel block (v1)
    block_c: int  # stats channel block: next_pow2(gpb * Cg) (v1), a power of two (stream)
    block_p: int
    num_warps: int
    stats_programs: int = 2048  # how many programs the statistics pass aims for
    finalize_block: int = 1024  # partials combined per step of the finalize kernel
    stream: bool = False
    ahead: int = 1  # stream: tiles whose loads are in flight while one is processed (1 or 2)
    apply_block_c: int = 0  # stream: apply tile
    apply_block_p: int = 0
    apply_warps: int = 0
    apply_programs: int = 0
    fast: bool | None = False  # SiLU's fast-math forms (None: by the output dtype, triton_math.fast_level)
    # apply pass of the v1 statistics: > 0 selects the flat kernel on contiguous x (positions per
    # program, one channel row each) / the rows kernel on channels_last x with dense rows
    # (positions per program, all channels)
    apply_flat: int = 0
    apply_rows: int = 0
    # > 0: the statistics pass of the rows kernel on channels_last x with dense rows (positions per
    # step, all channels; v1's partial layout, one per (sample, group, span))
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
        return {"num_warps": self.apply_warps if self.stream or self.apply_warps else self.num_warps,
                "num_stages": 1}

    @classmethod
    def from_heuristic(cls, C: int, G: int, elem_bytes: int, channels_last: bool, platform: str,
                       arch: int | str | None = None, rule: str = "v2") -> GroupConfig:
        """``rule``: ``"v2"`` (the default, :func:`_v2_config`: v1's statistics and the flat apply
        kernel on contiguous x, the rows statistics and apply kernels on channels_last x), ``"v1"``
        (:func:`_group_config`: statistics tiles of whole groups, one apply tile per program) or
        ``"stream"`` (split statistics with loads two tiles ahead).

        Measured on one H200, bf16, % of the two-pass bound: v2 87.2 / 90.4 / 89.7% at c96-cl /
        c192-cl / c384-cl and 91.7-93.8% contiguous (docs/benchmarks/group_norm_silu_bench_h200.json);
        v1 61.5 / 66.4 / 56.0 / 53.5 / 64.9% at c192-cl / c192 / c96-cl / c384-cl / c384, the stream
        rule 57.7 / 70.1 / 49.0 / 54.6 / 55.0% (docs/benchmarks/vae_norm_sweep_h200.json)."""
        if rule == "v1":
            return _group_config(C, G, elem_bytes, channels_last, platform)
        if rule == "v2":
            return _v2_config(C, G, elem_bytes, channels_last, platform)
        if rule != "stream":
            raise ValueError(f"unknown group_norm_silu launch rule {rule!r}; known: 'stream', 'v1', 'v2'")
        return _stream_config(C, G, elem_bytes, channels_last, platform)


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
    warp = 64 if platform == "hip" else 32
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


# v2 apply: bytes of x per program (the flat kernel: one channel row's run; the rows kernel:
# positions x padded channels), four 16-byte accesses per thread
_APPLY_BYTES = 8192
_APPLY_ACCESSES = 4
_APPLY_MAX_C = 4096  # channels_last with wider rows keeps v1 (its statistics and apply tiles)
# v2 statistics on channels_last x: bytes of x per step of the rows kernel (positions x padded
# channels) and warps. H200 sweep (bf16, docs/benchmarks/vae_norm_sweep_s6_contig_cl_h200.json, %
# of the two-pass bound at C = 192 / 96 / 384): 8 KB x 4 warps 81.8 / 77.0 / 68.2%, 16 KB x 8
# warps 76.4 / 72.8 / 66.4%, v1's statistics 71.3 / 71.5 / 59.5%
_STATS_ROWS_BYTES = 8192
_STATS_THREAD_BYTES = 64
# ... at least 16 positions per step (C = 384: 16 KB steps, 8 warps, 78.8% against 72.4% with 8 KB
# and 4 warps, vae_norm_sweep_s6_stats_final_h200.json; C = 96 / 192 keep 32 / 16 positions)
_STATS_MIN_ROWS = 16
# ... and programs: fewer, longer programs amortize each program's group combination (H200,
# vae_norm_sweep_s6_stats_*_h200.json: 512 programs 85.3 / 81.0 / 72.7% at C = 192 / 96 / 384,
# 1024 84.3 / 79.9 / 71.3%, 2048 82.2 / 77.2 / 68.3%, 4096 77.6 / 72.5 / 63.0%; the loop
# unrolled 2 / 4 / 8 times: mixed, -10 to +7 points). With two dense channel tiles
# (vae_norm_sweep_s9_*_h200.json) the best count is one wave of 2048 warps in all (C = 384, 8
# warps: 256 programs 77.8-83.3% against 512 74.2-79.0%; C = 96 / 192, 4 warps: 512 programs
# 79.3-85.9% against 256 70.6-75.7%)
_STATS_ROWS_WARPS = 2048
# the rows apply: steps of 2 KB (positions x padded channels, one warp) and 4 steps per
# program, the next step's loads issued first. H200 sweeps at C = 192 / 96 / 384: one 8 KB step per
# program 79.3 / 79.8 / 74.2%, four 4 KB steps 85.3-86.2 / 82.1-83.0 / 80.9-81.9%
# (vae_norm_sweep_s9_apply_h200.json), four 2 KB steps 87.5 / 83.9 / 86.7% against 86.3 / 83.2 /
# 86.3% for 4 KB (vae_norm_sweep_s9_final_h200.json, with the statistics at one wave)
_APPLY_ROWS_BYTES = 2048
_APPLY_ITERS = 4
# the two dense channel tiles only where the smaller one's rows are at least this many bytes: at
# C = 96 (64 + 32 channels, 64-byte rows) one padded tile of 128 measured 86.3 / 86.4% against
# 83.3 / 82.8% (Triton's / torch's ptxas, SiLU's fast form); at C = 192 / 384
# (rows of 128 / 256 bytes) the dense tiles lead by 10-13 points (vae_norm_sweep_s10c_h200.json)
_SPLIT_MIN_BYTES = 128


@functools.cache
def _v2_config(C: int, G: int, elem_bytes: int, channels_last: bool, platform: str) -> GroupConfig:
    """Contiguous x: v1's statistics, then :func:`_gn_apply_flat_kernel`. channels_last x with dense
    rows: :func:`_gn_stats_rows_kernel` and :func:`_gn_apply_rows_kernel`, with a position's
    channels as two dense channel tiles (``split``; one padded tile measured 60-74%) except where
    the smaller dense tile has rows under 128 bytes (C = 96 in bf16: one padded tile), one wave of
    statistics warps and four 2 KB apply steps per program (sweeps above). SiLU takes its fast
    forms for 16-bit outputs (``fast=None``): 0-5 points ahead in the sweep. Why not v1: Nsight
    Compute on one H200 (bf16, C = 384) put v1's apply kernel at 38% (contiguous) / 45%
    (channels_last) of DRAM bandwidth, its statistics at 61% / 28%; the rates of both rules are in
    :meth:`GroupConfig.from_heuristic`."""
    warp = 64 if platform == "hip" else 32
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


# stream kernels: tiles of 4096 elements (16 per thread at 8 warps) with the loads of two tiles
# ahead in flight, and many programs (several tiles each) so that the last wave is a small part.
# More statistics programs mean more per-channel partials for the finalize kernel (one program per
# group: C=192 channels_last at 4096 programs -> 6 x 1365 partials per group, 4 steps of 2048)
_STREAM_TILE = 4096
_STREAM_WARPS = 8
_STREAM_AHEAD = 2
_STREAM_PROGRAMS = 4096
_STREAM_FINALIZE_BLOCK = 2048
_STREAM_CONTIG_CHANNELS = 4  # contiguous x: channels per tile (runs of 1024 positions, 2 KB bf16)
_STREAM_CL_CHANNELS = 128  # channels_last x: at most this many channels per tile


def _pow2_divisor(n: int, cap: int) -> int:
    """The largest power of two that divides n, at most ``cap`` (1 for odd n)."""
    d = 1
    while d * 2 <= cap and n % (d * 2) == 0:
        d *= 2
    return d


@functools.cache
def _stream_config(C: int, G: int, elem_bytes: int, channels_last: bool, platform: str) -> GroupConfig:
    """Launch rule of the streaming kernels (``rule="stream"``; tools/gpu/vae_norm_sweep.py
    compares it with the v1 rule, which measured 53-66% of the two-pass bound on the H200).

    Why v1 stays low: its statistics loop issues one 8 KB tile and waits for it before the next
    (no loads in flight while it accumulates; ``num_stages`` does not pipeline loads that feed no
    dot), its tiles hold whole groups (C = 96 / 192 / 384 contiguous: 12 or 15 of 16 rows live,
    channels_last: 192 of 256), its apply programs load, compute and store one tile each, and its
    2048 statistics programs leave a last wave of a few percent of the SMs' slots. The stream
    kernels keep two tiles of loads in flight per program, use channel blocks that divide C
    (per-channel partials; the finalize kernel combines a group's channels), and aim for 4096
    programs per pass (the last wave ~1/15 of the work)."""
    warp = 64 if platform == "hip" else 32
    cap = _STREAM_CL_CHANNELS if channels_last else _STREAM_CONTIG_CHANNELS
    block_c = _pow2_divisor(C, cap)
    if channels_last and block_c < 8:  # odd channel counts: one masked power-of-two row block
        block_c = min(next_pow2(C), _STREAM_CL_CHANNELS)
    tile = _STREAM_TILE * 2 // elem_bytes
    block_p = max(1, tile // block_c)
    warps = max(1, min(_STREAM_WARPS, tile * elem_bytes // (16 * warp * 2)))
    if platform == "cpu":
        programs, fin = _INTERPRETER_STATS_PROGRAMS, _INTERPRETER_FINALIZE_BLOCK
    else:
        programs, fin = _STREAM_PROGRAMS, _STREAM_FINALIZE_BLOCK
    return GroupConfig(gpb=0, block_c=block_c, block_p=block_p, num_warps=warps, stats_programs=programs,
                       finalize_block=fin, stream=True, ahead=_STREAM_AHEAD, apply_block_c=block_c,
                       apply_block_p=block_p, apply_warps=warps, apply_programs=programs)


# L2 on the two passes over x (tools/gpu/gn_order_probe.py, H200, bf16, % of the two-pass
# bound at C = 192 / 96 / 384, docs/benchmarks/gn_order_probe_s18_h200_*.json): the statistics pass
# loads x with evict_last, the apply pass loads it with no hint and walks its programs last first, so it
# starts on the end of x the statistics pass left in L2. channels_last 90.6 / 89.1 / 89.5% against
# 87.8 / 88.2-88.6 / 87.7-88.3% with evict_first on both passes in program order; contiguous 94.0-94.1 /
# 93.2 / 92.4-92.5% against 93.8 / 92.8 / 92.1%. Most of the channels_last gain is the apply loads'
# hint dropped (90.4 / 88.8 / 89.1% alone); the order alone moved nothing (87.8 / 88.1 / 87.8%). The
# streaming kernels (rule "stream", never the default) keep evict_first: not measured without it.
# The tile apply kernel (_gn_apply_kernel: strided x, rule "v1") follows the same rule, untimed: no
# bench case reaches it on the GPU (the CPU lane runs it).
@triton.jit
def _last_first():
    """This program's index counted from the grid's end: program 0 takes the last tile."""
    return (tl.num_programs(0) - 1 - tl.program_id(0)).to(tl.int64)


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
        x = tl.load(x_rows + (p * sp)[None, :], mask=mask, other=0.0, eviction_policy="evict_last")
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


@triton.jit
def _gn_rows_tile(X, b, sb, i, p0, p_end, c, k_raw, C: tl.constexpr, ROWS: tl.constexpr, CMASK: tl.constexpr):
    """Raw ``[ROWS, len(c)]`` tile ``i`` of a span of positions starting at ``p0`` (dense rows of C
    channels). Positions at or past ``p_end`` (and channels past C when ``CMASK``) read as the
    shift ``k_raw`` (their difference from it is 0: no mask in the accumulation)."""
    p = p0 + i * ROWS + tl.arange(0, ROWS).to(tl.int64)
    mask = (p < p_end)[:, None]
    if CMASK:
        mask = mask & (c < C)[None, :]
    return tl.load(X + b * sb + (p * C)[:, None] + c[None, :], mask=mask, other=k_raw[None, :],
                   eviction_policy="evict_last")


@triton.jit
def _gn_rows_group_sums(mean_c, m2_c, c, C: tl.constexpr, CG: tl.constexpr, G_P2: tl.constexpr):
    """Per-group sums over one channel tile ``c``: ``(sum mean_c, sum m2_c)`` and the channel means
    as ``[len(c), G_P2]`` one-hot columns (for the spread of the means around the group's)."""
    j = tl.arange(0, G_P2)
    onehot = ((c // CG)[:, None] == j[None, :]) & (c < C)[:, None]
    return (tl.sum(tl.where(onehot, mean_c[:, None], 0.0), axis=0),
            tl.sum(tl.where(onehot, m2_c[:, None], 0.0), axis=0), onehot)


@triton.jit(do_not_specialize=["n_span", "iters"])
def _gn_stats_rows_kernel(
    X, PART,
    P, n_span, iters, sb,
    C: tl.constexpr, G: tl.constexpr, CG: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_C2: tl.constexpr,
    G_P2: tl.constexpr, ROWS: tl.constexpr,
):
    """channels_last x with dense rows: the program of (sample, span) reads ``iters`` steps of
    ``ROWS`` positions x all channels (the loads of step i + 1 issued before step i is
    accumulated) with shifted sums per channel (K: the channel's value at the span's first
    position), combines the channels of each group (equal counts) and writes v1's partials
    ``PART[((b * G + g) * n_span + span) * 2 + {0, 1}] = (mean, M2)``. The channels are one tile
    ``[ROWS, BLOCK_C]`` (``BLOCK_C2 == 0``) or two, ``BLOCK_C`` + ``BLOCK_C2`` wide (C = 384: 256 + 128,
    no masked lanes); the channel axis is the tiles' contiguous one, so the accumulation needs no
    data movement between threads."""
    TWO: tl.constexpr = BLOCK_C2 > 0
    pid = tl.program_id(0).to(tl.int64)
    span = pid % n_span
    b = pid // n_span
    span_len = iters * ROWS
    p0 = span * span_len
    p_end = tl.minimum(P, p0 + span_len)
    x0 = X + b * sb + p0 * C
    ca = tl.arange(0, BLOCK_C)
    MA: tl.constexpr = BLOCK_C > C
    ka = tl.load(x0 + ca, mask=ca < C, other=0.0)
    s1a = tl.zeros([ROWS, BLOCK_C], dtype=tl.float32)
    s2a = tl.zeros([ROWS, BLOCK_C], dtype=tl.float32)
    xa = _gn_rows_tile(X, b, sb, 0, p0, p_end, ca, ka, C, ROWS, MA)
    if TWO:
        cb = BLOCK_C + tl.arange(0, BLOCK_C2)
        MB: tl.constexpr = BLOCK_C + BLOCK_C2 > C
        kb = tl.load(x0 + cb, mask=cb < C, other=0.0)
        s1b = tl.zeros([ROWS, BLOCK_C2], dtype=tl.float32)
        s2b = tl.zeros([ROWS, BLOCK_C2], dtype=tl.float32)
        xb = _gn_rows_tile(X, b, sb, 0, p0, p_end, cb, kb, C, ROWS, MB)
    # the next step's loads issued before this step is accumulated (unrolling the loop 2 / 4 / 8
    # times instead measured -10 to +7 points, vae_norm_sweep_s6_stats_*_h200.json)
    for i in tl.range(0, iters):
        na = _gn_rows_tile(X, b, sb, i + 1, p0, p_end, ca, ka, C, ROWS, MA)
        d = xa.to(tl.float32) - ka.to(tl.float32)[None, :]
        s1a += d
        s2a += d * d
        xa = na
        if TWO:
            nb = _gn_rows_tile(X, b, sb, i + 1, p0, p_end, cb, kb, C, ROWS, MB)
            d = xb.to(tl.float32) - kb.to(tl.float32)[None, :]
            s1b += d
            s2b += d * d
            xb = nb
    n = (p_end - p0).to(tl.float32)  # positions of this span (>= 1)
    S1 = tl.sum(s1a, axis=0)
    mean_a = ka.to(tl.float32) + S1 / n
    m2_a = tl.maximum(tl.sum(s2a, axis=0) - S1 * (S1 / n), 0.0)
    sum_mean, sum_m2, oh_a = _gn_rows_group_sums(mean_a, m2_a, ca, C, CG, G_P2)
    if TWO:
        S1 = tl.sum(s1b, axis=0)
        mean_b = kb.to(tl.float32) + S1 / n
        m2_b = tl.maximum(tl.sum(s2b, axis=0) - S1 * (S1 / n), 0.0)
        sm_b, s2_b, oh_b = _gn_rows_group_sums(mean_b, m2_b, cb, C, CG, G_P2)
        sum_mean += sm_b
        sum_m2 += s2_b
    mean_g = sum_mean / CG
    dev = tl.where(oh_a, mean_a[:, None] - mean_g[None, :], 0.0)
    spread = tl.sum(dev * dev, axis=0)
    if TWO:
        dev = tl.where(oh_b, mean_b[:, None] - mean_g[None, :], 0.0)
        spread += tl.sum(dev * dev, axis=0)
    m2_g = sum_m2 + n * spread
    j = tl.arange(0, G_P2)
    out = PART + ((b * G + j) * n_span + span) * 2
    tl.store(out, mean_g, mask=j < G)
    tl.store(out + 1, m2_g, mask=j < G)


@triton.jit
def _gn_span_tile(x_rows, i, p0, p_end, sp, cmask, BLOCK_P: tl.constexpr):
    """Raw tile ``i`` of a span starting at ``p0``; nothing is read at or past ``p_end``."""
    p = p0 + i * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    return tl.load(x_rows + (p * sp)[None, :], mask=cmask[:, None] & (p < p_end)[None, :], other=0.0,
                   eviction_policy="evict_first")


@triton.jit(do_not_specialize=["n_span", "iters"])
def _gn_stats_stream_kernel(
    X, PART,
    C, P, n_cblk, n_span, iters, sb, sc, sp,
    BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, AHEAD: tl.constexpr,
):
    """Per-channel partials: the program of (sample, channel block, span) reads ``iters`` tiles
    ``[BLOCK_C, BLOCK_P]`` of its span (the loads of tile i + AHEAD issued before tile i is
    accumulated), with shifted sums of ``x - K`` and ``(x - K)^2`` (K: the channel's first value
    in the span), and writes ``(mean, M2)`` of each channel over the span to
    ``PART[((b * C + c) * n_span + span) * 2 + {0, 1}]``."""
    pid = tl.program_id(0).to(tl.int64)
    span = pid % n_span
    rest = pid // n_span
    cb = rest % n_cblk
    b = rest // n_cblk
    c = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    x_rows = X + b * sb + c.to(tl.int64)[:, None] * sc
    span_len = iters * BLOCK_P
    p0 = span * span_len
    p_end = tl.minimum(P, p0 + span_len)
    k = tl.load(x_rows + p0 * sp, mask=cmask[:, None], other=0.0).to(tl.float32)  # [BLOCK_C, 1]
    s1 = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    s2 = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
    x = _gn_span_tile(x_rows, 0, p0, p_end, sp, cmask, BLOCK_P)
    if AHEAD == 2:
        xn = _gn_span_tile(x_rows, 1, p0, p_end, sp, cmask, BLOCK_P)
    for i in tl.range(0, iters):
        xm = _gn_span_tile(x_rows, i + AHEAD, p0, p_end, sp, cmask, BLOCK_P)
        p = p0 + i * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
        d = tl.where(cmask[:, None] & (p < p_end)[None, :], x.to(tl.float32) - k, 0.0)
        s1 += d
        s2 += d * d
        if AHEAD == 2:
            x = xn
            xn = xm
        else:
            x = xm
    n = (p_end - p0).to(tl.float32)  # positions of this span (>= 1)
    S1 = tl.sum(s1, axis=1)
    S2 = tl.sum(s2, axis=1)
    mean_c = tl.sum(k, axis=1) + S1 / n
    m2_c = tl.maximum(S2 - S1 * (S1 / n), 0.0)
    out = PART + ((b * C + c) * n_span + span) * 2
    tl.store(out, mean_c, mask=cmask)
    tl.store(out + 1, m2_c, mask=cmask)


@triton.jit(do_not_specialize=["P", "n_span", "span_len", "G", "half", "eps"])
def _gn_finalize_kernel(PART, STATS, W, COEF, P, n_span, span_len, G, half, eps, CG: tl.constexpr,
                        BLOCK_S: tl.constexpr, PER_CHANNEL: tl.constexpr = False, COEF_OUT: tl.constexpr = False,
                        HAS_W: tl.constexpr = False, CG_P2: tl.constexpr = 1):
    """One program per (sample, group). Partials per group: ``n_span`` (v1: whole groups, each
    over ``CG`` channels) or ``CG * n_span`` (``PER_CHANNEL``: the group's channels one after the
    other, each over one channel). Writes ``STATS[bg] = (mean, rstd)``; with ``COEF_OUT`` also, per
    channel ``c`` of the group, ``COEF[b * C + c] = mean`` and ``COEF[half + b * C + c] = rstd *
    weight[c]`` (``half = B * C``; the same fp32 product the apply kernels form), for the rows apply."""
    bg = tl.program_id(0).to(tl.int64)
    if PER_CHANNEL:
        n_ent = CG * n_span
        weight = 1.0
    else:
        n_ent = n_span
        weight = CG * 1.0
    base = PART + bg * n_ent * 2
    n_tot = tl.zeros([], dtype=tl.float32)
    mean = tl.zeros([], dtype=tl.float32)
    m2 = tl.zeros([], dtype=tl.float32)
    for s0 in tl.range(0, n_ent, BLOCK_S):
        s = s0 + tl.arange(0, BLOCK_S)
        m = s < n_ent
        mu = tl.load(base + s * 2, mask=m, other=0.0)
        q = tl.load(base + s * 2 + 1, mask=m, other=0.0)
        sp = (s % n_span).to(tl.int64)
        cnt = tl.where(m, weight * tl.minimum(P - sp * span_len, span_len).to(tl.float32), 0.0)
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
    if COEF_OUT:
        j = tl.arange(0, CG_P2)
        jm = j < CG
        a = tl.zeros([CG_P2], dtype=tl.float32) + rstd
        if HAS_W:
            a = a * tl.load(W + (bg % G) * CG + j, mask=jm, other=0.0).to(tl.float32)
        tl.store(COEF + bg * CG + j, tl.zeros([CG_P2], dtype=tl.float32) + mean, mask=jm)
        tl.store(COEF + half + bg * CG + j, a, mask=jm)


@triton.jit(do_not_specialize=["n_pblk"])
def _gn_apply_kernel(
    X, W, BIAS, STATS, Y,
    C, P, G, n_cblk, n_pblk, sb, sc, sp, osb, osc, osp,
    CG: tl.constexpr, GPB: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    pid = _last_first()
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
    x = tl.load(X + b * sb + c64[:, None] * sc + (p * sp)[None, :], mask=mask, other=0.0).to(tl.float32)
    y = (x - mean[:, None]) * a[:, None]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
    if SILU:
        y = tl.where(mask, y, 0.0)  # masked lanes hold -mean * rstd, which exp() could overflow on
        y = triton_math.silu(y, FAST)
    tl.store(Y + b * osb + c64[:, None] * osc + (p * osp)[None, :], triton_math.narrow(y, Y.dtype.element_ty),
             mask=mask)


@triton.jit
def _gn_affine(y, HAS_BIAS: tl.constexpr, shift, SILU: tl.constexpr, FAST: tl.constexpr):
    if HAS_BIAS:
        y = y + shift
    if SILU:
        y = triton_math.silu(y, FAST)
    return y


@triton.jit(do_not_specialize=["n_pblk"])
def _gn_apply_flat_kernel(
    X, W, BIAS, STATS, Y,
    C, P, G, n_pblk, sb, sc, osb, osc,
    CG: tl.constexpr, BLOCK: tl.constexpr,
    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """Contiguous x (``sp == 1``): program ``(row, block)`` normalizes ``BLOCK`` consecutive positions
    of one channel row ``(b, c)``, whose mean, rstd, weight and bias are four scalar loads: a 1-D
    elementwise pass with 16-byte accesses and no per-element index math beyond the offset."""
    pid = _last_first()
    row = pid // n_pblk
    pb = pid - row * n_pblk
    b = row // C
    c = row - b * C
    st = STATS + (b * G + c // CG) * 2
    mean = tl.load(st)
    a = tl.load(st + 1)
    if HAS_W:
        a = a * tl.load(W + c).to(tl.float32)
    shift = tl.load(BIAS + c).to(tl.float32) if HAS_BIAS else 0.0
    p = pb * BLOCK + tl.arange(0, BLOCK)
    mask = p < P
    x = tl.load(X + b * sb + c * sc + p, mask=mask, other=0.0).to(tl.float32)
    y = _gn_affine((x - mean) * a, HAS_BIAS, shift, SILU, FAST)
    tl.store(Y + b * osb + c * osc + p, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit
def _gn_cols_coef(BIAS, COEF, bc, half, c, C: tl.constexpr, HAS_BIAS: tl.constexpr, CMASK: tl.constexpr):
    """The per-channel mean, scale and shift of one channel tile ``c`` of the sample (``COEF[bc + c]``
    and ``COEF[half + bc + c]`` with ``bc = b * C``, ``half = B * C``, written by the finalize kernel:
    contiguous fp32 vectors), each ``[1, len(c)]``."""
    if CMASK:
        cmask = c < C
        mean = tl.load(COEF + bc + c, mask=cmask, other=0.0)
        a = tl.load(COEF + half + bc + c, mask=cmask, other=0.0)
        shift = tl.load(BIAS + c, mask=cmask, other=0.0).to(tl.float32) if HAS_BIAS else mean
    else:
        mean = tl.load(COEF + bc + c)
        a = tl.load(COEF + half + bc + c)
        shift = tl.load(BIAS + c).to(tl.float32) if HAS_BIAS else mean
    return mean[None, :], a[None, :], shift[None, :]


@triton.jit
def _gn_cols_load(X, x_rows, pmask, c, C: tl.constexpr, CMASK: tl.constexpr):
    mask = pmask[:, None]
    if CMASK:
        mask = mask & (c < C)[None, :]
    return tl.load(X + x_rows[:, None] + c[None, :], mask=mask, other=0.0)


@triton.jit
def _gn_cols_store(Y, x, y_rows, pmask, c, mean, a, shift, C: tl.constexpr, HAS_BIAS: tl.constexpr,
                   SILU: tl.constexpr, FAST: tl.constexpr, CMASK: tl.constexpr):
    mask = pmask[:, None]
    if CMASK:
        mask = mask & (c < C)[None, :]
    y = _gn_affine((x.to(tl.float32) - mean) * a, HAS_BIAS, shift, SILU, FAST)
    tl.store(Y + y_rows[:, None] + c[None, :], triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["n_prog", "iters"])
def _gn_apply_rows_kernel(
    X, BIAS, COEF, Y,
    P, n_prog, iters, sb, osb, half,
    C: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_C2: tl.constexpr, ROWS: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """channels_last x with dense rows (``sc == 1``, ``sp == C``): program ``(b, j)`` normalizes
    ``iters`` steps of ``ROWS`` positions of sample ``b`` (the loads of step i + 1 issued before
    step i is normalized and stored), all channels, as one tile ``[ROWS, BLOCK_C]`` (``BLOCK_C2 ==
    0``) or two (``BLOCK_C`` + ``BLOCK_C2`` channels: no masked lanes at C = 96 / 192 / 384). The
    per-channel mean, scale (rstd x weight) and bias are loaded once per program (the scale
    precomputed per sample by the finalize kernel: contiguous vector loads, not gathers by group)."""
    TWO: tl.constexpr = BLOCK_C2 > 0
    pid = _last_first()
    b = pid // n_prog
    p0 = (pid - b * n_prog) * iters * ROWS
    p_end = tl.minimum(P, p0 + iters * ROWS)
    r = tl.arange(0, ROWS).to(tl.int64)
    ca = tl.arange(0, BLOCK_C)
    MA: tl.constexpr = BLOCK_C > C
    mean_a, a_a, sh_a = _gn_cols_coef(BIAS, COEF, b * C, half, ca, C, HAS_BIAS, MA)
    p = p0 + r
    xa = _gn_cols_load(X, b * sb + p * C, p < p_end, ca, C, MA)
    if TWO:
        cb = BLOCK_C + tl.arange(0, BLOCK_C2)
        MB: tl.constexpr = BLOCK_C + BLOCK_C2 > C
        mean_b, a_b, sh_b = _gn_cols_coef(BIAS, COEF, b * C, half, cb, C, HAS_BIAS, MB)
        xb = _gn_cols_load(X, b * sb + p * C, p < p_end, cb, C, MB)
    for i in tl.range(0, iters):
        p = p0 + i * ROWS + r
        pn = p + ROWS
        na = _gn_cols_load(X, b * sb + pn * C, pn < p_end, ca, C, MA)
        _gn_cols_store(Y, xa, b * osb + p * C, p < p_end, ca, mean_a, a_a, sh_a, C, HAS_BIAS, SILU, FAST, MA)
        xa = na
        if TWO:
            nb = _gn_cols_load(X, b * sb + pn * C, pn < p_end, cb, C, MB)
            _gn_cols_store(Y, xb, b * osb + p * C, p < p_end, cb, mean_b, a_b, sh_b, C, HAS_BIAS, SILU, FAST, MB)
            xb = nb


@triton.jit
def _gn_tile_coords(t, n_cblk, n_pblk, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, CB_INNER: tl.constexpr):
    """Sample, channels and positions of apply tile ``t``; ``CB_INNER``: consecutive tiles walk the
    channel blocks of one position block (channels_last), else the position blocks of one channel
    block (contiguous)."""
    if CB_INNER:
        cb = t % n_cblk
        r = t // n_cblk
        pb = r % n_pblk
        b = r // n_pblk
    else:
        pb = t % n_pblk
        r = t // n_pblk
        cb = r % n_cblk
        b = r // n_cblk
    c = cb * BLOCK_C + tl.arange(0, BLOCK_C)
    p = pb * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    return b, c, p


@triton.jit
def _gn_apply_load(X, t, t_end, C, P, n_cblk, n_pblk, sb, sc, sp, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr,
                   CB_INNER: tl.constexpr):
    b, c, p = _gn_tile_coords(t, n_cblk, n_pblk, BLOCK_C, BLOCK_P, CB_INNER)
    mask = (c < C)[:, None] & (p < tl.where(t < t_end, P, 0))[None, :]
    ptr = X + b * sb + c.to(tl.int64)[:, None] * sc + (p * sp)[None, :]
    return tl.load(ptr, mask=mask, other=0.0, eviction_policy="evict_first")


@triton.jit(do_not_specialize=["n_tiles", "iters"])
def _gn_apply_stream_kernel(
    X, W, BIAS, STATS, Y,
    C, P, G, n_cblk, n_pblk, n_tiles, iters, sb, sc, sp, osb, osc, osp,
    CG: tl.constexpr, BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, AHEAD: tl.constexpr, CB_INNER: tl.constexpr,
    HAS_W: tl.constexpr, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """``(x - mean) * rstd * weight + bias`` (+ SiLU) over tiles ``pid * iters ..`` of
    ``[BLOCK_C, BLOCK_P]`` (channel blocks need not hold whole groups: mean / rstd are gathered per
    channel), the loads of tile t + AHEAD issued before tile t is normalized and stored."""
    t = tl.program_id(0).to(tl.int64) * iters
    t_end = tl.minimum(t + iters, n_tiles)
    x = _gn_apply_load(X, t, t_end, C, P, n_cblk, n_pblk, sb, sc, sp, BLOCK_C, BLOCK_P, CB_INNER)
    if AHEAD == 2:
        xn = _gn_apply_load(X, t + 1, t_end, C, P, n_cblk, n_pblk, sb, sc, sp, BLOCK_C, BLOCK_P, CB_INNER)
    for _ in tl.range(0, iters):
        xm = _gn_apply_load(X, t + AHEAD, t_end, C, P, n_cblk, n_pblk, sb, sc, sp, BLOCK_C, BLOCK_P, CB_INNER)
        b, c, p = _gn_tile_coords(t, n_cblk, n_pblk, BLOCK_C, BLOCK_P, CB_INNER)
        cmask = c < C
        mask = cmask[:, None] & (p < tl.where(t < t_end, P, 0))[None, :]
        st = STATS + (b * G + c // CG) * 2
        mean = tl.load(st, mask=cmask, other=0.0, eviction_policy="evict_last")
        a = tl.load(st + 1, mask=cmask, other=0.0, eviction_policy="evict_last")
        if HAS_W:
            a = a * tl.load(W + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
        y = (x.to(tl.float32) - mean[:, None]) * a[:, None]
        if HAS_BIAS:
            y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
        if SILU:
            y = tl.where(mask, y, 0.0)  # masked lanes hold -mean * rstd, which exp() could overflow on
            y = triton_math.silu(y, FAST)
        ptr = Y + b * osb + c.to(tl.int64)[:, None] * osc + (p * osp)[None, :]
        tl.store(ptr, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)
        if AHEAD == 2:
            x = xn
            xn = xm
        else:
            x = xm
        t += 1


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
    coef_out = False  # the rows apply reads per-channel (mean, rstd * weight) the finalize kernel writes
    affine = {"HAS_W": weight is not None, "HAS_BIAS": bias is not None, "SILU": geom.silu,
              "FAST": triton_math.fast_level(x.dtype, plat, cfg.fast)}
    if cfg.stream:
        n_cblk = -(-g.C // cfg.block_c)
        iters, n_span = stats_split(geom, cfg, n_cblk)
        stats_block = cfg.block_p
        n_part = g.B * g.C * n_span * 2
        stats = PreparedLaunch(
            _gn_stats_stream_kernel, (g.B * n_cblk * n_span,),
            {"BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, "AHEAD": cfg.ahead},
            device=x.device, n_ptrs=2, options=cfg.launch_options(plat),
        )
        stats_args = (g.C, g.P, n_cblk, n_span, iters, g.sb, g.sc, g.sp)
        a_cblk = -(-g.C // cfg.apply_block_c)
        a_pblk = -(-g.P // cfg.apply_block_p)
        n_tiles = g.B * a_cblk * a_pblk
        a_iters = max(1, -(-n_tiles // max(1, cfg.apply_programs)))
        apply = PreparedLaunch(
            _gn_apply_stream_kernel, (-(-n_tiles // a_iters),),
            {"CG": Cg, "BLOCK_C": cfg.apply_block_c, "BLOCK_P": cfg.apply_block_p, "AHEAD": cfg.ahead,
             "CB_INNER": g.channels_last, **affine},
            device=x.device, n_ptrs=5, options=cfg.apply_launch_options(plat),
        )
        apply_args = (g.C, g.P, G, a_cblk, a_pblk, n_tiles, a_iters, g.sb, g.sc, g.sp, g.out_sb, g.out_sc, g.out_sp)
        n_ent = Cg * n_span
    else:
        n_cblk = -(-G // cfg.gpb)
        n_pblk = -(-g.P // cfg.block_p)
        if cfg.stats_rows and g.dense_rows and next_pow2(g.C) <= 1024:
            stats_block = cfg.stats_rows
            iters = max(1, -(-(g.B * -(-g.P // stats_block)) // cfg.stats_programs))
            n_span = -(-g.P // (iters * stats_block))
            ca, cb = channel_tiles(g.C, cfg.split)
            stats = PreparedLaunch(
                _gn_stats_rows_kernel, (g.B * n_span,),
                {"C": g.C, "G": G, "CG": Cg, "BLOCK_C": ca, "BLOCK_C2": cb, "G_P2": next_pow2(G), "ROWS": stats_block},
                device=x.device, n_ptrs=2, options=cfg.launch_options(plat),
            )
            stats_args = (g.P, n_span, iters, g.sb)
        else:
            stats_block = cfg.block_p
            iters, n_span = stats_split(geom, cfg, n_cblk)
            stats = PreparedLaunch(
                _gn_stats_kernel, (g.B * n_cblk * n_span,),
                {"CG": Cg, "GPB": cfg.gpb, "GPB_P2": next_pow2(cfg.gpb), "BLOCK_C": cfg.block_c,
                 "BLOCK_P": cfg.block_p},
                device=x.device, n_ptrs=2, options=cfg.launch_options(plat),
            )
            stats_args = (g.C, g.P, G, n_cblk, n_span, iters, g.sb, g.sc, g.sp)
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
        n_ent = n_span
    finalize = PreparedLaunch(
        _gn_finalize_kernel, (g.B * G,),
        {"CG": Cg, "BLOCK_S": min(cfg.finalize_block, next_pow2(n_ent)), "PER_CHANNEL": cfg.stream,
         "COEF_OUT": coef_out, "HAS_W": weight is not None, "CG_P2": next_pow2(Cg)},
        device=x.device, n_ptrs=4, options={"num_warps": 8 if cfg.finalize_block > 1024 else 4, "num_stages": 1},
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


# what a VAE launch sees as multiples of 16: aligned tensors, P = T * H * W, C * P, C = 96 ...
_DIVISIBLE = ("X", "PART", "W", "BIAS", "STATS", "Y", "P", "sb", "sc", "sp", "osb", "osc", "osp")


def _stats_variant(dt: str, cfg: GroupConfig, C: int, G: int, cl: bool, tag: str):
    from sgl_diffusion_core import AotVariant

    unit = "sc" if cl else "sp"
    sig = {"X": f"*{dt}", "PART": "*fp32"}
    if cfg.stream:
        kernel = _gn_stats_stream_kernel
        ints = ("C", "P", "n_cblk", "n_span", "iters", "sb", "sc", "sp")
        const = {"BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, "AHEAD": cfg.ahead}
    else:
        kernel = _gn_stats_kernel
        ints = ("C", "P", "G", "n_cblk", "n_span", "iters", "sb", "sc", "sp")
        const = {"CG": C // G, "GPB": cfg.gpb, "GPB_P2": next_pow2(cfg.gpb), "BLOCK_C": cfg.block_c,
                 "BLOCK_P": cfg.block_p}
    sig.update({n: "i32" for n in ints})
    sig.update({n: "constexpr" for n in (*const, unit)})
    const[unit] = 1
    return AotVariant(name=f"group_norm_silu.stats[{tag},w={cfg.num_warps}]", kernel=kernel, signature=sig,
                      constexprs=const, num_warps=cfg.num_warps, options={"enable_fp_fusion": True},
                      divisible_by_16=tuple(n for n in _DIVISIBLE if n in kernel.arg_names))


def _apply_variant(dt: str, cfg: GroupConfig, C: int, G: int, cl: bool, tag: str, platform: str):
    from sgl_diffusion_core import AotVariant

    unit = ("sc", "osc") if cl else ("sp", "osp")
    sig = {"X": f"*{dt}", "W": f"*{dt}", "BIAS": f"*{dt}", "STATS": "*fp32", "Y": f"*{dt}"}
    # SiLU's fast-math level of a launch of this dtype (triton_math.fast_level)
    fast = 0 if dt == "fp32" else (2 if platform == "cuda" else 1)
    affine = {"HAS_W": True, "HAS_BIAS": True, "SILU": True, "FAST": fast}
    if cfg.apply_flat:
        kernel = _gn_apply_flat_kernel
        sig.update({n: "i32" for n in ("C", "P", "G", "n_pblk", "sb", "sc", "osb", "osc")})
        const = {"CG": C // G, "BLOCK": cfg.apply_flat, **affine}
    elif cfg.apply_rows:
        kernel = _gn_apply_rows_kernel
        sig = {"X": f"*{dt}", "BIAS": f"*{dt}", "COEF": "*fp32", "Y": f"*{dt}"}
        sig.update({n: "i32" for n in ("P", "n_prog", "iters", "sb", "osb", "half")})
        ca, cb = channel_tiles(C, cfg.split)
        const = {"C": C, "BLOCK_C": ca, "BLOCK_C2": cb, "ROWS": cfg.apply_rows,
                 **{k: v for k, v in affine.items() if k != "HAS_W"}}
    if cfg.apply_flat or cfg.apply_rows:
        sig.update({n: "constexpr" for n in const})
        warps = cfg.apply_launch_options("cuda")["num_warps"]
        return AotVariant(name=f"group_norm_silu.apply[{tag},w={warps}]", kernel=kernel, signature=sig,
                          constexprs=const, num_warps=warps, options={"enable_fp_fusion": True},
                          divisible_by_16=tuple(n for n in _DIVISIBLE if n in kernel.arg_names))
    if cfg.stream:
        kernel = _gn_apply_stream_kernel
        ints = ("C", "P", "G", "n_cblk", "n_pblk", "n_tiles", "iters")
        const = {"CG": C // G, "BLOCK_C": cfg.apply_block_c, "BLOCK_P": cfg.apply_block_p, "AHEAD": cfg.ahead,
                 "CB_INNER": cl, **affine}
    else:
        kernel = _gn_apply_kernel
        ints = ("C", "P", "G", "n_cblk", "n_pblk")
        const = {"CG": C // G, "GPB": cfg.gpb, "BLOCK_C": cfg.block_c, "BLOCK_P": cfg.block_p, **affine}
    sig.update({n: "i32" for n in (*ints, "sb", "sc", "sp", "osb", "osc", "osp")})
    sig.update({n: "constexpr" for n in (*const, *unit)})
    const.update({n: 1 for n in unit})
    warps = cfg.apply_launch_options("cuda")["num_warps"]
    return AotVariant(name=f"group_norm_silu.apply[{tag},w={warps}]", kernel=kernel, signature=sig,
                      constexprs=const, num_warps=warps, options={"enable_fp_fusion": True},
                      divisible_by_16=tuple(n for n in _DIVISIBLE if n in kernel.arg_names))


def aot_variants(platform: str = "cuda"):
    """VAE configurations (C = 96, 192, 384, 512 with 32 groups; C=6 / 3 groups) in both memory
    formats and bf16/fp16/fp32: the stats and apply kernels of the default (stream) rule and of
    the v1 rule, and the finalize kernel of both partial layouts."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for C, G in ((96, 32), (192, 32), (384, 32), (512, 32), (6, 3)):
            for cl in (False, True):
                for cfg in (_stream_config(C, G, esize, cl, platform), _group_config(C, G, esize, cl, platform)):
                    rule = "stream" if cfg.stream else "v1"
                    tile = f"{cfg.block_c}x{cfg.block_p}" + (f" ahead {cfg.ahead}" if cfg.stream else "")
                    tag = f"{rule},{dt},C={C},G={G},{'channels_last' if cl else 'contiguous'},tile={tile}"
                    out.append(_stats_variant(dt, cfg, C, G, cl, tag))
                    out.append(_apply_variant(dt, cfg, C, G, cl, tag, platform))
                v2 = _v2_config(C, G, esize, cl, platform)  # v1's statistics, the flat / rows apply
                kind = f"rows {v2.apply_rows}x{'+'.join(map(str, channel_tiles(C, v2.split)))}" if cl else \
                    f"flat {v2.apply_flat}"
                tag = f"v2,{dt},C={C},G={G},{'channels_last' if cl else 'contiguous'},apply={kind}"
                out.append(_apply_variant(dt, v2, C, G, cl, tag, platform))
                if v2.stats_rows:  # the rows statistics kernel (channels_last)
                    sig = {"X": f"*{dt}", "PART": "*fp32", "P": "i32", "n_span": "i32", "iters": "i32", "sb": "i32"}
                    ca, cb = channel_tiles(C, v2.split)
                    const = {"C": C, "G": G, "CG": C // G, "BLOCK_C": ca, "BLOCK_C2": cb, "G_P2": next_pow2(G),
                             "ROWS": v2.stats_rows}
                    sig.update({n: "constexpr" for n in const})
                    out.append(AotVariant(name=f"group_norm_silu.stats[v2,{dt},C={C},G={G},channels_last,"
                                               f"rows={v2.stats_rows}x{ca}+{cb},w={v2.num_warps}]",
                                          kernel=_gn_stats_rows_kernel, signature=sig, constexprs=const,
                                          num_warps=v2.num_warps, options={"enable_fp_fusion": True},
                                          divisible_by_16=("X", "PART", "P", "sb")))
        for Cg in (3, 6, 12, 2):
            sig = {"PART": "*fp32", "STATS": "*fp32", "W": f"*{dt}", "COEF": "*fp32", "P": "i32", "n_span": "i32",
                   "span_len": "i32", "G": "i32", "half": "i32", "eps": "fp32"}
            # (PER_CHANNEL, COEF_OUT): the stream rule's partials; v1's, with the rows apply's coefficients
            for per_channel, coef in ((False, False), (True, False), (False, True)):
                if dt != "bf16" and not coef:  # only the coefficients depend on x's dtype (the weight's)
                    continue
                const = {"CG": Cg, "PER_CHANNEL": per_channel, "COEF_OUT": coef, "HAS_W": coef,
                         "CG_P2": next_pow2(Cg), "BLOCK_S": _STREAM_FINALIZE_BLOCK if per_channel else _FINALIZE_BLOCK}
                out.append(AotVariant(name=f"group_norm_silu.finalize[{dt},Cg={Cg},per_channel={per_channel},"
                                           f"coef={coef}]",
                                      kernel=_gn_finalize_kernel, signature={**sig, **{n: "constexpr" for n in const}},
                                      constexprs=const, num_warps=8 if per_channel else 4,
                                      options={"enable_fp_fusion": True}))
    return out
