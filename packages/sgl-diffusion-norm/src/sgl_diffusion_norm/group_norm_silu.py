"""``group_norm_silu``: GroupNorm (+ SiLU) for VAE activations (4-D / 5-D).

Backends: ``group_norm_silu_triton`` (two passes over x, contract ``close``) and
``group_norm_silu_torch`` (the fp32 eager chain, the definition of the exact contract).
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import (
    Backend,
    Capabilities,
    Contract,
    InputDesc,
    Op,
    check_tensors,
    device_arch,
    is_compiling,
    tensor_platform,
)

from ._channels import ChannelGeometry, channel_geometry, output_like


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


def _describe_tensors(x, weight, bias, *, num_groups, eps=1e-5, silu=True) -> InputDesc:
    """:func:`describe_group_norm_silu` from the plan's tensors ``(x, weight, bias)`` and options."""
    return describe_group_norm_silu(x, num_groups, weight, bias, eps=eps, silu=silu)


def empty_result(geom: Geometry):
    """The runner of an empty x: a new empty result in x's memory format."""

    def run(x, *_):
        return output_like(x)

    return run


_GPU = dict(platforms=("cuda", "hip"), min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
            interpretable=True, requires=("triton",))

GROUP_NORM_SILU = Op(
    "norm.group_norm_silu",
    distribution="sgl-diffusion-norm",
    summary="F.silu(F.group_norm(x, num_groups, weight, bias, eps)) for 4-D / 5-D VAE activations",
    describe=describe_group_norm_silu,
    describe_tensors=_describe_tensors,
    n_tensors=3,
    reference=".group_norm_silu_torch:group_norm_silu",
    backends=[
        Backend("triton", ".group_norm_silu_triton", Capabilities(**_GPU), Contract.close(), priority=10,
                notes="two passes: split per-group statistics (shifted sums, Chan combination), then "
                "normalize + SiLU", aot="aot_variants", executed_on=("sm_90", "cpu-interpreter")),
        Backend("torch", ".group_norm_silu_torch", Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu")),
                Contract.exact(),
                notes="the fp32 eager chain (F.group_norm on x.float(), F.silu, one rounding): the definition of "
                "exact", executed_on=("cpu",)),
    ],
    default_exact=False,
    empty=empty_result,
    bench="benchmarks/vae_norm_bench.py:group_norm_silu_cases",
)


@GROUP_NORM_SILU.entry
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
    opts = (("num_groups", num_groups), ("silu", bool(silu)))
    if type(num_groups) is not int:  # 2.0 / True hash like 2 / 1: refused here, never served their plans
        GROUP_NORM_SILU.checked(x, weight, bias, options=opts)
    return GROUP_NORM_SILU.plan((x, weight, bias), backend, exact, opts)(x, weight, bias, num_groups, eps, silu)


can_use_group_norm_silu = GROUP_NORM_SILU.can_use
group_norm_silu_reference = GROUP_NORM_SILU.reference


def _fake(x, weight, bias, num_groups, eps, silu, exact, backend):
    GROUP_NORM_SILU.validate(x, weight, bias, options=(("num_groups", num_groups), ("silu", bool(silu))))
    return output_like(x)


# eps is keyed with num_groups and silu (the keyed scalars lead the schema's): one plan per value
# under compile
_custom_op = GROUP_NORM_SILU.custom_op(
    "group_norm_silu", fake=_fake, keyed=("num_groups", "eps", "silu"),
    schema="(Tensor x, Tensor? weight, Tensor? bias, int num_groups, float eps, bool silu, bool? exact, "
    "str? backend) -> Tensor",
)
