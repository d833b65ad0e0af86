"""What ``channel_rms_norm`` and ``group_norm_silu`` share: x ``[B, C, *spatial]`` seen as
``[B, C, P]`` rows of channels, the result's memory format, and the channel split of the
two-tile kernels. Imported by both ops, their eager chains and their Triton backends."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from sgl_diffusion_core import next_pow2


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
    channels_last: bool  # the output's memory format (and the tile orientation of the kernels)
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


def split_channels(C: int) -> tuple[int, int]:
    """Two register tiles covering C channels: ``(2^a, next_pow2(C - 2^a))`` with ``2^a <= C``
    the largest power of two (96 -> 64 + 32, 192 -> 128 + 64, 384 -> 256 + 128, 100 -> 64 + 64);
    a power-of-two C gets one masked row as its second tile."""
    a = 1 << (max(C, 1).bit_length() - 1)
    rest = max(C, 1) - a
    return a, next_pow2(rest) if rest else 1
