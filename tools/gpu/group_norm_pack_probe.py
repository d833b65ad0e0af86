"""Is group_norm_silu's two-positions-per-row build (``pack=2``, C = 96 channels_last) robust? (GPU)

Session 9 run 7: at C = 96 (bf16, channels_last_3d) the bench measured the ``pack=2`` rule at 85.1%
of the two-pass bound while the sweep, same configuration, measured 73.4% (and 82.8% for ``pack=1``,
83.1% for ``pack=2`` with 32 rows per statistics step). This probe times the three configurations
in turn on several fresh input allocations (different addresses), CUDA events with an L2 flush
(``sgl_diffusion_core.bench.time_gpu``), each checked against the fp32 chain.

Usage: ``python3 tools/gpu/group_norm_pack_probe.py OUT.json [ROUNDS]``.
"""

from __future__ import annotations

import dataclasses
import json
import sys

import torch

from sgl_diffusion_core import bench, describe, resolve_target

_GN = "sgl_diffusion_norm.group_norm_silu_triton"


def main(path: str, rounds: int) -> None:
    device = torch.device("cuda")
    cfg_cls = resolve_target(f"{_GN}:GroupConfig")
    launch = resolve_target(f"{_GN}:group_norm_silu")
    shape, cl, G = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:SHAPES")["c96-cl"]
    make_inputs = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:make_inputs")
    reference = resolve_target("sgl_diffusion_norm:group_norm_silu_reference")
    C = shape[1]
    default = cfg_cls.from_heuristic(C, G, 2, cl, "cuda")
    configs = {
        "default": default,
        "pack1": dataclasses.replace(default, pack=1, stats_rows=default.stats_rows * default.pack,
                                     apply_rows=default.apply_rows * default.pack),
        "pack2_sr2x": dataclasses.replace(default, stats_rows=default.stats_rows * 2),
    }
    rows = []
    keep = []
    for r in range(rounds):
        keep.append(torch.empty((r + 1) * (7 << 20), dtype=torch.uint8, device=device))  # shift the next allocation
        x, w, b = make_inputs(shape, cl, torch.bfloat16, device)
        geom = describe("norm.group_norm_silu", x, G, w, b).info["geom"]
        ref = reference(x, G, w, b).float()
        nbytes = 3 * bench.tensor_bytes(x)
        _, copy_gbps = bench.copy_bandwidth(nbytes, device)
        for name, cfg in configs.items():
            run = lambda cfg=cfg, x=x, w=w, b=b, geom=geom: launch(x, G, w, b, geom=geom, config=cfg)  # noqa: E731
            err = float((run().float() - ref).abs().max())
            t = bench.time_gpu(run, device, rep=30)
            frac = t.gbps(nbytes) / copy_gbps
            rows.append({"round": r, "config": name, "x_ptr_mod_2MB": x.data_ptr() % (2 << 20),
                         "median_us": t.median_ms * 1e3, "frac_of_copy": frac, "max_abs_err": err,
                         **dataclasses.asdict(cfg)})
            print(f"round {r} {name}: {t.median_ms * 1e3:.1f} us {100 * frac:.1f}% (max |err| {err:.3g})", flush=True)
        x = w = b = ref = None  # free the round's tensors before the next allocation
        with open(path, "w") as f:
            json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "group_norm_pack_probe.json",
         int(sys.argv[2]) if len(sys.argv) > 2 else 4)
