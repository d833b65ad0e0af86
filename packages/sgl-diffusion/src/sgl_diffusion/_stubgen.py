"""Generate ``__init__.pyi`` from the export table.

    python -m sgl_diffusion._stubgen            # rewrite the stub
    python -m sgl_diffusion._stubgen --check    # exit 1 if the committed stub is stale

Works from the table alone: nothing of the family is imported.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from ._exports import EXPORTS

STUB_PATH = Path(__file__).with_name("__init__.pyi")

_HEADER = """\
# Generated from sgl_diffusion/_exports.py by `python -m sgl_diffusion._stubgen`; do not edit.
# At run time these names are resolved lazily (PEP 562, see __init__.py); this stub is
# what type checkers and IDEs see.
"""

_ERROR = """\
class MissingDistributionError(ImportError):
    distribution: str
    module: str
    def __init__(self, attr: str, module: str, distribution: str) -> None: ...
"""


def render(exports: dict[str, tuple[str, str]] | None = None) -> str:
    """The text of ``__init__.pyi`` for an export table (default: the package's)."""
    table = EXPORTS if exports is None else exports
    # one re-export per line, ordered as isort / ruff's "I" rules order them (module, then
    # CONSTANTS, Classes, functions), so the generated stub is lint-clean as written
    imports = sorted(((module, _member_key(name)), name) for name, (module, _dist) in table.items())
    lines = [_HEADER]
    lines += [f"from {module} import {name} as {name}" for (module, _), name in imports]
    lines += ["", "from .__about__ import __version__ as __version__", "", _ERROR]
    lines.append("__all__ = [")
    lines += [f'    "{n}",' for n in sorted([*table, "__version__"])]
    lines.append("]")
    return "\n".join(lines) + "\n"


def _member_key(name: str) -> tuple[int, str]:
    if name.isupper():
        return (0, name)
    return (1 if name[:1].isupper() else 2, name.lower())


def is_stale(path: Path = STUB_PATH) -> bool:
    try:
        return path.read_text() != render()
    except FileNotFoundError:
        return True


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m sgl_diffusion._stubgen", description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true", help="exit 1 if the stub is stale instead of rewriting it")
    parser.add_argument("--path", type=Path, default=STUB_PATH, help="stub file (default: the package's __init__.pyi)")
    args = parser.parse_args(argv)
    if args.check:
        if is_stale(args.path):
            print(
                f"{args.path} is stale: it does not match sgl_diffusion/_exports.py. "
                "Regenerate it with: python -m sgl_diffusion._stubgen",
                file=sys.stderr,
            )
            return 1
        print(f"{args.path} is up to date")
        return 0
    args.path.write_text(render())
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
