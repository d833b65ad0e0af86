"""Why did exact ``rms_modulate`` at Wan measure 56% of copy in the benches and 76-78% in the sweeps
(session 4, and again at the start of session 5)? Same kernel, same constants, same inputs: this
probe times the kernel alone (no gate) in one process while changing only what the two tools do
differently around it: the eager chain run first (the bench's check), the allocator's cache, and
where the output lands (a pad allocated first moves it). Prints one line per step with the
output's address; writes the rows to OUT.json. Usage: ``python3 tools/gpu/rms_modulate_probe.py OUT.json``.
"""

from __future__ import annotations

import json
import sys

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import bench, describe, resolve_target

prepare = resolve_target("sgl_diffusion_norm.row_norm_exact_triton:prepare")
_inputs = resolve_target("sgl_diffusion_norm.row_norm_bench:_inputs")


def _probe(op: str, name: str, device: torch.device) -> list[dict]:
    (B, S, D), x, mod, w = _inputs(name, torch.bfloat16, device)
    if op == "rms_modulate":
        sc, sh = mod[:, 1:2], mod[:, 0:1]
        args, kw, tensors = (x, sc, sh), {"weight": w}, (x, sc, sh, w, None)
    else:
        args, kw, tensors = (x, w), {}, (x, None, None, w, None)
    run = prepare(describe(f"norm.{op}", *args, **kw).info["geom"], *tensors)
    nbytes = bench.tensor_bytes(x, x, w) + (2 * D * mod.element_size() if op == "rms_modulate" else 0)
    _, copy_gbps = bench.copy_bandwidth(nbytes, device)
    rows, keep = [], []

    def fn():
        return run.fused(*tensors, 1e-6, 1.0)

    def step(label: str) -> None:
        delta = fn().data_ptr() - x.data_ptr()
        t = bench.time_gpu(fn, device, rep=30)
        frac = t.gbps(nbytes) / copy_gbps
        rows.append(
            {
                "op": op,
                "case": name,
                "step": label,
                "median_us": t.median_ms * 1e3,
                "frac_of_copy": frac,
                "out_minus_x": delta,
            }
        )
        print(
            f"{op} {name} {label:>22}: {t.median_ms * 1e3:.1f} us {100 * frac:.1f}% of copy  "
            f"out-x = {delta:+d} (mod 2 MiB: {delta % (2 << 20)})",
            flush=True,
        )

    step("fresh")
    ref = getattr(norm, f"{op}_reference")(*args, **kw)
    step("after the eager chain")
    del ref
    torch.cuda.empty_cache()
    step("after empty_cache")
    for mb in (1, 2, 3, 7, 64, 512):
        keep.append(torch.empty(mb << 20, dtype=torch.uint8, device=device))
        step(f"pad +{mb} MiB")
    return rows


def _compile_first(device: torch.device) -> None:
    """What the benches do before a later case: run ``torch.compile`` of the eager chain (FLUX)."""
    (B, S, D), x, mod, w = _inputs("flux", torch.bfloat16, device)
    torch.compile(norm.rms_modulate_reference, dynamic=False)(x, mod[:, 1:2], mod[:, 0:1], weight=w)
    torch.cuda.synchronize()
    import os

    print(f"torch.compile ran first; TRITON_PTXAS_PATH={os.environ.get('TRITON_PTXAS_PATH')}", flush=True)


def main(path: str, compile_first: bool = False) -> None:
    device = torch.device("cuda")
    if compile_first:
        _compile_first(device)
    rows = []
    for op, name in (("rms_modulate", "wan"),):
        rows += _probe(op, name, device)
        torch.cuda.empty_cache()
        with open(path, "w") as f:
            json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "rms_modulate_probe.json", "--compile-first" in sys.argv[2:])
