"""``scale_shift``: ``x * (scale_offset + scale) + shift``, bit-exact to the eager chain.

Backends: ``_scale_shift_triton`` (shared with ``indexed_scale_shift``) and
``scale_shift_torch`` (the eager chain, the definition of the contract).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import torch

from sgl_diffusion_core import (
    Backend,
    Contract,
    InputDesc,
    ModLayout,
    Op,
    RowGeometry,
    describe_rows,
    is_compiling,
    mod_layout,
)

from . import _specs as S


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
    # indexed_scale_shift: where token (b, s) finds its table row (an ``_indexed.IndexLayout``);
    # scale/shift then describe the tables (ss = stride between table rows, L = 1)
    index: Any = None


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
    geom = None
    if not problems:
        geom = Geometry(g, sc, sh, *chain_dtypes(x, scale, shift), round_offset=desc.platform == "cpu")
    desc.layouts = tuple(dict.fromkeys(lay.tag for lay in (sc, sh) if lay is not None))
    desc.info = {"geom": geom, "empty": x.numel() == 0}
    return desc


def empty_result(geom: Geometry):
    """The runner of an empty input: a new empty tensor of the result's shape and dtype."""

    def run(x, *_):
        return torch.empty(geom.x.shape, dtype=geom.out, device=x.device)

    return run


SCALE_SHIFT = Op(
    "modulate.scale_shift",
    distribution=S.DISTRIBUTION,
    summary="x * (scale_offset + scale) + shift, bit-exact to the eager chain",
    describe=describe_scale_shift,
    n_tensors=3,
    reference=".scale_shift_torch:scale_shift",
    backends=[
        Backend("triton", "._scale_shift_triton", S.TRITON_CAPS, Contract.exact(), priority=10,
                notes=S.TRITON_NOTE, aot="aot_variants", executed_on=S.EXECUTED_TRITON),
        Backend("torch", ".scale_shift_torch", S.TORCH_CAPS, Contract.exact(), notes=S.TORCH_NOTE,
                executed_on=S.EXECUTED_TORCH),
    ],
    default_exact=True,
    empty=empty_result,
    bench=f"{S.BENCH}:scale_shift_cases",
)


@SCALE_SHIFT.entry
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
    return SCALE_SHIFT.plan((x, scale, shift), backend)(x, scale, shift, scale_offset)


can_use_scale_shift = SCALE_SHIFT.can_use
scale_shift_reference = SCALE_SHIFT.reference


def _fake(x, scale, shift, scale_offset, backend):
    SCALE_SHIFT.validate(x, scale, shift)
    return torch.empty(x.shape, dtype=chain_dtypes(x, scale, shift)[2], device=x.device)


_custom_op = SCALE_SHIFT.custom_op(
    "scale_shift", fake=_fake,
    schema="(Tensor x, Tensor scale, Tensor? shift, float scale_offset, str? backend) -> Tensor",
)
