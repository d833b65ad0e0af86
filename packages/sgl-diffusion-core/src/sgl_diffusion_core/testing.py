"""Test helpers for every package: one tolerance table, one exact and one close comparison.

Both comparisons raise ``AssertionError`` with the number of mismatches and the worst
coordinates (index, actual, expected, error), so a failing kernel test says where it broke.
"""

from __future__ import annotations

import torch

from .registry import TOLERANCES, dtype_name


def tolerance(dtype: torch.dtype) -> tuple[float, float]:
    return TOLERANCES[dtype_name(dtype)]


def _where(shape: torch.Size, flat_index: int) -> tuple[int, ...]:
    idx = []
    for size in reversed(shape):
        idx.append(flat_index % size)
        flat_index //= size
    return tuple(reversed(idx))


def _report(
    kind: str, actual: torch.Tensor, expected: torch.Tensor, bad: torch.Tensor, err: torch.Tensor, k: int
) -> str:
    n_bad = int(bad.sum())
    flat_err = torch.where(bad, err, torch.zeros_like(err)).flatten()
    worst = torch.topk(flat_err, min(k, n_bad)).indices.tolist()
    lines = [f"{kind}: {n_bad} of {actual.numel()} elements differ (shape {tuple(actual.shape)}, {actual.dtype})"]
    a = actual.flatten()
    e = expected.flatten()
    for i in worst:
        lines.append(
            f"  at {_where(actual.shape, i)}: actual {a[i].item()!r}, expected {e[i].item()!r}, "
            f"error {flat_err[i].item():.3g}"
        )
    return "\n".join(lines)


def _check_meta(actual: torch.Tensor, expected: torch.Tensor) -> None:
    if actual.shape != expected.shape:
        raise AssertionError(f"shape mismatch: actual {tuple(actual.shape)}, expected {tuple(expected.shape)}")
    if actual.dtype != expected.dtype:
        raise AssertionError(f"dtype mismatch: actual {actual.dtype}, expected {expected.dtype}")


def assert_exact(actual: torch.Tensor, expected: torch.Tensor, *, worst: int = 5) -> None:
    """``torch.equal`` (NaNs in the same places count as equal), or a report of the worst coordinates."""
    _check_meta(actual, expected)
    if torch.equal(actual, expected):
        return
    a = actual.detach().cpu().double()
    e = expected.detach().cpu().double()
    both_nan = a.isnan() & e.isnan()
    bad = (a != e) & ~both_nan
    if not bool(bad.any()):
        return
    err = (a - e).abs().nan_to_num(float("inf"))
    raise AssertionError(_report("not bit-exact", a, e, bad, err, worst))


def assert_close(
    actual: torch.Tensor,
    expected: torch.Tensor,
    *,
    atol: float | None = None,
    rtol: float | None = None,
    worst: int = 5,
) -> None:
    """``|actual - expected| <= atol + rtol * |expected|`` elementwise (tolerance from TOLERANCES by dtype).

    NaN or inf where the expected value is finite always fails.
    """
    _check_meta(actual, expected)
    d_atol, d_rtol = tolerance(expected.dtype)
    atol = d_atol if atol is None else atol
    rtol = d_rtol if rtol is None else rtol
    a = actual.detach().cpu().double()
    e = expected.detach().cpu().double()
    err = (a - e).abs()
    same_nonfinite = (~e.isfinite()) & ((a == e) | (a.isnan() & e.isnan()))
    bad = ~((err <= atol + rtol * e.abs()) | same_nonfinite)
    if bool(bad.any()):
        err = err.nan_to_num(float("inf"))
        raise AssertionError(_report(f"not close (atol={atol:g}, rtol={rtol:g})", a, e, bad, err, worst))


def assert_fp8_close(codes: torch.Tensor, scale: torch.Tensor, ref_codes: torch.Tensor, ref_scale: torch.Tensor, *,
                     tolerance: tuple[float, float], fp8_tolerance: tuple[float, float], worst: int = 5) -> None:
    """The contract of an FP8 result (codes and their scales) against its reference, when the values it
    quantizes may differ from the reference's within ``tolerance`` ``(atol, rtol)`` (a close kernel):
    scales within ``rtol``; dequantized values ``codes * scale`` within ``atol + fp8_atol * ref_scale +
    (rtol + fp8_rtol) * |ref|``, i.e. that tolerance plus one FP8 ulp (``fp8_tolerance``: the format's
    subnormal step, in codes, and its relative spacing)."""
    _check_meta(codes, ref_codes)
    _check_meta(scale, ref_scale)
    atol, rtol = tolerance
    fatol, frtol = fp8_tolerance
    assert_close(scale, ref_scale, atol=0.0, rtol=rtol, worst=worst)
    a = (codes.detach().cpu().double() * scale.detach().cpu().double())
    e = (ref_codes.detach().cpu().double() * ref_scale.detach().cpu().double())
    err = (a - e).abs()
    bound = atol + fatol * ref_scale.detach().cpu().double() + (rtol + frtol) * e.abs()
    same_nonfinite = (~e.isfinite()) & ((a == e) | (a.isnan() & e.isnan()))
    bad = ~((err <= bound) | same_nonfinite)
    if bool(bad.any()):
        raise AssertionError(_report(f"FP8 result not close (value atol={atol:g}, rtol={rtol:g}; one FP8 ulp)", a, e,
                                     bad, err.nan_to_num(float("inf")), worst))


def default_test_device() -> torch.device:
    """The device a package's tests run on: the GPU when there is one, else the CPU."""
    return torch.device("cuda") if torch.cuda.is_available() else torch.device("cpu")


def runnable_backends(op_id: str, device: torch.device) -> list[str]:
    """Backends of an op that can run on this lane, derived from the registry's capabilities.

    On CPU, a Triton backend counts only under ``TRITON_INTERPRET=1`` (the cpu lane sets it).
    """
    from .platform import module_available, tensor_platform, triton_interpret
    from .registry import REGISTRY

    plat = tensor_platform(device)
    out = []
    for spec in REGISTRY.specs(op_id):
        caps = spec.capabilities
        if any(not module_available(m) for m in caps.requires):
            continue
        if plat in caps.platforms or (plat == "cpu" and caps.interpretable and triton_interpret()):
            out.append(spec.backend)
    return out


def log_uniform(*shape: int, dtype: torch.dtype = torch.float32, device: torch.device | str = "cpu",
                scale: float = 1.0, generator: torch.Generator | None = None) -> torch.Tensor:
    """Random values with log-uniform magnitudes over e^-4 .. e^4 and random signs.

    Exercises the rounding of products and sums at many exponents, which ``randn`` alone,
    concentrated near 1, does poorly; for bit-exactness tests.
    """
    mag = torch.exp(torch.empty(*shape).uniform_(-4, 4, generator=generator)) * scale
    sign = torch.where(torch.rand(*shape, generator=generator) < 0.5, -1.0, 1.0)
    return (mag * sign).to(dtype).to(device)


def backend_prepare(op: object, backend: str):
    """The ``prepare(geom, *tensors, **config)`` of one backend of an op (its id or public function):
    how tests reach a launch below the public function (a launch configuration of their own)."""
    from .registry import REGISTRY, op_id_of

    op_id = op_id_of(op)[0]
    for spec in REGISTRY.specs(op_id):
        if spec.backend == backend:
            return spec.load()
    raise KeyError(f"{op_id} has no backend {backend!r}")


def backend_module(op: object, backend: str):
    """The module of one backend of an op (its id or public function): its launch rule and
    configuration class, for tests and benchmarks that pin a launch of their own."""
    import sys

    prepare = backend_prepare(op, backend)
    return sys.modules[prepare.__module__]


def op_definition(op: object):
    """The :class:`~sgl_diffusion_core.Op` of an op (its id or public function): its caches (``plan``,
    ``can_use``'s verdicts) for tests that check what they hold."""
    from .op import ops_defined
    from .registry import REGISTRY, op_id_of

    op_id = op_id_of(op)[0]
    REGISTRY.op(op_id)  # imports the module that defines it
    for definition in ops_defined():
        if definition.id == op_id:
            return definition
    raise KeyError(f"{op_id} has no Op definition loaded")


def geometry(op: object, *args, **kwargs):
    """The ``geom`` an op's ``describe`` derives from these arguments (``op``: id or public function);
    raises ``UnsupportedInputError`` when the arguments have problems."""
    from .errors import UnsupportedInputError
    from .registry import describe

    desc = describe(op, *args, **kwargs)
    if desc.problems:
        raise UnsupportedInputError("; ".join(desc.problems))
    return desc.info["geom"]


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank_entry(target, rank: int, world: int, port: int, collective_timeout: float, results, args,
                backend: str) -> None:
    import datetime
    import traceback

    import torch.distributed as dist

    try:
        kw = {}
        if backend == "nccl":  # one GPU per rank
            torch.cuda.set_device(rank)
            kw["device_id"] = torch.device("cuda", rank)
        dist.init_process_group(backend, init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world,
                                timeout=datetime.timedelta(seconds=collective_timeout), **kw)
        results.put((rank, True, target(rank, world, *args)))
    except BaseException:  # reported to the parent, which fails the test with it
        results.put((rank, False, traceback.format_exc()))
    finally:
        if dist.is_initialized():
            dist.destroy_process_group()


def run_ranks(target, world: int, *args, timeout: float = 120.0, collective_timeout: float = 30.0,
              backend: str = "gloo") -> list:
    """``target(rank, world, *args)`` in ``world`` spawned processes joined by a ``torch.distributed``
    process group (``backend``: ``"gloo"`` on the CPU, or ``"nccl"`` with GPU ``rank`` set as each
    rank's device); returns each rank's result, in rank order.

    ``target`` must be a module-level function (the children import it) returning something
    picklable. A collective that waits longer than ``collective_timeout`` seconds raises in its
    rank (gloo's timeout), so a hang becomes an error; a rank still running after ``timeout``
    seconds is killed. Any error, timeout or missing result raises ``AssertionError`` naming the
    ranks and their tracebacks.
    """
    import queue
    import time

    import torch.multiprocessing as mp

    ctx = mp.get_context("spawn")
    results = ctx.Queue()
    port = _free_port()
    procs = [ctx.Process(target=_rank_entry, args=(target, r, world, port, collective_timeout, results, args,
                                                   backend)) for r in range(world)]
    for p in procs:
        p.start()
    got: dict[int, tuple[bool, object]] = {}
    deadline = time.monotonic() + timeout
    while len(got) < world and time.monotonic() < deadline:
        try:
            rank, ok, value = results.get(timeout=max(0.1, min(1.0, deadline - time.monotonic())))
            got[rank] = (ok, value)
        except queue.Empty:
            if all(not p.is_alive() for p in procs) and results.empty():
                break
    for p in procs:
        p.join(timeout=max(0.0, deadline - time.monotonic()) + 5)
        if p.is_alive():
            p.kill()
            p.join()
    errors = [f"rank {r}: {'no result (killed after the timeout, or died)' if r not in got else got[r][1]}"
              for r in range(world) if r not in got or not got[r][0]]
    if errors:
        raise AssertionError(f"run_ranks({getattr(target, '__name__', target)}, world={world}):\n" + "\n".join(errors))
    return [got[r][1] for r in range(world)]
