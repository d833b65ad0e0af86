"""``attention="sliding_tile"``: block-sparse video self-attention over 3-D tiles, dense for the first steps.

Each video self-attention call of a mounted Wan model gathers q, k and v into tile order
(``sgl_diffusion_attention.video_tile_order``: every ``tile``'s tokens consecutive, so a 64-token block
is one 4 x 4 x 4 tile), runs ``block_sparse_attention`` on the map of sliding-tile attention
(``video_block_map(..., tile_order=True)``: each query tile sees the ``window`` of key tiles around it)
and scatters the output back to the model's order. The first ``dense_steps`` denoising steps run dense
attention (the peers found the first steps need it), and so do the blocks ``dense_layers`` names. A
forward pre-hook on the model reads the latent grid (the input's ``(F, H, W)`` over the patch size)
and counts steps by the timestep's value (a new value is a new step; a classifier-free-guidance pair
of calls at one timestep is one step: ``steps``). The map and the permutation are built once per grid
and device; the report's notes give the map's density.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import torch

import sgl_diffusion_attention as _attention

from .steps import StepClock, check_dense_args

MODELS = ("WanTransformer3DModel",)
OP = "attention.block_sparse_attention"


def check_window(value: object, name: str) -> tuple[int, int, int]:
    if (not isinstance(value, (tuple, list)) or len(value) != 3
            or any(isinstance(x, bool) or not isinstance(x, int) or x < 1 for x in value)):
        raise ValueError(f"{name} must be three positive ints (t, h, w), got {value!r}")
    return tuple(value)


@dataclass
class SlidingTile(StepClock):
    """The policy and the per-run state of one mounted model's sliding-tile attention."""

    tile: tuple[int, int, int]
    window: tuple[int, int, int]
    dense_steps: int
    dense_layers: frozenset[int]
    patch: tuple[int, int, int]
    notes: list[str]
    step: int = -1  # the denoising step of the current forward (0-based), -1 before the first
    grid: tuple[int, int, int] | None = None
    sparse_calls: int = 0
    dense_calls: int = 0
    _timestep: float | None = None
    _plans: dict[tuple, tuple[torch.Tensor, torch.Tensor, Any]] = field(default_factory=dict)

    def pre_hook(self, module: torch.nn.Module, args: tuple, kwargs: dict) -> None:
        """The model's forward pre-hook: the latent grid and the step of this call."""
        x = kwargs.get("hidden_states", args[0] if args else None)
        if isinstance(x, torch.Tensor) and x.dim() == 5:
            self.grid = tuple(n // p for n, p in zip(x.shape[2:], self.patch))
        self.count_step(args, kwargs)

    @property
    def dense(self) -> bool:
        return self.step < self.dense_steps or self.grid is None

    def attend(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor | None:
        """Sliding-tile attention of ``[B, S, H, Dh]`` video self-attention, or None where the dense path
        serves this call (a dense step, a sequence that is not the grid's video tokens, inputs the
        kernel cannot serve: the op keeps its ``can_use`` verdict per call signature)."""
        grid = self.grid
        if self.dense or q.shape[1] != grid[0] * grid[1] * grid[2]:
            self.dense_calls += 1
            return None
        order, inverse, block_map = self._plan(grid, q.device)
        qt, kt, vt = q[:, order], k[:, order], v[:, order]
        if not _attention.can_use_block_sparse_attention(qt, kt, vt, block_map):
            self.dense_calls += 1
            return None
        self.sparse_calls += 1
        return _attention.block_sparse_attention(qt, kt, vt, block_map)[:, inverse]

    def _plan(self, grid: tuple[int, int, int], device: torch.device) -> tuple[torch.Tensor, torch.Tensor, Any]:
        key = (grid, device)
        plan = self._plans.get(key)
        if plan is None:
            order = _attention.video_tile_order(grid, tile=self.tile, device=device)
            block_map = _attention.video_block_map(grid, tile=self.tile, window=self.window, tile_order=True,
                                                   block=64, device=device)
            plan = self._plans[key] = (order, torch.argsort(order), block_map)
            self.notes.append(f"sliding_tile: latent grid {grid} in {self.tile} tiles, window {self.window}: "
                              f"{block_map.density():.1%} of the key blocks (dense for the first "
                              f"{self.dense_steps} step(s))")
        return plan


def policy_for(model: torch.nn.Module, tile: object, window: object, dense_steps: object, dense_layers: object,
               notes: list[str]) -> SlidingTile | str:
    """The policy of ``attention="sliding_tile"`` on this model, or why it is not mounted."""
    name = type(model).__name__
    if name not in MODELS:
        return (f"attention='sliding_tile' serves {', '.join(MODELS)} (video self-attention without joint "
                f"text); {name}'s attention is mounted dense")
    if window is None:
        raise ValueError("attention='sliding_tile' needs window=(wt, wh, ww), in tiles per axis")
    check_dense_args(dense_steps, dense_layers)
    patch = getattr(getattr(model, "config", None), "patch_size", None) or (1, 1, 1)
    if dense_layers:
        notes.append(f"sliding_tile: blocks {sorted(dense_layers)} keep dense attention")
    return SlidingTile(check_window(tile, "tile"), check_window(window, "window"), dense_steps,
                       frozenset(dense_layers), tuple(patch), notes)
