"""Sweep the launch of ``channel_rms_norm``'s Triton kernel at the Wan-VAE bench shapes (GPU).

For each case of ``channel_rms_norm_bench`` (contiguous and channels_last_3d, C = 96 and 384):
one-pass tiles ``[next_pow2(C), BLOCK_P]`` over BLOCK_P and warps, the two-pass slab of the
first heuristic, and the current default; time (CUDA events, L2 flushed) and % of a same-run
copy of the same bytes (read x once, write y once). Each configuration's output is compared
with the default's and a difference flagged (the channel sum's order follows the tile, so a
few last-bit differences are expected; the tests hold every path to the contract).

Usage: ``python3 tools/gpu/channel_rms_norm_sweep.py OUT.json`` (PYTHONPATH holding packages/*/src).
"""

from __future__ import annotations

import json
import sys

import torch

from sgl_diffusion_core import bench, describe, next_pow2, resolve_target

# the backend's own launch rule and entry point, loaded like the registry loads targets
_KERNEL = "sgl_diffusion_norm.channel_rms_norm_triton"
ChannelConfig = resolve_target(f"{_KERNEL}:ChannelConfig")
_channel_config = resolve_target(f"{_KERNEL}:_channel_config")
channel_rms_norm = resolve_target(f"{_KERNEL}:channel_rms_norm")
SHAPES = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:SHAPES")
make_inputs = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:make_inputs")


def _configs(C: int, channels_last: bool) -> list:
    full = next_pow2(C)
    out = [_channel_config(C, 2, channels_last, "cuda")]
    for block_p in (4, 8, 16, 32, 64, 128):
        if not 2048 <= full * block_p <= 16384:
            continue
        for warps in (4, 8, 16):
            out.append(ChannelConfig(block_c=full, block_p=block_p, chunks=1, num_warps=warps))
    if not channels_last:  # the first heuristic's two-pass slab (32 channels x 128 positions)
        out.append(ChannelConfig(block_c=32, block_p=128, chunks=-(-C // 32), num_warps=8))
    return list(dict.fromkeys(out))


def _sweep_case(name: str, device: torch.device) -> list[dict]:
    shape, cl = SHAPES[name]
    x, gamma, bias = make_inputs(shape, cl, torch.bfloat16, device)
    geom = describe("norm.channel_rms_norm", x, gamma, bias).info["geom"]
    ref = channel_rms_norm(x, gamma, bias, silu=True, geom=geom)

    def run_for(cfg):
        return lambda: channel_rms_norm(x, gamma, bias, silu=True, geom=geom, config=cfg)

    def check(out):
        return None if torch.equal(out, ref) else "output differs from the default's in the last bits"

    return bench.sweep(name, _configs(shape[1], cl), run_for, 2 * bench.tensor_bytes(x), device, check=check)


def main(path: str) -> None:
    device = torch.device("cuda")
    rows = []
    for name in ("c96", "c96-cl", "c384", "c384-cl"):
        rows += _sweep_case(name, device)
    with open(path, "w") as f:
        json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)
    print("\n".join(bench.sweep_summary(rows)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "channel_rms_norm_sweep.json")
