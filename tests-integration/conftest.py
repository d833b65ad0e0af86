"""Fixtures shared by the tests of tests-integration: the wheelhouse and fresh virtual environments.

A test that wants a fresh venv is marked ``@pytest.mark.venv(triton=True|False)`` and takes
the ``fresh_venv`` fixture. The venvs of every selected test are created ahead, two at a
time, from the moment the first one is needed (installing torch is mostly waiting on the
disk: two installs side by side take about as long as one), so a test usually finds its
venv ready. Each venv is removed after its test (one holds a torch install, ~1 GB).
"""

from __future__ import annotations

import shutil
import threading
import time
from collections.abc import Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path

import pytest

from _venvs import Venv

_TIMINGS: list[str] = []
_PLAN: list[tuple[str, bool]] = []  # (test node id, triton) of every selected test marked venv(triton=...)


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        mark = item.get_closest_marker("venv")
        if mark is not None and "triton" in mark.kwargs:
            _PLAN.append((item.nodeid, bool(mark.kwargs["triton"])))


class VenvPool:
    """Creates the planned venvs in the background, in test order; ``take`` waits for one."""

    def __init__(self, base: Path, workers: int = 2):
        self.base = base
        self.executor = ThreadPoolExecutor(max_workers=workers, thread_name_prefix="venv")
        self.futures: dict[str, Future[Venv]] = {}
        self.lock = threading.Lock()

    def _submit(self, key: str, triton: bool) -> None:
        with self.lock:
            if key not in self.futures:
                path = self.base / f"venv{len(self.futures)}"
                self.futures[key] = self.executor.submit(Venv.create, path, triton=triton, log=_TIMINGS)

    def plan(self, specs: list[tuple[str, bool]]) -> None:
        for key, triton in specs:
            self._submit(key, triton)

    def take(self, key: str, triton: bool) -> Venv:
        self._submit(key, triton)
        t0 = time.perf_counter()
        venv = self.futures[key].result()
        _TIMINGS.append(f"  {key.split('::')[-1]}: got {venv.path.name} after waiting {time.perf_counter() - t0:.1f}s")
        return venv

    def close(self) -> None:
        self.executor.shutdown(wait=True, cancel_futures=True)
        shutil.rmtree(self.base, ignore_errors=True)


@pytest.fixture(scope="session")
def venv_pool(tmp_path_factory: pytest.TempPathFactory) -> Iterator[VenvPool]:
    pool = VenvPool(tmp_path_factory.mktemp("venvs"))
    pool.plan(_PLAN)
    yield pool
    pool.close()


@pytest.fixture
def fresh_venv(request: pytest.FixtureRequest, venv_pool: VenvPool) -> Iterator[Venv]:
    """A fresh venv with torch (and, for ``@pytest.mark.venv(triton=True)``, Triton + numpy)."""
    mark = request.node.get_closest_marker("venv")
    if mark is None or "triton" not in mark.kwargs:
        raise pytest.UsageError(f"{request.node.nodeid}: mark it @pytest.mark.venv(triton=True|False)")
    venv = venv_pool.take(request.node.nodeid, bool(mark.kwargs["triton"]))
    yield venv
    venv.remove()


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


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    if _TIMINGS:
        terminalreporter.section("fresh virtual environments: timings")
        for line in _TIMINGS:
            terminalreporter.write_line(line)
