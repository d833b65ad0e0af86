"""``interpolate``: vertex attributes interpolated per pixel with the barycentrics ``rasterize`` returns.
Backends: ``interpolate_triton`` (CUDA, ROCm) and ``interpolate_torch`` (the reference)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op

from . import _mesh as M
from . import _specs as S


@dataclass(frozen=True)
class Geometry:
    B: int
    N: int
    C: int
    F: int
    H: int
    W: int
    attr_strides: tuple[int, int, int]


def describe_interpolate(attr, face_id, bary, tri) -> InputDesc:
    """Validate ``interpolate``'s arguments and describe them for backend selection."""
    problems: list[str] = []
    desc = M.desc_for(attr, problems)
    ok = M.check_tensor(attr, "attr", (torch.float32,), (2, 3), problems)
    ok &= M.check_tensor(face_id, "face_id", (torch.int32,), (3,), problems)
    ok &= M.check_tensor(bary, "bary", (torch.float32,), (4,), problems, last=3)
    ok &= M.check_tensor(tri, "tri", (torch.int32,), (2,), problems, last=3)
    M.same_device({"attr": attr, "face_id": face_id, "bary": bary, "tri": tri}, problems)
    if not ok or problems:
        return desc
    B, H, W = face_id.shape
    if tuple(bary.shape) != (B, H, W, 3):
        problems.append(f"bary must have shape [B, H, W, 3] = {[B, H, W, 3]}, got {list(bary.shape)}")
    if attr.dim() == 3 and attr.shape[0] != B:
        problems.append(f"a 3-D attr must have face_id's batch {B} first, got {list(attr.shape)}")
    if not face_id.is_contiguous() or not bary.is_contiguous():
        problems.append("face_id and bary must be contiguous (as rasterize returns them)")
    if problems:
        return desc
    N, C = attr.shape[-2], attr.shape[-1]
    why = _per_call(attr, face_id, bary, tri)
    if why:
        problems.append(why)
        return desc
    st = attr.stride()
    strides = (st[0], st[1], st[2]) if attr.dim() == 3 else (0, st[0], st[1])
    desc.info = {"geom": Geometry(B, N, C, tri.shape[0], H, W, strides), "empty": face_id.numel() * C == 0}
    return desc


def _per_call(attr, face_id, bary, tri, **_):
    return (M.index_problem(tri, attr.shape[-2], "tri", "N, vertices of attr")
            or M.index_problem(face_id, tri.shape[0] + 1, "face_id", "F + 1, faces of tri plus one"))


def empty_result(geom: Geometry):
    def run(attr, *_):
        return torch.zeros(geom.B, geom.H, geom.W, geom.C, dtype=torch.float32, device=attr.device)

    return run


INTERPOLATE = Op(
    "ext.interpolate",
    distribution=S.DISTRIBUTION,
    summary="per-pixel attributes from vertex attributes, face ids and barycentrics (background 0)",
    describe=describe_interpolate,
    n_tensors=4,
    reference=".interpolate_torch:interpolate",
    backends=[
        Backend("triton", ".interpolate_triton", S.TRITON_CAPS, S.INTERPOLATE_EXACT, priority=10,
                notes=S.INTERPOLATE_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".interpolate_torch", S.TORCH_CAPS, S.INTERPOLATE_EXACT, notes=S.INTERPOLATE_TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    per_call=_per_call,
    bench=f"{S.BENCH}:interpolate_cases",
)


@INTERPOLATE.entry
def interpolate(
    attr: torch.Tensor,
    face_id: torch.Tensor,
    bary: torch.Tensor,
    tri: torch.Tensor,
    *,
    backend: str | None = None,
) -> torch.Tensor:
    """``out[b, y, x] = (b0 * a0 + b1 * a1) + b2 * a2`` with ``a_i = attr[b, tri[face_id[b, y, x] - 1, i]]``
    in fp32; 0 where ``face_id == 0``.

    attr: ``[N, C]`` (shared by the samples) or ``[B, N, C]`` fp32, any strides.
    face_id: ``[B, H, W]`` int32 and bary ``[B, H, W, 3]`` fp32, contiguous (``rasterize``'s outputs).
    tri: ``[F, 3]`` int32. face_id in ``[0, F]`` and tri in ``[0, N)`` are checked on CPU tensors; on a
    GPU a pixel whose face or vertex index is out of range gets 0, never a read out of bounds.

    Returns ``[B, H, W, C]`` fp32, contiguous.
    """
    return INTERPOLATE.plan((attr, face_id, bary, tri), backend)(attr, face_id, bary, tri)


can_use_interpolate = INTERPOLATE.can_use
interpolate_reference = INTERPOLATE.reference
