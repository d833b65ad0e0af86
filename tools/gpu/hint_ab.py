"""Time the library's own provider of many ops' bench cases, for an A/B of a source change (GPU probe).

``tools/gpu/session18_run3.sh`` runs this twice in turn from two trees: the library as committed, and a copy of
``packages/*/src`` whose ``*_triton.py`` files have every ``"evict_first"`` L2 hint replaced by the default
policy (``""``), put first on ``PYTHONPATH``. Each process times only ``sgl_diffusion`` (no eager, no compile)
after the case's own check, with a same-run copy of the case's bytes, twice per case.
Usage: ``python3 tools/gpu/hint_ab.py OUT.json LABEL OP[:case,case] ...``.
"""

from __future__ import annotations

import json
import os
import sys

import torch

import sgl_diffusion_core
from sgl_diffusion_core import REGISTRY, bench, resolve_target


def main(out: str, label: str, ops: list[str]) -> None:
    list(resolve_target("sgl_diffusion.cli:import_family")())  # every installed family registers its ops
    device = torch.device("cuda")
    rows = []
    tree = os.path.dirname(os.path.dirname(sgl_diffusion_core.__file__))  # which src tree runs
    for spec in ops:
        op, _, names = spec.partition(":")
        target = resolve_target(REGISTRY.op(op).bench)
        for case in target(device, torch.bfloat16, names.split(",") if names else None):
            try:
                if case.check is not None:
                    case.check()
                _, copy_gbps = bench.copy_bandwidth(case.bytes, device)
                fn = case.providers["sgl_diffusion"]
                fracs = [bench.time_gpu(fn, device).gbps(case.bytes) / copy_gbps for _ in range(2)]
                rows.append(
                    {
                        "op": op,
                        "case": case.name,
                        "shape": case.shape,
                        "bytes": case.bytes,
                        "copy_gbps": copy_gbps,
                        "frac_of_copy": fracs,
                    }
                )
                print(f"{label:8s} {op:36s} {case.name:28s} " + " ".join(f"{100 * f:5.1f}%" for f in fracs), flush=True)
            except Exception as e:  # recorded, not fatal: the other cases still run
                rows.append({"op": op, "case": case.name, "error": f"{type(e).__name__}: {str(e)[:300]}"})
                print(f"{label:8s} {op:36s} {case.name:28s} FAILED {type(e).__name__}: {str(e)[:200]}", flush=True)
            with open(out, "w") as f:
                json.dump({"env": bench.environment(device), "label": label, "tree": tree, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], sys.argv[3:])
