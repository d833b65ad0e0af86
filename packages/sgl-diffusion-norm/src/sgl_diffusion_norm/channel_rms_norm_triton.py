"""Triton kernel for ``channel_rms_norm`` (CUDA and ROCm; CPU under ``TRITON_INTERPRET=1``).

x is seen as ``[B, C, P]`` (the spatial dims merged, stride ``sp``; channel stride ``sc``). Three
kernels: the rows kernel (channels_last x with dense rows, the default there;
:func:`_rows_config`), the streaming kernel (``rule="stream"``, other channels_last views) and the
v1 kernel described here (contiguous x under the slab / mid / wide rules, and the fallback). One
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

import dataclasses
import functools
from dataclasses import dataclass

import torch
import triton
import triton.language as tl

from sgl_diffusion_core import device_arch, next_pow2, tensor_platform, triton_math, warps_for


@dataclass(frozen=True)
class ChannelConfig:
    """``stream=False``: the v1 kernel (one tile per program; ``chunks > 1``: two passes over a
    chunked slab; the slab / mid / wide rules run it too). ``stream=True``: the streaming kernel,
    one pass from a register tile of ``block_c + block_c2`` channels x ``block_p`` positions,
    several tiles per program (about ``programs`` programs in all) with the next tile's loads
    issued before the current one is normalized and stored."""

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
    # v1 with chunks > 1: ``prefetch`` issues chunk k + 1's loads of the output pass before chunk k is
    # normalized and stored; ``hold`` (chunks <= 4) keeps the whole slab in registers from the
    # statistics pass, so the output pass reads nothing
    prefetch: bool = False
    hold: bool = False
    # hold: each chunk's gamma / bias loaded ahead (chunk 0's with the slab, chunk k + 1's before
    # chunk k's store) instead of after the previous chunk's store
    ops_ahead: bool = False
    # ops_ahead with SiLU's fast forms: SiLU's exponent as its own FMA (one multiply per value fewer)
    fold_silu: bool = False
    # v1 on CUDA sm_90+: each program is a cluster of this many CTAs (Triton's ``num_ctas``), which
    # Triton 3.6 splits along the positions: every CTA holds ``block_p / ctas`` positions of the
    # slab, and the cluster's CTAs, launched together, read one run of ``block_p`` positions per
    # channel at the same time (DRAM sees runs of ``block_p`` elements, not ``block_p / ctas``)
    ctas: int = 1

    def launch_options(self, platform: str) -> dict:
        if self.ctas != 1:
            if self.ctas not in (2, 4, 8) or self.stream or self.rows:
                raise ValueError(f"ctas (CTAs per program: 1, 2, 4 or 8, v1 kernel only) cannot be {self.ctas} "
                                 f"with stream={self.stream}, rows={self.rows}")
            if platform == "hip":
                raise ValueError("ctas > 1 (thread-block clusters) needs CUDA sm_90 or newer, not ROCm")
            return {"num_warps": self.num_warps, "num_stages": 1, "num_ctas": self.ctas}
        return {"num_warps": self.num_warps, "num_stages": 1}

    def v1_constexprs(self) -> dict:
        """The tile constexprs of :func:`_channel_rms_kernel` (the v1 / slab / mid / wide rules)."""
        if self.hold and not 2 <= self.chunks <= 4:
            raise ValueError(f"hold keeps 2 to 4 channel chunks in registers, not {self.chunks}")
        if (self.ops_ahead or self.fold_silu) and not self.hold:
            raise ValueError("ops_ahead (gamma / bias loaded a chunk ahead) and fold_silu go with hold")
        if self.fold_silu and not self.ops_ahead:
            raise ValueError("fold_silu is a form of the ops_ahead output chain: set ops_ahead too")
        return {"BLOCK_C": self.block_c, "BLOCK_P": self.block_p, "CHUNKS": self.chunks,
                "PREFETCH": self.prefetch and self.chunks > 1, "HOLD": self.hold, "OPS_AHEAD": self.ops_ahead,
                "FOLD_SILU": self.fold_silu}

    @classmethod
    def from_heuristic(cls, C: int, elem_bytes: int, channels_last: bool, platform: str,
                       arch: int | str | None = None, rule: str = "auto", dtype: str | None = None) -> ChannelConfig:
        """``rule``: ``"auto"`` (the default: the measured winner per layout and C), ``"rows"``,
        ``"slab"`` (contiguous x up to 128 channels), ``"mid"`` (contiguous x up to 384 channels),
        ``"wide"`` (contiguous x, v1's tile with the output pass prefetching), ``"stream"`` or
        ``"v1"`` (the first measured rule, :func:`_channel_config_v1`). ``dtype`` (the torch dtype's
        name, e.g. ``"bfloat16"``): the mid rule's held slab becomes a two-CTA cluster for the
        dtypes in ``_CLUSTER_DTYPES`` on CUDA sm_90+ (:func:`cluster_rule_applies`).

        Measured on one H200, bf16 (% of copy, vae_norm_sweep_s10c_h200.json): channels_last the
        rows kernel 95.2 / 95.5 / 97.9% at C = 96 / 192 / 384; contiguous x the slab rule 92.4% at
        C = 96, the mid rule 85.2 / 80.8% at C = 192 / 384 (v1 79.3 / 66.3% at C = 96 / 384, wide
        73.2% at C = 384)."""
        if rule == "auto":
            if channels_last:
                rule = "rows"
            else:
                rule = "slab" if C <= _SLAB_MAX_C else "mid" if C <= _MID_MAX_C else "wide"
        if rule == "v1":
            return _channel_config_v1(C, elem_bytes, channels_last, platform)
        if rule == "slab":
            return _slab_config(C, elem_bytes, channels_last, platform)
        if rule == "mid":
            cfg = _mid_config(C, elem_bytes, channels_last, platform)
            if cfg.hold and dtype in _CLUSTER_DTYPES and platform == "cuda" and cluster_rule_applies(arch):
                # two CTAs per program, each holding the one-CTA rule's 64-position slab: one 256-byte
                # run per channel row reaches DRAM at once; gamma / bias a chunk ahead (H200, bf16,
                # C = 384, % of copy: 84.0-84.3% against 81.7-82.3% with one CTA, 85.3 / 85.7% with the
                # operands ahead, which gain nothing with one CTA: channel_cluster_s14_*_h200.json,
                # channel_ops_ahead_s14_torchptxas_h200.json); SiLU's exponent as its own FMA: 0.1-0.6
                # points more in 6 of 6 pairs (channel_fold_s14_torchptxas_h200.json); loads with no L2
                # hint: 86.5 / 88.1 / 88.6% at 21 x 240 x 416 / 120 x 208 / 480 x 832
                # (channel_rms_norm_bench_h200_s17_nohint*.json)
                cfg = dataclasses.replace(cfg, block_p=cfg.block_p * _CLUSTER_CTAS, ctas=_CLUSTER_CTAS, ops_ahead=True,
                                          fold_silu=True)
            return cfg
        if rule == "wide":
            return _wide_config(C, elem_bytes, channels_last, platform)
        if rule == "rows":
            return _rows_config(C, elem_bytes, channels_last, platform)
        if rule != "stream":
            raise ValueError(f"unknown channel_rms_norm launch rule {rule!r}; known: 'auto', 'rows', 'slab', "
                             "'mid', 'wide', 'stream', 'v1'")
        return _channel_config(C, elem_bytes, channels_last, platform)


# Elements per tile (8 KB of bf16).
_TILE = 4096
# contiguous layout, chunked path: bytes of one program's [C, BLOCK_P] slab
_SLAB_BYTES = 32768
# channels_last rows wider than this are processed in chunks (two passes) instead of one tile
_MAX_ROW = 2048


@functools.cache
def _channel_config_v1(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """The v1 launch rule (``ChannelConfig.from_heuristic(rule="v1")``; the fallback of the other
    rules outside their range), from a sweep on one H200 (bf16, Wan-VAE shapes;
    tools/gpu/channel_rms_norm_sweep.py, docs/benchmarks/channel_rms_norm_sweep_h200.json):

    * contiguous: a two-pass slab on 8 warps. At C = 96 (32 channels x 128 positions x 3 chunks)
      the best of 13 tiles, 68.3% of copy; at C = 384 its 128 x 32 x 3 slab 66.9% in the bench,
      32 x 128 x 12 58.1% in the sweep. One pass over a whole ``[next_pow2(C), BLOCK_P]`` register
      tile reached 61.0% / 54.6% at best.
    * channels_last: one tile of whole channel rows with 4 warps (four 16-byte accesses per
      thread): 74.1% at C = 96, 75.0% at C = 384; 8 warps: 64.3% / 62.1%.
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
    warps = warps_for(block_c * block_p * elem_bytes, 16 * per_thread, warp)
    return ChannelConfig(block_c=block_c, block_p=block_p, chunks=chunks, num_warps=warps)


# contiguous x with at most this many channels: v1's kernel over 256-byte channel runs, 4 warps,
# the output pass prefetching
_SLAB_MAX_C = 128
_SLAB_RUN_BYTES = 256
_SLAB_TILE_BYTES = 8192


@functools.cache
def _slab_config(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """Contiguous x with up to 128 channels: v1's two-pass kernel over ``[32, 256 bytes]`` channel
    chunks (8 KB, four 16-byte accesses per thread: 4 warps on CUDA), the output pass issuing the
    next chunk's loads before it stores the current one, SiLU's fast forms for 16-bit outputs.

    H200 sweep (bf16, Wan-VAE C = 96, % of copy, vae_norm_sweep_s10c_h200.json): 32 x 128 x 3
    chunks on 4 warps with prefetch 92.4% (torch's ptxas 92.2%); the same with the slab held in
    registers 88.3%, without either 74.1%; 64 x 64 x 2 on 4 warps, no prefetch, 79.6%."""
    if channels_last or C > _SLAB_MAX_C:
        return _channel_config_v1(C, elem_bytes, channels_last, platform)
    warp = 64 if platform == "hip" else 32
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
def _mid_config(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """Contiguous x with 129 to 384 channels: v1's two-pass kernel over three chunks of
    ``next_pow2(C / 3)`` channels x 128 bytes, four 16-byte accesses per thread per chunk; with
    chunks of 128 channels (C > 256) the slab is read once and held in registers (``hold``),
    statistics and output from registers; below that the output pass prefetches.

    H200 sweeps (bf16, Wan-VAE shapes, % of copy): C = 384 hold 128 x 64 x 3 on 8
    warps 80.8-83.0% (vae_norm_sweep_s10c / s10d / s10e), over 128 x 32 x 3 63.6%, prefetch
    instead 73.2-75.8%, v1 66.3%; C = 192 prefetch 64 x 64 x 3 on 4 warps 85.2%, hold 80.1%
    (64 x 128 x 3 on 8 warps 84.6%; vae_norm_sweep_s10g_c192_h200.json)."""
    if channels_last or C > _MID_MAX_C:
        return _channel_config_v1(C, elem_bytes, channels_last, platform)
    warp = 64 if platform == "hip" else 32
    block_c = next_pow2(-(-max(C, 1) // _MID_CHUNKS))
    block_p = max(1, _MID_RUN_BYTES // elem_bytes)
    chunks = -(-max(C, 1) // block_c)
    if chunks < 2:  # fewer channels than two chunks: the slab rule's kernel
        return _slab_config(C, elem_bytes, channels_last, platform)
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
# 140-143 registers as a cluster or with ops_ahead (one CTA per SM): 44-46% of copy against one
# CTA's 68.4-68.8% (channel_fp16_bits_s14_torchptxas_h200.json)
_CLUSTER_DTYPES = ("bfloat16",)
_CLUSTER_TRITON = ("3.6",)


def cluster_rule_applies(arch: int | str | None, triton_version: str | None = None) -> bool:
    """Whether the mid rule's held slab runs as a two-CTA cluster: a CUDA ``arch`` (``major * 10 +
    minor``) of at least 90 and a Triton whose ``major.minor`` is in ``_CLUSTER_TRITON``."""
    version = triton.__version__ if triton_version is None else triton_version
    return (isinstance(arch, int) and arch >= _CLUSTER_MIN_ARCH
            and ".".join(version.split(".")[:2]) in _CLUSTER_TRITON)


@functools.cache
def _wide_config(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """Contiguous x with more than 384 channels: v1's tile, the output pass prefetching, SiLU's
    fast forms for 16-bit outputs (at C = 384: 73.2% of copy against v1's 66.3%,
    vae_norm_sweep_s10c_h200.json)."""
    v1 = _channel_config_v1(C, elem_bytes, channels_last, platform)
    if channels_last or v1.chunks < 2:
        return v1
    return dataclasses.replace(v1, fast=None, prefetch=True)


def split_channels(C: int) -> tuple[int, int]:
    """The stream kernel's two register tiles: ``(2^a, next_pow2(C - 2^a))`` with ``2^a <= C``
    the largest power of two (96 -> 64 + 32, 192 -> 128 + 64, 384 -> 256 + 128, 100 -> 64 + 64);
    a power-of-two C gets one masked row as its second tile."""
    a = 1 << (max(C, 1).bit_length() - 1)
    rest = max(C, 1) - a
    return a, next_pow2(rest) if rest else 1


# stream kernel: ~48 elements of a tile per thread and the loads of two tiles ahead in flight.
# sm_90, bf16, SiLU + bias, 16-byte accesses: 174-219 registers, no spills; with the resident
# programs that allows, ~48 KB of loads in flight per SM at C = 96 / 192 / 384 in both layouts
# (the v1 kernels: 18-24 KB, and only while a program is in its load phase)
_STREAM_PER_THREAD = 48
_STREAM_AHEAD = 2
_STREAM_MAX_ROWS = 1024
_STREAM_PROGRAMS = 1056  # 132 SMs x 8: every resident program loops over several tiles
_INTERPRETER_STREAM_PROGRAMS = 1  # the CPU lane: every tile of a call in one program (the loop and its look-ahead)


@functools.cache
def _channel_config(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """Launch rule of the streaming kernel (``rule="stream"``; tools/gpu/vae_norm_sweep.py compares
    it with the v1 rule). Why v1 stays below 85% of copy: each program loads one 6-8 KB
    tile, reduces it across warps and stores it, so a resident program has loads in flight for
    only part of its life (latency bound; sm_90: 48-80 registers, no spills, 16-byte accesses).
    A stream program keeps the next tile's loads in flight while it reduces and stores the
    current one. The tile holds whole channel rows split into two power-of-two blocks (no quarter
    of masked lanes at C = 96 / 192 / 384); contiguous x gets runs of at least 32 positions
    (64 bytes) per channel."""
    warp = 64 if platform == "hip" else 32
    a, b = split_channels(C)
    rows = a + b
    min_p = 1 if channels_last else 32
    per_thread = _STREAM_PER_THREAD * 2 // elem_bytes
    if rows > _STREAM_MAX_ROWS or rows * min_p > per_thread * 8 * warp:
        return _channel_config_v1(C, elem_bytes, channels_last, platform)
    block_p = next_pow2(per_thread * 4 * warp // rows + 1) // 2
    block_p = max(min_p, min(128 if not channels_last else 64, block_p))
    warps = next_pow2(warps_for(rows * block_p, per_thread, warp) + 1) // 2  # a power of two
    programs = _INTERPRETER_STREAM_PROGRAMS if platform == "cpu" else _STREAM_PROGRAMS
    # loads in flight: two tiles ahead, one from 192 channel rows on channels_last (H200,
    # vae_norm_sweep_h200.json: C = 192 / 384 81.9 / 80.3% of copy with one, 77.4 / 75.7% with
    # two; C = 96 73.2% with one, 75.5% with two)
    ahead = 1 if channels_last and rows >= 192 else _STREAM_AHEAD
    return ChannelConfig(block_c=a, block_p=block_p, chunks=1, num_warps=warps, stream=True, block_c2=b,
                         ahead=ahead, programs=programs)


@triton.jit
def _finish(x, inv, G, BIAS, c, cmask, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr):
    """:func:`_affine_silu` with chunk rows ``c``'s gamma / bias loaded here (the bias load after the
    multiply, as the v1 kernels were measured: loading it first reorders their sm_90 SASS)."""
    g = tl.load(G + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    y = x * inv[None, :] * g[:, None]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0, eviction_policy="evict_last").to(tl.float32)[:, None]
    if SILU:
        y = triton_math.silu(y, FAST)
    return y


@triton.jit
def _affine_silu(x, inv, g, bias, HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr):
    """``x * inv * g (+ bias)``, then SiLU if asked, in fp32: the output chain of every kernel here
    (``inv`` broadcast over the channels, ``g`` / ``bias`` over the positions; ``bias`` unused
    without ``HAS_BIAS``)."""
    y = x * inv * g
    if HAS_BIAS:
        y = y + bias
    if SILU:
        y = triton_math.silu(y, FAST)
    return y


@triton.jit(do_not_specialize=["n_pblk", "eps"])
def _channel_rms_kernel(
    X, G, BIAS, Y,
    C, P, n_pblk, sb, sc, sp, osb, osc, osp, scale, eps,
    BLOCK_C: tl.constexpr, BLOCK_P: tl.constexpr, CHUNKS: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
    PREFETCH: tl.constexpr = False, HOLD: tl.constexpr = False, OPS_AHEAD: tl.constexpr = False,
    FOLD_SILU: tl.constexpr = False,
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
        x = _chunk_load(x_base, x_p, pmask, C, sc, 0, BLOCK_C, "evict_first", False)
        inv = scale / tl.maximum(tl.sqrt(tl.sum(x * x, axis=0)), eps)
        _chunk_store(x, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 0, BLOCK_C, HAS_BIAS, SILU, FAST)
    elif HOLD:
        # the slab as up to four register tiles of raw values (CHUNKS <= 4, half a register per bf16
        # value): one read, statistics and output from registers. The loads carry no L2 eviction hint:
        # H200, bf16, C = 384, the two-CTA cluster: 88.0-88.2% of copy at 21 x 240 x 416 against 85.1-85.6%
        # with evict_first, 87.9-88.0% against 85.3-85.4% at 21 x 120 x 208; evict_last 87.7-88.2%
        # (channel_hint_probe_s17_h200_*.json)
        x0 = _chunk_load(x_base, x_p, pmask, C, sc, 0, BLOCK_C, "", True)
        x1 = _chunk_load(x_base, x_p, pmask, C, sc, 1, BLOCK_C, "", True)
        acc = _sq(x0) + _sq(x1)
        if CHUNKS > 2:
            x2 = _chunk_load(x_base, x_p, pmask, C, sc, 2, BLOCK_C, "", True)
            acc += _sq(x2)
        if CHUNKS > 3:
            x3 = _chunk_load(x_base, x_p, pmask, C, sc, 3, BLOCK_C, "", True)
            acc += _sq(x3)
        if OPS_AHEAD:
            # gamma / bias of chunk 0 with the slab's loads, of chunk k + 1 before chunk k's store:
            # no chunk waits for its own operands after a store they might alias
            g0, b0 = _chunk_ops(G, BIAS, C, 0, BLOCK_C, HAS_BIAS)
        inv = scale / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        if OPS_AHEAD:
            g1, b1 = _chunk_ops(G, BIAS, C, 1, BLOCK_C, HAS_BIAS)
            _chunk_store_ops(x0, g0, b0, y_base, y_p, pmask, inv, Y, C, osc, 0, BLOCK_C, HAS_BIAS, SILU, FAST,
                             FOLD_SILU and SILU and FAST > 0)
            if CHUNKS > 2:
                g2, b2 = _chunk_ops(G, BIAS, C, 2, BLOCK_C, HAS_BIAS)
            _chunk_store_ops(x1, g1, b1, y_base, y_p, pmask, inv, Y, C, osc, 1, BLOCK_C, HAS_BIAS, SILU, FAST,
                             FOLD_SILU and SILU and FAST > 0)
            if CHUNKS > 3:
                g3, b3 = _chunk_ops(G, BIAS, C, 3, BLOCK_C, HAS_BIAS)
            if CHUNKS > 2:
                _chunk_store_ops(x2, g2, b2, y_base, y_p, pmask, inv, Y, C, osc, 2, BLOCK_C, HAS_BIAS, SILU, FAST,
                             FOLD_SILU and SILU and FAST > 0)
            if CHUNKS > 3:
                _chunk_store_ops(x3, g3, b3, y_base, y_p, pmask, inv, Y, C, osc, 3, BLOCK_C, HAS_BIAS, SILU, FAST,
                             FOLD_SILU and SILU and FAST > 0)
        else:
            _chunk_store(x0, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 0, BLOCK_C, HAS_BIAS, SILU, FAST)
            _chunk_store(x1, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 1, BLOCK_C, HAS_BIAS, SILU, FAST)
            if CHUNKS > 2:
                _chunk_store(x2, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 2, BLOCK_C, HAS_BIAS, SILU, FAST)
            if CHUNKS > 3:
                _chunk_store(x3, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, 3, BLOCK_C, HAS_BIAS, SILU, FAST)
    else:
        acc = tl.zeros([BLOCK_C, BLOCK_P], dtype=tl.float32)
        # (unrolling both chunk loops measured 13-61% against 66-71%, vae_norm_sweep_s6_contig_cl_h200.json)
        for k in tl.range(0, CHUNKS):
            xk = _chunk_load(x_base, x_p, pmask, C, sc, k, BLOCK_C, "evict_last", False)
            acc += xk * xk
        inv = scale / tl.maximum(tl.sqrt(tl.sum(acc, axis=0)), eps)
        if PREFETCH:  # chunk k + 1's loads in flight while chunk k is normalized and stored
            xk = _chunk_load(x_base, x_p, pmask, C, sc, 0, BLOCK_C, "evict_first", False)
            for k in tl.range(0, CHUNKS):
                xn = _chunk_load(x_base, x_p, pmask, C, sc, k + 1, BLOCK_C, "evict_first", False)
                _chunk_store(xk, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, k, BLOCK_C, HAS_BIAS, SILU, FAST)
                xk = xn
        else:
            for k in tl.range(0, CHUNKS):
                xk = _chunk_load(x_base, x_p, pmask, C, sc, k, BLOCK_C, "evict_first", False)
                _chunk_store(xk, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, k, BLOCK_C, HAS_BIAS, SILU, FAST)


@triton.jit
def _chunk_load(x_base, x_p, pmask, C, sc, k, BLOCK_C: tl.constexpr, EVICT: tl.constexpr, RAW: tl.constexpr):
    """Channel chunk ``k`` as fp32 (``RAW``: as stored); rows past C read nothing. The statistics
    pass keeps its chunks in L1 / L2 (``EVICT="evict_last"``) for the output pass's re-read; the held
    slab's single read takes no hint (``EVICT=""``).
    (Triton 3.6 cannot take a string constexpr from a default: every caller passes both.)"""
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    mask = (c < C)[:, None] & pmask[None, :]
    x = tl.load(x_base + c.to(tl.int64)[:, None] * sc + x_p, mask=mask, other=0.0, eviction_policy=EVICT)
    return x if RAW else x.to(tl.float32)


@triton.jit
def _sq(x):
    x = x.to(tl.float32)
    return x * x


@triton.jit
def _chunk_store(x, y_base, y_p, pmask, inv, G, BIAS, Y, C, osc, k, BLOCK_C: tl.constexpr,
                 HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr):
    """Normalize channel chunk ``k`` (fp32, or raw values held since the statistics pass: widened
    through their bits, so the compiler keeps them packed instead of holding fp32 copies; sm_90,
    hold 32 x 128 x 3 at C = 96 / 128 x 32 x 3 at C = 384: 105 / 64 registers against 167 / 90,
    measured without SiLU's fast form) and store it."""
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    cmask = c < C
    y = _finish(triton_math.widen_held(x), inv, G, BIAS, c, cmask, HAS_BIAS, SILU, FAST)
    tl.store(y_base + c.to(tl.int64)[:, None] * osc + y_p, triton_math.narrow(y, Y.dtype.element_ty),
             mask=cmask[:, None] & pmask[None, :])


@triton.jit
def _chunk_ops(G, BIAS, C, k, BLOCK_C: tl.constexpr, HAS_BIAS: tl.constexpr):
    """Channel chunk ``k``'s gamma and bias as stored, as ``[BLOCK_C, 1]`` tiles (bias: gamma again when
    there is none). Loaded in the 2-D layout they are used in: a 1-D load converted to it across the
    CTAs of a 4-warp cluster does not compile in Triton 3.6."""
    c = (k * BLOCK_C + tl.arange(0, BLOCK_C))[:, None]
    g = tl.load(G + c, mask=c < C, other=0.0, eviction_policy="evict_last")
    if HAS_BIAS:
        return g, tl.load(BIAS + c, mask=c < C, other=0.0, eviction_policy="evict_last")
    else:
        return g, g


@triton.jit
def _chunk_store_ops(x, g, bias, y_base, y_p, pmask, inv, Y, C, osc, k, BLOCK_C: tl.constexpr,
                     HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr, FOLD: tl.constexpr):
    """:func:`_chunk_store` with the chunk's gamma and bias loaded by the caller (``_chunk_ops``).
    ``FOLD`` (SiLU with its fast forms only): the exponent from its own FMA (see the body)."""
    c = k * BLOCK_C + tl.arange(0, BLOCK_C)
    if FOLD:
        # SiLU's exponent -log2(e) * y as its own FMA over per-channel constants (one multiply per
        # value fewer, and the exponent does not wait for y)
        a = triton_math.widen_held(x) * inv[None, :]
        gf = g.to(tl.float32)
        if HAS_BIAS:
            bf = bias.to(tl.float32)
            y = tl.fma(a, gf, bf)
            t = tl.fma(a, gf * -1.4426950408889634, bf * -1.4426950408889634)
        else:
            y = a * gf
            t = a * (gf * -1.4426950408889634)
        y = y * triton_math.fast_rcp(1.0 + triton_math.fast_exp2(t, FAST), FAST)
    else:
        y = _affine_silu(triton_math.widen_held(x), inv[None, :], g.to(tl.float32), bias.to(tl.float32), HAS_BIAS,
                         SILU, FAST)
    tl.store(y_base + c.to(tl.int64)[:, None] * osc + y_p, triton_math.narrow(y, Y.dtype.element_ty),
             mask=(c < C)[:, None] & pmask[None, :])


@triton.jit
def _stream_load(X, t, t_end, n_pblk, C, P, sb, sc, sp, c, BLOCK_P: tl.constexpr):
    """Tile ``t`` (sample ``t // n_pblk``, positions block ``t % n_pblk``), rows ``c``: raw values;
    nothing is read when ``t >= t_end``."""
    b = t // n_pblk
    p = (t - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    mask = (c < C)[:, None] & (p < tl.where(t < t_end, P, 0))[None, :]
    ptr = X + b * sb + c.to(tl.int64)[:, None] * sc + (p * sp)[None, :]
    return tl.load(ptr, mask=mask, other=0.0, eviction_policy="evict_first")


@triton.jit
def _stream_store(Y, y, t, t_end, n_pblk, C, P, osb, osc, osp, c, BLOCK_P: tl.constexpr):
    b = t // n_pblk
    p = (t - b * n_pblk) * BLOCK_P + tl.arange(0, BLOCK_P).to(tl.int64)
    mask = (c < C)[:, None] & (p < tl.where(t < t_end, P, 0))[None, :]
    ptr = Y + b * osb + c.to(tl.int64)[:, None] * osc + (p * osp)[None, :]
    tl.store(ptr, triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


@triton.jit(do_not_specialize=["n_pblk", "n_tiles", "iters", "eps"])
def _channel_rms_stream_kernel(
    X, G, BIAS, Y,
    C, P, n_pblk, n_tiles, iters, sb, sc, sp, osb, osc, osp, scale, eps,
    BLOCK_C: tl.constexpr, BLOCK_C2: tl.constexpr, BLOCK_P: tl.constexpr, AHEAD: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr = 0,
):
    """Tiles ``pid * iters ..`` (flattened over samples and position blocks). All channels of a
    tile are held as two register tiles, rows ``[0, BLOCK_C)`` and ``[BLOCK_C, BLOCK_C + BLOCK_C2)``
    (C = 96 -> 64 + 32: no masked lanes), so the statistics and the output come from one read.
    The loads of the tile ``AHEAD`` (1 or 2) ahead are issued before the current tile is reduced,
    normalized and stored: ``AHEAD`` tiles of loads stay in flight per program (raw values cost half
    a register per bf16 element) instead of a load / reduce / store sequence."""
    t = tl.program_id(0).to(tl.int64) * iters
    t_end = tl.minimum(t + iters, n_tiles)
    ca = tl.arange(0, BLOCK_C)
    cb = BLOCK_C + tl.arange(0, BLOCK_C2)
    ga = tl.load(G + ca, mask=ca < C, other=0.0).to(tl.float32)
    gb = tl.load(G + cb, mask=cb < C, other=0.0).to(tl.float32)
    if HAS_BIAS:
        ba = tl.load(BIAS + ca, mask=ca < C, other=0.0).to(tl.float32)
        bb = tl.load(BIAS + cb, mask=cb < C, other=0.0).to(tl.float32)
    else:
        ba = ga
        bb = gb
    xa = _stream_load(X, t, t_end, n_pblk, C, P, sb, sc, sp, ca, BLOCK_P)
    xb = _stream_load(X, t, t_end, n_pblk, C, P, sb, sc, sp, cb, BLOCK_P)
    if AHEAD == 2:
        na = _stream_load(X, t + 1, t_end, n_pblk, C, P, sb, sc, sp, ca, BLOCK_P)
        nb = _stream_load(X, t + 1, t_end, n_pblk, C, P, sb, sc, sp, cb, BLOCK_P)
    for _ in tl.range(0, iters):
        # issue the loads of tile t + AHEAD, then reduce, normalize and store tile t
        ma = _stream_load(X, t + AHEAD, t_end, n_pblk, C, P, sb, sc, sp, ca, BLOCK_P)
        mb = _stream_load(X, t + AHEAD, t_end, n_pblk, C, P, sb, sc, sp, cb, BLOCK_P)
        fa = xa.to(tl.float32)
        fb = xb.to(tl.float32)
        ss = tl.sum(fa * fa, axis=0) + tl.sum(fb * fb, axis=0)
        inv = scale / tl.maximum(tl.sqrt(ss), eps)
        ya = _affine_silu(fa, inv[None, :], ga[:, None], ba[:, None], HAS_BIAS, SILU, FAST)
        _stream_store(Y, ya, t, t_end, n_pblk, C, P, osb, osc, osp, ca, BLOCK_P)
        yb = _affine_silu(fb, inv[None, :], gb[:, None], bb[:, None], HAS_BIAS, SILU, FAST)
        _stream_store(Y, yb, t, t_end, n_pblk, C, P, osb, osc, osp, cb, BLOCK_P)
        if AHEAD == 2:
            xa = na
            xb = nb
            na = ma
            nb = mb
        else:
            xa = ma
            xb = mb
        t += 1


# rows kernel: bytes of x per program (positions x padded channels), 16-byte accesses per thread
_ROWS_TILE_BYTES = 4096
_ROWS_ACCESSES = 4
_ROWS_MAX_C = 4096  # wider rows take the v1 rule (chunks of a position's channels)


@functools.cache
def _rows_config(C: int, elem_bytes: int, channels_last: bool, platform: str) -> ChannelConfig:
    """The rows kernel (channels_last x whose positions are dense rows of C values): ``rows``
    positions per program, 4 KB of x (with the padded channels), four 16-byte accesses per thread.
    Contiguous x (channels strided by P) has no such rows and keeps the v1 rule, as do rows of more
    than 4096 channels.

    Measured on one H200 (bf16, channels_last_3d, docs/benchmarks/vae_norm_sweep_rows*_h200.json):
    at C = 96, 16 positions x 2 warps 86.9-87.1% of copy, 32 x 4 84.8-85.0%, 8 x 1 83.6%, other
    tiles 40-84%; the stream rule 75.5%, v1 74.4%. The stream / v1 kernels reduce along the
    tile's first axis and move the whole tile through shared memory (sm_90 SASS: STSM / LDS.128
    and a barrier); the rows tile reduces along its contiguous axis, as ``qk_norm`` does (97% of
    copy at head size 128)."""
    block_c = next_pow2(max(C, 1))
    if not channels_last or block_c > _ROWS_MAX_C:  # one register tile per position: bounded
        return _channel_config_v1(C, elem_bytes, channels_last, platform)
    warp = 64 if platform == "hip" else 32
    rows = max(1, min(256, _ROWS_TILE_BYTES // (block_c * elem_bytes)))
    warps = warps_for(rows * block_c * elem_bytes, 16 * _ROWS_ACCESSES, warp)
    # SiLU's fast forms for 16-bit outputs (fast=None): 93.0 / 92.8 / 92.6% of copy at C = 96 / 192 /
    # 384 against 86.9 / 85.9 / 84.5% with the precise division (vae_norm_sweep_rows_v2_h200.json)
    return ChannelConfig(block_c=block_c, block_p=rows, chunks=1, num_warps=warps, rows=rows, fast=None)


@triton.jit(do_not_specialize=["n_rows", "eps"])
def _channel_rms_rows_kernel(
    X, G, BIAS, Y,
    n_rows, P, sb, osb, scale, eps,
    C: tl.constexpr, BLOCK_C: tl.constexpr, ROWS: tl.constexpr, DENSE: tl.constexpr,
    HAS_BIAS: tl.constexpr, SILU: tl.constexpr, FAST: tl.constexpr,
):
    """channels_last x whose positions are rows of C contiguous values (``sc == 1``, ``sp == C``):
    a ``[ROWS, BLOCK_C]`` tile of ``ROWS`` consecutive positions (flattened over samples), reduced
    along its contiguous axis in registers, like ``qk_norm``'s heads: no layout change of the tile
    between the reduction and the store. ``DENSE``: the samples follow each other too (``B == 1``
    or ``sb == P * C``), so position ``r`` of the flattened index sits at ``r * C`` in x and y
    (no 64-bit division per row)."""
    r = tl.program_id(0).to(tl.int64) * ROWS + tl.arange(0, ROWS).to(tl.int64)
    if DENSE:
        x_row = r * C
        y_row = r * C
    else:
        b = r // P
        p = r - b * P
        x_row = b * sb + p * C
        y_row = b * osb + p * C
    c = tl.arange(0, BLOCK_C)
    cmask = c < C
    mask = (r < n_rows)[:, None] & cmask[None, :]
    x = tl.load(X + x_row[:, None] + c[None, :], mask=mask, other=0.0).to(tl.float32)
    inv = scale / tl.maximum(tl.sqrt(tl.sum(x * x, axis=1)), eps)
    g = tl.load(G + c, mask=cmask, other=0.0).to(tl.float32)
    y = x * inv[:, None] * g[None, :]
    if HAS_BIAS:
        y = y + tl.load(BIAS + c, mask=cmask, other=0.0).to(tl.float32)[None, :]
    if SILU:
        y = triton_math.silu(y, FAST)
    tl.store(Y + y_row[:, None] + c[None, :], triton_math.narrow(y, Y.dtype.element_ty), mask=mask)


def config_for(geom, dtype: torch.dtype, device: torch.device) -> ChannelConfig:
    plat = tensor_platform(device)
    arch = device_arch(plat, device.index) if plat in ("cuda", "hip") else None
    cfg = ChannelConfig.from_heuristic(geom.C, dtype.itemsize, geom.channels_last, plat, arch,
                                       dtype=str(dtype).removeprefix("torch."))
    if cfg.rows and not geom.dense_rows:  # channels_last views whose positions are not dense rows
        cfg = ChannelConfig.from_heuristic(geom.C, dtype.itemsize, geom.channels_last, plat, arch, rule="stream")
    return cfg


def prepare(geom, x, gamma, bias, silu=False, config: ChannelConfig | None = None):
    """A runner ``(x, gamma, bias, eps, silu) -> out`` for one call signature (``silu`` is fixed
    by the plan: the API keeps one plan cache per value)."""
    from sgl_diffusion_core import PreparedLaunch

    cfg = config or config_for(geom, x.dtype, x.device)
    if cfg.ctas > 1 and tensor_platform(x.device) == "cuda":
        arch = device_arch("cuda", x.device.index)
        if not isinstance(arch, int) or arch < _CLUSTER_MIN_ARCH:
            raise ValueError(f"ctas={cfg.ctas} (thread-block clusters) needs a CUDA device of compute capability "
                             f"9.0 or newer, not {arch}")
    n_pblk = -(-geom.P // cfg.block_p)
    launch_silu = bool(silu)
    launches = {}
    if cfg.rows and not geom.dense_rows:
        raise ValueError("the rows kernel needs channels_last x whose positions are dense rows of C values")
    if cfg.rows:
        n_rows = geom.B * geom.P
        grid = (-(-n_rows // cfg.rows),)
        kernel = _channel_rms_rows_kernel
        dense = geom.B == 1 or (geom.sb == geom.P * geom.C and geom.out_sb == geom.P * geom.C)
        consts = {"C": geom.C, "BLOCK_C": next_pow2(geom.C), "ROWS": cfg.rows, "DENSE": dense}
        scalars = (n_rows, geom.P, geom.sb, geom.out_sb, float(geom.C) ** 0.5)
    elif cfg.stream:
        n_tiles = geom.B * n_pblk
        iters = max(1, -(-n_tiles // max(1, cfg.programs)))
        grid = (-(-n_tiles // iters),)
        kernel = _channel_rms_stream_kernel
        consts = {"BLOCK_C": cfg.block_c, "BLOCK_C2": cfg.block_c2, "BLOCK_P": cfg.block_p, "AHEAD": cfg.ahead}
        scalars = (geom.C, geom.P, n_pblk, n_tiles, iters, geom.sb, geom.sc, geom.sp, geom.out_sb, geom.out_sc,
                   geom.out_sp, float(geom.C) ** 0.5)
    else:
        grid = (geom.B * n_pblk,)
        kernel = _channel_rms_kernel
        consts = cfg.v1_constexprs()
        scalars = (geom.C, geom.P, n_pblk, geom.sb, geom.sc, geom.sp, geom.out_sb, geom.out_sc, geom.out_sp,
                   float(geom.C) ** 0.5)

    def launch_for(s: bool):
        lf = launches.get(s)
        if lf is None:
            lf = launches[s] = PreparedLaunch(
                kernel,
                grid,
                {**consts, "HAS_BIAS": bias is not None, "SILU": s,
                 "FAST": triton_math.fast_level(x.dtype, tensor_platform(x.device), cfg.fast)},
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


# what a Wan-VAE launch sees as multiples of 16: aligned tensors, P = T * H * W, C * P, C = 96 ...
_DIVISIBLE = ("X", "G", "BIAS", "Y", "C", "P", "sb", "sc", "sp", "osb", "osc", "osp")


def aot_variants(platform: str = "cuda"):
    """Wan-VAE channel counts (96, 192, 384, 768; 1024 for HunyuanVideo) in both memory formats,
    bf16/fp16/fp32, with SiLU and bias (the resblock form) and without: the kernel of every launch
    rule that applies (stream, v1, and on contiguous x slab / hold / wide; the rows kernel below)."""
    from sgl_diffusion_core import AotVariant

    out = []
    for dt, esize in (("bf16", 2), ("fp16", 2), ("fp32", 4)):
        for C in (96, 192, 384, 768, 1024):
            for cl in (False, True):
                cfgs = [_channel_config(C, esize, cl, platform)]
                mid = _mid_config(C, esize, cl, platform)
                # the cluster rule (CUDA sm_90+, bf16, held slabs), whatever Triton compiles the lane
                cluster = (dataclasses.replace(mid, block_p=mid.block_p * _CLUSTER_CTAS, ctas=_CLUSTER_CTAS,
                                               ops_ahead=True, fold_silu=True)
                           if platform == "cuda" and mid.hold and dt == "bf16" else None)
                for extra in (_channel_config_v1(C, esize, cl, platform), _slab_config(C, esize, cl, platform),
                              mid, _wide_config(C, esize, cl, platform), cluster):
                    if extra is not None and extra not in cfgs:
                        cfgs.append(extra)
                for cfg in cfgs:
                    full = C != 768
                    idx = "i64" if C == 1024 else "i32"
                    sig = {n: f"*{dt}" for n in ("X", "G", "BIAS", "Y")}
                    ints = ("C", "P", "n_pblk", "n_tiles", "iters") if cfg.stream else ("C", "P", "n_pblk")
                    sig.update({n: idx for n in (*ints, "sb", "sc", "sp", "osb", "osc", "osp")})
                    sig.update({"scale": "fp32", "eps": "fp32"})
                    if cfg.stream:
                        const = {"BLOCK_C": cfg.block_c, "BLOCK_C2": cfg.block_c2, "BLOCK_P": cfg.block_p,
                                 "AHEAD": cfg.ahead}
                        tile = f"stream {cfg.block_c}+{cfg.block_c2}x{cfg.block_p} ahead {cfg.ahead}"
                    else:
                        const = cfg.v1_constexprs()
                        tile = f"v1 {cfg.block_c}x{cfg.block_p}x{cfg.chunks}"
                        tile += " prefetch" if const["PREFETCH"] else " hold" if cfg.hold else ""
                        tile += " ops-ahead" if cfg.ops_ahead else ""
                        tile += " fold" if cfg.fold_silu else ""
                        tile += f" ctas {cfg.ctas}" if cfg.ctas > 1 else ""
                    tdt = {"bf16": torch.bfloat16, "fp16": torch.float16, "fp32": torch.float32}[dt]
                    fast = triton_math.fast_level(tdt, platform, cfg.fast)
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
                    out.append(AotVariant(name=name, kernel=_channel_rms_stream_kernel if cfg.stream else
                                          _channel_rms_kernel, signature=sig, constexprs=const,
                                          num_warps=cfg.num_warps, num_stages=1,
                                          options={"enable_fp_fusion": True,
                                                   **({"num_ctas": cfg.ctas} if cfg.ctas > 1 else {})},
                                          divisible_by_16=_DIVISIBLE, min_cuda_arch=90 if cfg.ctas > 1 else 0))
            # the rows kernel (channels_last only), with SiLU's precise and fast forms
            cfg = _rows_config(C, esize, True, platform)
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
