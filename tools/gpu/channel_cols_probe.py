"""A channel_rms_norm kernel for contiguous x whose warps never wait for each other (GPU, < 120 s).

The hold rule's program reduces its ``[C, 64]`` slab over the channels across its 8 warps (shared
memory and a barrier), so a program computes only once its last warp's loads have landed. Here a
program of ``GROUPS`` warps covers ``GROUPS x 8`` positions, and each warp owns 8 of them (one
16-byte run per channel row) and all C = 3 x 4 x 32 channels: lane ``l`` holds channels ``q * 32 +
l`` of every 128-channel chunk, so the reduction over the channels is inside the thread and across
the warp's lanes (shuffles): no shared memory, no barrier, and each warp goes on as soon as its own
loads land. The tile is ``[32 lanes, GROUPS, 4, 8]`` so that Triton 3.6 lays the lanes along the
channels and the warps along the position groups (sm_90: 128 registers, no barrier, at 8 warps /
8 groups and 16 / 16; 4 / 4 gets another layout). A CTA's warps read the 16-byte runs of one
``GROUPS x 16``-byte run per channel row together.

Configurations (GROUPS = warps): 8 (64 positions, two CTAs per SM), 16 (128 positions, 256-byte runs,
one CTA per SM); against the package's rule in the same run. Checked against the fp32 reference
chain (the triton spec's tolerance). bf16, C = 384 (``channel_rms_norm_bench`` cases c384 and
c384-240), SiLU and bias.

Result (run 11, ``docs/benchmarks/channel_cols_probe_s14_rejected_h200.json``): 27.9 / 27.0%
of copy (8 / 16 warps) at C = 384 and 25.1-26.7% at 21 x 240 x 416, against the rule's 84.8-85.6% in
the same run: each warp instruction touches 32 channel rows with 16 bytes each, and the kernel never
approached the bandwidth of the rule. Rejected; nothing of it went into the package.

Usage: ``python3 tools/gpu/channel_cols_probe.py OUT.json`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import torch
import triton
import triton.language as tl

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vae_norm_sweep as vs  # noqa: E402  (the sweep's checker)

from sgl_diffusion_core import resolve_target, triton_math  # noqa: E402

_Q = 4  # 32-channel quarters per 128-channel chunk


@triton.jit
def _channels(k, Q: tl.constexpr):
    """Channel of each ``[32, 1, Q, 1]`` slot of chunk ``k``: ``k * 32 * Q + q * 32 + lane``."""
    return k * (Q * 32) + tl.arange(0, Q)[None, None, :, None] * 32 + tl.arange(0, 32)[:, None, None, None]


@triton.jit
def _cols_load(X, base, p, pmask, C, sc, k, Q: tl.constexpr):
    c = _channels(k, Q)
    return tl.load(X + base + c.to(tl.int64) * sc + p, mask=(c < C) & pmask, other=0.0,
                   eviction_policy="evict_first")


@triton.jit
def _cols_ops(G, BIAS, C, k, Q: tl.constexpr):
    c = _channels(k, Q)
    return (tl.load(G + c, mask=c < C, other=0.0, eviction_policy="evict_last").to(tl.float32),
            tl.load(BIAS + c, mask=c < C, other=0.0, eviction_policy="evict_last").to(tl.float32))


@triton.jit
def _cols_store(Y, base, p, pmask, C, sc, k, x, inv, g, b, Q: tl.constexpr, FAST: tl.constexpr):
    c = _channels(k, Q)
    y = triton_math.silu(triton_math.widen_bits(x) * inv * g + b, FAST)
    tl.store(Y + base + c.to(tl.int64) * sc + p, triton_math.narrow(y, Y.dtype.element_ty), mask=(c < C) & pmask)


@triton.jit(do_not_specialize=["n_pblk", "eps"])
def _cols_kernel(X, G, BIAS, Y, C, P, n_pblk, sb, sc, scale, eps,
                 GROUPS: tl.constexpr, VEC: tl.constexpr, Q: tl.constexpr, FAST: tl.constexpr):
    pid = tl.program_id(0).to(tl.int64)
    b = pid // n_pblk
    p = (pid - b * n_pblk) * (GROUPS * VEC) + (tl.arange(0, GROUPS)[None, :, None, None] * VEC
                                               + tl.arange(0, VEC)[None, None, None, :]).to(tl.int64)
    pmask = p < P
    base = b * sb
    x0 = _cols_load(X, base, p, pmask, C, sc, 0, Q)
    x1 = _cols_load(X, base, p, pmask, C, sc, 1, Q)
    x2 = _cols_load(X, base, p, pmask, C, sc, 2, Q)
    f0 = x0.to(tl.float32)
    f1 = x1.to(tl.float32)
    f2 = x2.to(tl.float32)
    acc = f0 * f0 + f1 * f1 + f2 * f2
    inv = scale / tl.maximum(tl.sqrt(tl.sum(tl.sum(acc, axis=2, keep_dims=True), axis=0, keep_dims=True)), eps)
    g0, b0 = _cols_ops(G, BIAS, C, 0, Q)
    g1, b1 = _cols_ops(G, BIAS, C, 1, Q)
    _cols_store(Y, base, p, pmask, C, sc, 0, x0, inv, g0, b0, Q, FAST)
    g2, b2 = _cols_ops(G, BIAS, C, 2, Q)
    _cols_store(Y, base, p, pmask, C, sc, 1, x1, inv, g1, b1, Q, FAST)
    _cols_store(Y, base, p, pmask, C, sc, 2, x2, inv, g2, b2, Q, FAST)


@dataclasses.dataclass(frozen=True)
class Cols:
    groups: int
    num_warps: int


def cols_launch(x, gamma, bias, cfg: Cols, fast: int):
    B, C = x.shape[0], x.shape[1]
    P = x.numel() // (B * C)
    if C > 3 * _Q * 32 or not x.is_contiguous():
        raise ValueError("the probe kernel takes contiguous x with at most 384 channels")
    y = torch.empty_like(x)
    n_pblk = -(-P // (cfg.groups * 8))
    _cols_kernel[(B * n_pblk,)](x, gamma, bias, y, C, P, n_pblk, C * P, P, float(C) ** 0.5, 1e-12,
                                GROUPS=cfg.groups, VEC=8, Q=_Q, FAST=fast, num_warps=cfg.num_warps, num_stages=1)
    return y


def main(path: str) -> int:
    cfg_cls = resolve_target("sgl_diffusion_norm.channel_rms_norm_triton:ChannelConfig")
    fast = triton_math.fast_level(torch.bfloat16, "cuda")

    def configs(C):
        rule = cfg_cls.from_heuristic(C, 2, False, "cuda", 90, dtype="bfloat16")
        return [rule, Cols(8, 8), Cols(16, 16), rule, Cols(8, 8), Cols(16, 16)]

    def launch_cols(cfg, x, gamma, bias):
        return cols_launch(x, gamma.reshape(-1).contiguous(), bias.reshape(-1).contiguous(), cfg, fast)

    return vs.channel_case_sweep(path, ("c384", "c384-240"), configs, torch.device("cuda"), launch_other=launch_cols)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "channel_cols_probe.json"))
