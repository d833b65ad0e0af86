"""Markdown table of benchmark records (JSON from ``sgl-diffusion bench --out``), one row per case.

    python tools/bench_table.py docs/benchmarks/qk_norm_bench_h200.json [more.json ...]

Columns: op, case (shape), ours (the ``sgl_diffusion`` provider) in us and % of the same-run
copy, then every baseline the record holds (eager, torch.compile, ...) in us, and ours vs
``torch.compile``. Extra providers of ours (``sgl_diffusion(close)``, ``...(exact kernel)``)
get their own rows.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path


def table(paths: list[Path]) -> str:
    lines = [
        "| op | case | provider | time | % of copy | eager | torch.compile | vs compile | git |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for path in paths:
        data = json.loads(path.read_text())
        op = data["op"].split(".", 1)[-1]
        sha = str(data["env"].get("git_sha", "?"))[:7]
        rows = [r for r in data["rows"] if "median_us" in r]
        for case in dict.fromkeys(r["case"] for r in rows):
            mine = {r["provider"]: r for r in rows if r["case"] == case}
            eager = mine.get("eager", {}).get("median_us")
            comp = mine.get("torch.compile", {}).get("median_us")
            for prov, r in mine.items():
                if not prov.startswith("sgl_diffusion"):
                    continue
                vs = f"{comp / r['median_us']:.2f}x" if comp else ""
                lines.append(
                    f"| `{op}` | {case} `{r['shape']}` | {prov} | {r['median_us']:.1f} us | "
                    f"{100 * r['frac_of_copy']:.1f}% | {f'{eager:.1f} us' if eager else ''} | "
                    f"{f'{comp:.1f} us' if comp else ''} | {vs} | {sha} |"
                )
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=Path, nargs="+")
    print(table(ap.parse_args().json))


if __name__ == "__main__":
    main()
