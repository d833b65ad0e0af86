"""One GPU session for ln_modulate: launch-config sweep, benchmark, host overhead. Writes JSON to --out.

Run on the device machine from the repo root with the packages on PYTHONPATH, e.g.
  PYTHONPATH=packages/sgl-diffusion-core/src:packages/sgl-diffusion-norm/src \
      python tools/gpu/ln_modulate_session.py --out $OUT
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, bench, resolve_target


def host_overheads(progress=print) -> dict:
    """Host us/call of tiny calls: aten op, plain Triton launch, custom op, public ln_modulate."""
    import triton
    import triton.language as tl

    @triton.jit
    def _tiny(x_ptr, y_ptr, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        tl.store(y_ptr + o, tl.load(x_ptr + o, mask=o < n), mask=o < n)

    dev = torch.device("cuda")
    _ = norm.ln_modulate  # imports the entry module, which registers torch.ops.sgl_diffusion.ln_modulate
    x = torch.randn(1, 16, 3072, device=dev, dtype=torch.bfloat16)
    sc = torch.randn(1, 1, 3072, device=dev, dtype=torch.bfloat16)
    sh = torch.randn(1, 1, 3072, device=dev, dtype=torch.bfloat16)
    y = torch.empty_like(x)
    fns = {
        "aten_add": lambda: torch.add(x, x),
        "triton_launch_tiny": lambda: _tiny[(1,)](x, y, 1024, BLOCK=1024),
        "custom_op_ln_modulate": lambda: torch.ops.sgl_diffusion.ln_modulate(x, sc, sh, None, None, 1e-6, 1.0, None),
        "public_ln_modulate": lambda: norm.ln_modulate(x, sc, sh),
        "public_ln_modulate_backend_triton": lambda: norm.ln_modulate(x, sc, sh, backend="triton"),
        "torch_empty": lambda: torch.empty((1, 16, 3072), dtype=torch.bfloat16, device=dev),
        "tensor_sig_x5": lambda: [(t.shape, t.stride(), t.dtype, t.device) for t in (x, sc, sh, x, x)],
        "is_compiling": torch.compiler.is_compiling,
    }
    out = {}
    for k, fn in fns.items():
        vals = sorted(bench.host_us_per_call(fn, dev, calls=500) for _ in range(5))
        out[k] = vals[len(vals) // 2]
        progress(f"host {k}: {out[k]:.1f} us/call (median of 5 x 500 calls)")
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--tune", action="store_true")
    ap.add_argument("--cases", default="flux,wan,hunyuan,wan-per-token,wan-per-frame")
    args = ap.parse_args()
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    dev = torch.device("cuda")
    t0 = time.time()
    result = {"env": bench.environment(dev), "host_us": host_overheads()}
    (out / "host.json").write_text(json.dumps(result, indent=2))
    bench_mod = "sgl_diffusion_norm.ln_modulate_bench"
    if args.tune:
        rows = resolve_target(f"{bench_mod}:tune")(dev, torch.bfloat16, ["flux", "wan", "hunyuan"])
        (out / "tune.json").write_text(json.dumps({"env": result["env"], "rows": rows}, indent=2))
        print(f"tune done at {time.time() - t0:.0f}s", flush=True)
    cases = resolve_target(REGISTRY.op("norm.ln_modulate").bench)(dev, torch.bfloat16, args.cases.split(","))
    rec = bench.run_cases("norm.ln_modulate", cases, dev, progress=lambda s: print(s, flush=True))
    rec.write(out / "ln_modulate_bench.json")
    print(f"all done at {time.time() - t0:.0f}s", flush=True)


if __name__ == "__main__":
    main()
