"""tools/affected.py: which packages a change selects (rules in its docstring)."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

import _venvs  # noqa: F401  (puts tools/ on sys.path)
import affected
import workspace

REPO = workspace.ROOT
TOOL = REPO / "tools" / "affected.py"
PACKAGES = workspace.discover()
ALL = set(PACKAGES)
CORE = PACKAGES[workspace.CORE]
DOMAINS = [p for p in PACKAGES.values() if not p.is_core and not p.is_umbrella]


def select(*files: str) -> set[str]:
    return affected.affected(list(files), PACKAGES).dists


def rel(pkg: workspace.Package, *parts: str) -> str:
    return "/".join([pkg.dir.relative_to(REPO).as_posix(), *parts])


def test_core_change_selects_everything_that_depends_on_it() -> None:
    got = select(rel(CORE, "src", CORE.import_name, "registry.py"))
    assert got == workspace.with_dependents(PACKAGES, [CORE.dist])
    assert got == ALL, "every package of the family depends on core, directly or through a domain"


@pytest.mark.parametrize("pkg", DOMAINS, ids=[p.short for p in DOMAINS])
def test_domain_change_selects_it_and_its_dependents(pkg: workspace.Package) -> None:
    got = select(rel(pkg, "tests", "test_x.py"))
    assert pkg.dist in got and CORE.dist not in got
    if workspace.UMBRELLA in PACKAGES:
        assert workspace.UMBRELLA in got, "the umbrella depends on every domain"
    assert got == workspace.with_dependents(PACKAGES, [pkg.dist])


def test_umbrella_change_selects_only_the_umbrella() -> None:
    if workspace.UMBRELLA not in PACKAGES:
        pytest.skip("no umbrella")
    assert select(rel(PACKAGES[workspace.UMBRELLA], "README.md")) == {workspace.UMBRELLA}


@pytest.mark.parametrize(
    "path",
    ["tools/release.py", ".ci/run", "noxfile.py", "pyproject.toml", "tests-integration/test_pins.py", ".gitignore"],
)
def test_tooling_and_ci_select_everything(path: str) -> None:
    result = affected.affected([path], PACKAGES)
    assert result.everything and result.dists == ALL


@pytest.mark.parametrize("path", ["docs/benchmarks/README.md", "README.md", "mkdocs.yml"])
def test_docs_select_nothing(path: str) -> None:
    result = affected.affected([path], PACKAGES)
    assert result.dists == set() and path in result.ignored


def test_a_directory_under_packages_that_is_no_package_selects_everything() -> None:
    assert select("packages/sgl-diffusion-removed/src/x.py") == ALL


@pytest.mark.parametrize("path", ["setup.py", "scripts/run.sh", "Makefile"])
def test_unknown_top_level_path_fails_loudly(path: str) -> None:
    with pytest.raises(affected.UnknownPath, match=path.replace(".", r"\.")):
        affected.affected(["docs/x.md", path], PACKAGES)
    proc = subprocess.run([sys.executable, str(TOOL), "--files", path], capture_output=True, text=True)
    assert proc.returncode == 2 and path in proc.stderr and "tools/affected.py" in proc.stderr


def test_every_top_level_path_of_the_repository_is_known() -> None:
    """A file committed under a new top-level path would make every diff that touches it fail."""
    tracked = subprocess.run(["git", "-C", str(REPO), "ls-files"], capture_output=True, text=True, check=True)
    tops = {f.split("/")[0] for f in tracked.stdout.splitlines()}
    known = set(affected.EVERYTHING) | set(affected.DOCS_ONLY) | {affected.PACKAGES_DIR}
    assert tops <= known, f"top-level paths tools/affected.py does not know: {sorted(tops - known)}"


def _git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True, text=True).stdout


def test_from_git(tmp_path: Path) -> None:
    clone = tmp_path / "repo"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True)
    _git(clone, "config", "user.name", "t")
    _git(clone, "config", "user.email", "t@example.invalid")
    domain = next(p for p in workspace.discover(clone).values() if not p.is_core and not p.is_umbrella)
    (domain.dir / "README.md").write_text(domain.readme.read_text() + "\nmore\n")
    _git(clone, "commit", "-qam", "touch a domain")

    def run(*args: str) -> dict:
        proc = subprocess.run(
            [sys.executable, str(TOOL), "--root", str(clone), "--json", *args], capture_output=True, text=True
        )
        assert proc.returncode == 0, proc.stderr
        return json.loads(proc.stdout)

    want = sorted(workspace.with_dependents(workspace.discover(clone), [domain.dist]))
    out = run("--base", "HEAD~1")
    assert sorted(out["dists"]) == want and not out["everything"]
    assert out["files"] == [domain.readme.relative_to(clone).as_posix()]
    assert sorted(run()["dists"]) == want  # default base: origin/main (the clone's origin), else HEAD~1

    (clone / "docs" / "new-page.md").write_text("# new\n")  # untracked, not ignored: counted
    assert "docs/new-page.md" in run("--base", "HEAD~1")["docs_only"]
    assert "docs/new-page.md" not in run("--base", "HEAD~1", "--head", "HEAD")["files"]
    (clone / "tools" / "x.py").write_text("")
    assert run("--base", "HEAD~1")["everything"]
