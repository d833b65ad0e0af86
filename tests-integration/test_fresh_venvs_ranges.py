"""Install scenario 3 (see ``test_fresh_venvs.py``), in a fresh virtual environment built from the
wheels of ``nox -s build``.

Version ranges: a newer domain with the oldest core its range accepts, and a newer core
inside the range, install and run; a core outside the range (above or below) is refused
by pip's resolver (``--no-index``: nothing is fetched).

Marked ``venv`` (deselected by ``nox -s import_surface``; ``nox -s integration`` and
``nox -s ci`` run them). Every venv installs torch (a CPU wheel from pip's cache or the
local wheel directory); conftest.py creates them ahead, two at a time.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import build_dists
import workspace
from _venv_cases import CORE, DOMAINS, PACKAGES, SMOKE, script
from _venvs import Venv

pytestmark = pytest.mark.venv


# --- 3. version ranges --------------------------------------------------------------------------------

RUN_OPS = """
import torch
import sgl_diffusion_core as core
res = {"core": core.__version__, "ops": {}}
for module, dist in P["domains"]:
    importlib.import_module(module)
    for op in domain_ops(core, dist):
        case = smoke(op)
        if case is None:
            res["ops"][op] = {"ok": False, "why": "no SMOKE entry"}
            continue
        fn, ref, args, kwargs = case
        spec = core.select_impl(op, core.describe(op, *args, **kwargs))
        try:
            res["ops"][op] = compare(spec, fn(*args, **kwargs), ref(*args, **kwargs))
        except Exception as e:
            res["ops"][op] = {"ok": False, "why": f"{type(e).__name__}: {e}"}
print(json.dumps(res))
"""


def _bumped(version: str, how: str) -> str:
    major, minor, patch = (int(x) for x in version.split("."))
    if how == "patch+5":
        return f"{major}.{minor}.{patch + 5}"
    if how == "next-breaking":
        return f"0.{minor + 1}.0" if major == 0 else f"{major + 1}.0.0"
    if how == "before-range":  # below the compatible range's lower bound X.Y
        if major == 0:
            return f"0.{minor - 1}.99" if minor > 0 else ""
        return f"{major - 1}.99.0"
    raise ValueError(how)


def _build_at(pkg: workspace.Package, version: str, scratch: Path, outdir: Path) -> Path:
    """A wheel of ``pkg`` at another version, built from a scratch copy of its directory."""
    copy = scratch / f"{pkg.dir.name}-{version}"
    shutil.copytree(pkg.dir, copy, ignore=shutil.ignore_patterns("__pycache__", "*.egg-info", "dist", "build"))
    about = copy / "src" / pkg.import_name / "__about__.py"
    text, n = workspace.VERSION_RE.subn(f'__version__ = "{version}"', about.read_text())
    assert n == 1
    about.write_text(text)
    outdir.mkdir(parents=True, exist_ok=True)
    build_dists.build_one(copy, outdir, wheel_only=True, quiet=True)
    (wheel,) = outdir.glob(f"{pkg.import_name}-{version}-*.whl")
    return wheel


@pytest.mark.venv(triton=False)
def test_version_ranges(fresh_venv: Venv, wheelhouse: Path, tmp_path: Path) -> None:
    """Every domain at a newer version (same pins) against cores inside and outside its range."""
    domains = [p for p in DOMAINS if any(d.name == CORE.dist and d.extra is None for d in p.deps)]
    if not domains:
        pytest.skip("no domain package depends on core")
    core_now = CORE.version
    core_inside = _bumped(core_now, "patch+5")
    core_above = _bumped(core_now, "next-breaking")
    core_below = _bumped(core_now, "before-range")
    for pkg in domains:
        pin = next(d for d in pkg.deps if d.name == CORE.dist and d.extra is None)
        assert workspace.accepts(pin.specifier, core_now) and workspace.accepts(pin.specifier, core_inside), pin
        assert not workspace.accepts(pin.specifier, core_above), pin
        assert not core_below or not workspace.accepts(pin.specifier, core_below), pin

    scratch = tmp_path / "scratch"
    inside, outside = tmp_path / "inside", tmp_path / "outside"
    inside.mkdir()
    outside.mkdir()
    newer = {pkg.dist: _bumped(pkg.version, "patch+5") for pkg in domains}
    for pkg in domains:  # "newer domains": the same code and pins at a higher version
        shutil.copy(_build_at(pkg, newer[pkg.dist], scratch, inside), outside)
    for other in PACKAGES.values():  # what the domains need besides core (sites: other domains)
        if other not in domains and not other.is_core and not other.is_umbrella:
            shutil.copy(next(wheelhouse.glob(f"{other.import_name}-{other.version}-*.whl")), inside)
    shutil.copy(next(wheelhouse.glob(f"{CORE.import_name}-{core_now}-*.whl")), inside)
    _build_at(CORE, core_inside, scratch, inside)
    _build_at(CORE, core_above, scratch, outside)
    if core_below:
        _build_at(CORE, core_below, scratch, outside)

    venv = fresh_venv
    params = {"domains": [[p.import_name, p.dist] for p in domains], "smoke": SMOKE}
    wanted = [f"{d}=={v}" for d, v in newer.items()]

    # Newer domains with the oldest core their range accepts: install, run.
    venv.install_family(inside, *wanted, f"{CORE.dist}=={core_now}")
    venv.pip("check")
    out = venv.run(script(params, RUN_OPS))
    assert out["core"] == core_now
    assert out["ops"] and all(r["ok"] for r in out["ops"].values()), out["ops"]

    # A newer core inside the range: pip upgrades to it (the highest the range allows), runs.
    venv.install_family(inside, "--upgrade", CORE.dist)
    venv.pip("check")
    out = venv.run(script(params, RUN_OPS))
    assert out["core"] == core_inside, "pip did not pick the newest core inside the domains' range"
    assert all(r["ok"] for r in out["ops"].values()), out["ops"]

    # A core outside the range, asked for together with the domains: the resolver refuses.
    proc = venv.install_family(outside, *wanted, f"{CORE.dist}=={core_above}", check=False)
    text = proc.stdout + proc.stderr
    assert proc.returncode != 0, f"pip installed {CORE.dist} {core_above} next to domains pinned below it"
    assert "ResolutionImpossible" in text or "conflicting dependencies" in text, text[-3000:]
    assert venv.distributions()[CORE.dist] == core_inside, "a refused install changed the environment"

    # Only cores outside the range to be had: nothing satisfies a domain's requirement.
    venv.pip("uninstall", "-y", *newer, CORE.dist)
    for pkg in domains:
        proc = venv.install_family(outside, pkg.dist, check=False)
        text = proc.stdout + proc.stderr
        assert proc.returncode != 0, f"pip installed {pkg.dist} although only cores outside its range exist"
        assert CORE.dist in text and "satisfies the requirement" in text, text[-3000:]
        assert core_above in text and (not core_below or core_below in text), text[-3000:]
    left = sorted(set(venv.distributions()) & set(PACKAGES))
    assert not left, f"refused installs left {left} installed"
