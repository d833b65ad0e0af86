from typing import Any

import torch

from sgl_diffusion_core import BitExactFusionGate

from .__about__ import __version__ as __version__

SUPPORTED_MODELS: tuple[str, ...]
PARALLEL_MODELS: tuple[str, ...]

class Site:
    path: str
    kind: str
    module: str
    status: str
    reason: str
    ops: tuple[str, ...]
    backend: str
    contract: str
    compile_ops: tuple[str, ...]
    gate: BitExactFusionGate | None
    @property
    def mounted(self) -> bool: ...
    def gate_state(self) -> str: ...
    def under_compile(self) -> str: ...
    def to_dict(self) -> dict[str, Any]: ...

class MountReport:
    model: str
    quality: str
    verify: bool
    backend: str
    under_compile: str
    sites: list[Site]
    notes: list[str]
    op_calls: dict[str, list[int]]
    quality_metrics: dict[str, float]
    @property
    def mounted(self) -> list[Site]: ...
    @property
    def skipped(self) -> list[Site]: ...
    def by_kind(self) -> dict[str, dict[str, int]]: ...
    def to_dict(self) -> dict[str, Any]: ...

def optimize(
    model: torch.nn.Module,
    *,
    quality: str = "exact",
    verify: bool = True,
    backend: str | None = None,
    under_compile: str = "auto",
    attention: bool | str = True,
    tile: tuple[int, int, int] = (4, 4, 4),
    window: tuple[int, int, int] | None = None,
    dense_steps: int = 0,
    dense_layers: tuple[int, ...] = (),
) -> MountReport: ...
def unmount(model: torch.nn.Module) -> bool: ...
def is_mounted(model: torch.nn.Module) -> bool: ...
def mount_report(model: torch.nn.Module) -> MountReport | None: ...
def mount_plan(
    source: Any, *, quality: str = "exact", under_compile: str = "auto", attention: bool = True
) -> MountReport: ...
def measure_quality(model: torch.nn.Module, *args: Any, **kwargs: Any) -> dict[str, float]: ...
def fp8_linear_paths(model: torch.nn.Module) -> list[str]: ...
def compile_repeated_blocks(model: torch.nn.Module, *args: Any, **kwargs: Any) -> list[str]: ...
def parallelize(
    model: torch.nn.Module, *, ulysses: int = 1, ring: int = 1, mesh: Any = None, backend: str | None = None
) -> MountReport: ...
def unparallelize(model: torch.nn.Module) -> bool: ...
def is_parallelized(model: torch.nn.Module) -> bool: ...
