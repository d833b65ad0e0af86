"""Install scenarios, each in a fresh virtual environment built from the wheels of ``nox -s build``.

1. one domain package alone (with core, nothing else of the family): it imports, every op
   of it runs on the CPU with every backend (Triton kernels under ``TRITON_INTERPRET=1``)
   and matches its reference within the spec's contract; no other family import name is
   importable. Parametrized over every domain under packages/ (a new one joins by itself;
   its ops need a SMOKE entry below).
2. the umbrella: ``import sgl_diffusion`` loads no package of the family, no torch and no
   Triton; the whole surface resolves, object-identical to the domains'; touching one
   domain's name loads that domain (and what it depends on) only; the console script runs.
3. version ranges: a newer domain with the oldest core its range accepts, and a newer core
   inside the range, install and run; a core outside the range (above or below) is refused
   by pip's resolver (``--no-index``: nothing is fetched).
4. a missing optional backend module (Triton here; FlyDSL and other GPU-only libraries the
   same way, through ``Capabilities.requires``): every package imports, ``explain`` and an
   explicit ``backend=`` say which extra to install, ``backend=None`` falls back to a
   backend that can serve; the umbrella with a domain missing raises an ImportError that
   names the distribution.

Marked ``venv`` (deselected by ``nox -s import_surface``; ``nox -s integration`` and
``nox -s ci`` run them). Every venv installs torch (a CPU wheel from pip's cache or the
local wheel directory); conftest.py creates them ahead, two at a time. The whole module
takes about two minutes on two cores.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import build_dists
import workspace
from _venvs import Venv  # noqa: I001  (puts tools/ on sys.path)

pytestmark = pytest.mark.venv

PACKAGES = workspace.discover()
CORE = PACKAGES[workspace.CORE]
UMBRELLA = PACKAGES.get(workspace.UMBRELLA)
DOMAINS = [p for p in PACKAGES.values() if not p.is_core and not p.is_umbrella]
FAMILY_IMPORTS = sorted(set(workspace.PLANNED_IMPORT_NAMES) | {p.import_name for p in PACKAGES.values()})

# op id -> Python source run inside a venv, defining CASE = (op, reference, args, kwargs) with
# small CPU inputs; the op is called once per registered backend (backend=...). Only the
# package's top level is used. A new op needs an entry here (the tests say so).
SMOKE: dict[str, str] = {
    "norm.ln_modulate": """
import torch
from sgl_diffusion_norm import ln_modulate, ln_modulate_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (ln_modulate, ln_modulate_reference, (x, scale, shift), {})
""",
    # --- per-head and VAE norms ---
    "norm.qk_norm": """
import torch
from sgl_diffusion_norm import qk_norm, qk_norm_reference
g = torch.Generator().manual_seed(0)
qkv = torch.randn(2, 8, 3 * 4 * 72, generator=g).to(torch.bfloat16).view(2, 8, 3, 4, 72)
w = torch.randn(72, generator=g).to(torch.bfloat16)
CASE = (qk_norm, qk_norm_reference, (qkv[:, :, 0], qkv[:, :, 1], w, w), {})
""",
    "norm.channel_rms_norm": """
import torch
from sgl_diffusion_norm import channel_rms_norm, channel_rms_norm_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 12, 2, 4, 6, generator=g).to(torch.bfloat16).to(memory_format=torch.channels_last_3d)
gamma = torch.rand(12, 1, 1, 1, generator=g).to(torch.bfloat16)
CASE = (channel_rms_norm, channel_rms_norm_reference, (x, gamma), {"silu": True})
""",
    "norm.group_norm_silu": """
import torch
from sgl_diffusion_norm import group_norm_silu, group_norm_silu_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 12, 2, 4, 6, generator=g).to(torch.bfloat16).to(memory_format=torch.channels_last_3d)
w, b = (torch.randn(12, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (group_norm_silu, group_norm_silu_reference, (x, 4, w, b), {})
""",
    # ---- row-norm family ----
    "norm.layer_norm": """
import torch
from sgl_diffusion_norm import layer_norm, layer_norm_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
w, b = (torch.randn(96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (layer_norm, layer_norm_reference, (x, w, b), {})
""",
    "norm.rms_norm": """
import torch
from sgl_diffusion_norm import rms_norm, rms_norm_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
w = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (rms_norm, rms_norm_reference, (x, w), {})
""",
    "norm.rms_modulate": """
import torch
from sgl_diffusion_norm import rms_modulate, rms_modulate_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 1, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (rms_modulate, rms_modulate_reference, (x, scale, shift), {})
""",
    "norm.gated_residual_norm_modulate": """
import torch
from sgl_diffusion_norm import gated_residual_norm_modulate, gated_residual_norm_modulate_reference
g = torch.Generator().manual_seed(0)
residual, update = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
gate, scale, shift = (torch.randn(2, 1, 96, generator=g).to(torch.bfloat16) for _ in range(3))
args = (residual, update, gate, scale, shift)
CASE = (gated_residual_norm_modulate, gated_residual_norm_modulate_reference, args, {})
""",
    # ---- end of the row-norm family ----
    "modulate.scale_shift": """
import torch
from sgl_diffusion_modulate import scale_shift, scale_shift_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 1, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (scale_shift, scale_shift_reference, (x, scale, shift), {})
""",
    "modulate.gated_residual": """
import torch
from sgl_diffusion_modulate import gated_residual, gated_residual_reference
g = torch.Generator().manual_seed(0)
residual, update = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
gate = torch.randn(2, 1, 96, generator=g).to(torch.bfloat16)
CASE = (gated_residual, gated_residual_reference, (residual, update, gate), {})
""",
    "modulate.indexed_scale_shift": """
import torch
from sgl_diffusion_modulate import indexed_scale_shift, indexed_scale_shift_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
scale, shift = (torch.randn(2, 2, 96, generator=g).to(torch.bfloat16) for _ in range(2))
index = torch.randint(0, 2, (2, 8), generator=g)
CASE = (indexed_scale_shift, indexed_scale_shift_reference, (x, scale, shift, index), {})
""",
    "modulate.indexed_gated_residual": """
import torch
from sgl_diffusion_modulate import indexed_gated_residual, indexed_gated_residual_reference
g = torch.Generator().manual_seed(0)
residual, update = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
gate = torch.randn(2, 96, generator=g).to(torch.bfloat16)
index = torch.randint(0, 2, (8,), generator=g, dtype=torch.int32)
CASE = (indexed_gated_residual, indexed_gated_residual_reference, (residual, update, gate, index), {})
""",
    "rope.apply_rope": """
import torch
from sgl_diffusion_rope import apply_rope, apply_rope_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 3, 16, generator=g).to(torch.bfloat16)
ang = torch.rand(8, 8, generator=g) * 6
CASE = (apply_rope, apply_rope_reference, (x, ang.cos(), ang.sin()), {"interleaved": True})
""",
    "rope.apply_rope_qk": """
import torch
from sgl_diffusion_rope import apply_rope_qk, apply_rope_qk_reference
g = torch.Generator().manual_seed(0)
q, k = (torch.randn(2, 8, 3, 16, generator=g).to(torch.bfloat16) for _ in range(2))
ang = torch.rand(8, 8, generator=g) * 6
CASE = (apply_rope_qk, apply_rope_qk_reference, (q, k, ang.cos(), ang.sin()), {})
""",
    "rope.rope_3d": """
import torch
from sgl_diffusion_rope import rope_3d, rope_3d_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 2 * 3 * 4, 2, 32, generator=g).to(torch.bfloat16)
CASE = (rope_3d, rope_3d_reference, (x, (2, 3, 4), (8, 12, 12)), {})
""",
    "rope.qk_norm_rope": """
import torch
from sgl_diffusion_rope import qk_norm_rope, qk_norm_rope_reference
g = torch.Generator().manual_seed(0)
q, k = (torch.randn(2, 8, 3, 16, generator=g).to(torch.bfloat16) for _ in range(2))
w = torch.rand(16, generator=g).to(torch.bfloat16) + 0.5
ang = torch.rand(8, 8, generator=g) * 6
CASE = (qk_norm_rope, qk_norm_rope_reference, (q, k, w, w, ang.cos(), ang.sin()), {"inplace": False})
""",
    "activation.silu": """
import torch
from sgl_diffusion_activation import silu, silu_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
bias = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (silu, silu_reference, (x,), {"bias": bias})
""",
    "activation.gelu_tanh": """
import torch
from sgl_diffusion_activation import gelu_tanh, gelu_tanh_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
bias = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (gelu_tanh, gelu_tanh_reference, (x,), {"bias": bias})
""",
    "activation.gelu": """
import torch
from sgl_diffusion_activation import gelu, gelu_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 96, generator=g).to(torch.bfloat16)
bias = torch.randn(96, generator=g).to(torch.bfloat16)
CASE = (gelu, gelu_reference, (x,), {"bias": bias})
""",
    "activation.silu_and_mul": """
import torch
from sgl_diffusion_activation import silu_and_mul, silu_and_mul_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 192, generator=g).to(torch.bfloat16)
CASE = (silu_and_mul, silu_and_mul_reference, (x,), {})
""",
    "activation.gelu_tanh_and_mul": """
import torch
from sgl_diffusion_activation import gelu_tanh_and_mul, gelu_tanh_and_mul_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 192, generator=g).to(torch.bfloat16)
CASE = (gelu_tanh_and_mul, gelu_tanh_and_mul_reference, (x,), {})
""",
    "activation.gelu_and_mul": """
import torch
from sgl_diffusion_activation import gelu_and_mul, gelu_and_mul_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(2, 8, 192, generator=g).to(torch.bfloat16)
CASE = (gelu_and_mul, gelu_and_mul_reference, (x,), {})
""",
    "activation.silu_mul": """
import torch
from sgl_diffusion_activation import silu_mul, silu_mul_reference
g = torch.Generator().manual_seed(0)
a, b = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (silu_mul, silu_mul_reference, (a, b), {})
""",
    "activation.gelu_tanh_mul": """
import torch
from sgl_diffusion_activation import gelu_tanh_mul, gelu_tanh_mul_reference
g = torch.Generator().manual_seed(0)
a, b = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (gelu_tanh_mul, gelu_tanh_mul_reference, (a, b), {})
""",
    "activation.gelu_mul": """
import torch
from sgl_diffusion_activation import gelu_mul, gelu_mul_reference
g = torch.Generator().manual_seed(0)
a, b = (torch.randn(2, 8, 96, generator=g).to(torch.bfloat16) for _ in range(2))
CASE = (gelu_mul, gelu_mul_reference, (a, b), {})
""",
    "layout.ulysses_pack_qkv": """
import torch
from sgl_diffusion_layout import ulysses_pack_qkv, ulysses_pack_qkv_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 4, 4, 16, generator=g).to(torch.bfloat16) for _ in range(3))
CASE = (ulysses_pack_qkv, ulysses_pack_qkv_reference, (q, k, v, 2), {})
""",
    "layout.ulysses_unpack_qkv": """
import torch
from sgl_diffusion_layout import ulysses_unpack_qkv, ulysses_unpack_qkv_reference
buf = torch.randn(2, 8, 2, 48, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (ulysses_unpack_qkv, ulysses_unpack_qkv_reference, (buf, 2, 2), {})
""",
    "layout.ulysses_pack_out": """
import torch
from sgl_diffusion_layout import ulysses_pack_out, ulysses_pack_out_reference
o = torch.randn(2, 8, 2, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (ulysses_pack_out, ulysses_pack_out_reference, (o, 2), {})
""",
    "layout.ulysses_unpack_out": """
import torch
from sgl_diffusion_layout import ulysses_unpack_out, ulysses_unpack_out_reference
buf = torch.randn(2, 8, 2, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (ulysses_unpack_out, ulysses_unpack_out_reference, (buf, 2, 2), {})
""",
    "layout.usp_merge_heads": """
import torch
from sgl_diffusion_layout import usp_merge_heads, usp_merge_heads_reference
x = torch.randn(2, 4, 2, 3, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (usp_merge_heads, usp_merge_heads_reference, (x,), {})
""",
    "layout.usp_split_heads": """
import torch
from sgl_diffusion_layout import usp_split_heads, usp_split_heads_reference
y = torch.randn(2, 4, 6, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (usp_split_heads, usp_split_heads_reference, (y, 2), {})
""",
    "layout.build_varlen_meta": """
import torch
from sgl_diffusion_layout import build_varlen_meta, build_varlen_meta_reference
mask = torch.tensor([[True, True, False, True], [False, False, False, False], [True] * 4])

def meta(mask, **kw):  # max_seqlen is a Python int: compared as a tensor
    i, c, m, v = build_varlen_meta(mask, **kw)
    return i, c, torch.tensor(m), v

def meta_ref(mask):
    i, c, m, v = build_varlen_meta_reference(mask)
    return i, c, torch.tensor(m), v

CASE = (meta, meta_ref, (mask,), {})
""",
    "layout.varlen_pack_qkv": """
import torch
from sgl_diffusion_layout import varlen_pack_qkv, varlen_pack_qkv_reference
g = torch.Generator().manual_seed(0)
q, k, v = (torch.randn(2, 4, 3, 16, generator=g).to(torch.bfloat16) for _ in range(3))
idx = torch.tensor([0, 1, 3, 4, 6])
CASE = (varlen_pack_qkv, varlen_pack_qkv_reference, (q, k, v, idx), {})
""",
    "layout.varlen_scatter": """
import torch
from sgl_diffusion_layout import varlen_scatter, varlen_scatter_reference
out = torch.randn(5, 3, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
inv = torch.tensor([0, 1, -1, 2, 3, -1, 4, -1])
CASE = (varlen_scatter, varlen_scatter_reference, (out, inv, 2, 4), {})
""",
    "layout.joint_qkv_cat": """
import torch
from sgl_diffusion_layout import joint_qkv_cat, joint_qkv_cat_reference
g = torch.Generator().manual_seed(0)
img = [torch.randn(1, 6, 2, 16, generator=g).to(torch.bfloat16) for _ in range(3)]
txt = [torch.randn(1, 3, 2, 16, generator=g).to(torch.bfloat16) for _ in range(3)]
CASE = (joint_qkv_cat, joint_qkv_cat_reference, (*img, *txt), {})
""",
    "layout.joint_split": """
import torch
from sgl_diffusion_layout import joint_split, joint_split_reference
out = torch.randn(1, 9, 2, 16, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
CASE = (joint_split, joint_split_reference, (out, 3, 6), {"copy": True})
""",
    "layout.causal_conv3d_cat_pad": """
import torch
from sgl_diffusion_layout import causal_conv3d_cat_pad, causal_conv3d_cat_pad_reference
g = torch.Generator().manual_seed(0)
x = torch.randn(1, 4, 2, 5, 6, generator=g).to(torch.bfloat16).contiguous(memory_format=torch.channels_last_3d)
cache = torch.randn(1, 4, 2, 5, 6, generator=g).to(torch.bfloat16)
CASE = (causal_conv3d_cat_pad, causal_conv3d_cat_pad_reference, (x, cache, (1, 1, 1, 1, 0, 0)), {})
""",
    "layout.nearest_upsample": """
import torch
from sgl_diffusion_layout import nearest_upsample, nearest_upsample_reference
x = torch.randn(1, 3, 2, 4, 5, generator=torch.Generator().manual_seed(0)).to(torch.bfloat16)
x = x.contiguous(memory_format=torch.channels_last_3d)
CASE = (nearest_upsample, nearest_upsample_reference, (x, (1, 2, 2)), {})
""",
}

# Runs in the venv, after `P = {...}` (params) is prepended: helpers for the op checks.
HELPERS = """
import importlib, importlib.util, json, os, sys

def smoke(op):
    src = P["smoke"].get(op)
    if src is None:
        return None
    ns = {}
    exec(src, ns)
    return ns["CASE"]

def flat(y):
    return list(y) if isinstance(y, (tuple, list)) else [y]

def compare(spec, y, ref):
    import torch
    ys, refs = flat(y), flat(ref)
    if len(ys) != len(refs):
        return {"ok": False, "why": f"{len(ys)} outputs, reference has {len(refs)}"}
    worst = 0.0
    for a, b in zip(ys, refs):
        if a.shape != b.shape or a.dtype != b.dtype:
            return {"ok": False, "why": f"output {tuple(a.shape)} {a.dtype}, reference {tuple(b.shape)} {b.dtype}"}
        if a.numel():
            worst = max(worst, float((a.float() - b.float()).abs().max()))
        if spec.contract.kind == "exact":
            if not torch.equal(a, b):
                return {"ok": False, "why": f"exact contract, max abs err {worst}"}
        else:
            atol, rtol = spec.contract.tolerance(a.dtype)
            if not torch.allclose(a.float(), b.float(), atol=atol, rtol=rtol):
                return {"ok": False, "why": f"close contract (atol={atol}, rtol={rtol}), max abs err {worst}"}
    return {"ok": True, "max_abs_err": worst}

def domain_ops(core, dist):
    return [op for op in core.REGISTRY.ops() if core.REGISTRY.op(op).distribution == dist]

def try_import(name):
    try:
        importlib.import_module(name)
        return "imported"
    except ModuleNotFoundError as e:
        return f"ModuleNotFoundError: {e.name}"
    except Exception as e:
        return f"{type(e).__name__}: {e}"
"""


def _script(params: dict, body: str) -> str:
    """The source run in a venv: ``P`` (the parameters, decoded from JSON), the helpers, ``body``."""
    return f"import json\nP = json.loads({json.dumps(json.dumps(params))})\n" + HELPERS + body


def family_of(pkg: workspace.Package) -> set[str]:
    """``pkg`` and every family distribution it depends on (what pip installs with it)."""
    out, todo = {pkg.dist}, [pkg]
    while todo:
        for dep in todo.pop().deps:
            if dep.extra is None and dep.name not in out:
                out.add(dep.name)
                todo.append(PACKAGES[dep.name])
    return out


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
        try:
            per[spec.backend] = compare(spec, fn(*args, backend=spec.backend, **kwargs), expected)
        except Exception as e:
            per[spec.backend] = {"ok": False, "why": f"{type(e).__name__}: {e}"}
        per[spec.backend]["requires"] = list(spec.capabilities.requires)
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
    out = venv.run(_script(params, ALONE), env={"TRITON_INTERPRET": "1"})

    assert out["version"] == pkg.version
    # A package without registered ops (DESIGN.md: ext has no backend matrix) only gets the import checks.
    missing = _missing_smoke(out["ops"])
    assert not missing, f"add a SMOKE entry for {missing} in {Path(__file__).name} (small CPU inputs)"
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
    out = venv.run(_script({"family": family, "smoke": {}}, UMBRELLA_SURFACE))
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
        got = venv.run(_script({"family": family, "smoke": {}, "name": names[0]}, UMBRELLA_TOUCH))
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
    out = venv.run(_script(params, RUN_OPS))
    assert out["core"] == core_now
    assert out["ops"] and all(r["ok"] for r in out["ops"].values()), out["ops"]

    # A newer core inside the range: pip upgrades to it (the highest the range allows), runs.
    venv.install_family(inside, "--upgrade", CORE.dist)
    venv.pip("check")
    out = venv.run(_script(params, RUN_OPS))
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
        out = venv.run(_script(params, MISSING_BACKEND), env={"TRITON_INTERPRET": interpret})
        where = f"(TRITON_INTERPRET={interpret}, no {', '.join(absent)})"
        assert all(v == "ok" for v in out["imports"].values()), f"imports fail {where}: {out['imports']}"
        assert not out["touch"], f"public names that fail to resolve {where}: {out['touch']}"
        assert out["specs"], f"no registered backend requires a missing module {where}; nothing was tested"
        for row in out["specs"]:
            label = f"{row['op']}/{row['backend']} {where}"
            assert "error" not in row, f"{label}: {row['error']} (add one in {Path(__file__).name})"
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
    out = venv.run(_script({"smoke": {}}, MISSING_DOMAIN))
    failing = {n: r for n, r in out.items() if r is not None}
    assert failing, "with every domain uninstalled, every umbrella name still resolves"
    for name, (kind, is_import_error, msg) in failing.items():
        assert is_import_error, f"sgl_diffusion.{name} raised {kind}, not an ImportError: {msg}"
        assert "pip install" in msg, f"sgl_diffusion.{name}: the error does not say what to install: {msg}"
        assert any(p.dist in msg for p in DOMAINS), f"sgl_diffusion.{name}: the error names no distribution: {msg}"
