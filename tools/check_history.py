"""Find build-history narrative in the repository's text files; exit 1 listing file:line:match.

    python tools/check_history.py                     # packages/ docs/ tools/ noxfile.py
    python tools/check_history.py --paths packages/sgl-diffusion-norm README.md

Files and docs describe the product, not how it was reached (history lives in git): no numbered
sessions, runs or rounds of work, no queued next steps. nox's vocabulary (``nox -s``,
``@nox.session``, ``session.run(``) and pytest's (``scope="session"``) do not match: every pattern
needs a number or a narrative word next to "session" / "run". Only text files are read (benchmark
JSON is not), and the generated site/ is skipped.
"""

from __future__ import annotations

import argparse
import re
import sys
from pathlib import Path

SELF = Path(__file__).resolve()  # its own patterns and examples would match
ROOT = SELF.parent.parent
DEFAULT_PATHS = ("packages", "docs", "tools", "noxfile.py")
SUFFIXES = {".py", ".pyi", ".md", ".sh", ".toml", ".txt", ".yml"}
SKIP_DIRS = {"site", ".venv", ".nox", "__pycache__", "build", "dist"}
# a number that counts repetitions or states a rate is no numbered run ("run 3 times", "runs 12% slower")
NOT_COUNT = r"(?![-\d/,. ]*(?:%|x\b|times\b|iterations\b))"
PATTERNS = (
    r"\bsessions?[-_ ]?\d+",  # session 18, session-3, sessions 3, 4 and 7, session18_run3
    r"\bs\d+_run\d+",  # s12_run6
    r"_s\d+(?:_[\w*-]+)?\.(?:json|png|log|txt)\b",  # results named after a numbered session: bench_h200_s8.json
    r"_s\d+_\w*h[12]00\w*\.(?:json|png|log|txt)\b",  # hint_ab_s18_h200_x.json
    r"\bruns? ?" + NOT_COUNT + r"\d+\b",  # run 3, run 4's, runs 4-6
    r"\brounds? " + NOT_COUNT + r"\d+\b",  # round 2
    r"\bnext[_ ]session",
    r"\b(?:this|that|last|previous) session\b",
    r"\bthe session's\b",
    r"\bqueued\b",
    r"\bdevice[- ]calls?\b",
)
PATTERN = re.compile("|".join(PATTERNS), re.IGNORECASE)


def text_files(path: Path) -> list[Path]:
    """``path`` itself, or the text files under it (sorted), without this script."""
    if path.is_file():
        return [path] if path.resolve() != SELF else []
    files = (f for f in sorted(path.rglob("*")) if f.is_file() and f.suffix in SUFFIXES)
    return [f for f in files if not set(f.relative_to(path).parts) & SKIP_DIRS and f.resolve() != SELF]


def scan(paths: list[Path]) -> list[str]:
    """``file:line:match`` for every narrative phrase in the text files under ``paths``."""
    hits = []
    for f in (f for p in paths for f in text_files(p)):
        try:
            lines = f.read_text(encoding="utf-8").splitlines()
        except (UnicodeDecodeError, OSError):
            continue
        name = f.relative_to(ROOT) if f.is_relative_to(ROOT) else f
        hits += [f"{name}:{n}:{m.group(0)}" for n, line in enumerate(lines, 1) for m in PATTERN.finditer(line)]
    return hits


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--paths", nargs="+", default=list(DEFAULT_PATHS), help="files or folders (repo-relative)")
    hits = scan([ROOT / p for p in ap.parse_args(argv).paths])
    print("\n".join(hits) if hits else "check_history: no build-history narrative found")
    if hits:
        print(f"check_history: {len(hits)} hit(s): state the rule, why, and the data file instead", file=sys.stderr)
    return 1 if hits else 0


if __name__ == "__main__":
    sys.exit(main())
