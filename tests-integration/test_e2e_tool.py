"""tools/gpu/sites_e2e.py on the CPU with its tiny configs: the script runs end to end (a smoke test of the
tool itself; its timings there measure Python, not kernels)."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import _venvs  # noqa: F401  (puts tools/ on sys.path)
import workspace

pytest.importorskip("diffusers", reason="the e2e tool builds diffusers models")


def test_tiny_wan_with_sliding_tile(tmp_path) -> None:
    out = tmp_path / "e2e.json"
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env["PYTHONPATH"] = os.pathsep.join(str(p / "src") for p in sorted((workspace.ROOT / "packages").iterdir()))
    proc = subprocess.run(
        [
            sys.executable,
            str(workspace.ROOT / "tools" / "gpu" / "sites_e2e.py"),
            "--tiny",
            "--device",
            "cpu",
            "--models",
            "wan",
            "--variants",
            "eager,close,sliding_tile,int8_attention,fp8_attention",
            "--window",
            "1,1,1",
            "--budget-s",
            "0",
            "--out",
            str(out),
        ],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    variants = json.loads(out.read_text())["models"]["wan"]["variants"]
    assert {v: r["status"] for v, r in variants.items()} == {
        "eager": "ok",
        "close": "ok",
        "sliding_tile": "ok",
        "int8_attention": "ok",
        "fp8_attention": "ok",
    }
    assert variants["sliding_tile"]["psnr_db"] > 30
    assert variants["int8_attention"]["psnr_db"] > 25 and variants["fp8_attention"]["psnr_db"] > 25


def test_window_is_three_integers() -> None:
    proc = subprocess.run(
        [sys.executable, str(workspace.ROOT / "tools" / "gpu" / "sites_e2e.py"), "--tiny", "--window", "3,3"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 2 and "--window takes T,H,W" in proc.stderr
