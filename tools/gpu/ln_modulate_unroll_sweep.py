"""GPU experiment: explicit chunk-loop unroll factor x register cap for ln_modulate's chunked path.

The production kernel leaves the unrolling of its chunk loops to the compiler. This script
loads a copy of the kernel whose loops read ``tl.range(0, CHUNKS, loop_unroll_factor=UNROLL)``
and times (UNROLL, num_warps, maxnreg) at Wan (D=5120) and HunyuanVideo (D=3072), per-sample
modulation, bf16, against a same-run copy. A first run (docs/benchmarks/README.md, "next
step") found UNROLL=5 + maxnreg=80 at 98.8% of copy for Wan.

    export PYTHONPATH=packages/sgl-diffusion-core/src:packages/sgl-diffusion-norm/src
    python tools/gpu/ln_modulate_unroll_sweep.py [out.json]
"""

from __future__ import annotations

import functools
import importlib.util
import json
import sys
import tempfile
from pathlib import Path

import torch

from sgl_diffusion_core import bench

SRC = Path(__file__).resolve().parents[2] / "packages/sgl-diffusion-norm/src/sgl_diffusion_norm/row_norm_triton.py"


def load_variant():
    src = SRC.read_text()
    src = src.replace("tl.range(0, CHUNKS)", "tl.range(0, CHUNKS, loop_unroll_factor=UNROLL)")
    src = src.replace("BLOCK: tl.constexpr, CHUNKS: tl.constexpr,\n):",
                      "BLOCK: tl.constexpr, CHUNKS: tl.constexpr, UNROLL: tl.constexpr,\n):")
    path = Path(tempfile.mkdtemp()) / "ln_modulate_unroll.py"
    path.write_text(src)
    spec = importlib.util.spec_from_file_location("ln_modulate_unroll", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def main() -> None:
    k = load_variant()._ln_modulate_kernel
    dev = torch.device("cuda")
    rows = []
    for S, D in ((75600, 5120), (118800, 3072)):
        x = torch.randn(1, S, D, device=dev, dtype=torch.bfloat16)
        m = torch.randn(1, 6, D, device=dev, dtype=torch.bfloat16)
        sc, sh = m[:, 1:2], m[:, 0:1]
        out = torch.empty_like(x)
        nbytes = 2 * x.numel() * x.element_size()
        _, copy_gbps = bench.copy_bandwidth(nbytes, dev)
        chunks = D // 1024
        for unroll in sorted({1, 2, chunks}):
            for warps in (2, 4, 8):
                for maxnreg in (None, 64, 80, 96, 128):
                    opts = {"num_warps": warps, "num_stages": 1}
                    if maxnreg:
                        opts["maxnreg"] = maxnreg

                    run = functools.partial(
                        k[(S,)], x, sc, sh, x, x, out, S, D, 0, D, 0, 0, 1, 0, 0, 1, 1e-6, 1.0, HAS_SHIFT=True,
                        HAS_W=False, HAS_BIAS=False, BLOCK=1024, CHUNKS=chunks, UNROLL=unroll, **opts,
                    )

                    t = bench.time_gpu(run, dev, rep=50)
                    frac = t.gbps(nbytes) / copy_gbps
                    rows.append({"D": D, "unroll": unroll, "num_warps": warps, "maxnreg": maxnreg,
                                 "median_us": t.median_ms * 1e3, "frac_of_copy": frac})
        best = sorted((r for r in rows if r["D"] == D), key=lambda r: r["median_us"])[:6]
        for r in best:
            print(f"D={D} unroll={r['unroll']} warps={r['num_warps']} maxnreg={r['maxnreg']}: "
                  f"{r['median_us']:.1f} us {100 * r['frac_of_copy']:.1f}% of copy", flush=True)
    out_path = Path(sys.argv[1]) if len(sys.argv) > 1 else Path("ln_modulate_unroll_sweep.json")
    out_path.write_text(json.dumps({"env": bench.environment(dev), "rows": rows}, indent=1))


if __name__ == "__main__":
    main()
