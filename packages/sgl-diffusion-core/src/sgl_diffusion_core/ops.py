"""Op plumbing shared by every domain: custom-op registration and the per-signature plan cache.

Host overhead matters at image sizes (see docs/design.md, performance model): a
``torch.library.custom_op`` call costs ~56 us of host time, a plain Triton launch ~17 us.
So a public op calls its backend directly in eager mode, through a plan cached per call
signature (validation and selection run once per signature), and goes through the
registered custom op only while ``torch.compile`` traces (:func:`is_compiling`).
"""

from __future__ import annotations

import threading
import weakref
from collections.abc import Callable
from typing import Any

import torch

NAMESPACE = "sgl_diffusion"

_registered: dict[str, Any] = {}
_lock = threading.Lock()

is_compiling = torch.compiler.is_compiling


def register_custom_op(
    name: str,
    impl: Callable[..., Any],
    fake: Callable[..., Any],
    *,
    schema: str,
    mutates_args: tuple[str, ...] = (),
) -> Any:
    """Register ``sgl_diffusion::<name>`` as a ``torch.library`` custom op with its fake impl.

    ``schema`` is the op's argument schema, e.g.
    ``"(Tensor x, Tensor? shift, float eps) -> Tensor"``. The fake implementation must
    allocate outputs of the right shape, dtype and device without touching data, so that
    ``torch.compile(fullgraph=True)`` traces through the op with no graph break.
    Registering the same name twice returns the first registration.
    """
    qualname = f"{NAMESPACE}::{name}"
    with _lock:
        op = _registered.get(qualname)
        if op is None:
            op = torch.library.custom_op(qualname, impl, mutates_args=mutates_args, schema=schema)
            op.register_fake(fake)
            _registered[qualname] = op
    return op


def tensor_sig(t: torch.Tensor | None) -> tuple | None:
    """The part of a tensor that decides validation, selection and launch configuration."""
    if t is None:
        return None
    return (t.shape, t.stride(), t.dtype, t.device)


def index_check_mode(check_index: object, op: str) -> str | None:
    """An op's ``check_index`` argument as ``"cached"`` (``True``), ``"always"`` or ``None``
    (``False``: no check); anything else raises ``ValueError`` naming the op."""
    if check_index is True:
        return "cached"
    if check_index is False:
        return None
    if check_index == "always":
        return "always"
    raise ValueError(f"{op}: check_index must be True, False or 'always'; got {check_index!r}")


class _CheckedIndices:
    """Value ranges of index tensors already checked, per tensor object and version.

    An entry is found only for the same live tensor object (a weak reference, so a freed
    tensor's id reused by a new one never matches) with the same version counter, data
    pointer, shape, strides and dtype. PyTorch bumps the version counter on every in-place
    write through the tensor or any view of it (``copy_``, ``index[0] = 5``, ``add_``, also
    under ``no_grad``), so a modified index is checked again. Inference tensors have no
    version counter: they are checked on every call. Bounded: past ``limit`` entries the
    dead ones go, then all.
    """

    def __init__(self, limit: int = 1024) -> None:
        self._entries: dict[int, tuple[Any, tuple, int, int]] = {}
        self._limit = limit
        self._lock = threading.Lock()

    @staticmethod
    def _sig(index: torch.Tensor) -> tuple:
        return (index._version, index.data_ptr(), index.shape, index.stride(), index.dtype)

    def lookup(self, index: torch.Tensor) -> tuple[int, int] | None:
        entry = self._entries.get(id(index))
        if entry is None or entry[0]() is not index or entry[1] != self._sig(index):
            return None
        return entry[2], entry[3]

    def remember(self, index: torch.Tensor, vmin: int, vmax: int) -> None:
        if index.is_inference():
            return
        key = id(index)
        entries = self._entries

        def forget(ref: Any, key: int = key) -> None:  # the tensor was freed; GC may call this anywhere
            entry = entries.get(key)
            if entry is not None and entry[0] is ref:
                entries.pop(key, None)

        with self._lock:
            if len(entries) >= self._limit:
                # over a copy: a tensor freed meanwhile (another thread, the cyclic GC) runs
                # ``forget`` on ``entries`` itself
                for k in [k for k, e in entries.copy().items() if e[0]() is None]:
                    entries.pop(k, None)
                if len(entries) >= self._limit:
                    entries.clear()
            entries[key] = (weakref.ref(index, forget), self._sig(index), vmin, vmax)

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)


_checked_indices = _CheckedIndices()


def forget_index_checks() -> None:
    """Drop every remembered index check: the next eager call of each op checks its index again.

    Needed only after writing into an index tensor in a way PyTorch's version counter does
    not see (through ``.data``, a NumPy / DLPack view, a custom kernel or a CUDA graph
    replay); ``check_index="always"`` on the call does the same for one op."""
    _checked_indices.clear()


def check_index_range(index: torch.Tensor, lo: int, hi: int, op: str, *, name: str, bound: str, meaning: str,
                      cache: bool = True) -> None:
    """Raise :class:`IndexOutOfRangeError` unless every value of ``index`` lies in ``[lo, hi)``.

    The eager index check of an op that picks rows through an index tensor (its opt-out is
    the op's ``check_index=False``). The first check of a tensor costs one device reduction
    (``torch.aminmax``) and one host sync; with ``cache`` (the default) the value range
    found is remembered for that tensor object and version (see :class:`_CheckedIndices`),
    so calling again with the same, unmodified index (a DiT's index serves every block and
    every step) is a host-side comparison, with no sync. ``cache=False`` (an op's
    ``check_index="always"``) reduces on every call. Skipped for an empty index and while
    the current CUDA stream is capturing a graph (there the op's kernels must guard: never
    an out-of-bounds read, NaN rows). ``name`` is the argument, ``bound`` the symbol of
    ``hi``, ``meaning`` what ``hi`` counts; the message names the range found, e.g.
    ``modulate.indexed_scale_shift: index values must lie in [0, 3) (K = rows of the
    table); got values in [0, 5] (max 5 >= K=3)``.
    """
    if index.numel() == 0 or (index.is_cuda and torch.cuda.is_current_stream_capturing()):
        return
    found = _checked_indices.lookup(index) if cache else None
    if found is None:
        vmin, vmax = torch.stack(torch.aminmax(index)).tolist()
    else:
        vmin, vmax = found
    if vmin < lo or vmax >= hi:
        from .errors import IndexOutOfRangeError

        bad = ([f"min {vmin} < {lo}"] if vmin < lo else []) + ([f"max {vmax} >= {bound}={hi}"] if vmax >= hi else [])
        raise IndexOutOfRangeError(
            f"{op}: {name} values must lie in [{lo}, {hi}) ({bound} = {meaning}); got values in [{vmin}, {vmax}] "
            f"({', '.join(bad)})",
            {},
        )
    if cache and found is None:
        _checked_indices.remember(index, vmin, vmax)


class PlanCache(dict):
    """Per-signature cache of ready-to-call plans, bounded (cleared when it grows past ``limit``).
    A dict, so an eager call's lookup is ``dict.get`` itself."""

    def __init__(self, limit: int = 4096) -> None:
        super().__init__()
        self._limit = limit

    def put(self, key: tuple, plan: Callable[..., Any]) -> Callable[..., Any]:
        if len(self) >= self._limit:
            self.clear()
        self[key] = plan
        return plan


class Dispatcher:
    """Plans of one op, one per call signature: validation and backend selection run once.

    describe(*tensors) -> InputDesc; its ``info`` holds ``"geom"`` (what backends need
        beyond the tensors) and ``"empty"`` (True when the result has no elements).
    bind(fn, geom) -> runner, for a backend function without a ``prepare`` attribute.
    empty(geom) -> runner that returns the empty result; ``None`` when the op's backends
        serve empty inputs themselves (``info["empty"]`` is then not consulted).
    per_call(*tensors, **options) -> problem or None: a check of what the plan key cannot see
        (addresses: q and k the same memory), run on every call, cached plan or not; keep it
        cheap. ``describe`` should report the same problem for ``can_use_*`` / ``explain``.
    A backend function may carry ``fn.prepare(geom, *tensors) -> runner`` to precompute its
    launch (see ``PreparedLaunch``). Runners take the op's tensors then its scalars,
    positionally, in the op's own order.
    """

    def __init__(self, op_id: str, describe: Callable[..., Any], *, bind: Callable[..., Any],
                 empty: Callable[..., Any] | None, limit: int = 4096,
                 per_call: Callable[..., str | None] | None = None) -> None:
        self.op_id = op_id
        self._describe = describe
        self._bind = bind
        self._empty = empty
        self._per_call = per_call
        self._plans = PlanCache(limit)

    def plan(self, tensors: tuple, backend: str | None = None, exact: bool | None = None,
             options: tuple[tuple[str, Any], ...] = ()) -> Callable[..., Any]:
        """The runner for these tensors. ``options``: the op's non-tensor arguments that shape
        the plan (conventions, layouts, ...) as hashable ``(name, value)`` pairs; they are part
        of the cache key and reach ``describe`` as keyword arguments."""
        try:
            key = (*map(tensor_sig, tensors), backend, exact, options)
            hash(key)
        except (AttributeError, TypeError):  # a non-tensor or unhashable argument: describe() names it
            key = None
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            from .registry import select_impl

            desc = self._describe(*tensors, **dict(options))
            spec = select_impl(self.op_id, desc, backend=backend, exact=exact)
            geom = desc.info["geom"]
            if self._empty is not None and desc.info.get("empty"):
                plan = self._empty(geom)
            else:
                fn = spec.load()
                prepare = getattr(fn, "prepare", None)
                plan = prepare(geom, *tensors) if prepare is not None else self._bind(fn, geom)
            if key is not None:
                self._plans.put(key, plan)
        if self._per_call is not None:
            why = self._per_call(*tensors, **dict(options))
            if why:
                from .errors import UnsupportedInputError

                raise UnsupportedInputError(f"{self.op_id}: unsupported input:\n  - {why}")
        return plan

    def validate(self, *tensors: Any, options: tuple[tuple[str, Any], ...] = ()) -> None:
        """For fake implementations: raise on invalid inputs when every shape is static."""
        if not all(isinstance(d, int) for t in tensors if t is not None for d in t.shape):
            return
        self.checked(*tensors, options=options)

    def checked(self, *tensors: Any, options: tuple[tuple[str, Any], ...] = ()) -> Any:
        """The description of these inputs (an ``InputDesc``), or ``UnsupportedInputError`` listing
        its problems. For fake implementations of ops whose ``describe`` handles symbolic shapes
        and whose output shapes come from it (``validate`` skips symbolic shapes)."""
        from .errors import UnsupportedInputError

        desc = self._describe(*tensors, **dict(options))
        if desc.problems:
            raise UnsupportedInputError(
                f"{self.op_id}: unsupported input:\n" + "\n".join(f"  - {p}" for p in desc.problems)
            )
        return desc

    def clear(self) -> None:
        self._plans.clear()


def lazy_exports(package: str, exports: dict[str, str], namespace: dict[str, Any]):
    """PEP 562 ``__getattr__`` and ``__dir__`` for a domain package's lazy facade.

    ``exports`` maps a public name to its entry module (relative to ``package``); the first
    touch imports the module and caches the attribute in the package's ``namespace``.
    Usage in a domain ``__init__.py``: ``__getattr__, __dir__ = lazy_exports(__name__, _EXPORTS, globals())``.
    """
    import importlib

    def __getattr__(name: str) -> Any:
        module = exports.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        obj = getattr(importlib.import_module(f".{module}", package), name)
        namespace[name] = obj
        return obj

    def __dir__() -> list[str]:
        return sorted(set(namespace) | set(exports))

    return __getattr__, __dir__


def lazy_domain(package: str, exports: dict[str, str], ops: dict[str, str], namespace: dict[str, Any]):
    """The lazy facade of a domain package whose tables are generated (``_exports.py``).

    ``exports``: public name -> module (relative to ``package``); ``ops``: op id -> the
    module that defines it. Declares every op to the registry (imported on first use, so
    ``explain("<op id>")`` and the selection matrix find it) and returns the PEP 562
    ``__getattr__`` / ``__dir__`` of :func:`lazy_exports`.

    An op's module is named like its function (``scale_shift.py`` defines ``scale_shift``);
    Python binds a submodule, once imported, as an attribute of its package, which would
    hide the function. The package's module class therefore keeps an exported name for the
    export: importing the submodule does not rebind it.
    """
    import sys
    import types

    from .registry import REGISTRY

    for op_id, module in ops.items():
        REGISTRY.declare(op_id, f"{package}.{module}")
    names = frozenset(exports)

    class DomainModule(types.ModuleType):
        def __setattr__(self, name: str, value: Any) -> None:
            if name in names and isinstance(value, types.ModuleType):
                return  # the submodule <op>.py: the package's attribute stays the op's function
            super().__setattr__(name, value)

    sys.modules[package].__class__ = DomainModule
    return lazy_exports(package, exports, namespace)
