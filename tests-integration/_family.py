"""The family as the file system shows it, and the static (AST, no import) deep-import scanner.

Nothing here imports a package of the family: the layout is read from ``packages/*/``.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UMBRELLA = "sgl_diffusion"
CORE = "sgl_diffusion_core"
BACKEND_SUFFIXES = ("_triton", "_torch", "_flydsl", "_cutedsl", "_jit", "_sdpa")
# Directories never scanned: environments, caches, build output.
SKIP_DIRS = {".git", ".scratch", ".venv", ".nox", "build", "dist", "site", "node_modules", "__pycache__", ".ruff_cache",
             ".pytest_cache", ".whl", ".gpu_out"}  # fmt: skip


def is_backend_module(name: str) -> bool:
    return name.endswith(BACKEND_SUFFIXES)


@dataclass
class FamilyPackage:
    name: str  # import name, e.g. sgl_diffusion_norm
    distribution: str  # [project] name, e.g. sgl-diffusion-norm
    src: Path  # packages/<dir>/src/<name>
    submodules: set[str] = field(default_factory=set)  # modules and subpackages directly in src
    bound: set[str] = field(default_factory=set)  # names bound at the top level of __init__.py

    @property
    def is_umbrella(self) -> bool:
        return self.name == UMBRELLA

    @property
    def is_domain(self) -> bool:
        """A package with ops (everything but the umbrella; core counts: it has exports too)."""
        return not self.is_umbrella


def _project_name(pyproject: Path) -> str:
    text = pyproject.read_text()
    section = re.search(r"^\[project\]\s*$(.*?)(?=^\[|\Z)", text, re.MULTILINE | re.DOTALL)
    m = re.search(r"^name\s*=\s*[\"']([^\"']+)[\"']", section.group(1), re.MULTILINE) if section else None
    if m is None:
        raise ValueError(f"{pyproject}: no [project] name")
    return m.group(1)


def _bound_names(init: Path) -> set[str]:
    """Names the package's __init__.py binds at module level (imports, assignments, defs),
    including lazy attributes declared for type checkers under ``if TYPE_CHECKING:``, and
    the exports of a generated ``_exports.py`` (a domain built on op definitions: the
    function ``scale_shift`` of the module ``scale_shift.py`` is what the package binds)."""
    tree = ast.parse(init.read_text(), filename=str(init))
    out: set[str] = set()
    table = init.with_name("_exports.py")
    if "lazy_domain(" in init.read_text() and table.exists():
        for node in ast.parse(table.read_text()).body:
            if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "EXPORTS":
                out |= {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    body = list(tree.body)
    for node in tree.body:  # `if TYPE_CHECKING: from . import x` + a module __getattr__: a lazy attribute
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            body.extend(node.body)
    for node in body:
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            for a in node.names:
                out.add((a.asname or a.name).split(".")[0])
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
            out.add(node.name)
        elif isinstance(node, (ast.Assign, ast.AnnAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for t in targets:
                if isinstance(t, ast.Name):
                    out.add(t.id)
    return out


def family(root: Path = REPO) -> dict[str, FamilyPackage]:
    """Import name -> package, for every packages/<dir>/src/<name>/__init__.py."""
    out: dict[str, FamilyPackage] = {}
    for init in sorted(root.glob("packages/*/src/*/__init__.py")):
        src = init.parent
        dist = _project_name(src.parent.parent / "pyproject.toml")
        subs = {p.stem for p in src.glob("*.py") if p.stem != "__init__"}
        subs |= {p.parent.name for p in src.glob("*/__init__.py")}
        out[src.name] = FamilyPackage(src.name, dist, src, subs, _bound_names(init))
    return out


def python_files(root: Path = REPO) -> Iterator[Path]:
    """Every .py / .pyi file of the repository, environments and build output aside."""
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if d not in SKIP_DIRS and not d.endswith(".egg-info"))
        for f in sorted(filenames):
            if f.endswith((".py", ".pyi")):
                yield Path(dirpath) / f


@dataclass(frozen=True)
class Violation:
    path: str
    line: int
    kind: str  # "backend" (a backend module of another package) or "deep" (any other submodule)
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.text}"


def owner_of(path: Path, fam: dict[str, FamilyPackage]) -> str | None:
    """The package whose source tree holds ``path`` (tests of a package are NOT inside it)."""
    for pkg in fam.values():
        if path.is_relative_to(pkg.src):
            return pkg.name
    return None


def tests_of(path: Path, fam: dict[str, FamilyPackage]) -> str | None:
    """The package whose own ``tests/`` directory holds ``path``."""
    for pkg in fam.values():
        if path.is_relative_to(pkg.src.parent.parent / "tests"):
            return pkg.name
    return None


def scan_file(path: Path, fam: dict[str, FamilyPackage], root: Path = REPO) -> list[Violation]:
    """Deep imports of other packages of the family in one file.

    Outside package P, only P's top level may be used: ``import P``, ``from P import name``
    where ``name`` is not a submodule (or is one that P's ``__init__`` deliberately binds,
    like ``sgl_diffusion_core.aot``), ``P.name`` likewise. ``import P.x``, ``from P.x import
    y``, ``from P import x_triton`` and ``P.x_triton`` are violations; a backend module
    (``*_triton``, ``*_torch``, ``*_flydsl``, ``*_cutedsl``, ``*_jit``, ``*_sdpa``) is one even where bound.
    A package's own tests may import its non-backend modules (the umbrella's tests drive its
    ``cli``); backend modules stay off limits there too: tests reach kernels through the
    public op and the reference through ``<op>_reference``.
    """
    rel = path.relative_to(root).as_posix()
    tree = ast.parse(path.read_text(), filename=rel)
    owner = owner_of(path, fam)
    out: list[Violation] = []

    def forbidden_sub(pkg: FamilyPackage, sub: str) -> bool:
        return sub in pkg.submodules and (sub not in pkg.bound or is_backend_module(sub))

    own_tests = tests_of(path, fam)

    def add(node: ast.AST, module: str, text: str) -> None:
        kind = "backend" if any(is_backend_module(part) for part in module.split(".")) else "deep"
        if kind == "deep" and module.split(".")[0] == own_tests:
            return
        out.append(Violation(rel, getattr(node, "lineno", 0), kind, text))

    aliases: dict[str, str] = {}  # local name -> family package bound by `import P [as x]`
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                top = a.name.split(".")[0]
                if top not in fam or top == owner:
                    continue
                if "." in a.name:
                    add(node, a.name, f"`import {a.name}` reaches below the top level of {top}")
                else:
                    aliases[a.asname or top] = top
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            top = node.module.split(".")[0]
            if top not in fam or top == owner:
                continue
            if "." in node.module:
                names = ", ".join(a.name for a in node.names)
                add(node, node.module, f"`from {node.module} import {names}` reaches below the top level of {top}")
                continue
            for a in node.names:
                if forbidden_sub(fam[top], a.name):
                    add(node, f"{top}.{a.name}", f"`from {top} import {a.name}` imports a submodule of {top}")
    for node in ast.walk(tree):
        if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id in aliases:
            top = aliases[node.value.id]
            if forbidden_sub(fam[top], node.attr):
                add(node, f"{top}.{node.attr}", f"`{node.value.id}.{node.attr}` reaches a submodule of {top}")
    return out
