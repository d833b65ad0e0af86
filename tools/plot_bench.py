"""Plot a benchmark record (JSON from `sgl-diffusion bench --out`) as a PNG next to it.

    python tools/plot_bench.py docs/benchmarks/ln_modulate_bench_h200.json [--out file.png]

One group of bars per case: effective GB/s of every provider, with the same-run
device-to-device copy as a dashed mark; the label on our bar is its % of copy. A record of more
than 16 cases (a sweep over widths) is drawn as one line per provider of its % of copy instead.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

_MANY_CASES = 16


def _title(data: dict, rows: list) -> str:
    env = data["env"]
    return f"{data['op']} on {env['gpu']} ({rows[0]['dtype']}), torch {env['torch']}, triton {env['triton']}"


def _plot_fractions(data: dict, rows: list, cases: list, providers: list, out: Path) -> Path:
    """% of the same-run copy per provider and case, one line each (records of many cases)."""
    fig, ax = plt.subplots(figsize=(max(8, 0.3 * len(cases)), 4.5))
    for prov in providers:
        pts = [
            (i, 100 * r["frac_of_copy"])
            for i, case in enumerate(cases)
            for r in rows
            if r["case"] == case and r["provider"] == prov
        ]
        ax.plot([p[0] for p in pts], [p[1] for p in pts], marker="o", markersize=3, linewidth=1, label=prov)
    ax.axhline(100, color="k", linestyle="dashed", linewidth=0.8, label="same-run copy")
    ax.set_xticks(range(len(cases)), cases, rotation=90, fontsize=7)
    ax.set_ylabel("% of same-run copy")
    ax.set_ylim(bottom=0)
    ax.set_title(_title(data, rows), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    return out


def plot(path: Path, out: Path | None = None) -> Path:
    data = json.loads(path.read_text())
    rows = [r for r in data["rows"] if "gbps" in r]
    cases = list(dict.fromkeys(r["case"] for r in rows))
    providers = list(dict.fromkeys(r["provider"] for r in rows))
    if len(cases) > _MANY_CASES:
        return _plot_fractions(data, rows, cases, providers, out or path.with_suffix(".png"))
    width = 0.8 / max(1, len(providers))
    fig, ax = plt.subplots(figsize=(max(6, 1.8 * len(cases)), 4.5))
    for j, prov in enumerate(providers):
        xs, ys = [], []
        for i, case in enumerate(cases):
            r = next((r for r in rows if r["case"] == case and r["provider"] == prov), None)
            if r is not None:
                xs.append(i + (j - (len(providers) - 1) / 2) * width)
                ys.append(r["gbps"] / 1e3)
                if prov == "sgl_diffusion":
                    ax.annotate(
                        f"{100 * r['frac_of_copy']:.0f}%", (xs[-1], ys[-1]), ha="center", va="bottom", fontsize=8
                    )
        ax.bar(xs, ys, width, label=prov)
    for i, case in enumerate(cases):
        copy = next(r["copy_gbps"] for r in rows if r["case"] == case)
        ax.hlines(
            copy / 1e3, i - 0.45, i + 0.45, colors="k", linestyles="dashed", label="same-run copy" if i == 0 else None
        )
    ax.set_xticks(
        range(len(cases)), [f"{c}\n{next(r['shape'] for r in rows if r['case'] == c)}" for c in cases], fontsize=7
    )
    ax.set_ylabel("effective bandwidth (TB/s)")
    ax.set_title(_title(data, rows), fontsize=9)
    ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    out = out or path.with_suffix(".png")
    fig.savefig(out, dpi=120)
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("json", type=Path)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    print(plot(args.json, args.out))


if __name__ == "__main__":
    main()
