"""Shared input geometry of row ops over ``x: [B, S, D]`` and their modulation tensors.

Every adaLN-style op (norm + modulate, scale/shift, gated residual, ...) reads a row
``(b, s)`` of ``x`` and a modulation vector (scale, shift, gate) broadcast per channel,
per sample, per token or per frame. This module validates those layouts once, for every
domain, and describes them so that one kernel serves all of them:
row ``(b, s)`` finds its vector at ``base + b*sb + (s // L)*ss``.
"""

from __future__ import annotations

from dataclasses import dataclass

import torch

from .registry import dtype_name

MODULATION_LAYOUTS = ("per-channel", "per-sample", "per-token", "per-frame")


@dataclass(frozen=True)
class ModLayout:
    """Where row ``(b, s)`` finds its modulation vector: ``base + b*sb + (s // L)*ss``."""

    tag: str  # one of MODULATION_LAYOUTS
    sb: int
    ss: int
    L: int


@dataclass(frozen=True)
class RowGeometry:
    """``x`` seen as ``[B, S, D]`` rows (a 2-D ``[N, D]`` x is ``B=1, S=N``), last dim contiguous."""

    B: int
    S: int
    D: int
    sb: int  # element stride between samples
    ss: int  # element stride between tokens
    shape: tuple[int, ...]  # x's own shape (the output shape)
    is_2d: bool

    @property
    def rows(self) -> int:
        return self.B * self.S


def rows_disjoint(sizes: tuple[int, ...], strides: tuple[int, ...], extent: int) -> bool:
    """No two rows of ``extent`` contiguous elements, indexed by ``sizes`` / ``strides`` (the
    leading dims, any order), share memory. A sufficient test: sorted by stride, each dim must
    step past everything the smaller ones span. What an in-place or ``out=`` write checks."""
    for st, n in sorted((st, n) for n, st in zip(sizes, strides) if n > 1):
        if st < extent:
            return False
        extent = st * (n - 1) + extent
    return True


def writable_problem(name: str, t: torch.Tensor) -> str | None:
    """Why writing into ``t`` (last dim contiguous) would write some element twice, or None."""
    if t.numel() == 0 or t.dim() == 0 or rows_disjoint(tuple(t.shape[:-1]), tuple(t.stride()[:-1]), t.shape[-1]):
        return None
    return (f"{name} (shape {list(t.shape)}, strides {list(t.stride())}) is an expanded or overlapping view: "
            "writing into it would write some elements twice")


def same_memory(a: torch.Tensor, b: torch.Tensor) -> bool:
    """``a`` and ``b`` start at the same address (the same tensor, or views sharing at least their
    first element): an in-place op on both would write that memory twice. While tracing (fake
    tensors, ``torch.compile``) only identity is known."""
    if a is b:
        return True
    from torch._subclasses.fake_tensor import is_fake

    if is_fake(a) or is_fake(b) or a.device.type == "meta" or torch.compiler.is_compiling():
        return False
    if a.numel() == 0 or b.numel() == 0:
        return False
    return a.data_ptr() == b.data_ptr()


def check_tensors(tensors: dict[str, object], device: torch.device | None, problems: list[str]) -> list[str]:
    """Type, device and float-dtype checks for named optional tensors; returns their dtype names."""
    dtypes: list[str] = []
    for name, t in tensors.items():
        if t is None:
            continue
        if not isinstance(t, torch.Tensor):
            problems.append(f"{name} must be a torch.Tensor, got {type(t).__name__}")
            continue
        if device is not None and t.device != device:
            problems.append(f"{name} is on {t.device}, x is on {device}: all tensors must be on one device")
        if not t.dtype.is_floating_point:
            problems.append(f"{name} has dtype {t.dtype}; expected bfloat16, float16 or float32")
        else:
            dtypes.append(dtype_name(t.dtype))
    return list(dict.fromkeys(dtypes))


def row_geometry(name: str, x: torch.Tensor, problems: list[str]) -> RowGeometry | None:
    """``x`` as ``[B, S, D]`` rows, or None with the reason appended to ``problems``."""
    if x.dim() not in (2, 3):
        problems.append(f"{name} must be [B, S, D] or [N, D], got shape {list(x.shape)}")
        return None
    is_2d = x.dim() == 2
    B, S, D = (1, *x.shape) if is_2d else tuple(x.shape)
    if D > 1 and x.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got strides {list(x.stride())}")
        return None
    sb = 0 if is_2d else x.stride(0)
    ss = x.stride(0) if is_2d else x.stride(1)
    return RowGeometry(B, S, D, sb, ss, tuple(x.shape), is_2d)


def same_rows(name: str, t: torch.Tensor, geom: RowGeometry, problems: list[str]) -> RowGeometry | None:
    """A second full-size operand (e.g. ``update`` of a gated residual): same shape as x, own strides."""
    if tuple(t.shape) != geom.shape:
        problems.append(f"{name} of shape {list(t.shape)} must have x's shape {list(geom.shape)}")
        return None
    return row_geometry(name, t, problems)


def mod_layout(name: str, t: torch.Tensor, geom: RowGeometry, problems: list[str]) -> ModLayout | None:
    """Classify a modulation tensor against ``x``'s rows; None with the reason on mismatch.

    Accepted: per channel ``[D]``; per sample ``[B, D]`` / ``[B, 1, D]`` (B may be 1);
    per token ``[B, S, D]`` (``[N, D]`` for 2-D x), any strides with a contiguous last
    dim; per frame ``[B, F, 1, D]`` with ``S = F * L`` (frame f covers tokens
    ``f*L .. (f+1)*L - 1``). For 2-D x: ``[D]``, ``[1, D]`` or ``[N, D]``.
    """
    B, S, D, x2d = geom.B, geom.S, geom.D, geom.is_2d
    shape = tuple(t.shape)
    want = "[D], [1, D] or [N, D]" if x2d else "[D], [B, D], [B, 1, D], [B, S, D] or [B, F, 1, D]"
    if t.dim() == 0 or shape[-1] != D:
        problems.append(f"{name} of shape {list(shape)} does not broadcast against x (D={D}); expected {want}")
        return None
    if D > 1 and t.stride(-1) != 1:
        problems.append(f"{name}: last dim must be contiguous (stride 1), got stride {t.stride(-1)}")
        return None

    def bstride(size: int, stride: int) -> int | None:
        if size == B:
            return stride if B > 1 else 0
        return 0 if size == 1 else None

    lay: ModLayout | None = None
    if t.dim() == 1:
        lay = ModLayout("per-channel", 0, 0, 1)
    elif x2d and t.dim() == 2:
        if shape[0] == S and S != 1:
            lay = ModLayout("per-token", 0, t.stride(0), 1)
        elif shape[0] == 1:
            lay = ModLayout("per-sample", 0, 0, 1)
    elif not x2d and t.dim() == 2:
        sb = bstride(shape[0], t.stride(0))
        if sb is not None:
            lay = ModLayout("per-sample", sb, 0, 1)
    elif not x2d and t.dim() == 3:
        sb = bstride(shape[0], t.stride(0))
        if sb is not None and shape[1] == 1:
            lay = ModLayout("per-sample", sb, 0, 1)
        elif sb is not None and shape[1] == S:
            lay = ModLayout("per-token", sb, t.stride(1), 1)
    elif not x2d and t.dim() == 4 and shape[2] == 1:
        sb = bstride(shape[0], t.stride(0))
        F = shape[1]
        if sb is not None and F > 0 and S % F == 0:
            lay = ModLayout("per-frame", sb, t.stride(1), max(S // F, 1))
        elif sb is not None:
            problems.append(f"{name}: per-frame layout [B, F, 1, D] needs S divisible by F, got S={S}, F={F}")
            return None
    if lay is None:
        problems.append(
            f"{name} of shape {list(shape)} does not broadcast against x of shape {list(geom.shape)}; expected {want}"
        )
    return lay


def broadcast_view(t: torch.Tensor, geom: RowGeometry) -> torch.Tensor:
    """A view of a (validated) modulation tensor that broadcasts against x viewed as ``[B, S, D]``.

    For the eager reference implementations (no copy except the per-frame expansion).
    """
    if t.dim() == 1:
        return t
    if geom.is_2d:
        return t.unsqueeze(0)
    if t.dim() == 2:
        return t.unsqueeze(1)
    if t.dim() == 3:
        return t
    F = t.shape[1]
    return t.expand(t.shape[0], F, geom.S // F, geom.D).reshape(t.shape[0], geom.S, geom.D)


def describe_rows(name: str, x: object, others: dict[str, object], *, required: tuple[str, ...] = ()):
    """The first half of every row op's ``describe``: types, one device, float dtypes, x as rows.

    Returns ``(desc, geom)``: an ``InputDesc`` holding platform, arch, dtypes, last dim and
    the problems found so far, and x's ``RowGeometry`` (None when a problem was found; the
    caller then returns ``desc`` as it is). The caller adds its own problems, ``layouts``
    and ``info`` to ``desc``.
    """
    from .platform import device_arch, tensor_platform
    from .registry import InputDesc

    problems: list[str] = []
    for r in required:
        if others.get(r) is None:
            problems.append(f"{r} is required (got None)")
    if not isinstance(x, torch.Tensor):
        problems.append(f"{name} must be a torch.Tensor, got {type(x).__name__}")
        check_tensors(others, None, problems)
        return InputDesc(platform=None, problems=problems), None
    platform = tensor_platform(x.device)
    arch = device_arch(platform, x.device.index) if platform in ("cuda", "hip") else None
    dtypes = check_tensors({name: x, **others}, x.device, problems)
    geom = None if problems else row_geometry(name, x, problems)
    desc = InputDesc(platform, arch, tuple(dtypes), x.shape[-1] if x.dim() else None, (), problems)
    return desc, (geom if not problems else None)
