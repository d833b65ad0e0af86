"""Sweep the build choices of the exact row-norm kernel at FLUX, Wan and HunyuanVideo (GPU).

Session 4's first sweep chose full unrolling (RMSNorm; LayerNorm up to 6 chunks) and the
hardware FMA; this one compares RMSNorm rows per program (FLUX's 4608 one-warp programs fill
1.09 waves of 32 resident programs per SM) and the output loop's unroll on its own.

Why: session 3 measured the exact kernels far below copy bandwidth (rms_norm 71/85/91%,
rms_modulate 70/57/91%, layer_norm 12-18%). Two suspects, both build choices of
``row_norm_exact_triton.launch_constants``:

* ``UNROLL``: the chunk loops were not unrolled, so one warp per row (RMSNorm's layout,
  eager's own) keeps one 8-byte load per thread in flight (26-40 registers on sm_90);
* ``HW_FMA``: LayerNorm's Welford steps reproduced nvcc's contracted ``a * b + c`` by an fp64
  product and sum (conversions to and from fp64 for every element) instead of the FMA
  instruction nvcc itself emits.

Each configuration runs the kernel alone (no gate) and must be ``torch.equal`` to the eager
chain (a mismatch is flagged in the row's note); time (CUDA events, L2 flushed) and % of a
same-run copy of the bench's bytes. Usage:
``python3 tools/gpu/exact_norm_sweep.py OUT.json [OP,OP,.. [CASE,CASE,.. [CONFIGS]]]`` (CONFIGS: a JSON
list of tuning dicts, repeats allowed, instead of the built-in list).

Session 5 found why the benches measured exact ``rms_modulate`` at Wan at 56% of copy and the
sweeps at 77%: ``torch.compile`` (the benches' baseline) sets ``TRITON_PTXAS_PATH`` to torch's
own ptxas for the rest of the process, so every kernel compiled after it, ours too, is built by
a different ptxas. Run this sweep under both (``TRITON_PTXAS_PATH`` unset / set to
``torch/bin/ptxas``) before choosing a default; the rows record which one built them.
"""

from __future__ import annotations

import json
import sys

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import bench, describe, resolve_target

prepare = resolve_target("sgl_diffusion_norm.row_norm_exact_triton:prepare")
_inputs = resolve_target("sgl_diffusion_norm.row_norm_bench:_inputs")
OPS = {  # op -> (op id, modulated)
    "rms_norm": ("norm.rms_norm", False),
    "rms_modulate": ("norm.rms_modulate", True),
    "layer_norm": ("norm.layer_norm", False),
    "ln_modulate": ("norm.ln_modulate", True),
}


def _configs(op: str, D: int) -> list[dict]:
    # sessions 4-5 swept unrolling, rows per program and REVERSE_OUT; session 7 EVEN; session 8: run 1
    # TREE (the shuffle tree against shared-memory halving: adopted), run 2 a persistent grid
    # (exact_norm_sweep_s8_persist_rejected_h200.json) and run 6 a register cap
    # (exact_norm_sweep_s8_maxnreg_rejected_h200.json), both rejected and their code reverted
    # session 9 run 1: RMSNorm rows per warp (PACK 2: 16-byte accesses, two of eager's threads per
    # thread) measured 60-86% against 79-95% (exact_norm_sweep_s9_pack_rejected_h200.json): reverted
    # session 11: the row held in registers (HOLD, one read of x) against the re-reading kernel
    # (HOLD False: session 10's default, with RMSNorm's rows per program and REVERSE_OUT)
    # (session 11's runs 2 and 4 measured 2 and 4 held rows per program and the held row's register
    # cap with other configurations). Session 12: a row spread over 2 / 4 warps (WPR) measured
    # 52.9-96.7% against the rule's 83.7-95.9%, slower in 16 of 18 cases, within noise in the other
    # two (exact_norm_sweep_s12_wpr_rejected_h200.json).
    # ``{}`` (the rule) repeats one of the others: a noise estimate
    return [{}, {"HOLD": True}, {"HOLD": False}]


def _sweep(op: str, name: str, device: torch.device, configs: list[dict] | None = None) -> list[dict]:
    op_id, modulated = OPS[op]
    (B, S, D), x, mod, w = _inputs(name, torch.bfloat16, device)
    if modulated:
        sc, sh = mod[:, 1:2], mod[:, 0:1]
        weight = w if op == "rms_modulate" else None
        args, kw = (x, sc, sh), ({"weight": w} if weight is not None else {})
        tensors = (x, sc, sh, weight, None)
    else:
        args, kw, tensors = (x, w), {}, (x, None, None, w, None)
    ref = getattr(norm, f"{op}_reference")(*args, **kw)
    geom = describe(op_id, *args, **kw).info["geom"]

    def run_for(cfg):
        run = prepare(geom, *tensors, tuning=dict(cfg))
        return lambda: run.fused(*tensors, 1e-6, 1.0)

    def check(out):
        return None if torch.equal(out, ref) else "NOT torch.equal to the eager chain"

    nbytes = bench.tensor_bytes(x, ref, w) + (2 * D * mod.element_size() if modulated else 0)
    return bench.sweep(f"{op} {name}", configs or _configs(op, D), run_for, nbytes, device, check=check)


def main(path: str, ops: list[str], names: list[str], configs: list[dict] | None = None) -> None:
    import os

    device = torch.device("cuda")
    print(f"TRITON_PTXAS_PATH={os.environ.get('TRITON_PTXAS_PATH', '(unset: Triton bundled ptxas)')}")
    rows = []
    for op in ops:
        for name in names:
            rows += [{**r, "ptxas": os.environ.get("TRITON_PTXAS_PATH", "triton")}
                     for r in _sweep(op, name, device, configs)]
            torch.cuda.empty_cache()
            with open(path, "w") as f:
                json.dump({"env": bench.environment(device), "rows": rows}, f, indent=1)
    print("\n".join(bench.sweep_summary(rows)))


if __name__ == "__main__":
    main(
        sys.argv[1] if len(sys.argv) > 1 else "exact_norm_sweep.json",
        sys.argv[2].split(",") if len(sys.argv) > 2 else list(OPS),
        sys.argv[3].split(",") if len(sys.argv) > 3 else ["flux", "wan", "hunyuan"],
        json.loads(sys.argv[4]) if len(sys.argv) > 4 else None,
    )
