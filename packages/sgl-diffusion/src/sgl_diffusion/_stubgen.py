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
    by_module: dict[str, list[str]] = {}
    for name, (module, _dist) in table.items():
        by_module.setdefault(module, []).append(name)
    parts = [_HEADER]
    for module in sorted(by_module):
        names = sorted(by_module[module])
        body = "".join(f"    {n} as {n},\n" for n in names)
        parts.append(f"from {module} import (\n{body})\n")
    parts.append("from .__about__ import __version__ as __version__\n")
    parts.append("\n" + _ERROR)
    all_names = sorted([*table, "__version__"])
    parts.append("\n__all__ = [\n" + "".join(f'    "{n}",\n' for n in all_names) + "]\n")
    return "".join(parts[:1]) + "\n" + "".join(parts[1:])


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
