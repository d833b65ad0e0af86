"""GPU experiment: TileConfig (block x warps) of the indexed modulate kernels at Wan 720p (D = 5120).

Session 16 measured ``indexed_scale_shift`` at 91.3-91.4% of copy at Wan (target 92%; its
kernel is ``scale_shift``'s with ``INDEXED``) while ``torch.compile`` of the chain reached 98%.
This times ``indexed_scale_shift`` / ``indexed_gated_residual`` (bf16, K = 2, the first half
of the tokens row 0) and the plain ``scale_shift`` / ``gated_residual`` (per-sample
modulation) for every (block, num_warps) pair against a same-run copy, bit-exact to eager
each, and prints the best two and the default. Run 4 (at 090360c) also timed the row-fastest
order through a ``tile_fastest`` argument of ``prepare``, removed once tile-fastest was adopted
(its rows in indexed_order_sweep_s16_h200.json carry ``tile_fastest``).

    export PYTHONPATH=$(ls -d packages/*/src | tr '\\n' ':')
    python tools/gpu/indexed_tile_sweep.py out.json [wan,qwen-edit]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

import sgl_diffusion_modulate as mod
from sgl_diffusion_core import TileConfig, bench, resolve_target, tensor_platform

SHAPES = {"wan": (1, 75600, 5120), "qwen-edit": (1, 13824, 3072), "hunyuan": (1, 118800, 3072)}
# run 3 swept 512-4096 x 1-8 warps (within 1 point of each other), run 4 these six in both orders
PAIRS = [(2048, 1), (2048, 2), (2048, 4), (1024, 1), (1024, 2), (4096, 2)]


def main() -> None:
    dev = torch.device("cuda")
    plat = tensor_platform(dev)
    names = sys.argv[2].split(",") if len(sys.argv) > 2 else ["wan"]
    rows = []
    for name in names:
        B, S, D = SHAPES[name]
        x = torch.randn(B, S, D, device=dev, dtype=torch.bfloat16)
        u = torch.randn_like(x)
        m = torch.randn(B, 2, 3 * D, device=dev, dtype=torch.bfloat16)
        shift, scale, gate = m[..., :D], m[..., D:2 * D], m[..., 2 * D:]
        idx = (torch.arange(S, device=dev) >= S // 2).to(torch.int64).expand(B, S).contiguous()
        cases = {
            "indexed_scale_shift": ((x, scale, shift, idx), (1.0,), 2 * x.numel() * 2,
                                    mod.indexed_scale_shift_reference(x, scale, shift, idx)),
            "indexed_gated_residual": ((x, u, gate, idx), (), 3 * x.numel() * 2,
                                       mod.indexed_gated_residual_reference(x, u, gate, idx)),
            "scale_shift": ((x, scale[:, :1], shift[:, :1]), (1.0,), 2 * x.numel() * 2,
                            mod.scale_shift_reference(x, scale[:, :1], shift[:, :1])),
            "gated_residual": ((x, u, gate[:, :1]), (), 3 * x.numel() * 2,
                               mod.gated_residual_reference(x, u, gate[:, :1])),
        }
        for op, (args, extra, nbytes, ref) in cases.items():
            plain = op.removeprefix("indexed_")
            api = resolve_target(f"sgl_diffusion_modulate.{'indexed' if op != plain else plain}_api:describe_{op}")
            prepare = resolve_target(f"sgl_diffusion_modulate.{plain}_triton:prepare")
            geom = api(*args).info["geom"]
            _, copy_gbps = bench.copy_bandwidth(nbytes, dev)
            default = TileConfig.from_heuristic(D, 2, plat)
            mine = []
            for block, warps in PAIRS:
                run = prepare(geom, *args, config=TileConfig(block=block, num_warps=warps))

                def call(run=run, args=args, extra=extra):
                    return run(*args, *extra)

                assert torch.equal(call(), ref), (op, name, block, warps)
                t = bench.time_gpu(call, dev, rep=50)
                r = {"op": op, "case": name, "block": block, "num_warps": warps,
                     "default": (block, warps) == (default.block, default.num_warps),
                     "median_us": t.median_ms * 1e3, "frac_of_copy": t.gbps(nbytes) / copy_gbps}
                rows.append(r)
                mine.append(r)
            for r in sorted(mine, key=lambda r: r["median_us"])[:2] + [r for r in mine if r["default"]]:
                print(f"{op} {name} block={r['block']} warps={r['num_warps']}{' (default)' if r['default'] else ''}: "
                      f"{r['median_us']:.1f} us {100 * r['frac_of_copy']:.1f}% of copy", flush=True)
    Path(sys.argv[1]).write_text(json.dumps({"env": bench.environment(dev), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
