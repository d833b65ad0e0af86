"""The family as its files declare it: packages, versions, family dependencies and their pins.

Shared by ``tools/release.py``, ``tools/affected.py``, ``tools/build_dists.py``,
``tools/gen_docs.py`` and the tests in ``tests-integration/``. It reads files only
(``packages/*/pyproject.toml``, ``src/<pkg>/__about__.py``, ``CHANGELOG.md``) and imports
no package of the family, no torch.

The pin policy (checked by ``tests-integration/test_pins.py``, applied by ``release.py``):
every dependency of a family package on another family package is a *compatible range*
that contains the dependency's current version (:func:`range_ok`):

    0.Y.Z   ->  exactly >=0.Y,<0.(Y+1)          (on 0.x a minor bump is a breaking change)
    X.Y.Z   ->  >=X.m,<(X+1) with m <= Y        (from 1.0 on, a major bump is; a minor
                                                 release leaves the pins where they are)

:func:`compatible_range` is the canonical form for a version (what a pin moves to).

Domain packages depend on ``sgl-diffusion-core`` and on nothing else of the family;
``sgl-diffusion-sites`` may use several domains; the umbrella ``sgl-diffusion`` depends
on every other package of the family.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

from packaging.requirements import Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:  # Python 3.10: `build` (tools/dev-requirements.txt) depends on tomli there
    import tomli as tomllib

ROOT = Path(__file__).resolve().parent.parent
PREFIX = "sgl-diffusion-"
UMBRELLA = "sgl-diffusion"
CORE = "sgl-diffusion-core"
SITES = "sgl-diffusion-sites"
# Import names the family has planned (docs/design.md) besides the packages that exist today:
# tests check that none of them is importable where its distribution is not installed.
PLANNED_IMPORT_NAMES = (
    "sgl_diffusion_core",
    "sgl_diffusion_norm",
    "sgl_diffusion_modulate",
    "sgl_diffusion_rope",
    "sgl_diffusion_activation",
    "sgl_diffusion_layout",
    "sgl_diffusion_attention",
    "sgl_diffusion_ext",
    "sgl_diffusion_quant",
    "sgl_diffusion_sites",
    "sgl_diffusion",
)
VERSION_RE = re.compile(r"""^__version__\s*=\s*["']([^"']+)["']\s*$""", re.MULTILINE)


def normalize(name: str) -> str:
    """PEP 503 normalized distribution name."""
    return re.sub(r"[-_.]+", "-", name).lower()


def short_name(dirname: str) -> str:
    """The nox short name of ``packages/<dirname>``: ``core``, ``norm``, ..., ``umbrella``."""
    if dirname.startswith(PREFIX):
        return dirname[len(PREFIX) :]
    return "umbrella" if dirname == UMBRELLA else dirname


@dataclass(frozen=True)
class FamilyDep:
    """One requirement of a family package on another family package."""

    name: str  # normalized distribution name of the dependency
    specifier: str  # as written, e.g. ">=0.1,<0.2"
    raw: str  # the whole requirement string as written in pyproject.toml
    extra: str | None  # the optional-dependencies group it is in; None: [project] dependencies

    @property
    def where(self) -> str:
        return "dependencies" if self.extra is None else f"optional-dependencies.{self.extra}"


@dataclass(frozen=True)
class Package:
    dist: str  # normalized distribution name, e.g. sgl-diffusion-norm
    dir: Path  # packages/<dir>
    import_name: str  # sgl_diffusion_norm
    version: str
    deps: tuple[FamilyDep, ...]  # requirements on other family packages
    description: str = ""  # [project] description

    @property
    def short(self) -> str:
        return short_name(self.dir.name)

    @property
    def pyproject(self) -> Path:
        return self.dir / "pyproject.toml"

    @property
    def about(self) -> Path:
        return self.dir / "src" / self.import_name / "__about__.py"

    @property
    def changelog(self) -> Path:
        return self.dir / "CHANGELOG.md"

    @property
    def readme(self) -> Path:
        return self.dir / "README.md"

    @property
    def is_umbrella(self) -> bool:
        return self.dist == UMBRELLA

    @property
    def is_core(self) -> bool:
        return self.dist == CORE

    def tag(self, version: str | None = None) -> str:
        """The release tag: ``<distribution>-v<version>``."""
        return f"{self.dist}-v{version or self.version}"


def read_version(about: Path) -> str:
    m = VERSION_RE.search(about.read_text())
    if m is None:
        raise ValueError(f'{about}: no line `__version__ = "X.Y.Z"`')
    return m.group(1)


def _family_deps(project: dict, family_names: set[str]) -> tuple[FamilyDep, ...]:
    groups: list[tuple[str | None, list[str]]] = [(None, list(project.get("dependencies", [])))]
    groups += [(extra, list(reqs)) for extra, reqs in sorted(project.get("optional-dependencies", {}).items())]
    out = []
    for extra, reqs in groups:
        for raw in reqs:
            req = Requirement(raw)
            name = normalize(req.name)
            if name in family_names:
                out.append(FamilyDep(name, str(req.specifier), raw, extra))
    return tuple(out)


def discover(root: Path = ROOT) -> dict[str, Package]:
    """Normalized distribution name -> :class:`Package`, for every ``packages/*/pyproject.toml``."""
    projects: dict[str, tuple[Path, dict]] = {}
    for pyproject in sorted((root / "packages").glob("*/pyproject.toml")):
        project = tomllib.loads(pyproject.read_text()).get("project", {})
        if "name" not in project:
            raise ValueError(f"{pyproject}: no [project] name")
        projects[normalize(project["name"])] = (pyproject.parent, project)
    names = set(projects)
    found: dict[str, Package] = {}
    for dist, (pkg_dir, project) in projects.items():
        import_name = dist.replace("-", "_")
        about = pkg_dir / "src" / import_name / "__about__.py"
        if not about.is_file():
            raise ValueError(f"{pkg_dir}: the version file {about.relative_to(root)} does not exist")
        deps = _family_deps(project, names)
        found[dist] = Package(dist, pkg_dir, import_name, read_version(about), deps, project.get("description", ""))
    # Dependency order (a package after everything it depends on), by name among equals:
    # core, the domains, sites, the umbrella.
    out: dict[str, Package] = {}
    while len(out) < len(found):
        ready = sorted(d for d, p in found.items() if d not in out and all(x.name in out for x in p.deps))
        if not ready:
            cycle = sorted(set(found) - set(out))
            raise ValueError(f"dependency cycle among the family packages: {', '.join(cycle)}")
        out[ready[0]] = found[ready[0]]
    return out


def find(packages: dict[str, Package], name: str) -> Package:
    """A package by distribution name, import name, directory name or nox short name."""
    for pkg in packages.values():
        if name in (pkg.dist, pkg.import_name, pkg.dir.name, pkg.short) or normalize(name) == pkg.dist:
            return pkg
    known = ", ".join(f"{p.dist} ({p.short})" for p in packages.values())
    raise KeyError(f"no package {name!r} under packages/; known: {known}")


def dependents(packages: dict[str, Package], dist: str) -> list[Package]:
    """Packages that declare a requirement on ``dist`` (directly)."""
    return [p for p in packages.values() if any(d.name == dist for d in p.deps)]


def with_dependents(packages: dict[str, Package], dists: Iterable[str]) -> set[str]:
    """``dists`` and everything that depends on any of them, transitively."""
    out = set(dists)
    todo = list(out)
    while todo:
        for p in dependents(packages, todo.pop()):
            if p.dist not in out:
                out.add(p.dist)
                todo.append(p.dist)
    return out


def compatible_range(version: str) -> str:
    """The specifier a family package uses to depend on ``version`` (see the module docstring)."""
    v = Version(version)
    major, minor = v.major, v.minor
    if major == 0:
        return f">={major}.{minor},<{major}.{minor + 1}"
    return f">={major}.{minor},<{major + 1}"


def range_ok(specifier: str, version: str) -> bool:
    """Whether ``specifier`` is a compatible range (module docstring) that contains ``version``."""
    try:
        specs = list(SpecifierSet(specifier))
    except ValueError:
        return False
    lower = [s.version for s in specs if s.operator == ">="]
    upper = [s.version for s in specs if s.operator == "<"]
    if len(specs) != 2 or len(lower) != 1 or len(upper) != 1:
        return False
    if not re.fullmatch(r"\d+\.\d+", lower[0]):
        return False
    v, lo, hi = Version(version), Version(lower[0]), Version(upper[0])
    want_hi = Version(f"0.{v.minor + 1}") if v.major == 0 else Version(f"{v.major + 1}")
    if hi != want_hi:
        return False
    if v.major == 0:
        return (lo.major, lo.minor) == (0, v.minor)
    return lo.major == v.major and lo.minor <= v.minor


def accepts(specifier: str, version: str) -> bool:
    return SpecifierSet(specifier).contains(Version(version), prereleases=True)


def pin_problems(packages: dict[str, Package]) -> list[str]:
    """Every violation of the pin policy (module docstring); an empty list when all is well."""
    problems: list[str] = []
    if CORE not in packages:
        return [f"no {CORE} under packages/"]
    for pkg in packages.values():
        rel = pkg.pyproject.relative_to(pkg.dir.parent.parent).as_posix()
        seen: dict[str, list[FamilyDep]] = {}
        for dep in pkg.deps:
            seen.setdefault(dep.name, []).append(dep)
            target = packages[dep.name]
            want = compatible_range(target.version)
            if not accepts(dep.specifier or ">=0", target.version):
                problems.append(
                    f"{rel} [{dep.where}]: {dep.raw!r} does not accept the current {dep.name} {target.version}; "
                    f"use '{dep.name}{want}'"
                )
            elif not range_ok(dep.specifier, target.version):
                problems.append(
                    f"{rel} [{dep.where}]: {dep.raw!r} is not the compatible range of {dep.name} "
                    f"{target.version}; use '{dep.name}{want}'"
                )
        runtime = {d.name for d in pkg.deps if d.extra is None}
        if pkg.is_core:
            if pkg.deps:
                problems.append(f"{rel}: core depends on the family ({', '.join(sorted(seen))}); it must not")
        elif pkg.is_umbrella:
            missing = sorted(set(packages) - {pkg.dist} - runtime)
            if missing:
                problems.append(f"{rel}: the umbrella does not depend on {', '.join(missing)}")
        else:
            if CORE not in runtime:
                problems.append(f"{rel}: {pkg.dist} does not depend on {CORE}")
            if pkg.dist != SITES:
                others = sorted(set(seen) - {CORE})
                if others:
                    problems.append(
                        f"{rel}: the domain {pkg.dist} depends on {', '.join(others)}; a domain package depends "
                        f"on {CORE} and on nothing else of the family (only {SITES} and the umbrella may)"
                    )
    return problems
