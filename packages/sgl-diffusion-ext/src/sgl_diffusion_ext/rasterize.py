"""``rasterize``: deterministic triangle rasterization of clip-space meshes (face ids, perspective-correct
barycentrics, depth), the first step of rendering and baking in image-to-3D pipelines.

Backends: ``rasterize_triton`` (CUDA, ROCm) and ``rasterize_torch`` (the reference).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op

from . import _mesh as M
from . import _specs as S


@dataclass(frozen=True)
class Geometry:
    """Sizes of one call: B samples, N vertices, F faces, an H x W image; the options that shape the result."""

    B: int
    N: int
    F: int
    H: int
    W: int
    flip_y: bool
    nvdiffrast_layout: bool
    batched: bool
    has_prior: bool
    prior_batched: bool


def describe_rasterize_tensors(pos, tri, depth_prior=None, *, resolution=None, flip_y=False,
                               nvdiffrast_layout=False) -> InputDesc:
    """Validate ``rasterize``'s tensors and options and describe them for backend selection."""
    problems: list[str] = []
    desc = M.desc_for(pos, problems)
    ok = M.check_tensor(pos, "pos", (torch.float32,), (2, 3), problems, last=4)
    ok &= M.check_tensor(tri, "tri", (torch.int32,), (2,), problems, last=3)
    hw = M.parse_resolution(resolution, problems)
    if depth_prior is not None:
        ok &= M.check_tensor(depth_prior, "depth_prior", (torch.float32,), (2, 3), problems)
    M.same_device({"pos": pos, "tri": tri, "depth_prior": depth_prior}, problems)
    if not ok or hw is None or problems:
        return desc
    H, W = hw
    B = pos.shape[0] if pos.dim() == 3 else 1
    N, F = pos.shape[-2], tri.shape[0]
    if depth_prior is not None:
        want = [(H, W), (B, H, W)]
        if tuple(depth_prior.shape) not in want:
            problems.append(f"depth_prior must have shape [H, W] or [B, H, W] = {list(want[1])}, "
                            f"got {list(depth_prior.shape)}")
    if F > S.MAX_FACES or N > S.MAX_FACES:
        problems.append(f"at most {S.MAX_FACES} faces and vertices, got F={F}, N={N}")
    why = M.index_problem(tri, N, "tri", "N, vertices of pos")
    if why:
        problems.append(why)
    if problems:
        return desc
    desc.info = {"geom": Geometry(B, N, F, H, W, bool(flip_y), bool(nvdiffrast_layout), pos.dim() == 3,
                                  depth_prior is not None, depth_prior is not None and depth_prior.dim() == 3),
                 "empty": B == 0}
    return desc


def describe_rasterize(pos, tri, resolution=None, *, flip_y=False, depth_prior=None, occlusion_eps=1e-6,
                       nvdiffrast_layout=False) -> InputDesc:
    """``describe_rasterize_tensors`` with ``rasterize``'s own argument order."""
    return describe_rasterize_tensors(pos, tri, depth_prior, resolution=resolution, flip_y=flip_y,
                                      nvdiffrast_layout=nvdiffrast_layout)


def _per_call(pos, tri, depth_prior=None, **_):
    """The index range, on every eager call (the plan is keyed on shapes, not values); CPU tensors only."""
    return M.index_problem(tri, pos.shape[-2], "tri", "N, vertices of pos")


def empty_result(geom: Geometry):
    """The runner of a batch of 0 samples."""

    def run(pos, *_):
        if geom.nvdiffrast_layout:
            return torch.zeros(0, geom.H, geom.W, 4, device=pos.device)
        return (torch.zeros(0, geom.H, geom.W, dtype=torch.int32, device=pos.device),
                torch.zeros(0, geom.H, geom.W, 3, device=pos.device), torch.zeros(0, geom.H, geom.W, device=pos.device))

    return run


RASTERIZE = Op(
    "ext.rasterize",
    distribution=S.DISTRIBUTION,
    summary="deterministic triangle rasterization: face id, perspective-correct barycentrics and z/w per pixel",
    describe=describe_rasterize,
    describe_tensors=describe_rasterize_tensors,
    n_tensors=3,
    reference=".rasterize_torch:rasterize",
    backends=[
        Backend("triton", ".rasterize_triton", S.TRITON_CAPS, S.RASTERIZE_CLOSE, priority=10,
                notes=S.RASTERIZE_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("triton_binned", ".rasterize_triton:prepare_binned", S.TRITON_CAPS, S.RASTERIZE_CLOSE, priority=5,
                notes=S.RASTERIZE_BINNED_NOTE, aot="aot_variants_binned", executed_on=S.EXECUTED_TRITON),
        Backend("triton_perface", ".rasterize_triton:prepare_perface", S.TRITON_CAPS, S.RASTERIZE_CLOSE,
                priority=5, notes=S.RASTERIZE_PERFACE_NOTE, aot="aot_variants_perface",
                executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".rasterize_torch", S.TORCH_CAPS, S.RASTERIZE_CLOSE, notes=S.RASTERIZE_TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    per_call=_per_call,
    bench=f"{S.BENCH}:rasterize_cases",
)


@RASTERIZE.entry
def rasterize(
    pos: torch.Tensor,
    tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    flip_y: bool = False,
    depth_prior: torch.Tensor | None = None,
    occlusion_eps: float = 1e-6,
    nvdiffrast_layout: bool = False,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor] | torch.Tensor:
    """Rasterize triangles given in clip space: per pixel, the nearest face covering its centre.

    ``q = adj([v0 v1 v2]) @ (px, py, 1)`` with ``v_i = (x_i, y_i, w_i)``; covered iff every ``q_i``
    has det's sign or is 0; ``bary = q / sum(q)``; ``depth = (q @ z) / det`` (= z/w at the pixel).

    Semantics:
    - Pixel centres: column c, row r sample NDC ``((2c + 1 - W) / W, (2r + 1 - H) / H)``; row 0 is
      the bottom of the image (OpenGL); ``flip_y=True`` puts row 0 at the top.
    - A pixel is covered when all three (perspective-correct) barycentrics lie in [0, 1], tested
      without division on the homogeneous edge values ``q``. No top-left rule: a centre exactly on
      an edge shared by two faces is covered by both (the two faces compute the edge value as exact
      negations of each other, so no centre falls between them). Both windings are rasterized
      (no back-face culling).
    - A face whose three determinants ``r_i . v_i`` are not all nonzero and of one sign (zero area,
      a repeated vertex) never covers. No near-plane clipping: a face with any ``w <= 0`` is skipped
      whole, and depths outside [-1, 1] are kept.
    - Nearest depth wins: each fragment's key is ``(z/w as an order-preserving int32) << 32 | face``
      (fp32's own grid; -0 folded to +0), the smallest key per pixel wins, so equal depths go to the
      lowest face index and the result does not depend on execution order.
    - ``depth_prior`` ``[H, W]`` or ``[B, H, W]`` fp32 drops every fragment with
      ``z/w > depth_prior + occlusion_eps`` (fp32).

    pos: ``[N, 4]`` or ``[B, N, 4]`` fp32 clip-space ``(x, y, z, w)``, any strides.
    tri: ``[F, 3]`` int32 vertex indices shared by the samples; values in ``[0, N)`` (checked on CPU
        tensors; on a GPU a face with an index out of range is skipped, never read out of bounds).
    resolution: ``H`` (square) or ``(H, W)``, each in ``[1, 16384]``.
    backend: ``None`` (``triton`` on CUDA / ROCm, ``torch`` elsewhere), ``"triton"`` (the path the rule of
        ``rasterize_triton.RasterConfig.from_heuristic`` picks: the per-face path, the faster one measured),
        ``"triton_binned"`` / ``"triton_perface"`` (that path forced; the same results) or ``"torch"``.

    Returns ``(face_id [B, H, W] int32 (face index + 1, 0 = background), bary [B, H, W, 3] fp32
    (0 on background), depth [B, H, W] fp32 z/w (+inf on background))``; ``B = 1`` for a 2-D pos.
    With ``nvdiffrast_layout=True`` one ``[B, H, W, 4]`` fp32 tensor ``(u, v, z/w, face index + 1)``
    with ``u = bary0``, ``v = bary1`` (``bary2 = 1 - u - v``) and zeros on background; the id is exact up
    to 2**24 faces.
    """
    options = (("resolution", _hw(resolution)), ("flip_y", flip_y), ("nvdiffrast_layout", nvdiffrast_layout))
    return RASTERIZE.plan((pos, tri, depth_prior), backend, None, options)(pos, tri, depth_prior, float(occlusion_eps))


def _hw(resolution):
    return tuple(resolution) if isinstance(resolution, (list, tuple)) else resolution


can_use_rasterize = RASTERIZE.can_use
rasterize_reference = RASTERIZE.reference

