"""``group_norm_silu``: GroupNorm + SiLU for VAE activations (4-D / 5-D). Public entry points.

Validation, the predicate, backend selection (through ``sgl_diffusion_core.select_impl``) and
the custom-op registration live here; the kernels live in ``group_norm_silu_triton.py``, the
executable spec in ``group_norm_silu_torch.py``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Dispatcher,
    InputDesc,
    check_tensors,
    device_arch,
    is_compiling,
    register_custom_op,
    resolve_target,
    select_impl,
    tensor_platform,
)

from .channel_rms_norm_api import ChannelGeometry, channel_geometry, output_like

OP = "norm.group_norm_silu"


@dataclass(frozen=True)
class Geometry:
    x: ChannelGeometry
    G: int
    silu: bool

    @property
    def Cg(self) -> int:
        return self.x.C // self.G


def describe_group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
) -> InputDesc:
    """Validate the arguments of ``group_norm_silu`` and describe them for backend selection."""
    problems: list[str] = []
    if not isinstance(x, torch.Tensor):
        problems.append(f"x must be a torch.Tensor, got {type(x).__name__}")
        check_tensors({"weight": weight, "bias": bias}, None, problems)
        return InputDesc(platform=None, problems=problems)
    platform = tensor_platform(x.device)
    arch = device_arch(platform, x.device.index) if platform in ("cuda", "hip") else None
    dtypes = check_tensors({"x": x, "weight": weight, "bias": bias}, x.device, problems)
    desc = InputDesc(platform, arch, tuple(dtypes), x.shape[1] if x.dim() > 1 else None, (), problems)
    desc.info = {"geom": None, "empty": False}
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
        problems.append(f"num_groups must be a positive int, got {num_groups!r}")
    if problems:
        return desc
    g = channel_geometry("x", x, problems)
    if g is None:
        return desc
    if g.C % num_groups:
        problems.append(f"the channel count C={g.C} must be divisible by num_groups={num_groups}")
    for name, t in (("weight", weight), ("bias", bias)):
        if t is not None and (tuple(t.shape) != (g.C,) or (g.C > 1 and t.stride(0) != 1)):
            problems.append(f"{name} must be a contiguous [C] = [{g.C}] tensor, got shape {list(t.shape)} "
                            f"strides {list(t.stride())}")
    desc.layouts = ("channels_last" if g.channels_last else "channels_first",)
    desc.info = {"geom": None if problems else Geometry(g, num_groups, bool(silu)), "empty": x.numel() == 0}
    return desc


def _empty_runner(geom: Geometry):
    def run(x, weight, bias, num_groups, eps, silu):
        return output_like(x)

    return run


def _bind(fn, geom: Geometry):
    def run(x, weight, bias, num_groups, eps, silu):
        return fn(x, num_groups, weight, bias, eps=eps, silu=silu, geom=geom)

    return run


class _Plans:
    """One Dispatcher per (num_groups, silu): both change the kernels and neither is a tensor."""

    def __init__(self) -> None:
        self._d: dict[tuple[int, bool], Dispatcher] = {}

    def get(self, num_groups, silu: bool) -> Dispatcher | None:
        if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups < 1:
            return None
        key = (num_groups, bool(silu))
        d = self._d.get(key)
        if d is None:
            d = self._d[key] = Dispatcher(
                OP, lambda x, w, b: describe_group_norm_silu(x, num_groups, w, b, silu=silu),
                bind=_bind, empty=_empty_runner)
        return d


_PLANS = _Plans()


def _plan(x, num_groups, weight, bias, silu, backend, exact):
    d = _PLANS.get(num_groups, silu)
    if d is None:  # an invalid num_groups: select_impl raises with the problem spelled out
        select_impl(OP, describe_group_norm_silu(x, num_groups, weight, bias), backend=backend, exact=exact)
    return d.plan((x, weight, bias), backend, exact)


def group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``F.silu(F.group_norm(x, num_groups, weight, bias, eps))`` (``silu=False``: the GroupNorm alone).

    Statistics of each group (``C / num_groups`` channels x every spatial position) in fp32,
    combined across programs from per-chunk mean and M2 (Chan's parallel formula); one rounding
    to ``x.dtype`` (contract ``close`` for ``triton``; the ``torch`` backend is the fp32 eager
    chain of ``group_norm_silu_reference``, contract ``exact``).

    x: ``[B, C, H, W]`` or ``[B, C, T, H, W]``, bf16 | fp16 | fp32, contiguous or channels_last(_3d)
        (any strides for which the spatial dims merge into one strided run); C divisible by
        num_groups (any channels per group: 3, 6, 12, ...).
    weight, bias: None or contiguous ``[C]``, any float dtype.
    exact: ``True`` asks for a backend equal to the reference chain (``torch``).
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new tensor shaped like x, in x's memory format. Raises ``UnsupportedInputError``
    naming every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _custom_op(x, weight, bias, num_groups, float(eps), bool(silu), exact, backend)
    return _plan(x, num_groups, weight, bias, silu, backend, exact)(x, weight, bias, num_groups, eps, silu)


def can_use_group_norm_silu(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool:
    """Whether ``group_norm_silu`` can serve these arguments (never raises, never allocates)."""
    try:
        desc = describe_group_norm_silu(x, num_groups, weight, bias, silu=silu)
        select_impl(OP, desc, backend=backend, exact=exact)
        return True
    except Exception:
        return False


def group_norm_silu_reference(
    x: torch.Tensor,
    num_groups: int,
    weight: torch.Tensor | None = None,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-5,
    silu: bool = True,
) -> torch.Tensor:
    """The executable spec (the ``torch`` backend): the fp32 eager chain, one rounding."""
    fn = resolve_target("sgl_diffusion_norm.group_norm_silu_torch:group_norm_silu")
    return fn(x, num_groups, weight, bias, eps=eps, silu=silu)


# --- custom op: the path torch.compile traces -------------------------------------------------

def _op_impl(x, weight, bias, num_groups, eps, silu, exact, backend):
    return _plan(x, num_groups, weight, bias, silu, backend, exact)(x, weight, bias, num_groups, eps, silu)


def _op_fake(x, weight, bias, num_groups, eps, silu, exact, backend):
    d = _PLANS.get(num_groups, silu)
    if d is None:
        raise ValueError(f"group_norm_silu: num_groups must be a positive int, got {num_groups!r}")
    d.validate(x, weight, bias)
    return output_like(x)


_custom_op = register_custom_op(
    "group_norm_silu",
    _op_impl,
    _op_fake,
    schema="(Tensor x, Tensor? weight, Tensor? bias, int num_groups, float eps, bool silu, bool? exact, "
    "str? backend) -> Tensor",
)
