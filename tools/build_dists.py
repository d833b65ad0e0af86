#!/usr/bin/env python3
"""Build the wheel and sdist of every package of the family, then check them.

    python tools/build_dists.py [--outdir dist] [PACKAGE ...]     (nox -s build runs this)

PACKAGE: distribution, import or short name (default: every package under packages/).
The output directory is emptied first. Each package is built with ``python -m build
--no-isolation`` (the hatchling of the running environment; an isolated build would make
pip fetch the build backend for every package), then every artifact goes through
``twine check --strict`` and ``tools/check_wheels.py`` (one top-level import package per
wheel, matching the distribution; every source file present; an sdist beside each wheel;
with every package built, exactly one wheel per package).

``tests-integration`` calls :func:`build` to make the wheels its fresh virtual
environments install, so what they test is what ``nox -s build`` ships.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workspace  # noqa: E402

TOOLS = Path(__file__).resolve().parent
OUTDIR = workspace.ROOT / "dist"  # the default output directory (what the README's install commands read)


def _run(cmd: Sequence[str], *, quiet: bool) -> None:
    if not quiet:
        print("+ " + " ".join(cmd), flush=True)
    proc = subprocess.run(list(cmd), capture_output=quiet, text=True)
    if proc.returncode != 0:
        detail = f"\n{proc.stdout}\n{proc.stderr}" if quiet else ""
        raise RuntimeError(f"command failed ({proc.returncode}): {' '.join(cmd)}{detail}")


def build_one(pkg_dir: Path, outdir: Path, *, wheel_only: bool = False, python: str = sys.executable,
              quiet: bool = False) -> None:  # fmt: skip
    """Build one package directory (any copy of one: tests build modified versions) into ``outdir``."""
    kinds = ["--wheel"] if wheel_only else []
    _run([python, "-m", "build", "--no-isolation", *kinds, "--outdir", str(outdir), str(pkg_dir)], quiet=quiet)


def build(outdir: Path, names: Sequence[str] = (), *, root: Path = workspace.ROOT, python: str = sys.executable,
          quiet: bool = False) -> list[Path]:  # fmt: skip
    """Build and check the named packages (default: all) into a fresh ``outdir``; returns the wheels."""
    packages = workspace.discover(root)
    chosen = [workspace.find(packages, n) for n in names] if names else list(packages.values())
    if outdir.exists():
        shutil.rmtree(outdir)
    outdir.mkdir(parents=True)
    t0 = time.perf_counter()
    for pkg in chosen:
        build_one(pkg.dir, outdir, python=python, quiet=quiet)
    artifacts = sorted(str(p) for p in outdir.iterdir())
    _run([python, "-m", "twine", "--no-color", "check", "--strict", *artifacts], quiet=quiet)
    check = [python, str(TOOLS / "check_wheels.py"), str(outdir)]
    if len(chosen) == len(packages):
        check.append("--all-packages")
    _run(check, quiet=quiet)
    if not quiet:
        print(f"build_dists: {len(chosen)} package(s) built and checked in {time.perf_counter() - t0:.1f}s")
    return sorted(outdir.glob("*.whl"))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Build and check the wheels and sdists of the family.")
    ap.add_argument("packages", nargs="*", help="packages to build (default: all)")
    ap.add_argument("--outdir", type=Path, default=OUTDIR, help="output directory (emptied first)")
    args = ap.parse_args(argv)
    try:
        build(args.outdir.resolve(), args.packages)
    except (KeyError, RuntimeError) as exc:
        print(f"build_dists: error: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
