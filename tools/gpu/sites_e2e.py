"""End-to-end benchmark: sgl-diffusion-sites mounted on the FLUX.1-dev, Wan2.1-T2V-14B and HunyuanVideo
transformers.

What it measures, per model (random weights at the real config, bf16, batch 1, built on the device):
the time of one transformer forward (``torch.no_grad()``; CUDA events on a GPU, the host clock on a
CPU; the median and p20 / p80 of ``--reps`` calls after ``--warmup`` calls) for each variant, in order:

- ``eager``: the diffusers model as built.
- ``exact``: ``sgl_diffusion_sites.optimize(model, quality="exact")``. The first call verifies every
  site's gate (fused and eager both run, timed apart as ``first_call_s``); the output is checked
  ``torch.equal`` to eager's.
- ``close``: ``optimize(model, quality="close")``; max abs difference and PSNR against eager.
- ``fp8``: ``optimize(model, quality="fp8")``: close, and the blocks' linears as FP8 linears; PSNR and
  cosine against eager (random weights: the distance of a real checkpoint differs).
- ``torchao_fp8``: torchao's float8 dynamic row-wise quantization (``Float8DynamicActivationFloat8WeightConfig(
  granularity=PerRow())``) of the same linears (those ``optimize(quality="fp8")`` converts), unmounted
  model otherwise; ``compile_torchao_fp8`` compiles it regionally. torchao changes the model in place,
  so these two run last (after them the model stays quantized). torchao is a benchmark-only dependency.
- ``close_no_attention``: ``optimize(model, quality="close", attention=False)``: every site but attention;
  its step over ``close``'s is what the attention mount alone gains.
- ``sliding_tile`` (Wan), ``int8_attention``, ``fp8_attention``: close mode with ``attention=
  "sliding_tile"`` (``--window``), ``"int8"`` or ``"fp8"`` (``quantized_attention``); the timed calls are
  past the dense steps (none by default); compare with ``close``.

``eager``, ``close`` and ``close_no_attention`` on a GPU also record ``attention_share``: the share of
the step's GPU kernel time spent in attention kernels (one profiled call; kernels named like SDPA's,
cuDNN's, flash's or ours).
- ``compile``: the unmounted model, regionally compiled: diffusers' ``compile_repeated_blocks(
  fullgraph=True)`` (``torch.compile`` of every block class named in ``model._repeated_blocks``, in
  place). The first call (tracing + inductor) is timed apart as ``compile_s``.
- ``compile_exact`` / ``compile_close``: mount (``optimize(model, quality=..., under_compile=
  --under-compile)``), one eager call (verifies the gates), then ``torch._dynamo.reset()`` and the
  same regional compilation of the mounted blocks through ``sgl_diffusion_sites.compile_repeated_blocks(
  model, fullgraph=True)`` (diffusers' method finds blocks by exact class name and a mounted block is a
  ``Mounted<Class>`` subclass; the helper compiles the same modules with the same ``Module.compile``
  call). ``--under-compile`` (default ``auto``) is the mount's policy for what dynamo traces at a
  site: ``auto`` traces the elementwise modulations and gated residuals as their eager chains (inductor
  fuses them with the norms around them) and keeps RoPE / QK-norm / the one-pass norm + modulate as
  custom ops; ``fused`` keeps every verified op; ``eager`` traces the original modules. Each mounted
  variant records it (``under_compile``, and per site in ``mount.under_compile_sites``).
  ``compile_close`` runs only when listed.

Every variant is wrapped: an error is recorded (``status: error``) and the next variant runs.
Between variants the model is unmounted, its compiled call wrappers are dropped and dynamo is
reset. The JSON (environment header from ``sgl_diffusion_core.bench.environment``, then per model
its config, token counts, blocks and one record per variant) is rewritten after every variant,
so a run cut by a time limit keeps what finished. ``--budget-s`` skips variants (``status:
skipped``) that would not fit before that many seconds since start.

Weights: diffusers' default initialization on the device, then every parameter that is all zeros
is re-drawn from N(0, 0.02) (no gate or modulation is trivially zero), then a cast to bf16 that
keeps the model's ``_keep_in_fp32_modules`` in fp32 as ``from_pretrained(torch_dtype=bf16)`` does
(Wan keeps ``rope``, ``time_embedder``, ``scale_shift_table``, ``norm1/2/3``; ``--cast-all`` casts
everything as ``model.to(bf16)`` would).

Run on the device (one H200; one model per command keeps each inside a 10-minute limit):

    PYTHONPATH=/tmp/site:$(ls -d packages/*/src | tr '\\n' ':') python3 tools/gpu/sites_e2e.py \\
        --models flux --out $OUT/sites_e2e_flux.json
    PYTHONPATH=/tmp/site:$(ls -d packages/*/src | tr '\\n' ':') python3 tools/gpu/sites_e2e.py \\
        --models wan --wan-blocks 40 --out $OUT/sites_e2e_wan.json

(without ``--models`` both run, FLUX first: ``PYTHONPATH=... python3 tools/gpu/sites_e2e.py --out
$OUT/sites_e2e.json``). Locally: ``--tiny`` runs scaled-down configs (2 layers of each block kind,
head_dim 16, tens of tokens) on the CPU, where each op's default backend is its eager torch chain;
``--dry-run`` builds the real configs on the meta device and prints parameter counts, a memory
estimate and the mount plan, running nothing. ``--tiny --device cuda`` is a one-minute smoke test
of the script on the GPU. Tiny timings measure Python overhead, not the kernels.
"""

from __future__ import annotations

import argparse
import functools
import gc
import sys
import time
import traceback
import warnings
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the sibling modules, when run as a file
from _e2e_models import (  # noqa: E402
    ModelSpec,
    Results,
    attention_share,
    build,
    compare,
    dry_run,
    flux_spec,
    forward,
    hunyuan_spec,
    measure,
    sync,
    torchao_fp8,
    wall_call,
    wan_spec,
)

VARIANTS = (
    "eager",
    "exact",
    "close",
    "close_no_attention",
    "fp8",
    "compile",
    "compile_exact",
    "compile_close",
    "compile_fp8",
    "torchao_fp8",
    "compile_torchao_fp8",
    "sliding_tile",
    "int8_attention",
    "fp8_attention",
)
DEFAULT_VARIANTS = ("eager", "exact", "close", "compile", "compile_exact")
_T0 = time.perf_counter()


def log(msg: str) -> None:
    """One progress line, stamped with the seconds since start, flushed at once."""
    print(f"[{time.perf_counter() - _T0:7.1f}s] {msg}", flush=True)


# ---------------------------------------------------------------------------------------------- mount report
def mount_summary(report: Any) -> dict[str, Any]:
    """The counts of a ``MountReport``: by kind, gate states, skip reasons, op calls (fused / eager chain)."""
    d = report.to_dict()
    gates = Counter(s.gate_state() for s in report.mounted)
    unverified = [s.path or "<root>" for s in report.mounted if s.gate_state() in ("fallback", "mixed", "pending")]
    return {
        "quality": d["quality"],
        "backend": d["backend"],
        "under_compile": d["under_compile"],
        # what dynamo traces at the mounted sites: fused / partly / eager (the policy per op)
        "under_compile_sites": dict(Counter(s.under_compile() for s in report.mounted)),
        "mounted": d["mounted"],
        "skipped": d["skipped"],
        "by_kind": report.by_kind(),
        "gates": dict(gates),
        "not_verified": unverified[:40],
        "skipped_reasons": dict(Counter(f"{s.kind}: {s.reason}" for s in report.skipped)),
        "op_calls": d["op_calls"],
        "notes": d["notes"],
    }


def _print_mount(summary: dict[str, Any]) -> None:
    kinds = ", ".join(f"{k} {v['mounted']}/{v['mounted'] + v['skipped']}" for k, v in summary["by_kind"].items())
    log(f"  mounted {summary['mounted']}, skipped {summary['skipped']} ({kinds}); gates {summary['gates']}")
    log(f"  under_compile={summary['under_compile']}: sites {summary['under_compile_sites']}")
    if summary["not_verified"]:
        log(f"  NOT verified (fallback / mixed / pending): {summary['not_verified'][:8]}")
    calls = ", ".join(f"{op} {n['fused']}/{n['eager']}" for op, n in summary["op_calls"].items())
    if calls:
        log(f"  op calls fused/eager-chain: {calls}")
    for note in summary["notes"]:
        log(f"  note: {note}")


# ---------------------------------------------------------------------------------------------- compile
def regional_compile(model: torch.nn.Module, mounted: bool, mode: str | None) -> str:
    """``torch.compile(fullgraph=True)`` of every repeated block, in place; returns how it was done."""
    kw: dict[str, Any] = {"fullgraph": True}
    if mode:
        kw["mode"] = mode
    if not mounted:
        model.compile_repeated_blocks(**kw)
        return f"diffusers compile_repeated_blocks({kw})"
    import sgl_diffusion_sites as sites

    paths = sites.compile_repeated_blocks(model, **kw)
    return f"sgl_diffusion_sites.compile_repeated_blocks({kw}): {len(paths)} modules"


def uncompile(model: torch.nn.Module) -> None:
    """Drop every ``Module.compile`` wrapper: the ``compile`` variant compiles the original blocks in
    place (a mounted twin never inherits it: ``optimize`` notes such blocks and mounts them uncompiled,
    and ``unmount`` drops the compiled twins)."""
    for m in model.modules():
        m.__dict__.pop("_compiled_call_impl", None)


def dynamo_stats() -> dict[str, Any]:
    """Graphs, graph breaks and inductor cache hits dynamo counted since the last reset (a recompile
    shows as more unique graphs than block kinds)."""
    from torch._dynamo.utils import counters

    return {
        "unique_graphs": int(counters["stats"].get("unique_graphs", 0)),
        "calls_captured": int(counters["stats"].get("calls_captured", 0)),
        "graph_breaks": int(sum(counters["graph_break"].values())),
        "fxgraph_cache_hit": int(counters["inductor"].get("fxgraph_cache_hit", 0)),
        "fxgraph_cache_miss": int(counters["inductor"].get("fxgraph_cache_miss", 0)),
    }


def sgl_ops_in_call(model: torch.nn.Module, kw: dict[str, Any]) -> dict[str, int]:
    """The ``sgl_diffusion::`` custom ops one forward runs (host profiler). A compiled graph calls the
    fused ops as custom ops, so this shows that a compiled mounted model runs them; an eager mounted
    model launches them directly (see the report's ``op_calls`` instead)."""
    from torch.profiler import ProfilerActivity, profile

    with profile(activities=[ProfilerActivity.CPU]) as prof:
        forward(model, kw)
    return {e.key: int(e.count) for e in prof.key_averages() if e.key.startswith("sgl_diffusion::")}


def reset_dynamo() -> None:
    import torch._dynamo
    from torch._dynamo.utils import counters

    torch._dynamo.reset()
    counters.clear()


# ---------------------------------------------------------------------------------------------- variants
@dataclass
class Bench:
    """What every variant of one model needs."""

    model: torch.nn.Module
    kw: dict[str, Any]
    ref: torch.Tensor
    device: torch.device
    reps: int
    warmup: int
    compile_mode: str | None
    under_compile: str = "auto"
    window: tuple[int, int, int] = (3, 3, 5)


def run_eager(b: Bench) -> dict[str, Any]:
    timing, out = measure(b.model, b.kw, b.device, b.reps, b.warmup)
    return {**timing, **compare(out, b.ref), "attention_share": attention_share(b.model, b.kw, b.device)}


def _mounted(b: Bench, quality: str, attention: bool | str = True, **extra: Any) -> dict[str, Any]:
    import sgl_diffusion_sites as sites

    report = sites.optimize(b.model, quality=quality, under_compile=b.under_compile, attention=attention, **extra)
    if not report.mounted:
        raise RuntimeError(f"nothing mounted: {report.notes}")
    first, first_s = wall_call(b.model, b.kw, b.device)  # exact: verifies every gate
    timing, out = measure(b.model, b.kw, b.device, b.reps, b.warmup)
    summary = mount_summary(report)
    _print_mount(summary)
    rec = {**timing, "first_call_s": round(first_s, 3), **compare(out, b.ref), "mount": summary}
    if quality in ("close", "fp8"):
        rec["attention_share"] = attention_share(b.model, b.kw, b.device)
    rec["equal_first_call"] = bool(torch.equal(first, b.ref))
    return rec


# variants that are one mount of the model: name -> (quality, optimize's other arguments)
MOUNTED = {
    "exact": ("exact", {}),
    "close": ("close", {}),
    "close_no_attention": ("close", {"attention": False}),
    "fp8": ("fp8", {}),
    "int8_attention": ("close", {"attention": "int8"}),  # every mounted attention as quantized_attention
    "fp8_attention": ("close", {"attention": "fp8"}),  # ... with qk="fp8", pv="fp8"
}


def run_sliding_tile(b: Bench) -> dict[str, Any]:
    """Close mode with Wan's video self-attention block-sparse (4 x 4 x 4 tiles, ``--window``), the timed
    step past the dense steps; compare with ``close`` (the same mount, dense attention)."""
    return _mounted(b, "close", attention="sliding_tile", window=b.window)


def run_torchao_fp8(b: Bench) -> dict[str, Any]:
    info = torchao_fp8(b.model)
    timing, out = measure(b.model, b.kw, b.device, b.reps, b.warmup)
    return {**timing, **compare(out, b.ref), "torchao": info}


def run_compile_torchao_fp8(b: Bench) -> dict[str, Any]:
    info = torchao_fp8(b.model)
    return {**_compiled(b, None), "torchao": info}


def _compiled(b: Bench, quality: str | None) -> dict[str, Any]:
    import sgl_diffusion_sites as sites

    rec: dict[str, Any] = {}
    report = None
    if quality is not None:
        report = sites.optimize(b.model, quality=quality, under_compile=b.under_compile)
        if not report.mounted:
            raise RuntimeError(f"nothing mounted: {report.notes}")
        rec["under_compile"] = b.under_compile
        _, verify_s = wall_call(b.model, b.kw, b.device)  # eager: verifies every gate before tracing
        rec["eager_verify_call_s"] = round(verify_s, 3)
    reset_dynamo()
    rec["compile_method"] = regional_compile(b.model, mounted=quality is not None, mode=b.compile_mode)
    first, compile_s = wall_call(b.model, b.kw, b.device)
    rec["compile_s"] = round(compile_s, 3)
    log(f"  compiled (first call) in {compile_s:.1f} s")
    timing, out = measure(b.model, b.kw, b.device, b.reps, b.warmup)
    rec.update(timing)
    rec.update(compare(out, b.ref))
    rec["equal_first_call"] = bool(torch.equal(first, b.ref))
    rec["dynamo"] = dynamo_stats()
    rec["sgl_ops_per_call"] = sgl_ops_in_call(b.model, b.kw)
    log(f"  dynamo: {rec['dynamo']}; sgl_diffusion custom ops in one call: {rec['sgl_ops_per_call']}")
    if report is not None:
        rec["mount"] = mount_summary(report)
        _print_mount(rec["mount"])
    return rec


def run_compile(b: Bench) -> dict[str, Any]:
    return _compiled(b, None)


def run_compile_exact(b: Bench) -> dict[str, Any]:
    return _compiled(b, "exact")


def run_compile_close(b: Bench) -> dict[str, Any]:
    return _compiled(b, "close")


def run_compile_fp8(b: Bench) -> dict[str, Any]:
    return _compiled(b, "fp8")


RUNNERS: dict[str, Callable[[Bench], dict[str, Any]]] = {
    "eager": run_eager,
    **{v: functools.partial(lambda b, q, kw: _mounted(b, q, **kw), q=q, kw=kw) for v, (q, kw) in MOUNTED.items()},
    "compile": run_compile,
    "compile_exact": run_compile_exact,
    "compile_close": run_compile_close,
    "compile_fp8": run_compile_fp8,
    "torchao_fp8": run_torchao_fp8,
    "compile_torchao_fp8": run_compile_torchao_fp8,
    "sliding_tile": run_sliding_tile,
}


def restore(model: torch.nn.Module, device: torch.device) -> None:
    """Back to the plain eager model: unmounted, uncompiled, dynamo reset, memory released."""
    import sgl_diffusion_sites as sites

    sites.unmount(model)
    uncompile(model)
    reset_dynamo()
    free(device)


def free(device: torch.device) -> None:
    gc.collect()
    if device.type == "cuda":
        torch.cuda.empty_cache()


# ---------------------------------------------------------------------------------------------- driver
def _estimate_s(variant: str, eager_ms: float | None, reps: int, warmup: int, compile_guess_s: float) -> float:
    """A rough cost of a variant, to skip it rather than be cut by a wall-clock limit mid-way."""
    call_s = (eager_ms or 0.0) / 1e3
    calls = reps + warmup + (3 if variant in ("exact", "compile_exact") else 1)  # exact's first call runs both
    calls += 1 if variant.startswith("compile") else 0  # the profiled call
    return calls * call_s + (compile_guess_s if variant.startswith("compile") else 0.0)


def eager_reference(
    model: torch.nn.Module, kw: dict[str, Any], device: torch.device, rec: dict[str, Any]
) -> tuple[torch.Tensor, float]:
    """The reference: eager, twice (warms the eager path and checks it is bit-repeatable). Records
    both call times, the repeatability and the output's statistics in ``rec``; returns (reference
    output, seconds of the second call)."""
    ref, first_s = wall_call(model, kw, device)
    ref2, second_s = wall_call(model, kw, device)
    rec["eager_first_call_s"] = round(first_s, 3)
    rec["eager_second_call_s"] = round(second_s, 3)
    rec["eager_repeatable"] = bool(torch.equal(ref, ref2))
    rec["output"] = {
        "shape": list(ref.shape),
        "finite": bool(torch.isfinite(ref).all()),
        "std": float(ref.float().std()),
        "absmax": float(ref.float().abs().max()),
    }
    del ref2
    log(f"  eager reference: {first_s:.2f} s, then {second_s:.2f} s; bit-repeatable {rec['eager_repeatable']}")
    log(f"  output {rec['output']}")
    if device.type == "cuda":
        rec["mem_after_ref_gb"] = round(torch.cuda.max_memory_allocated(device) / 2**30, 2)
    return ref, second_s


def run_variant(v: str, b: Bench) -> dict[str, Any]:
    """One variant, wrapped: its record (``status`` ok or error, with the traceback), then the model
    restored to plain eager, the warnings it raised, its wall time and (CUDA) its peak memory."""
    if b.device.type == "cuda":
        torch.cuda.reset_peak_memory_stats(b.device)
    t_v = time.perf_counter()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        try:
            vr = {"status": "ok", **RUNNERS[v](b)}
        except Exception as exc:
            vr = {"status": "error", "error": f"{type(exc).__name__}: {exc}"[:2000]}
            vr["traceback"] = traceback.format_exc()[-4000:]
            log(f"  ERROR {vr['error'][:500]}")
        finally:
            try:
                restore(b.model, b.device)
            except Exception as exc:  # recorded: the next variant would be suspect
                vr["restore_error"] = f"{type(exc).__name__}: {exc}"
                log(f"  ERROR while restoring the model: {vr['restore_error']}")
    msgs = sorted({f"{w.category.__name__}: {w.message}"[:1000] for w in caught})
    if msgs:  # e.g. a FusionFallbackWarning naming a site whose fused path was not bit-exact
        vr["warnings"] = msgs[:20]
        for m in msgs[:5]:
            log(f"  warning: {m[:300]}")
    vr["wall_s"] = round(time.perf_counter() - t_v, 2)
    if b.device.type == "cuda":
        vr["peak_mem_gb"] = round(torch.cuda.max_memory_allocated(b.device) / 2**30, 2)
    return vr


def bench_model(spec: ModelSpec, args: argparse.Namespace, device: torch.device, results: Results) -> None:
    """One model: build it, take the eager reference, then run every variant of ``args.variants``
    that fits the budget; the JSON is rewritten after each step."""
    dtype = torch.bfloat16
    reps = args.reps if args.reps is not None else spec.reps
    rec: dict[str, Any] = {
        "class": spec.cls_name,
        "config": {k: list(v) if isinstance(v, tuple) else v for k, v in spec.config.items()},
        "tokens": spec.tokens,
        "blocks": spec.blocks,
        "batch": 1,
        "dtype": "bfloat16",
        "notes": list(spec.notes),
        "variants": {},
    }
    results.data["models"][spec.key] = rec
    log(f"== {spec.key}: {spec.cls_name} tokens {spec.tokens} blocks {spec.blocks}")
    t0 = time.perf_counter()
    model, info = build(spec, device, dtype, args.cast_all)
    kw = spec.make_inputs(device, dtype)
    sync(device)
    rec.update(info)
    rec["build_s"] = round(time.perf_counter() - t0, 2)
    log(f"  built: {info['params'] / 1e9:.3f} B params, {info['weights_gb']} GiB weights, {rec['build_s']} s")
    log(f"  re-drawn all-zero params: {info['redrawn_zero_params']}; kept fp32: {info['kept_fp32']}")
    results.write()

    ref, second_s = eager_reference(model, kw, device, rec)
    results.write()

    b = Bench(model, kw, ref, device, reps, args.warmup, args.compile_mode, args.under_compile, args.window)
    eager_ms: float | None = None
    compile_guess_s = 120.0 if device.type == "cuda" else 60.0
    for v in args.variants:
        est = _estimate_s(v, eager_ms if eager_ms is not None else second_s * 1e3, reps, args.warmup, compile_guess_s)
        elapsed = time.perf_counter() - _T0
        if args.budget_s and elapsed + est > args.budget_s:
            rec["variants"][v] = {"status": "skipped", "reason": f"budget: {elapsed:.0f} s + ~{est:.0f} s est."}
            log(f"-- {spec.key}/{v}: skipped ({rec['variants'][v]['reason']} > --budget-s {args.budget_s})")
            results.write()
            continue
        log(f"-- {spec.key}/{v} (est. {est:.0f} s)")
        vr = run_variant(v, b)
        if v == "eager" and vr["status"] == "ok":
            eager_ms = vr["median_ms"]
        if vr["status"] == "ok" and "compile_s" in vr:  # the next compile costs about as much
            compile_guess_s = max(30.0, 1.2 * vr["compile_s"])
        if vr.get("median_ms") is not None and eager_ms:
            vr["speedup_vs_eager"] = round(eager_ms / vr["median_ms"], 4)
        rec["variants"][v] = vr
        if vr["status"] == "ok":
            acc = f"equal {vr.get('equal')}, psnr {vr.get('psnr_db')}, max|d| {vr.get('max_abs_diff')}"
            log(
                f"  {v}: {vr['median_ms']:.2f} ms (p20 {vr['p20_ms']:.2f}, p80 {vr['p80_ms']:.2f}), "
                f"x{vr.get('speedup_vs_eager', float('nan')):.3f} vs eager; {acc}; {vr['wall_s']} s"
            )
        results.write()
    del b, model, kw, ref
    free(device)


def print_table(data: dict[str, Any]) -> None:
    rows = [("model", "variant", "status", "median ms", "speedup", "equal", "psnr dB", "compile s", "gates")]
    for key, m in data["models"].items():
        for v, r in m.get("variants", {}).items():
            gates = r.get("mount", {}).get("gates", {})
            rows.append(
                (
                    key,
                    v,
                    r.get("status", "?"),
                    f"{r['median_ms']:.2f}" if "median_ms" in r else "-",
                    f"{r['speedup_vs_eager']:.3f}" if "speedup_vs_eager" in r else "-",
                    str(r.get("equal", "-")),
                    "inf" if r.get("status") == "ok" and r.get("equal") else str(r.get("psnr_db", "-")),
                    f"{r['compile_s']:.1f}" if "compile_s" in r else "-",
                    " ".join(f"{k}:{n}" for k, n in gates.items()) or "-",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    print("\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows), flush=True)


# ---------------------------------------------------------------------------------------------- main
def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--models", default="flux,wan", help="comma list of flux, wan, hunyuan (default: flux,wan)")
    p.add_argument("--wan-blocks", type=int, default=None, help="build Wan with its first N blocks (default: all)")
    p.add_argument("--wan-res", default="480p", choices=("480p", "720p"), help="Wan's video size (default 480p)")
    p.add_argument("--window", default="3,3,5", help="sliding_tile's window in tiles per axis (default 3,3,5)")
    p.add_argument("--hunyuan-blocks", default="2,4", help="HunyuanVideo's double,single blocks (default 2,4)")
    p.add_argument("--reps", type=int, default=None, help="timed calls per variant (default: FLUX 5, Wan 3)")
    p.add_argument("--warmup", type=int, default=1, help="untimed calls before the timed ones (default 1)")
    p.add_argument("--variants", default=",".join(DEFAULT_VARIANTS), help=f"comma list of {', '.join(VARIANTS)}")
    p.add_argument("--out", type=Path, default=None, help="JSON path, rewritten after every variant")
    p.add_argument("--tiny", action="store_true", help="tiny configs (CPU test of the script itself)")
    p.add_argument("--dry-run", action="store_true", help="meta device only: params, memory, mount plan")
    p.add_argument("--device", default=None, help="default: cuda when available, else cpu")
    p.add_argument("--budget-s", type=float, default=540.0, help="skip variants past this many s (0: never)")
    p.add_argument("--compile-mode", default=None, help="torch.compile mode (default: None, the default mode)")
    p.add_argument("--cast-all", action="store_true", help="cast every tensor to bf16 (no _keep_in_fp32_modules)")
    p.add_argument(
        "--under-compile",
        default="auto",
        choices=("auto", "fused", "eager"),
        help="optimize(under_compile=...) of the mounted variants: what dynamo traces at a site (default auto)",
    )
    args = p.parse_args(argv)
    args.models = [m.strip() for m in args.models.split(",") if m.strip()]
    # torchao quantizes the model in place: its variants run last
    args.variants = sorted((v.strip() for v in args.variants.split(",") if v.strip()), key=lambda v: "torchao" in v)
    bad = [m for m in args.models if m not in MODELS] + [v for v in args.variants if v not in VARIANTS]
    if bad:
        p.error(f"unknown model or variant: {bad}")
    window = args.window.split(",")
    if len(window) != 3 or not all(n.strip().isdigit() for n in window):
        p.error(f"--window takes T,H,W (three integers), got {args.window!r}")
    args.window = tuple(int(n) for n in window)
    try:
        args.hunyuan_blocks = tuple(int(n) for n in args.hunyuan_blocks.split(","))
    except ValueError:
        p.error(f"--hunyuan-blocks takes D,S (two integers), got {args.hunyuan_blocks!r}")
    if len(args.hunyuan_blocks) != 2:
        p.error(f"--hunyuan-blocks takes D,S (two integers), got {args.hunyuan_blocks!r}")
    return args


MODELS: dict[str, Callable[[argparse.Namespace], ModelSpec]] = {
    "flux": lambda a: flux_spec(a.tiny),
    "wan": lambda a: wan_spec(a.tiny, a.wan_blocks, a.wan_res),
    "hunyuan": lambda a: hunyuan_spec(a.tiny, a.hunyuan_blocks),
}


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    specs = [MODELS[m](args) for m in args.models]
    if args.dry_run:
        dry_run(specs, args.cast_all)
        return 0
    from sgl_diffusion_core import bench

    device = torch.device(args.device or ("cuda" if torch.cuda.is_available() else "cpu"))
    import diffusers

    header = {
        "benchmark": "sites_e2e",
        "env": {**bench.environment(device), "diffusers": diffusers.__version__},
        "args": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(args).items()},
    }
    log(f"env: {header['env']}")
    results = Results(args.out, header)
    results.write()
    for spec in specs:
        try:
            bench_model(spec, args, device, results)
        except Exception as exc:  # a model that cannot be built or run: recorded, the next one runs
            results.data["models"].setdefault(spec.key, {})["error"] = f"{type(exc).__name__}: {exc}"[:2000]
            log(f"ERROR {spec.key}: {type(exc).__name__}: {exc}")
            traceback.print_exc()
            free(device)
        results.write()
    print_table(results.data)
    if args.out:
        log(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
