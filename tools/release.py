#!/usr/bin/env python3
"""Release one package of the family: version bump, changelog, pin check, commit, annotated tag.

    python tools/release.py PACKAGE BUMP [--dry-run] [--move-pins | --allow-pin-break] [--date YYYY-MM-DD]
    nox -s release -- PACKAGE BUMP [...]

PACKAGE: a distribution (``sgl-diffusion-norm``), an import name (``sgl_diffusion_norm``) or a
nox short name (``norm``, ``core``, ``umbrella``). BUMP: ``major``, ``minor``, ``patch`` or an
explicit ``X.Y.Z`` above the current version (on 0.x, ``major`` goes to 1.0.0).

What a release does, in one commit on the current branch:
  1. ``src/<pkg>/__about__.py``: ``__version__`` -> the new version;
  2. ``CHANGELOG.md``: the body of ``## Unreleased`` moves under ``## X.Y.Z - <date>``
     (a fresh, empty ``## Unreleased`` stays on top);
  3. the pins: every package that depends on this one (pyproject ``dependencies`` and
     ``optional-dependencies``) must still accept the new version with a compatible range
     (``tools/workspace.py``: ``>=0.Y,<0.(Y+1)`` on 0.x). A core bump is checked against
     every domain's pin and the umbrella's. Pins that must move are printed exactly
     (file, requirement now, requirement after). Then, by policy:
       default            refuse: release the dependents' pin move together with the bump;
       --move-pins        rewrite those pins in the same release commit and add a line to
                          each dependent's ``## Unreleased`` (their next release ships it);
       --allow-pin-break  release anyway and leave the pins; tests-integration/test_pins.py
                          fails until someone moves them (a follow-up commit).
     The package's own pins on the family must satisfy the policy too;
  4. commit ``release: <distribution> <version>`` and the annotated tag
     ``<distribution>-v<version>`` (its message: the changelog section). Nothing is pushed:
     the tool prints the push command.

Refuses (exit 1, nothing written) on a dirty working tree (untracked files included),
an empty or missing ``## Unreleased`` section, a version that does not go up, an existing
tag, or a pin that the new version breaks (see 3). ``--dry-run`` writes nothing and
prints what it would do: the version diff, the changelog diff, the pin report, the commit
and the tag; it exits 1 when the real run would refuse, saying why.
"""

from __future__ import annotations

import argparse
import datetime as dt
import difflib
import re
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import InvalidVersion, Version

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workspace  # noqa: E402

UNRELEASED_RE = re.compile(r"^##[ \t]+Unreleased[ \t]*$", re.MULTILINE | re.IGNORECASE)
NEXT_SECTION_RE = re.compile(r"^##[ \t]", re.MULTILINE)
PLAIN_VERSION_RE = re.compile(r"\d+\.\d+\.\d+")


class Refused(Exception):
    pass


@dataclass
class PinCheck:
    dependent: workspace.Package
    dep: workspace.FamilyDep
    ok: bool
    new_raw: str  # the requirement after the move (== dep.raw when ok)


@dataclass
class Plan:
    pkg: workspace.Package
    old: str
    new: str
    bump: str
    date: str
    edits: dict[Path, tuple[str, str]] = field(default_factory=dict)  # path -> (before, after)
    section: str = ""  # the changelog body that is released
    pins: list[PinCheck] = field(default_factory=list)
    moved: list[PinCheck] = field(default_factory=list)
    blockers: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)

    @property
    def tag(self) -> str:
        return self.pkg.tag(self.new)

    @property
    def commit_message(self) -> str:
        msg = f"release: {self.pkg.dist} {self.new}"
        if self.moved:
            msg += "\n\nPins moved with it:\n" + "\n".join(
                f"- {_rel(p.dependent.pyproject, self.pkg.dir.parent.parent)}: {p.dep.raw} -> {p.new_raw}"
                for p in self.moved
            )
        return msg

    @property
    def tag_message(self) -> str:
        return f"{self.pkg.dist} {self.new}\n\n{self.section.strip()}\n"


def _rel(path: Path, root: Path) -> str:
    return path.relative_to(root).as_posix()


def git(root: Path, *args: str, check: bool = True) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, check=check)


def new_version(current: str, bump: str) -> str:
    """The version after ``bump`` (``major``/``minor``/``patch`` or an explicit ``X.Y.Z``)."""
    if bump in ("major", "minor", "patch"):
        if not PLAIN_VERSION_RE.fullmatch(current):
            raise Refused(f"the current version {current!r} is not X.Y.Z; give the new version explicitly")
        major, minor, patch = (int(x) for x in current.split("."))
        if bump == "major":
            return f"{major + 1}.0.0"
        if bump == "minor":
            return f"{major}.{minor + 1}.0"
        return f"{major}.{minor}.{patch + 1}"
    if not PLAIN_VERSION_RE.fullmatch(bump):
        raise Refused(f"version {bump!r} is neither major, minor, patch nor X.Y.Z")
    try:
        if Version(bump) <= Version(current):
            raise Refused(f"version {bump} does not go up from the current {current}")
    except InvalidVersion as exc:
        raise Refused(f"the current version {current!r} does not parse: {exc}") from None
    return bump


def split_unreleased(text: str) -> tuple[str, str, str] | None:
    """(text up to and including the Unreleased heading line, its body, the rest) or None."""
    m = UNRELEASED_RE.search(text)
    if m is None:
        return None
    head_end = text.find("\n", m.end())
    head_end = len(text) if head_end < 0 else head_end + 1
    nxt = NEXT_SECTION_RE.search(text, head_end)
    body_end = nxt.start() if nxt else len(text)
    return text[:head_end], text[head_end:body_end], text[body_end:]


def move_unreleased(text: str, version: str, date: str) -> tuple[str, str]:
    """(new changelog text, the released body). Refuses when there is nothing to release."""
    parts = split_unreleased(text)
    if parts is None:
        raise Refused("the changelog has no '## Unreleased' section")
    head, body, rest = parts
    if not body.strip():
        raise Refused("the changelog's '## Unreleased' section is empty: nothing to release")
    released = body.strip("\n")
    out = f"{head}\n## {version} - {date}\n\n{released}\n"
    if rest:
        out += "\n" + rest
    return out, released


def add_unreleased_line(text: str, line: str) -> str:
    """Append ``line`` to the ``## Unreleased`` section (created on top when missing)."""
    parts = split_unreleased(text)
    if parts is None:
        first = NEXT_SECTION_RE.search(text)
        at = first.start() if first else len(text)
        return f"{text[:at].rstrip()}\n\n## Unreleased\n\n{line}\n\n{text[at:]}".lstrip("\n")
    head, body, rest = parts
    body = body.rstrip("\n")
    new_body = f"{body}\n{line}\n" if body.strip() else f"\n{line}\n"
    return head + new_body + ("\n" + rest if rest else "")


def moved_requirement(dep: workspace.FamilyDep, spec: str) -> str:
    req = Requirement(dep.raw)
    extras = f"[{','.join(sorted(req.extras))}]" if req.extras else ""
    marker = f"; {req.marker}" if req.marker else ""
    return f"{req.name}{extras}{spec}{marker}"


def _edit(plan: Plan, path: Path, after: str) -> None:
    before = plan.edits[path][0] if path in plan.edits else path.read_text()
    plan.edits[path] = (before, after)


def _current(plan: Plan, path: Path) -> str:
    return plan.edits[path][1] if path in plan.edits else path.read_text()


def make_plan(root: Path, name: str, bump: str, date: str, *, move_pins: bool, allow_pin_break: bool) -> Plan:
    packages = workspace.discover(root)
    pkg = workspace.find(packages, name)
    new = new_version(pkg.version, bump)
    plan = Plan(pkg, pkg.version, new, bump, date)

    # 1. version
    about = pkg.about.read_text()
    new_about, n = workspace.VERSION_RE.subn(f'__version__ = "{new}"', about)
    if n != 1:
        plan.blockers.append(f"{_rel(pkg.about, root)}: expected one __version__ line, found {n}")
    _edit(plan, pkg.about, new_about)

    # 2. changelog
    if not pkg.changelog.is_file():
        plan.blockers.append(f"{_rel(pkg.changelog, root)} does not exist")
    else:
        try:
            text, plan.section = move_unreleased(pkg.changelog.read_text(), new, date)
            _edit(plan, pkg.changelog, text)
        except Refused as exc:
            plan.blockers.append(f"{_rel(pkg.changelog, root)}: {exc}")

    # 3. pins of the dependents on this package, against the new version
    for dependent in workspace.dependents(packages, pkg.dist):
        for dep in dependent.deps:
            if dep.name != pkg.dist:
                continue
            ok = workspace.range_ok(dep.specifier, new)
            new_raw = dep.raw if ok else moved_requirement(dep, workspace.compatible_range(new))
            plan.pins.append(PinCheck(dependent, dep, ok, new_raw))
    broken = [p for p in plan.pins if not p.ok]
    if broken:
        lines = [f"{_rel(p.dependent.pyproject, root)} [{p.dep.where}]: '{p.dep.raw}' -> '{p.new_raw}'" for p in broken]
        what = f"{pkg.dist} {new} breaks {len(broken)} pin(s) of its dependents:\n    " + "\n    ".join(lines)
        if move_pins:
            _move_pins(plan, root, broken)
        elif allow_pin_break:
            plan.warnings.append(
                what + "\n  --allow-pin-break: releasing anyway; tests-integration/test_pins.py fails until they move"
            )
        else:
            plan.blockers.append(
                what + "\n  move them in this release with --move-pins, or release anyway with --allow-pin-break"
            )
    # ... and this package's own pins on the family (what its wheel will require)
    _check_own_pins(plan, packages, root)

    # 4. git: a clean tree, a tag that does not exist yet
    _check_git(plan, root)
    return plan


def _move_pins(plan: Plan, root: Path, broken: list[PinCheck]) -> None:
    """--move-pins: rewrite each broken pin in its dependent's pyproject and note the move in that
    dependent's ``## Unreleased``; a pin that is not found exactly once is a blocker (move it by hand)."""
    for p in broken:
        pyproject = p.dependent.pyproject
        text = _current(plan, pyproject)
        quoted = [f'"{p.dep.raw}"', f"'{p.dep.raw}'"]
        hits = sum(text.count(q) for q in quoted)
        if hits != 1:
            plan.blockers.append(f"{_rel(pyproject, root)}: found {p.dep.raw!r} {hits} times; move it by hand")
            continue
        q = next(q for q in quoted if q in text)
        _edit(plan, pyproject, text.replace(q, q[0] + p.new_raw + q[0]))
        log = p.dependent.changelog
        if log.is_file():
            note = f"- Requires `{p.new_raw}` (moved with the {plan.pkg.dist} {plan.new} release)."
            _edit(plan, log, add_unreleased_line(_current(plan, log), note))
        plan.moved.append(p)


def _check_own_pins(plan: Plan, packages: dict[str, workspace.Package], root: Path) -> None:
    """Each pin of the released package on the family must be the compatible range of that
    package's current version."""
    pkg = plan.pkg
    for dep in pkg.deps:
        target = packages[dep.name]
        if not workspace.range_ok(dep.specifier, target.version):
            want = workspace.compatible_range(target.version)
            plan.blockers.append(
                f"{_rel(pkg.pyproject, root)} [{dep.where}]: '{dep.raw}' is not the compatible range of the "
                f"current {dep.name} {target.version}; it should be '{dep.name}{want}'"
            )


def _check_git(plan: Plan, root: Path) -> None:
    """Blockers for a working tree that is not clean (untracked files included) or a tag that exists."""
    status = git(root, "status", "--porcelain", "--untracked-files=normal", check=False)
    if status.returncode != 0:
        plan.blockers.append(f"{root} is not a git working tree: {status.stderr.strip()}")
    elif status.stdout.strip():
        dirty = status.stdout.rstrip("\n").splitlines()
        more = f"\n    ... and {len(dirty) - 10} more" if len(dirty) > 10 else ""
        plan.blockers.append(
            "the working tree is not clean (commit or stash first):\n    " + "\n    ".join(dirty[:10]) + more
        )
    if git(root, "rev-parse", "-q", "--verify", f"refs/tags/{plan.tag}", check=False).returncode == 0:
        plan.blockers.append(f"the tag {plan.tag} exists already")


def _diff(path: Path, root: Path, before: str, after: str) -> str:
    rel = _rel(path, root)
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), f"a/{rel}", f"b/{rel}", n=2
    )
    return "".join("    " + ln if ln.endswith("\n") else "    " + ln + "\n" for ln in lines)


def report(plan: Plan, root: Path, dry_run: bool) -> str:
    pkg = plan.pkg
    out = [
        f"release {pkg.dist}: {plan.old} -> {plan.new} ({plan.bump})"
        + ("   [dry run: nothing is written]" if dry_run else "")
    ]
    out.append(f"\nversion    {_rel(pkg.about, root)}: {plan.old} -> {plan.new}")
    if pkg.about in plan.edits:
        out.append(_diff(pkg.about, root, *plan.edits[pkg.about]).rstrip("\n"))
    if pkg.changelog in plan.edits:
        out.append(f"\nchangelog  {_rel(pkg.changelog, root)}: '## Unreleased' -> '## {plan.new} - {plan.date}'")
        out.append(_diff(pkg.changelog, root, *plan.edits[pkg.changelog]).rstrip("\n"))
    out.append(f"\npins       dependents of {pkg.dist} against {plan.new}:")
    if not plan.pins:
        out.append("    (no package of the family depends on it)")
    for p in plan.pins:
        rel = _rel(p.dependent.pyproject, root)
        if p.ok:
            out.append(f"    ok    {rel} [{p.dep.where}]: '{p.dep.raw}' accepts {plan.new}")
        else:
            verb = "moved" if p in plan.moved else "MUST MOVE"
            out.append(f"    {verb:<9} {rel} [{p.dep.where}]: '{p.dep.raw}' -> '{p.new_raw}'")
    for path, (before, after) in plan.edits.items():
        if path not in (pkg.about, pkg.changelog):
            out.append(_diff(path, root, before, after).rstrip("\n"))
    out.append(f"\ncommit     {plan.commit_message.splitlines()[0]!r} ({len(plan.edits)} file(s))")
    out.append(f"tag        {plan.tag} (annotated), message:")
    out.extend("    | " + ln for ln in plan.tag_message.rstrip("\n").splitlines())
    for w in plan.warnings:
        out.append(f"\nwarning: {w}")
    if plan.blockers:
        head = "a real run would refuse" if dry_run else "refused"
        out.append(f"\n{head}:")
        out.extend(f"  - {b}" for b in plan.blockers)
    elif dry_run:
        out.append(f"\ndry run ok: `python tools/release.py {pkg.dist} {plan.new}` makes this release")
    return "\n".join(out)


def apply(plan: Plan, root: Path) -> None:
    paths = list(plan.edits)
    for path, (_, after) in plan.edits.items():
        path.write_text(after)
    try:
        git(root, "add", "--", *map(str, paths))
        git(root, "commit", "-q", "-m", plan.commit_message)
    except subprocess.CalledProcessError as exc:
        for path, (before, _) in plan.edits.items():
            path.write_text(before)
        git(root, "reset", "-q", "--", *map(str, paths), check=False)
        raise Refused(f"git commit failed, files restored: {exc.stderr.strip() or exc.stdout.strip()}") from None
    try:
        git(root, "tag", "-a", plan.tag, "-m", plan.tag_message)
    except subprocess.CalledProcessError as exc:
        raise Refused(
            f"committed the release, but `git tag -a {plan.tag}` failed: {exc.stderr.strip()}; "
            f"tag it by hand or undo with `git reset --hard HEAD~1`"
        ) from None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        description="Release one package: bump, changelog, pin check, commit, annotated tag.",
        epilog="See the module docstring (tools/release.py) for the policy.",
    )
    ap.add_argument("package", help="distribution, import name or short name (norm, core, umbrella)")
    ap.add_argument("bump", help="major, minor, patch or an explicit X.Y.Z")
    ap.add_argument("--dry-run", "-n", action="store_true", help="print what would happen, write nothing")
    pins = ap.add_mutually_exclusive_group()
    pins.add_argument("--move-pins", action="store_true", help="rewrite the dependents' pins that the bump breaks")
    pins.add_argument("--allow-pin-break", action="store_true", help="release even though dependents' pins break")
    ap.add_argument("--date", default=None, help="release date for the changelog (default: today, YYYY-MM-DD)")
    ap.add_argument("--root", type=Path, default=workspace.ROOT, help="repository root (default: this checkout)")
    args = ap.parse_args(argv)

    root = args.root.resolve()
    date = args.date or dt.date.today().isoformat()
    try:
        dt.date.fromisoformat(date)
    except ValueError:
        ap.error(f"--date {date!r} is not YYYY-MM-DD")
    try:
        plan = make_plan(
            root, args.package, args.bump, date, move_pins=args.move_pins, allow_pin_break=args.allow_pin_break
        )
    except KeyError as exc:
        print(f"release: error: {exc.args[0]}", file=sys.stderr)
        return 2
    except Refused as exc:
        print(f"release: refused: {exc}", file=sys.stderr)
        return 1
    print(report(plan, root, args.dry_run))
    if plan.blockers:
        return 1
    if args.dry_run:
        return 0
    try:
        apply(plan, root)
    except Refused as exc:
        print(f"release: error: {exc}", file=sys.stderr)
        return 1
    head = git(root, "rev-parse", "--short", "HEAD").stdout.strip()
    print(f"\nreleased {plan.pkg.dist} {plan.new}: commit {head}, tag {plan.tag}")
    print(f"publish:  git push origin HEAD {plan.tag}   (then build and upload: .venv/bin/nox -s build)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
