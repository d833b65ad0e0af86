"""Sweep ``causal_conv3d_cat_pad``'s contiguous kernels at the Wan-VAE bench shapes (GPU).

Session 5's flat kernel (``conv_pad_triton._cat_pad_flat_kernel``: aligned 16-byte vectors
rearranged with ``tl.gather``) measured 76-80% of copy bandwidth at its rule (``_FLAT_RULE``);
session 6's word kernel (``_cat_pad_words_kernel``: 32-bit words, a funnel shift for an odd
left pad) serves 16-bit x with even rows. This times the word kernel at its rule and at other
tiles (``_WORDS_RULE``: words per program, words per thread) against the flat kernel at its
rule, bf16, and checks every configuration ``torch.equal`` to the eager chain.
Usage: ``python3 tools/gpu/cat_pad_sweep.py OUT.json``.
"""

from __future__ import annotations

import json
import sys

import torch

from sgl_diffusion_core import bench, describe, resolve_target

_MOD = "sgl_diffusion_layout.conv_pad_triton"
RULE = resolve_target(f"{_MOD}:_WORDS_RULE")
prep = resolve_target(f"{_MOD}:_prep")
reference = resolve_target("sgl_diffusion_layout.conv_pad_api:causal_conv3d_cat_pad_reference")
VAE = resolve_target("sgl_diffusion_layout.layout_bench:VAE")


def main(path: str) -> None:
    device = torch.device("cuda")
    default = dict(RULE)
    # session 12 run 2: ``span`` (a program's rows run across frame boundaries: at C = 384 a frame's
    # 122 output rows took 16 programs of 8 rows, the last of them 2 rows) against the frame tiles;
    # adopted with 8 rows on one warp (cat_pad_sweep_s12_span_h200.json)
    tiles = [(8, 64), (4, 64), (4, 16), (8, 16), (16, 64)]  # rows, words per thread
    configs = [{}, {"kernel": "flat"}] + [
        {"rows": r, "thread_words": w, "span": s}
        for s in (True, False) for r, w in tiles
        if (r, w, s) != (default["rows"], default["thread_words"], default["span"])
    ]
    # session 10 swept tiles of 512-4096 words x 8-64 words per thread (cat_pad_sweep_s10_h200.json);
    # its run 9: the word kernel writing runs of tile_words words of one output frame (row and column
    # by division; no lanes idle past a row) measured 82.6-87.5% at C = 384 and 71.5-89.6% at C = 96
    # against the row tiles' 87.4 / 87.2% in the same run (cat_pad_sweep_s10_runs_rejected_h200.json):
    # reverted
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
            cfg = dict(cfg)
            words = cfg.pop("kernel", "words") == "words"
            RULE.clear()
            RULE.update({**default, **cfg})
            run = prep(geom, x, cache, words=words)
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
