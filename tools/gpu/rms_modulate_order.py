"""Exact ``rms_modulate`` at Wan measured 77.8% of copy when its bench case ran alone and 55-58%
after another case in the same process (session 5, runs 4-5). This runs the bench's own cases
(``row_norm_bench.rms_modulate_cases``) through ``bench.run_cases``: FLUX then Wan, with and without
``torch.cuda.empty_cache()`` in between, and writes both records. Usage:
``python3 tools/gpu/rms_modulate_order.py OUT.json``.
"""

from __future__ import annotations

import json
import sys

import torch

from sgl_diffusion_core import bench, resolve_target

cases = resolve_target("sgl_diffusion_norm.row_norm_bench:rms_modulate_cases")


def main(path: str) -> None:
    device = torch.device("cuda")
    out = {}
    for label, empty in (("flux_then_wan_empty_cache", True), ("flux_then_wan", False)):
        rows = []
        for name in ("flux", "wan"):
            if empty:
                torch.cuda.empty_cache()
            rec = bench.run_cases("norm.rms_modulate", cases(device, names=[name]), device, progress=lambda s: None)
            rows += rec.rows
        out[label] = rows
        for r in rows:
            if r.get("provider") in ("sgl_diffusion", "sgl_diffusion(exact kernel)"):
                print(
                    f"{label}: {r['case']} {r['provider']}: {r['median_us']:.1f} us "
                    f"{100 * r['frac_of_copy']:.1f}% of copy",
                    flush=True,
                )
        with open(path, "w") as f:
            json.dump({"env": bench.environment(device), "runs": out}, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1] if len(sys.argv) > 1 else "rms_modulate_order.json")
