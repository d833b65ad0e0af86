"""Markdown from the benchmark records in docs/benchmarks/ (JSON from ``sgl-diffusion bench --out`` and the
tuning tools): a table of given records, and the generated pages ``tools/gen_docs.py`` writes.

    python tools/bench_table.py docs/benchmarks/qk_norm_bench_h200.json [more.json ...]

The table: one row per case and provider of ours (``sgl_diffusion``, and variants such as
``sgl_diffusion(close)``) with its time, % of the same-run copy, the eager and ``torch.compile``
times and ours vs ``torch.compile``.

docs/benchmarks/ holds one record per suite and device, named ``<suite>_<device>.json`` (plot:
``<suite>_<device>.png``). A suite is an op's benchmark (``<op>_bench``: the record has an ``op``; ``<op>_widths``: its
cases at every DiT width, ``sgl-diffusion bench --cases widths``, rendered as a width matrix) or
tuning data behind a launch rule (any other name). :func:`readme` renders all of them,
:func:`summary` the per-op figures the repository README quotes; both read nothing but the records
(and, for the contract column, the ``contract_of`` callback given by the caller).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ContractOf = Callable[[str, str], str]

# what each tuning suite is the evidence of (suites not listed get no such line)
RULES = {
    "activation_tune": "the activation kernels' tiles (`sgl_diffusion_activation._math_triton.tile_config`)",
    "activation_tune_glu_evict": "the activation kernels' L2 policy on streamed inputs",
    "attention_sweep": "`attention`'s Triton launch rule (`_attention_triton.RULE`), beside cuDNN SDPA",
    "cat_pad_sweep": "`causal_conv3d_cat_pad`'s word-kernel tiles (`conv_pad_triton._WORDS_RULE`)",
    "channel_cluster_sweep": "`channel_rms_norm`'s two-CTA cluster (`ChannelConfig.ctas`)",
    "channel_hint_probe": "`channel_rms_norm`'s L2 policy on the cluster kernel's loads",
    "channel_rms_norm_sweep": "`channel_rms_norm`'s v1 launch rule",
    "exact_norm_sweep": "the exact row-norm kernel's build choices, its warps per program among them "
    "(`_row_norm_exact_triton_rule.launch_constants`)",
    "flush_mode_probe": "the benchmarks' L2 flush (`sgl_diffusion_core.bench.FLUSH`)",
    "fp8_norm_sweep": "the FP8-result launch rules of the row norms and `gated_residual_norm_modulate` "
    "(`_row_norm_triton_rule.fp8_config`, `gated_fp8_config`)",
    "gn_order_probe": "`group_norm_silu`'s L2 policy and apply order",
    "hint_ab": "the default L2 policy of the layout, modulate and qk_norm kernels",
    "indexed_order_sweep": "the elementwise tile rule (`sgl_diffusion_core.launch.TileConfig`) on the 1-D grid",
    "ln_modulate_tune": "the row rule of the one-pass row norms (`sgl_diffusion_core.launch.RowConfig`)",
    "modulate_tile_sweep": "the elementwise tile rule (`sgl_diffusion_core.launch.TileConfig`)",
    "nccl_ulysses_check": "`ulysses_all_to_all` over NCCL, 2 GPUs (`tools/gpu/nccl_ulysses_check.py`)",
    "quantized_attention_sweep": "`quantized_attention`'s Triton tiles (`quantized_attention_triton._SM90_128`) and "
    "its k scales per block of 64 keys (`quantized_attention_torch.KEY_BLOCK`)",
    "rasterize_sweep": "`rasterize`'s per-face launch rule (`rasterize_triton.PROGRAMS_PER_SM`, `RASTER_WARPS`, "
    "`TILE_W` x `TILE_H`)",
    "row_norm_width_sweep": "the row norms' launch rules across DiT widths (`_row_norm_triton_rule.width_config`, "
    "`_row_norm_exact_triton_rule._hold_rule`)",
    "sites_e2e": "`sgl_diffusion_sites.optimize` end to end (`tools/gpu/sites_e2e.py`)",
    "vae_norm_sweep": "`channel_rms_norm`'s and `group_norm_silu`'s launch rules",
}
DOMAINS = ("norm", "modulate", "rope", "activation", "layout", "attention")
# row fields that are measurements or bookkeeping, not a configuration
_NOT_CONFIG = {
    "op", "case", "default", "median_us", "p20_us", "p80_us", "frac_of_copy", "gbps", "note", "equal_to_default",
    "shape", "bytes", "copy_gbps", "copy_us", "channels_last", "groups", "process", "date", "label", "config",
    "tflops", "max_abs_err", "ms", "max_dequant_diff", "cosine",
}  # fmt: skip
_REPEAT = re.compile(r"\s*#\d+$")


@dataclass
class Suite:
    name: str
    device: str
    path: Path
    data: Any

    @property
    def plot(self) -> Path | None:
        png = self.path.with_suffix(".png")
        return png if png.is_file() else None

    @property
    def env(self) -> dict[str, Any]:
        if isinstance(self.data, dict):
            return self.data.get("env") or {k: self.data[k] for k in ("gpu", "torch", "git_sha") if k in self.data}
        return {}

    @property
    def domain(self) -> str:
        """An op benchmark's domain (``norm`` of ``norm.ln_modulate``)."""
        return self.data["op"].split(".")[0]

    @property
    def is_op(self) -> bool:
        """An op's benchmark: ``<op>_bench``, or ``<op>_widths`` (its cases at every DiT width)."""
        return isinstance(self.data, dict) and "op" in self.data and self.name.endswith(("_bench", "_widths"))


def suites(bench_dir: Path) -> list[Suite]:
    """Every ``<suite>_<device>.json`` in ``bench_dir``: op benchmarks first (by domain, then op), then the rest."""
    out = []
    for path in sorted(bench_dir.glob("*.json")):
        name, _, device = path.stem.rpartition("_")
        out.append(Suite(name, device, path, json.loads(path.read_text())))

    def key(s: Suite) -> tuple:
        if s.is_op:
            return (0, DOMAINS.index(s.domain) if s.domain in DOMAINS else len(DOMAINS), s.name, s.device)
        return (1, 0, s.name, s.device)

    return sorted(out, key=key)


def _us(v: float | None) -> str:
    return "" if v is None else f"{v:.1f}"


def _pct(v: float | None) -> str:
    return "" if v is None else f"{100 * v:.1f}%"


def env_line(s: Suite) -> str:
    env = s.env
    if not env:
        return "environment not recorded in the file"
    sha = str(env.get("git_sha") or "unknown")
    parts = [
        env.get("gpu", "GPU not recorded"),
        "git not recorded"
        if sha == "unknown"
        else "git " + " / ".join(f"`{part.strip()[:7]}`" for part in sha.split("/")),
    ]
    if env.get("before_sha"):
        parts[1] = f"git `{str(env['before_sha'])[:7]}` (before) / {env.get('after_sha')} (after)"
    if env.get("date"):
        parts.append(str(env["date"])[:10])
    if env.get("torch"):
        parts.append(f"torch {env['torch']}")
    if env.get("triton"):
        parts.append(f"Triton {env['triton']}")
    if "l2_flush" in env or "device" in env:  # a bench.environment() header
        parts.append(f"L2 flush `{env.get('l2_flush', 'zero')}`")
    return " · ".join(parts)


def _links(s: Suite, embed_plots: bool) -> str:
    links = f"[JSON]({s.path.name})"
    if s.plot is not None and not embed_plots:
        links += f" · [plot]({s.plot.name})"
    return links


def _ours(provider: str) -> bool:
    return provider.startswith("sgl_diffusion")


# a case of a width sweep: ``d<D>-b<B>-s<S>`` (columns, batch, tokens)
_WIDTH_CASE = re.compile(r"d(\d+)-b(\d+)-s(\d+)$")


def width_matrix(rows: list[dict[str, Any]], contract_of: ContractOf | None, op: str) -> list[str]:
    """A width sweep as one matrix per provider of ours: a row per width, a column per (batch, tokens);
    each cell % of copy, then how many times faster than eager and than ``torch.compile``. Below each
    matrix: the lowest % of copy, and the cells where ours is slower than either baseline."""
    by_case = {}
    for r in rows:
        by_case.setdefault(r["case"], {})[r["provider"]] = r
    keys = {c: tuple(int(v) for v in _WIDTH_CASE.match(c).groups()) for c in by_case}
    widths = sorted({k[0] for k in keys.values()})
    cols = sorted({k[1:] for k in keys.values()})
    providers = list(dict.fromkeys(p for mine in by_case.values() for p in mine if _ours(p)))
    out = ["Each cell: % of copy · times faster than eager · than `torch.compile` of the chain.\n\n"]
    for prov in providers:
        contract = f" ({contract_of(op, prov)})" if contract_of else ""
        out.append(f"`{prov}`{contract}:\n\n| D | " + " | ".join(f"B={b}, {t} tokens" for b, t in cols) + " |\n")
        out.append("|---" * (len(cols) + 1) + "|\n")
        low, slower = None, []
        for D in widths:
            cells = []
            for b, t in cols:
                mine = by_case.get(f"d{D}-b{b}-s{t}", {})
                r = mine.get(prov)
                if r is None:
                    cells.append("")
                    continue
                vs = [mine[base]["median_us"] / r["median_us"] for base in ("eager", "torch.compile") if base in mine]
                cells.append(" · ".join([_pct(r["frac_of_copy"]), *(f"{v:.2f}x" for v in vs)]))
                if low is None or r["frac_of_copy"] < low[0]:
                    low = (r["frac_of_copy"], f"D={D}, B={b}, {t} tokens")
                if any(v < 1 for v in vs):
                    slower.append(f"D={D}, B={b}, {t} tokens")
            out.append(f"| {D} | " + " | ".join(cells) + " |\n")
        if low is not None:
            out.append(
                f"\nLowest: {_pct(low[0])} of copy ({low[1]}). "
                + (
                    f"Slower than eager or `torch.compile` at {len(slower)}: {'; '.join(slower)}.\n\n"
                    if slower
                    else "Never slower than eager or `torch.compile`.\n\n"
                )
            )
    return out


def op_section(s: Suite, contract_of: ContractOf | None, embed_plots: bool = False) -> list[str]:
    op = s.data["op"]
    rows = [r for r in s.data["rows"] if "median_us" in r]
    dtypes = sorted({r["dtype"] for r in rows})
    sweep = s.name.endswith("_widths")
    title = f"{op.split('.', 1)[-1]}{' at every DiT width' if sweep else ''}"
    out = [f"### {title} ({op.split('.')[0]}, {s.device})\n\n"]
    out.append(f"{env_line(s)} · {', '.join(dtypes)} · {_links(s, embed_plots)}\n\n")
    if isinstance(s.data.get("note"), str):  # what a reader must know about the record (e.g. a rule changed since)
        out.append(s.data["note"].rstrip() + "\n\n")
    models = sorted({r["bytes_model"] for r in rows if r.get("bytes_model")})
    if models:
        out.append("Bytes: " + "; ".join(models) + ".\n\n")
    if sweep and rows and all(_WIDTH_CASE.match(r["case"]) for r in rows):
        return out + width_matrix(rows, contract_of, op) + _failed(s) + _embedded(s, embed_plots) + ["\n"]
    out.append(
        "| case | shape | provider | contract | us | % of copy | copy us | eager us | torch.compile us "
        "| vs torch.compile | host us |\n|---|---|---|---|---|---|---|---|---|---|---|\n"
    )
    others = set()
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = {r["provider"]: r for r in rows if r["case"] == case}
        eager = mine.get("eager", {}).get("median_us")
        comp = mine.get("torch.compile", {}).get("median_us")
        others |= {p for p in mine if not _ours(p) and p not in ("eager", "torch.compile")}
        for prov, r in mine.items():
            if not _ours(prov):
                continue
            contract = contract_of(op, prov) if contract_of else ""
            vs = f"{comp / r['median_us']:.2f}x" if comp else ""
            out.append(
                f"| {case} | `{r['shape']}` | `{prov}` | {contract} | {_us(r['median_us'])} "
                f"| {_pct(r['frac_of_copy'])} | {_us(r.get('copy_us'))} | {_us(eager)} | {_us(comp)} | {vs} "
                f"| {_us(r.get('host_us_per_call'))} |\n"
            )
    if others:
        out.append(f"\nOther baselines in the JSON: {', '.join(f'`{p}`' for p in sorted(others))}.\n")
    out += _failed(s) + _embedded(s, embed_plots)
    out.append("\n")
    return out


def _embedded(s: Suite, embed_plots: bool) -> list[str]:
    """The record's plot, on the page that embeds plots (the docs site's benchmarks page)."""
    return [f"\n![{s.plot.stem}]({s.plot.name})\n"] if embed_plots and s.plot is not None else []


def _failed(s: Suite) -> list[str]:
    errors = [r for r in s.data["rows"] if "error" in r]
    if not errors:
        return []
    return [
        "\nFailed to run: " + "; ".join(f"{r['case']} `{r['provider']}` ({r['error'][:80]})" for r in errors) + ".\n"
    ]


def _config(r: dict[str, Any], fields: list[str], rule: dict[str, Any] | None) -> str:
    """A row's configuration: its label or ``config`` string, else its fields (those that differ from the
    rule's row where the case has one, else those that vary across the case's rows)."""
    if r.get("label"):
        return _REPEAT.sub("", str(r["label"]))
    if isinstance(r.get("config"), str):
        return r["config"]
    if rule is not None:
        diff = [k for k in fields if r.get(k) != rule.get(k)]
        return ", ".join(f"{k}={r.get(k)}" for k in diff) if diff else "the rule"
    return ", ".join(f"{k}={r[k]}" for k in fields if k in r) or "—"


def _frac(r: dict[str, Any]) -> float | None:
    f = r.get("frac_of_copy")
    if isinstance(f, list):
        return statistics.median(f) if f else None
    return f


def _measure(rows: list[dict[str, Any]]) -> tuple[Callable[[dict[str, Any]], float | None], str, Callable, Callable]:
    """What a sweep compares, and which end is best: TFLOP/s where its rows carry them (compute-bound
    kernels), % of copy where they carry that, else the time (rows of neither, such as the rasterizer's)."""
    rows = [r for r in rows if isinstance(r, dict)]
    if any("tflops" in r for r in rows):
        return (lambda r: r.get("tflops")), "TFLOP/s", (lambda v: f"{v:.0f}"), max
    if any("frac_of_copy" in r for r in rows) or not any("median_us" in r for r in rows):
        return _frac, "% of copy", _pct, max
    return (lambda r: r.get("median_us")), "us", (lambda v: f"{v:.1f}"), min


def sweep_table(rows: list[dict[str, Any]]) -> list[str]:
    """Per case: the rule's configuration (``default`` rows, or the public op's in a probe), the best one, and
    how many configurations ran (repeats of one configuration count once, at their median)."""
    value, unit, fmt, best_of = _measure(rows)
    rows = [r for r in rows if isinstance(r, dict) and value(r) is not None]
    out = [f"| case | the rule ({unit}) | best ({unit}) | best configuration | configurations |\n"]
    out.append("|---|---|---|---|---|\n")
    by_case: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        by_case.setdefault(" ".join(str(r[k]) for k in ("op", "case") if k in r), []).append(r)
    for case, mine in by_case.items():
        keys = [k for k in dict.fromkeys(k for r in mine for k in r) if k not in _NOT_CONFIG]
        varying = [k for k in keys if len({json.dumps(r.get(k), sort_keys=True) for r in mine}) > 1]
        rule_row = next((r for r in mine if r.get("default")), None)
        configs: dict[str, list[float]] = {}
        rule: list[float] = []
        for r in mine:
            label = _config(r, varying, rule_row)
            configs.setdefault(label, []).append(value(r))
            if r.get("default") or label.startswith("public op"):
                rule.append(value(r))
        best_label, best = best_of(((k, statistics.median(v)) for k, v in configs.items()), key=lambda kv: kv[1])
        out.append(
            f"| {case} | {fmt(statistics.median(rule)) if rule else '—'} | {fmt(best)} | {best_label} "
            f"| {len(configs)} |\n"
        )
    return out


def _ab(rows: list[dict[str, Any]], label: str, value: str, what: str, fmt: Callable[[float], str]) -> list[str]:
    """An A/B table: one row per (op, case or shape), one column per ``label`` value (median of ``value``)."""
    labels = list(dict.fromkeys(r[label] for r in rows))
    where = "case" if any("case" in r for r in rows) else "shape"
    out = [f"| op | {where} | " + " | ".join(f"`{lab}` ({what})" for lab in labels) + " |\n"]
    out.append("|---|---|" + "---|" * len(labels) + "\n")
    for key in dict.fromkeys((r["op"], r.get(where)) for r in rows):
        cells = []
        for lab in labels:
            vals = []
            for r in rows:
                if (r["op"], r.get(where)) == key and r[label] == lab:
                    vals += r[value] if isinstance(r[value], list) else [r[value]]
            cells.append(fmt(statistics.median(vals)) if vals else "")
        out.append(f"| {key[0].split('.', 1)[-1]} | {key[1]} | " + " | ".join(cells) + " |\n")
    return out


def _flush_mode(rows: list[dict[str, Any]]) -> list[str]:
    provs = list(dict.fromkeys(k for r in rows for k, v in r.items() if isinstance(v, dict)))
    out = ["| flush | state | copy us | " + " | ".join(f"`{p}` (% of copy)" for p in provs) + " |\n"]
    out.append("|---|---|---|" + "---|" * len(provs) + "\n")
    for key in dict.fromkeys((r["flush"], r["state"]) for r in rows):
        mine = [r for r in rows if (r["flush"], r["state"]) == key]
        copy = statistics.median(r["copy_us"] for r in mine)
        cells = []
        for p in provs:
            vals = [r[p]["frac_of_copy"] for r in mine if p in r]
            cells.append(_pct(statistics.median(vals)) if vals else "")
        out.append(f"| `{key[0]}` | {key[1]} | {_us(copy)} | " + " | ".join(cells) + " |\n")
    return out


def _sites(data: dict[str, Any]) -> list[str]:
    out = ["| model | variant | status | ms per forward | vs eager | equal to eager | PSNR dB |\n"]
    out.append("|---|---|---|---|---|---|---|\n")
    for model, m in data["models"].items():
        for name, v in m.get("variants", {}).items():
            speed = v.get("speedup_vs_eager")
            out.append(
                f"| {model} | `{name}` | {v.get('status', '')} | {_us(v.get('median_ms'))} "
                f"| {f'{speed:.2f}x' if speed else ''} | {v.get('equal', '')} | {v.get('psnr_db') or ''} |\n"
            )
    notes = [f"- {model}: {n}\n" for model, m in data["models"].items() for n in m.get("notes", [])]
    return out + (["\n", *notes] if notes else [])


def _nccl(data: dict[str, Any]) -> list[str]:
    out = ["| rank | case | shape | equal (qkv / out) | ours us (qkv / out) | torch chain us (qkv / out) |\n"]
    out.append("|---|---|---|---|---|---|\n")
    for rank, rec in data["ranks"].items():
        for case, r in (rec.get("results") or {}).items():
            ours = f"{_us(r.get('qkv_us'))} / {_us(r.get('out_us'))}" if "qkv_us" in r else ""
            torch_ = f"{_us(r.get('qkv_torch_chain_us'))} / {_us(r.get('out_torch_chain_us'))}" if "qkv_us" in r else ""
            out.append(
                f"| {rank} | {case} | `{r.get('shape')}` | {r.get('equal_qkv')} / {r.get('equal_out')} "
                f"| {ours} | {torch_} |\n"
            )
    return out


def tune_section(s: Suite, embed_plots: bool = False) -> list[str]:
    out = [f"### {s.name} ({s.device})\n\n"]
    if s.name in RULES:
        out.append(f"Backs {RULES[s.name]}.\n\n")
    if isinstance(s.data, dict) and isinstance(s.data.get("what"), str):
        what = s.data["what"].rstrip(".")
        out.append(f"{what[:1].upper()}{what[1:]}.\n\n")
    out.append(f"{env_line(s)} · {_links(s, embed_plots)}\n\n")
    data = s.data
    rows = data if isinstance(data, list) else data.get("rows")
    if s.name == "hint_ab":
        out += _ab(rows, "label", "frac_of_copy", "% of copy", _pct)
    elif isinstance(data, dict) and "speed" in data:  # a before / after A/B of two trees
        out += _ab(data["speed"], "tree", "frac_of_copy", "% of copy", _pct)
        if data.get("host"):
            out += ["\n"] + _ab(data["host"], "tree", "host_us_median", "host us", _us)
    elif s.name == "flush_mode_probe":
        out += _flush_mode(rows)
    elif isinstance(data, dict) and "models" in data:
        out += _sites(data)
    elif isinstance(data, dict) and "ranks" in data:
        out += _nccl(data)
    elif rows:
        out += sweep_table(rows)
    out += _embedded(s, embed_plots)
    out.append("\n")
    return out


def environments(all_suites: list[Suite]) -> str:
    envs = sorted(
        {
            (s.env["gpu"], s.env["torch"], s.env["triton"])
            for s in all_suites
            if {"gpu", "torch", "triton"} <= set(s.env)
        }
    )
    return "; ".join(f"{g}, torch {t}, Triton {tr}" for g, t, tr in envs)


METHOD = """\
## Method

- **What is timed**: one call of each provider, between two CUDA events, after warm-up calls; the tables
  give the median over all calls (p20 and p80 are in the JSON). Rows with a `rounds` field were timed in
  that many rounds in which the providers take turns (rep / rounds calls each per round), so clock
  drift and the order of providers fall on all of them alike; rows without it, one provider after another.
  Ours is the public op (`sgl_diffusion`; variants such
  as `sgl_diffusion(close)` name the kernel asked for); the baselines are the eager PyTorch chain the op
  replaces and `torch.compile` of that chain specialized to the shape.
- **Bytes**: the minimal bytes a perfect fused kernel moves, every input read once and every output
  written once (`sgl_diffusion_core.bench.tensor_bytes`); a record that uses another model states it
  (`bytes_model`). Bandwidth is bytes / median time.
- **L2 flush**: before every timed call a 256 MB buffer is read (`read`) or written (`zero`);
  records without the `l2_flush` field used `zero`.
- **Copy reference**: in the same process, the fastest of three device-to-device copies of the same
  number of bytes (`dst.copy_(src)`, `clone`, a Triton copy), timed the same way; "% of copy" is our
  bandwidth over that copy's. It can pass 100% when most of the
  working set stays in the L2 cache.
- **Host us**: the host time of one call of ours, measured while an enqueued sleep kernel keeps the GPU
  busy (Python, dispatch and launch only).
- **Contract**: `exact` is `torch.equal` to the eager chain, `close` within the op's declared
  tolerance (`docs/selection-matrix.md` lists both per backend). Every case is checked before it is
  timed.
- **Tuning suites**: per case, the launch rule's own configuration, the best configuration and how
  many ran, each as % of a same-run copy.

Run one: `sgl-diffusion bench --op OP --out docs/benchmarks/OP_bench_<device>.json` on the GPU, then
`python tools/plot_bench.py` on the JSON and `python tools/gen_docs.py`.
"""


def readme(bench_dir: Path, contract_of: ContractOf | None = None, embed_plots: bool = False) -> str:
    all_suites = suites(bench_dir)
    out = [
        "# Benchmarks\n\n",
        "One record per suite and device: an op's benchmark (`<op>_bench_<device>.json` and its plot) or the\n",
        "tuning data behind a launch rule. Every figure below is read from those files, each of which names\n",
        "the git SHA, GPU, date and torch / Triton versions it measured.\n",
        f"Environments: {environments(all_suites)}.\n\n",
        METHOD,
        "\n## Op benchmarks\n\n",
    ]
    for s in all_suites:
        if s.is_op:
            out += op_section(s, contract_of, embed_plots)
    out.append("## Tuning and other suites\n\n")
    for s in all_suites:
        if not s.is_op:
            out += tune_section(s, embed_plots)
    return "".join(out).rstrip("\n") + "\n"


def _span(vals: list[float], fmt: str, unit: str = "") -> str:
    lo, hi = fmt.format(min(vals)), fmt.format(max(vals))
    return f"{lo}{unit}" if lo == hi else f"{lo}-{hi}{unit}"


def _contract(s: Suite, ours: list[dict[str, Any]], contract_of: ContractOf | None) -> str:
    """The op's default contract; cases whose result is FP8 (an ``out_dtype`` row field) are close."""
    if contract_of is None:
        return ""
    if ours and all("float8" in str(r.get("out_dtype", "")) for r in ours):
        return "close (FP8 result)"
    return contract_of(s.data["op"], "sgl_diffusion")


def summary(
    bench_dir: Path,
    contract_of: ContractOf | None = None,
    link: str = "docs/benchmarks/README.md",
    domain: str | None = None,
) -> str:
    """One row per op benchmark: ours (the plain ``sgl_diffusion`` provider) over its cases; ``domain``:
    only that domain's ops (a package README's table), else every op (the repository README's)."""
    out = [
        "| op | domain | device | cases | % of copy | vs torch.compile | contract | host us per call |\n",
        "|---|---|---|---|---|---|---|---|\n",
    ]
    hosts: list[float] = []
    all_suites = [s for s in suites(bench_dir) if s.is_op and domain in (None, s.domain)]
    for s in all_suites:
        rows = [r for r in s.data["rows"] if "median_us" in r]
        ours = [r for r in rows if r["provider"] == "sgl_diffusion"]
        contract = _contract(s, ours, contract_of)
        if not ours or contract == "?":  # a pipeline (ext's bake) or an op the registry no longer has
            continue
        comp = {r["case"]: r["median_us"] for r in rows if r["provider"] == "torch.compile"}
        ratio = [comp[r["case"]] / r["median_us"] for r in ours if r["case"] in comp]
        host = [r["host_us_per_call"] for r in ours if r.get("host_us_per_call")]
        hosts += host
        dom, _, op = s.data["op"].partition(".")
        widths = " DiT widths" if s.name.endswith("_widths") else ""
        if isinstance(s.data.get("note"), str):  # the record carries a note a reader must see (benchmark page)
            widths += " (see the record's note)"
        # compute-bound ops (their rows carry FLOPs: GEMMs, attention) are rated in TFLOP/s, not against a copy
        if all(r.get("flops") for r in ours):
            rate = _span([r["flops"] / r["median_us"] / 1e6 for r in ours], "{:.0f}", " TFLOP/s")
        elif all(r.get("target_us") for r in ours):  # ops with a time target per case (ext): time, not bandwidth
            met = sum(r["median_us"] <= r["target_us"] for r in ours)
            times = _span([r["median_us"] / 1e3 for r in ours], "{:.2f}", " ms")
            rate = f"{times}, {met} of {len(ours)} within the H200 target"
        else:
            rate = _span([100 * r["frac_of_copy"] for r in ours], "{:.1f}", "%")
        out.append(
            f"| `{op}` | {dom} | {s.device.upper()} | {len(ours)}{widths} | {rate} "
            f"| {_span(ratio, '{:.2f}', 'x') if ratio else ''} "
            f"| {contract} "
            f"| {_span(host, '{:.0f}') if host else ''} |\n"
        )
    envs = environments(all_suites)
    rows = [r for s in all_suites for r in s.data["rows"] if r.get("provider") == "sgl_diffusion"]
    dtypes = sorted({r["dtype"] for r in rows if "float" in r["dtype"]})
    # what the rates mean: a clause per kind of rate the table holds
    kinds = []
    if any(r.get("flops") for r in rows):
        kinds.append("compute-bound ops: TFLOP/s")
    if any(r.get("target_us") for r in rows):
        kinds.append(
            "ops with a time target per case, the ext domain's: their time\n"
            "and how many cases meet the H200 design target"
        )
    head = (
        f"Measured on {envs}, {', '.join(dtypes)}, at each op's benchmark shapes\n"
        f'(per-case tables, git SHAs and plots: [`docs/benchmarks/`]({link})). "% of copy" is our\n'
        "bandwidth over a same-run device-to-device copy of the same bytes"
        + "".join(f";\n{k}" for k in kinds)
        + "; ranges run over the cases.\n"
    )
    if hosts:
        head += f"Host time per eager call: median {statistics.median(hosts):.0f} us over all cases.\n"
    return head + "\n" + "".join(out)


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
