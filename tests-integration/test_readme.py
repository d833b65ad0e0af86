"""The README's install and quick-start blocks work as written: read from README.md itself (each
block follows a ``<!-- readme-test: NAME -->`` line), never copied here.

- ``build``: the commands exist and build into the ``dist/`` the install block reads from;
- ``install``: the torch pin is tools/setup_env.sh's; run in a fresh virtual environment
  (marked ``venv``: ``nox -s integration``, part of ci) from the wheels ``tools/build_dists.py``
  builds, offline (``dist/`` is that wheelhouse, ``--no-index``), then ``pip check``;
- ``published``: the install block without ``--find-links dist/``;
- ``quickstart``: runs on the CPU in this environment (``.venv``) and in that fresh venv.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

import build_dists
from _venvs import REPO, Venv, pins

BLOCK = re.compile(r"^<!-- readme-test: (?P<name>[\w-]+) -->\n```(?P<lang>\w+)\n(?P<body>.*?)^```$", re.M | re.S)
FIND_LINKS = ["--find-links", "dist/"]
# the quick start on the CPU: no GPU is visible, the Triton interpreter is off
CPU_ENV = {"CUDA_VISIBLE_DEVICES": "", "HIP_VISIBLE_DEVICES": ""}
CHOSE_TORCH = "norm.ln_modulate: would use 'torch'"


def blocks() -> dict[str, tuple[str, str]]:
    """``name -> (language, body)`` of every marked block of README.md."""
    found: dict[str, tuple[str, str]] = {}
    for m in BLOCK.finditer((REPO / "README.md").read_text()):
        assert m["name"] not in found, f"README.md marks two blocks readme-test: {m['name']}"
        found[m["name"]] = (m["lang"], m["body"])
    return found


def commands(name: str) -> list[list[str]]:
    """The shell commands of a bash block, one per line, comments dropped."""
    lang, body = blocks()[name]
    assert lang == "bash", f"README.md block {name} is {lang}, not bash"
    return [cmd for line in body.splitlines() if (cmd := shlex.split(line, comments=True))]


def test_the_readme_marks_its_blocks() -> None:
    assert {name: lang for name, (lang, _) in blocks().items()} == {
        "build": "bash",
        "install": "bash",
        "published": "bash",
        "quickstart": "python",
    }


def test_build_and_install_commands_agree_with_the_tools() -> None:
    build = commands("build")
    for cmd in build:
        for arg in cmd:
            if arg.startswith(("tools/", ".venv/")) and arg != ".venv/bin/python":
                assert (REPO / arg).is_file(), f"README build block: {arg} does not exist"
    assert [".venv/bin/python", "tools/build_dists.py"] in build
    assert build_dists.OUTDIR == REPO / "dist"  # where the install block's --find-links dist/ looks
    install = commands("install")
    assert all(cmd[:2] == ["pip", "install"] for cmd in install), install
    torch_lines = [cmd for cmd in install if any(a.startswith("torch") for a in cmd)]
    assert torch_lines and pins()["torch"] in torch_lines[0], f"the README's torch is not {pins()['torch']}"
    family = [cmd for cmd in install if cmd not in torch_lines]
    assert family and all(cmd[2:4] == FIND_LINKS for cmd in family), family
    published = commands("published")
    assert [cmd[:2] + FIND_LINKS + cmd[2:] for cmd in published] == family


def quickstart() -> str:
    lang, code = blocks()["quickstart"]
    assert lang == "python"
    return code


def test_quickstart_runs_on_the_cpu(tmp_path: Path) -> None:
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    env.update(CPU_ENV)
    proc = subprocess.run(
        [sys.executable, "-c", quickstart()], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=600
    )
    assert proc.returncode == 0, f"the README's quick start failed:\n{proc.stdout}\n{proc.stderr}"
    assert CHOSE_TORCH in proc.stdout


@pytest.mark.venv(triton=True)
def test_install_and_quickstart_in_a_fresh_venv(fresh_venv: Venv, wheelhouse: Path) -> None:
    """The install block as written, with dist/ the wheels of tools/build_dists.py and nothing
    fetched (the fresh venv holds the pinned torch, Triton and numpy already)."""
    for cmd in commands("install"):
        args = [str(wheelhouse) if a == "dist/" else a for a in cmd[2:]]
        fresh_venv.pip("install", "--no-index", *args)
    fresh_venv.pip("check")
    installed = fresh_venv.distributions()
    assert {"sgl-diffusion", "sgl-diffusion-norm", "sgl-diffusion-core", "numpy", "triton"} <= set(installed)
    assert CHOSE_TORCH in fresh_venv.cmd(fresh_venv.python, "-c", quickstart(), env=CPU_ENV).stdout
