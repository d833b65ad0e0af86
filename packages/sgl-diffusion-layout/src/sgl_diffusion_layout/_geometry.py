"""Geometry of the layout ops as plain data (no Triton import): built by the op modules'
``describe_*`` functions, consumed by the backends (the two copy kernels of ``_copy_triton``)."""

from __future__ import annotations

from dataclasses import dataclass


def contiguous_strides(shape) -> tuple[int, ...]:
    out, acc = [], 1
    for n in reversed(shape):
        out.append(acc)
        acc *= n
    return tuple(reversed(out))


@dataclass(frozen=True)
class PermuteGeom:
    """``dst[r0, r1, r2, m, n] = src[...]``: sizes and element strides (``n`` has stride 1)."""

    R0: int
    R1: int
    R2: int
    M: int
    N: int
    src: tuple[tuple[int, int, int, int], ...]  # per tensor: strides of r0, r1, r2, m
    dst: tuple[tuple[int, int, int, int], ...]

    @property
    def rows(self) -> int:
        return self.R0 * self.R1 * self.R2

    @property
    def empty(self) -> bool:
        return self.rows == 0 or self.M == 0 or self.N == 0


@dataclass(frozen=True)
class GatherGeom:
    """``dst[r, m, n] = src[idx[r] // R2, idx[r] % R2, m, n]``; zeros where ``idx[r]`` lies in
    ``[lo, 0)`` (padding: ``lo = -1`` lets the inverse map's ``-1`` through), NaN where it lies
    outside ``[lo, nsrc)`` (out of range, only possible in an unchecked call)."""

    rows: int
    nsrc: int
    R2: int
    M: int
    N: int
    src: tuple[tuple[int, int, int], ...]  # per tensor: strides of (i // R2), (i % R2), m
    dst: tuple[tuple[int, int], ...]  # per tensor: strides of r, m
    lo: int  # the lowest index that is not out of range: 0, or -1 where -1 means padding

    @property
    def empty(self) -> bool:
        return self.rows == 0 or self.M == 0 or self.N == 0


@dataclass(frozen=True)
class MetaGeom:
    """``build_varlen_meta``'s mask ``[B, S]``; ``max_as_tensor``: ``max_seqlen`` returned as a 0-d
    int64 tensor (the custom op's schema) instead of a Python int."""

    B: int
    S: int
    max_as_tensor: bool = False
