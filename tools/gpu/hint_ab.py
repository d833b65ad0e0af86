"""Time the library's own provider of many ops' bench cases, for an A/B of a source change (GPU probe).

``tools/gpu/session18_run3.sh`` runs this twice in turn from two trees: the library as committed, and a copy of
``packages/*/src`` whose ``*_triton.py`` files have every ``"evict_first"`` L2 hint replaced by the default
policy (``""``), put first on ``PYTHONPATH``. Each process times only ``sgl_diffusion`` (no eager, no compile)
after the case's own check, with a same-run copy of the case's bytes, twice per case.
Usage: ``python3 tools/gpu/hint_ab.py OUT.json LABEL OP[:case,case] ...``; afterwards, on any machine,
``python3 tools/gpu/hint_ab.py --plot OUT.png RUN.json ...`` prints each case's median per label and plots them.
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


def summarize(png: str, paths: list[str]) -> None:
    """Median % of copy per (op, case) and label over the given runs; a horizontal bar per label."""
    import statistics

    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fracs: dict[tuple[str, str], dict[str, list[float]]] = {}
    labels: list[str] = []
    for p in paths:
        with open(p) as f:
            d = json.load(f)
        labels += [d["label"]] if d["label"] not in labels else []
        for r in d["rows"]:
            if "frac_of_copy" in r:
                fracs.setdefault((r["op"], r["case"]), {}).setdefault(d["label"], []).extend(r["frac_of_copy"])
    keys = [k for k, v in fracs.items() if all(lab in v for lab in labels)]
    med = {k: {lab: 100 * statistics.median(fracs[k][lab]) for lab in labels} for k in keys}
    for k in keys:
        cols = "  ".join(f"{lab} {med[k][lab]:6.1f}% (n={len(fracs[k][lab])})" for lab in labels)
        print(
            f"{k[0]:36s} {k[1]:28s} {cols}  {labels[-1]} - {labels[0]}: {med[k][labels[-1]] - med[k][labels[0]]:+.1f}"
        )
    fig, ax = plt.subplots(figsize=(9, 0.28 * len(keys) * len(labels) + 1.5))
    h = 0.8 / len(labels)
    for j, lab in enumerate(labels):
        ys = [i + j * h for i in range(len(keys))]
        ax.barh(ys, [med[k][lab] for k in keys], height=h, label=lab)
    ax.set_yticks(
        [i + 0.4 - h / 2 for i in range(len(keys))], [f"{op.split('.')[-1]} {case}" for op, case in keys], fontsize=7
    )
    ax.invert_yaxis()
    ax.set_xlim(50, 120)
    ax.axvline(100, color="k", lw=0.8, ls="--")
    ax.set_xlabel("% of a same-run device-to-device copy of the same bytes (median)")
    ax.legend(loc="lower right")
    fig.tight_layout()
    fig.savefig(png, dpi=110)
    print(f"wrote {png}")


if __name__ == "__main__":
    if sys.argv[1] == "--plot":
        summarize(sys.argv[2], sys.argv[3:])
    else:
        main(sys.argv[1], sys.argv[2], sys.argv[3:])
