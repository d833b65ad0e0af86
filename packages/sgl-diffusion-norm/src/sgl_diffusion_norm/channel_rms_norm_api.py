"""``channel_rms_norm``: the Wan-VAE RMS norm over the channel dim (+ optional SiLU). Public entry points.

Validation, the predicate, backend selection (through ``sgl_diffusion_core.select_impl``) and
the custom-op registration live here; the kernel lives in ``channel_rms_norm_triton.py``, the
executable spec in ``channel_rms_norm_torch.py``.
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

OP = "norm.channel_rms_norm"


@dataclass(frozen=True)
class ChannelGeometry:
    """x ``[B, C, *spatial]`` seen as ``[B, C, P]`` (the spatial dims merge into one of stride ``sp``)."""

    B: int
    C: int
    P: int
    sb: int
    sc: int
    sp: int
    shape: tuple[int, ...]
    channels_last: bool  # the output's memory format (and the tile orientation of the kernel)
    out_strides: tuple[int, ...]

    @property
    def out_sb(self) -> int:
        return self.out_strides[0]

    @property
    def out_sc(self) -> int:
        return self.out_strides[1]

    @property
    def out_sp(self) -> int:
        return self.C if self.channels_last else 1

    @property
    def dense_rows(self) -> bool:
        """channels_last x whose positions are rows of C contiguous values (``sc == 1``, ``sp == C``)."""
        return self.channels_last and self.sc == 1 and (self.sp == self.C or self.P == 1)


def _dense_strides(shape: tuple[int, ...], channels_last: bool) -> tuple[int, ...]:
    """Strides of a dense tensor of ``shape`` in the contiguous or channels_last(_3d) format."""
    order = [0, *range(2, len(shape)), 1] if channels_last else list(range(len(shape)))
    strides = [0] * len(shape)
    acc = 1
    for d in reversed(order):
        strides[d] = acc
        acc *= shape[d]
    return tuple(strides)


def output_like(x: torch.Tensor) -> torch.Tensor:
    """An uninitialized result for x: channels_last(_3d) when x's channels are its contiguous dim
    (``stride(1) == 1`` with C > 1), contiguous otherwise."""
    cl = x.dim() >= 3 and x.shape[1] > 1 and x.stride(1) == 1
    return torch.empty_strided(x.shape, _dense_strides(tuple(x.shape), cl), dtype=x.dtype, device=x.device)


def channel_geometry(name: str, x: torch.Tensor, problems: list[str]) -> ChannelGeometry | None:
    """x as ``[B, C, P]`` rows of channels, or None with the reason appended to ``problems``."""
    if x.dim() not in (4, 5):
        problems.append(f"{name} must be [B, C, H, W] or [B, C, T, H, W], got shape {list(x.shape)}")
        return None
    shape = tuple(x.shape)
    spatial = [(n, s) for n, s in zip(shape[2:], x.stride()[2:]) if n != 1]
    if x.numel() == 0:
        spatial = []
    for (_n0, s0), (n1, s1) in zip(spatial, spatial[1:]):
        if s0 != s1 * n1:
            problems.append(f"{name}: the spatial dims must merge into one strided run (contiguous or "
                            f"channels_last memory format), got shape {list(shape)} strides {list(x.stride())}")
            return None
    P = 1
    for n in shape[2:]:
        P *= n
    sp = spatial[-1][1] if spatial else 1
    C = shape[1]
    cl = C > 1 and x.stride(1) == 1
    return ChannelGeometry(shape[0], C, P, x.stride(0), x.stride(1), sp, shape, cl, _dense_strides(shape, cl))


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
    desc.info = {"geom": None if problems else g, "empty": x.numel() == 0}
    return desc


def _empty_runner(geom: ChannelGeometry):
    def run(x, gamma, bias, eps, silu):
        return output_like(x)

    return run


def _bind(fn, geom: ChannelGeometry):
    def run(x, gamma, bias, eps, silu):
        return fn(x, gamma, bias, eps=eps, silu=silu, geom=geom)

    return run


def _make_dispatcher(silu: bool) -> Dispatcher:
    return Dispatcher(OP, lambda x, g, b: describe_channel_rms_norm(x, g, b, silu=silu), bind=_bind,
                      empty=_empty_runner)


# one plan cache per silu flag (it changes the kernel and is not a tensor)
_DISPATCH = {False: _make_dispatcher(False), True: _make_dispatcher(True)}


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
    return _DISPATCH[bool(silu)].plan((x, gamma, bias), backend, exact)(x, gamma, bias, eps, silu)


def can_use_channel_rms_norm(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
    exact: bool | None = None,
    backend: str | None = None,
) -> bool:
    """Whether ``channel_rms_norm`` can serve these arguments (never raises, never allocates)."""
    try:
        select_impl(OP, describe_channel_rms_norm(x, gamma, bias, silu=silu), backend=backend, exact=exact)
        return True
    except Exception:
        return False


def channel_rms_norm_reference(
    x: torch.Tensor,
    gamma: torch.Tensor,
    bias: torch.Tensor | None = None,
    *,
    eps: float = 1e-12,
    silu: bool = False,
) -> torch.Tensor:
    """The executable spec (the ``torch`` backend): the fp32 eager chain, one rounding."""
    fn = resolve_target("sgl_diffusion_norm.channel_rms_norm_torch:channel_rms_norm")
    return fn(x, gamma, bias, eps=eps, silu=silu)


# --- custom op: the path torch.compile traces -------------------------------------------------

def _op_impl(x, gamma, bias, eps, silu, exact, backend):
    return _DISPATCH[bool(silu)].plan((x, gamma, bias), backend, exact)(x, gamma, bias, eps, silu)


def _op_fake(x, gamma, bias, eps, silu, exact, backend):
    _DISPATCH[bool(silu)].validate(x, gamma, bias)
    return output_like(x)


_custom_op = register_custom_op(
    "channel_rms_norm",
    _op_impl,
    _op_fake,
    schema="(Tensor x, Tensor gamma, Tensor? bias, float eps, bool silu, bool? exact, str? backend) -> Tensor",
)
