"""The denoising step of a mounted model's current forward, for attention policies that keep the first
steps dense (``attention="sliding_tile"``, ``"int8"``, ``"fp8"``).

A forward pre-hook on the model reads the call's ``timestep``: a new value is a new step, so a
classifier-free-guidance pair of calls at one timestep is one step.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch


class StepClock:
    """Mixin of a policy dataclass with fields ``step`` (0-based, -1 before the first forward) and
    ``_timestep`` (the last value seen)."""

    step: int
    _timestep: float | None

    def count_step(self, args: tuple, kwargs: dict) -> None:
        """The step of this forward, from its ``timestep`` argument (keyword or second positional)."""
        t = kwargs.get("timestep", args[1] if len(args) > 1 else None)
        value = float(t.flatten()[0]) if isinstance(t, torch.Tensor) and t.numel() else None
        if value is None or value != self._timestep:
            self.step += 1
            self._timestep = value


def check_dense_args(dense_steps: object, dense_layers: object) -> None:
    """``ValueError`` naming a bad ``dense_steps`` (a non-negative int) or ``dense_layers`` (block indices)."""
    if isinstance(dense_steps, bool) or not isinstance(dense_steps, int) or dense_steps < 0:
        raise ValueError(f"dense_steps must be a non-negative int, got {dense_steps!r}")
    if (not isinstance(dense_layers, (tuple, list, set, frozenset))
            or any(isinstance(i, bool) or not isinstance(i, int) or i < 0 for i in dense_layers)):
        raise ValueError(f"dense_layers must be block indices (non-negative ints), got {dense_layers!r}")


def layer_of(path: str) -> int | None:
    """The block index of a module path (``blocks.3.attn1`` -> 3), None outside the numbered blocks."""
    for part in path.split("."):
        if part.isdigit():
            return int(part)
    return None


@dataclass
class HookMount:
    """A policy's forward pre-hook on the model as a mount record (``restore`` removes it, ``apply`` puts it
    back)."""

    model: torch.nn.Module
    policy: Any  # an object with ``pre_hook(module, args, kwargs)``
    handle: Any = None

    def apply(self) -> None:
        self.handle = self.model.register_forward_pre_hook(self.policy.pre_hook, with_kwargs=True)

    def restore(self) -> None:
        if self.handle is not None:
            self.handle.remove()
            self.handle = None
