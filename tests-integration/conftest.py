"""Fixtures shared by the tests of tests-integration: the wheelhouse and fresh virtual environments."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from _venvs import Venv

_TIMINGS: list[str] = []


@pytest.fixture(scope="session")
def wheelhouse(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Wheels + sdists of every package, built once per session by the code behind ``nox -s build``
    (tools/build_dists.py: python -m build --no-isolation, twine check --strict, check_wheels)."""
    import build_dists  # tools/ is on sys.path through _venvs

    out = tmp_path_factory.mktemp("wheelhouse")
    t0 = time.perf_counter()
    build_dists.build(out, quiet=True)
    _TIMINGS.append(f"wheelhouse (build + twine check + check_wheels): {time.perf_counter() - t0:.1f}s")
    return out


@pytest.fixture
def make_venv(tmp_path: Path) -> Iterator[Callable[..., Venv]]:
    """``make_venv(triton=...)`` -> a fresh :class:`Venv` under tmp_path; removed after the test
    (each one holds a torch install, ~1 GB)."""
    made: list[Venv] = []

    def make(*, triton: bool, name: str = "venv") -> Venv:
        venv = Venv.create(tmp_path / f"{name}{len(made)}", triton=triton, log=_TIMINGS)
        made.append(venv)
        return venv

    yield make
    for venv in made:
        venv.remove()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _TIMINGS:
        terminalreporter.section("fresh virtual environments: timings")
        for line in _TIMINGS:
            terminalreporter.write_line(line)
