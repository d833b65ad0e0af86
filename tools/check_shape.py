"""Check the size limits of the code; exit 1 listing every file and function over them.

    python tools/check_shape.py                  # packages/ tools/ tests-integration/ noxfile.py
    python tools/check_shape.py --paths packages/sgl-diffusion-norm

Limits: a ``.py`` file holds at most 600 lines; a function (or method) at most 80 lines,
decorators and docstring included. The one exception is a ``@triton.jit`` kernel whose docstring
says why it is long (it contains the word "long"): a kernel is one unit the compiler sees whole,
and splitting it into ``@triton.jit`` helpers does not always make it easier to read.
"""

from __future__ import annotations

import argparse
import ast
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DEFAULT_PATHS = ("packages", "tools", "tests-integration", "noxfile.py")
SKIP_DIRS = {"site", ".venv", ".nox", "__pycache__", "build", "dist", ".scratch"}
MAX_FILE_LINES = 600
MAX_FUNCTION_LINES = 80


def _is_triton_kernel(fn: ast.FunctionDef | ast.AsyncFunctionDef) -> bool:
    for dec in fn.decorator_list:
        target = dec.func if isinstance(dec, ast.Call) else dec
        if isinstance(target, ast.Attribute) and target.attr == "jit":
            return True
        if isinstance(target, ast.Name) and target.id == "jit":
            return True
    return False


def check_file(path: Path) -> list[str]:
    """The problems of one file, as ``path:line: message`` strings."""
    text = path.read_text()
    rel = path.relative_to(ROOT) if path.is_relative_to(ROOT) else path
    problems = []
    n_lines = text.count("\n") + (0 if text.endswith("\n") or not text else 1)
    if n_lines > MAX_FILE_LINES:
        problems.append(f"{rel}:1: {n_lines} lines (at most {MAX_FILE_LINES}): split the file")
    for node in ast.walk(ast.parse(text, filename=str(path))):
        if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            continue
        first = min([node.lineno, *(d.lineno for d in node.decorator_list)])
        length = node.end_lineno - first + 1
        if length <= MAX_FUNCTION_LINES:
            continue
        doc = ast.get_docstring(node) or ""
        if _is_triton_kernel(node) and "long" in doc.lower():
            continue
        why = " (a Triton kernel: say in its docstring why it is long)" if _is_triton_kernel(node) else ""
        problems.append(f"{rel}:{first}: {node.name} is {length} lines (at most {MAX_FUNCTION_LINES}){why}")
    return problems


def python_files(paths: list[str]) -> list[Path]:
    out = []
    for p in paths:
        path = (ROOT / p) if not Path(p).is_absolute() else Path(p)
        if path.is_file():
            out.append(path)
            continue
        for f in sorted(path.rglob("*.py")):
            if not SKIP_DIRS.intersection(f.relative_to(path).parts):
                out.append(f)
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", nargs="+", default=list(DEFAULT_PATHS))
    args = ap.parse_args(argv)
    problems = [p for f in python_files(args.paths) for p in check_file(f)]
    for p in problems:
        print(p)
    if problems:
        print(f"check_shape: {len(problems)} problem(s)", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
