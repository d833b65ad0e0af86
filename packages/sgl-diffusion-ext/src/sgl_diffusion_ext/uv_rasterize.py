"""``uv_rasterize``: the texture atlas rasterized in UV space (face id and barycentrics per texel), the basis
of baking. Backends: ``rasterize_triton:prepare_uv`` (CUDA, ROCm) and ``rasterize_torch:prepare_uv``."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op

from . import _mesh as M
from . import _specs as S


@dataclass(frozen=True)
class Geometry:
    N: int
    F: int
    H: int
    W: int


def describe_uv_rasterize(uv, uv_tri, resolution=None) -> InputDesc:
    """Validate ``uv_rasterize``'s arguments and describe them for backend selection."""
    problems: list[str] = []
    desc = M.desc_for(uv, problems)
    ok = M.check_tensor(uv, "uv", (torch.float32,), (2,), problems, last=2)
    ok &= M.check_tensor(uv_tri, "uv_tri", (torch.int32,), (2,), problems, last=3)
    hw = M.parse_resolution(resolution, problems)
    M.same_device({"uv": uv, "uv_tri": uv_tri}, problems)
    if not ok or hw is None or problems:
        return desc
    why = M.index_problem(uv_tri, uv.shape[0], "uv_tri", "N, vertices of uv")
    if why:
        problems.append(why)
        return desc
    desc.info = {"geom": Geometry(uv.shape[0], uv_tri.shape[0], *hw), "empty": False}
    return desc


def _per_call(uv, uv_tri, **_):
    return M.index_problem(uv_tri, uv.shape[0], "uv_tri", "N, vertices of uv")


UV_RASTERIZE = Op(
    "ext.uv_rasterize",
    distribution=S.DISTRIBUTION,
    summary="rasterize a mesh's UV layout: face id and barycentrics per texel",
    describe=describe_uv_rasterize,
    n_tensors=2,
    reference=".rasterize_torch:uv_rasterize",
    backends=[
        Backend("triton", ".rasterize_triton:prepare_uv", S.TRITON_CAPS, S.RASTERIZE_CLOSE, priority=10,
                notes="rasterize's kernels on (2u - 1, 2v - 1, 0, 1)", aot="aot_variants_uv",
                executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".rasterize_torch:prepare_uv", S.TORCH_CAPS, S.RASTERIZE_CLOSE,
                notes="rasterize's reference on (2u - 1, 2v - 1, 0, 1)", executed_on=S.EXECUTED_TORCH),
    ],
    per_call=_per_call,
    bench=f"{S.BENCH}:uv_rasterize_cases",
)


@UV_RASTERIZE.entry
def uv_rasterize(
    uv: torch.Tensor,
    uv_tri: torch.Tensor,
    resolution: int | tuple[int, int],
    *,
    backend: str | None = None,
) -> tuple[torch.Tensor, torch.Tensor]:
    """Per texel of an ``H x W`` texture, the UV face covering its centre and the barycentrics there.

    ``rasterize((2u - 1, 2v - 1, 0, 1), uv_tri, resolution)`` with every semantic of ``rasterize``:
    texel ``(r, c)`` samples ``u = (c + 0.5) / W``, ``v = (r + 0.5) / H`` (row 0 at v = 0); where UV
    islands overlap, every depth is 0 and the lowest face index wins; UV outside [0, 1] is clipped.

    uv: ``[N, 2]`` fp32; uv_tri: ``[F, 3]`` int32 in ``[0, N)`` (checked on CPU tensors; on a GPU a face
    with an index out of range is skipped); resolution: ``H`` or ``(H, W)``, each in ``[1, 16384]``.

    Returns ``(face_id [H, W] int32 (face index + 1, 0 = no face), bary [H, W, 3] fp32)``.
    """
    res = tuple(resolution) if isinstance(resolution, (list, tuple)) else resolution
    return UV_RASTERIZE.plan((uv, uv_tri), backend, None, (("resolution", res),))(uv, uv_tri)


can_use_uv_rasterize = UV_RASTERIZE.can_use
uv_rasterize_reference = UV_RASTERIZE.reference
