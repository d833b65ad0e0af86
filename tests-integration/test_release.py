"""tools/release.py, run for real in scratch clones of this repository (``git clone`` of HEAD).

Each test clones the repository into a temporary directory, gives the clone a committer
identity and, where the package's ``## Unreleased`` might be empty at HEAD, one changelog
entry to release; then it runs the release tool of this working tree on the clone
(``--root``) and looks at what it wrote, committed and tagged.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import _venvs  # noqa: F401  (puts tools/ on sys.path)
import release
import workspace

REPO = workspace.ROOT
TOOL = REPO / "tools" / "release.py"
DATE = "2026-01-02"
EVERY = [p.dist for p in workspace.discover().values()]
# The domain the refusal tests use: norm (the first domain), else any domain.
_DOMAINS = [p.dist for p in workspace.discover().values() if not p.is_core and not p.is_umbrella]
DOMAIN = "sgl-diffusion-norm" if "sgl-diffusion-norm" in _DOMAINS else _DOMAINS[0]


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def origin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One clone of HEAD, with an entry in every package's Unreleased section, committed."""
    path = tmp_path_factory.mktemp("origin") / "repo"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO), str(path)], check=True)
    git(path, "config", "user.name", "release test")
    git(path, "config", "user.email", "release-test@example.invalid")
    for pkg in workspace.discover(path).values():
        pkg.changelog.write_text(release.add_unreleased_line(pkg.changelog.read_text(), "- A change to release."))
    git(path, "commit", "-q", "-am", "test: something to release in every package")
    return path


@pytest.fixture
def clone(origin: Path, tmp_path: Path) -> Path:
    path = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(origin), str(path)], check=True)
    git(path, "config", "user.name", "release test")
    git(path, "config", "user.email", "release-test@example.invalid")
    return path


def run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(TOOL), *args, "--root", str(root), "--date", DATE], capture_output=True, text=True
    )


def state(root: Path) -> tuple[str, str, str]:
    return git(root, "rev-parse", "HEAD"), git(root, "status", "--porcelain"), git(root, "tag", "-l")


def _in_clone(clone: Path, dist: str) -> workspace.Package:
    packages = workspace.discover(clone)
    if dist not in packages:
        pytest.skip(f"{dist} is not committed yet (the clone is of HEAD)")
    return packages[dist]


@pytest.mark.parametrize("dist", EVERY)
def test_dry_run_shows_bump_changelog_and_tag(clone: Path, dist: str) -> None:
    pkg = _in_clone(clone, dist)
    new = release.new_version(pkg.version, "patch")
    before = state(clone)
    proc = run(clone, pkg.dist, "patch", "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    out = proc.stdout
    assert f"release {pkg.dist}: {pkg.version} -> {new} (patch)" in out
    assert f'-__version__ = "{pkg.version}"' in out and f'+__version__ = "{new}"' in out
    assert f"'## Unreleased' -> '## {new} - {DATE}'" in out and f"+## {new} - {DATE}" in out
    assert f"tag        {pkg.dist}-v{new} (annotated)" in out
    assert "A change to release." in out  # the tag message: the released section
    assert "dry run ok" in out
    assert state(clone) == before, "a dry run changed the repository"


@pytest.mark.parametrize("dist", EVERY)
def test_real_run_commits_and_tags(clone: Path, dist: str) -> None:
    pkg = _in_clone(clone, dist)
    new = release.new_version(pkg.version, "patch")
    head = git(clone, "rev-parse", "HEAD")
    proc = run(clone, pkg.short, "patch")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    tag = f"{pkg.dist}-v{new}"

    assert workspace.read_version(pkg.about) == new
    log = pkg.changelog.read_text()
    assert f"## Unreleased\n\n## {new} - {DATE}\n" in log, log[:600]
    released = release.split_unreleased(log)
    assert released is not None and not released[1].strip(), "the Unreleased section is not empty after the release"
    section = log.split(f"## {new} - {DATE}\n", 1)[1]
    assert section.lstrip().startswith("- ") and "A change to release." in section.split("\n## ")[0]

    assert git(clone, "rev-parse", "HEAD~1") == head
    assert git(clone, "log", "-1", "--format=%s") == f"release: {pkg.dist} {new}"
    assert sorted(git(clone, "show", "--name-only", "--format=", "HEAD").splitlines()) == sorted(
        p.relative_to(clone).as_posix() for p in (pkg.about, pkg.changelog)
    )
    assert git(clone, "cat-file", "-t", tag) == "tag", "the tag is not annotated"
    assert git(clone, "rev-parse", f"{tag}^{{commit}}") == git(clone, "rev-parse", "HEAD")
    message = git(clone, "tag", "-l", "--format=%(contents)", tag)
    assert message.startswith(f"{pkg.dist} {new}") and "A change to release." in message
    assert git(clone, "status", "--porcelain") == ""
    assert "git push origin HEAD " + tag in proc.stdout

    # Released: nothing left in Unreleased, so the next release is refused.
    before = state(clone)
    again = run(clone, pkg.dist, "patch")
    assert again.returncode == 1
    assert "'## Unreleased' section is empty" in again.stdout
    assert state(clone) == before


@pytest.mark.parametrize("how", ["untracked", "modified", "staged"])
def test_refuses_a_dirty_tree(clone: Path, how: str) -> None:
    pkg = workspace.find(workspace.discover(clone), DOMAIN)
    if how == "untracked":
        (clone / "scratch.txt").write_text("x")
    else:
        pkg.readme.write_text(pkg.readme.read_text() + "\nedit\n")
        if how == "staged":
            git(clone, "add", str(pkg.readme))
    before = state(clone)
    for dry in ([], ["--dry-run"]):
        proc = run(clone, pkg.dist, "patch", *dry)
        assert proc.returncode == 1, proc.stdout
        assert "the working tree is not clean" in proc.stdout
    assert state(clone) == before


def test_core_minor_bump_names_every_pin_to_move(clone: Path) -> None:
    packages = workspace.discover(clone)
    core = packages[workspace.CORE]
    new = release.new_version(core.version, "minor")
    want = workspace.compatible_range(new)
    broken = [
        (p, d) for p in workspace.dependents(packages, core.dist) for d in p.deps
        if d.name == core.dist and not workspace.range_ok(d.specifier, new)
    ]  # fmt: skip
    if core.version.startswith("0."):
        assert broken, "on 0.x a core minor bump must break every dependent's pin"
        assert {p.dist for p, _ in broken} == {p.dist for p in workspace.dependents(packages, core.dist)}
    before = state(clone)
    for dry in (["--dry-run"], []):
        proc = run(clone, "core", "minor", *dry)
        assert proc.returncode == 1, proc.stdout
        for p, d in broken:
            rel = p.pyproject.relative_to(clone).as_posix()
            line = f"{rel} [{d.where}]: '{d.raw}' -> '{core.dist}{want}'"
            assert f"MUST MOVE {line}" in proc.stdout and line in proc.stdout.split("refuse", 1)[1], proc.stdout
        assert "--move-pins" in proc.stdout and "--allow-pin-break" in proc.stdout
        assert state(clone) == before


def test_core_minor_bump_with_move_pins(clone: Path) -> None:
    packages = workspace.discover(clone)
    core = packages[workspace.CORE]
    new = release.new_version(core.version, "minor")
    deps = workspace.dependents(packages, core.dist)
    proc = run(clone, "core", "minor", "--move-pins")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    after = workspace.discover(clone)
    assert after[core.dist].version == new
    assert workspace.pin_problems(after) == [], "pins out of policy after --move-pins"
    changed = set(git(clone, "show", "--name-only", "--format=", "HEAD").splitlines())
    for p in deps:
        assert p.pyproject.relative_to(clone).as_posix() in changed
        note = f"- Requires `{core.dist}{workspace.compatible_range(new)}`"
        unreleased = release.split_unreleased(p.changelog.read_text())
        assert unreleased is not None and note in unreleased[1], f"{p.changelog}: no note in Unreleased"
    assert "Pins moved with it:" in git(clone, "log", "-1", "--format=%B")
    assert git(clone, "cat-file", "-t", core.tag(new)) == "tag"


def test_core_minor_bump_with_allow_pin_break(clone: Path) -> None:
    packages = workspace.discover(clone)
    core = packages[workspace.CORE]
    proc = run(clone, "core", "minor", "--allow-pin-break")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "warning:" in proc.stdout and "--allow-pin-break" in proc.stdout
    after = workspace.discover(clone)
    for p in workspace.dependents(packages, core.dist):
        assert after[p.dist].deps == p.deps, "--allow-pin-break moved a pin"
    if core.version.startswith("0."):
        assert workspace.pin_problems(after), "the broken pins are not reported by the pin policy check"


def test_core_patch_bump_keeps_every_pin(clone: Path) -> None:
    packages = workspace.discover(clone)
    core = packages[workspace.CORE]
    new = release.new_version(core.version, "patch")
    proc = run(clone, workspace.CORE, "patch", "--dry-run")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    for p in workspace.dependents(packages, core.dist):
        assert f"ok    {p.pyproject.relative_to(clone).as_posix()}" in proc.stdout
        assert f"accepts {new}" in proc.stdout


def test_refusals(clone: Path) -> None:
    pkg = workspace.find(workspace.discover(clone), DOMAIN)
    before = state(clone)
    assert run(clone, pkg.dist, pkg.version).returncode == 1  # does not go up
    assert run(clone, pkg.dist, "1.2").returncode == 1  # not X.Y.Z
    assert run(clone, "sgl-diffusion-nope", "patch").returncode == 2
    new = release.new_version(pkg.version, "minor")
    git(clone, "tag", pkg.tag(new))
    proc = run(clone, pkg.dist, "minor")
    assert proc.returncode == 1 and f"the tag {pkg.tag(new)} exists already" in proc.stdout
    git(clone, "tag", "-d", pkg.tag(new))
    assert state(clone) == before


def test_changelog_helpers() -> None:
    text = "# Changelog\n\n## Unreleased\n\n- a\n- b\n\n## 0.1.0 - 2025-01-01\n\n- old\n"
    moved, body = release.move_unreleased(text, "0.2.0", "2026-01-02")
    assert moved == (
        "# Changelog\n\n## Unreleased\n\n## 0.2.0 - 2026-01-02\n\n- a\n- b\n\n## 0.1.0 - 2025-01-01\n\n- old\n"
    )
    assert body == "- a\n- b"
    with pytest.raises(release.Refused, match="empty"):
        release.move_unreleased(moved, "0.3.0", "2026-01-03")
    with pytest.raises(release.Refused, match="no '## Unreleased'"):
        release.move_unreleased("# Changelog\n", "0.3.0", "2026-01-03")
    assert release.move_unreleased("## Unreleased\n- x\n", "1.0.0", "d")[0] == "## Unreleased\n\n## 1.0.0 - d\n\n- x\n"
    noted = release.add_unreleased_line(moved, "- note")
    assert noted.startswith("# Changelog\n\n## Unreleased\n\n- note\n\n## 0.2.0")
    assert release.new_version("0.1.9", "minor") == "0.2.0"
    assert release.new_version("0.1.9", "major") == "1.0.0"
    assert release.new_version("0.1.9", "patch") == "0.1.10"
    assert release.new_version("0.1.9", "0.3.0") == "0.3.0"
