"""Running code in a fresh interpreter, for the tests of tests-integration."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path


def run_fresh(code: str, tmp_path: Path, env: dict[str, str] | None = None, timeout: float = 300) -> dict:
    """Run ``code`` in a fresh interpreter (cwd outside the repo, ``TRITON_INTERPRET`` unset unless
    ``env`` sets it); it prints one JSON line last, which is returned."""
    full_env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=tmp_path,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert proc.returncode == 0, f"subprocess failed ({proc.returncode}):\n{proc.stdout}\n{proc.stderr}"
    return json.loads(proc.stdout.strip().splitlines()[-1])
