"""Op plumbing shared by every domain: custom-op registration and the per-signature plan cache.

Host overhead matters at image sizes (see DESIGN.md, performance model): a
``torch.library.custom_op`` call costs ~56 us of host time, a plain Triton launch ~17 us.
So a public op calls its backend directly in eager mode, through a plan cached per call
signature (validation and selection run once per signature), and goes through the
registered custom op only while ``torch.compile`` traces (:func:`is_compiling`).
"""

from __future__ import annotations

import threading
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


class PlanCache:
    """Per-signature cache of ready-to-call plans, bounded (cleared when it grows past ``limit``)."""

    def __init__(self, limit: int = 4096) -> None:
        self._plans: dict[tuple, Callable[..., Any]] = {}
        self._limit = limit

    def get(self, key: tuple) -> Callable[..., Any] | None:
        return self._plans.get(key)

    def put(self, key: tuple, plan: Callable[..., Any]) -> Callable[..., Any]:
        if len(self._plans) >= self._limit:
            self._plans.clear()
        self._plans[key] = plan
        return plan

    def clear(self) -> None:
        self._plans.clear()

    def __len__(self) -> int:
        return len(self._plans)
