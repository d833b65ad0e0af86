#!/usr/bin/env python3
"""Check the built distributions of the family: one wheel, one top-level import package.

    python tools/check_wheels.py dist/ [--all-packages]

For every wheel in the directory:
  * the wheel holds exactly one top-level import package (``*.dist-info`` and ``*.data``
    aside; a stray top-level module or a second package fails), and its name is the
    distribution name with ``-`` -> ``_`` (``sgl-diffusion-core`` -> ``sgl_diffusion_core``);
  * ``<pkg>/__init__.py`` is in it;
  * ``top_level.txt``, where the wheel has one, agrees;
  * a wheel with ``.pyi`` stubs also has ``<pkg>/py.typed`` (PEP 561: without the marker,
    type checkers ignore them);
  * every ``.py``, ``.pyi`` and ``py.typed`` file of the package's source tree
    (``packages/<dist>/src/<pkg>/``, found by the ``[project] name`` of
    ``packages/*/pyproject.toml``) is in the wheel, so a stub or a typing marker the
    source has is never dropped by the build configuration;
  * an sdist of the same name and version lies beside it.

``--all-packages``: every distribution under ``packages/`` must have exactly one wheel here.
Fails, with every problem listed, when anything is off, and when there is no wheel at all.
"""

from __future__ import annotations

import argparse
import email.parser
import re
import sys
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SOURCE_SUFFIXES = (".py", ".pyi")
MARKERS = ("py.typed",)


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name (``Sgl_Diffusion.Core`` -> ``sgl-diffusion-core``)."""
    return re.sub(r"[-_.]+", "-", name).lower()


def project_name(pyproject: Path) -> str | None:
    """``[project] name`` of a pyproject.toml (tomllib on 3.11+, a plain parse on 3.10)."""
    text = pyproject.read_text()
    try:
        import tomllib
    except ModuleNotFoundError:  # Python 3.10
        section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
        m = re.search(r"^name\s*=\s*[\"']([^\"']+)[\"']", section.group(1), re.MULTILINE) if section else None
        return m.group(1) if m else None
    return tomllib.loads(text).get("project", {}).get("name")


def source_packages() -> dict[str, Path]:
    """Normalized distribution name -> its ``packages/<dir>`` folder."""
    out: dict[str, Path] = {}
    for pyproject in sorted(ROOT.glob("packages/*/pyproject.toml")):
        name = project_name(pyproject)
        if name:
            out[normalize(name)] = pyproject.parent
    return out


def wheel_metadata(zf: zipfile.ZipFile) -> tuple[str, str, list[str] | None]:
    """(Name, Version, top_level.txt lines or None) from the wheel's .dist-info."""
    infos = {n.split("/", 1)[0] for n in zf.namelist() if n.split("/", 1)[0].endswith(".dist-info")}
    if len(infos) != 1:
        raise ValueError(f"expected one .dist-info directory, found {sorted(infos) or 'none'}")
    info = infos.pop()
    meta = email.parser.Parser().parsestr(zf.read(f"{info}/METADATA").decode())
    top = None
    if f"{info}/top_level.txt" in zf.namelist():
        top = [ln.strip() for ln in zf.read(f"{info}/top_level.txt").decode().splitlines() if ln.strip()]
    return meta["Name"], meta["Version"], top


def check_wheel(wheel: Path, sources: dict[str, Path], dist_dir: Path) -> tuple[str, list[str]]:
    """Returns (normalized distribution name, problems)."""
    problems: list[str] = []
    with zipfile.ZipFile(wheel) as zf:
        names = zf.namelist()
        name, version, top_level_txt = wheel_metadata(zf)
    dist = normalize(name)
    expected = dist.replace("-", "_")

    tops: set[str] = set()
    for entry in names:
        first = entry.split("/", 1)[0]
        if first.endswith((".dist-info", ".data")):
            continue
        if "/" in entry:
            tops.add(first)
        elif first.endswith((".py", ".pyi", ".so", ".pyd")):
            tops.add(first.split(".", 1)[0])  # a top-level module
        else:
            problems.append(f"stray top-level file {first!r}")
    if tops != {expected}:
        problems.append(
            f"must hold exactly one top-level import package {expected!r}, holds {sorted(tops) or 'nothing'}"
        )
    if f"{expected}/__init__.py" not in names:
        problems.append(f"{expected}/__init__.py is missing")
    if top_level_txt is not None and top_level_txt != [expected]:
        problems.append(f"top_level.txt lists {top_level_txt}, expected [{expected!r}]")

    src_dir = sources.get(dist)
    if src_dir is None:
        problems.append(f"no packages/*/pyproject.toml declares the distribution {name!r}")
    else:
        pkg_src = src_dir / "src" / expected
        if not pkg_src.is_dir():
            problems.append(f"source package {pkg_src.relative_to(ROOT)} does not exist")
        else:
            wanted = sorted(
                p.relative_to(pkg_src.parent).as_posix()
                for p in pkg_src.rglob("*")
                if p.is_file() and "__pycache__" not in p.parts and (p.suffix in SOURCE_SUFFIXES or p.name in MARKERS)
            )
            lost = [w for w in wanted if w not in names]
            if lost:
                problems.append(f"source files missing from the wheel: {', '.join(lost)}")
    stubs = [n for n in names if n.endswith(".pyi")]
    if stubs and f"{expected}/py.typed" not in names:
        problems.append(
            f"ships type stubs ({', '.join(stubs)}) but no {expected}/py.typed marker: "
            "type checkers ignore the stubs of an installed package without it (PEP 561)"
        )

    sdist = dist_dir / f"{expected}-{version}.tar.gz"
    if not sdist.is_file():
        problems.append(f"no sdist {sdist.name} beside the wheel")
    return dist, problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("dist", type=Path, help="directory holding the built wheels and sdists")
    ap.add_argument(
        "--all-packages",
        action="store_true",
        help="every distribution under packages/ must have exactly one wheel here",
    )
    args = ap.parse_args(argv)

    wheels = sorted(args.dist.glob("*.whl"))
    if not wheels:
        print(f"check_wheels: error: no wheel in {args.dist}/ (was anything built?)", file=sys.stderr)
        return 1
    sources = source_packages()
    failures = 0
    seen: dict[str, list[str]] = {}
    for wheel in wheels:
        try:
            dist, problems = check_wheel(wheel, sources, args.dist)
        except (zipfile.BadZipFile, KeyError, ValueError) as exc:
            dist, problems = wheel.name, [f"unreadable wheel: {exc}"]
        seen.setdefault(dist, []).append(wheel.name)
        if problems:
            failures += 1
            print(f"FAIL {wheel.name}")
            for p in problems:
                print(f"  - {p}")
        else:
            print(f"ok   {wheel.name}")
    if args.all_packages:
        for dist in sorted(sources):
            got = seen.get(dist, [])
            if len(got) != 1:
                failures += 1
                print(f"FAIL {dist}: expected one wheel in {args.dist}/, found {got or 'none'}")
    if failures:
        print(f"check_wheels: error: {failures} problem wheel(s)/distribution(s) in {args.dist}/", file=sys.stderr)
        return 1
    print(f"check_wheels: {len(wheels)} wheel(s) ok")
    return 0


if __name__ == "__main__":
    sys.exit(main())
