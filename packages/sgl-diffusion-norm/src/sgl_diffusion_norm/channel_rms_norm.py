"""``channel_rms_norm``: the Wan-VAE RMS norm over the channel dim (+ optional SiLU), in one pass.

Backends: ``channel_rms_norm_triton`` (contract ``close``) and ``channel_rms_norm_torch`` (the
fp32 eager chain, the definition of the exact contract).
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
    silu: bool


def _channel_vector(name: str, t: torch.Tensor, C: int, ndim: int, problems: list[str]) -> None:
    """gamma / bias: ``[C]`` or ``[C, 1, ..., 1]`` (x.dim() - 1 dims, as the Wan VAE stores it), dense."""
    ok_shapes = {(C,), (C, *([1] * (ndim - 2)))}
    if tuple(t.shape) not in ok_shapes or (C > 1 and t.stride(0) != 1):
        want = " or ".join(str(list(s)) for s in sorted(ok_shapes, key=len))
        problems.append(f"{name} must be a contiguous {want} tensor (one value per channel), got shape "
                        f"{list(t.shape)} strides {list(t.stride())}")


def describe_channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
) -> InputDesc:
    """Validate the arguments of ``channel_rms_norm`` and describe them for backend selection."""
    problems: list[str] = []
    if gamma is None:
        problems.append("gamma is required (got None)")
    if not isinstance(x, torch.Tensor):
        problems.append(f"x must be a torch.Tensor, got {type(x).__name__}")
        check_tensors({"gamma": gamma, "bias": bias}, None, problems)
        return InputDesc(platform=None, problems=problems)
    platform = tensor_platform(x.device)
    arch = device_arch(platform, x.device.index) if platform in ("cuda", "hip") else None
    dtypes = check_tensors({"x": x, "gamma": gamma, "bias": bias}, x.device, problems)
    desc = InputDesc(platform, arch, tuple(dtypes), x.shape[1] if x.dim() > 1 else None, (), problems)
    desc.info = {"geom": None, "empty": False}
    if problems:
        return desc
    g = channel_geometry("x", x, problems)
    if g is None:
        return desc
    _channel_vector("gamma", gamma, g.C, x.dim(), problems)
    if bias is not None:
        _channel_vector("bias", bias, g.C, x.dim(), problems)
    desc.layouts = ("channels_last" if g.channels_last else "channels_first",)
    desc.info = {"geom": None if problems else Geometry(g, bool(silu)), "empty": x.numel() == 0}
    return desc


def empty_result(geom: Geometry):
    """The runner of an empty x: a new empty result in x's memory format."""

    def run(x, *_):
        return output_like(x)

    return run


_GPU = dict(platforms=("cuda", "hip"), min_arch=(("cuda", 80), ("hip", "gfx942"), ("hip", "gfx950")),
            interpretable=True, requires=("triton",))

CHANNEL_RMS_NORM = Op(
    "norm.channel_rms_norm",
    distribution="sgl-diffusion-norm",
    summary="F.normalize(x, dim=1) * sqrt(C) * gamma + bias [-> SiLU] (Wan-VAE RMS norm), 4-D / 5-D",
    describe=describe_channel_rms_norm,
    n_tensors=3,
    reference=".channel_rms_norm_torch:channel_rms_norm",
    backends=[
        Backend("triton", ".channel_rms_norm_triton", Capabilities(**_GPU), Contract.close(), priority=10,
                notes="a program owns a tile of spatial positions x all channels; contiguous and channels_last(_3d)",
                aot="aot_variants", executed_on=("sm_90", "cpu-interpreter")),
        Backend("torch", ".channel_rms_norm_torch", Capabilities(platforms=("cuda", "hip", "cpu", "mps", "xpu")),
                Contract.exact(),
                notes="the fp32 eager chain (F.normalize on x.float(), one rounding): the definition of exact",
                executed_on=("cpu",)),
    ],
    default_exact=False,
    empty=empty_result,
    bench="benchmarks/vae_norm_bench.py:channel_rms_norm_cases",
)


@CHANNEL_RMS_NORM.entry
def channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> torch.Tensor:
    """``F.normalize(x, dim=1, eps=eps) * sqrt(C) * gamma + bias``, then ``F.silu`` when ``silu``
    (the Wan-VAE ``RMS_norm`` and its following SiLU) in one pass.

    ``F.normalize`` divides by ``max(||x||_2, eps)`` over the channel dim; statistics and math in
    fp32, one rounding to ``x.dtype`` (contract ``close`` for ``triton``; the ``torch`` backend is
    the fp32 eager chain of ``channel_rms_norm_reference``, contract ``exact``).

    x: ``[B, C, H, W]`` or ``[B, C, T, H, W]``, bf16 | fp16 | fp32, contiguous or channels_last(_3d)
        (any strides for which the spatial dims merge into one strided run).
    gamma: ``[C]``, or ``[C, 1, 1]`` (4-D x) / ``[C, 1, 1, 1]`` (5-D x) as the Wan VAE stores it.
    bias: None or shaped like gamma. Any float dtypes.
    exact: ``True`` asks for a backend equal to the reference chain (``torch``).
    backend: ``None`` (best for the inputs), ``"triton"`` or ``"torch"``.

    Returns a new tensor shaped like x, in x's memory format (channels_last(_3d) when x's
    channels are its contiguous dim, else contiguous). Raises ``UnsupportedInputError`` naming
    every reason when no backend can serve the inputs.
    """
    if is_compiling():
        return _custom_op(x, gamma, bias, float(eps), bool(silu), exact, backend)
    return CHANNEL_RMS_NORM.plan((x, gamma, bias), backend, exact, (("silu", bool(silu)),))(x, gamma, bias, eps, silu)


can_use_channel_rms_norm = CHANNEL_RMS_NORM.can_use
channel_rms_norm_reference = CHANNEL_RMS_NORM.reference


def _fake(x, gamma, bias, eps, silu, exact, backend):
    CHANNEL_RMS_NORM.validate(x, gamma, bias, options=(("silu", bool(silu)),))
    return output_like(x)


# eps is keyed with silu (the keyed scalars lead the schema's): one plan per (eps, silu) under compile
_custom_op = CHANNEL_RMS_NORM.custom_op(
    "channel_rms_norm", fake=_fake, keyed=("eps", "silu"),
    schema="(Tensor x, Tensor gamma, Tensor? bias, float eps, bool silu, bool? exact, str? backend) -> Tensor",
)
