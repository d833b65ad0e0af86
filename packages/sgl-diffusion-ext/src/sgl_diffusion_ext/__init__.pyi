# Generated from the op definitions by `python tools/gen_exports.py`; do not edit.

import torch

from .__about__ import __version__ as __version__

def interpolate(
    attr: torch.Tensor,
    face_id: torch.Tensor,
    bary: torch.Tensor,
    tri: torch.Tensor,
    *,
    backend: str | None = None,
) -> torch.Tensor: ...

def rasterize(
    pos: torch.Tensor,
    tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    flip_y: bool = False,
    depth_prior: torch.Tensor | None = None,
    occlusion_eps: float = 1e-06,
    nvdiffrast_layout: bool = False,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | torch.Tensor: ...

def uv_inpaint(
    texture: torch.Tensor,
    mask: torch.Tensor,
    *,
    method: str = 'pushpull',
    iterations: int = 16,
    backend: str | None = None,
) -> torch.Tensor: ...

def uv_rasterize(
    uv: torch.Tensor,
    uv_tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def vertex_inpaint(
    texture: torch.Tensor,
    mask: torch.Tensor,
    vtx_pos: torch.Tensor,
    vtx_uv: torch.Tensor,
    pos_idx: torch.Tensor,
    uv_idx: torch.Tensor,
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_interpolate(
    attr: torch.Tensor,
    face_id: torch.Tensor,
    bary: torch.Tensor,
    tri: torch.Tensor,
    *,
    backend: str | None = None,
) -> bool: ...

def interpolate_reference(
    attr: torch.Tensor,
    face_id: torch.Tensor,
    bary: torch.Tensor,
    tri: torch.Tensor,
) -> torch.Tensor: ...

def can_use_rasterize(
    pos: torch.Tensor,
    tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    flip_y: bool = False,
    depth_prior: torch.Tensor | None = None,
    occlusion_eps: float = 1e-06,
    nvdiffrast_layout: bool = False,
    backend: str | None = None,
) -> bool: ...

def rasterize_reference(
    pos: torch.Tensor,
    tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    flip_y: bool = False,
    depth_prior: torch.Tensor | None = None,
    occlusion_eps: float = 1e-06,
    nvdiffrast_layout: bool = False,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | torch.Tensor: ...

def can_use_uv_inpaint(
    texture: torch.Tensor,
    mask: torch.Tensor,
    *,
    method: str = 'pushpull',
    iterations: int = 16,
    backend: str | None = None,
) -> bool: ...

def uv_inpaint_reference(
    texture: torch.Tensor,
    mask: torch.Tensor,
    *,
    method: str = 'pushpull',
    iterations: int = 16,
) -> torch.Tensor: ...

def can_use_uv_rasterize(
    uv: torch.Tensor,
    uv_tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    backend: str | None = None,
) -> bool: ...

def uv_rasterize_reference(
    uv: torch.Tensor,
    uv_tri: torch.Tensor,
    resolution: int | tuple[int, int],
) -> tuple[torch.Tensor, torch.Tensor]: ...

def can_use_vertex_inpaint(
    texture: torch.Tensor,
    mask: torch.Tensor,
    vtx_pos: torch.Tensor,
    vtx_uv: torch.Tensor,
    pos_idx: torch.Tensor,
    uv_idx: torch.Tensor,
    *,
    backend: str | None = None,
) -> bool: ...

def vertex_inpaint_reference(
    texture: torch.Tensor,
    mask: torch.Tensor,
    vtx_pos: torch.Tensor,
    vtx_uv: torch.Tensor,
    pos_idx: torch.Tensor,
    uv_idx: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor]: ...

__all__ = [
    "__version__",
    "can_use_interpolate",
    "can_use_rasterize",
    "can_use_uv_inpaint",
    "can_use_uv_rasterize",
    "can_use_vertex_inpaint",
    "interpolate",
    "interpolate_reference",
    "rasterize",
    "rasterize_reference",
    "uv_inpaint",
    "uv_inpaint_reference",
    "uv_rasterize",
    "uv_rasterize_reference",
    "vertex_inpaint",
    "vertex_inpaint_reference",
]
