#!/usr/bin/env python3
"""Which packages a change affects, i.e. whose tests must run.

    python tools/affected.py [--base REV] [--head REV] [--json | --dists] [--explain]
    python tools/affected.py --files PATH [PATH ...]     # or --files - (paths on stdin)
    nox -s affected -- --base origin/main                # prints them, with the reasons
    nox -s affected_tests -- --base origin/main          # runs the cpu lane of each (+ tests-integration)

The changed paths come from git: everything between the merge base of ``--base`` and
``HEAD`` and the working tree (staged, unstaged and untracked files that git does not
ignore), or, with ``--head REV``, the commits between the merge base and ``REV`` only.
``--base`` defaults to ``origin/main`` when that ref exists, else ``HEAD~1`` (the last
commit). Renames count as a deletion plus an addition.

The rules, by the first component of each path:
  packages/<dir>/...      that package, plus every package that depends on it,
                          transitively (pyproject dependencies): a change to core selects
                          everything that depends on core, a change to norm selects norm
                          and the umbrella. A directory under packages/ that is not a
                          package (removed or renamed) selects everything.
  tooling and CI          everything: tools/, .ci/, noxfile.py, pyproject.toml (shared
                          ruff/pytest config), tests-integration/, .gitignore
  docs only               nothing: docs/, README.md, mkdocs.yml (``nox -s docs`` covers them)
  anything else           an error (exit 2) naming the path: a new top-level path must be
                          added to the tables below, so that nothing is silently untested.

Output: the nox short names (``core``, ``norm``, ``umbrella``), one per line, in
``packages/`` order; ``--dists`` prints distribution names, ``--json`` everything
(packages, distributions, whether everything was selected, the reasons, the files).
Exit status 0 (also when nothing is affected), 2 on an unknown path or a git error.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workspace  # noqa: E402

# First path component -> what a change there selects.
EVERYTHING = {
    "tools": "repository tooling",
    ".ci": "the CI entry point",
    "noxfile.py": "the task runner",
    "pyproject.toml": "the shared ruff / pytest configuration",
    "tests-integration": "the cross-package tests",
    ".gitignore": "what git and the tools see",
}
DOCS_ONLY = {
    "docs": "documentation (nox -s docs)",
    "README.md": "documentation (nox -s docs)",
    "mkdocs.yml": "the docs site (nox -s docs)",
}
PACKAGES_DIR = "packages"


class UnknownPath(Exception):
    pass


@dataclass
class Affected:
    dists: set[str] = field(default_factory=set)
    everything: bool = False
    reasons: dict[str, list[str]] = field(default_factory=dict)  # dist -> why
    ignored: dict[str, str] = field(default_factory=dict)  # path -> why it selects nothing
    files: list[str] = field(default_factory=list)

    def why(self, dist: str, reason: str) -> None:
        self.dists.add(dist)
        rs = self.reasons.setdefault(dist, [])
        if reason not in rs and len(rs) < 5:
            rs.append(reason)


def affected(files: list[str], packages: dict[str, workspace.Package]) -> Affected:
    """The packages selected by ``files`` (repository-relative POSIX paths)."""
    out = Affected(files=sorted(set(files)))
    by_dir = {p.dir.name: p for p in packages.values()}
    unknown: list[str] = []
    direct: dict[str, str] = {}
    everything_why: str | None = None
    for f in out.files:
        parts = f.strip("/").split("/")
        top = parts[0]
        if top == PACKAGES_DIR:
            pkg = by_dir.get(parts[1]) if len(parts) > 2 else None
            if pkg is None:
                everything_why = everything_why or f"{f}: not inside a package of packages/ (removed or renamed?)"
            else:
                direct.setdefault(pkg.dist, f)
        elif top in EVERYTHING:
            everything_why = everything_why or f"{f}: {EVERYTHING[top]}"
        elif top in DOCS_ONLY:
            out.ignored[f] = DOCS_ONLY[top]
        else:
            unknown.append(f)
    if unknown:
        raise UnknownPath(
            "changed paths under a top-level path that tools/affected.py does not know: "
            + ", ".join(unknown)
            + "\n  add the path to EVERYTHING or DOCS_ONLY in tools/affected.py (or move the file)"
        )
    if everything_why:
        out.everything = True
        for dist in packages:
            out.why(dist, everything_why)
    for dist, f in direct.items():
        out.why(dist, f"changed: {f}")
    for dist in sorted(direct):
        for dep in sorted(workspace.with_dependents(packages, [dist]) - {dist}):
            out.why(dep, f"depends on {dist}")
    return out


def git(root: Path, *args: str) -> str:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True)
    if proc.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)}: {proc.stderr.strip()}")
    return proc.stdout


def default_base(root: Path) -> str:
    for ref in ("origin/main", "HEAD~1"):
        probe = subprocess.run(["git", "-C", str(root), "rev-parse", "-q", "--verify", ref], capture_output=True)
        if probe.returncode == 0:
            return ref
    raise RuntimeError("neither origin/main nor HEAD~1 exists; pass --base REV")


def changed_files(root: Path, base: str, head: str | None) -> list[str]:
    mb = git(root, "merge-base", base, head or "HEAD").strip()
    if head is not None:
        return git(root, "diff", "--name-only", "--no-renames", mb, head).splitlines()
    files = git(root, "diff", "--name-only", "--no-renames", mb).splitlines()
    files += git(root, "ls-files", "--others", "--exclude-standard").splitlines()
    return files


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="The packages a change affects (see tools/affected.py's docstring).")
    ap.add_argument("--base", help="compare against the merge base with this rev (default: origin/main, else HEAD~1)")
    ap.add_argument("--head", help="compare up to this rev, committed changes only (default: the working tree)")
    ap.add_argument("--files", nargs="+", metavar="PATH", help="use these paths instead of git ('-': read stdin)")
    ap.add_argument("--root", type=Path, default=workspace.ROOT, help="repository root (default: this checkout)")
    fmt = ap.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print everything as JSON")
    fmt.add_argument("--dists", action="store_true", help="print distribution names instead of short names")
    ap.add_argument("--explain", action="store_true", help="say why each package is selected (on stderr)")
    args = ap.parse_args(argv)

    root = args.root.resolve()
    packages = workspace.discover(root)
    base = None
    try:
        if args.files:
            files = sys.stdin.read().split() if args.files == ["-"] else args.files
        else:
            base = args.base or default_base(root)
            files = changed_files(root, base, args.head)
        result = affected(files, packages)
    except (UnknownPath, RuntimeError) as exc:
        print(f"affected: error: {exc}", file=sys.stderr)
        return 2
    order = [d for d in packages if d in result.dists]
    shorts = [packages[d].short for d in order]
    if args.json:
        print(
            json.dumps(
                {
                    "base": base,
                    "packages": shorts,
                    "dists": order,
                    "everything": result.everything,
                    "reasons": {packages[d].short: result.reasons[d] for d in order},
                    "docs_only": result.ignored,
                    "files": result.files,
                },
                indent=2,
            )
        )
    else:
        print("\n".join(order if args.dists else shorts))
    if args.explain:
        src = f"{len(result.files)} changed path(s)" + (f" since the merge base with {base}" if base else "")
        print(f"affected: {src}; {len(order)} of {len(packages)} package(s) selected", file=sys.stderr)
        for d in order:
            print(f"  {packages[d].short:<10} {'; '.join(result.reasons[d])}", file=sys.stderr)
        for f, why in sorted(result.ignored.items()):
            print(f"  (none)     {f}: {why}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
