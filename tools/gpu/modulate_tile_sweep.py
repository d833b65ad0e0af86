"""GPU experiment: TileConfig (block x warps) for the elementwise modulate kernels at production shapes.

Times ``scale_shift`` and ``gated_residual`` (bf16, per-sample modulation) for every
(block, num_warps) pair against a same-run copy and prints the best, so that
``sgl_diffusion_core.launch.TileConfig``'s rule comes from a measurement.

    export PYTHONPATH=$(ls -d packages/*/src | tr '\\n' ':')
    python tools/gpu/modulate_tile_sweep.py [out.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

import sgl_diffusion_modulate as mod
from sgl_diffusion_core import TileConfig, bench, resolve_target, tensor_platform

SHAPES = {"flux": (1, 4608, 3072), "wan": (1, 75600, 5120), "hunyuan": (1, 118800, 3072)}


def main() -> None:
    dev = torch.device("cuda")
    plat = tensor_platform(dev)
    rows = []
    for op in ("scale_shift", "gated_residual"):
        api = resolve_target(f"sgl_diffusion_modulate.{op}_api:describe_{op}")
        prepare = resolve_target(f"sgl_diffusion_modulate.{op}_triton:prepare")
        for name, (B, S, D) in SHAPES.items():
            x = torch.randn(B, S, D, device=dev, dtype=torch.bfloat16)
            m = torch.randn(B, 6, D, device=dev, dtype=torch.bfloat16)
            if op == "scale_shift":
                args = (x, m[:, 1:2], m[:, 0:1])
                nbytes = 2 * x.numel() * 2
                ref = mod.scale_shift(*args, backend="torch")
            else:
                u = torch.randn_like(x)
                args = (x, u, m[:, 2:3])
                nbytes = 3 * x.numel() * 2
                ref = mod.gated_residual(*args, backend="torch")
            geom = api(*args).info["geom"]
            _, copy_gbps = bench.copy_bandwidth(nbytes, dev)
            default = TileConfig.from_heuristic(D, 2, plat)
            for block in (256, 512, 1024, 2048, 4096):
                for warps in (1, 2, 4, 8, 16):
                    if block // (32 * warps) < 1:
                        continue
                    run = prepare(geom, *args, config=TileConfig(block=block, num_warps=warps))
                    extra = (1.0,) if op == "scale_shift" else ()

                    def call(run=run, args=args, extra=extra):
                        return run(*args, *extra)

                    assert torch.equal(call(), ref)
                    t = bench.time_gpu(call, dev, rep=50)
                    rows.append({"op": op, "case": name, "block": block, "num_warps": warps,
                                 "default": (block, warps) == (default.block, default.num_warps),
                                 "median_us": t.median_ms * 1e3, "frac_of_copy": t.gbps(nbytes) / copy_gbps})
            mine = [r for r in rows if r["op"] == op and r["case"] == name]
            for r in sorted(mine, key=lambda r: r["median_us"])[:4] + [r for r in mine if r["default"]]:
                print(f"{op} {name} block={r['block']} warps={r['num_warps']}{' (default)' if r['default'] else ''}: "
                      f"{r['median_us']:.1f} us {100 * r['frac_of_copy']:.1f}% of copy", flush=True)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("modulate_tile_sweep.json")
    out.write_text(json.dumps({"env": bench.environment(dev), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
