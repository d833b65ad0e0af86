"""Install scenario 4 (see ``test_fresh_venvs.py``), in a fresh virtual environment built from the
wheels of ``nox -s build``.

A missing optional backend module (Triton here; FlyDSL and other GPU-only libraries the
same way, through ``Capabilities.requires``): every package imports, ``explain`` and an
explicit ``backend=`` say which extra to install, ``backend=None`` falls back to a
backend that can serve; the umbrella with a domain missing raises an ImportError that
names the distribution.

Marked ``venv`` (deselected by ``nox -s import_surface``; ``nox -s integration`` and
``nox -s ci`` run them). Every venv installs torch (a CPU wheel from pip's cache or the
local wheel directory); conftest.py creates them ahead, two at a time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from _venv_cases import DOMAINS, PACKAGES, SMOKE, SMOKE_FILE, UMBRELLA, script
from _venvs import Venv

pytestmark = pytest.mark.venv


# --- 4. a missing optional backend module -------------------------------------------------------------

MISSING_BACKEND = """
import torch
res = {"imports": {}, "touch": {}, "specs": [], "interpret": os.environ.get("TRITON_INTERPRET")}
for module in P["modules"]:
    try:
        mod = importlib.import_module(module)
        res["imports"][module] = "ok"
    except Exception as e:
        res["imports"][module] = f"{type(e).__name__}: {e}"
        continue
    for name in getattr(mod, "__all__", []):
        try:
            getattr(mod, name)
        except Exception as e:
            res["touch"][f"{module}.{name}"] = f"{type(e).__name__}: {e}"
import sgl_diffusion_core as core
for op in core.REGISTRY.ops():
    opdef = core.REGISTRY.op(op)
    for spec in core.REGISTRY.specs(op):
        missing = [m for m in spec.capabilities.requires if importlib.util.find_spec(m) is None]
        if not missing:
            continue
        row = {"op": op, "backend": spec.backend, "missing": missing, "dist": opdef.distribution}
        res["specs"].append(row)
        case = smoke(op)
        if case is None:
            row["error"] = "no SMOKE entry"
            continue
        fn, ref, args, kwargs = case
        exp = core.explain(op, *args, **kwargs)
        row["verdict"] = [[v.backend, v.ok, list(v.reasons)] for v in exp.verdicts if v.backend == spec.backend][0]
        row["chosen"] = exp.chosen
        try:
            fn(*args, backend=spec.backend, **kwargs)
            row["explicit"] = None
        except Exception as e:
            row["explicit"] = [type(e).__name__, isinstance(e, ValueError), str(e)]
        try:
            y = fn(*args, **kwargs)
            chosen = core.select_impl(op, core.describe(op, *args, **kwargs))
            row["auto"] = dict(compare(chosen, y, ref(*args, **kwargs)), backend=chosen.backend)
        except Exception as e:
            row["auto"] = {"ok": False, "error": [type(e).__name__, isinstance(e, ValueError), str(e)]}
res["loaded"] = sorted(m for m in P["absent"] if m in sys.modules)
print(json.dumps(res))
"""

MISSING_DOMAIN = """
import sgl_diffusion as sd
res = {}
for name in sd.__all__:
    try:
        getattr(sd, name)
        res[name] = None
    except Exception as e:
        res[name] = [type(e).__name__, isinstance(e, ImportError), str(e)]
print(json.dumps(res))
"""
# Optional backend modules the family knows of (Capabilities.requires); those absent in a venv are
# checked never to be imported. The test itself is generic over every spec's `requires`.
OPTIONAL_MODULES = ("triton", "flydsl")


@pytest.mark.venv(triton=False)
def test_missing_optional_backend(fresh_venv: Venv, wheelhouse: Path) -> None:
    venv = fresh_venv
    wheels = sorted(str(w) for w in wheelhouse.glob("*.whl"))
    venv.install_family(wheelhouse, *wheels, no_deps=True)  # the whole family, torch only: no Triton
    probe = "import importlib.util, json; print(json.dumps([m for m in {m!r} if importlib.util.find_spec(m) is None]))"
    absent = venv.run(probe.format(m=OPTIONAL_MODULES))
    assert "triton" in absent, "triton is installed in the torch-only venv"
    modules = [p.import_name for p in PACKAGES.values()]
    params = {"modules": modules, "smoke": SMOKE, "absent": absent}

    for interpret in ("0", "1"):
        out = venv.run(script(params, MISSING_BACKEND), env={"TRITON_INTERPRET": interpret})
        where = f"(TRITON_INTERPRET={interpret}, no {', '.join(absent)})"
        assert all(v == "ok" for v in out["imports"].values()), f"imports fail {where}: {out['imports']}"
        assert not out["touch"], f"public names that fail to resolve {where}: {out['touch']}"
        assert out["specs"], f"no registered backend requires a missing module {where}; nothing was tested"
        for row in out["specs"]:
            label = f"{row['op']}/{row['backend']} {where}"
            assert "error" not in row, f"{label}: {row['error']} (add one in {SMOKE_FILE})"
            extras = [f"pip install '{row['dist']}[{m}]'" for m in row["missing"]]
            _, ok, reasons = row["verdict"]
            assert not ok, f"{label}: explain() says it can serve"
            assert any(x in r for r in reasons for x in extras), f"{label}: no reason names {extras}: {reasons}"
            assert row["explicit"] is not None, f"{label}: backend={row['backend']!r} did not raise"
            name, is_value_error, msg = row["explicit"]
            assert name == "UnsupportedInputError" and is_value_error, f"{label}: explicit backend raised {name}: {msg}"
            assert any(x in msg for x in extras), f"{label}: the error does not say how to install it: {msg}"
            auto = row["auto"]
            if "error" in auto:  # no other backend can serve: a clear error, not a crash
                assert auto["error"][0] == "UnsupportedInputError", f"{label}: backend=None raised {auto['error']}"
            else:
                assert auto["ok"] and auto["backend"] != row["backend"], f"{label}: fallback failed: {auto}"
        assert not out["loaded"], f"{where}: modules that are not installed appear in sys.modules: {out['loaded']}"

    # The CLI reports the missing backend instead of crashing.
    doctor = json.loads(venv.cmd(str(venv.path / "bin" / "sgl-diffusion"), "doctor", "--json").stdout)
    assert doctor

    # A missing domain: the umbrella's names of it raise an ImportError naming the distribution.
    if UMBRELLA is None:
        return
    venv.pip("uninstall", "-y", *[p.dist for p in DOMAINS])
    out = venv.run(script({"smoke": {}}, MISSING_DOMAIN))
    failing = {n: r for n, r in out.items() if r is not None}
    assert failing, "with every domain uninstalled, every umbrella name still resolves"
    for name, (kind, is_import_error, msg) in failing.items():
        assert is_import_error, f"sgl_diffusion.{name} raised {kind}, not an ImportError: {msg}"
        assert "pip install" in msg, f"sgl_diffusion.{name}: the error does not say what to install: {msg}"
        assert any(p.dist in msg for p in DOMAINS), f"sgl_diffusion.{name}: the error names no distribution: {msg}"
