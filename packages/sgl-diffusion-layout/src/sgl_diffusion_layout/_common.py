"""Argument checks shared by the layout ops' ``describe_*`` functions (no Triton, no backend import).

Layout ops take plain values (world size, batch, padding, factors, flags) after their
tensors; those values shape the plan (they are its options, passed to ``describe`` as
keywords), the tensors key it by signature.
"""

from __future__ import annotations

from typing import Any

import torch

from sgl_diffusion_core import InputDesc, device_arch, dtype_name, tensor_platform

DTYPES = (torch.bfloat16, torch.float16, torch.float32)


def new_desc(tensors: dict[str, Any], problems: list[str]) -> tuple[InputDesc, torch.device | None]:
    """Type, device and dtype checks shared by every layout op (``None`` entries are skipped).

    All tensors must be torch tensors on one device with one float dtype (data movement
    never converts). Returns the description (problems appended) and the device.
    """
    device = None
    dtype = None
    first = None
    for name, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            continue
        if device is None:
            device, dtype, first = t.device, t.dtype, name
            if t.dtype not in DTYPES:
                problems.append(f"{name} has dtype {t.dtype}; expected bfloat16, float16 or float32")
            continue
        if t.device != device:
            problems.append(f"{name} is on {t.device}, {first} is on {device}: all tensors must be on one device")
        if t.dtype != dtype:
            problems.append(f"{name} has dtype {t.dtype}, {first} has {dtype}: all tensors must share one dtype")
    if device is None:
        return InputDesc(platform=None, problems=problems), None
    platform = tensor_platform(device)
    arch = device_arch(platform, device.index) if platform in ("cuda", "hip") else None
    desc = InputDesc(platform, arch, (dtype_name(dtype),), None, (), problems)
    return desc, device


def check_int(name: str, value: Any, problems: list[str], *, minimum: int = 0) -> bool:
    if isinstance(value, bool) or not isinstance(value, int):
        problems.append(f"{name} must be an int, got {type(value).__name__} {value!r}")
        return False
    if value < minimum:
        problems.append(f"{name} must be >= {minimum}, got {value}")
        return False
    return True


def check_dims(name: str, t: torch.Tensor, ndim: int, what: str, problems: list[str]) -> bool:
    if t.dim() != ndim:
        problems.append(f"{name} must be {what} ({ndim}-D), got shape {list(t.shape)}")
        return False
    return True


def check_last_contiguous(name: str, t: torch.Tensor, problems: list[str]) -> bool:
    if t.dim() and t.shape[-1] > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got strides {list(t.stride())}")
        return False
    return True


def fake_outputs(desc: InputDesc, ref: torch.Tensor) -> Any:
    """Outputs of the right shape, dtype and device without touching data (``info["shapes"]``:
    one shape, or a tuple of shapes for ops that return several tensors)."""
    shapes = desc.info["shapes"]
    if isinstance(shapes[0], tuple):
        return tuple(ref.new_empty(s) for s in shapes)
    return ref.new_empty(shapes)
