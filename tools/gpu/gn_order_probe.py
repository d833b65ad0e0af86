"""Do the L2 hints and the apply pass's program order move ``group_norm_silu`` (GPU probe, session 18)?

The op reads x twice: the statistics pass, then the apply pass. Two things are probed, each on a copy of the
library's kernel module (``group_norm_silu_triton``) with one textual change, loaded as its own module, so
the kernels' code is otherwise the library's:

* the ``evict_first`` hint on the streaming loads of x (session 17: dropping it from channel_rms_norm's held
  slab gained 2-3 points), removed from the statistics kernels' loads, the apply kernels' loads, or both;
* the apply pass walked last program first (``pid -> num_programs - 1 - pid``): the statistics pass ends on
  the highest addresses of x, which are still in L2 (50 MB on the H200) when the apply pass starts, so an
  apply pass that starts there reads up to L2's size of x from L2 instead of DRAM (at most ~2% of the
  two-pass bytes at the bench shapes); with ``evict_last`` on the statistics loads as a further variant.

Every variant's output is checked against the op's reference with the triton spec's tolerance and timed with
CUDA events, L2 flushed before each call (``bench.time_gpu``), against the public op (first, middle, last)
and a same-run copy of the two-pass bytes (3 x: the benches' model). Each variant runs twice, in turn.
Usage: ``python3 tools/gpu/gn_order_probe.py OUT.json [CASE ...]`` (group_norm_silu bench cases; default
c192-cl c96-cl c384-cl c192 c384). One JSON per case, ``OUT_<case>.json``.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import sys
import tempfile

import torch

import sgl_diffusion_norm as norm
from sgl_diffusion_core import REGISTRY, bench, resolve_target, testing

_MOD = "sgl_diffusion_norm.group_norm_silu_triton"
SHAPES = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:SHAPES")
make_inputs = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:make_inputs")
describe = resolve_target("sgl_diffusion_norm.group_norm_silu_api:describe_group_norm_silu")
EPS = 1e-6

STATS_LOADS = ("_gn_stats_kernel", "_gn_rows_tile", "_gn_span_tile")
APPLY_LOADS = ("_gn_apply_kernel", "_gn_cols_load", "_gn_apply_load")
APPLY_KERNELS = ("_gn_apply_kernel", "_gn_apply_flat_kernel", "_gn_apply_rows_kernel")
_PID = "pid = tl.program_id(0).to(tl.int64)"
_PID_REV = "pid = (tl.num_programs(0) - 1 - tl.program_id(0)).to(tl.int64)"


def _edit(src: str, funcs: tuple[str, ...], old: str, new: str) -> str:
    """``src`` with ``old`` replaced by ``new`` inside each function of ``funcs`` (each must hold it)."""
    for name in funcs:
        start = src.index(f"\ndef {name}(")
        nxt = re.search(r"\n(@triton\.jit|def |class |# )", src[start + 1 :])
        end = start + 1 + nxt.start() if nxt else len(src)
        body = src[start:end]
        if old not in body:
            raise SystemExit(f"probe out of date: {name} has no {old!r}")
        src = src[:start] + body.replace(old, new) + src[end:]
    return src


# label -> edits: (functions, old, new)
VARIANTS: dict[str, list[tuple[tuple[str, ...], str, str]]] = {
    "control (library code)": [],
    "stats -evict_first": [(STATS_LOADS, 'eviction_policy="evict_first"', 'eviction_policy=""')],
    "apply -evict_first": [(APPLY_LOADS, 'eviction_policy="evict_first"', 'eviction_policy=""')],
    "both -evict_first": [(STATS_LOADS + APPLY_LOADS, 'eviction_policy="evict_first"', 'eviction_policy=""')],
    "apply reversed": [(APPLY_KERNELS, _PID, _PID_REV)],
    "apply reversed, both -evict_first": [
        (APPLY_KERNELS, _PID, _PID_REV),
        (STATS_LOADS + APPLY_LOADS, 'eviction_policy="evict_first"', 'eviction_policy=""'),
    ],
    "apply reversed, stats evict_last, apply -evict_first": [
        (APPLY_KERNELS, _PID, _PID_REV),
        (STATS_LOADS, 'eviction_policy="evict_first"', 'eviction_policy="evict_last"'),
        (APPLY_LOADS, 'eviction_policy="evict_first"', 'eviction_policy=""'),
    ],
}


def load_variants() -> dict[str, object]:
    """Each variant's module: the library file, edited, written to a temporary file (Triton reads a
    kernel's source from its file) and imported inside the package (its relative imports resolve)."""
    path = importlib.util.find_spec(_MOD).origin
    with open(path) as f:
        src = f.read()
    tmp = tempfile.mkdtemp(prefix="gn_order_probe_")
    mods = {}
    for k, (label, edits) in enumerate(VARIANTS.items()):
        text = src
        for funcs, old, new in edits:
            text = _edit(text, funcs, old, new)
        file = os.path.join(tmp, f"_gn_probe_{k}.py")
        with open(file, "w") as f:
            f.write(text)
        name = f"sgl_diffusion_norm._gn_probe_{k}"
        spec = importlib.util.spec_from_file_location(name, file)
        mod = importlib.util.module_from_spec(spec)
        sys.modules[name] = mod
        spec.loader.exec_module(mod)
        mods[label] = mod
    return mods


def measure(path: str, case: str, mods: dict[str, object]) -> None:
    device = torch.device("cuda")
    shape, cl, G = SHAPES[case]
    x, w, b = make_inputs(shape, cl, torch.bfloat16, device)
    spec = next(s for s in REGISTRY.specs("norm.group_norm_silu") if s.backend == "triton")
    atol, rtol = spec.contract.tolerance(x.dtype)
    ref = norm.group_norm_silu_reference(x, G, w, b, eps=EPS)
    geom = describe(x, G, w, b).info["geom"]
    nbytes = 3 * bench.tensor_bytes(x)
    _, copy_gbps = bench.copy_bandwidth(nbytes, device)
    rows = []

    def record(label: str, fn) -> None:
        try:
            out = fn()
            note = None
            try:
                testing.assert_close(out, ref, atol=atol, rtol=rtol)
                if out.stride() != ref.stride():
                    note = f"MISMATCH: strides {out.stride()} != {ref.stride()}"
            except AssertionError as e:
                note = f"MISMATCH: {str(e)[:200]}"
            t = bench.time_gpu(fn, device)
        except Exception as e:  # a build that fails: recorded, not fatal
            rows.append({"label": label, "note": f"FAILED: {type(e).__name__}: {str(e)[:300]}"})
            print(f"{case} {label:56s} FAILED {type(e).__name__}: {str(e)[:300]}", flush=True)
            return
        frac = t.gbps(nbytes) / copy_gbps
        rows.append(
            {
                "label": label,
                "median_us": t.median_ms * 1e3,
                "p20_us": t.p20_ms * 1e3,
                "p80_us": t.p80_ms * 1e3,
                "frac_of_copy": frac,
                "note": note,
            }
        )
        print(
            f"{case} {label:56s} {t.median_ms * 1e3:8.1f} us {100 * frac:5.1f}% of the two-pass bound {note or ''}",
            flush=True,
        )
        with open(path, "w") as f:
            json.dump(
                {
                    "env": bench.environment(device),
                    "case": case,
                    "shape": list(shape),
                    "channels_last": cl,
                    "groups": G,
                    "bytes": nbytes,
                    "copy_gbps": copy_gbps,
                    "rows": rows,
                },
                f,
                indent=1,
            )

    def public():
        return norm.group_norm_silu(x, G, w, b, eps=EPS)

    runners = []
    for label, mod in mods.items():
        run = mod.prepare(geom, x, w, b)
        runners.append((label, lambda run=run: run(x, w, b, G, EPS, True)))
    record("public op (first)", public)
    for rnd in (1, 2):
        for label, fn in runners:
            record(f"{label} #{rnd}", fn)
        if rnd == 1:
            record("public op (middle)", public)
    record("public op (last)", public)


if __name__ == "__main__":
    out = sys.argv[1] if len(sys.argv) > 1 else "gn_order_probe.json"
    modules = load_variants()
    for case in sys.argv[2:] or ["c192-cl", "c96-cl", "c384-cl", "c192", "c384"]:
        measure(out.replace(".json", f"_{case}.json"), case, modules)
