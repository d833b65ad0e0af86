"""One op, one place: the :class:`Op` definition every public op of the family is built on.

An op is declared once, in its ``<op>.py``::

    SCALE_SHIFT = Op(
        "modulate.scale_shift",
        distribution="sgl-diffusion-modulate",
        summary="x * (scale_offset + scale) + shift, bit-exact to the eager chain",
        describe=describe_scale_shift,            # arguments -> InputDesc (geometry, problems)
        n_tensors=3,                              # x, scale, shift: the plan key
        reference="._scale_shift_torch:scale_shift",
        backends=[Backend("triton", "._scale_shift_triton", caps=..., contract=Contract.exact(), priority=10),
                  Backend("torch", ".scale_shift_torch", caps=..., contract=Contract.exact())],
        default_exact=True,
    )

    @SCALE_SHIFT.entry
    def scale_shift(x, scale, shift=None, *, scale_offset=1.0, backend=None):
        if is_compiling():
            return _custom_op(x, scale, shift, float(scale_offset), backend)
        return SCALE_SHIFT.plan((x, scale, shift), backend)(x, scale, shift, scale_offset)

    can_use_scale_shift = SCALE_SHIFT.can_use
    scale_shift_reference = SCALE_SHIFT.reference
    _custom_op = SCALE_SHIFT.custom_op("scale_shift", schema=..., fake=...)

The :class:`Op` owns the op's id, its registry entries (an ``OpDef`` and one ``KernelSpec``
per backend, so ``select_impl``, ``explain`` and the docs' selection matrix see it), the
per-signature plan cache of the eager path, ``can_use`` (``False`` only for
``UnsupportedInputError``: a bug in ``describe`` raises), the reference, the custom-op
registrations and the entry points the export tables are generated from
(``tools/gen_exports.py``). A backend is a module with ``prepare(geom, *tensors) -> runner``;
the module is named in the op's file and imported on the first call that selects it, so a
reader goes from the public function to ``prepare`` and the kernel by name, and importing a
domain imports no backend.

Host time: the eager path is ``plan`` (one tuple of tensor signatures, one dict lookup) and
the runner ``prepare`` built for that signature; validation and selection run once per
signature. The registered custom op is used only while ``torch.compile`` traces. ``can_use``
keeps its verdict per call signature too (:func:`verdict_key`).

Measured selection: an op may pass a ``chooser`` (see :class:`Chooser`), which ``backend=None``
consults instead of the static priority when a plan is built, and ``explain`` when it reports;
the attention domain's picks the fastest correct backend per shape bucket.
"""

from __future__ import annotations

import importlib
import importlib.util
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any, Protocol

import torch

from .errors import UnsupportedInputError
from .ops import PlanCache, is_compiling, register_custom_op
from .platform import triton_interpret
from .registry import (
    CHOOSERS,
    ENTRIES,
    REGISTRY,
    Capabilities,
    Contract,
    Explanation,
    InputDesc,
    KernelSpec,
    OpDef,
    eligible,
    explain,
    select_impl,
)


@dataclass(frozen=True)
class Backend:
    """One backend of an op, as data.

    module: the backend module, relative to the op's package (``"._scale_shift_triton"``) or
        absolute; it defines ``prepare(geom, *tensors) -> runner`` (``runner(*tensors,
        *scalars)``), imported on first selection. ``"module:function"`` names a prepare other
        than ``prepare`` (one backend module of a family serving several ops).
    caps, contract, priority, notes, executed_on: as :class:`KernelSpec`.
    aot: name of the module's function listing the kernel variants the compile lanes build.
    compiled_for: as :class:`KernelSpec` (the targets of a compile lane other than Triton's).
    """

    name: str
    module: str
    caps: Capabilities
    contract: Contract
    priority: int = 0
    notes: str = ""
    aot: str | None = None
    executed_on: tuple[str, ...] = ()
    compiled_for: tuple[str, ...] = ()


class Chooser(Protocol):
    """The hook an :class:`Op` consults for ``backend=None`` (optional; the op's own policy).

    ``choose(op_id, desc, tensors, exact)``: ``(spec, settled)`` or None for the static priority
    (``select_impl``). Called once per plan build with the inputs the plan is built for; the
    plan is cached only when ``settled`` (a choice made without measuring, e.g. while a CUDA
    graph captures, is not frozen into the plan cache). It returns a backend that can serve
    ``desc`` (see :func:`eligible`).
    ``explain(op_id, desc, exact, explanation)``: the :class:`Explanation` ``explain`` returns
    for ``backend=None`` (the chooser's pick as ``chosen``, what it measured as ``notes``).
    """

    def choose(self, op_id: str, desc: InputDesc, tensors: tuple,
               exact: bool | None) -> tuple[KernelSpec, bool] | None: ...

    def explain(self, op_id: str, desc: InputDesc, exact: bool | None, explanation: Explanation) -> Explanation: ...


class RuleChooser:
    """A :class:`Chooser` from a static rule: where ``rule(desc)`` holds and the static priority would
    take the backend ``instead_of``, the eligible backend ``serve`` (or the static priority where that
    one cannot serve); ``explain`` names it with ``note(desc)``. For choices decided by the inputs'
    description alone (sizes, widths), measured beforehand and stated in ``note``."""

    def __init__(self, instead_of: str, serve: str, rule: Callable[[InputDesc], bool],
                 note: Callable[[InputDesc], str]) -> None:
        self.instead_of, self.serve, self.rule, self.note = instead_of, serve, rule, note

    def _pick(self, op_id: str, desc: InputDesc, exact: bool | None) -> KernelSpec | None:
        if not self.rule(desc):
            return None
        specs = eligible(op_id, desc, exact=exact)
        if not specs or specs[0].backend != self.instead_of:
            return None
        return next((s for s in specs if s.backend == self.serve), None)

    def choose(self, op_id: str, desc: InputDesc, tensors: tuple,
               exact: bool | None) -> tuple[KernelSpec, bool] | None:
        spec = self._pick(op_id, desc, exact)
        return None if spec is None else (spec, True)

    def explain(self, op_id: str, desc: InputDesc, exact: bool | None, explanation: Explanation) -> Explanation:
        spec = self._pick(op_id, desc, exact)
        if spec is None or explanation.chosen != self.instead_of:
            return explanation
        return replace(explanation, chosen=spec.backend, notes=(self.note(desc),))


def _schema_arguments(name: str, schema: str) -> tuple[tuple[str, ...], tuple[Any, ...]]:
    """The argument names of a custom-op schema and their defaults (``None`` where it has none)."""
    import torch

    args = torch._C.parse_schema(f"sgl_diffusion::{name}{schema}").arguments
    return tuple(a.name for a in args), tuple(a.default_value if a.has_default_value() else None for a in args)


def _absolute(module: str, package: str) -> str:
    return importlib.util.resolve_name(module, package) if module.startswith(".") else module


# the most elements of a CPU index tensor whose values ``verdict_key`` holds (a batch's kv_lens)
INDEX_VALUES_KEYED = 64


def verdict_key(args: tuple, kwargs: dict) -> tuple | None:
    """What decides ``can_use``'s verdict on one eager call: each tensor's signature (shape, strides,
    dtype, device, 16-byte alignment) and where it lies against the earlier tensors of the same storage
    (ops refuse results that overlap their inputs), every other argument as it is, and whether Triton
    interprets (CPU selection depends on it). An index tensor on the CPU (ops check its values, such
    as ``kv_lens``) adds its values when it has at most ``INDEX_VALUES_KEYED`` elements (a host read, no
    sync), else the key is None (not cached); so are tensors inside a sequence and a tensor without
    storage. An unhashable argument makes the key unhashable (``can_use`` then decides afresh)."""
    parts: list = [triton_interpret()]
    places: list[tuple[int, int]] = []  # (storage base, start address) of each tensor so far
    for name, a in (*enumerate(args), *kwargs.items()):
        if isinstance(a, torch.Tensor):
            if a.is_cpu and not a.is_floating_point():
                if a.numel() > INDEX_VALUES_KEYED:
                    return None
                parts.append(tuple(a.reshape(-1).tolist()))
            try:
                p = a.data_ptr()
            except RuntimeError:  # a tensor without storage (a fake tensor)
                return None
            base = p - a.storage_offset() * a.element_size()
            # the first earlier tensor of the same storage, and how far this one starts from it
            near = next(((i, p - q) for i, (b, q) in enumerate(places) if b == base), None)
            parts.append((name, a.shape, a.stride(), a.dtype, a.device, p & 15, near))
            places.append((base, p))
        elif isinstance(a, (tuple, list)) and any(isinstance(e, torch.Tensor) for e in a):
            return None
        else:
            parts.append((name, a))
    return tuple(parts)


class Op:
    """The definition of one public op (see the module docstring).

    id: ``"<domain>.<name>"``; ``<name>`` is the public function's name.
    describe: ``describe(*tensors, **options) -> InputDesc``; its ``info`` holds ``"geom"``
        (what backends need beyond the tensors) and ``"empty"`` (the result has no elements).
        Called with the public function's arguments (scalars as keywords) by ``can_use`` and
        ``explain``, so it accepts and ignores the scalars.
    n_tensors: how many leading arguments are tensors (the plan key, and what ``prepare`` gets).
    reference: ``"module:function"`` of the eager chain (relative to the op's package).
    empty: ``empty(geom) -> runner`` returning the empty result, or None when the backends
        serve empty inputs themselves.
    per_call: ``per_call(*tensors, **options) -> problem | None``, a check the plan key cannot
        see (two arguments sharing memory), run on every eager call; keep it cheap.
    bench: ``"module:function"`` of the op's benchmark cases (outside the wheels).
    describe_tensors: ``describe_tensors(*tensors, **options) -> InputDesc``, what the plan calls
        when the public function puts a scalar among its tensors (``group_norm_silu(x,
        num_groups, weight, bias)``: the plan's tensors are ``(x, weight, bias)``); default
        ``describe``.
    chooser: a :class:`Chooser` for ``backend=None`` (default: the static priority).
    """

    def __init__(self, id: str, *, distribution: str, summary: str, describe: Callable[..., InputDesc],
                 n_tensors: int, reference: str, backends: Sequence[Backend], default_exact: bool | None = None,
                 empty: Callable[[Any], Callable[..., Any]] | None = None,
                 per_call: Callable[..., str | None] | None = None, bench: str | None = None,
                 limit: int = 4096, describe_tensors: Callable[..., InputDesc] | None = None,
                 chooser: Chooser | None = None) -> None:
        self.id = id
        self.name = id.rpartition(".")[2]
        self.package = describe.__module__.rpartition(".")[0]
        self.module = describe.__module__
        self.describe = describe
        self._describe_tensors = describe_tensors or describe
        self.n_tensors = n_tensors
        self.default_exact = default_exact
        ref_module, _, ref_name = reference.partition(":")
        self._reference_target = f"{_absolute(ref_module, self.package)}:{ref_name}"
        self._empty = empty
        self._per_call = per_call
        self._plans = PlanCache(limit)
        self._verdicts = PlanCache(limit)  # can_use's verdicts per verdict_key
        self._generation = -1  # the registry's generation the plans and verdicts were made at
        self._lock = threading.Lock()
        self.entries: list[Callable[..., Any]] = []
        self.entry_options: dict[str, tuple[tuple[str, Any], ...]] = {}  # entry name -> describe options it fixes
        self.backends = tuple(backends)
        self.chooser = chooser
        if chooser is not None:
            CHOOSERS[id] = chooser
        self.definition = REGISTRY.register_op(OpDef(
            op=id, distribution=distribution, describe=f"{describe.__module__}:{describe.__name__}",
            public=f"{self.module}:{self.name}", summary=summary, default_exact=default_exact, bench=bench,
        ))
        for b in self.backends:
            module, _, prepare = _absolute(b.module, self.package).partition(":")
            REGISTRY.register(KernelSpec(
                op=id, backend=b.name, target=f"{module}:{prepare or 'prepare'}", capabilities=b.caps,
                contract=b.contract, priority=b.priority, notes=b.notes,
                aot=None if b.aot is None else f"{module}:{b.aot}", executed_on=b.executed_on,
                compiled_for=b.compiled_for,
            ))

    def __repr__(self) -> str:
        return f"Op({self.id!r})"

    # -- entry points --------------------------------------------------------------------------

    def entry(self, fn: Callable[..., Any] | None = None, *, options: dict[str, Any] | None = None):
        """Decorator marking a public function of this op (``options``: the describe options the
        function fixes, e.g. ``{"inplace": True}`` for an in-place form); returns it unchanged.
        ``explain`` accepts the function for the op; the export tables list it."""
        fixed = tuple(sorted((options or {}).items()))

        def mark(f: Callable[..., Any]) -> Callable[..., Any]:
            ENTRIES[f] = (self, fixed)
            self.entries.append(f)
            self.entry_options[f.__name__] = fixed
            return f

        return mark(fn) if fn is not None else mark

    # -- the eager path ------------------------------------------------------------------------

    def plan(self, tensors: tuple, backend: str | None = None, exact: bool | None = None,
             options: tuple[tuple[str, Any], ...] = ()) -> Callable[..., Any]:
        """The runner for these tensors (``runner(*tensors, *scalars)``), built once per call
        signature. ``options``: non-tensor arguments that shape the plan, as hashable
        ``(name, value)`` pairs (part of the key; passed to ``describe`` as keywords). A backend
        registered after a plan was built makes every plan stale."""
        if self._generation != REGISTRY.generation:
            self._forget_stale()
        try:
            key = (tuple([None if t is None else (t.shape, t.stride(), t.dtype, t.device) for t in tensors]),
                   backend, exact, options)
            plan = self._plans.get(key)
        except (AttributeError, TypeError):  # a non-tensor or unhashable argument: describe() names it
            key = plan = None
        if plan is None:
            plan, settled = self._build(tensors, backend, exact, options)
            if key is not None and settled:
                self._plans.put(key, plan)
        if self._per_call is not None:
            why = self._per_call(*tensors, **dict(options))
            if why:
                raise UnsupportedInputError(f"{self.id}: unsupported input:\n  - {why}")
        return plan

    def _build(self, tensors: tuple, backend: str | None, exact: bool | None,
               options: tuple[tuple[str, Any], ...]) -> tuple[Callable[..., Any], bool]:
        """``(runner, settled)``: the plan, and whether it may be cached (see :class:`Chooser`)."""
        desc = self._describe_tensors(*tensors, **dict(options))
        spec = select_impl(self.id, desc, backend=backend, exact=exact)
        geom = desc.info["geom"]
        if self._empty is not None and desc.info.get("empty"):
            return self._empty(geom), True
        settled = True
        if backend is None and self.chooser is not None:
            chosen = self.chooser.choose(self.id, desc, tensors, exact)
            if chosen is not None:
                spec, settled = chosen
        return spec.load()(geom, *tensors), settled

    def clear(self) -> None:
        """Forget every cached plan and ``can_use`` verdict."""
        self._plans.clear()
        self._verdicts.clear()

    def _forget_stale(self) -> None:
        """Plans and verdicts made before the registry's last registration are stale: drop them."""
        self.clear()
        self._generation = REGISTRY.generation

    # -- the protocol around it ----------------------------------------------------------------

    def can_use(self, *args: Any, backend: str | None = None, exact: bool | None = None, **kwargs: Any) -> bool:
        """Whether the op can serve these arguments (the public function's own); never allocates.

        ``False`` means every backend (or the one asked for) refused with a reason
        (``UnsupportedInputError``); any other exception is a bug and propagates. Eager calls keep
        the verdict per call signature (:func:`verdict_key`), until a backend registers."""
        key = None if is_compiling() else verdict_key(args, kwargs)
        if key is not None:
            if self._generation != REGISTRY.generation:
                self._forget_stale()
            key = (*key, backend, exact)
            try:
                ok = self._verdicts.get(key)
            except TypeError:  # an unhashable argument
                key = ok = None
            if ok is not None:
                return ok
        try:
            select_impl(self.id, self.describe(*args, **kwargs), backend=backend, exact=exact)
            ok = True
        except UnsupportedInputError:
            ok = False
        if key is not None:
            self._verdicts.put(key, ok)
        return ok

    def verdicts_cached(self) -> int:
        """How many ``can_use`` verdicts are cached (one per call signature asked)."""
        return len(self._verdicts)

    def reference(self, *args: Any, **kwargs: Any) -> Any:
        """The eager chain itself (the ``torch`` backend's definition), with the op's arguments."""
        from .registry import resolve_target

        return resolve_target(self._reference_target)(*args, **kwargs)

    def explain(self, *args: Any, **kwargs: Any) -> Explanation:
        """Each backend's verdict on these arguments (``backend=`` / ``exact=`` narrow it)."""
        return explain(self.id, *args, **kwargs)

    def checked(self, *tensors: Any, options: tuple[tuple[str, Any], ...] = ()) -> InputDesc:
        """The description of these inputs, or ``UnsupportedInputError`` listing its problems."""
        desc = self._describe_tensors(*tensors, **dict(options))
        if desc.problems:
            raise UnsupportedInputError(
                f"{self.id}: unsupported input:\n" + "\n".join(f"  - {p}" for p in desc.problems))
        return desc

    def validate(self, *tensors: Any, options: tuple[tuple[str, Any], ...] = ()) -> None:
        """For fake implementations: raise on invalid inputs when every shape is static."""
        if all(isinstance(d, int) for t in tensors if t is not None for d in t.shape):
            self.checked(*tensors, options=options)

    def custom_op(self, name: str, *, schema: str, fake: Callable[..., Any],
                  options: dict[str, Any] | None = None, mutates_args: tuple[str, ...] = (),
                  keyed: Sequence[str] = (), tensors: Sequence[int | None] | None = None) -> Any:
        """Register ``torch.ops.sgl_diffusion.<name>`` for the compile path of one entry point.

        The schema lists the tensors (``n_tensors`` of them), then the scalars, then
        ``str? backend`` and, for ops with an ``exact`` argument, ``bool? exact``; its
        implementation is this op's plan. A schema returning ``()`` writes in place.
        ``keyed``: the names of the leading scalars that shape the plan (a world size, a
        padding), passed to it as options after the fixed ones (a list as a tuple), as the
        entry point passes them.
        ``tensors``: the positions of the op's tensors among the schema's leading tensor
        arguments when they are not its first ``n_tensors`` (a schema shared with ops that take
        more tensors: ``layer_norm``'s carries ``ln_modulate``'s scale and shift); the others
        must be None. A ``None`` position is an op tensor the schema leaves out, passed to the
        plan as None (the ``out`` of an op's functional form)."""
        fixed = tuple(sorted((options or {}).items()))
        keyed = tuple(keyed)
        n = self.n_tensors
        takes_exact = "bool? exact" in schema
        flat = schema.replace(" ", "")
        # ``bool? exact, str? backend`` (the order of the norm family's schemas) or the reverse
        exact_first = takes_exact and flat.index("bool?exact") < flat.index("str?backend")
        returns = not flat.endswith("->()")

        picks = None if tensors is None else tuple(tensors)
        names, defaults = _schema_arguments(name, schema)

        def impl(*args: Any, **kwargs: Any) -> Any:
            if len(args) < len(names) or kwargs:  # a call that left defaults out, or named them
                args += tuple(kwargs.get(k, d) for k, d in zip(names[len(args):], defaults[len(args):]))
            if picks is None:
                tensors, rest = args[:n], args[n:]
            else:
                width = max(i for i in picks if i is not None) + 1
                if any(args[i] is not None for i in range(width) if i not in picks):
                    raise UnsupportedInputError(f"{self.id}: unsupported input:\n  - {name} takes no tensor at "
                                                f"positions {sorted(set(range(width)) - set(picks))}")
                tensors, rest = tuple(None if i is None else args[i] for i in picks), args[width:]
            if exact_first:
                scalars, exact, backend = rest[:-2], rest[-2], rest[-1]
            elif takes_exact:
                scalars, backend, exact = rest[:-2], rest[-2], rest[-1]
            else:
                scalars, backend, exact = rest[:-1], rest[-1], None
            opts = fixed
            if keyed:
                opts += tuple((k, tuple(v) if isinstance(v, list) else v) for k, v in zip(keyed, scalars))
            out = self.plan(tensors, backend, exact, opts)(*tensors, *scalars)
            return out if returns else None

        return register_custom_op(name, impl, fake, schema=schema, mutates_args=mutates_args)


def ops_defined() -> list[Op]:
    """Every :class:`Op` whose module has been imported."""
    return list(dict.fromkeys(op for op, _ in ENTRIES.values() if isinstance(op, Op)))


__all__ = ["Backend", "Chooser", "Op", "ops_defined", "verdict_key"]
