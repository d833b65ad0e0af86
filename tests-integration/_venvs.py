"""Fresh virtual environments for the install scenarios (``test_fresh_venvs*.py``).

A :class:`Venv` is made with ``python -m venv`` in a temporary directory (no system site
packages, nothing of the development ``.venv``), gets torch (and Triton where asked) from
pip with the pins of ``tools/setup_env.sh``, and the family only from the wheels that
``tools/build_dists.py`` (what ``nox -s build`` runs) made: ``--no-index --find-links
<wheelhouse> --only-binary :all:``, so pip resolves the family against those wheels and
fetches nothing. Code runs in the venv's interpreter in a fresh process, from a directory
outside the repository, and reports back as one JSON line.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import textwrap
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
TOOLS = REPO / "tools"
if str(TOOLS) not in sys.path:
    sys.path.insert(0, str(TOOLS))

# Variables of the calling environment that must not leak into a fresh venv's processes.
_DROP = ("PYTHONPATH", "PYTHONHOME", "VIRTUAL_ENV", "TRITON_INTERPRET", "PYTHONSTARTUP", "SGL_PYTHON")


def pins() -> dict[str, str]:
    """``{"torch": "torch==2.13.0", "triton": "triton==3.9.0", "numpy": "numpy==..."}``: the pins of
    tools/setup_env.sh and tools/dev-requirements.txt (one source each)."""
    text = (TOOLS / "setup_env.sh").read_text()
    out = {}
    for key in ("TORCH", "TRITON"):
        m = re.search(rf'^{key}_PIN="([^"]+)"', text, re.MULTILINE)
        if m is None:
            raise RuntimeError(f"tools/setup_env.sh has no {key}_PIN=...")
        out[key.lower()] = m.group(1)
    m = re.search(r"^numpy==\S+", (TOOLS / "dev-requirements.txt").read_text(), re.MULTILINE)
    if m is None:
        raise RuntimeError("tools/dev-requirements.txt pins no numpy")
    out["numpy"] = m.group(0)
    return out


class CommandError(AssertionError):
    pass


class Venv:
    """One fresh virtual environment; ``log`` collects what ran and how long it took."""

    def __init__(self, path: Path, log: list[str]):
        self.path = path
        self.python = str(path / "bin" / "python")
        self.log = log
        self.workdir = path.parent / f"{path.name}-cwd"
        self.workdir.mkdir(exist_ok=True)

    @classmethod
    def create(cls, path: Path, *, triton: bool, log: list[str] | None = None) -> Venv:
        """``python -m venv`` + torch, and with ``triton=True`` Triton and numpy, at the pinned versions.

        numpy: Triton's interpreter (``TRITON_INTERPRET=1``, how the CPU runs Triton kernels)
        imports it, and the triton wheel does not declare it.
        """
        log = [] if log is None else log
        t0 = time.perf_counter()
        subprocess.run([sys.executable, "-m", "venv", str(path)], check=True, capture_output=True, timeout=300)
        venv = cls(path, log)
        p = pins()
        # --no-compile: byte-compiling torch's tree costs ~2/3 of the install; the few modules a
        # test imports are compiled on first import instead.
        venv.pip("install", "--no-compile", p["torch"], *([p["triton"], p["numpy"]] if triton else []))
        what = "torch + triton + numpy" if triton else "torch only"
        log.append(f"venv {path.name} ({what}): {time.perf_counter() - t0:.1f}s")
        return venv

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        env = {k: v for k, v in os.environ.items() if k not in _DROP}
        env["PATH"] = f"{self.path / 'bin'}{os.pathsep}{env.get('PATH', '')}"
        env["VIRTUAL_ENV"] = str(self.path)
        env.update(extra or {})
        return env

    def cmd(self, *args: str, check: bool = True, env: dict[str, str] | None = None,
            timeout: float = 900) -> subprocess.CompletedProcess[str]:  # fmt: skip
        proc = subprocess.run(
            list(args), capture_output=True, text=True, env=self.env(env), cwd=self.workdir, timeout=timeout
        )
        if check and proc.returncode != 0:
            shown = " ".join(a if len(a) < 200 else a[:60] + "...<script>" for a in args)
            raise CommandError(
                f"command failed ({proc.returncode}): {shown}\n--- stdout\n{proc.stdout[-4000:]}\n"
                f"--- stderr\n{proc.stderr[-4000:]}"
            )
        return proc

    def pip(self, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        return self.cmd(self.python, "-m", "pip", "--disable-pip-version-check", *args, check=check)

    def install_family(self, wheelhouse: Path, *reqs: str, no_deps: bool = False,
                       check: bool = True) -> subprocess.CompletedProcess[str]:  # fmt: skip
        """pip install ``reqs`` from the wheelhouse only (nothing fetched; torch must be there already)."""
        t0 = time.perf_counter()
        flags = ["--no-index", "--find-links", str(wheelhouse), "--only-binary", ":all:"]
        proc = self.pip("install", *flags, *(["--no-deps"] if no_deps else []), *reqs, check=check)
        shown = " ".join(Path(r).name if r.endswith(".whl") else r for r in reqs)
        self.log.append(f"  pip install {shown}: {time.perf_counter() - t0:.1f}s (rc {proc.returncode})")
        return proc

    def distributions(self) -> dict[str, str]:
        """Normalized name -> version of everything installed in the venv."""
        return self.run(
            """
            import importlib.metadata as md, json, re
            print(json.dumps({re.sub(r"[-_.]+", "-", d.metadata["Name"]).lower(): d.version
                              for d in md.distributions()}))
            """
        )

    def run(self, code: str, env: dict[str, str] | None = None, timeout: float = 600) -> object:
        """Run ``code`` in the venv's interpreter; return the JSON of the last line it prints."""
        t0 = time.perf_counter()
        proc = self.cmd(self.python, "-c", textwrap.dedent(code), env=env, timeout=timeout)
        self.log.append(f"  script: {time.perf_counter() - t0:.1f}s")
        lines = proc.stdout.strip().splitlines()
        if not lines:
            raise CommandError(f"the script printed nothing\n--- stderr\n{proc.stderr[-4000:]}")
        return json.loads(lines[-1])

    def remove(self) -> None:
        shutil.rmtree(self.path, ignore_errors=True)
        shutil.rmtree(self.workdir, ignore_errors=True)
