"""``uv_inpaint``: fill the holes of a UV texture (push-pull pyramid, optionally diffusion), the GPU replacement
for ``cv2.inpaint`` in texture baking. Backends: ``uv_inpaint_triton`` (CUDA, ROCm) and ``uv_inpaint_torch``."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import Backend, InputDesc, Op

from . import _mesh as M
from . import _specs as S

MAX_CHANNELS = 16


@dataclass(frozen=True)
class Geometry:
    B: int
    H: int
    W: int
    C: int
    batched: bool
    mask_batched: bool
    method: str
    iterations: int


def describe_uv_inpaint(texture, mask, *, method="pushpull", iterations=16) -> InputDesc:
    """Validate ``uv_inpaint``'s arguments and describe them for backend selection."""
    problems: list[str] = []
    desc = M.desc_for(texture, problems)
    ok = M.check_tensor(texture, "texture", (torch.float32,), (3, 4), problems)
    ok &= M.check_tensor(mask, "mask", (torch.bool, torch.uint8), (2, 3), problems)
    M.same_device({"texture": texture, "mask": mask}, problems)
    if method not in ("pushpull", "diffuse"):
        problems.append(f"method must be 'pushpull' or 'diffuse', got {method!r}")
    if not isinstance(iterations, int) or isinstance(iterations, bool) or not 0 <= iterations <= 10_000:
        problems.append(f"iterations must be an int in [0, 10000], got {iterations!r}")
    if not ok or problems:
        return desc
    batched = texture.dim() == 4
    B = texture.shape[0] if batched else 1
    H, W, C = texture.shape[-3:]
    if tuple(mask.shape) not in ((H, W), (B, H, W)):
        problems.append(f"mask must have shape [H, W] = {[H, W]} or [B, H, W], got {list(mask.shape)}")
    if M.parse_resolution((H, W), problems, "texture size") is None or not 1 <= C <= MAX_CHANNELS:
        problems.append(f"texture must have 1 to {MAX_CHANNELS} channels (last dim), got {C}")
    if problems:
        return desc
    desc.info = {"geom": Geometry(B, H, W, C, batched, mask.dim() == 3, method, iterations), "empty": B == 0}
    return desc


def empty_result(geom: Geometry):
    def run(texture, *_):
        return texture.new_zeros(texture.shape)

    return run


UV_INPAINT = Op(
    "ext.uv_inpaint",
    distribution=S.DISTRIBUTION,
    summary="fill the unknown texels of a UV texture: push-pull pyramid, optionally diffusion",
    describe=describe_uv_inpaint,
    n_tensors=2,
    reference=".uv_inpaint_torch:uv_inpaint",
    backends=[
        Backend("triton", ".uv_inpaint_triton", S.TRITON_CAPS, S.UV_INPAINT_CLOSE, priority=10,
                notes=S.UV_INPAINT_TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".uv_inpaint_torch", S.TORCH_CAPS, S.UV_INPAINT_CLOSE, notes=S.UV_INPAINT_TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    empty=empty_result,
    bench=f"{S.BENCH}:uv_inpaint_cases",
)


@UV_INPAINT.entry
def uv_inpaint(
    texture: torch.Tensor,
    mask: torch.Tensor,
    *,
    method: str = "pushpull",
    iterations: int = 16,
    backend: str | None = None,
) -> torch.Tensor:
    """Fill every texel where ``mask`` is false from the known texels around it; known texels are kept exactly.

    push: ``level[k+1][i, j]`` = mean of the known texels among ``level[k][2i:2i+2, 2j:2j+2]`` (known when any
    is), down to 1 x 1; pull: from the top, an unknown texel of level k takes the bilinear value (weights
    0.25 / 0.75, edges clamped) of the filled level k+1 at its centre. ``method="diffuse"`` then runs
    ``iterations`` Jacobi steps of the 4-neighbour mean on the unknown texels. A texture with no known
    texel comes back 0. fp32 throughout.

    texture: ``[H, W, C]`` or ``[B, H, W, C]`` fp32, any strides, 1 <= C <= 16, sides <= 16384.
    mask: bool or uint8 ``[H, W]`` or ``[B, H, W]``, nonzero = known (note: ``cv2.inpaint``'s mask marks the
        holes instead).
    method: ``"pushpull"`` or ``"diffuse"``; iterations: diffusion steps (``"diffuse"`` only).

    Returns a new contiguous fp32 texture of ``texture``'s shape.
    """
    options = (("method", method), ("iterations", iterations))
    return UV_INPAINT.plan((texture, mask), backend, None, options)(texture, mask)


can_use_uv_inpaint = UV_INPAINT.can_use
uv_inpaint_reference = UV_INPAINT.reference
