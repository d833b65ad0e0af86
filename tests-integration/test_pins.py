"""The family's pins on itself, against the versions in the tree (policy: tools/workspace.py).

Every dependency of a family package on another is a compatible range that contains the
other's current version (``>=0.Y,<0.(Y+1)`` while on 0.x); domain packages depend on core
(and on nothing else of the family, sites aside); the umbrella on every other package.
``tools/release.py`` keeps this true across releases (it refuses a bump that breaks a pin,
or moves the pins with ``--move-pins``).
"""

from __future__ import annotations

from pathlib import Path

import pytest
from packaging.specifiers import SpecifierSet

import _venvs  # noqa: F401  (puts tools/ on sys.path)
import workspace

PACKAGES = workspace.discover()


def test_family_pins_match_current_versions() -> None:
    problems = workspace.pin_problems(PACKAGES)
    assert not problems, "family pins out of policy (tools/workspace.py):\n" + "\n".join(problems)


@pytest.mark.parametrize(
    "pkg", [p for p in PACKAGES.values() if not p.is_core], ids=[p.short for p in PACKAGES.values() if not p.is_core]
)
def test_depends_on_core_with_the_compatible_range(pkg: workspace.Package) -> None:
    core = PACKAGES[workspace.CORE]
    pins = [d for d in pkg.deps if d.name == core.dist and d.extra is None]
    assert pins, f"{pkg.dist} does not depend on {core.dist}"
    for dep in pins:
        assert workspace.range_ok(dep.specifier, core.version), (
            f"{pkg.pyproject}: {dep.raw!r}; with core at {core.version} it must be "
            f"'{core.dist}{workspace.compatible_range(core.version)}'"
        )
    if core.version.startswith("0."):  # on 0.x there is one compatible range: >=0.Y,<0.(Y+1)
        want = SpecifierSet(workspace.compatible_range(core.version))
        assert all(SpecifierSet(d.specifier) == want for d in pins), [d.raw for d in pins]


def test_umbrella_pins_every_package() -> None:
    umbrella = PACKAGES.get(workspace.UMBRELLA)
    if umbrella is None:
        pytest.skip("no umbrella under packages/")
    pins = {d.name: d for d in umbrella.deps if d.extra is None}
    for pkg in PACKAGES.values():
        if pkg is umbrella:
            continue
        assert pkg.dist in pins, f"the umbrella does not depend on {pkg.dist}"
        assert workspace.accepts(pins[pkg.dist].specifier, pkg.version)
        assert workspace.range_ok(pins[pkg.dist].specifier, pkg.version), pins[pkg.dist].raw


def _fake_family(root: Path, core: str, norm_pin: str, umbrella_pins: list[str], extra: str = "") -> None:
    def pkg(dirname: str, name: str, version: str, deps: list[str], opt: str = "") -> None:
        d = root / "packages" / dirname
        src = d / "src" / name.replace("-", "_")
        src.mkdir(parents=True)
        (src / "__about__.py").write_text(f'__version__ = "{version}"\n')
        deps_s = ", ".join(f'"{x}"' for x in [*deps, "torch>=2.6"])
        (d / "pyproject.toml").write_text(f'[project]\nname = "{name}"\ndependencies = [{deps_s}]\n{opt}')

    pkg("sgl-diffusion-core", "sgl-diffusion-core", core, [])
    pkg("sgl-diffusion-norm", "sgl-diffusion-norm", "0.3.1", [norm_pin], extra)
    pkg("sgl-diffusion", "sgl-diffusion", "0.1.0", umbrella_pins)


C01, C02, C14 = "sgl-diffusion-core>=0.1,<0.2", "sgl-diffusion-core>=0.2,<0.3", "sgl-diffusion-core>=1.4,<2"
N03 = "sgl-diffusion-norm>=0.3,<0.4"


@pytest.mark.parametrize(
    "core, norm_pin, umbrella_pins, extra, want",
    [
        ("0.1.4", C01, [C01, N03], "", []),
        ("0.2.0", C01, [C02, N03], "", [f"'{C01}' does not accept the current sgl-diffusion-core 0.2.0; use '{C02}'"]),
        ("0.1.0", "sgl-diffusion-core>=0.1", [C01, N03], "", ["is not the compatible range"]),
        ("0.1.0", C01, [C01], "", ["the umbrella does not depend on sgl-diffusion-norm"]),
        ("1.4.2", "sgl-diffusion-core>=1.2,<2", [C14, N03], "", []),
        ("1.4.2", "sgl-diffusion-core>=1.5,<2", [C14, N03], "", ["does not accept"]),
        ("0.1.0", C01, [C01, N03], '[project.optional-dependencies]\nall = ["sgl-diffusion-core>=0.0,<0.1"]\n',
         ["[optional-dependencies.all]: 'sgl-diffusion-core>=0.0,<0.1' does not accept"]),
    ],
    ids=["ok", "core-minor-bump", "open-range", "umbrella-missing", "1.x-ok", "1.x-above", "extra"],
)  # fmt: skip
def test_policy_checker(tmp_path: Path, core: str, norm_pin: str, umbrella_pins: list[str], extra: str,
                        want: list[str]) -> None:  # fmt: skip
    """The checker itself, on small fake families."""
    _fake_family(tmp_path, core, norm_pin, umbrella_pins, extra)
    problems = workspace.pin_problems(workspace.discover(tmp_path))
    if not want:
        assert problems == []
    for w in want:
        assert any(w in p for p in problems), f"expected a problem containing {w!r}, got:\n" + "\n".join(problems)


def test_compatible_range() -> None:
    assert workspace.compatible_range("0.1.0") == ">=0.1,<0.2"
    assert workspace.compatible_range("0.9.3") == ">=0.9,<0.10"
    assert workspace.compatible_range("2.3.1") == ">=2.3,<3"
    assert workspace.range_ok(">=0.1,<0.2", "0.1.7") and not workspace.range_ok(">=0.1,<0.2", "0.2.0")
    assert not workspace.range_ok(">=0.1.0,<0.2", "0.1.0"), "a lower bound is X.Y"
    assert not workspace.range_ok(">=0.1,<0.3", "0.1.0"), "on 0.x the range spans one minor"
