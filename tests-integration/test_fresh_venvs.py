"""Install scenarios, each in a fresh virtual environment built from the wheels of ``nox -s build``.

1. one domain package alone (with core, nothing else of the family): it imports, every op
   of it runs on the CPU with every backend (Triton kernels under ``TRITON_INTERPRET=1``)
   and matches its reference within the spec's contract (a backend that runs on GPUs only,
   such as PyTorch's SDPA kernels, refuses with ``UnsupportedInputError`` naming the CPU);
   no other family import name is importable. Parametrized over every domain under
   packages/ (a new one joins by itself; its ops need a SMOKE entry in ``_venv_cases.py``).
2. the umbrella: ``import sgl_diffusion`` loads no package of the family, no torch and no
   Triton; the whole surface resolves, object-identical to the domains'; touching one
   domain's name loads that domain (and what it depends on) only; the console script runs.

The other scenarios: 3. version ranges (``test_fresh_venvs_ranges.py``); 4. a missing optional
backend module or domain (``test_fresh_venvs_unavailable.py``). What they share (the family, the
SMOKE cases, the helpers of the scripts run in a venv) is in ``_venv_cases.py``.

Marked ``venv`` (deselected by ``nox -s import_surface``; ``nox -s integration`` and
``nox -s ci`` run them). Every venv installs torch (a CPU wheel from pip's cache or the
local wheel directory); conftest.py creates them ahead, two at a time. The three modules take
about two minutes on two cores.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import workspace
from _venv_cases import CORE, DOMAINS, FAMILY_IMPORTS, PACKAGES, SMOKE, SMOKE_FILE, UMBRELLA, family_of, script
from _venvs import Venv

pytestmark = pytest.mark.venv


def _missing_smoke(ops: dict) -> list[str]:
    return sorted(op for op, per in ops.items() if per is None)


# --- 1. one domain package alone ------------------------------------------------------------------

ALONE = """
import torch
mod = importlib.import_module(P["module"])
import sgl_diffusion_core as core
res = {"version": mod.__version__, "ops": {}, "interpret": os.environ.get("TRITON_INTERPRET")}
for op in domain_ops(core, P["dist"]):
    case = smoke(op)
    if case is None:
        res["ops"][op] = None
        continue
    fn, ref, args, kwargs = case
    expected = ref(*args, **kwargs)
    per = {}
    for spec in core.REGISTRY.specs(op):
        caps = spec.capabilities
        gpu_only = "cpu" not in caps.platforms and not caps.interpretable  # must refuse, naming the CPU
        try:
            y = fn(*args, backend=spec.backend, **kwargs)
            per[spec.backend] = {"ok": False, "why": "ran on CPU tensors"} if gpu_only else compare(spec, y, expected)
        except core.UnsupportedInputError as e:
            per[spec.backend] = {"ok": gpu_only and "tensors on cpu" in str(e), "why": str(e)}
        except Exception as e:
            per[spec.backend] = {"ok": False, "why": f"{type(e).__name__}: {e}"}
        per[spec.backend]["requires"] = list(caps.requires)
    res["ops"][op] = per
res["triton_loaded"] = "triton" in sys.modules
res["imports"] = {name: try_import(name) for name in P["others"]}
print(json.dumps(res))
"""


@pytest.mark.venv(triton=True)
@pytest.mark.parametrize("pkg", DOMAINS, ids=[p.short for p in DOMAINS])
def test_one_domain_alone(pkg: workspace.Package, fresh_venv: Venv, wheelhouse: Path) -> None:
    venv = fresh_venv
    venv.install_family(wheelhouse, f"{pkg.dist}[triton]" if _has_extra(pkg, "triton") else pkg.dist)
    venv.pip("check")
    installed = {d for d in venv.distributions() if d in PACKAGES}
    assert installed == family_of(pkg), f"installing {pkg.dist} brought {sorted(installed)} of the family"

    expected_importable = {PACKAGES[d].import_name for d in installed}
    others = [n for n in FAMILY_IMPORTS if n not in expected_importable]
    params = {"module": pkg.import_name, "dist": pkg.dist, "smoke": SMOKE, "others": others}
    out = venv.run(script(params, ALONE), env={"TRITON_INTERPRET": "1"})

    assert out["version"] == pkg.version
    # A package without registered ops (docs/design.md: ext has no backend matrix) only gets the import checks.
    missing = _missing_smoke(out["ops"])
    assert not missing, f"add a SMOKE entry for {missing} in {SMOKE_FILE} (small CPU inputs)"
    bad = {f"{op}/{b}": r["why"] for op, per in out["ops"].items() for b, r in per.items() if not r["ok"]}
    assert not bad, f"{pkg.dist} alone, on the CPU (TRITON_INTERPRET=1): backends that failed: {bad}"
    ran_triton = [f"{op}/{b}" for op, per in out["ops"].items() for b, r in per.items() if "triton" in r["requires"]]
    if ran_triton:
        assert out["triton_loaded"], "the Triton backends 'ran' without importing triton"
    leaked = {n: r for n, r in out["imports"].items() if r != f"ModuleNotFoundError: {n}"}
    assert not leaked, f"with only {sorted(installed)} installed, other family names import (or fail oddly): {leaked}"


def _has_extra(pkg: workspace.Package, extra: str) -> bool:
    project = workspace.tomllib.loads(pkg.pyproject.read_text()).get("project", {})
    return extra in project.get("optional-dependencies", {})


# --- 2. the umbrella --------------------------------------------------------------------------------

UMBRELLA_SURFACE = """
import sgl_diffusion as sd
fam = lambda: sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in P["family"]})
res = {"after_import": fam(), "torch": "torch" in sys.modules,
       "triton": any(m == "triton" or m.startswith("triton.") for m in sys.modules)}
unresolved, not_same = {}, []
for name in sd.__all__:
    try:
        obj = getattr(sd, name)
    except Exception as e:
        unresolved[name] = f"{type(e).__name__}: {e}"
providers = {}
# a name core exports and a domain re-exports (IndexOutOfRangeError) is provided by core
core_all = set(importlib.import_module("sgl_diffusion_core").__all__) if "sgl_diffusion_core" in P["family"] else set()
for pkg in P["family"]:
    if pkg == "sgl_diffusion":
        continue
    mod = importlib.import_module(pkg)
    for name in getattr(mod, "__all__", []):
        if name in sd.__all__ and name != "__version__":
            if pkg == "sgl_diffusion_core" or name not in core_all:
                providers.setdefault(pkg, []).append(name)
            if getattr(sd, name) is not getattr(mod, name):
                not_same.append(f"{pkg}.{name}")
res.update(unresolved=unresolved, not_same=not_same, providers=providers, after_touch=fam(),
           all=len(sd.__all__))
print(json.dumps(res))
"""

UMBRELLA_TOUCH = """
import sgl_diffusion as sd
before = sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in P["family"]})
getattr(sd, P["name"])
after = sorted({m.split(".")[0] for m in sys.modules if m.split(".")[0] in P["family"]})
print(json.dumps({"before": before, "after": after,
                  "triton": any(m == "triton" or m.startswith("triton.") for m in sys.modules)}))
"""


@pytest.mark.venv(triton=False)
@pytest.mark.skipif(UMBRELLA is None, reason="packages/sgl-diffusion (the umbrella) does not exist")
def test_umbrella(fresh_venv: Venv, wheelhouse: Path) -> None:
    venv = fresh_venv
    venv.install_family(wheelhouse, UMBRELLA.dist)
    venv.pip("check")
    installed = {d for d in venv.distributions() if d in PACKAGES}
    assert installed == set(PACKAGES), f"the umbrella installed {sorted(installed)}, not the whole family"

    family = [p.import_name for p in PACKAGES.values()]
    out = venv.run(script({"family": family, "smoke": {}}, UMBRELLA_SURFACE))
    assert out["after_import"] == ["sgl_diffusion"], f"`import sgl_diffusion` loaded {out['after_import']}"
    assert not out["torch"], "`import sgl_diffusion` imported torch"
    assert not out["triton"], "`import sgl_diffusion` imported Triton"
    assert not out["unresolved"], f"umbrella names that do not resolve: {out['unresolved']}"
    assert not out["not_same"], f"umbrella names that are not the domain's own object: {out['not_same']}"
    assert out["after_touch"] == sorted(family)

    # First touch of one name of package X loads X (and core), at most what X depends on, nothing
    # else. (A package may load its other family dependencies lazily: sites imports the domains it
    # mounts only when it mounts them.)
    for module, names in sorted(out["providers"].items()):
        pkg = next(p for p in PACKAGES.values() if p.import_name == module)
        allowed = {"sgl_diffusion"} | {PACKAGES[d].import_name for d in family_of(pkg)}
        must = {"sgl_diffusion", module, CORE.import_name}
        got = venv.run(script({"family": family, "smoke": {}, "name": names[0]}, UMBRELLA_TOUCH))
        assert got["before"] == ["sgl_diffusion"]
        loaded = set(got["after"])
        assert must <= loaded <= allowed, (
            f"touching sgl_diffusion.{names[0]} loaded {got['after']}: it must load {sorted(must)} "
            f"and nothing outside {sorted(allowed)}"
        )
        assert not got["triton"], f"touching sgl_diffusion.{names[0]} imported Triton"
    assert {p.import_name for p in DOMAINS} <= set(out["providers"]), (
        f"the umbrella re-exports nothing of {sorted({p.import_name for p in DOMAINS} - set(out['providers']))}"
    )

    proc = venv.cmd(str(venv.path / "bin" / "sgl-diffusion"), "doctor", "--json")
    doctor = json.loads(proc.stdout)
    assert doctor, "sgl-diffusion doctor --json printed nothing"


# --- 1b. the norm domain with its [flydsl] extra ----------------------------------------------------

WITH_FLYDSL = """
import torch
import sgl_diffusion_norm as norm
import sgl_diffusion_core as core
x = torch.randn(2, 4, 64, dtype=torch.bfloat16)
s = torch.randn(2, 64, dtype=torch.bfloat16)
y = norm.ln_modulate(x, s, s)
ex = core.explain(norm.ln_modulate, x, s, s, backend="flydsl", exact=False)
fly = next(v for v in ex.verdicts if v.backend == "flydsl")
try:
    norm.ln_modulate(x, s, s, backend="flydsl", exact=False)
    err = None
except core.UnsupportedInputError as e:
    err = str(e)
import sys
loaded = sorted(m for m in sys.modules if m.split(".")[0] == "flydsl")
import flydsl
res = {"flydsl_loaded_before": loaded, "ok": bool(torch.equal(y, norm.ln_modulate_reference(x, s, s))),
       "reasons": list(fly.reasons), "error": err, "flydsl": flydsl.__version__}
print(json.dumps(res))
"""


@pytest.mark.venv(triton=True)
def test_norm_with_flydsl_extra(fresh_venv: Venv, wheelhouse: Path) -> None:
    """``pip install 'sgl-diffusion-norm[flydsl]'``: FlyDSL installed, never imported by the domain, its
    backend refusing CPU tensors with the platform as the only reason (the module is there)."""
    pkg = next(p for p in DOMAINS if p.dist == "sgl-diffusion-norm")
    project = workspace.tomllib.loads(pkg.pyproject.read_text())["project"]
    fresh_venv.pip("install", "--no-compile", *project["optional-dependencies"]["flydsl"])  # from the index
    fresh_venv.install_family(wheelhouse, f"{pkg.dist}[triton,flydsl]")
    fresh_venv.pip("check")
    out = fresh_venv.run(script({}, WITH_FLYDSL))
    assert not out["flydsl_loaded_before"], "importing sgl_diffusion_norm (and running an op) imported flydsl"
    assert out["ok"]
    assert out["reasons"] and all("tensors on cpu" in r for r in out["reasons"]), out["reasons"]
    assert out["error"] and "runs on hip" in out["error"], out["error"]
