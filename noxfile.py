"""Every build, test, lint and compile task of the monorepo, in one place.

    bash tools/setup_env.sh                # once: makes .venv (torch, triton, dev tools, packages editable)
    .venv/bin/nox -l                       # list sessions
    .venv/bin/nox -s ci                    # what CI runs: lint, import surface, cpu tests, build,
                                           # integration, AOT compile, docs
    .venv/bin/nox -s "tests(package='norm', platform='cpu')"
    .venv/bin/nox -s "tests(package='norm', platform='cuda')"   # skips, saying so, without an NVIDIA GPU
    .venv/bin/nox -s "compile(target='sm_90')" build lint import_surface
    .venv/bin/nox -s integration           # fresh-venv install scenarios from the built wheels (minutes)
    .venv/bin/nox -s docs                  # regenerated docs up to date + mkdocs build --strict into site/
    .venv/bin/nox -s affected -- --base origin/main        # packages a change affects (and why)
    .venv/bin/nox -s affected_tests -- --base origin/main  # cpu lane of just those (+ tests-integration)
    .venv/bin/nox -s release -- norm patch --dry-run       # tools/release.py (bump, changelog, pins, tag)

Why every session has ``venv_backend="none"``: the family's only heavy dependencies are
torch and triton (together several hundred MB, a multi-GB CUDA build if pip ever resolves an
unpinned torch). Letting nox build a virtualenv per session would reinstall them for every
(package x platform) pair. Instead ``tools/setup_env.sh`` prepares ONE environment, ``.venv``
at the repository root, with pinned torch/triton, the pinned dev tools and every package
installed editable, and every session here runs its commands with that environment's
interpreter (``.venv/bin/python -m pytest``, ``-m ruff``, ``-m build``, ...), whichever
Python runs nox itself. A session fails with a clear message when ``.venv`` is missing.
On a machine whose Python environment is provided (a GPU host with its own CUDA/ROCm
torch and triton, the family installed with ``pip install --no-deps -e packages/*``), set
``SGL_PYTHON=/path/to/python`` to run the sessions with that interpreter instead.

The package list is derived from the directories under ``packages/`` (short names: the
directory without the ``sgl-diffusion-`` prefix; ``packages/sgl-diffusion`` is
``umbrella``), so a new package gets its sessions without editing this file.

Lanes that need hardware (``platform='cuda'``/``'rocm'``) check for it first and *skip*
with the reason when it is absent; a skip is never reported as a pass. The ``ci`` session
does not call them (CI has no GPU); it runs the CPU lane of every package under the Triton
interpreter and the ahead-of-time compile lanes for every GPU target instead.
"""

from __future__ import annotations

import json
import logging
import os
import subprocess
import threading
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

import nox
from nox.command import CommandFailed

ROOT = Path(__file__).resolve().parent
VENV_PY = ROOT / ".venv" / "bin" / "python"
PREFIX = "sgl-diffusion-"


def _discover_packages() -> dict[str, str]:
    """Short name -> directory name under packages/, for every directory with a pyproject.toml."""
    out: dict[str, str] = {}
    for pyproject in sorted((ROOT / "packages").glob("*/pyproject.toml")):
        d = pyproject.parent.name
        short = d[len(PREFIX) :] if d.startswith(PREFIX) else ("umbrella" if d == PREFIX.rstrip("-") else d)
        out[short] = d
    return out


PACKAGES = _discover_packages()
PLATFORMS = ("cpu", "cuda", "rocm")
TARGETS = ("sm_80", "sm_90", "sm_100", "gfx942", "gfx950")
# Every variant (each launch configuration a rule can pick) is compiled for the targets the kernels
# are tuned for, H100/H200 (sm_90), and for both AMD targets, MI300 (gfx942) and MI355 (gfx950),
# where the ROCm checks (no scratch, VGPRs within the workgroup's share) apply to every variant;
# sm_80 and sm_100 compile one variant per kernel and argument types (tools/aot_compile.py
# --sample): every kernel and dtype, not every constexpr.
FULL_TARGETS = ("sm_90", "gfx942", "gfx950")
# The FlyDSL compile lanes (tools/compile_rocm.py: every variant of every FlyDSL kernel, ISA checks),
# one per AMD target; they run beside the Triton lanes in ci's compile step.
FLYDSL_LANES = ("flydsl-gfx942", "flydsl-gfx950", "flydsl-gfx1201")

nox.options.default_venv_backend = "none"
nox.options.sessions = ["ci"]


def _not_the_uv_probe(record: logging.LogRecord) -> bool:
    return record.getMessage() != "uv binary not found."


# nox looks for uv whenever it sets up a session, whatever its venv_backend (to know which optional
# backends exist), and logs "uv binary not found." when there is none. No session here makes a
# virtualenv (venv_backend="none"), so that line says nothing about this run: drop it, and only it.
logging.getLogger("nox").addFilter(_not_the_uv_probe)


def _py(session: nox.Session) -> str:
    """The interpreter every command runs with: .venv's, or $SGL_PYTHON (a machine with its own torch)."""
    override = os.environ.get("SGL_PYTHON")
    if override:
        return override
    if not VENV_PY.exists():
        session.error(f"{VENV_PY} does not exist: run `bash tools/setup_env.sh` first (it prepares the one env)")
    return str(VENV_PY)


def _pytest(session: nox.Session, *args: str, env: dict[str, str | None], what: str, extra: Sequence[str] = ()) -> None:
    """Run pytest; exit code 5 (nothing collected) is a failure with its own message."""
    try:
        session.run(_py(session), "-m", "pytest", *args, *extra, env=env)
    except CommandFailed as exc:
        if "code 5" in str(exc.reason or ""):
            session.error(f"{what}: pytest collected no test (exit code 5); a lane that runs nothing does not pass")
        raise


# --- tests -------------------------------------------------------------------------------------------


def _gpu_present(session: nox.Session, platform: str) -> str | None:
    """Name of the first GPU of that kind on this machine, or None."""
    want_hip = platform == "rocm"
    code = (
        "import torch\n"
        "ok = torch.cuda.is_available() and (torch.version.hip is not None) == " + repr(want_hip) + "\n"
        "print(torch.cuda.get_device_name(0) if ok else '')\n"
    )
    out = session.run(_py(session), "-c", code, silent=True) or ""
    name = out.strip().splitlines()[-1].strip() if out.strip() else ""
    return name or None


def run_tests(session: nox.Session, package: str, platform: str, extra: Sequence[str] = ()) -> None:
    d = PACKAGES[package]
    tests_dir = ROOT / "packages" / d / "tests"
    rel = tests_dir.relative_to(ROOT).as_posix()
    if not any(tests_dir.rglob("test_*.py")) and not any(tests_dir.rglob("*_test.py")):
        session.error(f"{rel} holds no test file: the {package} {platform} lane would run nothing")
    if platform == "cpu":
        session.log(f"{package}: cpu lane (torch reference + Triton kernels under TRITON_INTERPRET=1)")
        _pytest(session, rel, "-m", "not gpu", env={"TRITON_INTERPRET": "1"}, what=f"{package} cpu lane", extra=extra)
        return
    gpu = _gpu_present(session, platform)
    if gpu is None:
        kind = "CUDA" if platform == "cuda" else "ROCm"
        session.skip(f"no {kind} GPU on this machine: the {platform} lane did not run")
    session.log(f"{package}: {platform} lane on {gpu} (every test, gpu-marked included)")
    what = f"{package} {platform} lane"
    _pytest(session, rel, "-m", "gpu or not gpu", env={"TRITON_INTERPRET": None}, what=what, extra=extra)


@nox.session(venv_backend="none")
@nox.parametrize("platform", PLATFORMS)
@nox.parametrize("package", list(PACKAGES))
def tests(session: nox.Session, package: str, platform: str) -> None:
    """One package's tests on one lane: cpu (interpreter), cuda or rocm (skip without that GPU)."""
    run_tests(session, package, platform, session.posargs)


# --- compile -----------------------------------------------------------------------------------------


def compile_command(target: str) -> list[str]:
    """The arguments of tools/aot_compile.py for one target's lane (see FULL_TARGETS), or of
    tools/compile_rocm.py for a FlyDSL lane (``flydsl-<gfx>``)."""
    if target.startswith("flydsl-"):
        gfx = target.removeprefix("flydsl-")
        return ["tools/compile_rocm.py", "--target", gfx, "--json", f"build/rocm/{gfx}.json"]
    return [
        "tools/aot_compile.py",
        "--target",
        target,
        "--json",
        f"build/aot/{target}.json",
        *([] if target in FULL_TARGETS else ["--sample"]),
    ]


def run_compile(session: nox.Session, target: str, extra: Sequence[str] = ()) -> None:
    session.run(_py(session), *compile_command(target), *extra)


class CompileLanes:
    """Every target's compile lane (tools/aot_compile.py, one single-threaded process each) run in
    the background, at most ``slots`` at a time; ``widen`` raises that number. Each lane's output
    goes to build/aot/<target>.log; ``finish`` waits for the lanes and prints each one's result.

    ``ci`` starts the lanes with one slot before its first step: the cpu test lanes are
    single-threaded, so on CI's 2 cores one core compiles while the other tests (then builds and
    runs the integration tests); at the compile step ``ci`` widens to every core and waits. Lanes
    start longest first (the full lanes, CUDA before ROCm), so the short sampled ones balance the
    cores at the end."""

    ORDER = ("sm_90", "gfx942", "gfx950", "sm_100", "sm_80", *FLYDSL_LANES)  # longest first

    def __init__(self, session: nox.Session, targets: Sequence[str], slots: int = 1):
        self.py = _py(session)
        self.targets = sorted(targets, key=lambda t: self.ORDER.index(t) if t in self.ORDER else -1)
        self.out_dir = ROOT / "build" / "aot"
        self.out_dir.mkdir(parents=True, exist_ok=True)
        self.slots = max(1, slots)
        self.running = 0
        self.cancelled = False
        self.t0 = time.perf_counter()
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.results: dict[str, tuple[int, float, float]] = {}  # target -> (rc, start, seconds)
        self.cond = threading.Condition()
        self.thread = threading.Thread(target=self._schedule, name="compile-lanes", daemon=True)
        self.thread.start()

    def _schedule(self) -> None:
        for target in self.targets:
            with self.cond:
                while self.running >= self.slots and not self.cancelled:
                    self.cond.wait()
                if self.cancelled:
                    return
                self.running += 1
                start = time.perf_counter()
                fh = (self.out_dir / f"{target}.log").open("w")
                cmd = [self.py, *compile_command(target)]
                try:
                    proc = subprocess.Popen(cmd, cwd=ROOT, stdout=fh, stderr=subprocess.STDOUT)
                except OSError as exc:  # the lane fails (its log says why); the others still run
                    fh.write(f"could not start {' '.join(cmd)}: {exc}\n")
                    fh.close()
                    self.results[target] = (-1, start - self.t0, 0.0)
                    self.running -= 1
                    continue
                self.procs[target] = proc
            threading.Thread(target=self._reap, args=(target, proc, fh, start), daemon=True).start()

    def _reap(self, target: str, proc: subprocess.Popen[bytes], fh: IO[str], start: float) -> None:
        rc = proc.wait()
        fh.close()
        with self.cond:
            self.results[target] = (rc, start - self.t0, time.perf_counter() - start)
            self.running -= 1
            self.cond.notify_all()

    def widen(self, slots: int) -> None:
        with self.cond:
            self.slots = max(self.slots, slots)
            self.cond.notify_all()

    def cancel(self) -> None:
        """Stop the lanes (ci failing fast): terminate the running ones, start no other."""
        with self.cond:
            self.cancelled = True
            self.cond.notify_all()
            procs = [p for t, p in self.procs.items() if t not in self.results]
        for proc in procs:
            proc.terminate()
        for proc in procs:
            proc.wait()

    def finish(self, session: nox.Session) -> None:
        jobs = max(1, min(len(self.targets), os.cpu_count() or 1))
        with self.cond:
            done = sorted(self.results)
        session.log(
            f"compile lanes {', '.join(self.targets)}: {jobs} at a time from here"
            + (f" ({', '.join(done)} done before this step)" if done else "")
        )
        self.widen(jobs)
        failed = []
        for target in self.targets:
            with self.cond:
                while target not in self.results:
                    self.cond.wait()
                rc, start, secs = self.results[target]
            text = (self.out_dir / f"{target}.log").read_text()
            tail = text.splitlines()[-3:] if rc == 0 else text.splitlines()[-40:]
            status = "ok" if rc == 0 else f"FAILED (exit {rc})"
            session.log(f"compile({target}): {status} in {secs:.0f}s (started {start:.0f}s after the lanes)")
            for line in tail:
                print(f"    {line}", flush=True)
            if rc != 0:
                failed.append(target)
        if failed:
            session.error(f"compile lanes failed: {', '.join(failed)} (logs in build/aot/<target>.log)")


def run_compile_parallel(session: nox.Session, targets: Sequence[str]) -> None:
    """Every target's compile lane, as many at a time as the machine has cores (each compile is
    single-threaded: on CI's 2 cores the five lanes take about half the sequential time).
    Each lane's output goes to build/aot/<target>.log and is printed when the lane ends."""
    CompileLanes(session, targets, slots=os.cpu_count() or 1).finish(session)


@nox.session(venv_backend="none")
def compile_all(session: nox.Session) -> None:
    """Every compile lane (or the targets given after --), in parallel; what ci runs."""
    run_compile_parallel(session, session.posargs or TARGETS)


def run_rocm_setup(session: nox.Session) -> None:
    """What the FlyDSL lanes need, installed by the lane itself: flydsl, Debian's lld-19, ROCM_PATH."""
    session.run(_py(session), "tools/compile_rocm.py", "--setup")


@nox.session(name="compile-rocm", venv_backend="none")
def compile_rocm(session: nox.Session) -> None:
    """Every FlyDSL kernel variant for gfx942, gfx950 and gfx1201, ISA checked (installs what it needs),
    then the Triton ROCm lanes (gfx942, gfx950) with the same scratch and VGPR checks."""
    run_rocm_setup(session)
    run_compile_parallel(session, [*FLYDSL_LANES, "gfx942", "gfx950"])


_BENCH_OPS = (
    "import sgl_diffusion_core as c, aot_compile\n"
    "aot_compile.import_family()\n"
    "print(' '.join(o for o in c.REGISTRY.ops() if c.REGISTRY.op(o).bench))\n"
)


@nox.session(name="rocm-matrix", venv_backend="none")
def rocm_matrix(session: nox.Session) -> None:
    """On an AMD GPU, the whole ROCm matrix: every package's rocm lane (Triton and FlyDSL backends,
    gpu tests included), then every op's benchmark suite, written as
    docs/benchmarks/<op>_bench_<gfx>.json (the records the H200 runs write), then the docs."""
    py = _py(session)
    gpu = _gpu_present(session, "rocm")
    if gpu is None:
        session.error("rocm-matrix needs a ROCm build of torch and an AMD GPU; none found on this machine")
    session.run(py, "-m", "pip", "install", "--quiet", "flydsl>=0.5,<0.6", "numpy")  # norm's [flydsl] extra
    for p in PACKAGES:
        run_tests(session, p, "rocm")
    arch_code = "import torch; print(torch.cuda.get_device_properties(0).gcnArchName.split(':')[0])"
    arch = (session.run(py, "-c", arch_code, silent=True) or "").strip().splitlines()[-1]
    ops = (session.run(py, "-c", _BENCH_OPS, silent=True, env={"PYTHONPATH": str(ROOT / "tools")}) or "").split()
    for op in ops:
        out = f"docs/benchmarks/{op.rpartition('.')[2]}_bench_{arch}.json"
        session.run(py, "-m", "sgl_diffusion", "bench", "--op", op, "--out", out)
    session.run(py, "tools/gen_docs.py")


@nox.session(name="compile", venv_backend="none")
@nox.parametrize("target", TARGETS)
def compile_(session: nox.Session, target: str) -> None:
    """Compile every registered Triton kernel ahead of time for one GPU target (no GPU needed)."""
    run_compile(session, target, session.posargs)


# --- build, lint, import surface ---------------------------------------------------------------------


def run_build(session: nox.Session) -> None:
    # tools/build_dists.py: python -m build --no-isolation per package (the hatchling in .venv; an
    # isolated build env would make pip fetch the build backend for every package), then twine
    # check --strict and tools/check_wheels.py. tests-integration builds its wheels with the same code.
    session.run(_py(session), "tools/build_dists.py", "--outdir", "dist")


@nox.session(venv_backend="none")
def build(session: nox.Session) -> None:
    """Wheel + sdist of every package into dist/, then twine check and tools/check_wheels.py."""
    run_build(session)


def run_lint(session: nox.Session) -> None:
    py = _py(session)
    session.run(py, "-m", "ruff", "check", ".")
    # What format --check leaves out (packages/) is listed, with why, in [tool.ruff.format].
    session.run(py, "-m", "ruff", "format", "--check", ".")
    # export tables and stubs of the domains built on op definitions: generated, never edited
    session.run(py, "tools/gen_exports.py", "--check")
    # size limits (600 lines a file, 80 a function) and no build-history narrative in the tree
    session.run(py, "tools/check_shape.py")
    session.run(py, "tools/check_history.py")


@nox.session(venv_backend="none")
def lint(session: nox.Session) -> None:
    """ruff check and format --check (what [tool.ruff.format] does not exclude), generated exports up to date,
    size limits (tools/check_shape.py), no build-history narrative (tools/check_history.py)."""
    run_lint(session)


def run_import_surface(session: nox.Session, extra: Sequence[str] = ()) -> None:
    env: dict[str, str | None] = {"TRITON_INTERPRET": None}
    what = "import surface"
    _pytest(
        session, "tests-integration", "-m", "not gpu and not venv and not multiproc", env=env, what=what, extra=extra
    )


@nox.session(venv_backend="none")
def import_surface(session: nox.Session) -> None:
    """Cross-package rules in .venv: imports, laziness, pins, release/affected tools, docs up to date.

    tests-integration without the `venv` tests: no deep imports, exports and registry targets
    resolve, laziness, the family's pins, tools/release.py and tools/affected.py in scratch
    clones, the generated docs up to date.
    """
    run_import_surface(session, session.posargs)


def run_integration(session: nox.Session, extra: Sequence[str] = ()) -> None:
    env: dict[str, str | None] = {"TRITON_INTERPRET": None}
    _pytest(session, "tests-integration", "-m", "venv or multiproc", env=env, what="integration", extra=extra)


@nox.session(venv_backend="none")
def integration(session: nox.Session) -> None:
    """Install scenarios in fresh virtualenvs from freshly built wheels (tests-integration -m venv), and
    the multi-process tests (-m multiproc: torch.distributed over gloo on CPU processes).

    One domain alone, the umbrella, core version ranges, a missing optional backend; see
    tests-integration/test_fresh_venvs.py.
    """
    run_integration(session, session.posargs)


# --- docs --------------------------------------------------------------------------------------------


def run_docs(session: nox.Session) -> None:
    py = _py(session)
    # The generated pages (selection matrix, package pages, benchmarks) must be committed up to
    # date: regenerate with `python tools/gen_docs.py`.
    session.run(py, "tools/gen_docs.py", "--check")
    # NO_MKDOCS_2_WARNING: mkdocs-material's end-of-life banner on every build (the pin is deliberate).
    env = {"NO_MKDOCS_2_WARNING": "1"}
    session.run(py, "-m", "mkdocs", "build", "--strict", "--clean", "--site-dir", "site", env=env)


@nox.session(venv_backend="none")
def docs(session: nox.Session) -> None:
    """The docs site into site/: generated pages up to date, then mkdocs build --strict (broken links fail)."""
    run_docs(session)


# --- release and affected packages -------------------------------------------------------------------


@nox.session(venv_backend="none")
def release(session: nox.Session) -> None:
    """tools/release.py PACKAGE major|minor|patch|X.Y.Z [--dry-run] [--move-pins|--allow-pin-break]."""
    if not session.posargs:
        session.error(
            "usage: .venv/bin/nox -s release -- PACKAGE major|minor|patch|X.Y.Z [--dry-run] (see tools/release.py)"
        )
    session.run(_py(session), "tools/release.py", *session.posargs)


@nox.session(venv_backend="none")
def affected(session: nox.Session) -> None:
    """Print the packages a change affects, and why: -- [--base REV] [--head REV] [--files PATH ...].

    Default base: origin/main when it exists, else HEAD~1; the working tree (untracked files
    included) counts unless --head is given. Rules: tools/affected.py.
    """
    session.run(_py(session), "tools/affected.py", "--explain", *session.posargs)


@nox.session(venv_backend="none")
def affected_tests(session: nox.Session) -> None:
    """Tests of just the affected packages: -- [--base REV] [--head REV] [--platform cpu|cuda|rocm].

    Runs each affected package's lane (cpu by default) and, when any package is affected, the
    cross-package suite (import_surface). `nox -s ci` stays the full run.
    """
    args = list(session.posargs)
    platform = "cpu"
    if "--platform" in args:
        i = args.index("--platform")
        platform = args[i + 1] if i + 1 < len(args) else ""
        del args[i : i + 2]
    if platform not in PLATFORMS:
        session.error(f"--platform must be one of {', '.join(PLATFORMS)}")
    out = session.run(_py(session), "tools/affected.py", "--json", *args, silent=True) or ""
    result = json.loads(out)
    chosen = result["packages"]
    if not chosen:
        session.skip(f"no package is affected by {len(result['files'])} changed path(s); nothing to test")
    session.log(f"affected (base {result['base'] or 'given files'}): {len(chosen)} of {len(PACKAGES)} packages")
    for p in chosen:
        session.log(f"  {p}: {'; '.join(result['reasons'][p])}")
    for p in chosen:
        run_tests(session, p, platform)
    run_import_surface(session)


# --- ci ----------------------------------------------------------------------------------------------


@nox.session(venv_backend="none")
def ci(session: nox.Session) -> None:
    """What CI runs, failing fast: lint, import surface, cpu tests, build, integration, AOT compile, docs.

    The AOT compile lanes start in the background with the first step, on the core the
    single-threaded steps before them leave idle (see CompileLanes); their step waits for them.

    SGL_CI_KEEP_GOING=1 runs every step even after a failure (ci still fails at the end),
    to see every problem in one run.
    """
    steps: list[tuple[str, Callable[[], None]]] = [
        ("lint", lambda: run_lint(session)),
        ("import_surface", lambda: run_import_surface(session)),
    ]
    for p in PACKAGES:
        steps.append((f"tests(package='{p}', platform='cpu')", lambda p=p: run_tests(session, p, "cpu")))
    # The compile lanes run in the background from the first step on, one at a time while the
    # steps before the compile step run (the single-threaded test lanes, then the build and the
    # fresh-venv integration); that step gives them every core and waits.
    steps.append(("build", lambda: run_build(session)))
    steps.append(("integration", lambda: run_integration(session)))
    steps.append((f"compile(targets={','.join(TARGETS + FLYDSL_LANES)})", lambda: lanes.finish(session)))
    steps.append(("docs", lambda: run_docs(session)))
    keep_going = os.environ.get("SGL_CI_KEEP_GOING", "") not in ("", "0")

    session.run(
        _py(session),
        "-c",
        "import sys, torch, triton; print(f'python {sys.version.split()[0]}, torch {torch.__version__}, "
        "triton {triton.__version__}')",
    )
    session.log("ci: the cuda and rocm lanes are not part of ci (no GPU here); run them on a GPU machine")
    timings: list[tuple[str, float, str]] = []

    def summary() -> None:
        session.log("ci: step timings")
        for label, secs, status in timings:
            session.log(f"  {status:<6} {secs:7.1f}s  {label}")

    failed: list[str] = []
    session.log(
        f"ci: compile lanes {', '.join(TARGETS + FLYDSL_LANES)} start in the background "
        "(logs in build/aot/<target>.log)"
    )
    run_rocm_setup(session)  # the FlyDSL lanes' tools, before the lanes start
    lanes = CompileLanes(session, TARGETS + FLYDSL_LANES, slots=1)
    try:
        for i, (label, step) in enumerate(steps, 1):
            session.log(f"===== ci step {i}/{len(steps)}: {label} =====")
            t0 = time.perf_counter()
            try:
                step()
            except Exception as exc:  # CommandFailed, a session.error or session.skip inside a step: all fail ci
                timings.append((label, time.perf_counter() - t0, "FAILED"))
                reason = getattr(exc, "reason", None) or str(exc) or type(exc).__name__
                msg = (
                    f"ci step {i}/{len(steps)} '{label}' failed ({reason}); "
                    f're-run it alone: .venv/bin/nox -s "{label}"'
                )
                if not keep_going:
                    summary()
                    session.error(msg)
                session.warn(msg)
                failed.append(label)
                continue
            timings.append((label, time.perf_counter() - t0, "ok"))
    finally:
        lanes.cancel()  # a no-op once every lane has finished
    summary()
    if failed:
        session.error(f"ci: {len(failed)} of {len(steps)} steps failed: {', '.join(failed)}")
    session.log(f"ci: all {len(steps)} steps passed")
