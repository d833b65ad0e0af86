"""Helpers of the umbrella's tests: run Python in a fresh interpreter that sees this checkout."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGES = Path(__file__).resolve().parents[2]  # packages/


def _env() -> dict[str, str]:
    """The current environment, with every package's src/ of this checkout on PYTHONPATH.

    Installed distributions still win nothing: running from source or from an install
    both work, the checkout's sources are simply also importable.
    """
    env = dict(os.environ)
    srcs = [str(p) for p in sorted(PACKAGES.glob("*/src")) if p.is_dir()]
    old = env.get("PYTHONPATH")
    env["PYTHONPATH"] = os.pathsep.join(srcs + ([old] if old else []))
    return env


@pytest.fixture(scope="session")
def run_python():
    """``run_python(*args) -> CompletedProcess``: ``python *args`` in a fresh interpreter."""

    def run(*args: str, timeout: float = 120) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, *args], env=_env(), capture_output=True, text=True, timeout=timeout)

    return run
