"""The KernelSpec registry and the one seam where backend dispatch happens.

An *op* (``"norm.ln_modulate"``) is registered once with an :class:`OpDef`: its public
distribution and a ``describe`` function that turns call arguments into an
:class:`InputDesc` (device, dtypes, layouts, and problems no backend could serve).
Each *backend* of an op is a :class:`KernelSpec` whose capabilities are plain data;
:func:`select_impl` walks the specs by priority and returns the first that can serve,
or raises :class:`UnsupportedInputError` with every backend's reasons.
"""

from __future__ import annotations

import difflib
import importlib
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import torch

from .errors import UnknownOpError, UnsupportedInputError
from .platform import module_available, triton_interpret

DTYPE_NAMES = {
    torch.bfloat16: "bfloat16",
    torch.float16: "float16",
    torch.float32: "float32",
    torch.float64: "float64",
}
FLOAT_DTYPES = ("bfloat16", "float16", "float32")

# (atol, rtol) per storage dtype for `close` contracts: fp32 math, one final rounding.
# bf16 has 8 significant bits (relative step 2^-8 = 0.0039); two differently ordered fp32
# reductions may land on either side of a rounding boundary, so up to 2 ulp of the value
# (rtol 2^-7) plus an absolute floor for results that cancel to ~0.
TOLERANCES: dict[str, tuple[float, float]] = {
    "bfloat16": (1e-2, 2**-7),
    "float16": (1e-3, 2**-10),
    "float32": (1e-5, 1e-5),
}


def dtype_name(dtype: torch.dtype) -> str:
    return DTYPE_NAMES.get(dtype, str(dtype).removeprefix("torch."))


@dataclass(frozen=True)
class Contract:
    """Numeric contract of one (op, backend).

    ``exact``: ``torch.equal`` to the documented eager chain on the same device and dtype.
    ``close``: fp32 internal math, one final rounding; ``tolerances`` holds
    ``(dtype, atol, rtol)`` per dtype and is enforced by the tests.
    """

    kind: Literal["exact", "close"]
    tolerances: tuple[tuple[str, float, float], ...] = ()

    @classmethod
    def exact(cls) -> Contract:
        return cls("exact")

    @classmethod
    def close(cls, tolerances: dict[str, tuple[float, float]] | None = None) -> Contract:
        table = dict(TOLERANCES)
        table.update(tolerances or {})
        return cls("close", tuple((k, float(a), float(r)) for k, (a, r) in sorted(table.items())))

    def tolerance(self, dtype: torch.dtype | str) -> tuple[float, float]:
        """``(atol, rtol)`` for one dtype; ``(0, 0)`` for an exact contract."""
        if self.kind == "exact":
            return (0.0, 0.0)
        name = dtype if isinstance(dtype, str) else dtype_name(dtype)
        for k, a, r in self.tolerances:
            if k == name:
                return (a, r)
        raise KeyError(f"contract declares no tolerance for dtype {name!r}")

    def __str__(self) -> str:
        if self.kind == "exact":
            return "exact"
        tols = ", ".join(f"{k}: atol={a:g} rtol={r:g}" for k, a, r in self.tolerances)
        return f"close ({tols})"


@dataclass(frozen=True)
class Capabilities:
    """What a backend can serve, as data (the docs' selection matrix is generated from it).

    platforms: tensor platforms it runs on (``cuda``, ``hip``, ``cpu``, ``mps``, ``xpu``).
    min_arch: ``(platform, arch)`` pairs: minimum sm (e.g. ``("cuda", 80)``) or the exact
        list of supported gfx names for ROCm (``("hip", "gfx942")``, one pair per name).
    dtypes: storage dtypes of the main input.
    max_last_dim: the largest last (reduced/hidden) dimension; None for no limit.
    last_dim_multiple: the last dimension must be a multiple of this (vector width of a
        kernel without a masked tail); None for any.
    layouts: layout tags the backend serves (op-defined, e.g. ``"per-frame"``); empty = all.
    interpretable: a Triton backend that also runs on CPU tensors under ``TRITON_INTERPRET=1``
        (never auto-selected there: the interpreter is a testing tool; ask with ``backend=``).
    requires: importable modules it needs (``"triton"``), checked without importing them.
    """

    platforms: tuple[str, ...]
    dtypes: tuple[str, ...] = FLOAT_DTYPES
    min_arch: tuple[tuple[str, int | str], ...] = ()
    max_last_dim: int | None = None
    last_dim_multiple: int | None = None
    layouts: tuple[str, ...] = ()
    interpretable: bool = False
    requires: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelSpec:
    """One backend of one op."""

    op: str
    backend: str
    target: str  # "package.module:function"
    capabilities: Capabilities
    contract: Contract
    priority: int = 0  # higher is tried first
    notes: str = ""
    # "module:function" returning the kernel variants to compile ahead of time (Triton
    # backends): a list of sgl_diffusion_core.aot.AotVariant. Used by the compile lanes.
    aot: str | None = None
    # Where this backend was *executed* on real hardware by our test lanes (e.g. "sm_90",
    # "cpu"); any target of the compile lanes not listed here was only compiled. The docs'
    # selection matrix reports both, so nobody mistakes a compile for a run.
    executed_on: tuple[str, ...] = ()
    # The compile targets of a backend built by a compile lane other than Triton's (the FlyDSL
    # lane's gfx names); empty for Triton backends, whose ``aot`` variants the Triton compile
    # lanes build for every target of tools/aot_compile.py.
    compiled_for: tuple[str, ...] = ()

    def load(self) -> Callable[..., Any]:
        """Import and return the target (imports the backend module on first use)."""
        return resolve_target(self.target)

    def reasons(self, desc: InputDesc, *, explicit: bool = False, distribution: str | None = None) -> list[str]:
        """Why this backend cannot serve ``desc`` (empty list: it can).

        ``distribution`` (the op's) lets a missing module name the extra that installs it.
        """
        caps = self.capabilities
        out: list[str] = []
        plat = desc.platform
        if plat is not None and plat not in caps.platforms:
            if plat == "cpu" and caps.interpretable and triton_interpret():
                if not explicit:
                    out.append("runs on CPU only in the Triton interpreter; ask for it with backend=")
                if not module_available("numpy"):  # the interpreter imports it; triton does not declare it
                    how = f"pip install '{distribution}[triton]'" if distribution else "pip install numpy"
                    out.append(f"the Triton interpreter (TRITON_INTERPRET=1) needs numpy, which is not installed "
                               f"({how})")
            elif plat == "cpu" and caps.interpretable:
                out.append(
                    f"tensors on cpu; this backend runs on {'/'.join(caps.platforms)} "
                    "(or on CPU under TRITON_INTERPRET=1)"
                )
            else:
                out.append(f"tensors on {plat}; this backend runs on {'/'.join(caps.platforms)}")
        for mod in caps.requires:
            if not module_available(mod):
                how = f"pip install '{distribution}[{mod}]'" if distribution else f"pip install {mod}"
                out.append(f"needs the Python module {mod!r}, which is not installed ({how})")
        if plat is not None and desc.arch is not None and plat in caps.platforms:
            mins = [a for p, a in caps.min_arch if p == plat]
            if mins:
                if isinstance(mins[0], int):
                    if isinstance(desc.arch, int) and desc.arch < mins[0]:
                        out.append(f"device arch sm_{desc.arch} is below the minimum sm_{mins[0]}")
                elif desc.arch not in mins:
                    out.append(f"device arch {desc.arch} is not one of {', '.join(map(str, mins))}")
        for dt in desc.dtypes:
            if dt not in caps.dtypes:
                out.append(f"dtype {dt} is not supported (supported: {', '.join(caps.dtypes)})")
        if caps.max_last_dim is not None and desc.last_dim is not None:
            if desc.last_dim > caps.max_last_dim:
                out.append(f"last dim {desc.last_dim} exceeds this backend's limit {caps.max_last_dim}")
        if caps.last_dim_multiple and desc.last_dim is not None and desc.last_dim % caps.last_dim_multiple:
            out.append(f"last dim {desc.last_dim} is not a multiple of {caps.last_dim_multiple}")
        if caps.layouts:
            for lay in desc.layouts:
                if lay not in caps.layouts:
                    out.append(f"layout {lay!r} is not supported (supported: {', '.join(caps.layouts)})")
        return out


@dataclass
class InputDesc:
    """What backend selection needs to know about one call's inputs.

    problems: reasons that rule out *every* backend (shape mismatch, mixed devices, ...).
    """

    platform: str | None
    arch: int | str | None = None
    dtypes: tuple[str, ...] = ()
    last_dim: int | None = None
    layouts: tuple[str, ...] = ()
    problems: list[str] = field(default_factory=list)
    info: dict[str, Any] = field(default_factory=dict)  # op-specific facts (geometry)


@dataclass(frozen=True)
class OpDef:
    """An op: its id, the distribution that ships it, and its ``describe`` target."""

    op: str
    distribution: str
    describe: str  # "module:function" (*args, **kwargs) -> InputDesc
    public: str  # "module:function" of the user-facing entry point
    summary: str = ""
    default_exact: bool | None = None
    # "module:function" (device, dtype) -> iterable of sgl_diffusion_core.bench.BenchCase
    bench: str | None = None


@dataclass(frozen=True)
class Verdict:
    backend: str
    ok: bool
    reasons: tuple[str, ...]
    contract: str
    priority: int


@dataclass(frozen=True)
class Explanation:
    """Each backend's verdict for one call, in priority order, and the one auto-selection picks."""

    op: str
    verdicts: tuple[Verdict, ...]
    problems: tuple[str, ...]
    chosen: str | None
    notes: tuple[str, ...] = ()  # an op's chooser: what it measured for these inputs (see ``op.Chooser``)

    def __str__(self) -> str:
        lines = [f"{self.op}: " + (f"would use {self.chosen!r}" if self.chosen else "no backend can serve")]
        for p in self.problems:
            lines.append(f"  input problem: {p}")
        for v in self.verdicts:
            state = "ok" if v.ok else "no"
            why = "" if v.ok else ": " + "; ".join(v.reasons)
            lines.append(f"  [{state}] {v.backend} (priority {v.priority}, {v.contract}){why}")
        lines += [f"  {n}" for n in self.notes]
        return "\n".join(lines)


_TARGET_CACHE: dict[str, Any] = {}

# public function -> (its Op, the describe options it fixes); filled by ``Op.entry``
ENTRIES: dict[Any, tuple[Any, tuple[tuple[str, Any], ...]]] = {}
# op id -> its ``op.Chooser`` (measured selection for ``backend=None``); filled by ``Op``
CHOOSERS: dict[str, Any] = {}


def op_id_of(op: Any) -> tuple[str, tuple[tuple[str, Any], ...]]:
    """The op id, and the describe options it fixes, of an op given as its id, its short name
    (see :meth:`Registry.resolve`), its public function or its ``Op`` definition."""
    if isinstance(op, str):
        return REGISTRY.resolve(op), ()
    found = ENTRIES.get(op)
    if found is not None:
        return found[0].id, found[1]
    op_id = getattr(op, "id", None)
    if isinstance(op_id, str) and op_id in REGISTRY._ops:
        return op_id, ()
    name = f"{getattr(op, '__module__', '?')}:{getattr(op, '__name__', '?')}"
    for opdef in REGISTRY._ops.values():  # a public function declared by ``OpDef.public``
        if opdef.public == name:
            return opdef.op, ()
    raise TypeError(f"{op!r} is not an sgl-diffusion op; pass a public op function or an op id such as "
                    "'norm.ln_modulate'")


def resolve_target(target: str) -> Any:
    """Import ``"pkg.module:attr"`` and return the attribute (cached)."""
    obj = _TARGET_CACHE.get(target)
    if obj is None:
        mod_name, _, attr = target.partition(":")
        if not attr:
            raise ValueError(f"target {target!r} is not of the form 'module:function'")
        obj = getattr(importlib.import_module(mod_name), attr)
        _TARGET_CACHE[target] = obj
    return obj


class Registry:
    """All ops and their backends. Thread-safe registration; reads are lock-free."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ops: dict[str, OpDef] = {}
        self._specs: dict[str, dict[str, KernelSpec]] = {}
        self._declared: dict[str, str] = {}  # op id -> module that defines it (imported on first use)
        self._scanned = False  # every installed domain package imported (for short names)
        self._import_errors: dict[str, str] = {}  # domain package -> why it did not import
        self.generation = 0  # counts registrations: caches of verdicts made before one are stale

    def declare(self, op_id: str, module: str) -> None:
        """Name the module whose import defines ``op_id`` (an ``Op`` in ``<op>.py``): a domain
        package declares its ops this way at import, and the module is imported on first use."""
        with self._lock:
            self._declared.setdefault(op_id, module)

    def register_op(self, opdef: OpDef) -> OpDef:
        with self._lock:
            old = self._ops.get(opdef.op)
            if old is not None and old != opdef:
                raise ValueError(f"conflicting registration of op {opdef.op!r}:\n  {old}\n  {opdef}")
            self._ops[opdef.op] = opdef
            self._specs.setdefault(opdef.op, {})
            self.generation += 1
        return opdef

    def register(self, spec: KernelSpec) -> KernelSpec:
        with self._lock:
            if spec.op not in self._ops:
                raise ValueError(f"register op {spec.op!r} (register_op) before its backend {spec.backend!r}")
            old = self._specs[spec.op].get(spec.backend)
            if old is not None and old != spec:
                raise ValueError(
                    f"conflicting registration of backend {spec.backend!r} for op {spec.op!r}:\n"
                    f"  {old}\n  {spec}"
                )
            self._specs[spec.op][spec.backend] = spec
            self.generation += 1
        return spec

    def ops(self) -> list[str]:
        return sorted(set(self._ops) | set(self._declared))

    def op(self, op_id: str) -> OpDef:
        """The op's definition. An op of a domain package that is installed but not imported
        yet (``"norm.x"`` lives in ``sgl_diffusion_norm``) is registered by importing it."""
        opdef = self._ops.get(op_id)
        if opdef is None and op_id in self._declared:
            importlib.import_module(self._declared[op_id])
            opdef = self._ops.get(op_id)
        if opdef is None:
            domain, dot, _ = op_id.partition(".")
            module = f"sgl_diffusion_{domain}"
            if dot and domain.isidentifier() and module_available(module):
                importlib.import_module(module)  # registers or declares the domain's ops (no backend)
                if op_id in self._declared:
                    importlib.import_module(self._declared[op_id])
                opdef = self._ops.get(op_id)
            if opdef is None:
                raise self._unknown(op_id)
        return opdef

    def resolve(self, name: str, ops: Sequence[str] | None = None) -> str:
        """The op id ``name`` stands for: an op id (``"norm.ln_modulate"``) or the short name
        (``"ln_modulate"``) of exactly one op.

        ``ops``: the op ids to match against; default every op of the installed packages (a
        short name imports every installed ``sgl_diffusion_<domain>`` package once, which
        imports no backend). Raises :class:`UnknownOpError` listing the close matches, or the
        ops an ambiguous short name could mean.
        """
        if ops is None:
            if name in self._ops or name in self._declared:
                return name
            if "." in name:
                self.op(name)  # imports the domain; raises UnknownOpError when it has no such op
                return name
            self._import_installed()
            ops = self.ops()
        if name in ops:
            return name
        matches = [op for op in ops if op.rpartition(".")[2] == name]
        if len(matches) == 1:
            return matches[0]
        if matches:
            raise UnknownOpError(f"op name {name!r} is ambiguous: {', '.join(matches)}; give the full id")
        raise self._unknown(name, list(ops))

    def _import_installed(self) -> None:
        """Import every installed domain package (``sgl_diffusion_<domain>``) once: each one
        registers or declares its ops on import."""
        if self._scanned:
            return
        import pkgutil

        for info in pkgutil.iter_modules():
            if info.ispkg and info.name.startswith("sgl_diffusion_") and info.name != "sgl_diffusion_core":
                try:
                    importlib.import_module(info.name)
                except Exception as exc:  # a broken domain: its ops stay unknown, the error says why
                    self._import_errors[info.name] = f"{type(exc).__name__}: {exc}"
        self._scanned = True

    def _unknown(self, name: str, ops: list[str] | None = None) -> UnknownOpError:
        """The error for an op name nothing registers: the close matches, else every op."""
        if ops is None:
            self._import_installed()
            ops = self.ops()
        head = f"unknown op {name!r}"
        domain, dot, _ = name.partition(".")
        if dot and domain.isidentifier() and not module_available(f"sgl_diffusion_{domain}"):
            head += f": no installed package provides ops named {domain}.* (no module sgl_diffusion_{domain})"
        close = _close_matches(name, ops)
        lines = [head, f"close matches: {', '.join(close)}" if close else f"registered ops: {', '.join(ops) or 'none'}"]
        lines += [f"{module} did not import: {why}" for module, why in self._import_errors.items()]
        lines.append("an op is named by its id ('norm.ln_modulate') or, when no other op shares it, its short name "
                     "('ln_modulate')")
        return UnknownOpError("\n".join(lines))

    def specs(self, op_id: str) -> list[KernelSpec]:
        """Backends of an op, highest priority first."""
        self.op(op_id)
        return sorted(self._specs[op_id].values(), key=lambda s: (-s.priority, s.backend))

    def all_specs(self) -> list[KernelSpec]:
        return [s for op in self.ops() for s in self.specs(op)]


def _close_matches(name: str, ops: Sequence[str], n: int = 5) -> list[str]:
    """The op ids close to ``name``, compared as ids and by their short names."""
    by_short: dict[str, list[str]] = {}
    for op in ops:
        by_short.setdefault(op.rpartition(".")[2], []).append(op)
    found = difflib.get_close_matches(name, list(ops), n=n)
    for short in difflib.get_close_matches(name.rpartition(".")[2], list(by_short), n=n):
        found += by_short[short]
    return list(dict.fromkeys(found))[:n]


REGISTRY = Registry()
register_op = REGISTRY.register_op
register = REGISTRY.register


def _honours(spec: KernelSpec, exact: bool | None, opdef: OpDef, desc: InputDesc,
             backend: str | None = None) -> bool:
    # exact=None with an explicit backend: that backend under its own contract (the op's
    # default_exact steers automatic selection only; a description may override it for its
    # call with info["default_exact"], e.g. an FP8 result, which is a quantization)
    default = desc.info.get("default_exact", opdef.default_exact)
    want = (default if backend is None else False) if exact is None else exact
    return not want or spec.contract.kind == "exact"


def select_impl(
    op_id: str, desc: InputDesc, *, backend: str | None = None, exact: bool | None = None
) -> KernelSpec:
    """The single dispatch seam: the spec that will serve ``desc``.

    ``backend=None`` picks the highest-priority backend that can serve (and honours
    ``exact``); an explicit backend that cannot serve raises, there is no silent fallback.
    """
    opdef = REGISTRY.op(op_id)
    specs = REGISTRY.specs(op_id)
    if desc.problems:
        raise UnsupportedInputError(
            f"{op_id}: unsupported input:\n" + "\n".join(f"  - {p}" for p in desc.problems),
            {s.backend: list(desc.problems) for s in specs},
        )
    if backend is not None:
        chosen = [s for s in specs if s.backend == backend]
        if not chosen:
            raise UnsupportedInputError(
                f"{op_id}: unknown backend {backend!r}; registered: {', '.join(s.backend for s in specs)}",
                {},
            )
        spec = chosen[0]
        reasons = spec.reasons(desc, explicit=True, distribution=opdef.distribution)
        if not _honours(spec, exact, opdef, desc, backend):
            reasons.append(f"contract is {spec.contract.kind}, but exact=True was requested")
        if reasons:
            raise UnsupportedInputError(
                f"{op_id}: backend {backend!r} cannot serve these inputs:\n"
                + "\n".join(f"  - {r}" for r in reasons),
                {backend: reasons},
            )
        return spec
    all_reasons: dict[str, list[str]] = {}
    for spec in specs:
        reasons = spec.reasons(desc, distribution=opdef.distribution)
        if not _honours(spec, exact, opdef, desc):
            reasons.append(f"contract is {spec.contract.kind}, but an exact result was requested")
        if not reasons:
            return spec
        all_reasons[spec.backend] = reasons
    lines = [f"  {b}: " + "; ".join(r) for b, r in all_reasons.items()]
    raise UnsupportedInputError(f"{op_id}: no backend can serve these inputs:\n" + "\n".join(lines), all_reasons)


def describe(op: Any, *args: Any, **kwargs: Any) -> InputDesc:
    """The op's description of these arguments (``op``: its id, short name or public function)."""
    op_id, fixed = op_id_of(op)
    opdef = REGISTRY.op(op_id)
    return resolve_target(opdef.describe)(*args, **{**kwargs, **dict(fixed)})


def explain(op: Any, *args: Any, **kwargs: Any) -> Explanation:
    """Each backend's verdict on these arguments, and which one ``backend=None`` would pick.

    ``op``: the public function (``sgl_diffusion.ln_modulate``), the op id
    (``"norm.ln_modulate"``) or its short name (``"ln_modulate"``, when no other op has it).
    Takes the op's own arguments (``backend=`` and ``exact=`` included, which narrow the
    choice exactly as the op would).
    """
    op_id, fixed = op_id_of(op)
    kwargs.update(fixed)
    backend = kwargs.pop("backend", None)
    exact = kwargs.pop("exact", None)
    opdef = REGISTRY.op(op_id)
    desc = describe(op_id, *args, **kwargs)
    verdicts = []
    chosen = None
    for spec in REGISTRY.specs(op_id):
        reasons = list(desc.problems) + spec.reasons(
            desc, explicit=backend == spec.backend, distribution=opdef.distribution
        )
        if not _honours(spec, exact, opdef, desc, backend):
            reasons.append(f"contract is {spec.contract.kind}, but an exact result was requested")
        if backend is not None and spec.backend != backend:
            reasons.append(f"backend={backend!r} was requested")
        ok = not reasons
        if ok and chosen is None:
            chosen = spec.backend
        verdicts.append(Verdict(spec.backend, ok, tuple(reasons), str(spec.contract), spec.priority))
    out = Explanation(op_id, tuple(verdicts), tuple(desc.problems), chosen)
    chooser = CHOOSERS.get(op_id)
    if chooser is not None and backend is None and chosen is not None:
        out = chooser.explain(op_id, desc, exact, out)
    return out


def eligible(op_id: str, desc: InputDesc, *, exact: bool | None = None) -> list[KernelSpec]:
    """Every backend ``select_impl`` would accept for ``desc`` with ``backend=None``, highest
    priority first (what a measured selection may choose among)."""
    opdef = REGISTRY.op(op_id)
    if desc.problems:
        return []
    return [s for s in REGISTRY.specs(op_id)
            if not s.reasons(desc, distribution=opdef.distribution) and _honours(s, exact, opdef, desc)]
