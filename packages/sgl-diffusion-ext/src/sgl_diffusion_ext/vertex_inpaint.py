"""``vertex_inpaint``: colour the vertices no view painted from their painted mesh neighbours and write them to
their texels. Backends: ``vertex_inpaint_triton`` (CUDA, ROCm; Jacobi order) and ``vertex_inpaint_torch``
(the reference; Gauss-Seidel order)."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op

from . import _mesh as M
from . import _specs as S

MAX_CHANNELS = 16


@dataclass(frozen=True)
class Geometry:
    H: int
    W: int
    C: int
    V: int
    F: int


def describe_vertex_inpaint(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx) -> InputDesc:
    """Validate ``vertex_inpaint``'s arguments and describe them for backend selection."""
    problems: list[str] = []
    desc = M.desc_for(texture, problems)
    ok = M.check_tensor(texture, "texture", (torch.float32,), (3,), problems)
    ok &= M.check_tensor(mask, "mask", (torch.bool, torch.uint8), (2,), problems)
    ok &= M.check_tensor(vtx_pos, "vtx_pos", (torch.float32,), (2,), problems, last=3)
    ok &= M.check_tensor(vtx_uv, "vtx_uv", (torch.float32,), (2,), problems, last=2)
    ok &= M.check_tensor(pos_idx, "pos_idx", (torch.int32,), (2,), problems, last=3)
    ok &= M.check_tensor(uv_idx, "uv_idx", (torch.int32,), (2,), problems, last=3)
    tensors = {"texture": texture, "mask": mask, "vtx_pos": vtx_pos, "vtx_uv": vtx_uv, "pos_idx": pos_idx,
               "uv_idx": uv_idx}
    M.same_device(tensors, problems)
    if not ok or problems:
        return desc
    H, W, C = texture.shape
    if tuple(mask.shape) != (H, W):
        problems.append(f"mask must have shape [H, W] = {[H, W]}, got {list(mask.shape)}")
    if pos_idx.shape != uv_idx.shape:
        problems.append(f"pos_idx and uv_idx must have one shape, got {list(pos_idx.shape)} and {list(uv_idx.shape)}")
    if M.parse_resolution((H, W), problems, "texture size") is None or not 1 <= C <= MAX_CHANNELS:
        problems.append(f"texture must have 1 to {MAX_CHANNELS} channels (last dim), got {C}")
    if vtx_pos.shape[0] > S.MAX_FACES or pos_idx.shape[0] > S.MAX_FACES:
        problems.append(f"at most {S.MAX_FACES} vertices and faces")
    if problems:
        return desc
    geom = Geometry(H, W, C, vtx_pos.shape[0], pos_idx.shape[0])
    desc.info = {"geom": geom, "empty": pos_idx.shape[0] == 0 or vtx_pos.shape[0] == 0}
    return desc


def _per_call(texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx, **_):
    return (M.index_problem(pos_idx, vtx_pos.shape[0], "pos_idx", "V, vertices of vtx_pos")
            or M.index_problem(uv_idx, vtx_uv.shape[0], "uv_idx", "T, vertices of vtx_uv"))


def empty_result(geom: Geometry):
    def run(texture, mask, *_):
        return texture.clone(), mask != 0

    return run


VERTEX_INPAINT = Op(
    "ext.vertex_inpaint",
    distribution=S.DISTRIBUTION,
    summary="colour unpainted mesh vertices from painted neighbours (inverse squared distance), write to texels",
    describe=describe_vertex_inpaint,
    n_tensors=6,
    reference=".vertex_inpaint_torch:vertex_inpaint",
    backends=[
        Backend("triton", ".vertex_inpaint_triton", S.TRITON_CAPS, S.VERTEX_INPAINT_CLOSE, priority=10,
                notes=S.VERTEX_INPAINT_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".vertex_inpaint_torch", S.TORCH_CAPS, S.VERTEX_INPAINT_CLOSE,
                notes=S.VERTEX_INPAINT_TORCH_NOTE, executed_on=S.EXECUTED_CPU_TORCH),
    ],
    empty=empty_result,
    per_call=_per_call,
    bench=f"{S.BENCH}:vertex_inpaint_cases",
)


@VERTEX_INPAINT.entry
def vertex_inpaint(
    texture: torch.Tensor,
    mask: torch.Tensor,
    vtx_pos: torch.Tensor,
    vtx_uv: torch.Tensor,
    pos_idx: torch.Tensor,
    uv_idx: torch.Tensor,
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Colour the unpainted vertices of a mesh from its painted ones and write them to their texels.

    Each face corner ``(f, k)`` has a position vertex ``pos_idx[f, k]`` and a UV vertex ``uv_idx[f, k]``; its
    texel is row ``floor(v H)``, column ``floor(u W)`` (clamped; row 0 is v = 0, as ``uv_rasterize``). A vertex
    is painted when one of its corners lies on a known texel (``mask`` nonzero), with the colour of its first
    such corner. Then, repeated until nothing changes, every unpainted vertex with painted neighbours (the
    faces' edges) takes ``sum(w c) / sum(w)`` over them, ``w = 1 / max(|p - q|^2, 1e-12)``, and becomes
    painted. Finally every unknown texel under a corner of a painted vertex takes its colour (the first
    corner's when several share a texel) and becomes known; known texels are kept exactly.

    Order: the torch reference sweeps the vertices sequentially in index order (Gauss-Seidel: a vertex
    painted earlier in a sweep already counts for later ones); the Triton backend sweeps all vertices at
    once (Jacobi: only vertices painted before the sweep count, so the fill grows one edge per sweep, in
    breadth-first layers). Both paint the same vertices, with the same fp32 sums in the same (CSR) order, so
    they agree exactly where no two unpainted vertices are adjacent; elsewhere a vertex sees different
    neighbours under the two orders. Measured on a 16 x 16 grid of 512 faces whose painted vertices are one
    4 x 4 corner, colours uniform in [0, 1] (tests/test_vertex_inpaint.py): the orders differ by at most
    0.14 per vertex (mean 0.04). The declared tolerance (1e-5) is for the first case.

    texture: ``[H, W, C]`` fp32, 1 <= C <= 16; mask: bool or uint8 ``[H, W]``, nonzero = known.
    vtx_pos ``[V, 3]`` and vtx_uv ``[T, 2]`` fp32; pos_idx and uv_idx ``[F, 3]`` int32 (values checked on
    CPU tensors; on a GPU a face with an index out of range is dropped).

    Returns ``(texture [H, W, C] fp32, mask [H, W] bool)``, both new.
    """
    return VERTEX_INPAINT.plan((texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx), backend, None, ())(
        texture, mask, vtx_pos, vtx_uv, pos_idx, uv_idx)


can_use_vertex_inpaint = VERTEX_INPAINT.can_use
vertex_inpaint_reference = VERTEX_INPAINT.reference
