"""channel_rms_norm on contiguous x with each program a cluster of CTAs (``ChannelConfig.ctas``,
Triton's ``num_ctas``) at the Wan-VAE bench shapes C = 384 / 192 / 96 (GPU, < 150 s).

Session 14 run 2 (``channel_pattern_probe.py``) copied x over the kernel's slabs with no
arithmetic: runs of 64 positions (128 bytes) per channel row reached 79-82% of copy at every C,
held or chunk by chunk, runs of 128-256 positions 90-92%. The hold rule at C = 384 (82.3%) is at
that ceiling; a longer run per program needs a slab of 96 KB, twice what two programs per SM hold
in registers. A cluster of two CTAs launched together splits a 128-position slab along the
positions (Triton 3.6's layout: each CTA holds the 64-position tile of today's kernel, its
reduction over the channels stays inside the CTA), so the 256-byte runs reach DRAM together.
Every row's output is checked against the fp32 reference chain (the triton spec's tolerance) as in
``vae_norm_sweep.py``; each case's default is timed first and last.

Usage: ``python3 tools/gpu/channel_cluster_sweep.py OUT.json [SET]`` (PYTHONPATH holding
packages/*/src). SET: ``clusters`` (run 3, the default), ``ops`` (run 5's gamma / bias ahead at
C = 384), ``ops-fp16`` (the same in fp16), ``small`` (run 9's 4-warp
CTAs), ``fold`` (run 13's SiLU exponent FMA). Run 8's ``hints`` set (store hints) ran with a
``ChannelConfig.store_hint`` option; both were removed with the option (session 14's commits did not
land, so that code is not in the history).
"""

from __future__ import annotations

import dataclasses
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import vae_norm_sweep as vs  # noqa: E402  (the sweep's checker, budget and helpers)

from sgl_diffusion_core import resolve_target  # noqa: E402

_CH = "sgl_diffusion_norm.channel_rms_norm_triton"


def ops_configs(C: int, cfg_cls) -> list:
    """Run 5: C = 384's held slab with gamma / bias loaded a chunk ahead (``ops_ahead``), one CTA and
    a two-CTA cluster, each pair interleaved twice (the run's noise)."""
    old = cfg_cls.from_heuristic(C, 2, False, "cuda")  # arch unknown: one CTA
    rep = dataclasses.replace
    pair = [old, rep(old, ops_ahead=True), rep(old, block_p=old.block_p * 2, ctas=2),
            rep(old, block_p=old.block_p * 2, ctas=2, ops_ahead=True)]
    return [*pair, *pair]


def small_cta_configs(C: int, cfg_cls) -> list:
    """Run 9: 4-warp CTAs (142 registers: three per SM) in clusters of 4 / 8 over 128 / 256 positions
    (each CTA 32 positions, 64 bytes per channel row), against the rule (8 warps, two CTAs of 64
    positions); interleaved twice. (Triton 3.6 compiles 4-warp clusters since the held slab loads
    gamma / bias as ``[BLOCK_C, 1]`` tiles: a 1-D load converted across the cluster's CTAs failed.)"""
    rule = cfg_cls.from_heuristic(C, 2, False, "cuda", 90, dtype="bfloat16")
    rep = dataclasses.replace
    four = [rule, rep(rule, num_warps=4, ctas=4), rep(rule, num_warps=4, ctas=8, block_p=rule.block_p * 2),
            rep(rule, num_warps=4, ctas=2, block_p=rule.block_p // 2)]
    return [*four, *four]


def fold_configs(C: int, cfg_cls) -> list:
    """Run 13: the cluster rule (bf16, C = 384) with SiLU's exponent as its own FMA (``fold_silu``),
    interleaved three times."""
    rule = cfg_cls.from_heuristic(C, 2, False, "cuda", 90, dtype="bfloat16")
    pair = [rule, dataclasses.replace(rule, fold_silu=True)]
    return [*pair, *pair, *pair]


def configs_for(C: int, cfg_cls) -> list:
    default = cfg_cls.from_heuristic(C, 2, False, "cuda")
    rep = dataclasses.replace

    def v1(bc, bp, w, ctas, **kw):
        return cfg_cls(block_c=bc, block_p=bp, chunks=-(-C // bc), num_warps=w, fast=None, ctas=ctas, **kw)

    if C == 384:
        extra = [v1(128, 128, 8, 2, hold=True), v1(128, 256, 8, 4, hold=True), v1(128, 512, 8, 8, hold=True),
                 v1(128, 128, 16, 2, hold=True), v1(128, 64, 8, 2, hold=True),
                 v1(128, 128, 8, 2, prefetch=True), v1(64, 128, 8, 2, prefetch=True)]
    elif C == 192:
        extra = [rep(default, block_p=128, ctas=2), rep(default, block_p=256, ctas=4), v1(64, 128, 4, 2, hold=True),
                 v1(64, 128, 8, 2, hold=True), v1(64, 256, 8, 4, hold=True), v1(64, 256, 8, 2, hold=True)]
    else:
        extra = [rep(default, block_p=256, ctas=2), rep(default, block_p=512, ctas=4), rep(default, ctas=2),
                 rep(default, block_p=256, ctas=2, num_warps=8)]
    return [default, *extra, default]


SETS = {  # name: (cases, configurations per C, dtype)
    "clusters": (("c384", "c192", "c96"), configs_for, torch.bfloat16),
    "ops": (("c384",), ops_configs, torch.bfloat16),
    "ops-fp16": (("c384",), ops_configs, torch.float16),
    "small": (("c384", "c384-240"), small_cta_configs, torch.bfloat16),
    "fold": (("c384", "c384-240"), fold_configs, torch.bfloat16),
}


def main(path: str, which: str = "clusters") -> int:
    if which not in SETS:
        raise SystemExit(f"unknown set {which!r}; known: {', '.join(SETS)}")
    names, configs, dtype = SETS[which]
    cfg_cls = resolve_target(f"{_CH}:ChannelConfig")
    return vs.channel_case_sweep(path, names, lambda C: configs(C, cfg_cls), torch.device("cuda"), dtype)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else "channel_cluster_sweep.json",
                  sys.argv[2] if len(sys.argv) > 2 else "clusters"))
