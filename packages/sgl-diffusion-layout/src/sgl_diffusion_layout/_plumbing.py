"""Shared plumbing of the layout ops (no Triton, no backend import).

Layout ops take integer arguments (world size, batch, padding, factors) next to their
tensors, so the plan cache keys on both: tensors by (shape, strides, dtype, device),
everything else by value. ``describe_*`` functions take the public op's own arguments.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import torch

from sgl_diffusion_core import (
    InputDesc,
    PlanCache,
    UnsupportedInputError,
    device_arch,
    dtype_name,
    select_impl,
    tensor_platform,
)

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def _key_part(a: Any) -> Any:
    if isinstance(a, torch.Tensor):
        return (a.shape, a.stride(), a.dtype, a.device)
    if isinstance(a, list):
        return tuple(a)
    return a


class Plans:
    """Per-signature plans of one op: ``describe`` and backend selection run once per signature.

    describe(*args) -> InputDesc with ``info["geom"]``; a backend function carries
    ``fn.prepare(geom, *args) -> runner`` (Triton) or is called as ``fn(*args, geom=geom)``.
    Runners take the op's arguments positionally.
    """

    def __init__(self, op_id: str, describe: Callable[..., InputDesc], limit: int = 4096) -> None:
        self.op_id = op_id
        self._describe = describe
        self._plans = PlanCache(limit)

    def plan(self, args: tuple, backend: str | None = None) -> Callable[..., Any]:
        try:
            key = (*map(_key_part, args), backend)
            hash(key)
        except TypeError:
            key = None
        plan = self._plans.get(key) if key is not None else None
        if plan is None:
            desc = self._describe(*args)
            spec = select_impl(self.op_id, desc, backend=backend)
            geom = desc.info["geom"]
            fn = spec.load()
            prepare = getattr(fn, "prepare", None)
            if prepare is not None:
                plan = prepare(geom, *args)
            else:
                def plan(*a, fn=fn, geom=geom):
                    return fn(*a, geom=geom)
            if key is not None:
                self._plans.put(key, plan)
        return plan

    def __call__(self, args: tuple, backend: str | None = None) -> Any:
        return self.plan(args, backend)(*args)

    def validate(self, *args: Any) -> InputDesc:
        """For fake implementations: raise on invalid inputs; returns the description."""
        desc = self._describe(*args)
        if desc.problems:
            raise UnsupportedInputError(
                f"{self.op_id}: unsupported input:\n" + "\n".join(f"  - {p}" for p in desc.problems)
            )
        return desc

    def can_use(self, args: tuple, backend: str | None = None) -> bool:
        try:
            select_impl(self.op_id, self._describe(*args), backend=backend)
            return True
        except Exception:
            return False

    def clear(self) -> None:
        self._plans.clear()


def backend_from_prepare(prep: Callable[..., Any]) -> Callable[..., Any]:
    """A backend function ``fn(*args, geom)`` from ``prep(geom, *args) -> runner``; ``fn.prepare``
    is ``prep`` itself, which :class:`Plans` calls once per signature (the one-off call path runs
    both steps)."""

    def fn(*args: Any, geom: Any) -> Any:
        return prep(geom, *args)(*args)

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


def fake_outputs(plans: Plans, args: tuple) -> Any:
    """Outputs of the right shape, dtype and device without touching data (``info["shapes"]``:
    one shape, or a tuple of shapes for ops that return several tensors)."""
    desc = plans.validate(*args)
    ref = next(a for a in args if isinstance(a, torch.Tensor))
    shapes = desc.info["shapes"]
    if isinstance(shapes[0], tuple):
        return tuple(ref.new_empty(s) for s in shapes)
    return ref.new_empty(shapes)


def register_layout_op(name: str, plans: Plans, schema: str, n_args: int):
    """``sgl_diffusion::<name>``: ``impl(*args, backend)`` runs the plan, the fake allocates."""
    from sgl_diffusion_core import register_custom_op

    def impl(*a):
        return plans(a[:n_args], a[n_args])

    def fake(*a):
        return fake_outputs(plans, a[:n_args])

    return register_custom_op(name, impl, fake, schema=schema)
