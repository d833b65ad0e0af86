"""Generate every export table and stub from the op definitions (nothing public is named twice by hand).

    python tools/gen_exports.py            # rewrite the generated files
    python tools/gen_exports.py --check    # exit 1, naming the stale files, if any is out of date

For each domain package whose ``__init__.py`` uses ``lazy_domain`` it imports every op module
(``<op>.py``: not private, not a backend) and collects the ``Op`` definitions and their
entry points (``@OP.entry``). Each op exports its entry points, ``can_use_<op>`` and
``<op>_reference``; a module's ``ALSO_EXPORTS`` adds non-op names. It writes:

* ``src/<pkg>/_exports.py``: ``EXPORTS`` (name -> module) and ``OPS`` (op id -> module);
* ``src/<pkg>/__init__.pyi``: the typed surface, signatures taken from the entry points;
* the umbrella's ``_domains.py``: the names it re-exports from each of these distributions
  (core's own names, re-exported by a domain, reach it from core).
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ROOT / "packages"
UMBRELLA = PACKAGES / "sgl-diffusion" / "src" / "sgl_diffusion" / "_domains.py"
BACKEND_SUFFIXES = ("_triton", "_torch", "_flydsl", "_cutedsl", "_jit", "_sdpa")
GENERATED = "# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.\n"


def domains() -> list[tuple[str, str, Path]]:
    """(distribution, import name, src dir) of every domain built on ``lazy_domain``."""
    out = []
    for src in sorted(PACKAGES.glob("*/src/*/__init__.py")):
        if "lazy_domain(" in src.read_text():
            out.append((src.parents[2].name, src.parent.name, src.parent))
    return out


def op_modules(src: Path) -> list[str]:
    return [
        p.stem for p in sorted(src.glob("*.py")) if not p.stem.startswith("_") and not p.stem.endswith(BACKEND_SUFFIXES)
    ]


def collect(pkg: str, src: Path) -> tuple[dict[str, str], dict[str, str], dict[str, object]]:
    """``(exports, ops, objects)``: name -> module, op id -> module, name -> object."""
    from sgl_diffusion_core import Op

    exports: dict[str, str] = {}
    ops: dict[str, str] = {}
    objects: dict[str, object] = {}
    for mod_name in op_modules(src):
        mod = importlib.import_module(f"{pkg}.{mod_name}")
        defs = [v for v in vars(mod).values() if isinstance(v, Op) and v.module == mod.__name__]
        names: list[str] = []
        for op in defs:
            ops[op.id] = mod_name
            names += [f.__name__ for f in op.entries] + [f"can_use_{op.name}", f"{op.name}_reference"]
        names += list(getattr(mod, "ALSO_EXPORTS", ()))
        for name in names:
            if not hasattr(mod, name):
                raise SystemExit(f"{pkg}.{mod_name} defines no {name!r}, which its op definition exports")
            if name in exports:
                raise SystemExit(f"{pkg}: {name!r} is exported by both {exports[name]} and {mod_name}")
            exports[name] = mod_name
            objects[name] = getattr(mod, name)
    return exports, ops, objects


def render_exports(exports: dict[str, str], ops: dict[str, str]) -> str:
    lines = [
        GENERATED,
        '"""The lazy surface of this package: public name -> module, op id -> module."""',
        "",
        "EXPORTS: dict[str, str] = {",
    ]
    lines += [f'    "{n}": "{m}",' for n, m in exports.items()]
    lines += ["}", "", "OPS: dict[str, str] = {"]
    lines += [f'    "{o}": "{m}",' for o, m in ops.items()]
    lines += ["}", ""]
    return "\n".join(lines)


def _param(p: inspect.Parameter) -> str:
    text = p.name
    if p.annotation is not inspect.Parameter.empty:
        text += f": {p.annotation}"
    if p.default is not inspect.Parameter.empty:
        text += f" = {p.default!r}" if p.annotation is not inspect.Parameter.empty else f"={p.default!r}"
    return text


def _stub(name: str, params: list[inspect.Parameter], returns: str) -> str:
    parts: list[str] = []
    star = False
    for p in params:
        if p.kind is inspect.Parameter.KEYWORD_ONLY and not star:
            parts.append("*")
            star = True
        parts.append(_param(p))
    body = "".join(f"    {x},\n" for x in parts)
    return f"def {name}(\n{body}) -> {returns}: ...\n"


def _core_names(text: str) -> set[str]:
    """The names of ``sgl_diffusion_core``'s surface that an annotation text uses (imported by the stub)."""
    import re

    import sgl_diffusion_core

    return set(re.findall(r"[A-Za-z_]\w*", text)) & set(sgl_diffusion_core.__all__)


def render_stub(pkg: str, exports: dict[str, str], objects: dict[str, object]) -> str:
    from sgl_diffusion_core import Op

    lines = [GENERATED, "import torch", ""]
    reexports = sorted(n for n, o in objects.items() if isinstance(o, type))
    # a class of this package (ALSO_EXPORTS) comes from its module, any other from core (re-exported)
    own = {n for n in reexports if objects[n].__module__ == f"{pkg}.{exports[n]}"}
    core = [f"from sgl_diffusion_core import {n} as {n}" for n in reexports if n not in own]
    lines += core + ([""] if core else [])
    local = {(".__about__", "__version__"): "from .__about__ import __version__ as __version__"}
    local.update({(f".{exports[n]}", n): f"from .{exports[n]} import {n} as {n}" for n in own})
    lines += [local[key] for key in sorted(local)] + [""]
    entries: dict[str, tuple[Op, object]] = {}
    used: set[str] = set()
    ops = {op.id: op for op in (getattr(o, "__self__", None) for o in objects.values()) if isinstance(op, Op)}
    for op in ops.values():
        entries.update({f.__name__: (op, f) for f in op.entries})
    for name in exports:
        if name in entries:
            fn = entries[name][1]
            sig = inspect.signature(fn)
            lines.append(_stub(name, list(sig.parameters.values()), str(sig.return_annotation)))
        elif inspect.isfunction(objects[name]):  # a function of ALSO_EXPORTS (not an op's)
            sig = inspect.signature(objects[name])
            lines.append(_stub(name, list(sig.parameters.values()), str(sig.return_annotation)))
            used |= _core_names(str(sig))
    for op in ops.values():
        sig = inspect.signature(op.entries[0])
        params = list(sig.parameters.values())
        extra = {k: v for opts in op.entry_options.values() for k, v in opts}
        opts = [
            inspect.Parameter(k, inspect.Parameter.KEYWORD_ONLY, default=type(v)(), annotation=type(v).__name__)
            for k, v in extra.items()
        ]
        plain = [p for p in params if p.name not in ("backend", "exact", "check_index")]
        tail = [p for p in params if p.name in ("exact", "backend")]
        lines.append(_stub(f"can_use_{op.name}", plain + opts + tail, "bool"))
        lines.append(_stub(f"{op.name}_reference", plain + opts, str(sig.return_annotation)))
    at = next(i for i, line in enumerate(lines) if line.startswith("from ."))
    lines[at:at] = [f"from sgl_diffusion_core import {n}" for n in sorted(used - set(reexports))] + [""] * bool(used)
    lines.append("__all__ = [")
    lines += [f'    "{n}",' for n in sorted([*exports, "__version__"])]
    lines.append("]")
    return "\n".join(lines) + "\n"


def render_umbrella(groups: dict[str, list[str]]) -> str:
    lines = [
        GENERATED,
        '"""Names the umbrella re-exports from each domain built on op definitions."""',
        "",
        "GROUPS: dict[str, tuple[str, ...]] = {",
    ]
    for dist, names in groups.items():
        lines.append(f'    "{dist}": (')
        lines += [f'        "{n}",' for n in names]
        lines.append("    ),")
    lines += ["}", ""]
    return "\n".join(lines)


def generated() -> dict[Path, str]:
    files: dict[Path, str] = {}
    groups: dict[str, list[str]] = {}
    for dist, pkg, src in domains():
        exports, ops, objects = collect(pkg, src)
        files[src / "_exports.py"] = render_exports(exports, ops)
        files[src / "__init__.pyi"] = render_stub(pkg, exports, objects)
        # a core name a domain re-exports (an error class) reaches the umbrella from core
        groups[dist] = [
            n for n, o in objects.items() if not (isinstance(o, type) and o.__module__.startswith("sgl_diffusion_core"))
        ]
    files[UMBRELLA] = render_umbrella(groups)
    return files


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if a generated file is stale")
    args = parser.parse_args(argv)
    stale = []
    for path, text in generated().items():
        if path.exists() and path.read_text() == text:
            continue
        stale.append(path.relative_to(ROOT))
        if not args.check:
            path.write_text(text)
    if args.check and stale:
        print("stale generated files (run `python tools/gen_exports.py`):", *stale, sep="\n  ", file=sys.stderr)
        return 1
    print(("stale: " if args.check else "wrote: ") + (", ".join(map(str, stale)) or "nothing"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
