"""The GPU sweep tools run their configurations on the CPU (interpreter), so they cannot drift.

``tools/gpu/vae_norm_sweep.py`` and ``tools/gpu/exact_norm_sweep.py`` build launch configurations
from the kernels' config classes and tuning keys, and only ever ran on a GPU machine: twice a
session shipped a sweep that raised at its first GPU call (a config field that had been removed,
a loop variable shadowing the sweep's tensors). These tests run each tool's configuration
builder and every configuration's launch in a subprocess under ``TRITON_INTERPRET=1``, with the
bench shapes shrunk to a few positions (one case of each op of the VAE sweep: about 30 s in all).
Times mean nothing there; what must hold is that every configuration builds and launches, and
(``vae_norm_sweep``) that every output passes the tool's own tolerance check.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from _fresh import run_fresh

ROOT = Path(__file__).resolve().parents[1]
# the tools import each other by module name (tools/gpu on the path), as on the device machine
ENV = {
    "TRITON_INTERPRET": "1",
    "PYTHONPATH": os.pathsep.join([str(ROOT / "tools" / "gpu"), os.environ.get("PYTHONPATH", "")]),
}


def test_vae_norm_sweep_configs_run(tmp_path):
    """Every configuration the VAE-norm sweep builds for one channels_last and one contiguous case of
    each op launches and passes the sweep's tolerance check (exit status 0, nothing failed)."""
    out = tmp_path / "sweep.json"
    code = f"""
        import contextlib, io, json, torch
        from sgl_diffusion_core import resolve_target
        gs = resolve_target("sgl_diffusion_norm.group_norm_silu_bench:SHAPES")
        for k, (shape, cl, G) in list(gs.items()):
            gs[k] = ((1, shape[1], 1, 2, 3) if len(shape) == 5 else (1, shape[1], 2, 3), cl, G)
        cs = resolve_target("sgl_diffusion_norm.channel_rms_norm_bench:SHAPES")
        for k, (shape, cl) in list(cs.items()):
            cs[k] = ((1, shape[1], 1, 2, 3) if len(shape) == 5 else (1, shape[1], 2, 3), cl)
        import vae_norm_sweep
        log = io.StringIO()
        with contextlib.redirect_stdout(log):
            rc = vae_norm_sweep.main({str(out)!r}, torch.device("cpu"),
                                     {{"group_norm_silu/c96-cl", "channel_rms_norm/c96"}})
        # bench.sweep's line for a configuration that did not launch
        print(json.dumps({{"rc": rc, "not_launched": [l for l in log.getvalue().splitlines() if ": failed " in l]}}))
    """
    res = run_fresh(code, tmp_path, env=ENV)
    assert res == {"rc": 0, "not_launched": []}, res
    record = json.loads(out.read_text())
    assert not record["failed"], record["failed"]
    assert {r["case"] for r in record["rows"]} == {"group_norm_silu/c96-cl", "channel_rms_norm/c96"}
    assert len(record["rows"]) >= 20


def test_exact_norm_sweep_configs_run(tmp_path):
    """Every tuning the exact row-norm sweep passes to the kernel is accepted and launches, for each
    of its ops (on the CPU the kernel does not reproduce eager's order, so the sweep's bit check
    is not asserted here: the GPU lane owns it)."""
    code = """
        import contextlib, io, json, torch
        from sgl_diffusion_core import resolve_target
        shapes = resolve_target("sgl_diffusion_norm.row_norm_bench:SHAPES")
        for k in list(shapes):
            shapes[k] = (1, 3, 520)
        import exact_norm_sweep
        launched, log = {}, io.StringIO()
        with contextlib.redirect_stdout(log):
            for op in exact_norm_sweep.OPS:
                rows = exact_norm_sweep._sweep(op, "flux", torch.device("cpu"))
                launched[op] = [len(rows), len(exact_norm_sweep._configs(op, 520))]
        print(json.dumps({"launched": launched,
                          "not_launched": [l for l in log.getvalue().splitlines() if ": failed " in l]}))
    """
    res = run_fresh(code, tmp_path, env=ENV)
    assert not res["not_launched"], res["not_launched"]
    assert len(res["launched"]) == 4, res
    for op, (rows, configs) in res["launched"].items():
        assert rows == configs > 0, (op, rows, configs)
