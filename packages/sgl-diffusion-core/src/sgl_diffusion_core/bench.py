"""Benchmark helpers: bytes model, timing, same-run copy bandwidth, host overhead, JSON records."""

from __future__ import annotations

import datetime as _dt
import functools
import json
import os
import platform as _platform
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, is_dataclass
from pathlib import Path
from typing import Any

import torch


def tensor_bytes(*tensors: torch.Tensor | None) -> int:
    """Bytes of the logical elements of the given tensors (each read or written once)."""
    return sum(t.numel() * t.element_size() for t in tensors if t is not None)


@dataclass(frozen=True)
class Timing:
    median_ms: float
    p20_ms: float
    p80_ms: float

    def gbps(self, nbytes: int) -> float:
        return nbytes / (self.median_ms * 1e-3) / 1e9


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# how time_gpu flushes L2 before each call: "read" reads a 256 MB buffer (L2 left holding clean
# lines), "zero" writes it (L2 left full of dirty lines, written back while the timed call runs).
# On the H200 (FLUX's rms_modulate case, 57 MB per call, docs/benchmarks/flush_mode_probe_h200.json)
# "zero" added 2.2-2.7 us to the copy, the exact
# and the close kernel (the copy 21.2-21.8 us against 19.0-19.2, in other processes 18.5-19.3: it
# depends on where the buffers sit), "read" measured the copy at 19.0-19.2 us with the case
# allocated or freed; their ratios to the copy stayed within 1.5 points either way (exact kernel
# 78.8-79.9%, close 94.5-96.2%). The public op, same kernel, moved 0.9-2.2 us (84.7 / 82.7% under
# "zero", faster than its kernel alone there; 78.9 / 80.3% under "read", within 0.4 us of it)
FLUSH = "read"


def l2_flusher(device: torch.device, flush_bytes: int = 256 << 20) -> Callable[[], Any]:
    """The L2 flush ``time_gpu`` issues before each timed call, by ``FLUSH``: a call that reads
    (``"read"``) or writes (``"zero"``) a buffer of ``flush_bytes``."""
    mode = _flush_mode()
    flush = torch.zeros(flush_bytes // 8, dtype=torch.int64, device=device)
    return flush.zero_ if mode == "zero" else flush.sum


def _flush_mode() -> str:
    if FLUSH not in ("zero", "read"):
        raise ValueError(f"bench.FLUSH must be 'zero' or 'read', not {FLUSH!r}")
    return FLUSH


def time_gpu(fn: Callable[[], Any], device: torch.device, *, warmup: int = 10, rep: int = 100,
             flush_bytes: int = 256 << 20) -> Timing:
    """Median / p20 / p80 of ``fn`` in ms (:func:`gpu_samples`)."""
    return _stats(gpu_samples(fn, device, warmup=warmup, rep=rep, flush_bytes=flush_bytes))


def gpu_samples(fn: Callable[[], Any], device: torch.device, *, warmup: int = 10, rep: int = 100,
                flush_bytes: int = 256 << 20) -> list[float]:
    """The times of ``rep`` calls of ``fn`` in ms, sorted, with CUDA events and an L2 flush (``FLUSH``)
    before each call (off CUDA: the host clock, :func:`time_host`'s calls).

    The GPU is kept ahead of the host: a sleep kernel as long as twice the host's whole loop is
    enqueued first, so each call's kernels follow its start event at once. Without it, wherever the
    host spends longer on one iteration (flush, events, the call's Python and launches) than the GPU
    does, the GPU waits at the start event and the wait counts as the call's time: small calls
    measured their host overhead."""
    _flush_mode()  # checked on every device
    if device.type != "cuda":
        return _host_samples(fn, warmup=max(1, warmup // 5), rep=max(3, rep // 10))
    do_flush = l2_flusher(device, flush_bytes)
    for _ in range(warmup):
        fn()
    _sync(device)
    starts = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    ends = [torch.cuda.Event(enable_timing=True) for _ in range(rep)]
    t0 = time.perf_counter()
    do_flush()
    starts[0].record()
    fn()
    ends[0].record()
    host_us = (time.perf_counter() - t0) * 1e6  # one iteration's enqueueing
    _sync(device)
    torch.cuda._sleep(_sleep_cycles(2 * rep * host_us))
    for i in range(rep):
        do_flush()
        starts[i].record()
        fn()
        ends[i].record()
    _sync(device)
    return sorted(s.elapsed_time(e) for s, e in zip(starts, ends))


# GPU clock cycles per microsecond assumed when sizing the sleep ahead of timed calls: at least the
# clock of the GPUs we time on (H100 / H200 boost 1.98 GHz, MI300X 2.1 GHz: a faster clock only shortens
# the sleep by that ratio, which the factor 2 on the host time covers)
_CYCLES_PER_US = 2100
_MAX_SLEEP_US = 2e6


def _sleep_cycles(us: float) -> int:
    """Cycles of ``torch.cuda._sleep`` for about ``us`` microseconds of GPU time (at most 2 s)."""
    return int(min(max(us, 0.0), _MAX_SLEEP_US) * _CYCLES_PER_US)


def time_host(fn: Callable[[], Any], *, warmup: int = 2, rep: int = 10) -> Timing:
    return _stats(_host_samples(fn, warmup=warmup, rep=rep))


def _host_samples(fn: Callable[[], Any], *, warmup: int, rep: int) -> list[float]:
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(rep):
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    return sorted(times)


def _stats(times: list[float]) -> Timing:
    def q(p: float) -> float:
        return times[min(len(times) - 1, int(p * (len(times) - 1) + 0.5))]

    return Timing(statistics.median(times), q(0.2), q(0.8))


def copy_bandwidth(nbytes: int, device: torch.device, **kw: Any) -> tuple[Timing, float]:
    """The fastest same-run device-to-device copy of ``nbytes`` (read + write counted): (timing, GB/s).

    Three copies of the same bytes are timed the same way, ``dst.copy_(src)``, ``src.clone()``
    and a Triton copy (on CUDA/ROCm with Triton installed), and the fastest is the reference:
    "% of copy" is then never inflated by one slow copy path. :func:`copy_kinds` lists each one."""
    best = min(copy_kinds(nbytes, device, **kw).values(), key=lambda t: t.median_ms)
    n = max(1, nbytes // 4)
    return best, best.gbps(4 * n)


def copy_kinds(nbytes: int, device: torch.device, **kw: Any) -> dict[str, Timing]:
    """Timing of each same-run copy of ``nbytes`` (read + write counted): ``copy_``, ``clone``, ``triton``."""
    n = max(1, nbytes // 2 // 2)  # bf16 elements so that read + write = nbytes
    src = torch.randn(n, device=device).to(torch.bfloat16)
    dst = torch.empty_like(src)
    out = {"copy_": time_gpu(lambda: dst.copy_(src), device, **kw),
           "clone": time_gpu(src.clone, device, **kw)}
    triton_copy = _triton_copy(device)
    if triton_copy is not None:
        out["triton"] = time_gpu(lambda: triton_copy(src, dst), device, **kw)
    return out


@functools.cache
def _triton_copy(device: torch.device) -> Callable[[torch.Tensor, torch.Tensor], Any] | None:
    """A plain Triton copy (``dst[:] = src``, 1-D, 8192 elements per program), or None without Triton/GPU."""
    if device.type != "cuda":
        return None
    try:
        import triton
        import triton.language as tl
    except ImportError:
        return None

    @triton.jit
    def _copy_kernel(src, dst, n, BLOCK: tl.constexpr):
        offs = tl.program_id(0).to(tl.int64) * BLOCK + tl.arange(0, BLOCK)
        mask = offs < n
        tl.store(dst + offs, tl.load(src + offs, mask=mask), mask=mask)

    def run(src: torch.Tensor, dst: torch.Tensor) -> None:
        n = src.numel()
        _copy_kernel[(triton.cdiv(n, 8192),)](src, dst, n, BLOCK=8192, num_warps=8)

    return run


def host_us_per_call(fn: Callable[[], Any], device: torch.device, *, calls: int = 200) -> float:
    """Host time of one call in microseconds, measured while the GPU is kept busy.

    A long sleep kernel is enqueued first so every call below only enqueues work; the host
    loop then measures the Python + dispatch + launch cost alone, at any problem size.
    """
    fn()
    _sync(device)
    if device.type == "cuda":
        torch.cuda._sleep(_sleep_cycles(20_000))  # ~20 ms of GPU time ahead of the calls
    t0 = time.perf_counter()
    for _ in range(calls):
        fn()
    t1 = time.perf_counter()
    _sync(device)
    return (t1 - t0) / calls * 1e6


def git_sha(root: str | os.PathLike | None = None) -> str:
    sha = os.environ.get("SGL_DIFFUSION_GIT_SHA")
    if sha:
        return sha
    try:
        return subprocess.run(["git", "rev-parse", "HEAD"], cwd=root, capture_output=True, text=True,
                              check=True, timeout=10).stdout.strip()
    except Exception:
        return "unknown"


def environment(device: torch.device) -> dict[str, Any]:
    """GPU name, torch / triton versions, git SHA, date: the header of every benchmark record."""
    try:
        import triton

        triton_version = triton.__version__
    except ImportError:
        triton_version = None
    gpu = torch.cuda.get_device_name(device) if device.type == "cuda" else _platform.processor() or "cpu"
    return {
        "gpu": gpu,
        "device": str(device),
        "torch": torch.__version__,
        "triton": triton_version,
        "cuda": torch.version.cuda,
        "hip": getattr(torch.version, "hip", None),
        "git_sha": git_sha(),
        "date": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
        "python": _platform.python_version(),
        "l2_flush": FLUSH,
    }


@dataclass
class BenchRecord:
    """One benchmark file: environment header plus one row per (case, provider)."""

    op: str
    env: dict[str, Any]
    rows: list[dict[str, Any]] = field(default_factory=list)

    def add(self, **row: Any) -> None:
        self.rows.append(row)

    @classmethod
    def read(cls, path: str | os.PathLike) -> BenchRecord:
        data = json.loads(Path(path).read_text())
        return cls(op=data["op"], env=data["env"], rows=list(data["rows"]))

    def write(self, path: str | os.PathLike) -> Path:
        p = Path(path)
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_text(json.dumps(asdict(self), indent=2) + "\n")
        return p


@dataclass
class BenchCase:
    """One benchmark shape of one op.

    bytes: the minimal bytes a perfect fused kernel moves (inputs read once, output written once).
    providers: name -> zero-argument callable; ``"sgl_diffusion"`` is ours, others are
        baselines (``"eager"``, ``"torch.compile"``, other libraries when installed).
    check: optional zero-argument callable that raises if ours is wrong at this shape.
    """

    name: str
    shape: str
    dtype: str
    bytes: int
    providers: dict[str, Callable[[], Any]]
    check: Callable[[], None] | None = None
    extra: dict[str, Any] = field(default_factory=dict)


def run_cases(op: str, cases: Any, device: torch.device, *, progress: Callable[[str], None] = print,
              rep: int = 100, rounds: int = 1, host_calls: int = 200,
              on_case: Callable[[BenchRecord], Any] | None = None,
              record: BenchRecord | None = None) -> BenchRecord:
    """Time every provider of every case plus a same-run copy of the same bytes; one record.
    ``rounds``: the providers take turns, each timed for ``ceil(rep / rounds)`` calls per round, and
    a row's median and percentiles are over all its calls (clock drift and the order of providers
    fall on each of them alike). ``on_case(record)`` runs after each case (the CLI writes the record
    so far: a run cut short keeps its finished cases); ``record``: a record to add the rows to (a
    run resumed)."""
    if rounds < 1:
        raise ValueError(f"rounds must be at least 1, not {rounds}")
    rec = record if record is not None else BenchRecord(op=op, env=environment(device))
    for case in cases:
        progress(f"[{op}] {case.name} {case.shape} {case.dtype}: checking")
        status = "not checked"
        if case.check is not None:
            case.check()
            status = "passed"
        copy_t, copy_gbps = copy_bandwidth(case.bytes, device, rep=rep)
        progress(f"[{op}] {case.name}: copy {copy_t.median_ms * 1e3:.1f} us = {copy_gbps:.0f} GB/s")
        samples, errors = _timed_in_turn(op, case, device, rep, rounds, progress)
        for prov, fn in case.providers.items():
            if prov in errors:  # a baseline that fails (e.g. compile error) is reported, not fatal
                rec.add(case=case.name, shape=case.shape, dtype=case.dtype, provider=prov, error=errors[prov])
                continue
            t = _stats(samples[prov])
            # the calls run on the GPU after the host loop: a long kernel gets fewer (~50 ms of GPU work)
            calls = max(3, min(host_calls, int(50.0 / max(t.median_ms, 1e-3))))
            host = host_us_per_call(fn, device, calls=calls) if device.type == "cuda" else None
            gbps = t.gbps(case.bytes)
            rec.add(
                case=case.name, shape=case.shape, dtype=case.dtype, provider=prov, bytes=case.bytes,
                median_us=t.median_ms * 1e3, p20_us=t.p20_ms * 1e3, p80_us=t.p80_ms * 1e3,
                gbps=gbps, copy_gbps=copy_gbps, copy_us=copy_t.median_ms * 1e3,
                frac_of_copy=gbps / copy_gbps, host_us_per_call=host, check=status, rounds=rounds, **case.extra,
            )
            progress(f"[{op}] {case.name}: {prov:>14} {t.median_ms * 1e3:9.1f} us  {gbps:7.0f} GB/s  "
                     f"{100 * gbps / copy_gbps:5.1f}% of copy" + (f"  host {host:.1f} us/call" if host else ""))
        # ratios against baselines, for the summary
        ours = next((r for r in rec.rows if r.get("case") == case.name and r.get("provider") == "sgl_diffusion"
                     and "median_us" in r), None)
        if ours:
            for r in rec.rows:
                if r.get("case") == case.name and "median_us" in r:
                    r["speedup_of_ours"] = r["median_us"] / ours["median_us"]
        if on_case is not None:
            on_case(rec)
    return rec


def _timed_in_turn(op: str, case: BenchCase, device: torch.device, rep: int, rounds: int,
                   progress: Callable[[str], None]) -> tuple[dict[str, list[float]], dict[str, str]]:
    """Each provider's call times (ms, sorted) over ``rounds`` turns, and the providers that failed."""
    per_round = -(-rep // rounds)
    samples: dict[str, list[float]] = {prov: [] for prov in case.providers}
    errors: dict[str, str] = {}
    for turn in range(rounds):
        for prov, fn in case.providers.items():
            if prov in errors:
                continue
            if turn == 0:
                progress(f"[{op}] {case.name}: timing {prov}" + (f" ({rounds} rounds)" if rounds > 1 else ""))
            try:
                samples[prov] += gpu_samples(fn, device, rep=per_round)
            except Exception as exc:
                errors[prov] = f"{type(exc).__name__}: {exc}"
                progress(f"[{op}] {case.name}: {prov} failed: {errors[prov]}")
    return {prov: sorted(t) for prov, t in samples.items()}, errors


def config_label(cfg: Any) -> str:
    """How :func:`sweep` names a configuration: a dict of build choices as ``k=v,k=v`` (the empty
    dict: ``default``, the rule's own choice), a string as itself (a named reference such as
    ``torch.compile``), anything else by its ``repr``."""
    if isinstance(cfg, dict):
        return ",".join(f"{k}={v}" for k, v in cfg.items()) or "default"
    return cfg if isinstance(cfg, str) else repr(cfg)


def sweep(case: str, configs: Sequence[Any], run_for: Callable[[Any], Callable[[], Any]], nbytes: int,
          device: torch.device, *, check: Callable[[Any], str | None] | None = None, rep: int = 30,
          rounds: int = 1, progress: Callable[[str], None] = print) -> list[dict[str, Any]]:
    """Time one kernel under several launch configurations at one shape (a GPU tuning aid).

    ``configs[0]`` is the current default. ``run_for(cfg)`` returns a zero-argument launch;
    ``check(result)`` may return a note (a mismatch) that goes into the row. One same-run copy
    of ``nbytes`` is the reference. A configuration that fails to compile or run is reported
    and skipped. ``rounds``: the configurations take turns, ``ceil(rep / rounds)`` calls each per
    round (as :func:`run_cases`). Rows: ``case``, ``default``, the configuration's fields (a
    dataclass) or its :func:`config_label` (``config``), ``median_us``, ``frac_of_copy``, ``note``.
    """
    _, copy_gbps = copy_bandwidth(nbytes, device)
    runs: dict[int, tuple[Callable[[], Any], str | None]] = {}
    for i, cfg in enumerate(configs):
        try:
            run = run_for(cfg)
            runs[i] = (run, check(run()) if check is not None else None)
        except Exception as exc:  # a configuration the compiler rejects, or a launch that fails
            progress(f"{case} {config_label(cfg)}: failed {type(exc).__name__}: {str(exc)[:200]}")
    timed = BenchCase(name=case, shape="", dtype="", bytes=nbytes, providers={str(i): r for i, (r, _) in runs.items()})
    samples, errors = _timed_in_turn("sweep", timed, device, rep, rounds, lambda line: None)
    rows: list[dict[str, Any]] = []
    for i, (_run, note) in runs.items():
        cfg = configs[i]
        if str(i) in errors:
            progress(f"{case} {config_label(cfg)}: failed {errors[str(i)][:200]}")
            continue
        t = _stats(samples[str(i)])
        frac = t.gbps(nbytes) / copy_gbps
        fields = asdict(cfg) if is_dataclass(cfg) else {"config": config_label(cfg)}
        rows.append({"case": case, "default": i == 0, **fields, "median_us": t.median_ms * 1e3,
                     "frac_of_copy": frac, "note": note})
        progress(f"{case} {'default ' if i == 0 else ''}{config_label(cfg)}: {t.median_ms * 1e3:.1f} us "
                 f"{100 * frac:.1f}% of copy" + (f" ({note})" if note else ""))
    return rows


def sweep_summary(rows: list[dict[str, Any]]) -> list[str]:
    """One line per case of :func:`sweep` rows: the default's and the best configuration's % of copy."""
    lines = []
    for case in dict.fromkeys(r["case"] for r in rows):
        mine = [r for r in rows if r["case"] == case]
        best = max(mine, key=lambda r: r["frac_of_copy"])
        dflt = next((r for r in mine if r["default"]), None)
        cfg = {k: v for k, v in best.items() if k not in ("case", "default", "median_us", "frac_of_copy", "note")}
        default = "-" if dflt is None else f"{100 * dflt['frac_of_copy']:.1f}%"
        lines.append(f"{case}: default {default}, best {100 * best['frac_of_copy']:.1f}% at {cfg}")
    return lines


def load_cases(opdef: Any) -> Callable[..., Any]:
    """The benchmark-case function an op declares (``OpDef.bench``): ``(device, dtype, names) ->
    iterable of BenchCase``.

    ``"benchmarks/<file>.py:<function>"`` names a file of the distribution's source tree
    (``packages/<dist>/benchmarks/``; benchmarks do not ship in the wheels), found from the
    op's package; ``"module:function"`` an importable function. Raises ``FileNotFoundError``
    naming the path when the source tree is not there (an installed wheel)."""
    import importlib
    import importlib.util

    from .registry import resolve_target

    target = opdef.bench
    if target is None:
        raise ValueError(f"op {opdef.op} declares no benchmark")
    path, _, func = target.partition(":")
    if not path.endswith(".py"):
        return resolve_target(target)
    package = opdef.public.partition(":")[0].rpartition(".")[0]
    pkg_file = importlib.import_module(package).__file__
    file = Path(pkg_file).resolve().parents[2] / path
    if not file.exists():
        raise FileNotFoundError(
            f"the benchmark cases of {opdef.op} live in the source repository ({file.parent.parent.name}/{path}), "
            "not in the installed wheel: run `sgl-diffusion bench` from a checkout (packages installed editable)")
    name = f"_sgl_diffusion_bench_{file.parent.parent.name.replace('-', '_')}_{file.stem}"
    module = sys.modules.get(name)
    if module is None:
        spec = importlib.util.spec_from_file_location(name, file)
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return getattr(module, func)
