"""``scale_shift``: ``x * (scale_offset + scale) + shift``, bit-exact to the eager chain. Public entry points."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    ModLayout,
    RowGeometry,
    describe_rows,
    is_compiling,
    mod_layout,
    register_custom_op,
    resolve_target,
    select_impl,
)

if TYPE_CHECKING:
    from .indexed_api import IndexLayout

OP = "modulate.scale_shift"


@dataclass(frozen=True)
class Geometry:
    """Rows of x, modulation layouts, and the dtype every eager intermediate is rounded to."""

    x: RowGeometry
    scale: ModLayout
    shift: ModLayout | None
    t1: torch.dtype  # scale_offset + scale
    t2: torch.dtype  # x * t1
    out: torch.dtype  # t2 + shift
    # Eager CPU rounds a Python scalar to a bf16/fp16 tensor's dtype before adding it; CUDA
    # eager keeps it in fp32 (its opmath). Matters only for offsets that bf16 cannot hold.
    round_offset: bool
    # indexed_scale_shift: where token (b, s) finds its table row; scale/shift then describe
    # the tables (ss = stride between table rows, L = 1)
    index: IndexLayout | None = None


def chain_dtypes(x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor | None) -> tuple[torch.dtype, ...]:
    """``(t1, t2, out)``: the dtypes eager gives ``scale_offset + scale``, ``x * t1`` and ``+ shift``."""
    t1 = scale.dtype  # a Python scalar plus a tensor keeps the tensor's dtype
    t2 = torch.promote_types(x.dtype, t1)
    return t1, t2, (t2 if shift is None else torch.promote_types(t2, shift.dtype))


def describe_scale_shift(
    x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor | None = None, *, scale_offset: float = 1.0
) -> InputDesc:
    """Validate the arguments of ``scale_shift`` and describe them for backend selection."""
    desc, g = describe_rows("x", x, {"scale": scale, "shift": shift}, required=("scale",))
    if g is None:
        return desc
    problems = desc.problems
    sc = mod_layout("scale", scale, g, problems)
    sh = mod_layout("shift", shift, g, problems) if shift is not None else None
    layouts = tuple(dict.fromkeys(lay.tag for lay in (sc, sh) if lay is not None))
    geom = None
    if not problems:
        geom = Geometry(g, sc, sh, *chain_dtypes(x, scale, shift), round_offset=desc.platform == "cpu")
    desc.layouts = layouts
    desc.info = {"geom": geom, "empty": x.numel() == 0}
    return desc


def _empty(geom: Geometry):
    def run(x, scale, shift, scale_offset):
        return torch.empty(geom.x.shape, dtype=geom.out, device=x.device)

    return run


def _bind(fn, geom: Geometry):
    def run(x, scale, shift, scale_offset):
        return fn(x, scale, shift, scale_offset=scale_offset, geom=geom)

    return run


_dispatch = Dispatcher(
    OP, lambda x, scale, shift: describe_scale_shift(x, scale, shift), bind=_bind, empty=_empty
)


def scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> torch.Tensor:
    """``x * (scale_offset + scale) + shift``, ``torch.equal`` to that eager chain (contract ``exact``).

    Every intermediate is rounded to the dtype eager PyTorch gives it (``scale_offset +
    scale`` in ``scale.dtype``, the product in ``promote(x, scale)``, the sum in
    ``promote(product, shift)``), with no fused multiply-add; the result has that final dtype.

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    scale, shift: per channel ``[D]``; per sample ``[B, D]`` / ``[B, 1, D]`` (B may be 1);
        per token ``[B, S, D]`` (``[N, D]`` for 2-D x), strided views allowed; per frame
        ``[B, F, 1, D]`` with ``S = F * L``, frame f covering tokens ``f*L .. (f+1)*L - 1``
        (for which the eager chain is written on x viewed as ``[B, F, L, D]``). Last dim
        contiguous. ``shift=None`` means no shift.
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new contiguous tensor shaped like x. Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _custom_op(x, scale, shift, float(scale_offset), backend)
    return _dispatch.plan((x, scale, shift), backend)(x, scale, shift, scale_offset)


def can_use_scale_shift(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> bool:
    """Whether ``scale_shift`` can serve these arguments (never raises, never allocates)."""
    try:
        select_impl(OP, describe_scale_shift(x, scale, shift), backend=backend)
        return True
    except Exception:
        return False


def scale_shift_reference(
    x: torch.Tensor, scale: torch.Tensor, shift: torch.Tensor | None = None, *, scale_offset: float = 1.0
) -> torch.Tensor:
    """The eager chain itself (the ``torch`` backend): the definition of the exact contract."""
    fn = resolve_target("sgl_diffusion_modulate.scale_shift_torch:scale_shift")
    return fn(x, scale, shift, scale_offset=scale_offset)


def _op_impl(x, scale, shift, scale_offset, backend):
    return _dispatch.plan((x, scale, shift), backend)(x, scale, shift, scale_offset)


def _op_fake(x, scale, shift, scale_offset, backend):
    _dispatch.validate(x, scale, shift)
    return torch.empty(x.shape, dtype=chain_dtypes(x, scale, shift)[2], device=x.device)


_custom_op = register_custom_op(
    "scale_shift",
    _op_impl,
    _op_fake,
    schema="(Tensor x, Tensor scale, Tensor? shift, float scale_offset, str? backend) -> Tensor",
)
