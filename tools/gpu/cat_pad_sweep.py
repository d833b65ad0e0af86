"""Sweep the launch rule of ``causal_conv3d_cat_pad``'s contiguous flat kernel (GPU).

The kernel (``conv_pad_triton._cat_pad_flat_kernel``, session 5) measured 76.4 / 76.8% of copy
bandwidth at its first rule (16 KB per program, 128 B per thread) on the Wan-VAE cases; this
varies both (``_FLAT_RULE``, module data) and checks every configuration ``torch.equal`` to the
eager chain. Usage: ``python3 tools/gpu/cat_pad_sweep.py OUT.json``.
"""

from __future__ import annotations

import json
import sys

import torch

from sgl_diffusion_core import bench, describe, resolve_target

_MOD = "sgl_diffusion_layout.conv_pad_triton"
RULE = resolve_target(f"{_MOD}:_FLAT_RULE")
prep = resolve_target(f"{_MOD}:_prep")
reference = resolve_target("sgl_diffusion_layout.conv_pad_api:causal_conv3d_cat_pad_reference")
VAE = resolve_target("sgl_diffusion_layout.layout_bench:VAE")


def main(path: str) -> None:
    device = torch.device("cuda")
    default = dict(RULE)
    configs = [{}] + [
        {"tile_bytes": t, "thread_bytes": b}
        for t in (4096, 8192, 16384, 32768)
        for b in (32, 64, 128)
        if (t, b) != (default["tile_bytes"], default["thread_bytes"]) and t // b <= 32 * 32
    ]
    rows = []
    for name, (B, C, T, H, W) in VAE.items():
        g = torch.Generator(device=device).manual_seed(0)
        x = torch.randn((B, C, T, H, W), device=device, dtype=torch.bfloat16, generator=g)
        cache = torch.randn((B, C, 2, H, W), device=device, dtype=torch.bfloat16, generator=g)
        pad = (1, 1, 1, 1, 0, 0)
        ref = reference(x, cache, pad)
        geom = describe("layout.causal_conv3d_cat_pad", x, cache, pad).info["geom"]
        nbytes = bench.tensor_bytes(x, cache, ref)

        def run_for(cfg, x=x, cache=cache, geom=geom, pad=pad):
            RULE.clear()
            RULE.update({**default, **cfg})
            run = prep(geom, x, cache)
            return lambda: run(x, cache, pad)

        def check(out, ref=ref):
            return None if torch.equal(out, ref) else "NOT torch.equal to the eager chain"

        rows += bench.sweep(f"cat_pad {name}-contiguous", configs, run_for, nbytes, device, check=check)
        RULE.clear()
        RULE.update(default)
        del x, cache, ref
        torch.cuda.empty_cache()
        with open(path, "w") as f:
            json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)
    print("\n".join(bench.sweep_summary(rows)))


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "cat_pad_sweep.json")
