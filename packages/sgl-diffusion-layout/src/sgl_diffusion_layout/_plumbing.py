"""Shared plumbing of the layout ops (no Triton, no backend import).

Layout ops take plain values (world size, batch, padding, factors, flags) after their
tensors. Each op runs on the core :class:`~sgl_diffusion_core.Dispatcher` through a
:class:`LayoutOp`: the tensors key its plans by signature, the values (the Dispatcher's
``options``) by value. ``describe_*`` functions take the public op's own arguments.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable
from typing import Any

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    device_arch,
    dtype_name,
    register_custom_op,
    select_impl,
    tensor_platform,
)

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _bind(fn: Callable[..., Any], geom: Any) -> Callable[..., Any]:
    def run(*args: Any) -> Any:
        return fn(*args, geom=geom)

    return run


class LayoutOp:
    """One layout op ``layout.<name>`` on the core ``Dispatcher``.

    Its arguments are ``n_tensors`` tensors (or None) and then the values named by the rest of
    ``describe``'s parameters, in that order; a list value is keyed (and described) as a tuple.
    A backend function carries ``fn.prepare(geom, *tensors) -> runner`` (Triton) or is called
    as ``fn(*args, geom=geom)``; runners take the op's arguments positionally. The backends
    serve empty inputs themselves (no empty runner).
    """

    def __init__(self, name: str, describe: Callable[..., InputDesc], n_tensors: int) -> None:
        self.op_id = f"layout.{name}"
        self._describe = describe
        self._n = n_tensors
        self._names = tuple(inspect.signature(describe).parameters)[n_tensors:]
        self.dispatch = Dispatcher(self.op_id, describe, bind=_bind, empty=None)

    def _options(self, values: tuple) -> tuple[tuple[str, Any], ...]:
        if list in map(type, values):  # (testing costs less per call than rebuilding every value)
            values = tuple(tuple(v) if isinstance(v, list) else v for v in values)
        return tuple(zip(self._names, values))

    def plan(self, args: tuple, backend: str | None = None) -> Callable[..., Any]:
        n = self._n
        return self.dispatch.plan(args[:n], backend, None, self._options(args[n:]))

    def __call__(self, args: tuple, backend: str | None = None) -> Any:
        n = self._n
        return self.dispatch.plan(args[:n], backend, None, self._options(args[n:]))(*args)

    def checked(self, args: tuple) -> InputDesc:
        """For fake implementations: the description, or ``UnsupportedInputError`` (symbolic shapes too)."""
        n = self._n
        return self.dispatch.checked(*args[:n], options=self._options(args[n:]))

    def can_use(self, args: tuple, backend: str | None = None) -> bool:
        try:
            select_impl(self.op_id, self._describe(*args), backend=backend)
            return True
        except Exception:
            return False


def backend_from_prepare(prep: Callable[..., Any], n_tensors: int) -> Callable[..., Any]:
    """A backend function ``fn(*args, geom)`` from ``prep(geom, *tensors) -> runner`` (the op's first
    ``n_tensors`` arguments); ``fn.prepare`` is ``prep`` itself, which the Dispatcher calls once per
    signature (the one-off call path runs both steps). ``config`` reaches ``prep`` as a keyword
    where given (a launch sweep's choice)."""

    def fn(*args: Any, geom: Any, config: Any = None) -> Any:
        if config is not None:  # a launch choice (only the preps that take one: a sweep passes it)
            return prep(geom, *args[:n_tensors], config=config)(*args)
        return prep(geom, *args[:n_tensors])(*args)

    fn.prepare = prep
    return fn


def new_desc(tensors: dict[str, Any], problems: list[str]) -> tuple[InputDesc, torch.device | None]:
    """Type, device and dtype checks shared by every layout op (``None`` entries are skipped).

    All tensors must be torch tensors on one device with one float dtype (data movement
    never converts). Returns the description (problems appended) and the device.
    """
    device = None
    dtype = None
    first = None
    for name, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            continue
        if device is None:
            device, dtype, first = t.device, t.dtype, name
            if t.dtype not in DTYPES:
                problems.append(f"{name} has dtype {t.dtype}; expected bfloat16, float16 or float32")
            continue
        if t.device != device:
            problems.append(f"{name} is on {t.device}, {first} is on {device}: all tensors must be on one device")
        if t.dtype != dtype:
            problems.append(f"{name} has dtype {t.dtype}, {first} has {dtype}: all tensors must share one dtype")
    if device is None:
        return InputDesc(platform=None, problems=problems), None
    platform = tensor_platform(device)
    arch = device_arch(platform, device.index) if platform in ("cuda", "hip") else None
    desc = InputDesc(platform, arch, (dtype_name(dtype),), None, (), problems)
    return desc, device


def check_int(name: str, value: Any, problems: list[str], *, minimum: int = 0) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(f"{name} must be an int, got {type(value).__name__} {value!r}")
        return False
    if value < minimum:
        problems.append(f"{name} must be >= {minimum}, got {value}")
        return False
    return True


def check_dims(name: str, t: torch.Tensor, ndim: int, what: str, problems: list[str]) -> bool:
    if t.dim() != ndim:
        problems.append(f"{name} must be {what} ({ndim}-D), got shape {list(t.shape)}")
        return False
    return True


def check_last_contiguous(name: str, t: torch.Tensor, problems: list[str]) -> bool:
    if t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got strides {list(t.stride())}")
        return False
    return True


def fake_outputs(op: LayoutOp, args: tuple) -> Any:
    """Outputs of the right shape, dtype and device without touching data (``info["shapes"]``:
    one shape, or a tuple of shapes for ops that return several tensors)."""
    desc = op.checked(args)
    ref = next(a for a in args if isinstance(a, torch.Tensor))
    shapes = desc.info["shapes"]
    if isinstance(shapes[0], tuple):
        return tuple(ref.new_empty(s) for s in shapes)
    return ref.new_empty(shapes)


def register_layout_op(name: str, op: LayoutOp, schema: str):
    """``sgl_diffusion::<name>`` (its schema ends with ``str? backend``): ``impl`` runs the plan,
    the fake allocates."""

    def impl(*a):
        return op(a[:-1], a[-1])

    def fake(*a):
        return fake_outputs(op, a[:-1])

    return register_custom_op(name, impl, fake, schema=schema)
