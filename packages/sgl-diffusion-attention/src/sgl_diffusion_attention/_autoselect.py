"""Measured backend selection for ``attention`` with ``backend=None`` (the op's ``Chooser``).

Per bucket (device, dtype, head dim, the call's feature tags: layout / kv_lens / varlen / lse /
GQA, and the powers of two at or above ``Sq``, ``Sk`` and ``B * Hq``), the first eager call of
the bucket on a GPU (cuda / hip) runs every backend that can serve it (``eligible``: the
capabilities and tags ``select_impl`` sees) on the real inputs, checks each result against the
reference within the backend's declared tolerance, times the correct ones (CUDA events:
``WARMUP`` runs, then the median of ``REPS``) and keeps the fastest. A backend that raises or
deviates is rejected for the bucket with one :class:`BackendRejectedWarning` and is not chosen
again for it.

The reference is the ``torch`` backend (the definition), computed once per measurement: over
the whole call when it has at most ``FULL_REFERENCE_SCORES`` scores (``B * Hq * Sq * Sk``),
else over the first and last ``REFERENCE_ROWS`` query rows of the first sample (of the first
segment for varlen), and the candidates are compared on those rows. On such a large input the
``torch`` backend itself (fp32 math) is timed only when no other backend is correct.

No timing and no host sync under ``torch.compile`` tracing or CUDA-graph capture: the bucket's
measured choice if any, else the static priority, and the plan is not cached (the first eager
call still measures). On the CPU (and mps / xpu) the static priority stands: no measurement.

Opt-in disk cache: ``SGL_DIFFUSION_ATTENTION_CACHE=/path/file.json`` or
``attention_autotune_cache(path)``; entries keyed by device name, torch and triton versions
and the bucket; written atomically (a temporary file, then ``os.replace``); a file that does
not parse is ignored with a warning (and rewritten on the next measurement).
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
import os
import statistics
import tempfile
import threading
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import torch

from sgl_diffusion_core import BackendRejectedWarning, eligible, is_compiling

ENV = "SGL_DIFFUSION_ATTENTION_CACHE"
REFERENCE_BACKEND = "torch"
REFERENCE_ROWS = 64
FULL_REFERENCE_SCORES = 1 << 24
WARMUP, REPS = 2, 5
FORMAT = 1


@dataclass
class Measurement:
    """One bucket's verdicts: the choice, the correct backends' median times (seconds), the
    rejected ones with their reason, the ones not timed with why."""

    choice: str
    times: dict[str, float] = field(default_factory=dict)
    rejected: dict[str, str] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)


def _pow2(n: int) -> int:
    return 1 << max(0, int(n) - 1).bit_length()


def bucket_of(desc) -> tuple:
    """The bucket of a described call (see the module docstring)."""
    geom, dev = desc.info["geom"], desc.info["device"]
    tags = tuple(t for t in desc.layouts if not t.startswith("head_dim="))
    return (desc.platform, dev.index, str(geom.dtype).removeprefix("torch."), geom.Dh, tags,
            _pow2(geom.Sq), _pow2(geom.Sk), _pow2(geom.B * geom.Hq))


def cuda_timer(name: str, fn: Callable[[], Any]) -> float:
    """Median seconds of ``fn`` on the current CUDA stream (``WARMUP`` runs, ``REPS`` timed)."""
    for _ in range(WARMUP):
        fn()
    events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(REPS)]
    for start, end in events:
        start.record()
        fn()
        end.record()
    torch.cuda.synchronize()
    return statistics.median(s.elapsed_time(e) for s, e in events) / 1e3


def device_name(device: torch.device) -> str:
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    return device.type


def _versions() -> str:
    try:
        from importlib.metadata import version

        triton = version("triton")
    except Exception:  # not installed (or no metadata): part of the key all the same
        triton = "none"
    return f"torch {torch.__version__}|triton {triton}"


def _no_sync(q: torch.Tensor) -> bool:
    """Tracing or CUDA-graph capture: no timing, no host sync."""
    if is_compiling():
        return True
    return q.device.type == "cuda" and torch.cuda.is_current_stream_capturing()


@dataclass
class _Reference:
    o: torch.Tensor
    lse: torch.Tensor | None
    pick_o: Callable[[torch.Tensor], torch.Tensor]
    pick_lse: Callable[[torch.Tensor], torch.Tensor]
    full: bool


def _rows(n: int, r: int, device) -> torch.Tensor:
    if n <= 2 * r:
        return torch.arange(n, device=device)
    return torch.cat([torch.arange(r, device=device), torch.arange(n - r, n, device=device)])


def reference(geom, tensors: tuple, rows: int | None = None, limit: int | None = None) -> _Reference:
    """The torch backend's result on the whole call, or on sliced query rows of a large one
    (``rows``: default ``REFERENCE_ROWS``; ``limit``: default ``FULL_REFERENCE_SCORES``)."""
    from .attention_torch import attention as definition

    rows = REFERENCE_ROWS if rows is None else rows
    limit = FULL_REFERENCE_SCORES if limit is None else limit
    q, k, v, kv_lens, cu_q, cu_k, _ = tensors
    lse = geom.return_lse
    same = (lambda t: t)  # noqa: E731
    if geom.B * geom.Hq * geom.Sq * geom.Sk <= limit:
        res = definition(q, k, v, layout=geom.layout, scale=geom.scale, kv_lens=kv_lens, cu_seqlens_q=cu_q,
                         cu_seqlens_k=cu_k, return_lse=lse)
        o, ls = res if lse else (res, None)
        return _Reference(o, ls, same, same, True)
    if geom.varlen:
        (qs, qe), (ks, ke) = cu_q[:2].tolist(), cu_k[:2].tolist()
        idx = qs + _rows(qe - qs, rows, q.device)
        res = definition(q[idx][None], k[ks:ke][None], v[ks:ke][None], scale=geom.scale, return_lse=lse)
        o, ls = res if lse else (res, None)
        return _Reference(o[0], None if ls is None else ls[0], lambda t: t.index_select(0, idx),
                          lambda t: t.index_select(1, idx), False)
    dim = 1 if geom.layout == "bshd" else 2
    idx = _rows(geom.Sq, rows, q.device)
    res = definition(q[:1].index_select(dim, idx), k[:1], v[:1], layout=geom.layout, scale=geom.scale,
                     kv_lens=None if kv_lens is None else kv_lens[:1], return_lse=lse)
    o, ls = res if lse else (res, None)
    return _Reference(o, ls, lambda t: t[:1].index_select(dim, idx), lambda t: t[:1].index_select(2, idx), False)


def _mismatch(what: str, got: torch.Tensor, want: torch.Tensor, atol: float, rtol: float) -> str | None:
    if tuple(got.shape) != tuple(want.shape):
        return f"{what} has shape {tuple(got.shape)}, the reference {tuple(want.shape)}"
    g, w = got.float(), want.float()
    if torch.isclose(g, w, rtol=rtol, atol=atol, equal_nan=True).all():
        return None
    worst = (g - w).abs().nan_to_num(float("inf")).max().item()
    return f"{what} differs from the reference by up to {worst:.3g} (tolerance atol {atol:g}, rtol {rtol:g})"


def deviation(spec, geom, ref: _Reference, res) -> str | None:
    """Why this backend's result is outside its declared tolerance of the reference (None: within)."""
    o, lse = res if geom.return_lse else (res, None)
    why = _mismatch("output", ref.pick_o(o), ref.o, *spec.contract.tolerance(geom.dtype))
    if why is None and ref.lse is not None:
        why = _mismatch("lse", ref.pick_lse(lse), ref.lse, *spec.contract.tolerance("float32"))
    return why


def _as_entry(m: Measurement) -> dict:
    return dataclasses.asdict(m)


def _from_entry(e: Any) -> Measurement:
    if not (isinstance(e, dict) and isinstance(e.get("choice"), str)):
        raise ValueError(f"not a measurement: {e!r}")
    m = Measurement(e["choice"], dict(e.get("times", {})), dict(e.get("rejected", {})), dict(e.get("skipped", {})))
    if not all(isinstance(t, (int, float)) for t in m.times.values()):
        raise ValueError(f"times must be numbers: {m.times!r}")
    return m


class AutoSelect:
    """The chooser of ``attention`` (one instance, ``AUTOSELECT``; see the module docstring).

    ``platforms``, ``timer(name, fn) -> seconds``, ``candidates(op_id, desc, exact=) -> specs``
    and ``device_name(device)`` are attributes so that tests can stand in a fake device, timer
    and backends on the CPU.
    """

    def __init__(self) -> None:
        self.platforms: tuple[str, ...] = ("cuda", "hip")
        self.timer: Callable[[str, Callable[[], Any]], float] = cuda_timer
        self.candidates: Callable[..., list] = eligible
        self.device_name: Callable[[torch.device], str] = device_name
        self.buckets: dict[tuple, Measurement] = {}
        self._lock = threading.RLock()
        self._path: str | None = None
        self._path_set = False
        self._disk: dict[str, dict] = {}

    def reset(self) -> None:
        """Forget every measurement held in the process (the disk file is left as it is)."""
        with self._lock:
            self.buckets.clear()

    # -- the disk cache ------------------------------------------------------------------------

    def set_path(self, path: str | None) -> None:
        with self._lock:
            self._path, self._path_set = (None if path is None else os.fspath(path)), True
            self._load()

    def _ensure_path(self) -> None:
        if not self._path_set:
            self.set_path(os.environ.get(ENV) or None)

    def _load(self) -> None:
        self._disk = {}
        if self._path is None or not os.path.exists(self._path):
            return
        try:
            with open(self._path, encoding="utf-8") as f:
                data = json.load(f)
            if not isinstance(data, dict) or data.get("format") != FORMAT or not isinstance(data.get("entries"), dict):
                raise ValueError(f"not an attention autotune cache of format {FORMAT}")
            for e in data["entries"].values():
                _from_entry(e)
            self._disk = data["entries"]
        except (OSError, ValueError, TypeError) as exc:
            warnings.warn(f"attention autotune cache {self._path}: ignored ({type(exc).__name__}: {exc}); "
                          "backends are measured again", UserWarning, stacklevel=3)

    def _save(self) -> None:
        path = self._path
        if path is None:
            return
        try:
            folder = os.path.dirname(os.path.abspath(path))
            fd, tmp = tempfile.mkstemp(prefix=".attention-autotune-", suffix=".json", dir=folder)
            try:
                with os.fdopen(fd, "w", encoding="utf-8") as f:
                    json.dump({"format": FORMAT, "entries": self._disk}, f, indent=1, sort_keys=True)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError as exc:
            warnings.warn(f"attention autotune cache {path}: not written ({exc})", UserWarning, stacklevel=3)

    def _disk_key(self, key: tuple, device: torch.device) -> str:
        return f"{self.device_name(device)}|{_versions()}|{json.dumps(key)}"

    def lookup(self, key: tuple, device: torch.device) -> Measurement | None:
        """The bucket's measurement: held in the process, else from the disk cache."""
        m = self.buckets.get(key)
        if m is None:
            with self._lock:
                self._ensure_path()
                e = self._disk.get(self._disk_key(key, device)) if self._disk else None
                if e is not None:
                    m = self.buckets[key] = _from_entry(e)
        return m

    # -- the Chooser protocol ------------------------------------------------------------------

    def choose(self, op_id: str, desc, tensors: tuple, exact: bool | None):
        if desc.platform not in self.platforms or "geom" not in desc.info:
            return None
        specs = self.candidates(op_id, desc, exact=exact)
        if len(specs) < 2:
            return None
        key = bucket_of(desc)
        device = desc.info["device"]
        m = self.lookup(key, device)
        if m is None:
            if _no_sync(tensors[0]):
                return specs[0], False
            with self._lock:
                m = self.buckets.get(key) or self._measure(op_id, key, desc, tensors, specs)
        by_name = {s.backend: s for s in specs}
        spec = by_name.get(m.choice) or next((s for s in specs if s.backend not in m.rejected), specs[0])
        return spec, True

    def _measure(self, op_id: str, key: tuple, desc, tensors: tuple, specs: list) -> Measurement:
        geom = desc.info["geom"]
        device = desc.info["device"]
        ctx = torch.cuda.device(device) if device.type == "cuda" else contextlib.nullcontext()
        with ctx:
            try:
                ref = reference(geom, tensors)
            except Exception as exc:  # e.g. varlen offsets the definition refuses: keep the static choice
                why = f"not measured: the reference raised {type(exc).__name__}: {exc}".splitlines()[0]
                m = self.buckets[key] = Measurement(specs[0].backend, skipped={s.backend: why for s in specs})
                return m
            m = Measurement(choice=specs[0].backend)
            ordered = [s for s in specs if s.backend != REFERENCE_BACKEND]
            ordered += [s for s in specs if s.backend == REFERENCE_BACKEND]
            for spec in ordered:
                if spec.backend == REFERENCE_BACKEND and not ref.full and m.times:
                    m.skipped[spec.backend] = "not timed: the fp32 definition, on a large input another backend serves"
                    continue
                why = self._try(spec, geom, ref, tensors, m)
                if why is not None:
                    m.rejected[spec.backend] = why
                    warnings.warn(f"{op_id}: backend {spec.backend!r} rejected for the bucket {key}: {why}; "
                                  "it is not chosen again for this bucket", BackendRejectedWarning, stacklevel=6)
        if m.times:
            m.choice = min(m.times, key=m.times.__getitem__)
        else:  # nothing correct (not even the definition ran): the static choice, whose error the call raises
            m.choice = next((s.backend for s in specs if s.backend not in m.rejected), specs[0].backend)
        self.buckets[key] = m
        self._ensure_path()
        if self._path is not None:
            self._disk[self._disk_key(key, device)] = _as_entry(m)
            self._save()
        return m

    def _try(self, spec, geom, ref: _Reference, tensors: tuple, m: Measurement) -> str | None:
        """Run, check and time one backend; its rejection reason, or None (its time in ``m``)."""
        try:
            run = spec.load()(geom, *tensors)
            res = run(*tensors)
            if spec.backend != REFERENCE_BACKEND:  # the definition is not held to itself
                why = deviation(spec, geom, ref, res)
                if why is not None:
                    return why
            m.times[spec.backend] = float(self.timer(spec.backend, lambda: run(*tensors)))
        except Exception as exc:  # a backend that raises is rejected for the bucket, not fatal
            return f"raised {type(exc).__name__}: {exc}".splitlines()[0]
        return None

    def explain(self, op_id: str, desc, exact: bool | None, explanation):
        if desc.platform not in self.platforms or "geom" not in desc.info:
            return explanation
        specs = self.candidates(op_id, desc, exact=exact)
        if len(specs) < 2:
            return explanation
        key = bucket_of(desc)
        m = self.lookup(key, desc.info["device"])
        if m is None:
            note = (f"measured selection: bucket {key} not measured yet; its first eager call times "
                    f"{', '.join(s.backend for s in specs)} (until then: the static priority)")
            return dataclasses.replace(explanation, notes=(note,))
        notes = [f"measured selection, bucket {key}:"]
        for s in specs:
            b = s.backend
            if b in m.rejected:
                notes.append(f"  {b}: rejected: {m.rejected[b]}")
            elif b in m.times:
                verdict = "chosen" if b == m.choice else "slower"
                notes.append(f"  {b}: {m.times[b] * 1e3:.4g} ms, {verdict}")
            else:
                notes.append(f"  {b}: {m.skipped.get(b, 'not measured')}")
        chosen = m.choice if m.choice in {s.backend for s in specs} else explanation.chosen
        return dataclasses.replace(explanation, chosen=chosen, notes=tuple(notes))


AUTOSELECT = AutoSelect()


def attention_autotune_cache(path: str | None) -> None:
    """Keep ``attention``'s measured backend choices in this JSON file (``None``: in the process only).

    ``path``: a ``str`` or any path-like. Overrides ``SGL_DIFFUSION_ATTENTION_CACHE``. The file
    is read now (a file that does not parse is ignored with a warning) and rewritten atomically
    after each new measurement; entries are keyed by device name, torch and triton versions and
    the input bucket, so one file can serve several machines and upgrades."""
    AUTOSELECT.set_path(path)
