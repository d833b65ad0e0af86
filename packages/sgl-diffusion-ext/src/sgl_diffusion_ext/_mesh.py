"""Checks and small tensors the ext ops share (torch only): argument validation for the ``describe``
functions, the index-range check run on every eager call, pixel-centre tables and UV to clip space."""

from __future__ import annotations

import torch

from sgl_diffusion_core import InputDesc, device_arch, dtype_name, tensor_platform

from ._specs import MAX_RESOLUTION


def desc_for(t: object, problems: list[str]) -> InputDesc:
    """The platform part of an ``InputDesc`` from the first tensor argument."""
    if not isinstance(t, torch.Tensor):
        return InputDesc(platform=None, problems=problems)
    plat = tensor_platform(t.device)
    arch = device_arch(plat, t.device.index) if plat in ("cuda", "hip") else None
    return InputDesc(plat, arch, (dtype_name(t.dtype),) if t.is_floating_point() else (), None, (), problems)


def check_tensor(t: object, name: str, dtypes: tuple[torch.dtype, ...], ndims: tuple[int, ...], problems: list[str],
                 last: int | None = None) -> bool:
    """Whether ``t`` is a tensor of one of ``dtypes`` with one of ``ndims`` dims (and last dim ``last``)."""
    if not isinstance(t, torch.Tensor):
        problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
        return False
    ok = True
    if t.dtype not in dtypes:
        want = " or ".join(str(d).removeprefix("torch.") for d in dtypes)
        problems.append(f"{name} must be {want}, got {str(t.dtype).removeprefix('torch.')}")
        ok = False
    if t.dim() not in ndims or (last is not None and t.dim() and t.shape[-1] != last):
        dims = " or ".join(f"{n}-D" for n in ndims)
        tail = f" with last dim {last}" if last is not None else ""
        problems.append(f"{name} must be {dims}{tail}, got shape {list(t.shape)}")
        ok = False
    return ok


def same_device(tensors: dict[str, torch.Tensor | None], problems: list[str]) -> None:
    devs = {k: t.device for k, t in tensors.items() if isinstance(t, torch.Tensor)}
    if len(set(devs.values())) > 1:
        problems.append("all tensors must be on one device, got " + ", ".join(f"{k} on {d}" for k, d in devs.items()))


def parse_resolution(resolution: object, problems: list[str], name: str = "resolution") -> tuple[int, int] | None:
    """``(H, W)`` from an int or a pair of ints in ``[1, MAX_RESOLUTION]``."""
    if isinstance(resolution, int) and not isinstance(resolution, bool):
        hw: tuple = (resolution, resolution)
    elif isinstance(resolution, (tuple, list)) and len(resolution) == 2:
        hw = tuple(resolution)
    else:
        problems.append(f"{name} must be an int or a pair (H, W) of ints, got {resolution!r}")
        return None
    if not all(isinstance(v, int) and not isinstance(v, bool) and 1 <= v <= MAX_RESOLUTION for v in hw):
        problems.append(f"{name} sides must be ints in [1, {MAX_RESOLUTION}], got {resolution!r}")
        return None
    return int(hw[0]), int(hw[1])


def index_problem(index: torch.Tensor, hi: int, name: str, bound: str, lo: int = 0) -> str | None:
    """Why ``index`` (a CPU tensor) has a value outside ``[lo, hi)``; None when it has none or is on a
    GPU (the kernels skip such entries there, see each op's docstring)."""
    if index.device.type != "cpu" or index.numel() == 0:
        return None
    vmin, vmax = torch.stack(torch.aminmax(index)).tolist()
    if vmin < lo or vmax >= hi:
        return f"{name} values must lie in [{lo}, {hi}) ({bound} = {hi}); got values in [{vmin}, {vmax}]"
    return None


def pixel_centres(H: int, W: int, flip_y: bool, device: torch.device) -> tuple[torch.Tensor, torch.Tensor]:
    """``(px [W], py [H])`` fp32: NDC x of each column's centre, ``(2c + 1 - W) / W``, and y of each row's,
    ``(2r + 1 - H) / H`` (row 0 at the bottom) or its negation with ``flip_y`` (row 0 at the top); divided
    in fp64 and rounded once, so every backend tests the same coordinates."""
    c = torch.arange(W, dtype=torch.float64)
    r = torch.arange(H, dtype=torch.float64)
    px = (2 * c + 1 - W) / W
    py = (2 * r + 1 - H) / H
    if flip_y:
        py = -py
    return px.float().to(device), py.float().to(device)


def uv_to_clip(uv: torch.Tensor) -> torch.Tensor:
    """UV ``[N, 2]`` in [0, 1] to clip space ``[N, 4]``: ``(2u - 1, 2v - 1, 0, 1)`` (v = 0 is row 0)."""
    xy = uv.float() * 2.0 - 1.0
    zw = torch.zeros(uv.shape[0], 2, dtype=torch.float32, device=uv.device)
    zw[:, 1] = 1.0
    return torch.cat([xy, zw], dim=1)
