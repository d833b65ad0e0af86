"""``ln_modulate``: LayerNorm + adaLN modulation in one pass. Public entry points.

Validation, the predicate, backend selection (through ``sgl_diffusion_core.select_impl``)
and the custom-op registration live here; kernels live in ``ln_modulate_triton.py``, the
executable spec in ``ln_modulate_torch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

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

OP = "norm.ln_modulate"


@dataclass(frozen=True)
class Geometry:
    """Everything a backend needs beyond the tensors, computed once per call signature."""

    x: RowGeometry
    scale: ModLayout
    shift: ModLayout | None


def describe_ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> InputDesc:
    """Validate the arguments of ``ln_modulate`` and describe them for backend selection."""
    desc, g = describe_rows("x", x, {"scale": scale, "shift": shift, "weight": weight, "bias": bias},
                            required=("scale",))
    if g is None:
        return desc
    problems = desc.problems
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != (g.D,) or (g.D > 1 and t.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [D] = [{g.D}] tensor, got shape {list(t.shape)} "
                            f"strides {list(t.stride())}")
    sc = mod_layout("scale", scale, g, problems)
    sh = mod_layout("shift", shift, g, problems) if shift is not None else None
    layouts = tuple(dict.fromkeys(lay.tag for lay in (sc, sh) if lay is not None))
    desc.layouts = layouts
    desc.info = {"geom": Geometry(g, sc, sh) if not problems else None, "empty": x.numel() == 0}
    return desc


def _empty_runner(geom: Geometry):
    def run(x, scale, shift, weight, bias, eps, scale_offset, _shape=geom.x.shape):
        return torch.empty(_shape, dtype=x.dtype, device=x.device)

    return run


def _bind(fn, geom: Geometry):
    def run(x, scale, shift, weight, bias, eps, scale_offset):
        return fn(x, scale, shift, weight=weight, bias=bias, eps=eps, scale_offset=scale_offset, geom=geom)

    return run


_dispatch = Dispatcher(
    OP,
    lambda x, scale, shift, weight, bias: describe_ln_modulate(x, scale, shift, weight=weight, bias=bias),
    bind=_bind,
    empty=_empty_runner,
)


def ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> torch.Tensor:
    """``LayerNorm(x)[* weight + bias] * (scale_offset + scale) + shift`` in one pass.

    The norm runs over the last dim with fp32 statistics; the result is rounded once to
    ``x.dtype`` (contract ``close``, tolerances in the registry spec).

    x: ``[B, S, D]`` or ``[N, D]``, bf16 | fp16 | fp32, last dim contiguous, any row strides.
    scale, shift: broadcast per channel ``[D]``; per sample ``[B, D]`` or ``[B, 1, D]``
        (B may be 1); per token ``[B, S, D]`` (``[N, D]`` for 2-D x), strided views allowed
        (e.g. a chunk of a ``[B, S, 6*D]`` projection); per frame ``[B, F, 1, D]`` with
        ``S = F * L``: frame ``f`` covers tokens ``f*L .. (f+1)*L - 1``. Last dim contiguous;
        any float dtype (math in fp32). ``shift=None`` means 0.
    weight, bias: optional LayerNorm affine, contiguous ``[D]``.
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``; an explicit backend
        that cannot serve raises.

    Returns a new contiguous tensor shaped like x. Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _custom_op(x, scale, shift, weight, bias, float(eps), float(scale_offset), backend)
    return _dispatch.plan((x, scale, shift, weight, bias), backend)(x, scale, shift, weight, bias, eps, scale_offset)


def can_use_ln_modulate(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
    backend: str | None = None,
) -> bool:
    """Whether ``ln_modulate`` can serve these arguments (never raises, never allocates)."""
    try:
        desc = describe_ln_modulate(x, scale, shift, weight=weight, bias=bias)
        select_impl(OP, desc, backend=backend)
        return True
    except Exception:
        return False


def ln_modulate_reference(
    x: torch.Tensor,
    scale: torch.Tensor,
    shift: torch.Tensor | None = None,
    *,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    eps: float = 1e-6,
    scale_offset: float = 1.0,
) -> torch.Tensor:
    """The executable spec (the ``torch`` backend), for tests and benchmarks: fp32 eager PyTorch."""
    fn = resolve_target("sgl_diffusion_norm.ln_modulate_torch:ln_modulate")
    return fn(x, scale, shift, weight=weight, bias=bias, eps=eps, scale_offset=scale_offset)


# --- custom op: the path torch.compile traces -------------------------------------------------

def _op_impl(x, scale, shift, weight, bias, eps, scale_offset, backend):
    return _dispatch.plan((x, scale, shift, weight, bias), backend)(x, scale, shift, weight, bias, eps, scale_offset)


def _op_fake(x, scale, shift, weight, bias, eps, scale_offset, backend):
    _dispatch.validate(x, scale, shift, weight, bias)
    return torch.empty(x.shape, dtype=x.dtype, device=x.device)


_custom_op = register_custom_op(
    "ln_modulate",
    _op_impl,
    _op_fake,
    schema="(Tensor x, Tensor scale, Tensor? shift, Tensor? weight, Tensor? bias, float eps, "
    "float scale_offset, str? backend) -> Tensor",
)
