"""The family's import surface, across package boundaries (docs/design.md, "Inside a domain package").

(a) no deep imports: a static scan (AST, nothing imported) of every Python file of the repo;
(b) every export of every package, and of the umbrella, resolves to a real object;
(c) every registry target (KernelSpec target and aot, OpDef describe / public / bench) resolves;
(d) laziness, in fresh subprocesses, through sys.modules;
(e) a missing optional backend (Triton blocked) degrades to the torch backend with reasons.

Needs every package of packages/ installed (``bash tools/setup_env.sh`` does, editable).
"""

from __future__ import annotations

import ast
import importlib
import importlib.util
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from _family import (
    CORE,
    REPO,
    UMBRELLA,
    FamilyPackage,
    family,
    is_backend_module,
    python_files,
    scan_file,
)
from _fresh import run_fresh

FAMILY = family()
DOMAINS = [p for p in FAMILY.values() if p.is_domain]
DOMAIN_IDS = [p.name for p in DOMAINS]


def test_family_found() -> None:
    assert CORE in FAMILY, f"packages/sgl-diffusion-core/src/{CORE} not found under {REPO}"
    assert len(DOMAINS) >= 2, f"expected core and at least one domain package, found {sorted(FAMILY)}"
    for pkg in FAMILY.values():
        assert pkg.distribution.replace("-", "_") == pkg.name, (
            f"{pkg.src}: distribution {pkg.distribution!r} does not match import name {pkg.name!r}"
        )


# --- (a) static scan ----------------------------------------------------------------------------------


def _scan() -> tuple[list[Path], list]:
    files = list(python_files())
    violations = [v for f in files for v in scan_file(f, FAMILY)]
    return files, violations


def test_scan_covers_the_repository() -> None:
    files, _ = _scan()
    rel = {f.relative_to(REPO).as_posix() for f in files}
    must = {"noxfile.py", "tools/aot_compile.py", "tools/check_wheels.py", "tests-integration/test_import_surface.py"}
    must |= {f"{p.src.relative_to(REPO).as_posix()}/__init__.py" for p in FAMILY.values()}
    assert must <= rel, f"the scan missed {sorted(must - rel)}"
    assert len(files) >= 2 * len(FAMILY) + 4, f"the scan found only {len(files)} files"
    assert not any(".venv/" in r or r.startswith(".nox/") for r in rel), "the scan walked into an environment"


def test_no_backend_module_imported_outside_its_package() -> None:
    _, violations = _scan()
    bad = [str(v) for v in violations if v.kind == "backend"]
    assert not bad, "backend modules imported from outside their package (use the top level):\n" + "\n".join(bad)


def test_only_top_level_imports_across_packages() -> None:
    _, violations = _scan()
    bad = [str(v) for v in violations if v.kind == "deep"]
    assert not bad, (
        "imports below another package's top level (import only `P` / `from P import name`; "
        "tests of P may use P's non-backend modules only):\n" + "\n".join(bad)
    )


def test_scanner_catches_deep_imports(tmp_path: Path) -> None:
    """The scanner itself: it must flag every deep form and accept the top-level forms."""
    src = tmp_path / "packages" / "sgl-diffusion-foo" / "src" / "sgl_diffusion_foo"
    src.mkdir(parents=True)
    (src.parent.parent / "pyproject.toml").write_text('[project]\nname = "sgl-diffusion-foo"\n')
    (src / "__init__.py").write_text("from . import helpers\nfrom .api import op\n")
    for mod in ("api", "helpers", "op_triton", "op_torch"):
        (src / f"{mod}.py").write_text("from . import api\nimport sgl_diffusion_foo.op_triton\n")  # own package: ok
    user = tmp_path / "tools" / "user.py"
    user.parent.mkdir()
    user.write_text(
        textwrap.dedent(
            """\
            import sgl_diffusion_foo
            import sgl_diffusion_foo as foo
            from sgl_diffusion_foo import op, helpers
            x = sgl_diffusion_foo.op
            import sgl_diffusion_foo.api
            from sgl_diffusion_foo.op_triton import kernel
            from sgl_diffusion_foo import op_torch
            from sgl_diffusion_foo import api
            y = foo.op_triton
            z = sgl_diffusion_foo.api.op
            """
        )
    )
    test = tmp_path / "packages" / "sgl-diffusion-foo" / "tests" / "test_x.py"
    test.parent.mkdir()
    # a package's own tests may use its non-backend modules, never its backends
    test.write_text("from sgl_diffusion_foo.api import op\nfrom sgl_diffusion_foo.op_triton import kernel\n")
    fam = family(tmp_path)
    assert fam["sgl_diffusion_foo"].bound >= {"helpers", "op"}
    got = sorted((v.path, v.line, v.kind) for f in python_files(tmp_path) for v in scan_file(f, fam, tmp_path))
    assert got == [
        ("packages/sgl-diffusion-foo/tests/test_x.py", 2, "backend"),
        ("tools/user.py", 5, "deep"),
        ("tools/user.py", 6, "backend"),
        ("tools/user.py", 7, "backend"),
        ("tools/user.py", 8, "deep"),
        ("tools/user.py", 9, "backend"),
        ("tools/user.py", 10, "deep"),
    ]


# --- (b) exports --------------------------------------------------------------------------------------


@pytest.mark.parametrize("pkg", DOMAINS, ids=DOMAIN_IDS)
def test_exports_resolve(pkg: FamilyPackage) -> None:
    mod = importlib.import_module(pkg.name)
    names = list(getattr(mod, "__all__", []))
    assert names, f"{pkg.name} has no __all__"
    assert len(names) == len(set(names)), f"{pkg.name}.__all__ has duplicates"
    for name in names:
        try:
            obj = getattr(mod, name)
        except Exception as exc:
            pytest.fail(f"{pkg.name}.{name} (in __all__) does not resolve: {type(exc).__name__}: {exc}")
        assert obj is not None, f"{pkg.name}.{name} resolves to None"


# Lazy packages (their public names come from an export table through a PEP 562 __getattr__)
# hide their surface from type checkers and must ship a stub; core binds its public names
# eagerly (its __getattr__ only serves the Triton helpers, kept out of __all__) and needs none.
LAZY = {
    name: pkg
    for name, pkg in FAMILY.items()
    if any(k in (pkg.src / "__init__.py").read_text() for k in ("lazy_exports(", "lazy_domain(", "_exports.EXPORTS"))
}


def test_lazy_packages_found() -> None:
    assert {"sgl_diffusion", "sgl_diffusion_norm"} <= set(LAZY), sorted(LAZY)


@pytest.mark.parametrize("pkg", list(LAZY.values()), ids=list(LAZY))
def test_stub_matches_exports(pkg: FamilyPackage) -> None:
    """A lazy package ships __init__.pyi: it types every name of __all__, and every name it declares exists."""
    stub = pkg.src / "__init__.pyi"
    assert stub.exists(), f"{pkg.name} is lazy (module __getattr__) but ships no __init__.pyi"
    declared: set[str] = set()
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            declared.add(node.name)
        elif isinstance(node, ast.ImportFrom):
            declared |= {a.asname for a in node.names if a.asname and a.asname == a.name}  # explicit re-exports
        elif isinstance(node, (ast.AnnAssign, ast.Assign)):
            targets = [node.target] if isinstance(node, ast.AnnAssign) else node.targets
            declared |= {t.id for t in targets if isinstance(t, ast.Name)}
    declared = {n for n in declared if not n.startswith("_") or n == "__version__"}
    mod = importlib.import_module(pkg.name)
    untyped = sorted(set(mod.__all__) - declared)
    assert not untyped, f"{stub.relative_to(REPO)} does not declare these names of {pkg.name}.__all__: {untyped}"
    phantom = sorted(n for n in declared if not hasattr(mod, n))
    assert not phantom, f"{stub.relative_to(REPO)} declares names {pkg.name} does not have: {phantom}"


def _umbrella() -> FamilyPackage:
    if UMBRELLA not in FAMILY:
        pytest.skip("packages/sgl-diffusion (the umbrella) does not exist yet")
    return FAMILY[UMBRELLA]


def test_umbrella_exports_resolve() -> None:
    _umbrella()
    umb = importlib.import_module(UMBRELLA)
    owners = {}
    for pkg in DOMAINS:
        for name in importlib.import_module(pkg.name).__all__:
            owners.setdefault(name, pkg.name)
    resolved, missing = 0, []
    for name in umb.__all__:
        try:
            obj = getattr(umb, name)
        except ImportError as exc:
            dist = getattr(exc, "distribution", None)
            assert dist and dist in str(exc), f"sgl_diffusion.{name}: ImportError does not name its distribution: {exc}"
            mod = getattr(exc, "module", None) or dist.replace("-", "_")
            assert importlib.util.find_spec(mod) is None, (
                f"sgl_diffusion.{name} raised ImportError for {dist!r}, but {mod} is importable: {exc}"
            )
            missing.append(name)
            continue
        resolved += 1
        if name != "__version__" and name in owners:
            assert obj is getattr(importlib.import_module(owners[name]), name), (
                f"sgl_diffusion.{name} is not the same object as {owners[name]}.{name}"
            )
    assert resolved > 1, f"only {resolved} umbrella export(s) resolved; missing: {missing}"


# --- (c) registry targets -----------------------------------------------------------------------------


def _registry():
    for pkg in DOMAINS:
        importlib.import_module(pkg.name)  # registration happens on import
    core = importlib.import_module(CORE)
    return core, core.REGISTRY


def test_registry_targets_resolve() -> None:
    core, reg = _registry()
    ops = reg.ops()
    assert ops, "no op registered by any package"
    by_dist = {p.distribution: p for p in FAMILY.values()}
    checked = 0
    problems = []

    def check(what: str, target: str) -> object | None:
        nonlocal checked
        checked += 1
        try:
            obj = core.resolve_target(target)
        except Exception as exc:
            problems.append(f"{what} {target!r}: {type(exc).__name__}: {exc}")
            return None
        if not callable(obj):
            problems.append(f"{what} {target!r} resolves to a non-callable {type(obj).__name__}")
        return obj

    for op_id in ops:
        opdef = reg.op(op_id)
        owner = by_dist.get(opdef.distribution)
        if owner is None:
            problems.append(f"{op_id}: distribution {opdef.distribution!r} is not a package under packages/")
        if opdef.bench is not None and opdef.bench.partition(":")[0].endswith(".py"):  # a source-tree file
            checked += 1
            try:
                core.bench.load_cases(opdef)
            except Exception as exc:
                problems.append(f"{op_id} bench {opdef.bench!r}: {type(exc).__name__}: {exc}")
        for what, target in (("describe", opdef.describe), ("public", opdef.public), ("bench", opdef.bench)):
            if target is None or (what == "bench" and target.partition(":")[0].endswith(".py")):
                continue
            if owner is not None and target.split(".")[0].split(":")[0] != owner.name:
                problems.append(f"{op_id}: {what} target {target!r} is outside its distribution's {owner.name}")
            obj = check(f"{op_id} {what}", target)
            if what == "public" and obj is not None and owner is not None:
                attr = target.rsplit(":", 1)[1]
                top = importlib.import_module(owner.name)
                if getattr(top, attr, None) is not obj:
                    problems.append(f"{op_id}: public entry point {target!r} is not exported as {owner.name}.{attr}")
        specs = reg.specs(op_id)
        if not specs:
            problems.append(f"{op_id}: no backend registered")
        for spec in specs:
            check(f"{op_id}/{spec.backend} target", spec.target)
            if spec.aot is not None:
                check(f"{op_id}/{spec.backend} aot", spec.aot)
    assert not problems, "registry targets that do not resolve:\n" + "\n".join(problems)
    assert checked >= 2 * len(ops), f"checked only {checked} targets for {len(ops)} ops"


# --- (d) laziness in fresh interpreters ------------------------------------------------------------------


def _triton_mods(mods: list[str]) -> list[str]:
    return [m for m in mods if m == "triton" or m.startswith("triton.")]


def test_umbrella_import_is_lazy(tmp_path: Path) -> None:
    _umbrella()
    out = run_fresh(
        """
        import json, sys
        import sgl_diffusion
        print(json.dumps(sorted(sys.modules)))
        """,
        tmp_path,
    )
    assert UMBRELLA in out, "the subprocess did not import the umbrella"
    family_loaded = [m for m in out if m.split(".")[0] in FAMILY and m.split(".")[0] != UMBRELLA]
    assert not family_loaded, f"`import sgl_diffusion` imported packages of the family: {family_loaded}"
    assert not _triton_mods(out), f"`import sgl_diffusion` imported Triton: {_triton_mods(out)[:5]}"


def test_umbrella_import_loads_no_torch(tmp_path: Path) -> None:
    """The umbrella documents that importing it imports not even torch."""
    _umbrella()
    out = run_fresh("import json, sys; import sgl_diffusion; print(json.dumps(sorted(sys.modules)))", tmp_path)
    assert "torch" not in out, "`import sgl_diffusion` imported torch"


@pytest.mark.parametrize("pkg", DOMAINS, ids=DOMAIN_IDS)
def test_domain_import_is_lazy(pkg: FamilyPackage, tmp_path: Path) -> None:
    """``import P`` and touching every name of ``P.__all__`` load no backend module and no Triton."""
    out = run_fresh(
        f"""
        import json, sys
        import {pkg.name} as pkg
        after_import = sorted(sys.modules)
        for name in pkg.__all__:
            getattr(pkg, name)
        print(json.dumps({{"import": after_import, "touch": sorted(sys.modules)}}))
        """,
        tmp_path,
    )
    assert pkg.name in out["import"]
    for stage, what in (("import", f"`import {pkg.name}`"), ("touch", f"touching every name of {pkg.name}.__all__")):
        mods = out[stage]
        backends = [m for m in mods if m.startswith(pkg.name + ".") and is_backend_module(m.rsplit(".", 1)[1])]
        assert not backends, f"{what} imported backend modules: {backends}"
        assert not _triton_mods(mods), f"{what} imported Triton: {_triton_mods(mods)[:5]}"


NORM = "sgl_diffusion_norm"


def _needs_norm() -> None:
    if NORM not in FAMILY:
        pytest.skip("packages/sgl-diffusion-norm does not exist")


def test_norm_backend_loads_on_first_call(tmp_path: Path) -> None:
    """The positive side of laziness: the first CPU call loads the torch backend, still no Triton."""
    _needs_norm()
    out = run_fresh(
        """
        import json, sys
        import torch
        import sgl_diffusion_norm as norm
        fn = norm.ln_modulate
        before = sorted(sys.modules)
        y = fn(torch.randn(2, 4, 64), torch.randn(2, 64))
        print(json.dumps({"before": before, "after": sorted(sys.modules), "shape": list(y.shape)}))
        """,
        tmp_path,
    )
    assert out["shape"] == [2, 4, 64]
    assert "sgl_diffusion_norm.ln_modulate_torch" not in out["before"]
    assert "sgl_diffusion_norm.ln_modulate_torch" in out["after"], "the CPU call did not go through the torch backend"
    assert not _triton_mods(out["before"]), "touching sgl_diffusion_norm.ln_modulate imported Triton"
    assert not _triton_mods(out["after"]), "a CPU call (torch backend) imported Triton"


# --- (e) a missing optional backend ---------------------------------------------------------------------

BLOCKED_TRITON = """
import json, sys
sys.modules["triton"] = None  # as if Triton were not installed: `import triton` raises ImportError
import torch
import sgl_diffusion_core as core
import sgl_diffusion_norm as norm

torch.manual_seed(0)
x, scale, shift = torch.randn(2, 8, 64), torch.randn(2, 64), torch.randn(2, 64)
exp = core.explain("norm.ln_modulate", x, scale, shift)
y = norm.ln_modulate(x, scale, shift)
ref = norm.ln_modulate_reference(x, scale, shift)
try:
    norm.ln_modulate(x, scale, shift, backend="triton")
    explicit = None
except Exception as e:
    explicit = [type(e).__name__, isinstance(e, ValueError), str(e)]
print(json.dumps({
    "verdicts": {v.backend: [v.ok, list(v.reasons)] for v in exp.verdicts},
    "chosen": exp.chosen,
    "equal": bool(torch.equal(y, ref)),
    "explicit": explicit,
    "triton_loaded": [m for m in sys.modules if m.startswith("triton.")],
}))
"""


@pytest.mark.parametrize("interpret", ["0", "1"], ids=["plain", "TRITON_INTERPRET=1"])
def test_missing_triton_falls_back_to_torch(tmp_path: Path, interpret: str) -> None:
    _needs_norm()
    out = run_fresh(BLOCKED_TRITON, tmp_path, env={"TRITON_INTERPRET": interpret})
    verdicts = out["verdicts"]
    assert "triton" in verdicts and "torch" in verdicts, f"unexpected backends: {sorted(verdicts)}"
    ok, reasons = verdicts["triton"]
    assert not ok, "explain() says the triton backend can serve although Triton cannot be imported"
    assert any("triton" in r and "install" in r for r in reasons), (
        f"no reason of the triton backend says that the module triton is missing: {reasons}"
    )
    assert verdicts["torch"][0], f"the torch backend cannot serve: {verdicts['torch'][1]}"
    assert out["chosen"] == "torch"
    assert out["equal"], "ln_modulate on CPU without Triton does not match the reference"
    assert out["explicit"] is not None, "backend='triton' without Triton did not raise"
    name, is_value_error, msg = out["explicit"]
    assert is_value_error and name == "UnsupportedInputError", f"backend='triton' raised {name}: {msg}"
    assert "triton" in msg and "install" in msg, f"the error does not say that triton is missing: {msg}"
    assert not out["triton_loaded"]


def test_missing_domain_raises_import_error_naming_it(tmp_path: Path) -> None:
    """The umbrella, with a domain package blocked, raises ImportError naming the distribution."""
    _umbrella()
    umb_names = set(importlib.import_module(UMBRELLA).__all__)
    core_names = set(importlib.import_module("sgl_diffusion_core").__all__)  # re-exported by domains, resolved via core
    cases = []
    for pkg in DOMAINS:
        names = sorted(
            n
            for n in importlib.import_module(pkg.name).__all__
            if n in umb_names and n != "__version__" and n not in core_names
        )
        if names:
            cases.append((pkg, names[0]))
    assert cases, "the umbrella re-exports no name of any domain package"
    for pkg, name in cases:
        out = run_fresh(
            f"""
            import json, sys
            sys.modules[{pkg.name!r}] = None  # as if {pkg.distribution} were not installed
            import sgl_diffusion
            try:
                getattr(sgl_diffusion, {name!r})
                err = None
            except ImportError as e:
                err = str(e)
            print(json.dumps(err))
            """,
            tmp_path,
        )
        assert out is not None, f"sgl_diffusion.{name} resolved although {pkg.name} is blocked"
        assert pkg.distribution in out, f"sgl_diffusion.{name}: the ImportError does not name {pkg.distribution}: {out}"


def test_demo_runs_on_this_machine() -> None:
    """The README's main job (tools/demo.py: doctor, then ln_modulate checked against the
    reference and timed) runs end to end; on a machine without a GPU in the Triton interpreter."""
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    proc = subprocess.run(
        [sys.executable, str(REPO / "tools" / "demo.py")], capture_output=True, text=True, env=env, timeout=600
    )
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    assert "check against the reference" in proc.stdout and "us per call" in proc.stdout
    assert "would use 'triton'" in proc.stdout


def test_compile_lane_catches_fma_in_exact_kernels() -> None:
    """The compile lanes reject FMAs in kernels built for exact contracts; the check can fail."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    sys.path.insert(0, str(REPO / "tools"))
    try:
        import aot_compile
    finally:
        sys.path.pop(0)

    @triton.jit
    def axpy(X, Y, Z, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        tl.store(Z + o, tl.load(X + o, mask=m) * tl.load(Z + o, mask=m) + tl.load(Y + o, mask=m), mask=m)

    src = triton.compiler.ASTSource(
        fn=axpy,
        signature={"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 256},
    )
    for backend, arch, warp, key in (("cuda", 90, 32, "ptx"), ("hip", "gfx942", 64, "amdgcn")):
        asm = {
            f: triton.compile(src, target=GPUTarget(backend, arch, warp), options={"enable_fp_fusion": f}).asm[key]
            for f in (True, False)
        }
        assert aot_compile.fused_multiply_adds(asm[True], backend), f"{backend}: fusion allowed, no FMA found"
        assert not aot_compile.fused_multiply_adds(asm[False], backend), f"{backend}: FMA despite fusion off"
    # the forms a compiler emits without contracting anything (a product, or a conversion + add)
    assert not aot_compile.fused_multiply_adds("v_fma_mix_f32 v2, v10, v14, neg(0) op_sel_hi:[1,0,0]", "hip")
    assert not aot_compile.fused_multiply_adds("v_fma_mix_f32 v2, v6, 1.0, v2 op_sel_hi:[1,1,0]", "hip")
    assert not aot_compile.fused_multiply_adds("fma.rn.f32 %f3, %f1, 0f3F800000, %f2;", "cuda")
    assert aot_compile.fused_multiply_adds("v_fma_mix_f32 v2, v10, v14, v3 op_sel_hi:[1,0,0]", "hip")
    assert aot_compile.fused_multiply_adds("v_fmac_f32_e32 v0, v6, v7", "hip")
    assert aot_compile.fused_multiply_adds("\tfma.rn.f32 \t%f3, %f1, %f2, %f0;", "cuda")
    # sm_80 has no bf16 add/sub/mul: LLVM emits each as an FMA with -0.0 / +-1.0 held in a register
    mul = "\tmov.b16 \t%rs9, 0x8000;\n\tfma.rn.bf16 \t%rs1, %rs2, %rs3, %rs9;"
    sub = "\tmov.b16 \t%rs9, 0xBF80;\n\tfma.rn.bf16 \t%rs1, %rs2, %rs9, %rs4;"
    assert not aot_compile.fused_multiply_adds(mul, "cuda")
    assert not aot_compile.fused_multiply_adds(sub, "cuda")
    assert aot_compile.fused_multiply_adds(sub.replace("0xBF80", "0x4000"), "cuda")  # a real factor: 2.0
    # ... and two at a time (fma.rn.bf16x2) with the constant pair in one b32 register, hex or signed decimal
    mul2 = "\tmov.b32 \t%r9, -2147450880;\n\tfma.rn.bf16x2 \t%r1, %r2, %r3, %r9;"
    add2 = "\tmov.b32 \t%r9, 1065369472;\n\tfma.rn.bf16x2 \t%r1, %r2, %r9, %r4;"
    sub2 = "\tmov.b32 \t%r9, 0xBF80BF80;\n\tfma.rn.bf16x2 \t%r1, %r2, %r9, %r4;"
    for asm in (mul2, add2, sub2):
        assert not aot_compile.fused_multiply_adds(asm, "cuda"), asm
    assert aot_compile.fused_multiply_adds(add2.replace("1065369472", "1073758208"), "cuda")  # (2.0, 2.0)


def test_compile_lane_tells_amd_division_from_contraction() -> None:
    """fp32 division on AMD expands into FMAs (the correctly rounded algorithm): not contractions,
    while an FMA that consumes the quotient, or is unrelated to a division, still fails the check."""
    import triton
    import triton.language as tl
    from triton.backends.compiler import GPUTarget

    sys.path.insert(0, str(REPO / "tools"))
    try:
        import aot_compile
    finally:
        sys.path.pop(0)

    @triton.jit
    def div_axpy(X, Y, Z, n, BLOCK: tl.constexpr):
        o = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
        m = o < n
        q = tl.load(X + o, mask=m) / tl.load(Y + o, mask=m)
        tl.store(Z + o, q * tl.load(Z + o, mask=m) + tl.load(Y + o, mask=m), mask=m)

    src = triton.compiler.ASTSource(
        fn=div_axpy,
        signature={"X": "*fp32", "Y": "*fp32", "Z": "*fp32", "n": "i32", "BLOCK": "constexpr"},
        constexprs={"BLOCK": 256},
    )
    target = GPUTarget("hip", "gfx942", 64)
    asm = {f: triton.compile(src, target=target, options={"enable_fp_fusion": f}).asm["amdgcn"] for f in (True, False)}
    assert "v_div_scale_f32" in asm[False], "the division was not expanded: the test checks nothing"
    assert not aot_compile.fused_multiply_adds(asm[False], "hip"), "division steps taken for contractions"
    assert aot_compile.fused_multiply_adds(asm[True], "hip"), "q * z + y contracted, yet not reported"
    div = (
        "v_div_scale_f32 v3, s[0:1], v21, v21, v2\nv_rcp_f32_e32 v4, v3\nv_div_scale_f32 v5, vcc, v2, v21, v2\n"
        "v_fma_f32 v11, -v3, v4, 1.0\nv_fmac_f32_e32 v4, v11, v4\nv_mul_f32_e32 v11, v5, v4\n"
        "v_fma_f32 v12, -v3, v11, v5\nv_fmac_f32_e32 v11, v12, v4\nv_fma_f32 v3, -v3, v11, v5\n"
        "v_div_fmas_f32 v3, v3, v4, v11\nv_div_fixup_f32 v4, v3, v21, v2\n"
    )
    assert not aot_compile.fused_multiply_adds(div, "hip")
    assert aot_compile.fused_multiply_adds(div + "v_fma_f32 v9, v4, v8, v9\n", "hip")  # uses the quotient
    assert aot_compile.fused_multiply_adds(div + "v_fmac_f32_e32 v5, v6, v7\n", "hip")  # unrelated
    reloaded = div.replace("v_div_fmas", "global_load_dword v11, v[0:1], off\nv_div_fmas")
    assert aot_compile.fused_multiply_adds(reloaded + "v_fmac_f32_e32 v11, v6, v7\n", "hip")  # v11 reloaded
