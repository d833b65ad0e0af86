"""GPU experiment: heads per program x warps for the rope kernel at Wan and HunyuanVideo q shapes.

Times ``apply_rope`` (fp32 [S, 64] table; interleaved and rotate-half; close and exact) and
``rope_3d`` for every (HB, num_warps) pair against a same-run copy, so that
``rope_triton.heads_per_program`` / ``_num_warps`` come from a measurement.

    export PYTHONPATH=$(ls -d packages/*/src | tr '\\n' ':')
    python tools/gpu/rope_sweep.py [out.json]
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

import torch

from sgl_diffusion_core import bench, resolve_target

MODELS = {"wan": ((1, 75600, 40, 128), (21, 45, 80), (44, 42, 42), 1e4),
          "hunyuan": ((1, 118800, 24, 128), (33, 45, 80), (16, 56, 56), 256.0)}


def main() -> None:
    dev = torch.device("cuda")
    describe = resolve_target("sgl_diffusion_rope.rope_api:describe_rope")
    prep = {False: resolve_target("sgl_diffusion_rope.rope_triton:prepare"),
            True: resolve_target("sgl_diffusion_rope.rope_triton:prepare_exact")}
    rows = []
    for name, (shape, grid, axes, theta) in MODELS.items():
        q = torch.randn(shape, device=dev, dtype=torch.bfloat16)
        S = shape[1]
        ang = torch.rand(S, 64, device=dev) * 6
        cos, sin = ang.cos(), ang.sin()
        nbytes = 2 * q.numel() * 2
        _, copy_gbps = bench.copy_bandwidth(nbytes, dev)
        variants = [("table", {"interleaved": True}, False), ("table", {"interleaved": False}, False),
                    ("table", {"interleaved": True}, True),
                    ("grid", {"interleaved": True, "grid_thw": grid, "axes_dim": axes, "theta": theta}, False)]
        for angles, kw, exact in variants:
            tensors = (q, None, cos, sin, None, None, None) if angles == "table" else (q, None, None, None, None,
                                                                                       None, None)
            geom = describe(*tensors, angles=angles, **kw).info["geom"]
            label = f"{angles},{'interleaved' if kw['interleaved'] else 'rotate-half'},{'exact' if exact else 'close'}"
            for hb in (4, 8, 16):
                for warps in (1, 2, 4):
                    run = prep[exact](geom, *tensors, config=(hb, warps))

                    def call(run=run, tensors=tensors):
                        return run(*tensors, 0.0)

                    t = bench.time_gpu(call, dev, rep=30)
                    rows.append({"case": name, "variant": label, "HB": hb, "num_warps": warps,
                                 "median_us": t.median_ms * 1e3, "frac_of_copy": t.gbps(nbytes) / copy_gbps})
            mine = sorted((r for r in rows if r["case"] == name and r["variant"] == label),
                          key=lambda r: r["median_us"])
            for r in mine[:3]:
                print(f"{name} {label} HB={r['HB']} warps={r['num_warps']}: {r['median_us']:.1f} us "
                      f"{100 * r['frac_of_copy']:.1f}% of copy", flush=True)
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("rope_sweep.json")
    out.write_text(json.dumps({"env": bench.environment(dev), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
